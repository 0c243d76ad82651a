"""The language-neutral ask vectors of core/tests/vectors, replayed through
the SDK against the server: every accepted vector is accepted (its expected
fields as the server normalized them), every refused one raises
ValidationError with the vector's code and field. The rule is written once,
in Rust (qp_core::protocol); this checks it from a fourth language.

Against a live server three things differ from the pure replay, each mapped
rather than skipped: a vector's target users are real members of the room
(the 64-character id gets the `u_` prefix a user id has, still 64 long); the
context's default target is the agent's owner, `u_owner`; and times are
compared relative to the question's `created_at` (the vector's `now`). The
two vectors whose context has no bound user cannot happen on a server (every
agent has an owner) and are checked as such.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from conftest import ROOT, Server

import questionprotocol as qp

VECTORS = ROOT / "core" / "tests" / "vectors" / "protocol"
LONG_TARGET = "u" * 64
LONG_USER = "u_" + "u" * 62


def load() -> list[dict[str, Any]]:
    out = []
    for f in sorted(VECTORS.glob("*.json")):
        for v in json.loads(f.read_text())["vectors"]:
            if v["kind"] == "ask":
                v["_file"] = f.name
                out.append(v)
    return out


ASK_VECTORS = load()


def mapped(v: Any) -> Any:
    if isinstance(v, dict):
        return {
            k: (LONG_USER if k == "target_user_id" and x == LONG_TARGET else mapped(x)) for k, x in v.items()
        }
    if isinstance(v, list):
        return [mapped(x) for x in v]
    return v


def when(s: str) -> dt.datetime:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def vclient(server: Server) -> Any:
    c = qp.Client(server.url, server.agent_token)
    yield c
    c.close()


def test_there_are_vectors_of_both_kinds() -> None:
    assert len(ASK_VECTORS) > 100
    assert any("error" in v["expect"] for v in ASK_VECTORS)
    assert any("ask" in v["expect"] for v in ASK_VECTORS)


@pytest.mark.parametrize("v", ASK_VECTORS, ids=[f"{v['_file']}::{v['name']}" for v in ASK_VECTORS])
def test_ask_vector(v: dict[str, Any], vclient: qp.Client) -> None:
    ctx = v.get("context") or {}
    body = mapped(v["input"])
    no_bound_user = "default_target_user_id" in ctx and ctx["default_target_user_id"] is None
    expect = mapped(v["expect"])
    if no_bound_user and "error" in expect:
        # On a server every agent has an owner, so the default target exists.
        h = vclient.ask_body("OPS123", body)
        assert h.question.target_user_id == "u_owner"
        return
    if "error" in expect:
        with pytest.raises(qp.ValidationError) as e:
            vclient.ask_body("OPS123", body)
        assert (e.value.field, e.value.code) == (
            expect["error"]["field"],
            expect["error"]["code"],
        ), e.value.message
        return
    h = vclient.ask_body("OPS123", body)
    got = dict(h.question.raw)
    created = when(got["created_at"])
    now = when(ctx.get("now", "2026-06-27T10:30:00Z"))
    for key, want in expect["ask"].items():
        if key == "ttl":
            assert (when(got["expires_at"]) - created).total_seconds() == want
        elif key == "expires_at":
            assert when(got["expires_at"]) - created == when(want) - now
        elif key == "target_user_id" and want == "u_owner":
            assert got[key] == "u_owner"
        else:
            assert got.get(key) == want, key
    # The typed reading agrees with the wire.
    q = h.question
    assert [o.value for o in q.options] == [o["value"] for o in got["options"]]
