#!/usr/bin/env python3
"""A client and a webhook receiver written for the reference implementation
(PingRoom), pointed at `qp serve`, with nothing changed but the host and the
tokens. Python's standard library only, and written from the reference's
published contract, not from qp's code:

- error bodies are read the flat way: a top-level string `code` (or `error`)
  and a top-level string `message`;
- webhook deliveries are verified with the reference's two schemes:
  `X-PingRoom-Signature-V2` = hex HMAC-SHA256(secret, "v2\\n{ts}\\n{delivery}\\n"
  + body), and when V2 is absent `X-PingRoom-Signature` = hex
  HMAC-SHA256(secret, "{ts}." + body), optionally prefixed "sha256=";
  timestamps older than 5 minutes are rejected.

Usage: QP=/path/to/qp python3 reference_client.py
Prints one line per check and "N passed, M failed"; exits 1 on any failure.
"""

import hashlib
import hmac
import http.client
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

QP = os.environ.get("QP", "qp")
SECRET = "reference-receiver-secret"
TOLERANCE = 300

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"), flush=True)


# ---- the reference receiver ------------------------------------------------


def verify_reference(headers, body, secret, now=None):
    """True when a delivery verifies under the reference's rules."""
    now = time.time() if now is None else now
    ts = headers.get("x-pingroom-timestamp", "")
    if not ts.isdigit() or now - int(ts) > TOLERANCE:
        return False
    v2 = headers.get("x-pingroom-signature-v2")
    if v2 is not None:
        delivery = headers.get("x-pingroom-delivery", "")
        msg = f"v2\n{ts}\n{delivery}\n".encode() + body
        want = hmac.new(secret.encode(), msg, hashlib.sha256).hexdigest()
        return hmac.compare_digest(v2, want)
    v1 = headers.get("x-pingroom-signature", "")
    if v1.startswith("sha256="):
        v1 = v1[len("sha256="):]
    want = hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(v1, want)


class Receiver(http.server.BaseHTTPRequestHandler):
    deliveries = []  # (headers, body, verified, attempt number)
    attempts = {}
    lock = threading.Lock()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        ok = verify_reference(headers, body, SECRET)
        delivery = headers.get("x-pingroom-delivery", "")
        with Receiver.lock:
            n = Receiver.attempts.get(delivery, 0) + 1
            Receiver.attempts[delivery] = n
            Receiver.deliveries.append((headers, body, ok, n))
        # The first attempt of every delivery fails, so each one is also
        # delivered as a retry, which must verify as well.
        self.send_response(500 if n == 1 else (200 if ok else 401))
        self.end_headers()

    def log_message(self, *args):
        pass


# ---- a client of the reference API ----------------------------------------


