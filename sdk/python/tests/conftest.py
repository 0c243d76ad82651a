"""A real `qp serve` (the built binary) on loopback for the SDK's tests,
with a room, people, an agent, and a webhook receiver on loopback.

QP_BIN names the binary (scripts/test sets it to target/debug/qp).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import http.server
import inspect
import json
import os
import sqlite3
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterator, Optional

import httpx
import pytest

import questionprotocol as qp

ROOT = Path(__file__).resolve().parents[3]
QP_BIN = os.environ.get("QP_BIN") or str(ROOT / "target" / "debug" / "qp")
SECRET = "sdk-webhook-secret-0123456789"


def admin(db: Path, *args: str) -> Any:
    out = subprocess.run([QP_BIN, "admin", "--db", str(db), *args], capture_output=True, text=True)
    assert out.returncode == 0, f"qp admin {args}: {out.stderr}"
    text = out.stdout.strip()
    return json.loads(text) if text.startswith(("{", "[")) else text


class Receiver(http.server.BaseHTTPRequestHandler):
    """Keeps every delivery: (headers, raw body)."""

    deliveries: ClassVar[list[tuple[dict[str, str], bytes]]] = []
    lock = threading.Lock()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        with Receiver.lock:
            Receiver.deliveries.append((dict(self.headers.items()), body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *a: Any) -> None:
        pass


@dataclass
class Server:
    url: str
    db: Path
    dir: Path
    agent_token: str
    alice: str  # the agent's owner (u_owner)'s phone token
    bob: str
    proc: subprocess.Popen[str]
    log: list[str] = field(default_factory=list)

    def answer(self, qid: str, body: dict[str, Any], token: Optional[str] = None) -> dict[str, Any]:
        r = httpx.post(
            f"{self.url}/api/questions/{qid}/answer",
            json=body,
            headers={"Authorization": f"Bearer {token or self.alice}"},
        )
        assert r.status_code == 200, r.text
        return r.json()  # type: ignore[no-any-return]

    def answer_later(
        self, qid: str, body: dict[str, Any], delay: float, token: Optional[str] = None
    ) -> threading.Thread:
        def go() -> None:
            time.sleep(delay)
            self.answer(qid, body, token)

        t = threading.Thread(target=go, daemon=True)
        t.start()
        return t

    def set_expiry(self, qid: str, secs: int) -> None:
        """Moves a question's deadline to `secs` from now (the minimum ttl is 30 s)."""
        t = int(time.time()) + secs
        s = dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        con = sqlite3.connect(self.db)
        with con:
            con.execute(
                "UPDATE questions SET expires_at = ?2, body = json_set(body, '$.expires_at', ?3) WHERE id = ?1",
                (qid, t, s),
            )
        con.close()


def start_serve(db: Path, *extra: str) -> tuple[subprocess.Popen[str], str, list[str]]:
    proc = subprocess.Popen(
        [QP_BIN, "serve", "--listen", "127.0.0.1:0", "--db", str(db), "--sweep-interval-ms", "100", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "QP_LOG": "info"},
    )
    assert proc.stderr is not None
    url = None
    for line in proc.stderr:
        if "listening on " in line:
            url = line.split("listening on ")[1].strip()
            break
    if url is None:
        proc.kill()
        raise RuntimeError("qp serve exited before listening")
    log: list[str] = []
    stderr = proc.stderr

    def drain() -> None:
        for line in stderr:
            log.append(line)

    threading.Thread(target=drain, daemon=True).start()
    return proc, url, log


