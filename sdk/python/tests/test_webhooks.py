"""verify_webhook on real deliveries captured from qp serve (a receiver on
loopback), with qp's headers and with the reference's; tampered bodies,
wrong secrets and stale timestamps refused."""

from __future__ import annotations

import time
from typing import Any

import pytest
from conftest import SECRET, Receiver, Server

import questionprotocol as qp

QP_HEADERS = ("x-qp-event", "x-qp-delivery", "x-qp-timestamp", "x-qp-signature")
V2_HEADERS = ("x-pingroom-event", "x-pingroom-delivery", "x-pingroom-timestamp", "x-pingroom-signature-v2")
LEGACY_HEADERS = ("x-pingroom-event", "x-pingroom-delivery", "x-pingroom-timestamp", "x-pingroom-signature")


def only(headers: dict[str, str], names: tuple[str, ...]) -> dict[str, str]:
    low = {k.lower(): v for k, v in headers.items()}
    return {k: low[k] for k in names}


@pytest.fixture(scope="module")
def deliveries(server: Server) -> list[tuple[dict[str, str], bytes]]:
    """One answered and one cancelled question's deliveries, as received."""
    c = qp.Client(server.url, server.agent_token)
    a = c.ask_approve_deny("OPS123", "Webhook?", correlation_id="hook-1")
    server.answer(a.id, {"value": "approve"})
    b = c.ask("OPS123", "Cancelled webhook?", correlation_id="hook-2")
    b.cancel()
    c.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with Receiver.lock:
            got = [d for d in Receiver.deliveries if b'"hook-1"' in d[1] or b'"hook-2"' in d[1]]
        if len(got) >= 2:
            return got
        time.sleep(0.1)
    raise AssertionError("no deliveries arrived")


def test_real_deliveries_verify_with_both_header_sets(deliveries: Any) -> None:
    events = set()
    for headers, body in deliveries:
        assert qp.verify_webhook(headers, body, SECRET)
        assert qp.verify_webhook(only(headers, QP_HEADERS), body, SECRET)
        assert qp.verify_webhook(only(headers, V2_HEADERS), body, SECRET)
        assert qp.verify_webhook(only(headers, LEGACY_HEADERS), body, SECRET)
        assert qp.verify_webhook(list(headers.items()), body, SECRET.encode())
        e = qp.parse_webhook(body)
        events.add((e.event, e.correlation_id, e.value))
        assert (e.answered_at is not None) == (e.event == "question.answered")
    assert events == {("question.answered", "hook-1", "approve"), ("question.cancelled", "hook-2", None)}


def test_tampered_wrong_secret_and_stale_are_refused(deliveries: Any) -> None:
    headers, body = deliveries[0]
    ts = int({k.lower(): v for k, v in headers.items()}["x-qp-timestamp"])
    tampered = body.replace(b"approve", b"deny!!!")
    assert tampered != body
    for names in (QP_HEADERS, V2_HEADERS, LEGACY_HEADERS):
        h = only(headers, names)
        assert qp.verify_webhook(h, body, SECRET, now=ts + 299)
        assert not qp.verify_webhook(h, tampered, SECRET), names
        assert not qp.verify_webhook(h, body + b" ", SECRET), names
        assert not qp.verify_webhook(h, body, SECRET + "x"), names
        assert not qp.verify_webhook(h, body, "", now=ts), names
        assert not qp.verify_webhook(h, body, SECRET, now=ts + 301), names
        assert not qp.verify_webhook(h, body, SECRET, now=ts - 301), names
        assert not qp.verify_webhook(h, body, SECRET, max_age=10, now=ts + 11), names
    # A replayed delivery with a fresh timestamp no longer matches its signature.
    h = only(headers, QP_HEADERS)
    h["x-qp-timestamp"] = str(int(time.time()))
    assert h["x-qp-timestamp"] != str(ts) or True
    h["x-qp-timestamp"] = str(ts + 1)
    assert not qp.verify_webhook(h, body, SECRET, now=ts + 1)
    # Another delivery id under qp's V2: the signature binds it.
    h = only(headers, QP_HEADERS)
    h["x-qp-delivery"] = "d_other"
    assert not qp.verify_webhook(h, body, SECRET, now=ts)
    assert not qp.verify_webhook({}, body, SECRET)
    assert not qp.verify_webhook({"x-qp-signature": "v9=abc", "x-qp-timestamp": str(ts)}, body, SECRET)
