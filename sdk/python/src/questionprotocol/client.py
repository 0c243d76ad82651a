"""The asker's client, sync (:class:`Client`) and async (:class:`AsyncClient`),
of the same shape: ask, wait (the re-poll hidden), get, find, list, cancel.

The rules of the protocol's SDK shape (section 8) hold here:
- no call takes a responder identity: the responder is always the user who
  answered (a ``responder`` or ``answer`` in a raw body is dropped);
- never more than four options: a fifth is refused before any request, with
  the server's own code and field (``too_many``, ``options``);
- a missing or invalid expiry falls back to the documented default: a
  ``ttl`` that is not a whole number of seconds is left out (the server
  then gives 3600 s), and a question read without a readable ``expires_at``
  gets ``created_at`` + 3600 s.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import math
import random
import ssl
import time
import warnings
from typing import Any, Generic, List, Mapping, Optional, Sequence, TypeVar, Union
from urllib.parse import quote

import httpx

from . import credentials
from .errors import (
    ClosedError,
    QPError,
    RateLimitedError,
    ServerError,
    TransportError,
    ValidationError,
    WaitTimeout,
    error_from_response,
)
from .models import (
    ListState,
    Option,
    OptionLike,
    Question,
    Scope,
    TextInput,
    options_to_wire,
)

__all__ = ["AsyncClient", "AsyncHandle", "Client", "Handle"]

#: The protocol's most options on one question.
MAX_OPTIONS = 4
#: How long one wait request asks the server to hold, and the most it holds
#: one (qp_core::protocol::limits; tests/test_limits.py holds these copies
#: to core/tests/vectors/limits/limits.json).
POLL_SECONDS = 25
LONG_POLL_MAX_SECONDS = 30
#: The most questions one list request returns.
LIST_MAX_LIMIT = 500
#: Fields of a question only the server sets; a raw body never sends them.
_SERVER_OWNED = ("answer", "responder", "state", "id", "resolved_at", "created_at", "asker")

APPROVE_DENY: tuple[Option, Option] = (
    Option("approve", "Approve", "primary"),
    Option("deny", "Deny", "danger"),
)
YES_NO: tuple[Option, Option] = (Option("yes", "Yes", "primary"), Option("no", "No", "default"))


def _ttl(ttl: Any) -> Optional[int]:
    """A whole number of seconds, else None (the documented default applies)."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        warnings.warn(f"ttl {ttl!r} is not a number of seconds; using the default 3600 s", stacklevel=4)
        return None
    if isinstance(ttl, float) and (not math.isfinite(ttl) or not ttl.is_integer()):
        warnings.warn(f"ttl {ttl!r} is not a whole number of seconds; using the default 3600 s", stacklevel=4)
        return None
    return int(ttl)


def build_body(
    prompt: str,
    *,
    options: Optional[Sequence[OptionLike]] = None,
    text_input: Union[None, bool, str, TextInput, Mapping[str, Any]] = None,
    scope: Optional[Scope] = None,
    target_user_id: Optional[str] = None,
    ttl: Optional[float] = None,
    context: Optional[str] = None,
    correlation_id: Optional[str] = None,
    reply_to: Optional[str] = None,
    data: Optional[Mapping[str, Any]] = None,
) -> dict[str, Any]:
    """The ask body. ``text_input``: True (a typed reply), a placeholder
    string, a :class:`TextInput` or a mapping."""
    body: dict[str, Any] = {"prompt": prompt}
    if isinstance(options, (str, bytes)):
        # A string is a sequence of characters: "yes" would ask y / e / s.
        raise ValidationError(
            f"options: a list of options, not one string ({options!r}); write options=[{options!r}, …]",
            code="invalid_type",
            field="options",
        )
    if options is not None:
        body["options"] = options_to_wire(options)
    if text_input is True:
        body["text_input"] = {}
    elif isinstance(text_input, str):
        body["text_input"] = {"placeholder": text_input}
    elif isinstance(text_input, TextInput):
        body["text_input"] = text_input.to_wire()
    elif isinstance(text_input, Mapping):
        body["text_input"] = dict(text_input)
    for k, v in (
        ("responder_scope", scope),
        ("target_user_id", target_user_id),
        ("ttl", _ttl(ttl)),
        ("context", context),
        ("correlation_id", correlation_id),
        ("reply_to", reply_to),
        ("data", dict(data) if data is not None else None),
    ):
        if v is not None:
            body[k] = v
    return body