def seed(dir: Path, name: str, webhook: Optional[str] = None) -> tuple[Path, str, str, str]:
    db = dir / f"{name}.sqlite"
    admin(db, "user", "add", "Alice", "--id", "u_owner")
    admin(db, "user", "add", "Bob", "--id", "u_bob")
    admin(db, "user", "add", "Federica", "--id", "u_federica")
    admin(db, "user", "add", "Long", "--id", "u_" + "u" * 62)
    # Every character an id may hold (the ask vectors' target_every_id_character).
    admin(db, "user", "add", "Every", "--id", "u_Az-09_x")
    admin(db, "room", "add", "Ops", "--code", "OPS123")
    admin(db, "room", "add", "Other", "--code", "OTHER1")
    for u in ("u_owner", "u_bob", "u_federica", "u_" + "u" * 62, "u_Az-09_x"):
        admin(db, "room", "add-member", "OPS123", u)
    agent = admin(db, "agent", "add", "CI", "--owner", "u_owner", "--room", "OPS123")
    alice = admin(db, "token", "add", "u_owner", "--label", "phone")["token"]
    bob = admin(db, "token", "add", "u_bob", "--label", "phone")["token"]
    if webhook:
        admin(db, "room", "webhook", "OPS123", "--url", webhook, "--secret", SECRET)
    return db, agent["token"], alice, bob


@pytest.fixture(scope="session")
def receiver() -> Iterator[str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/hook"
    srv.shutdown()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory, receiver: str) -> Iterator[Server]:
    assert Path(QP_BIN).exists(), f"build qp first: {QP_BIN}"
    d = tmp_path_factory.mktemp("qp")
    db, agent, alice, bob = seed(d, "main", webhook=receiver)
    proc, url, log = start_serve(
        db, "--ask-rate-per-minute", "100000", "--ask-burst", "100000", "--webhook-retry-base-ms", "100"
    )
    s = Server(url=url, db=db, dir=d, agent_token=agent, alice=alice, bob=bob, proc=proc, log=log)
    yield s
    proc.kill()
    proc.wait()


def _limited(tmp_path_factory: pytest.TempPathFactory, name: str, *flags: str) -> Iterator[Server]:
    d = tmp_path_factory.mktemp(name)
    db, agent, alice, bob = seed(d, name)
    proc, url, log = start_serve(db, *flags)
    s = Server(url=url, db=db, dir=d, agent_token=agent, alice=alice, bob=bob, proc=proc, log=log)
    yield s
    proc.kill()
    proc.wait()


@pytest.fixture(scope="session")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server that lets an agent ask once a minute."""
    yield from _limited(tmp_path_factory, "tight", "--ask-rate-per-minute", "1", "--ask-burst", "1")


@pytest.fixture(scope="session")
def onepoll(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server that lets an agent hold one long-poll at a time."""
    yield from _limited(tmp_path_factory, "onepoll", "--max-long-polls-per-token", "1")


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's QP_* variables or ~/.config/qp."""
    for k in ("QP_URL", "QP_TOKEN", "QP_CONFIG_DIR", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def client(mode: str, server: Server) -> Any:
    """A Client or an AsyncClient on the server (1-second polls, so one
    wait spans several of the server's long-poll timeouts)."""
    if mode == "sync":
        c = qp.Client(server.url, server.agent_token, poll_seconds=1)
        yield c
        c.close()
    else:
        ac = qp.AsyncClient(server.url, server.agent_token, poll_seconds=1)
        yield ac
        await ac.aclose()


async def r(x: Any) -> Any:
    """The same test for both clients: awaits what the async one returns."""
    return await x if inspect.isawaitable(x) else x


async def shut(c: Any) -> None:
    """Closes either client."""
    if isinstance(c, qp.AsyncClient):
        await c.aclose()
    else:
        c.close()


@contextlib.contextmanager
def listener() -> Iterator[tuple[str, list[bytes]]]:
    """A loopback socket that records what connects to it (a server the token must never reach)."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.settimeout(0.2)
    heard: list[bytes] = []
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            try:
                c, _ = s.accept()
            except OSError:
                continue
            c.settimeout(0.5)
            with contextlib.suppress(OSError):
                heard.append(c.recv(4096))
            c.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{s.getsockname()[1]}", heard
    finally:
        stop.set()
        t.join()
        s.close()
