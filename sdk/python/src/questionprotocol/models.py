"""The wire objects, read into typed, immutable values. Unknown fields are
kept in ``raw`` (the protocol is additive-only: a newer server may add some)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Optional, Sequence, Tuple, Union, cast

#: A question's state: ``pending``, then exactly one of the three terminal ones.
State = Literal["pending", "answered", "expired", "cancelled"]
#: What ``list(state=…)`` and ``find(state=…)`` take: a state, or ``all``.
ListState = Literal["pending", "answered", "expired", "cancelled", "all"]
TERMINAL: Tuple[str, ...] = ("answered", "expired", "cancelled")
Style = Literal["primary", "danger", "default"]
Scope = Literal["direct", "room"]
_STYLES: Tuple[str, ...] = ("primary", "danger", "default")

#: The protocol's documented default lifetime of a question, in seconds.
DEFAULT_TTL = 3600


@dataclass(frozen=True)
class Option:
    """One answer button: a stable machine ``value``, a human ``label``, a ``style``."""

    value: str
    label: Optional[str] = None
    style: Optional[Style] = None

    def to_wire(self) -> Union[str, dict[str, Any]]:
        if self.label is None and self.style is None:
            return self.value
        out: dict[str, Any] = {"value": self.value}
        if self.label is not None:
            out["label"] = self.label
        if self.style is not None:
            out["style"] = self.style
        return out


#: What ``options=`` takes: strings, ``(value, label)`` or ``(value, label,
#: style)`` tuples, :class:`Option`, or wire-shaped mappings.
OptionLike = Union[str, Tuple[str, str], Tuple[str, str, str], Option, Mapping[str, Any]]


@dataclass(frozen=True)
class TextInput:
    """A typed reply of at most ``max_length`` characters (60 at most)."""

    placeholder: Optional[str] = None
    max_length: Optional[int] = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.placeholder is not None:
            out["placeholder"] = self.placeholder
        if self.max_length is not None:
            out["max_length"] = self.max_length
        return out


@dataclass(frozen=True)
class Responder:
    """Who answered: always the authenticated user, never what an asker said."""

    id: str
    display_name: str


@dataclass(frozen=True)
class Answer:
    value: Optional[str]
    label: Optional[str]
    text: Optional[str]
    responder: Responder
    answered_at: Optional[_dt.datetime]


@dataclass(frozen=True)
class QuestionOption:
    """An option as the server holds it: ``label`` defaults to the value,
    ``style`` to ``default`` (also for a style this version does not know)."""

    value: str
    label: str
    style: Style


def parse_time(v: Any) -> Optional[_dt.datetime]:
    """RFC 3339 (``2026-06-27T10:30:00Z``) -> an aware UTC datetime; None if absent or unreadable."""
    if not isinstance(v, str) or not v:
        return None
    s = v.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        t = _dt.datetime.fromisoformat(s)
    except ValueError:
        return None
    if t.tzinfo is None:
        return None
    return t.astimezone(_dt.timezone.utc)


def _str(v: Any) -> Optional[str]:
    return v if isinstance(v, str) else None


@dataclass(frozen=True)
class Question:
    """A question as the server holds it. ``value``, ``label``, ``text``,
    ``responder`` and ``answered_at`` read the answer (None until answered)."""

    id: str
    state: State
    prompt: str
    context: Optional[str]
    options: Tuple[QuestionOption, ...]
    text_input: Optional[TextInput]
    responder_scope: Scope
    target_user_id: Optional[str]
    answer: Optional[Answer]
    created_at: Optional[_dt.datetime]
    expires_at: _dt.datetime
    resolved_at: Optional[_dt.datetime]
    correlation_id: Optional[str]
    reply_to: Optional[str]
    data: Optional[dict[str, Any]]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL

    @property
    def value(self) -> Optional[str]:
        return self.answer.value if self.answer else None

    @property
    def label(self) -> Optional[str]:
        return self.answer.label if self.answer else None

    @property
    def text(self) -> Optional[str]:
        return self.answer.text if self.answer else None

    @property
    def responder(self) -> Optional[Responder]:
        return self.answer.responder if self.answer else None

    @property
    def answered_at(self) -> Optional[_dt.datetime]:
        return self.answer.answered_at if self.answer else None

    @classmethod
    def from_wire(cls, body: Mapping[str, Any]) -> Question:
        """Reads a question. A missing or unreadable ``expires_at`` falls back
        to the documented default: ``created_at`` (else now) + 3600 s."""
        created = parse_time(body.get("created_at"))
        expires = parse_time(body.get("expires_at"))
        if expires is None:
            base = created or _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
            expires = base + _dt.timedelta(seconds=DEFAULT_TTL)
        opts = []
        for o in body.get("options") or []:
            if isinstance(o, dict) and isinstance(o.get("value"), str):
                opts.append(
                    QuestionOption(
                        value=o["value"],
                        label=_str(o.get("label")) or o["value"],
                        style=cast(Style, o["style"]) if o.get("style") in _STYLES else "default",
                    )
                )
        ti = body.get("text_input")
        text_input = (
            TextInput(
                placeholder=_str(ti.get("placeholder")),
                max_length=ti.get("max_length") if isinstance(ti.get("max_length"), int) else None,
            )
            if isinstance(ti, dict)
            else None
        )
        a = body.get("answer")
        answer = None
        if isinstance(a, dict):
            r: dict[str, Any] = a["responder"] if isinstance(a.get("responder"), dict) else {}
            answer = Answer(
                value=_str(a.get("value")),
                label=_str(a.get("label")),
                text=_str(a.get("text")),
                responder=Responder(
                    id=_str(r.get("id")) or "", display_name=_str(r.get("display_name")) or ""
                ),
                answered_at=parse_time(a.get("answered_at")),
            )
        data = body.get("data")
        return cls(
            id=str(body.get("id", "")),
            state=cast(State, str(body.get("state", "pending"))),
            prompt=str(body.get("prompt", "")),
            context=_str(body.get("context")),
            options=tuple(opts),
            text_input=text_input,
            responder_scope=cast(Scope, _str(body.get("responder_scope")) or "direct"),
            target_user_id=_str(body.get("target_user_id")),
            answer=answer,
            created_at=created,
            expires_at=expires,
            resolved_at=parse_time(body.get("resolved_at")),
            correlation_id=_str(body.get("correlation_id")),
            reply_to=_str(body.get("reply_to")),
            data=data if isinstance(data, dict) else None,
            raw=dict(body),
        )


def option_to_wire(o: OptionLike, index: int) -> Union[str, dict[str, Any]]:
    """One option in any accepted form -> its wire form (the server checks the rules)."""
    from .errors import ValidationError

    if isinstance(o, str):
        return o
    if isinstance(o, Option):
        return o.to_wire()
    if isinstance(o, tuple):
        if len(o) == 2:
            return {"value": o[0], "label": o[1]}
        if len(o) == 3:
            return {"value": o[0], "label": o[1], "style": o[2]}
    elif isinstance(o, Mapping):
        return dict(o)
    raise ValidationError(
        f"options[{index}]: an option is a string, a (value, label[, style]) tuple, an Option or a mapping",
        code="invalid_type",
        field=f"options[{index}]",
    )


def options_to_wire(options: Sequence[OptionLike]) -> list[Union[str, dict[str, Any]]]:
    return [option_to_wire(o, i) for i, o in enumerate(options)]
