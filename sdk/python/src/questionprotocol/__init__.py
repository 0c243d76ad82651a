"""A typed client for the Question Protocol (v1.1): ask a person a question
on their phone's lock screen and get one attributable answer back.

    from questionprotocol import Client
    with Client() as qp:                      # QP_URL / QP_TOKEN, or `qp login`
        q = qp.ask_approve_deny("OPS123", "Deploy v1.4 to prod?").wait()
        if q.value == "approve":
            deploy()
"""

from .approval import describe_call, mask_secrets, require_approval
from .client import APPROVE_DENY, YES_NO, AsyncClient, AsyncHandle, Client, Handle
from .credentials import DEFAULT_URL, credentials_path
from .errors import (
    AlreadyResolvedError,
    APIError,
    AuthenticationError,
    BadRequestError,
    ClosedError,
    CredentialsError,
    Denied,
    ForbiddenError,
    NotFoundError,
    QPError,
    RateLimitedError,
    ServerError,
    TransportError,
    ValidationError,
    WaitTimeout,
)
from .models import (
    Answer,
    ListState,
    Option,
    Question,
    QuestionOption,
    Responder,
    Scope,
    State,
    Style,
    TextInput,
)
from .webhook import WebhookEvent, parse_webhook, verify_webhook

__version__ = "0.1.0"
PROTOCOL_VERSION = "1.1"

__all__ = [
    "APPROVE_DENY",
    "DEFAULT_URL",
    "PROTOCOL_VERSION",
    "YES_NO",
    "APIError",
    "AlreadyResolvedError",
    "Answer",
    "AsyncClient",
    "AsyncHandle",
    "AuthenticationError",
    "BadRequestError",
    "Client",
    "ClosedError",
    "CredentialsError",
    "Denied",
    "ForbiddenError",
    "Handle",
    "ListState",
    "NotFoundError",
    "Option",
    "QPError",
    "Question",
    "QuestionOption",
    "RateLimitedError",
    "Responder",
    "Scope",
    "ServerError",
    "State",
    "Style",
    "TextInput",
    "TransportError",
    "ValidationError",
    "WaitTimeout",
    "WebhookEvent",
    "credentials_path",
    "describe_call",
    "mask_secrets",
    "parse_webhook",
    "require_approval",
    "verify_webhook",
]
