#!/usr/bin/env python3
"""The OpenAPI document against a validator nobody on this project wrote
(`openapi-spec-validator`), and against the server's real behaviour: every
request below is sent to a real `qp serve`, and each response's status must
be documented for its operation and its body must validate (JSON Schema
2020-12, `jsonschema`) against the documented schema; each JSON request body
must validate against the documented request schema too. A document that
drifts from the code fails here even when the drift test passes.

Usage: QP=/path/to/qp python openapi_check.py
Prints one line per check and "N passed, M failed"; exits 1 on any failure.
"""

import json
import os
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_spec
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from qp_harness import admin, check, serve, summary


class Checker:
    def __init__(self, base, doc):
        self.base, self.doc = base, doc
        self.registry = Registry().with_resource("urn:qp", Resource.from_contents(doc, default_specification=DRAFT202012))
        self.seen = set()

    def validate(self, pointer, instance):
        """Errors of `instance` against the schema at `pointer` in the document."""
        ref = "urn:qp#" + urllib.parse.quote(pointer, safe="/~")
        v = Draft202012Validator({"$ref": ref}, registry=self.registry)
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(instance)]

    def call(self, method, template, params=None, token=None, body=None, query="", headers=None, raw=None,
             breaks_schema=False, expect=None):
        """Sends a request and checks the response against the document.
        `expect`: the status it must get (default: any 2xx); `breaks_schema`:
        the body is meant not to fit the documented request schema."""
        path = template
        for k, v in (params or {}).items():
            path = path.replace("{" + k + "}", urllib.parse.quote(v, safe=""))
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.base + path + query, data=data, method=method.upper())
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status, text, ctype = r.status, r.read(), r.headers.get("content-type", "")
        except urllib.error.HTTPError as e:
            status, text, ctype = e.code, e.read(), e.headers.get("content-type", "")
        op_pointer = f"/paths/{template.replace('~', '~0').replace('/', '~1')}/{method.lower()}"
        op = self.doc["paths"].get(template, {}).get(method.lower())
        name = f"{method.upper()} {template} -> {status}"
        self.seen.add((template, method.lower()))
        want = f"{expect}" if expect else "2xx"
        check(name + f" (wanted {want})", status == expect if expect else 200 <= status < 300, text[:300])
        if op is None:
            check(name + " is documented", False, "no such operation in the document")
            return status, None
        if body is not None and raw is None and not breaks_schema:
            rb = op.get("requestBody", {}).get("content", {}).get("application/json")
            errs = ["no JSON request body documented"] if rb is None else self.validate(
                op_pointer + "/requestBody/content/application~1json/schema", body)
            check(name + ": the request body fits the documented schema", not errs, errs)
        resp = op.get("responses", {}).get(str(status))
        if resp is None:
            check(name + ": the status is documented", False, f"documented: {list(op.get('responses', {}))}")
            return status, None
        parsed = json.loads(text) if "json" in ctype and text else None
        schema = resp.get("content", {}).get("application/json", {}).get("schema")
        if schema is not None:
            errs = ["the body is not JSON"] if parsed is None else self.validate(
                op_pointer + f"/responses/{status}/content/application~1json/schema", parsed)
            check(name + ": the body fits the documented schema", not errs, errs)
        else:
            check(name + ": documented without a JSON body", parsed is None or "content" in resp, text[:200])
        return status, parsed


def main():
    # The server's database and files live in a directory removed at the end, pass or fail.
    with tempfile.TemporaryDirectory(prefix="qp-openapi-") as work:
        return run_in(work)


