"""Errors as exceptions. Every error the server sends has one shape,
``{"code", "field", "message"}`` (field: a JSON path like ``options[2].label``,
or None); each exception carries those three, the HTTP status, and for a
409 the question as it stands. No exception ever holds a token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from .models import Question


class QPError(Exception):
    """The base of every error this package raises."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "error",
        field: Optional[str] = None,
        status: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.field = field
        self.status = status

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, field={self.field!r}, "
            f"status={self.status!r}, message={self.message!r})"
        )


class APIError(QPError):
    """The server answered with an error body."""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        field: Optional[str] = None,
        status: Optional[int] = None,
        question: Optional[Question] = None,
        body: Optional[dict[str, Any]] = None,
    ) -> None:
        super().__init__(message, code=code, field=field, status=status)
        self.question = question
        self.body = body or {}


class ValidationError(APIError):
    """A broken protocol rule (422, or refused before sending): ``field`` names
    the part of the question, ``code`` the rule (``too_long``, ``too_many``…)."""


class BadRequestError(APIError):
    """400: a request the server could not read."""


class AuthenticationError(APIError):
    """401: no token, or one the server does not know."""


class ForbiddenError(APIError):
    """403: the wrong kind of token, a missing scope, a room not allowed."""


class NotFoundError(APIError):
    """404: no such question for this agent (or no such endpoint)."""


class AlreadyResolvedError(APIError):
    """409: the question is terminal; ``question`` is it, as it stands."""


class RateLimitedError(APIError):
    """429: ``retry_after`` is how many seconds the server asked to wait."""

    def __init__(self, message: str, *, retry_after: Optional[float] = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class ServerError(APIError):
    """5xx: the server failed or is stopping; worth retrying."""


class TransportError(QPError):
    """The server could not be reached, or its answer was cut off."""


class ClosedError(QPError):
    """The client was used after ``close()`` / ``aclose()`` or its ``with`` block."""


class CredentialsError(QPError):
    """No token to use, or a stored one for another server (never sent there)."""


class WaitTimeout(QPError, TimeoutError):
    """``wait(timeout=…)`` ran out; the question is still pending (``question``)."""

    def __init__(self, message: str, *, question: Question) -> None:
        super().__init__(message, code="wait_timeout", field=None, status=None)
        self.question = question


class Denied(QPError):
    """Raised by ``@require_approval`` when the call was not approved: ``state``
    is ``answered`` (denied, or a typed reason in ``reason``), ``expired`` or
    ``cancelled``; ``responder`` who answered, if anyone."""

    def __init__(self, message: str, *, question: Question) -> None:
        super().__init__(message, code="denied", field=None, status=None)
        self.question = question
        self.state = question.state
        self.reason = question.text
        self.value = question.value
        self.responder = question.responder


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: ForbiddenError,
    404: NotFoundError,
    409: AlreadyResolvedError,
    422: ValidationError,
    429: RateLimitedError,
}


def error_from_response(
    status: int, body: Any, retry_after: Optional[float], question: Optional[Question]
) -> APIError:
    """The exception for an error response: qp's ``error`` object, else the
    reference's flat ``code``/``message``."""
    inner = body.get("error") if isinstance(body, dict) else None
    src = inner if isinstance(inner, dict) else (body if isinstance(body, dict) else {})
    code = src.get("code")
    message = src.get("message")
    field = src.get("field")
    if not isinstance(code, str):
        code = inner if isinstance(inner, str) else "http_error"
    if not isinstance(message, str):
        message = f"the server answered {status}"
    if not isinstance(field, str):
        field = None
    cls: type[APIError] = _BY_STATUS.get(status, ServerError if status >= 500 else APIError)
    kw: dict[str, Any] = {
        "code": code,
        "field": field,
        "status": status,
        "question": question,
        "body": body if isinstance(body, dict) else None,
    }
    if cls is RateLimitedError:
        return RateLimitedError(message, retry_after=retry_after, **kw)
    return cls(message, **kw)
