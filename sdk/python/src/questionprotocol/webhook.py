"""Verifying the signed webhooks a server sends when a question resolves,
from qp's headers or the reference implementation's (PingRoom), and reading
the event.

qp signs each delivery once, "v2": lowercase hex HMAC-SHA256(secret,
``"v2\\n{timestamp}\\n{delivery}\\n"`` + the raw body), sent as
``X-QP-Signature: v2=<hex>`` and ``X-PingRoom-Signature-V2: <hex>``, with the
timestamp in ``X-QP-Timestamp`` / ``X-PingRoom-Timestamp`` and the delivery id
in ``X-QP-Delivery`` / ``X-PingRoom-Delivery``. The reference's older scheme,
``X-PingRoom-Signature`` over ``"{timestamp}." + body`` (optionally
``sha256=``-prefixed), is accepted only when no V2 header is present, and qp's
earlier ``v1=`` over ``"{timestamp}.{delivery}." + body`` too.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union

from .models import parse_time

__all__ = ["WebhookEvent", "parse_webhook", "verify_webhook"]


def _lower(headers: Any) -> dict[str, str]:
    items: Any = headers.items() if hasattr(headers, "items") else headers
    return {str(k).lower(): str(v) for k, v in items}


def _hex(secret: bytes, *parts: bytes) -> str:
    mac = hmac.new(secret, digestmod=hashlib.sha256)
    for p in parts:
        mac.update(p)
    return mac.hexdigest()


def verify_webhook(
    headers: Union[Mapping[str, str], Any],
    body: bytes,
    secret: Union[str, bytes],
    max_age: float = 300,
    *,
    now: Optional[float] = None,
) -> bool:
    """True when ``body`` (the raw bytes, unparsed) is a delivery signed with
    ``secret`` whose timestamp is within ``max_age`` seconds of now. Compares
    in constant time. ``headers``: any mapping (or pairs), any case."""
    h = _lower(headers)
    key = secret.encode() if isinstance(secret, str) else secret
    if not isinstance(body, (bytes, bytearray)):
        return False
    body = bytes(body)
    now = time.time() if now is None else now
    qp_sig = h.get("x-qp-signature")
    if qp_sig is not None:
        ts, delivery = h.get("x-qp-timestamp", ""), h.get("x-qp-delivery", "")
        scheme, _, got = qp_sig.partition("=")
        if scheme == "v2":
            want = _hex(key, f"v2\n{ts}\n{delivery}\n".encode(), body)
        elif scheme == "v1":
            want = _hex(key, f"{ts}.{delivery}.".encode(), body)
        else:
            return False
    elif "x-pingroom-signature-v2" in h:
        ts, delivery = h.get("x-pingroom-timestamp", ""), h.get("x-pingroom-delivery", "")
        got = h["x-pingroom-signature-v2"]
        want = _hex(key, f"v2\n{ts}\n{delivery}\n".encode(), body)
    elif "x-pingroom-signature" in h:
        ts = h.get("x-pingroom-timestamp", "")
        got = h["x-pingroom-signature"]
        if got.startswith("sha256="):
            got = got[len("sha256=") :]
        want = _hex(key, f"{ts}.".encode(), body)
    else:
        return False
    ok = hmac.compare_digest(got.strip().lower().encode(), want.encode())
    if not ok or not ts.isdigit():
        return False
    return abs(now - int(ts)) <= max_age


@dataclass(frozen=True)
class WebhookEvent:
    """A resolution event: ``event`` is ``question.answered``, ``.expired``
    or ``.cancelled``; the answer fields read as on a :class:`Question`
    (``answered_at`` None unless answered)."""

    event: str
    question_id: str
    state: str
    value: Optional[str]
    label: Optional[str]
    text: Optional[str]
    responder_id: Optional[str]
    responder_name: Optional[str]
    answered_at: Optional[_dt.datetime]
    correlation_id: Optional[str]
    reply_to: Optional[str]
    data: Optional[dict[str, Any]]
    raw: Mapping[str, Any]


def parse_webhook(body: bytes) -> WebhookEvent:
    """Reads a delivery's body (verify it first). Raises ValueError if it is not an event."""
    e = json.loads(body)
    if not isinstance(e, dict) or not isinstance(e.get("event"), str):
        raise ValueError("not a webhook event")
    a: dict[str, Any] = e["answer"] if isinstance(e.get("answer"), dict) else {}
    r: dict[str, Any] = a["responder"] if isinstance(a.get("responder"), dict) else {}

    def s(m: Mapping[str, Any], k: str) -> Optional[str]:
        v = m.get(k)
        return v if isinstance(v, str) else None

    data = e.get("data")
    return WebhookEvent(
        event=e["event"],
        question_id=s(e, "question_id") or "",
        state=s(e, "state") or "",
        value=s(a, "value"),
        label=s(a, "label"),
        text=s(a, "text"),
        responder_id=s(r, "id"),
        responder_name=s(r, "display_name"),
        answered_at=parse_time(a.get("answered_at")),
        correlation_id=s(e, "correlation_id"),
        reply_to=s(e, "reply_to"),
        data=data if isinstance(data, dict) else None,
        raw=e,
    )