class Api:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port

    def call(self, method, path, token=None, body=None, headers=None, raw=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        h = dict(headers or {})
        if token:
            h["Authorization"] = f"Bearer {token}"
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if data is not None:
            h.setdefault("Content-Type", "application/json")
        conn.putrequest(method, path, skip_accept_encoding=True)
        for k, v in h.items():
            conn.putheader(k, v)
        if data is not None:
            conn.putheader("Content-Length", str(len(data)))
        conn.endheaders()
        if data is not None:
            conn.send(data)
        resp = conn.getresponse()
        text = resp.read()
        conn.close()
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = None
        return resp.status, parsed, text


def flat_error(status, body, want_status, want_code=None):
    """How a reference client reads an error: top-level strings only."""
    if status != want_status:
        return f"status {status}, wanted {want_status}"
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    code = body.get("code", body.get("error"))
    if not isinstance(code, str) or not code:
        return f"no top-level string code: {body}"
    if not isinstance(body.get("message"), str) or not body["message"]:
        return f"no top-level string message: {body}"
    if want_code and code != want_code:
        return f"code {code!r}, wanted {want_code!r}"
    return None


def admin(db, *args):
    out = subprocess.run([QP, "admin", "--db", db, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout) if out.stdout.strip().startswith(("{", "[")) else out.stdout


def main():
    # The server's database and files live in a directory removed at the end, pass or fail.
    with tempfile.TemporaryDirectory(prefix="qp-compat-") as work:
        return run_in(work)


def run_in(work):
    db = os.path.join(work, "qp.sqlite")
    user = admin(db, "user", "add", "Federica")
    admin(db, "room", "add", "Ops", "--code", "OPS123")
    admin(db, "room", "add-member", "OPS123", user["id"])
    agent = admin(db, "agent", "add", "Release Bot", "--owner", user["id"], "--room", "OPS123")
    user_token = admin(db, "token", "add", user["id"], "--label", "phone")["token"]
    reader = admin(db, "agent", "add", "Reader", "--owner", user["id"], "--room", "OPS123", "--scopes", "read")

    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    admin(db, "room", "webhook", "OPS123", "--url", f"http://127.0.0.1:{receiver.server_port}/hook",
          "--secret", SECRET)

    serve = subprocess.Popen(
        [QP, "serve", "--listen", "127.0.0.1:0", "--db", db, "--sweep-interval-ms", "100",
         "--webhook-retry-base-ms", "50", "--ask-burst", "8", "--ask-rate-per-minute", "8"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for line in serve.stderr:
            if "listening on " in line:
                url = line.split("listening on ")[1].strip()
                break
        threading.Thread(target=lambda: [None for _ in serve.stderr], daemon=True).start()
        run(Api(url), agent["token"], reader["token"], user_token)
    finally:
        serve.kill()
        serve.wait()
        receiver.shutdown()
    passed = sum(results)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def run(api, agent, reader, user):
    ask = lambda body: api.call("POST", "/api/agent/rooms/OPS123/questions", agent, body)

    # ---- the data model's own example, and the ttl range ----
    s, q, _ = ask({"prompt": "Which environment should I deploy to?", "context": "Commit abc123 passed CI",
                   "options": [{"value": "prod", "label": "Production", "style": "primary"},
                               {"value": "staging", "label": "Staging"},
                               {"value": "cancel", "label": "Cancel", "style": "cancel"}],
                   "correlation_id": "deploy-abc123", "ttl": 30})
    check("the data model's example (style cancel) is accepted", s == 201, f"{s} {q}")
    if s == 201:
        check("style cancel is the quiet role", q["options"][2]["style"] == "default", q["options"][2])
        ttl = (time.mktime(time.strptime(q["expires_at"], "%Y-%m-%dT%H:%M:%SZ"))
               - time.mktime(time.strptime(q["created_at"], "%Y-%m-%dT%H:%M:%SZ")))
        check("ttl 30 is kept (the documented minimum)", ttl == 30, ttl)
        check("the asker has a handle", (q.get("asker") or {}).get("handle") == "release-bot", q.get("asker"))
        s, a, _ = api.call("POST", f"/api/questions/{q['id']}/answer", user, {"value": "prod"})
        check("answered", s == 200 and a["state"] == "answered", f"{s} {a}")
        answered = q["id"]

    # ---- every error status, read the flat way ----
    walk = [
        ("400 malformed JSON", lambda: api.call("POST", "/api/agent/rooms/OPS123/questions", agent, raw=b"{"), 400, "malformed_json"),
        ("400 a path that is not UTF-8", lambda: api.call("GET", "/api/agent/questions/%FF%FE", agent), 400, None),
        ("401 no token", lambda: api.call("GET", "/api/agent/questions"), 401, "unauthorized"),
        ("403 a read-only agent asks", lambda: api.call("POST", "/api/agent/rooms/OPS123/questions", reader, {"prompt": "x"}), 403, None),
        ("404 unknown question", lambda: api.call("GET", "/api/agent/questions/q_nope", agent), 404, "not_found"),
        ("404 unknown endpoint", lambda: api.call("GET", "/api/nothing-here", agent), 404, "not_found"),
        ("405 wrong method", lambda: api.call("DELETE", "/api/agent/questions", agent), 405, "method_not_allowed"),
        ("409 cancel an answered question", lambda: api.call("POST", f"/api/agent/questions/{answered}/cancel", agent), 409, "already_resolved"),
        ("413 a body over the limit", lambda: api.call("POST", "/api/agent/rooms/OPS123/questions", agent, raw=b'{"prompt":"' + b"x" * (3 << 20) + b'"}'), 413, "payload_too_large"),
        ("414 a request target over 8 KiB", lambda: api.call("GET", "/api/agent/questions/" + "q" * 9000, agent), 414, "uri_too_long"),
        ("422 an empty prompt", lambda: ask({"prompt": ""}), 422, "empty"),
        ("431 a header over 16 KiB", lambda: api.call("GET", "/api/agent/questions", agent, headers={"X-Big": "b" * 20000}), 431, "headers_too_large"),
    ]
    for name, do, status, code in walk:
        s, body, raw = do()
        problem = flat_error(s, body, status, code)
        check(name, problem is None, f"{problem}; body {raw[:200]!r}")
    s, body, _ = api.call("POST", f"/api/agent/questions/{answered}/cancel", agent)
    check("409 still carries the question", isinstance(body, dict) and body.get("question", {}).get("id") == answered, body)
    check("the nested error object is still there", isinstance(body, dict) and body.get("error", {}).get("code") == "already_resolved", body)
    # A question to cancel (for the webhook), before the rate limit is spent.
    s, c, _ = ask({"prompt": "Cancel me", "ttl": 600})
    check("asked a question to cancel", s == 201, f"{s} {c}")
    if s == 201:
        s, body, _ = api.call("POST", f"/api/agent/questions/{c['id']}/cancel", agent)
        check("cancelled", s == 200 and body["state"] == "cancelled", f"{s} {body}")
    limited = None
    for _ in range(30):
        s, body, raw = ask({"prompt": "Again?", "ttl": 30})
        if s == 429:
            limited = (s, body, raw)
            break
    check("429 past the rate limit", limited is not None and flat_error(limited[0], limited[1], 429) is None,
          limited and limited[2][:200])

    # ---- webhooks: answered, cancelled, expired; every delivery verified ----
    # The ttl-30 questions asked above expire on their own (sweep every 100 ms).
    deadline = time.time() + 90
    events = set()
    while time.time() < deadline:
        with Receiver.lock:
            retried = {d for d, n in Receiver.attempts.items() if n >= 2}
            events = {h["x-pingroom-event"] for h, _, _, _ in Receiver.deliveries}
        if {"question.answered", "question.cancelled", "question.expired"} <= events and len(retried) >= 3:
            break
        time.sleep(0.2)
    with Receiver.lock:
        deliveries = list(Receiver.deliveries)
    check("answered, cancelled and expired were delivered",
          {"question.answered", "question.cancelled", "question.expired"} <= events, events)
    check("every attempt (first tries and retries) verifies with the reference schemes",
          deliveries and all(ok for _, _, ok, _ in deliveries),
          [h.get("x-pingroom-delivery") for h, _, ok, _ in deliveries if not ok])
    retries = [d for d in deliveries if d[3] >= 2]
    check("retried deliveries keep their delivery id and verify",
          retries and all(ok for _, _, ok, _ in retries), len(retries))

    # ---- what the receiver must reject ----
    headers, body, _, _ = deliveries[0]
    check("a real delivery verifies", verify_reference(headers, body, SECRET))
    check("a tampered body is rejected", not verify_reference(headers, body.replace(b"question", b"qvestion", 1), SECRET))
    check("a wrong secret is rejected", not verify_reference(headers, body, "not-the-secret-at-all"))
    check("a stale timestamp is rejected",
          not verify_reference(headers, body, SECRET, now=int(headers["x-pingroom-timestamp"]) + TOLERANCE + 1))
    legacy = {k: v for k, v in headers.items() if k != "x-pingroom-signature-v2"}
    check("the first scheme alone verifies (receivers without V2)", verify_reference(legacy, body, SECRET))
    legacy["x-pingroom-signature"] = "sha256=" + legacy["x-pingroom-signature"]
    check("the first scheme with a sha256= prefix verifies", verify_reference(legacy, body, SECRET))
    forged = dict(headers)
    forged["x-pingroom-delivery"] = "d_someone_else"
    check("V2 binds the delivery id", not verify_reference(forged, body, SECRET))


if __name__ == "__main__":
    sys.exit(main())