def run_in(work):
    db = os.path.join(work, "qp.sqlite")
    user = admin(db, "user", "add", "Federica")
    other = admin(db, "user", "add", "Ben")
    admin(db, "room", "add", "Ops", "--code", "OPS123")
    admin(db, "room", "add-member", "OPS123", user["id"])
    agent = admin(db, "agent", "add", "Release Bot", "--owner", user["id"], "--room", "OPS123")
    user_token = admin(db, "token", "add", user["id"], "--label", "phone")["token"]
    admin_token = admin(db, "token", "add-admin", "--label", "ops")["token"]
    browser_token = admin(db, "token", "add", user["id"], "--label", "browser")["token"]

    with serve(db) as base:
        with urllib.request.urlopen(base + "/openapi.json", timeout=10) as r:
            doc = json.load(r)
        try:
            validate_spec(doc)
            check("openapi-spec-validator accepts the document (OpenAPI 3.1)", doc["openapi"].startswith("3.1"), doc["openapi"])
        except Exception as e:  # noqa: BLE001 - the validator's own error types
            check("openapi-spec-validator accepts the document", False, e)
        checker = Checker(base, doc)
        bad = checker.validate("/components/schemas/Question", {"id": "q_1", "prompt": "Deploy?", "state": "maybe"})
        check("the checker itself rejects a question that breaks the schema", len(bad) >= 3, bad)
        exercise(checker, agent["token"], agent["id"], user_token, admin_token, other["id"])
        exercise_web(checker, browser_token)
    return summary()


FORM = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}


def form(pairs):
    return urllib.parse.urlencode(pairs).encode()


def exercise_oauth(c, user):
    """An MCP client's sign-in, the person's side of it, and `qp login
    --url`'s device grant: each OAuth endpoint, answers and refusals."""
    import base64
    import hashlib
    import time
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
                 "/.well-known/oauth-authorization-server"):
        c.call("get", path)
    redirect = "http://127.0.0.1:33418/callback"
    s, reg = c.call("post", "/oauth/register", None, None, {"client_name": "Checker", "redirect_uris": [redirect]}, expect=201)
    c.call("post", "/oauth/register", None, None, {"client_name": "Checker", "redirect_uris": ["ftp://x"]}, expect=400)
    verifier = "v" * 50
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    request = {"response_type": "code", "client_id": reg["client_id"], "redirect_uri": redirect,
               "code_challenge": challenge, "code_challenge_method": "S256", "state": "s"}
    c.call("get", "/oauth/authorize", query="?" + urllib.parse.urlencode(request))
    c.call("get", "/oauth/authorize", query="?client_id=nobody", expect=400)
    s, started = c.call("post", "/oauth/authorize", raw=form({**request, "user": "Federica", "room": "OPS123"}),
                        headers=FORM)
    c.call("post", "/oauth/authorize", raw=form({**request, "user": "nobody"}), headers=FORM, expect=400)
    c.call("post", "/oauth/authorize/status", None, None, {"request": started["request"], "wait": 0})
    c.call("post", "/oauth/authorize/status", None, None, {"request": "qph_nope"}, expect=400)
    c.call("post", "/api/questions/{id}/answer", {"id": started["question"]}, user, {"value": "allow"})
    s, status = c.call("post", "/oauth/authorize/status", None, None, {"request": started["request"], "wait": 5})
    code = urllib.parse.parse_qs(urllib.parse.urlparse(status["redirect"]).query)["code"][0]
    s, tokens = c.call("post", "/oauth/token", raw=form({"grant_type": "authorization_code", "code": code,
                                                          "client_id": reg["client_id"], "code_verifier": verifier}),
                       headers=FORM)
    c.call("post", "/oauth/token", raw=form({"grant_type": "authorization_code", "code": code,
                                            "client_id": reg["client_id"], "code_verifier": verifier}),
           headers=FORM, expect=400)  # replayed
    s, mine = c.call("get", "/api/me/agents", None, user)
    c.call("post", "/oauth/revoke", raw=form({"token": tokens["refresh_token"]}), headers=FORM)
    # `qp login --url`: the device grant, pending, then allowed.
    s, dev = c.call("post", "/oauth/device_authorization", raw=form({"client_id": "qp-cli", "user": "Federica",
                                                                     "room": "OPS123"}), headers=FORM)
    c.call("post", "/oauth/device_authorization", raw=form({"client_id": "other"}), headers=FORM, expect=400)
    grant = {"grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": dev["device_code"],
             "client_id": "qp-cli"}
    c.call("post", "/oauth/token", raw=form(grant), headers=FORM, expect=400)  # authorization_pending
    c.call("get", "/oauth/device")
    pending = c.call("get", "/api/questions/pending", None, user)[1]["questions"]
    consent = next(q for q in pending if dev["user_code"] in (q.get("context") or ""))
    c.call("post", "/api/questions/{id}/answer", {"id": consent["id"]}, user, {"value": "allow"})
    time.sleep(dev["interval"] + 0.5)
    c.call("post", "/oauth/token", raw=form(grant), headers=FORM)
    s, mine = c.call("get", "/api/me/agents", None, user)
    for a in mine["agents"]:
        c.call("delete", "/api/me/agents/{id}", {"id": a["id"]}, user, expect=204)
    c.call("delete", "/api/me/agents/{id}", {"id": "a_nope"}, user, expect=404)


