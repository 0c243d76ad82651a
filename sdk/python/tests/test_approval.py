"""@require_approval on sync and async functions, answered from a
responder's token on a real server: approve runs the function; deny (a
tap or a typed reason), expiry and cancellation raise Denied."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest
from conftest import Server

import questionprotocol as qp
from questionprotocol import Denied, require_approval


def answer_when_asked(server: Server, body: dict[str, Any], seen: list[dict[str, Any]]) -> threading.Thread:
    """The phone: waits for the next pending question, records it, answers it."""
    before = {q["id"] for q in pending(server)}

    def go() -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            new = [q for q in pending(server) if q["id"] not in before]
            if new:
                seen.append(new[0])
                if body.get("expire"):
                    server.set_expiry(new[0]["id"], 1)
                elif body.get("cancel"):
                    httpx.post(
                        f"{server.url}/api/agent/questions/{new[0]['id']}/cancel",
                        headers={"Authorization": f"Bearer {server.agent_token}"},
                    )
                else:
                    server.answer(new[0]["id"], body)
                return
            time.sleep(0.05)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def pending(server: Server) -> list[dict[str, Any]]:
    r = httpx.get(f"{server.url}/api/questions/pending", headers={"Authorization": f"Bearer {server.alice}"})
    return r.json()["questions"]  # type: ignore[no-any-return]


@pytest.fixture
def both(server: Server, mode: str) -> Any:
    """(decorate, call): the same function as sync or async."""
    made: list[Any] = []

    def decorate(**kw: Any) -> Any:
        if mode == "sync":
            c: Any = qp.Client(server.url, server.agent_token, poll_seconds=1)
            made.append(c)

            @require_approval("OPS123", client=c, **kw)
            def deploy(env: str, *, password: str = "", force: bool = False) -> str:
                return f"deployed {env}"

            return deploy
        ac = qp.AsyncClient(server.url, server.agent_token, poll_seconds=1)
        made.append(ac)

        @require_approval("OPS123", client=ac, **kw)
        async def deploy_async(env: str, *, password: str = "", force: bool = False) -> str:
            return f"deployed {env}"

        return deploy_async

    yield decorate
    for c in made:
        if isinstance(c, qp.Client):
            c.close()


async def call(fn: Any, *a: Any, **kw: Any) -> Any:
    import inspect

    out = fn(*a, **kw)
    return await out if inspect.isawaitable(out) else out


async def test_approved_runs_the_function(both: Any, server: Server) -> None:
    seen: list[dict[str, Any]] = []
    fn = both()
    t = answer_when_asked(server, {"value": "allow"}, seen)
    assert await call(fn, "prod", force=True) == "deployed prod"
    t.join()
    q = seen[0]
    assert q["prompt"].startswith("Allow ") and "deploy" in q["prompt"] and "'prod'" in q["prompt"]
    assert "force=True" in q["prompt"]
    assert q["context"] is None
    assert [o["value"] for o in q["options"]] == ["allow", "deny"]
    assert q["text_input"] is not None


async def test_a_call_with_a_hidden_value_cannot_be_allowed_from_the_phone(both: Any, server: Server) -> None:
    """As `qp hook`: the phone offers "Decide at the computer" and Deny, never
    Allow, for a call it does not show whole; that answer does not run it."""
    seen: list[dict[str, Any]] = []
    fn = both()
    t = answer_when_asked(server, {"value": "ask"}, seen)
    with pytest.raises(Denied) as e:
        await call(fn, "prod", password="hunter2-secret", force=True)
    t.join()
    q = seen[0]
    assert "password='•••'" in q["prompt"] and "hunter2" not in q["prompt"], q["prompt"]
    assert q["context"] == "Not shown whole: 1 value hidden"
    assert [(o["value"], o["label"]) for o in q["options"]] == [
        ("ask", "Decide at the computer"),
        ("deny", "Deny"),
    ]
    assert (e.value.state, e.value.value) == ("answered", "ask")
    assert "decide at the computer" in str(e.value), str(e.value)


async def test_denied_with_a_typed_reason(both: Any, server: Server) -> None:
    seen: list[dict[str, Any]] = []
    fn = both()
    answer_when_asked(server, {"text": "not on a Friday"}, seen)
    with pytest.raises(Denied) as e:
        await call(fn, "prod")
    assert (e.value.state, e.value.reason, e.value.value) == ("answered", "not on a Friday", None)
    assert e.value.responder == qp.Responder("u_owner", "Alice")
    assert "not on a Friday" in str(e.value)


async def test_denied_by_the_button(both: Any, server: Server) -> None:
    fn = both()
    answer_when_asked(server, {"value": "deny"}, [])
    with pytest.raises(Denied) as e:
        await call(fn, "prod")
    assert (e.value.state, e.value.value, e.value.reason) == ("answered", "deny", None)


async def test_expired_and_cancelled_are_denied(both: Any, server: Server) -> None:
    fn = both()
    answer_when_asked(server, {"expire": True}, [])
    with pytest.raises(Denied) as e:
        await call(fn, "prod")
    assert (e.value.state, e.value.responder) == ("expired", None)
    answer_when_asked(server, {"cancel": True}, [])
    with pytest.raises(Denied) as e:
        await call(fn, "prod")
    assert e.value.state == "cancelled"


async def test_a_wait_that_runs_out_withdraws_the_question_and_does_not_run_it(
    both: Any, server: Server
) -> None:
    fn = both(timeout=1.5)
    with pytest.raises(Denied) as e:
        await call(fn, "prod")
    assert (e.value.state, e.value.responder) == ("cancelled", None)
    assert "no answer within 1.5 s" in str(e.value)
    assert e.value.question.id not in [q["id"] for q in pending(server)], "withdrawn from the phone"


def test_long_calls_are_cut_to_the_prompt_limit_and_say_so() -> None:
    prompt, masked, cut = qp.describe_call("f", ("x" * 900,), {})
    assert len(prompt) == 500 and prompt.endswith("…?") and cut and masked == 0
    prompt, _, cut = qp.describe_call("f", (), {"note": "a\u202eb"})
    assert "\u202e" not in prompt or "\\u202e" in prompt


async def test_a_cancelled_task_withdraws_the_question_and_does_not_run_it(server: Server) -> None:
    import asyncio

    ran: list[str] = []
    ac = qp.AsyncClient(server.url, server.agent_token, poll_seconds=1)

    @require_approval("OPS123", client=ac)
    async def deploy(env: str) -> None:
        ran.append(env)

    before = {q["id"] for q in pending(server)}
    task = asyncio.ensure_future(deploy("prod"))
    deadline = time.monotonic() + 10
    while not [q for q in pending(server) if q["id"] not in before] and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    new = [q for q in pending(server) if q["id"] not in before]
    assert len(new) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await ac.get(new[0]["id"])).state == "cancelled" and ran == []
    await ac.aclose()


def test_a_method_is_shown_without_its_self(server: Server) -> None:
    c = qp.Client(server.url, server.agent_token, poll_seconds=1)
    seen: list[dict[str, Any]] = []

    class Db:
        @require_approval("OPS123", client=c)
        def drop(self, table: str) -> str:
            return f"dropped {table}"

    answer_when_asked(server, {"value": "allow"}, seen)
    assert Db().drop("users") == "dropped users"
    assert seen[0]["prompt"].endswith("Db.drop('users')?"), seen[0]["prompt"]
    c.close()


def test_the_wrong_kind_of_client_is_refused_when_decorating(server: Server) -> None:
    c = qp.Client(server.url, server.agent_token)
    ac = qp.AsyncClient(server.url, server.agent_token)
    with pytest.raises(TypeError, match="needs client=AsyncClient"):

        @require_approval("OPS123", client=c)
        async def a() -> None: ...

    with pytest.raises(TypeError, match="needs client=Client"):

        @require_approval("OPS123", client=ac)
        def s() -> None: ...

    c.close()
