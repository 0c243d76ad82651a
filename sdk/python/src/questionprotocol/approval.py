"""``@require_approval``: a function that asks a person before it runs.

The call is shown as ``Allow name(args)?`` with its arguments shortened to
the protocol's limits and secret-looking values shown as ``•••``. The rules
mirror ``qp hook``'s (client/src/hook.rs, ``mask_secrets`` and ``readable``):
the Rust code is the reference, and this is a port of its essential rules,
kept in the same order.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import re
import unicodedata
from typing import Any, Awaitable, Callable, Optional, TypeVar, Union, cast

from .client import AsyncClient, AsyncHandle, Client, Handle
from .errors import AlreadyResolvedError, Denied, QPError, WaitTimeout
from .models import Option, Question, Scope, TextInput

__all__ = ["ALLOW", "DENY", "describe_call", "mask_secrets", "readable", "require_approval"]

ALLOW = "allow"
DENY = "deny"
PROMPT_MAX_CHARS = 500
CONTEXT_MAX_CHARS = 40

# ---- masking (a port of client/src/hook.rs's MASKS; that one is the reference) ----

# A masked value's characters: none that start shell syntax which runs or
# reads something, no white space, none already masked, no leading `#`.
_VALUE_FIRST = r"""[^\s'"`$(){}<>;&|\\,#•]"""
_VALUE_REST = r"""[^\s'"`$(){}<>;&|\\,•]"""
_SECRET_WORDS = (
    r"passw(?:or)?d|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|credentials?"
)


def _rules() -> list[re.Pattern[str]]:
    value = f"(?P<secret>{_VALUE_FIRST}{_VALUE_REST}*)"
    url_pw = r"""(?P<secret>[^\s'"`$(){}<>;&|\\,#•@/]+)"""
    user = r"""[^\s:'"`$(){}<>;&|\\,•]+"""
    q = r"""(?:\\?['"])?"""
    quoted = r"""[^'"`$\\;&|<>(){}\r\n\t•]+"""
    word = (
        rf"""(?i)(?P<keep>(?:(?:{_SECRET_WORDS})[a-z0-9_-]*|auth(?:[_-][a-z0-9_-]*)?){q}"""
        r"""(?:=|[ \t]+=[ \t]+|[ \t]*:[ \t]*)"""
    )
    flag = rf"(?P<keep>(?:^|\s)--?[a-zA-Z0-9_-]*(?i:{_SECRET_WORDS})[a-zA-Z0-9_-]*[ \t]+"
    rules = [
        r"(?P<keep>-----BEGIN[A-Z0-9 ]* PRIVATE KEY-----)(?P<secret>(?:\\[nr]|[A-Za-z0-9+/=\r\n]){32,}?)(?P<tail>-----END)",
        rf"""(?i)(?P<keep>(?:proxy-)?authorization{q}[ \t]*[:=][ \t]*{q}[a-z][a-z0-9-]*[ \t]+){value}""",
        rf"""(?i)(?P<keep>(?:proxy-)?authorization{q}[ \t]*[:=][ \t]*{q}){value}(?P<tail>\\?['"]|$)""",
        rf"(?i)(?P<keep>\bbearer[ \t]+){value}",
        rf"(?i)(?P<keep>\b(?:set-)?cookie{q}[ \t]*:[ \t]*{q}[a-z0-9_.-]+=){value}",
        rf"""(?P<keep>(?:^|\s)(?:-b|--cookie)(?:=|[ \t]+)['"]?[A-Za-z0-9_.-]+=){value}""",
        rf"""(?P<keep>(?:^|\s)(?:-u|--user|--proxy-user)(?:=|[ \t]*)['"]?{user}:){value}""",
        rf"(?P<keep>://[^/\s:@]+:){url_pw}(?P<tail>@)",
        rf"(?i)(?P<keep>[?&](?:key|sig|signature|x-amz-signature)=){value}",
        rf"""(?P<keep>\b(?i:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mariadb(?:-[a-z]+)?)\b[^;&|\n]*?[ \t]-p['"]?){value}""",
        rf"""(?P<keep>\bsshpass\b[^;&|\n]*?[ \t]-p[ \t]*['"]?){value}""",
        rf"""(?P<keep>\b(?:docker|podman|buildah|skopeo|nerdctl|oras|helm[ \t]+registry)[ \t]+login\b[^;&|\n]*?[ \t]-p[ \t]*['"]?){value}""",
        rf"""(?P<keep>\bredis-cli\b[^;&|\n]*?[ \t]-a[ \t]*['"]?){value}""",
    ]
    for keep in (word, flag):
        rules.append(f"{keep}')(?P<secret>{quoted})(?P<tail>')")
        rules.append(f'{keep}")(?P<secret>{quoted})(?P<tail>")')
        rules.append(f"{keep}{q}){value}")
    rules.append(
        r"(?P<secret>\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}"
        r"|sk-[A-Za-z0-9_-]{16,}|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}|xox[abprs]-[A-Za-z0-9-]{10,}"
        r"|xapp-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|hf_[A-Za-z0-9]{30,}"
        r"|npm_[A-Za-z0-9]{36}|eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"
        r"|qp[aud]_[A-Za-z0-9_-]{16,}))"
    )
    # Python wants a global flag at the very start; Rust's (?i) in the
    # middle of the `word` rule is global there too.
    out = []
    for p in rules:
        if "(?i)" in p and not p.startswith("(?i)"):
            p = "(?i)" + p.replace("(?i)", "")
        out.append(re.compile(p))
    return out


_MASKS = _rules()


def mask_secrets(s: str) -> tuple[str, int]:
    """Replaces secret-looking values with ``•••`` and counts them (see hook.rs)."""
    masked = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal masked
        masked += 1
        g = m.groupdict()
        return f"{g.get('keep') or ''}•••{g.get('tail') or ''}"

    for rx in _MASKS:
        s = rx.sub(sub, s)
    return s, masked


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


def _outcome(q: Question, withdrawn_after: Optional[float] = None) -> None:
    if q.state == "answered" and q.value == ALLOW:
        return
    who = f" by {q.responder.display_name}" if q.responder else ""
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
    Deny, a typed reply (``reason``), expiry or cancellation. Works on sync
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
            "options": [
                Option(ALLOW, "Allow", "primary").to_wire(),
                Option(DENY, "Deny", "danger").to_wire(),
            ],
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
                    h = await ac.ask_body(room, ask_body(args, kwargs))
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
                    _outcome(q, withdrawn)
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
                h = sc.ask_body(room, ask_body(args, kwargs))
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
                _outcome(q, withdrawn)
            finally:
                if own:
                    sc.close()
            return fn(*args, **kwargs)

        return cast(F, wrapper)

    return decorate