def _checked(body: Any) -> Any:
    """Section 8's rules on any body: server-owned fields dropped, at most
    four options. A body that is not an object goes as is (the server refuses it)."""
    if not isinstance(body, Mapping):
        return body
    out = {k: v for k, v in body.items() if k not in _SERVER_OWNED}
    opts = out.get("options")
    if isinstance(opts, (list, tuple)) and len(opts) > MAX_OPTIONS:
        raise ValidationError(
            f"options: at most {MAX_OPTIONS} options, got {len(opts)}",
            code="too_many",
            field="options",
            status=None,
        )
    return out


def _retry_after(resp: httpx.Response) -> Optional[float]:
    v = resp.headers.get("retry-after")
    if v is None:
        return None
    try:
        return max(0.0, float(v))
    except ValueError:
        return None


def _read(resp: httpx.Response) -> Any:
    try:
        body = resp.json()
    except ValueError:
        body = None
    if resp.is_success:
        if not isinstance(body, dict):
            raise QPError(f"unexpected response from the server ({resp.status_code})", code="decode")
        return body
    q = body.get("question") if isinstance(body, dict) else None
    question = Question.from_wire(q) if isinstance(q, dict) else None
    raise error_from_response(resp.status_code, body, _retry_after(resp), question)


def _verify(verify: Union[bool, str, ssl.SSLContext]) -> Union[bool, ssl.SSLContext]:
    """A CA bundle's path as an SSL context (httpx 0.28 deprecates the path)."""
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    return verify


def _transient(e: QPError) -> bool:
    return isinstance(e, (TransportError, ServerError))


def _backoff(failures: int) -> float:
    """The client's growing pause between failed polls (never a hot loop)."""
    grown: float = 0.25 * 2.0 ** min(failures, 6)
    return min(10.0, grown) * (0.5 + random.random() / 2)  # noqa: S311


class _Base:
    def __init__(
        self,
        url: Optional[str],
        token: Optional[str],
        poll_seconds: int,
    ) -> None:
        base, tok = credentials.resolve(url, token)
        self.url = base.rstrip("/")
        self._token = tok
        self.poll_seconds = max(0, min(LONG_POLL_MAX_SECONDS, int(poll_seconds)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self.url!r})"

    @property
    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}", "Accept": "application/json"}

    def _transport_error(self, e: Exception) -> TransportError:
        # httpx's messages name the URL, never the headers.
        return TransportError(
            f"cannot reach the server at {credentials.origin_text(self.url)}: {type(e).__name__}: {e}",
            code="transport",
        )

    def _closed_error(self) -> ClosedError:
        return ClosedError(
            f"this {type(self).__name__} is closed (used after its `with` block or close()); make a new one",
            code="closed",
        )

    @staticmethod
    def _room_path(room: str) -> str:
        return f"/api/agent/rooms/{quote(room, safe='')}/questions"

    @staticmethod
    def _q(id: str, suffix: str = "") -> str:
        return f"/api/agent/questions/{quote(id, safe='')}{suffix}"

    @staticmethod
    def _list_params(state: Optional[ListState], limit: Optional[int]) -> dict[str, Any]:
        p: dict[str, Any] = {}
        if state is not None:
            p["state"] = state
        if limit is not None:
            p["limit"] = limit
        return p