def exercise(c, agent, agent_id, user, admin_token, other_user):
    ask_path = "/api/agent/rooms/{room}/questions"
    room = {"room": "OPS123"}
    full = {"prompt": "Which environment?", "context": "build 1842",
            "options": ["staging", {"value": "prod", "label": "Production", "style": "primary"}],
            "text_input": {"placeholder": "Or type one", "max_length": 40},
            "responder_scope": "room", "ttl": 600, "correlation_id": "rel-1", "reply_to": "chan-7",
            "data": {"pipeline": "deploy", "n": 3}}
    s, q = c.call("post", ask_path, room, agent, full)
    qid = q["id"]
    c.call("post", ask_path, room, agent, {"prompt": "Deploy?"})
    c.call("post", ask_path, room, agent, {"prompt": ""}, expect=422)
    c.call("post", ask_path, room, agent, raw=b"{not json", expect=400)
    c.call("post", ask_path, room, None, {"prompt": "Deploy?"}, expect=401)
    c.call("post", ask_path, room, user, {"prompt": "Deploy?"}, expect=403)
    c.call("post", ask_path, {"room": "NOPE99"}, agent, {"prompt": "Deploy?"}, expect=404)

    q_path = {"id": qid}
    c.call("get", "/api/agent/questions/{id}", q_path, agent)
    c.call("get", "/api/agent/questions/{id}", {"id": "q_missing"}, agent, expect=404)
    c.call("get", "/api/agent/questions/{id}/wait", q_path, agent, query="?timeout=0")
    c.call("get", "/api/agent/questions/{id}/wait", q_path, agent, query="?timeout=soon", expect=422)
    c.call("get", "/api/agent/questions", None, agent)
    c.call("get", "/api/agent/questions", None, agent, query="?state=all&limit=5")
    c.call("get", "/api/agent/questions", None, agent, query="?state=maybe", expect=422)

    c.call("get", "/api/questions/pending", None, user)
    feed = c.call("get", "/api/questions/pending/wait", None, user)[1]
    c.call("get", "/api/questions/pending/wait", None, user,
           query=f"?since={feed['version']}&timeout=0")
    c.call("get", "/api/questions/pending/wait", None, user, query="?timeout=31", expect=422)
    c.call("get", "/api/questions/history", None, user, query="?limit=1")
    c.call("get", "/api/questions/history", None, user, query="?limit=0", expect=422)
    c.call("get", "/api/questions/{id}", q_path, user)
    c.call("post", "/api/questions/{id}/answer", q_path, user, {"value": "nope"}, expect=422)
    c.call("post", "/api/questions/{id}/answer", q_path, user, {"value": "prod"},
           headers={"Idempotency-Key": "k-1"})
    c.call("post", "/api/questions/{id}/answer", q_path, user, {"text": "later"}, expect=200)          # already answered
    c.call("post", "/api/agent/questions/{id}/cancel", q_path, agent, expect=409)
    s, typed = c.call("post", ask_path, room, agent, {"prompt": "Why?", "text_input": {}})
    c.call("post", "/api/questions/{id}/answer", {"id": typed["id"]}, user, {"text": "QA is out"})
    s, pending = c.call("post", ask_path, room, agent, {"prompt": "Cancel me?"})
    c.call("post", "/api/agent/questions/{id}/cancel", {"id": pending["id"]}, agent)

    s, dev = c.call("post", "/api/devices", None, user,
                    {"platform": "dev", "push_token": "terminal-1", "app_id": "qp.device", "locale": "de"})
    c.call("post", "/api/devices", None, user, {"platform": "pager", "push_token": "x", "app_id": "y"}, expect=422)
    c.call("post", ask_path, room, agent, {"prompt": "Reaches the dev device?"})
    c.call("get", "/api/dev/inbox", None, user, query=f"?device={dev['id']}&timeout=2")
    c.call("get", "/api/dev/inbox", None, user, query="?device=d_nope&timeout=0", expect=404)
    c.call("get", "/api/me", None, user)
    c.call("delete", "/api/devices/{id}", {"id": dev["id"]}, user)
    c.call("delete", "/api/devices/{id}", {"id": dev["id"]}, user, expect=404)

    s, inv = c.call("post", "/api/admin/users/{id}/invites", {"id": other_user}, admin_token, {"ttl_secs": 600})
    c.call("post", "/api/admin/users/{id}/invites", {"id": other_user}, agent, {}, expect=403)
    c.call("post", "/api/pair/preview", None, None, {"code": inv["code"]})
    c.call("post", "/api/pair", None, None, {"code": inv["code"], "label": "Ben's phone",
                                             "device": {"platform": "android", "push_token": "fcm-1", "app_id": "org.qp"}})
    c.call("post", "/api/pair", None, None, {"code": inv["code"]}, expect=400)  # used
    c.call("post", "/api/pair/preview", None, None, {"code": inv["code"]}, expect=400)  # used
    s, inv = c.call("post", "/api/admin/agents/{id}/invites", {"id": agent_id}, admin_token)
    c.call("post", "/api/agent/login", None, None, {"code": inv["code"], "label": "laptop"})
    c.call("post", "/api/agent/login", None, None, {"code": 42}, breaks_schema=True, expect=422)
    c.call("get", "/healthz")
    c.call("get", "/readyz")
    c.call("get", "/metrics")
    c.call("get", "/openapi.json")
    exercise_oauth(c, user)


def exercise_web(c, browser):
    """What only the web responder uses: the VAPID key, a `web` device, a
    kept history page revalidated, signing out."""
    c.call("get", "/api/webpush/key")
    sub = json.dumps({"endpoint": "http://127.0.0.1:9/push/1",
                      "keys": {"p256dh": "BAAA", "auth": "AAAA"}})
    c.call("post", "/api/devices", None, browser, {"platform": "web", "push_token": sub, "app_id": "qp.web"},
           expect=422)  # plain http, no allow-list entry: refused, naming push_token
    h = urllib.request.Request(c.base + "/api/questions/history", headers={"Authorization": "Bearer " + browser})
    with urllib.request.urlopen(h, timeout=10) as r:
        etag = r.headers["ETag"]
    c.call("get", "/api/questions/history", None, browser, headers={"If-None-Match": etag}, expect=304)
    c.call("delete", "/api/me/token", None, browser, expect=204)
    c.call("delete", "/api/me/token", None, browser, expect=401)  # revoked

    undocumented_calls = {(p, m) for p, ops in c.doc["paths"].items() for m in ops} - c.seen
    check("every documented operation was exercised against the server",
          not undocumented_calls,
          sorted(undocumented_calls))


if __name__ == "__main__":
    sys.exit(main())
