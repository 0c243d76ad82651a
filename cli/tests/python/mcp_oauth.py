#!/usr/bin/env python3
"""qp's OAuth for remote MCP clients, driven by a client nobody here wrote:
the official MCP Python SDK's `OAuthClientProvider` (`mcp` from PyPI)
against a real `qp serve`. The browser is played by urllib (the
authorization page, its form, the wait for the answer); the person's phone
by a user token answering the consent question through the HTTP API, as
the app does.

Covered: discovery from /mcp's 401, Dynamic Client Registration and a
Client ID Metadata Document served over https on loopback (allow-listed for
this test, its CA trusted), PKCE, the consent question answered Allow and
Deny, the token exchange, tools/call ask_question with the access token,
refresh (rotation; a reused refresh token ends the grant), revocation
(RFC 7009), a token minted for another resource refused, and the metadata
document guard (loopback not allow-listed refused before any connection; a
document over the size limit).

Usage: QP=/path/to/qp python mcp_oauth.py
Prints one line per check and "N passed, M failed"; exits 1 on any failure.
"""

from http import server as httpserver
import json
import logging
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from qp_harness import QP, admin, check, serve, summary

REDIRECT = "http://127.0.0.1:33418/callback"


def http(method, url, token=None, body=None, form=None, headers=None):
    data = None
    req_headers = dict(headers or {})
    if body is not None:
        data = json.dumps(body).encode()
        req_headers["Content-Type"] = "application/json"
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        req_headers["Content-Type"] = "application/x-www-form-urlencoded"
    req = urllib.request.Request(url, data=data, method=method, headers=req_headers)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read()
            return r.status, parse(text), r.headers
    except urllib.error.HTTPError as e:
        return e.code, parse(e.read()), e.headers


def parse(text):
    try:
        return json.loads(text)
    except ValueError:
        return text.decode(errors="replace")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def get_no_redirect(url):
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=30) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace"), dict(e.headers)


class Memory:
    """The SDK's TokenStorage, in memory."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info):
        self.client = info


class Browser:
    """What a person's browser does with the authorization URL: opens the
    page, fills in who and which room, then waits for the phone's answer,
    which `phone` gives (Allow or Deny) through the HTTP API."""

    def __init__(self, base, user_id, room, phone_token, answer):
        self.base, self.user_id, self.room = base, user_id, room
        self.phone_token, self.answer = phone_token, answer
        self.page = None
        self.question = None
        self.redirect = None
        self.code = None

    def run(self, url):
        status, page, _ = http("GET", url)
        self.page = page if status == 200 else f"{status} {page}"
        params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        form = dict(params, user=self.user_id, room=self.room)
        s, started, _ = http("POST", f"{self.base}/oauth/authorize", form=form,
                             headers={"Accept": "application/json"})
        if s != 200:
            raise RuntimeError(f"the authorization page refused: {s} {started}")
        self.code = started.get("code")
        self.question = answer_consent(self.base, self.phone_token, self.answer)
        deadline = time.time() + 20
        while time.time() < deadline:
            s, st, _ = http("POST", f"{self.base}/oauth/authorize/status",
                            body={"request": started["request"], "wait": 5})
            if s == 200 and st.get("state") != "pending":
                self.redirect = st.get("redirect")
                return st
        raise RuntimeError("the consent never settled")


def answer_consent(base, token, value, timeout=20):
    """The phone: waits for the consent question, answers it, returns it."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        _, listed, _ = http("GET", f"{base}/api/questions/pending", token)
        for q in listed.get("questions", []):
            if "wants to ask you questions in" in q["prompt"]:
                s, a, _ = http("POST", f"{base}/api/questions/{q['id']}/answer", token, body={"value": value})
                if s != 200:
                    raise RuntimeError(f"answer failed: {s} {a}")
                return q
        time.sleep(0.05)
    raise RuntimeError("no consent question arrived")


