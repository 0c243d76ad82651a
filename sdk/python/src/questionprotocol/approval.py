"""``@require_approval``: a function that asks a person before it runs.

The call is shown as ``Allow name(args)?`` with its arguments shortened to
the protocol's limits and secret-looking values shown as ``•••``. The
masks and the rule for when Allow is offered are ``qp hook``'s, read from
``hook_masks.json``: a copy of ``core/tests/vectors/hook/masks.json``, which
``client/src/hook.rs`` writes from its own rules (a test keeps the copy
byte-for-byte equal, and replays the file's vectors here). A call not shown
whole (a value hidden, a character escaped, the text cut) is never allowed
from the phone: it is asked with "Decide at the computer" and Deny.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import re
import unicodedata
from importlib import resources
from typing import Any, Awaitable, Callable, Optional, TypeVar, Union, cast

from .client import AsyncClient, AsyncHandle, Client, Handle
from .errors import AlreadyResolvedError, Denied, QPError, WaitTimeout
from .models import Question, Scope, TextInput

__all__ = [
    "ALLOW",
    "DECIDE_AT_COMPUTER",
    "DENY",
    "describe_call",
    "mask_secrets",
    "offered_options",
    "readable",
    "require_approval",
]

#: The answer values of the question (qp_core::protocol::permission).
ALLOW = "allow"
DENY = "deny"
DECIDE_AT_COMPUTER = "ask"
#: The protocol's limits (core/tests/vectors/limits/limits.json holds the tests to them).
PROMPT_MAX_CHARS = 500
CONTEXT_MAX_CHARS = 40

_RULES: dict[str, Any] = json.loads(
    resources.files(__package__).joinpath("hook_masks.json").read_text(encoding="utf-8")
)


def _python_pattern(rust: str) -> str:
    """A pattern of Rust's regex crate in Python's syntax: ``$`` (outside a
    class) is the end of the text, as in Rust (Python's ``$`` also matches
    before a final line break)."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(rust):
        c = rust[i]
        if c == "\\":
            out.append(rust[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]" or out[-1] in ("[", "[^")
        elif c == "[":
            in_class = True
            if rust.startswith("[^", i):
                out.append("[^")
                i += 2
                continue
        elif c == "$":
            c = r"\Z"
        out.append(c)
        i += 1
    return "".join(out)


_MASKS = [re.compile(_python_pattern(p)) for p in _RULES["masks"]]


def mask_secrets(s: str) -> tuple[str, int]:
    """Replaces secret-looking values with ``•••`` and counts them, with
    ``qp hook``'s rules in their order."""
    masked = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal masked
        masked += 1
        g = m.groupdict()
        return f"{g.get('keep') or ''}•••{g.get('tail') or ''}"

    for rx in _MASKS:
        s = rx.sub(sub, s)
    return s, masked


def offered_options(masked: int = 0, escaped: int = 0, cut: bool = False) -> list[dict[str, str]]:
    """The options of the question for a call with ``masked`` values hidden,
    ``escaped`` characters shown as code points and the text ``cut`` or
    not: Allow and Deny only for a call shown whole, otherwise "Decide at
    the computer" and Deny (``qp hook``'s rule)."""
    whole = masked == 0 and escaped == 0 and not cut
    return [dict(o) for o in _RULES["options"]["shown_whole" if whole else "not_shown_whole"]]


def _hidden(c: str) -> bool:
    if c in "\u2800":
        return True
    cat = unicodedata.category(c)
    return cat in ("Cc", "Cf", "Co", "Cn", "Zs", "Zl", "Zp") or c in "\u180e\u3164\uffa0\u115f\u1160"


def readable(s: str) -> tuple[str, int]:
    """The text in one readable paragraph: a line break is `` ⏎ ``, a tab or a
    character that shows nothing or moves text is ``⟨U+XXXX⟩``; returns it and
    how many characters were shown as code points (hook.rs's ``readable``)."""
    out: list[str] = []
    escaped = 0
    for c in s.replace("\r\n", "\r\n"):
        if c == "\n":
            out.append(" ⏎ ")
        elif c == " ":
            out.append(c)
        elif c == "\t" or _hidden(c):
            out.append(f"⟨U+{ord(c):04X}⟩")
            escaped += 1
        else:
            out.append(c)
    return "".join(out), escaped


def _truncate(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def describe_call(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, int, bool]:
    """``Allow name(args)?`` within the prompt's 500 characters: the prompt,
    how many values were masked, and whether the call had to be cut or escaped."""
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    shown, escaped = readable(f"{name}({', '.join(parts)})")
    shown, masked = mask_secrets(shown)
    head, tail = "Allow ", "?"
    room = PROMPT_MAX_CHARS - len(head) - len(tail)
    cut = len(shown) > room
    return head + _truncate(shown, room) + tail, masked, cut or escaped > 0


F = TypeVar("F", bound=Callable[..., Any])


def _offers_allow(body: dict[str, Any]) -> bool:
    return any(o.get("value") == ALLOW for o in body["options"])


def _outcome(q: Question, allow_offered: bool, withdrawn_after: Optional[float] = None) -> None:
    """Returns when the person allowed a call they saw whole; raises Denied otherwise."""
    if q.state == "answered" and q.value == ALLOW and allow_offered:
        return
    who = f" by {q.responder.display_name}" if q.responder else ""
    if q.state == "answered" and q.value in (ALLOW, DECIDE_AT_COMPUTER):
        raise Denied(
            f"not approved: the call was not shown whole on the phone, and {who.strip() or 'the person'} "
            "chose to decide at the computer (value 'ask')",
            question=q,
        )
    if q.state == "answered":
        why = f": {q.text}" if q.text else ""
        raise Denied(f"denied{who}{why}", question=q)
    if q.state == "cancelled" and withdrawn_after is not None:
        raise Denied(
            f"not approved: no answer within {withdrawn_after:g} s (the question was withdrawn)", question=q
        )
    what = "expired unanswered" if q.state == "expired" else f"was {q.state}"
    raise Denied(f"not approved: the question {what}", question=q)


def _withdraw(h: Handle) -> Question:
    """A wait that ran out withdraws the question from the phone (nobody
    answers in vain), as `qp hook` does; an answer that won the race counts."""
    try:
        return h.cancel()
    except AlreadyResolvedError as e:
        if e.question is None:
            raise
        return e.question


async def _withdraw_async(h: AsyncHandle) -> Question:
    try:
        return await h.cancel()
    except AlreadyResolvedError as e:
        if e.question is None:
            raise
        return e.question


def require_approval(
    room: str,
    *,
    client: Union[None, Client, AsyncClient] = None,
    ttl: Optional[int] = None,
    timeout: Optional[float] = None,
    scope: Optional[Scope] = None,
    target_user_id: Optional[str] = None,
    context: Optional[str] = None,
    name: Optional[str] = None,
) -> Callable[[F], F]:
    """Asks "Allow name(args)?" in ``room`` (Allow / Deny, or a typed reason)
    before each call; runs the function on Allow, raises :class:`Denied` on
    Deny, a typed reply (``reason``), expiry or cancellation. A call not
    shown whole (a value hidden as ``•••``, a character escaped, the text
    cut) is asked with "Decide at the computer" / Deny instead, as ``qp
    hook`` asks it: the phone never allows what it did not show, and that
    answer raises :class:`Denied` with ``value`` ``"ask"`` (a program may
    then ask at the computer, where the whole call can be read). Works on sync
    and async functions (an async one uses an :class:`AsyncClient`). Without
    ``client``, one is made from ``QP_URL``/``QP_TOKEN`` or ``qp login``'s
    file at the first call. ``timeout``: at most this many seconds of
    waiting (the question expires with it when ``ttl`` is not given); when
    it runs out the question is withdrawn and the call raises ``Denied``
    with state ``cancelled``, unless an answer came first. Ctrl-C or a
    cancelled task withdraws the question too (the call will not run) and
    re-raises."""

    def body_for(fn_name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        prompt, masked, cut = describe_call(fn_name, args, kwargs)
        note = context
        if note is None and (masked or cut):
            bits = []
            if masked:
                bits.append(f"{masked} value{'s' if masked > 1 else ''} hidden")
            if cut:
                bits.append("shortened")
            note = _truncate("Not shown whole: " + ", ".join(bits), CONTEXT_MAX_CHARS)
        body: dict[str, Any] = {
            "prompt": prompt,
            "options": offered_options(masked, cut=cut),
            "text_input": TextInput(placeholder="Or type why not").to_wire(),
        }
        life = ttl if ttl is not None else (int(timeout) if timeout is not None else None)
        for k, v in (
            ("ttl", life),
            ("context", note),
            ("responder_scope", scope),
            ("target_user_id", target_user_id),
        ):
            if v is not None:
                body[k] = v
        return body

    def decorate(fn: F) -> F:
        fn_name: str = name or str(getattr(fn, "__qualname__", getattr(fn, "__name__", "call")))
        # A method's `self`/`cls` is not shown (`Allow Db.drop('users')?`, not the object's repr).
        try:
            first = next(iter(inspect.signature(fn).parameters), "")
        except (TypeError, ValueError):
            first = ""
        skip = 1 if first in ("self", "cls") else 0

        def ask_body(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            return body_for(fn_name, args[skip:], kwargs)

        is_async = inspect.iscoroutinefunction(fn)
        if client is not None and isinstance(client, AsyncClient) != is_async:
            # Said when decorating, not at the first call.
            raise TypeError(
                f"@require_approval on {fn_name}: an async function needs client=AsyncClient(…)"
                if is_async
                else f"@require_approval on {fn_name}: a sync function needs client=Client(…)"
            )
        if is_async:
            afn = cast(Callable[..., Awaitable[Any]], fn)

            @functools.wraps(fn)
            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                c = client
                own = c is None
                ac = AsyncClient() if c is None else c
                if not isinstance(ac, AsyncClient):
                    raise TypeError("an async function needs an AsyncClient (client=AsyncClient(...))")
                try:
                    body = ask_body(args, kwargs)
                    h = await ac.ask_body(room, body)
                    withdrawn: Optional[float] = None
                    try:
                        q = await h.wait(timeout)
                    except WaitTimeout:
                        q = await _withdraw_async(h)
                        withdrawn = timeout
                    except asyncio.CancelledError:
                        # The call will never run: an Allow on the phone would do nothing.
                        with contextlib.suppress(QPError):
                            await _withdraw_async(h)
                        raise
                    _outcome(q, _offers_allow(body), withdrawn)
                finally:
                    if own:
                        await ac.aclose()
                return await afn(*args, **kwargs)

            return cast(F, awrapper)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            own = client is None
            sc = Client() if client is None else client
            if not isinstance(sc, Client):
                raise TypeError("a sync function needs a Client (client=Client(...))")
            try:
                body = ask_body(args, kwargs)
                h = sc.ask_body(room, body)
                withdrawn: Optional[float] = None
                try:
                    q = h.wait(timeout)
                except WaitTimeout:
                    q = _withdraw(h)
                    withdrawn = timeout
                except KeyboardInterrupt:
                    # The call will never run: an Allow on the phone would do nothing.
                    with contextlib.suppress(QPError):
                        _withdraw(h)
                    raise
                _outcome(q, _offers_allow(body), withdrawn)
            finally:
                if own:
                    sc.close()
            return fn(*args, **kwargs)

        return cast(F, wrapper)

    return decorate
