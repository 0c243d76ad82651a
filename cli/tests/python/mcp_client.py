#!/usr/bin/env python3
"""qp's MCP tools driven by the official MCP Python SDK (`mcp` from PyPI),
over both transports: `qp serve`'s streamable HTTP endpoint `/mcp` and
`qp mcp` on stdio. A person is played by a thread that answers through the
HTTP API with a user token, as a phone does.

Usage: QP=/path/to/qp python mcp_client.py   (with `mcp` installed)
Prints one line per check and "N passed, M failed"; exits 1 on any failure.
"""

import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from qp_harness import QP, admin, check, serve, summary

TOOLS = {"ask_question", "wait_for_answer", "get_question", "list_questions", "cancel_question"}


def http(method, url, token=None, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json, text/event-stream")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read()
            return r.status, (json.loads(text) if text.strip().startswith(b"{") else text)
    except urllib.error.HTTPError as e:
        text = e.read()
        return e.code, (json.loads(text) if text.strip().startswith(b"{") else text)


class Person:
    """Answers pending questions by prompt, as the phone's user would."""

    def __init__(self, base, token):
        self.base, self.token = base, token

    def answer(self, prompt, body, timeout=20):
        """Waits for a pending question with this prompt, answers it, returns its id."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            _, listed = http("GET", f"{self.base}/api/questions/pending", self.token)
            for q in listed.get("questions", []):
                if q["prompt"] == prompt:
                    s, a = http("POST", f"{self.base}/api/questions/{q['id']}/answer", self.token, body)
                    if s != 200:
                        raise RuntimeError(f"answer failed: {s} {a}")
                    return q["id"]
            time.sleep(0.05)
        raise RuntimeError(f"no pending question {prompt!r}")

    def answer_later(self, prompt, body):
        t = threading.Thread(target=self.answer, args=(prompt, body), daemon=True)
        t.start()
        return t


def parked(base):
    """How many long-polls the server holds now (its /metrics)."""
    _, text = http("GET", f"{base}/metrics")
    for line in text.decode().splitlines():
        if line.startswith("qp_waiters_parked "):
            return float(line.split()[1])
    return None


def expire_now(db, qid):
    """Moves a question's deadline into the past (the protocol's minimum ttl is 30 s)."""
    t = int(time.time()) - 1
    iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
    with sqlite3.connect(db, timeout=10) as c:
        c.execute("UPDATE questions SET expires_at = ?, body = json_set(body, '$.expires_at', ?) WHERE id = ?",
                  (t, iso, qid))


def result(r):
    """The structured result of a tool call, or its error object."""
    text = "".join(getattr(c, "text", "") for c in r.content)
    try:
        body = json.loads(text)
    except ValueError:
        body = {"unparsed": text}
    return bool(r.is_error), body


async def while_waiting(session, qid, action):
    """Runs `action` while a wait_for_answer on `qid` is parked on the same
    session; returns both results."""
    got = {}
    async with anyio.create_task_group() as tg:
        async def waiter():
            got["wait"] = result(await session.call_tool("wait_for_answer", {"question_id": qid, "wait": 20}))

        tg.start_soon(waiter)
        await anyio.sleep(0.5)
        got["action"] = await action()
    return got["wait"], got["action"]


async def suite(label, session, base, db, person):
    tag = f"[{label}] "
    await session.initialize()

    tools = (await session.list_tools()).tools
    names = {t.name for t in tools}
    check(tag + "lists the five tools", names == TOOLS, names)
    ask = next((t for t in tools if t.name == "ask_question"), None)
    props = (ask.input_schema or {}).get("properties", {}) if ask else {}
    check(tag + "ask_question has a schema with described fields",
          {"room", "prompt", "options", "text_input", "wait", "ttl"} <= set(props)
          and all(props[k].get("description") for k in ("room", "prompt", "wait")), props.keys())
    check(tag + "tools are described for a model", all(t.description and len(t.description) > 20 for t in tools))

    # Answered with an option, by a concurrent responder.
    prompt = f"{label}: deploy v2.4 to production?"
    person.answer_later(prompt, {"value": "approve"})
    err, r = result(await session.call_tool("ask_question", {"room": "OPS123", "prompt": prompt, "context": "build 1842", "wait": 20}))
    check(tag + "ask_question returns the tapped option", not err and r.get("state") == "answered"
          and r.get("value") == "approve" and r.get("label") == "Approve", r)
    check(tag + "… with who answered and when", (r.get("responder") or {}).get("display_name") == "Federica"
          and r.get("answered_at"), r)

    # Answered with typed text.
    prompt = f"{label}: why hold the release?"
    person.answer_later(prompt, {"text": "waiting for QA"})
    err, r = result(await session.call_tool("ask_question", {
        "room": "OPS123", "prompt": prompt, "text_input": {"placeholder": "A reason"}, "wait": 20}))
    check(tag + "ask_question returns typed text", not err and r.get("state") == "answered"
          and r.get("text") == "waiting for QA" and r.get("value") is None, r)

    # A validation error comes back as a tool error naming the field and the rule.
    err, r = result(await session.call_tool("ask_question", {
        "room": "OPS123", "prompt": "Deploy?", "context": "x" * 41, "wait": 0}))
    e = r.get("error", {})
    check(tag + "a protocol rule is a tool error with the field", err and e.get("field") == "context"
          and "40" in e.get("message", ""), r)
    err, r = result(await session.call_tool("ask_question", {"room": "OPS123", "prompt": 42, "wait": 0}))
    check(tag + "arguments of the wrong type are a tool error naming the argument", err
          and r.get("error", {}).get("field") == "prompt" and "string" in r.get("error", {}).get("message", ""), r)
    err, r = result(await session.call_tool("ask_question", {"room": "OPS123", "prompt": "Deploy?", "options": [{"label": "no value"}], "wait": 0}))
    check(tag + "… nested ones too", err and r.get("error", {}).get("field") == "options[0]", r)
    err, r = result(await session.call_tool("ask_question", {"room": "NOPE99", "prompt": "Deploy?", "wait": 0}))
    check(tag + "an unknown room is a tool error", err and r.get("error", {}).get("code") == "not_found", r)
    err, r = result(await session.call_tool("ask_question", {"room": "OPS123", "prompt": "Deploy?", "wait": 5000}))
    check(tag + "a wait beyond the bound is a tool error", err and r.get("error", {}).get("field") == "wait", r)

    # Still pending when the wait runs out; then expired while waiting.
    err, r = result(await session.call_tool("ask_question", {"room": "OPS123", "prompt": f"{label}: expire me", "wait": 1}))
    check(tag + "the wait running out says still pending", not err and r.get("still_pending") is True
          and r.get("state") == "pending" and r.get("question_id", "").startswith("q_"), r)
    qid = r.get("question_id", "")

    async def expire():
        expire_now(db, qid)

    (err, r), _ = await while_waiting(session, qid, expire)
    check(tag + "wait_for_answer reports expiry", not err and r.get("state") == "expired"
          and r.get("still_pending") is False, r)

    # Cancelled while waiting, by another call on the same session.
    err, r = result(await session.call_tool("ask_question", {"room": "OPS123", "prompt": f"{label}: cancel me", "wait": 0}))
    qid = r.get("question_id", "")

    async def cancel():
        return result(await session.call_tool("cancel_question", {"question_id": qid}))

    waited, cancelled = await while_waiting(session, qid, cancel)
    got = {"r": waited, "cancel": cancelled}
    check(tag + "cancel_question cancels", got["cancel"][1].get("state") == "cancelled", got["cancel"])
    check(tag + "the concurrent wait reports cancelled", got["r"][1].get("state") == "cancelled", got["r"])
    err, r = result(await session.call_tool("cancel_question", {"question_id": qid}))
    check(tag + "cancelling again is a tool error with the question's state", err
          and r.get("error", {}).get("code") == "already_resolved" and r.get("question", {}).get("state") == "cancelled", r)

    # Two long waits on one session, answered in the opposite order.
    first, second = f"{label}: first of two?", f"{label}: second of two?"
    async with anyio.create_task_group() as tg:
        got = {}

        async def asker(key, prompt):
            got[key] = result(await session.call_tool("ask_question", {
                "room": "OPS123", "prompt": prompt, "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B", "style": "primary"}], "wait": 30}))
            got[key + "_at"] = time.time()

        tg.start_soon(asker, "one", first)
        tg.start_soon(asker, "two", second)
        await anyio.to_thread.run_sync(person.answer, second, {"value": "b"})
        await anyio.sleep(0.3)
        await anyio.to_thread.run_sync(person.answer, first, {"value": "a"})
    check(tag + "two concurrent waits on one session each get their answer",
          got["one"][1].get("value") == "a" and got["two"][1].get("value") == "b", got)
    check(tag + "… the one answered first returns first", got["two_at"] < got["one_at"], got)

    # A cancelled MCP request stops waiting and leaves the question pending.
    prompt = f"{label}: abandoned wait"
    before = parked(base) if base else None
    with anyio.move_on_after(1.5):
        await session.call_tool("ask_question", {"room": "OPS123", "prompt": prompt, "wait": 60})
    await anyio.sleep(0.5)
    err, r = result(await session.call_tool("list_questions", {"state": "pending"}))
    mine = [q for q in r.get("questions", []) if q.get("prompt") == prompt]
    check(tag + "a cancelled request leaves its question pending", not err and len(mine) == 1, r)
    if base:
        deadline = time.time() + 5
        while time.time() < deadline and parked(base) != before:
            await anyio.sleep(0.1)
        check(tag + "… and the server stops waiting for it", parked(base) == before, (before, parked(base)))
    if mine:
        err, r = result(await session.call_tool("get_question", {"question_id": mine[0]["question_id"]}))
        check(tag + "get_question reads it", not err and r.get("state") == "pending", r)

    err, r = result(await session.call_tool("list_questions", {"state": "answered", "limit": 500}))
    check(tag + "list_questions filters by state", not err and len(r.get("questions", [])) >= 4
          and all(q["state"] == "answered" for q in r["questions"]), r)
    err, r = result(await session.call_tool("list_questions", {"limit": 0}))
    check(tag + "a bad limit is a tool error", err and r.get("error", {}).get("field") == "limit", r)


async def over_http(base, agent, db, person):
    headers = {"Authorization": f"Bearer {agent}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as client:
        async with streamable_http_client(f"{base}/mcp", http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await suite("http", session, base, db, person)


async def over_stdio(base, agent, db, person):
    params = StdioServerParameters(command=QP, args=["mcp"],
                                   env={"QP_URL": base, "QP_TOKEN": agent, "PATH": os.environ.get("PATH", "")})
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await suite("stdio", session, None, db, person)


def main():
    # The server's database and files live in a directory removed at the end, pass or fail.
    with tempfile.TemporaryDirectory(prefix="qp-mcp-") as work:
        return run_in(work)


def run_in(work):
    db = os.path.join(work, "qp.sqlite")
    user = admin(db, "user", "add", "Federica")
    admin(db, "room", "add", "Ops", "--code", "OPS123")
    admin(db, "room", "add-member", "OPS123", user["id"])
    agent = admin(db, "agent", "add", "Release Bot", "--owner", user["id"], "--room", "OPS123")["token"]
    user_token = admin(db, "token", "add", user["id"], "--label", "phone")["token"]

    with serve(db, "--sweep-interval-ms", "100", "--ask-burst", "100", "--ask-rate-per-minute", "600") as base:
        person = Person(base, user_token)

        # The endpoint's gate, as a plain HTTP client sees it.
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}
        s, body = http("POST", f"{base}/mcp", None, init)
        check("/mcp without a token is 401 in the API's error shape", s == 401
              and isinstance(body, dict) and body.get("code") == "unauthorized", f"{s} {body}")
        s, body = http("POST", f"{base}/mcp", user_token, init)
        check("/mcp with a user's token is 403", s == 403, f"{s} {body}")

        anyio.run(over_http, base, agent, db, person)
        anyio.run(over_stdio, base, agent, db, person)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