def provider(base, browser, storage, client_metadata_url=None, name="Test Client"):
    async def redirect_handler(url):
        await anyio.to_thread.run_sync(browser.run, url)

    async def callback_handler():
        q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(browser.redirect or "").query))
        if "error" in q:
            raise RuntimeError(f"authorization refused: {q['error']}: {q.get('error_description')}")
        return AuthorizationCodeResult(code=q["code"], state=q.get("state"), iss=q.get("iss"))

    return OAuthClientProvider(
        server_url=f"{base}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name=name,
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=client_metadata_url,
    )


def tool_result(r):
    text = "".join(getattr(c, "text", "") for c in r.content)
    try:
        return bool(r.is_error), json.loads(text)
    except ValueError:
        return bool(r.is_error), {"unparsed": text}


async def ask_over_oauth(base, auth, phone_token, prompt, before_second=None):
    """initialize + tools/call ask_question (answered by the phone) with the
    SDK's OAuth provider as the HTTP client's auth; `before_second` runs
    between two asks (to force a refresh)."""
    results = []
    async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(30, read=60)) as client:
        async with streamable_http_client(f"{base}/mcp", http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for i in range(2 if before_second else 1):
                    if i == 1:
                        before_second()
                    p = f"{prompt} #{i}"
                    t = threading.Thread(target=answer_prompt, args=(base, phone_token, p), daemon=True)
                    t.start()
                    results.append(tool_result(await session.call_tool(
                        "ask_question", {"room": "OPS123", "prompt": p, "wait": 20})))
    return results


def answer_prompt(base, token, prompt):
    deadline = time.time() + 20
    while time.time() < deadline:
        _, listed, _ = http("GET", f"{base}/api/questions/pending", token)
        for q in listed.get("questions", []):
            if q["prompt"] == prompt:
                http("POST", f"{base}/api/questions/{q['id']}/answer", token, body={"value": "approve"})
                return
        time.sleep(0.05)


def mcp_status(base, token):
    """A raw initialize on /mcp with this bearer token: (status, headers)."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}
    s, body, headers = http("POST", f"{base}/mcp", token, body=init,
                            headers={"Accept": "application/json, text/event-stream"})
    return s, body, headers


class Documents(httpserver.BaseHTTPRequestHandler):
    """The client's metadata documents, over https on loopback."""
    hits = []
    base = ""

    def do_GET(self):
        Documents.hits.append(self.path)
        if self.path == "/client.json":
            doc = {"client_id": f"{Documents.base}/client.json", "client_name": "Metadata Client",
                   "redirect_uris": [REDIRECT], "grant_types": ["authorization_code", "refresh_token"],
                   "response_types": ["code"], "token_endpoint_auth_method": "none"}
        elif self.path == "/wrong.json":
            doc = {"client_id": f"{Documents.base}/client.json", "client_name": "Impostor",
                   "redirect_uris": [REDIRECT]}
        elif self.path == "/moved.json":
            self.send_response(302)
            self.send_header("Location", f"{Documents.base}/client.json")
            self.end_headers()
            return
        elif self.path == "/big.json":
            doc = {"client_id": f"{Documents.base}/big.json", "client_name": "Big",
                   "redirect_uris": [REDIRECT], "padding": "x" * 6000}
        else:
            self.send_response(404)
            self.end_headers()
            return
        body = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    # The SDK logs the denied flow's exception (expected here) with a traceback.
    logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)
    with tempfile.TemporaryDirectory(prefix="qp-oauth-") as work:
        return run_in(work)