class Client(_Base):
    """A synchronous client. ``url`` and ``token`` default to ``QP_URL`` /
    ``QP_TOKEN``, then to what ``qp login`` stored (see :mod:`credentials`).
    ``timeout``: seconds for each HTTP request (a long-poll gets
    ``poll_seconds`` more); ``verify``: False, a CA bundle's path or an
    :class:`ssl.SSLContext` for a server with a private CA.

    >>> with Client() as qp:
    ...     q = qp.ask_approve_deny("OPS123", "Deploy v1.4 to prod?").wait()
    ...     if q.value == "approve": deploy()
    """

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        *,
        poll_seconds: int = POLL_SECONDS,
        timeout: float = 15.0,
        verify: Union[bool, str, ssl.SSLContext] = True,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        super().__init__(url, token, poll_seconds)
        self._http = httpx.Client(
            base_url=self.url,
            timeout=httpx.Timeout(timeout, read=self.poll_seconds + timeout),
            verify=_verify(verify),
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        headers = self._headers
        if "json" in kw:
            # Serialized here, so a JSON null is sent as `null`, not as no body.
            kw["content"] = json.dumps(kw.pop("json"), ensure_ascii=False).encode()
            headers["Content-Type"] = "application/json"
        if self._http.is_closed:
            raise self._closed_error()
        failure: Optional[TransportError] = None
        try:
            resp = self._http.request(method, path, headers=headers, **kw)
        except httpx.HTTPError as e:
            failure = self._transport_error(e)
        if failure is not None:
            # Raised outside the except block, so httpx's exception is not
            # even its __context__: its request carries the bearer token.
            raise failure
        return _read(resp)

    def ask(
        self,
        room: str,
        prompt: str,
        *,
        options: Optional[Sequence[OptionLike]] = None,
        text_input: Union[None, bool, str, TextInput, Mapping[str, Any]] = None,
        scope: Optional[Scope] = None,
        target_user_id: Optional[str] = None,
        ttl: Optional[float] = None,
        context: Optional[str] = None,
        correlation_id: Optional[str] = None,
        reply_to: Optional[str] = None,
        data: Optional[Mapping[str, Any]] = None,
    ) -> Handle:
        """Asks in ``room`` (its invite code); returns a :class:`Handle` at once."""
        body = build_body(
            prompt,
            options=options,
            text_input=text_input,
            scope=scope,
            target_user_id=target_user_id,
            ttl=ttl,
            context=context,
            correlation_id=correlation_id,
            reply_to=reply_to,
            data=data,
        )
        return self.ask_body(room, body)

    def ask_body(self, room: str, body: Any) -> Handle:
        """Asks with a wire-shaped body (any JSON value), sent as given but
        for section 8's rules: no server-owned fields (``answer``,
        ``responder``…), at most four options. Its ``ttl`` goes to the server
        as is (the protocol's rules then apply to it)."""
        q = Question.from_wire(self._call("POST", self._room_path(room), json=_checked(body)))
        return Handle(self, q)

    def ask_yes_no(
        self,
        room: str,
        prompt: str,
        *,
        text_input: Union[None, bool, str, TextInput, Mapping[str, Any]] = None,
        scope: Optional[Scope] = None,
        target_user_id: Optional[str] = None,
        ttl: Optional[float] = None,
        context: Optional[str] = None,
        correlation_id: Optional[str] = None,
        reply_to: Optional[str] = None,
        data: Optional[Mapping[str, Any]] = None,
    ) -> Handle:
        """Yes (primary) / No: answer values ``yes`` and ``no``; the other arguments as :meth:`ask`."""
        return self.ask(
            room,
            prompt,
            options=YES_NO,
            text_input=text_input,
            scope=scope,
            target_user_id=target_user_id,
            ttl=ttl,
            context=context,
            correlation_id=correlation_id,
            reply_to=reply_to,
            data=data,
        )

    def ask_approve_deny(
        self,
        room: str,
        prompt: str,
        *,
        text_input: Union[None, bool, str, TextInput, Mapping[str, Any]] = None,
        scope: Optional[Scope] = None,
        target_user_id: Optional[str] = None,
        ttl: Optional[float] = None,
        context: Optional[str] = None,
        correlation_id: Optional[str] = None,
        reply_to: Optional[str] = None,
        data: Optional[Mapping[str, Any]] = None,
    ) -> Handle:
        """Approve (primary) / Deny (danger): values ``approve`` / ``deny`` (as
        ``qp ask --yes-no``); the other arguments as :meth:`ask`."""
        return self.ask(
            room,
            prompt,
            options=APPROVE_DENY,
            text_input=text_input,
            scope=scope,
            target_user_id=target_user_id,
            ttl=ttl,
            context=context,
            correlation_id=correlation_id,
            reply_to=reply_to,
            data=data,
        )

    def wait_once(self, id: str, timeout: int) -> Question:
        """One long-poll of at most ``timeout`` seconds (0 to ``LONG_POLL_MAX_SECONDS``)."""
        return Question.from_wire(self._call("GET", self._q(id, "/wait"), params={"timeout": timeout}))

    def wait(self, id: str, timeout: Optional[float] = None) -> Question:
        """Blocks until the question is answered, expired or cancelled, and
        returns it. Re-polls across the server's long-poll limit, waits out a
        429's ``Retry-After`` and rides out transient failures. With
        ``timeout`` (seconds), raises :class:`WaitTimeout` when it runs out.
        Ctrl-C (KeyboardInterrupt) stops waiting and leaves the question pending."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        failures = 0
        last: Optional[Question] = None
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            secs = self.poll_seconds if left is None else min(self.poll_seconds, math.ceil(left))
            try:
                q = self.wait_once(id, secs)
                failures = 0
                if q.is_terminal:
                    return q
                last = q
            except RateLimitedError as e:
                failures += 1
                pause = float(e.retry_after) if e.retry_after is not None else _backoff(failures)
                if left is not None and pause >= left:
                    raise
                time.sleep(pause)
            except QPError as e:
                if not _transient(e):
                    raise
                failures += 1
                pause = _backoff(failures)
                if left is not None and pause >= left:
                    raise
                time.sleep(pause)
            if deadline is not None and time.monotonic() >= deadline:
                q = last if last is not None else self.get(id)
                if q.is_terminal:
                    return q
                raise WaitTimeout(f"question {id} is still pending after {timeout} s", question=q)

    def get(self, id: str) -> Question:
        """The question as it stands (only the agent that asked it sees it)."""
        return Question.from_wire(self._call("GET", self._q(id)))

    def list(self, state: Optional[ListState] = None, limit: Optional[int] = None) -> List[Question]:
        """``state``: pending, answered, expired, cancelled, all, or None (the last 24 h); newest first."""
        body = self._call("GET", "/api/agent/questions", params=self._list_params(state, limit))
        return [Question.from_wire(q) for q in body.get("questions", []) if isinstance(q, dict)]

    def find(self, correlation_id: str, state: ListState = "all") -> Optional[Question]:
        """The newest of this agent's questions with ``correlation_id`` (ask
        and forget, then reconcile), or None. Looks through the newest ``LIST_MAX_LIMIT``
        (the server's most per list) of ``state``."""
        for q in self.list(state=state, limit=LIST_MAX_LIMIT):
            if q.correlation_id == correlation_id:
                return q
        return None

    def cancel(self, id: str) -> Question:
        """Withdraws a pending question; a terminal one raises
        :class:`AlreadyResolvedError` carrying it."""
        return Question.from_wire(self._call("POST", self._q(id, "/cancel")))


class AsyncClient(_Base):
    """The :class:`Client`'s twin for asyncio: the same calls, awaited.
    Cancelling a task that waits leaves the question pending."""

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        *,
        poll_seconds: int = POLL_SECONDS,
        timeout: float = 15.0,
        verify: Union[bool, str, ssl.SSLContext] = True,
        transport: Optional[httpx.AsyncBaseTransport] = None,
    ) -> None:
        super().__init__(url, token, poll_seconds)
        self._http = httpx.AsyncClient(
            base_url=self.url,
            timeout=httpx.Timeout(timeout, read=self.poll_seconds + timeout),
            verify=_verify(verify),
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _call(self, method: str, path: str, **kw: Any) -> Any:
        headers = self._headers
        if "json" in kw:
            kw["content"] = json.dumps(kw.pop("json"), ensure_ascii=False).encode()
            headers["Content-Type"] = "application/json"
        if self._http.is_closed:
            raise self._closed_error()
        failure: Optional[TransportError] = None
        try:
            resp = await self._http.request(method, path, headers=headers, **kw)
        except httpx.HTTPError as e:
            failure = self._transport_error(e)
        if failure is not None:
            # Raised outside the except block, so httpx's exception is not
            # even its __context__: its request carries the bearer token.
            raise failure
        return _read(resp)

    async def ask(
        self,
        room: str,
        prompt: str,
        *,
        options: Optional[Sequence[OptionLike]] = None,
        text_input: Union[None, bool, str, TextInput, Mapping[str, Any]] = None,
        scope: Optional[Scope] = None,
        target_user_id: Optional[str] = None,
        ttl: Optional[float] = None,
        context: Optional[str] = None,
        correlation_id: Optional[str] = None,
        reply_to: Optional[str] = None,
        data: Optional[Mapping[str, Any]] = None,
    ) -> AsyncHandle:
        """Asks in ``room`` (its invite code); returns an :class:`AsyncHandle` at once."""
        body = build_body(
            prompt,
            options=options,
            text_input=text_input,
            scope=scope,
            target_user_id=target_user_id,
            ttl=ttl,
            context=context,
            correlation_id=correlation_id,
            reply_to=reply_to,
            data=data,
        )
        return await self.ask_body(room, body)

    async def ask_body(self, room: str, body: Any) -> AsyncHandle:
        """As :meth:`Client.ask_body`, awaited."""
        q = Question.from_wire(await self._call("POST", self._room_path(room), json=_checked(body)))
        return AsyncHandle(self, q)

    async def ask_yes_no(
        self,
        room: str,
        prompt: str,
        *,
        text_input: Union[None, bool, str, TextInput, Mapping[str, Any]] = None,
        scope: Optional[Scope] = None,
        target_user_id: Optional[str] = None,
        ttl: Optional[float] = None,
        context: Optional[str] = None,
        correlation_id: Optional[str] = None,
        reply_to: Optional[str] = None,
        data: Optional[Mapping[str, Any]] = None,
    ) -> AsyncHandle:
        """Yes (primary) / No: answer values ``yes`` and ``no``; the other arguments as :meth:`ask`."""
        return await self.ask(
            room,
            prompt,
            options=YES_NO,
            text_input=text_input,
            scope=scope,
            target_user_id=target_user_id,
            ttl=ttl,
            context=context,
            correlation_id=correlation_id,
            reply_to=reply_to,
            data=data,
        )

    async def ask_approve_deny(
        self,
        room: str,
        prompt: str,
        *,
        text_input: Union[None, bool, str, TextInput, Mapping[str, Any]] = None,
        scope: Optional[Scope] = None,
        target_user_id: Optional[str] = None,
        ttl: Optional[float] = None,
        context: Optional[str] = None,
        correlation_id: Optional[str] = None,
        reply_to: Optional[str] = None,
        data: Optional[Mapping[str, Any]] = None,
    ) -> AsyncHandle:
        """Approve (primary) / Deny (danger): values ``approve`` / ``deny`` (as
        ``qp ask --yes-no``); the other arguments as :meth:`ask`."""
        return await self.ask(
            room,
            prompt,
            options=APPROVE_DENY,
            text_input=text_input,
            scope=scope,
            target_user_id=target_user_id,
            ttl=ttl,
            context=context,
            correlation_id=correlation_id,
            reply_to=reply_to,
            data=data,
        )

    async def wait_once(self, id: str, timeout: int) -> Question:
        """One long-poll of at most ``timeout`` seconds (0 to ``LONG_POLL_MAX_SECONDS``)."""
        return Question.from_wire(await self._call("GET", self._q(id, "/wait"), params={"timeout": timeout}))

    async def wait(self, id: str, timeout: Optional[float] = None) -> Question:
        """As :meth:`Client.wait`, awaited."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + max(0.0, timeout)
        failures = 0
        last: Optional[Question] = None
        while True:
            left = None if deadline is None else max(0.0, deadline - loop.time())
            secs = self.poll_seconds if left is None else min(self.poll_seconds, math.ceil(left))
            try:
                q = await self.wait_once(id, secs)
                failures = 0
                if q.is_terminal:
                    return q
                last = q
            except RateLimitedError as e:
                failures += 1
                pause = float(e.retry_after) if e.retry_after is not None else _backoff(failures)
                if left is not None and pause >= left:
                    raise
                await asyncio.sleep(pause)
            except QPError as e:
                if not _transient(e):
                    raise
                failures += 1
                pause = _backoff(failures)
                if left is not None and pause >= left:
                    raise
                await asyncio.sleep(pause)
            if deadline is not None and loop.time() >= deadline:
                q = last if last is not None else await self.get(id)
                if q.is_terminal:
                    return q
                raise WaitTimeout(f"question {id} is still pending after {timeout} s", question=q)

    async def get(self, id: str) -> Question:
        """The question as it stands (only the agent that asked it sees it)."""
        return Question.from_wire(await self._call("GET", self._q(id)))

    async def list(self, state: Optional[ListState] = None, limit: Optional[int] = None) -> List[Question]:
        """``state``: pending, answered, expired, cancelled, all, or None (the last 24 h); newest first."""
        body = await self._call("GET", "/api/agent/questions", params=self._list_params(state, limit))
        return [Question.from_wire(q) for q in body.get("questions", []) if isinstance(q, dict)]

    async def find(self, correlation_id: str, state: ListState = "all") -> Optional[Question]:
        """As :meth:`Client.find`, awaited."""
        for q in await self.list(state=state, limit=LIST_MAX_LIMIT):
            if q.correlation_id == correlation_id:
                return q
        return None

    async def cancel(self, id: str) -> Question:
        """Withdraws a pending question; a terminal one raises
        :class:`AlreadyResolvedError` carrying it."""
        return Question.from_wire(await self._call("POST", self._q(id, "/cancel")))


C = TypeVar("C")


class _HandleBase(Generic[C]):
    def __init__(self, client: C, question: Question) -> None:
        self.client = client
        self.question = question

    @property
    def id(self) -> str:
        return self.question.id

    @property
    def expires_at(self) -> _dt.datetime:
        return self.question.expires_at

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r}, expires_at={self.expires_at.isoformat()!r})"


class Handle(_HandleBase[Client]):
    """A question just asked: ``id``, ``expires_at``, ``question`` (as created)."""

    def wait(self, timeout: Optional[float] = None) -> Question:
        """:meth:`Client.wait` for this question."""
        return self.client.wait(self.id, timeout)

    def get(self) -> Question:
        return self.client.get(self.id)

    def cancel(self) -> Question:
        return self.client.cancel(self.id)


class AsyncHandle(_HandleBase[AsyncClient]):
    """A question just asked (async): ``id``, ``expires_at``, ``question`` (as created)."""

    async def wait(self, timeout: Optional[float] = None) -> Question:
        """:meth:`AsyncClient.wait` for this question."""
        return await self.client.wait(self.id, timeout)

    async def get(self) -> Question:
        return await self.client.get(self.id)

    async def cancel(self) -> Question:
        return await self.client.cancel(self.id)
