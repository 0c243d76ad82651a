"""Both clients, the same cases, against a real `qp serve`."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from conftest import Server, r, shut

import questionprotocol as qp
from questionprotocol import Option, TextInput


def opts(q: qp.Question) -> list[tuple[str, str, str]]:
    return [(o.value, o.label, o.style) for o in q.options]


async def test_ask_in_every_form(client: Any, server: Server) -> None:
    h = await r(client.ask("OPS123", "Strings?", options=["staging", "prod"]))
    assert h.id.startswith("q_") and h.expires_at.tzinfo is not None
    assert opts(h.question) == [("staging", "staging", "default"), ("prod", "prod", "default")]

    h = await r(
        client.ask("OPS123", "Pairs?", options=[("stg", "Staging"), ("prd", "Production", "primary")])
    )
    assert opts(h.question) == [("stg", "Staging", "default"), ("prd", "Production", "primary")]

    h = await r(
        client.ask(
            "OPS123",
            "Objects?",
            options=[Option("go", "Go", "primary"), {"value": "stop", "label": "Stop", "style": "danger"}],
            text_input=TextInput(placeholder="or say why", max_length=20),
            context="Build #7",
            correlation_id="rel-1",
            reply_to="workflow:deploy",
            data={"commit": "abc", "n": [1, 2]},
            ttl=120,
        )
    )
    q = await r(client.get(h.id))
    assert opts(q) == [("go", "Go", "primary"), ("stop", "Stop", "danger")]
    assert q.text_input == TextInput(placeholder="or say why", max_length=20)
    assert (q.context, q.correlation_id, q.reply_to) == ("Build #7", "rel-1", "workflow:deploy")
    assert q.data == {"commit": "abc", "n": [1, 2]}
    assert q.created_at is not None and (q.expires_at - q.created_at).total_seconds() == 120
    assert q.state == "pending" and q.answer is None

    h = await r(client.ask("OPS123", "Why hold?", text_input="Type a reason"))
    assert h.question.options == () and h.question.text_input.placeholder == "Type a reason"
    h = await r(client.ask("OPS123", "Typed?", text_input=True))
    assert h.question.text_input.max_length == 60

    h = await r(client.ask("OPS123", "Anyone?", scope="room"))
    assert (h.question.responder_scope, h.question.target_user_id) == ("room", None)
    h = await r(client.ask("OPS123", "Bob?", target_user_id="u_bob"))
    assert (h.question.responder_scope, h.question.target_user_id) == ("direct", "u_bob")
    h = await r(client.ask("OPS123", "Default?"))
    assert h.question.target_user_id == "u_owner"
    assert [o.value for o in h.question.options] == ["approve", "deny"]

    h = await r(client.ask_yes_no("OPS123", "Yes or no?"))
    assert opts(h.question) == [("yes", "Yes", "primary"), ("no", "No", "default")]
    h = await r(client.ask_approve_deny("OPS123", "Approve?"))
    assert opts(h.question) == [("approve", "Approve", "primary"), ("deny", "Deny", "danger")]


async def test_an_invalid_expiry_falls_back_to_the_default(client: Any) -> None:
    for bad in ("1800", 1800.5, True, float("nan")):
        with pytest.warns(UserWarning, match="default 3600"):
            h = await r(client.ask("OPS123", "Bad ttl?", ttl=bad))
        q = h.question
        assert (q.expires_at - q.created_at).total_seconds() == 3600, bad
    h = await r(client.ask("OPS123", "No ttl?"))
    assert (h.question.expires_at - h.question.created_at).total_seconds() == 3600
    # A question read without a readable expiry gets created_at + 3600 s.
    raw = dict(h.question.raw)
    raw["expires_at"] = "not a time"
    assert (qp.Question.from_wire(raw).expires_at - h.question.created_at).total_seconds() == 3600


async def test_no_responder_identity_and_at_most_four_options(client: Any, server: Server) -> None:
    # A raw body's responder/answer never reach the server as the answer.
    h = await r(
        client.ask_body(
            "OPS123",
            {
                "prompt": "Forged?",
                "answer": {"value": "approve"},
                "responder": {"id": "u_bob"},
                "state": "answered",
            },
        )
    )
    assert h.question.state == "pending" and h.question.answer is None
    before = len(await r(client.list(state="all", limit=500)))
    with pytest.raises(qp.ValidationError) as e:
        await r(client.ask("OPS123", "Five?", options=["a", "b", "c", "d", "e"]))
    assert (e.value.code, e.value.field, e.value.status) == ("too_many", "options", None)
    with pytest.raises(qp.ValidationError) as e:
        await r(client.ask("OPS123", "One string?", options="yes"))
    assert (e.value.code, e.value.field, e.value.status) == ("invalid_type", "options", None)
    assert len(await r(client.list(state="all", limit=500))) == before, "refused before sending"
    assert not hasattr(client, "answer"), "an asker cannot answer"


async def test_wait_spans_several_long_polls_and_returns_the_tapped_answer(
    client: Any, server: Server
) -> None:
    h = await r(client.ask_approve_deny("OPS123", "Deploy?", correlation_id="dep-9"))
    server.answer_later(h.id, {"value": "approve"}, delay=3.5)
    t = time.monotonic()
    q = await r(h.wait())
    assert time.monotonic() - t >= 3.0, "waited over several 1-second polls"
    assert q.state == "answered" and q.is_terminal
    assert (q.value, q.label, q.text) == ("approve", "Approve", None)
    assert q.responder == qp.Responder(id="u_owner", display_name="Alice")
    assert q.answered_at is not None and q.correlation_id == "dep-9"


async def test_a_typed_answer_from_another_responder(client: Any, server: Server) -> None:
    h = await r(client.ask("OPS123", "Why?", scope="room", options=["ok", "no"], text_input="Reason"))
    server.answer_later(h.id, {"text": "  waiting on QA  "}, delay=0.5, token=server.bob)
    q = await r(h.wait(timeout=20))
    assert (q.state, q.value, q.label, q.text) == ("answered", None, None, "waiting on QA")
    assert q.responder.display_name == "Bob"


async def test_expired(client: Any, server: Server) -> None:
    h = await r(client.ask("OPS123", "Expire me?"))
    server.set_expiry(h.id, 1)
    q = await r(h.wait(timeout=20))
    assert q.state == "expired" and q.answer is None


async def test_cancelled_while_waiting_then_already_resolved(client: Any, server: Server) -> None:
    h = await r(client.ask("OPS123", "Cancel me?"))
    other = qp.Client(server.url, server.agent_token)

    def cancel_soon() -> None:
        time.sleep(0.7)
        other.cancel(h.id)

    import threading

    threading.Thread(target=cancel_soon, daemon=True).start()
    q = await r(h.wait(timeout=20))
    assert q.state == "cancelled"
    with pytest.raises(qp.AlreadyResolvedError) as e:
        await r(h.cancel())
    assert (e.value.status, e.value.code) == (409, "already_resolved")
    assert e.value.question is not None and e.value.question.state == "cancelled"
    other.close()


async def test_wait_timeout_leaves_the_question_pending(client: Any) -> None:
    h = await r(client.ask("OPS123", "Nobody answers?"))
    with pytest.raises(qp.WaitTimeout) as e:
        await r(h.wait(timeout=1.5))
    assert e.value.question.state == "pending" and isinstance(e.value, TimeoutError)
    assert (await r(h.get())).state == "pending"


async def test_fire_and_forget_then_reconcile_by_correlation_id(client: Any, server: Server) -> None:
    cid = f"release-{uuid.uuid4()}"
    h = await r(client.ask("OPS123", "Ship later?", correlation_id=cid))
    found = await r(client.find(cid))
    assert found is not None and (found.id, found.state) == (h.id, "pending")
    assert h.id in [q.id for q in await r(client.list(state="pending"))]
    server.answer(h.id, {"value": "deny"})
    found = await r(client.find(cid))
    assert (found.state, found.value, found.responder.id) == ("answered", "deny", "u_owner")
    assert h.id in [q.id for q in await r(client.list(state="answered"))]
    assert h.id in [q.id for q in await r(client.list())]
    assert await r(client.find(f"none-{uuid.uuid4()}")) is None


async def test_every_error_class_from_the_server(client: Any, server: Server, mode: str) -> None:
    with pytest.raises(qp.ValidationError) as v:
        await r(client.ask("OPS123", "Deploy?", context="c" * 41))
    assert (v.value.status, v.value.code, v.value.field) == (422, "too_long", "context")
    assert "context" in v.value.message
    with pytest.raises(qp.ValidationError) as v:
        await r(client.ask("OPS123", "Deploy?", options=[("a", "A"), ("b", "L" * 41)]))
    assert (v.value.code, v.value.field) == ("too_long", "options[1].label")
    with pytest.raises(qp.NotFoundError) as nf:
        await r(client.get("q_nope"))
    assert (nf.value.status, nf.value.code) == (404, "not_found")
    with pytest.raises(qp.ForbiddenError) as fb:
        await r(client.ask("OTHER1", "Not my room?"))
    assert fb.value.status == 403
    bad = (qp.Client if mode == "sync" else qp.AsyncClient)(server.url, "qpa_" + "x" * 40)
    with pytest.raises(qp.AuthenticationError) as au:
        await r(bad.ask("OPS123", "Who am I?"))
    assert au.value.status == 401
    # A user token is the wrong kind for the asker's API.
    wrong = (qp.Client if mode == "sync" else qp.AsyncClient)(server.url, server.alice)
    with pytest.raises(qp.ForbiddenError):
        await r(wrong.list())
    for c in (bad, wrong):
        await shut(c)
    dead = (qp.Client if mode == "sync" else qp.AsyncClient)("http://127.0.0.1:9", server.agent_token)
    with pytest.raises(qp.TransportError) as tr:
        await r(dead.get("q_x"))
    assert "127.0.0.1:9" in str(tr.value) and server.agent_token not in str(tr.value)
    await shut(dead)


async def test_rate_limited_with_retry_after(mode: str, tight: Server) -> None:
    c = (qp.Client if mode == "sync" else qp.AsyncClient)(tight.url, tight.agent_token, poll_seconds=2)
    first = None
    with pytest.raises(qp.RateLimitedError) as e:
        for _ in range(3):
            first = first or await r(c.ask("OPS123", "Burst?"))
            await r(c.ask("OPS123", "Burst?"))
    assert e.value.status == 429 and e.value.code == "rate_limited"
    assert e.value.retry_after is not None and e.value.retry_after >= 1
    await shut(c)


async def test_wait_honours_retry_after_of_the_long_poll_cap(mode: str, onepoll: Server) -> None:
    """One long-poll per agent: while another holds it, wait gets 429 +
    Retry-After, pauses that long and polls again, then gets the answer."""
    import httpx

    resp = httpx.post(
        f"{onepoll.url}/api/agent/rooms/OPS123/questions",
        json={"prompt": f"Held? {mode}"},
        headers={"Authorization": f"Bearer {onepoll.agent_token}"},
    )
    qid = resp.json()["id"]
    saw_429: list[int] = []

    def holder() -> None:
        r429 = httpx.get(
            f"{onepoll.url}/api/agent/questions/{qid}/wait",
            params={"timeout": 2},
            headers={"Authorization": f"Bearer {onepoll.agent_token}"},
            timeout=10,
        )
        saw_429.append(r429.status_code)

    import threading

    t = threading.Thread(target=holder)
    t.start()
    await asyncio.sleep(0.3)
    probe = httpx.get(
        f"{onepoll.url}/api/agent/questions/{qid}/wait",
        params={"timeout": 1},
        headers={"Authorization": f"Bearer {onepoll.agent_token}"},
    )
    assert probe.status_code == 429 and probe.headers["retry-after"] == "1"
    onepoll.answer_later(qid, {"value": "approve"}, delay=2.5)
    c = (qp.Client if mode == "sync" else qp.AsyncClient)(onepoll.url, onepoll.agent_token, poll_seconds=1)
    q = await r(c.wait(qid, timeout=20))
    assert (q.state, q.value) == ("answered", "approve")
    t.join()
    assert saw_429 == [200]
    await shut(c)


async def test_a_closed_client_says_so(mode: str, server: Server) -> None:
    c = (qp.Client if mode == "sync" else qp.AsyncClient)(server.url, server.agent_token)
    await shut(c)
    with pytest.raises(qp.ClosedError) as e:
        await r(c.list())
    assert e.value.code == "closed" and "closed" in str(e.value)
    assert server.agent_token not in str(e.value) + repr(e.value)


async def test_the_two_shapes_take_the_same_keywords_as_ask(client: Any) -> None:
    h = await r(
        client.ask_yes_no(
            "OPS123", "Shape?", ttl=120, context="ctx", correlation_id="shape-1", text_input=True
        )
    )
    assert [o.value for o in h.question.options] == ["yes", "no"]
    assert (h.question.context, h.question.correlation_id) == ("ctx", "shape-1")
    assert h.question.text_input is not None
    with pytest.raises(TypeError):
        await r(client.ask_approve_deny("OPS123", "Typo?", contxt="x"))


def test_a_ca_bundle_path_is_taken_without_httpx_deprecation() -> None:
    import warnings

    import certifi

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for c in (
            qp.Client("https://qp.example.test", "qpa_x", verify=certifi.where()),
            qp.AsyncClient("https://qp.example.test", "qpa_x", verify=certifi.where()),
        ):
            assert repr(c) == f"{type(c).__name__}(url='https://qp.example.test')"