def run_in(work):
    db = os.path.join(work, "qp.sqlite")
    fed = admin(db, "user", "add", "Federica")
    bob = admin(db, "user", "add", "Bob")
    admin(db, "room", "add", "Ops", "--code", "OPS123")
    admin(db, "room", "add-member", "OPS123", fed["id"])
    admin(db, "room", "add-member", "OPS123", bob["id"])
    fed_token = admin(db, "token", "add", fed["id"], "--label", "phone")["token"]
    bob_token = admin(db, "token", "add", bob["id"], "--label", "phone")["token"]

    # The metadata documents' https server, with a throwaway CA.
    certs = os.path.join(work, "certs")
    subprocess.run([QP, "admin", "tls", "dev-cert", certs, "--name", "127.0.0.1"],
                   check=True, capture_output=True)
    docs = httpserver.ThreadingHTTPServer(("127.0.0.1", 0), Documents)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(os.path.join(certs, "cert.pem"), os.path.join(certs, "key.pem"))
    docs.socket = tls.wrap_socket(docs.socket, server_side=True)
    docs_port = docs.server_address[1]
    Documents.base = f"https://127.0.0.1:{docs_port}"
    threading.Thread(target=docs.serve_forever, daemon=True).start()

    # A loopback listener nobody allow-listed: it must never see a connection.
    bait = socket.socket()
    bait.bind(("127.0.0.1", 0))
    bait.listen(8)
    bait.setblocking(False)
    bait_port = bait.getsockname()[1]

    kept = {}
    with serve(db, "--sweep-interval-ms", "100",
               "--oauth-client-allow", f"127.0.0.1:{docs_port}",
               "--oauth-client-ca", os.path.join(certs, "ca.pem")) as base:
        # Discovery, as a plain HTTP client sees it.
        s, body, headers = mcp_status(base, None)
        www = headers.get("WWW-Authenticate", "")
        check("/mcp's 401 points at the protected-resource metadata",
              s == 401 and f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"' in www, f"{s} {www}")
        s, prm, _ = http("GET", f"{base}/.well-known/oauth-protected-resource/mcp")
        check("protected-resource metadata names /mcp and this server",
              s == 200 and prm.get("resource") == f"{base}/mcp" and prm.get("authorization_servers") == [base], prm)
        s, asm, _ = http("GET", f"{base}/.well-known/oauth-authorization-server")
        check("authorization-server metadata: S256 only, CIMD, iss in the response",
              s == 200 and asm.get("issuer") == base and asm.get("code_challenge_methods_supported") == ["S256"]
              and asm.get("client_id_metadata_document_supported") is True
              and asm.get("authorization_response_iss_parameter_supported") is True, asm)

        # 1. Dynamic Client Registration, the person taps Allow.
        browser = Browser(base, fed["id"], "OPS123", fed_token, "allow")
        storage = Memory()
        auth = provider(base, browser, storage)
        old_refresh = {}

        def expire_access():
            old_refresh["token"] = storage.tokens.refresh_token
            old_refresh["access"] = storage.tokens.access_token
            auth.context.token_expiry_time = time.time() - 1

        try:
            results = anyio.run(ask_over_oauth, base, auth, fed_token, "OAuth: deploy?", expire_access)
        except Exception as e:  # noqa: BLE001
            results = [(True, {"exception": repr(e)})]
        check("[dcr] the SDK registered (DCR)", storage.client is not None
              and storage.client.client_id.startswith("qpc_"), storage.client)
        check("[dcr] the page names the client as unverified", isinstance(browser.page, str)
              and "Test Client" in browser.page and "unverified" in browser.page, browser.page)
        q = browser.question or {}
        check("[dcr] the consent is a direct question to the person, with Allow/Deny",
              q.get("prompt") == "An unverified client wants to ask you questions in \u2068Ops\u2069. Allow? "
              "It calls itself \u201c\u2068Test Client\u2069\u201d. It signs in on the computer it runs on (localhost)."
              and q.get("responder_scope") == "direct" and q.get("target_user_id") == fed["id"]
              and [o["value"] for o in q.get("options", [])] == ["allow", "deny"]
              and q.get("context") == f"code {browser.code} · unverified client", q)
        check("[dcr] the redirect carries code, state and iss",
              browser.redirect and "code=" in browser.redirect and f"iss={urllib.parse.quote(base, safe='')}" in browser.redirect,
              browser.redirect)
        check("[dcr] tools/call ask_question works with the access token",
              len(results) >= 1 and not results[0][0] and results[0][1].get("value") == "approve", results)
        check("[dcr] … and again after the SDK refreshed its token",
              len(results) == 2 and not results[1][0] and results[1][1].get("value") == "approve", results)
        check("[dcr] the refresh rotated both tokens", storage.tokens and old_refresh
              and storage.tokens.refresh_token != old_refresh.get("token")
              and storage.tokens.access_token != old_refresh.get("access"), old_refresh)
        s, _, _ = mcp_status(base, old_refresh.get("access"))
        check("[dcr] … the new access token works and the old one still does until it expires", s == 200, s)
        tokens = admin(db, "token", "list")
        check("[dcr] the grant is listed by qp admin token list",
              any("\tagent\t" in line and "OAuth: Test Client" in line for line in tokens.splitlines()), tokens)
        agents = admin(db, "agent", "list")
        made = [line for line in agents.splitlines() if "\tTest Client\t" in line]
        check("[dcr] an agent owned by the person, scoped to the room",
              len(made) == 1 and f"owner={fed['id']}" in made[0] and "rooms=OPS123" in made[0], agents)
        # A reused refresh token ends the grant.
        s, body, _ = http("POST", f"{base}/oauth/token", form={
            "grant_type": "refresh_token", "refresh_token": old_refresh.get("token", ""),
            "client_id": storage.client.client_id if storage.client else ""})
        check("[dcr] reusing a rotated refresh token is invalid_grant",
              s == 400 and body.get("error") == "invalid_grant" and "refresh_token" in body.get("error_description", ""), body)
        s, body, headers = mcp_status(base, storage.tokens.access_token if storage.tokens else "")
        check("[dcr] … and revokes the grant: the current access token is refused",
              s == 401 and 'error="invalid_token"' in headers.get("WWW-Authenticate", ""), f"{s} {body}")

        # 2. The person taps Deny.
        browser = Browser(base, fed["id"], "OPS123", fed_token, "deny")
        storage = Memory()
        try:
            anyio.run(ask_over_oauth, base, provider(base, browser, storage), fed_token, "never asked")
            denied = None
        except Exception as e:  # noqa: BLE001
            denied = repr(e)
        q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(browser.redirect or "").query))
        check("[deny] the client gets error=access_denied with state and iss",
              q.get("error") == "access_denied" and q.get("state") and q.get("iss") == base, browser.redirect)
        check("[deny] the SDK's flow stops with that error", denied and "access_denied" in denied, denied)

        # 3. A Client ID Metadata Document on loopback, allow-listed for this test.
        browser = Browser(base, "Federica", "OPS123", fed_token, "allow")
        storage = Memory()
        url = f"{Documents.base}/client.json"
        try:
            results = anyio.run(ask_over_oauth, base, provider(base, browser, storage, client_metadata_url=url),
                                fed_token, "OAuth via CIMD?")
        except Exception as e:  # noqa: BLE001
            results = [(True, {"exception": repr(e)})]
        check("[cimd] the SDK used the document's URL as its client_id (no registration)",
              storage.client is not None and storage.client.client_id == url, storage.client)
        check("[cimd] the server fetched the document", "/client.json" in Documents.hits, Documents.hits)
        check("[cimd] the page and the question show the verified host",
              "Metadata Client" in (browser.page or "") and "verified at \u2068<b>127.0.0.1</b>\u2069" in (browser.page or "")
              and (browser.question or {}).get("context") == f"code {browser.code} · 127.0.0.1", browser.question)
        check("[cimd] tools/call ask_question works with the access token",
              results and not results[0][0] and results[0][1].get("value") == "approve", results)
        access = storage.tokens.access_token if storage.tokens else ""
        refresh = storage.tokens.refresh_token if storage.tokens else ""
        # Revocation (RFC 7009) of the access token.
        s, _, _ = http("POST", f"{base}/oauth/revoke", form={"token": access, "client_id": url})
        s2, _, _ = mcp_status(base, access)
        check("[cimd] a revoked access token is refused on /mcp", s == 200 and s2 == 401, (s, s2))
        s, body, _ = http("POST", f"{base}/oauth/token", form={
            "grant_type": "refresh_token", "refresh_token": refresh, "client_id": url, "resource": f"{base}/mcp"})
        kept = body if s == 200 else {}
        s2, _, _ = mcp_status(base, kept.get("access_token"))
        check("[cimd] the refresh token still gets a new access token, which works", s == 200 and s2 == 200, (s, body, s2))
        s, body, _ = http("POST", f"{base}/oauth/token", form={
            "grant_type": "refresh_token", "refresh_token": kept.get("refresh_token", ""), "client_id": url,
            "resource": "https://elsewhere.example/mcp"})
        check("[cimd] a refresh for another resource is invalid_target", s == 400 and body.get("error") == "invalid_target", body)

        # The metadata document guard.
        for label, cid in [("address", f"https://127.0.0.1:{bait_port}/client.json"),
                           ("name", f"https://localhost:{bait_port}/client.json")]:
            q = urllib.parse.urlencode({"response_type": "code", "client_id": cid, "redirect_uri": REDIRECT,
                                        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
                                        "code_challenge_method": "S256", "state": "s"})
            s, body, _ = http("GET", f"{base}/oauth/authorize?{q}")
            check(f"[guard] a metadata document on a loopback {label} not allow-listed is refused",
                  s == 400 and body.get("error") == "invalid_client" and "client_id" in body.get("error_description", ""), f"{s} {body}")
        try:
            bait.accept()
            connected = True
        except BlockingIOError:
            connected = False
        check("[guard] … before any connection", not connected)
        q = urllib.parse.urlencode({"response_type": "code", "client_id": f"{Documents.base}/big.json",
                                    "redirect_uri": REDIRECT, "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
                                    "code_challenge_method": "S256"})
        s, body, _ = http("GET", f"{base}/oauth/authorize?{q}")
        check("[guard] a metadata document over the size limit is refused",
              s == 400 and "larger than" in body.get("error_description", ""), f"{s} {body}")

        for path, says in [("/wrong.json", "must be its own URL"), ("/moved.json", "HTTP 302")]:
            q = urllib.parse.urlencode({"response_type": "code", "client_id": f"{Documents.base}{path}",
                                        "redirect_uri": REDIRECT, "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
                                        "code_challenge_method": "S256"})
            s, body, _ = http("GET", f"{base}/oauth/authorize?{q}")
            check(f"[guard] a metadata document at {path} is refused ({says})",
                  s == 400 and says in body.get("error_description", ""), f"{s} {body}")

        # Consent answered by someone other than the named person.
        s, reg, _ = http("POST", f"{base}/oauth/register", body={"client_name": "Other", "redirect_uris": [REDIRECT]})
        q = {"response_type": "code", "client_id": reg.get("client_id", ""), "redirect_uri": REDIRECT,
             "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "code_challenge_method": "S256",
             "state": "x", "user": fed["id"], "room": "OPS123"}
        s, started, _ = http("POST", f"{base}/oauth/authorize", form=q, headers={"Accept": "application/json"})
        _, mine, _ = http("GET", f"{base}/api/questions/pending", fed_token)
        consent_q = next((x for x in mine.get("questions", []) if "\u2068Other\u2069" in x["prompt"]), {})
        s2, body, _ = http("POST", f"{base}/api/questions/{consent_q.get('id')}/answer", bob_token, body={"value": "allow"})
        s3, st, _ = http("POST", f"{base}/oauth/authorize/status", body={"request": started.get("request", ""), "wait": 0})
        check("[someone else] Bob cannot answer Federica's consent; it stays pending",
              s == 200 and s2 == 403 and st.get("state") == "pending", (s, s2, body, st))

    # Another server (another resource) on the same database.
    with serve(db, "--sweep-interval-ms", "100") as other:
        s, body, headers = mcp_status(other, kept.get("access_token"))
        check("a token minted for another resource is refused",
              s == 401 and "another resource" in json.dumps(body), f"{s} {body}")
    docs.shutdown()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
