"""Credentials as the qp command resolves them (a real `qp login`), a
stored token never sent to another origin, and tokens never in reprs, logs
or exceptions; Ctrl-C and task cancellation leave the question pending."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import QP_BIN, Server, admin, listener

import questionprotocol as qp


def qp_login(server: Server, config: Path) -> None:
    agents = admin(server.db, "agent", "list")
    agent_id = agents.split("\t")[0]
    shown = admin(server.db, "agent", "invite", agent_id, "--url", server.url)
    words = shown.split()
    code = words[words.index("login") + 1]
    out = subprocess.run(
        [QP_BIN, "login", code, "--url", server.url],
        env={**os.environ, "QP_CONFIG_DIR": str(config)},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr


@pytest.fixture(scope="module")
def logged_in(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = tmp_path_factory.mktemp("config") / "qp"
    qp_login(server, config)
    assert (config / "credentials.json").stat().st_mode & 0o777 == 0o600
    return config


def test_qp_login_once_makes_the_sdk_work(
    logged_in: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QP_CONFIG_DIR", str(logged_in))
    with qp.Client() as c:
        assert c.url == server.url
        assert c.ask("OPS123", "Logged in?").id.startswith("q_")
    # The same origin written differently is still the same server.
    monkeypatch.setenv("QP_URL", server.url.replace("127.0.0.1", "127.0.0.1") + "/")
    with qp.Client() as c:
        assert c.list(state="pending")


async def test_the_async_client_reads_the_same_file(logged_in: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(logged_in.parent))  # $XDG_CONFIG_HOME/qp/credentials.json
    async with qp.AsyncClient() as c:
        assert (await c.ask("OPS123", "Async logged in?")).id.startswith("q_")
    assert qp.credentials_path() == logged_in / "credentials.json"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(logged_in.parent.parent))
    assert qp.credentials_path() == logged_in.parent.parent / ".config" / "qp" / "credentials.json"


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_stored_token_is_never_sent_to_another_origin(
    logged_in: Path, server: Server, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setenv("QP_CONFIG_DIR", str(logged_in))
    stored = json.loads((logged_in / "credentials.json").read_text())["token"]
    cls: Any = qp.Client if kind == "sync" else qp.AsyncClient
    with listener() as (other, heard):
        for url in (other, server.url.replace("http://", "https://"), "http://127.0.0.1.evil.net:1"):
            monkeypatch.setenv("QP_URL", url)
            with pytest.raises(qp.CredentialsError) as e:
                cls()
            assert stored not in str(e.value) and stored not in repr(e.value)
            assert "is never sent elsewhere" in str(e.value)
        with pytest.raises(qp.CredentialsError):
            cls(url=other)
        time.sleep(0.3)
    assert heard == [], "nothing was sent to the other server"
    # A token given explicitly goes where it is told.
    c = cls(url=server.url, token="qpa_given")
    assert c.url == server.url


def test_an_explicit_token_wins_and_no_token_is_a_clear_error(
    server: Server, monkeypatch: pytest.MonkeyPatch, logged_in: Path
) -> None:
    with pytest.raises(qp.CredentialsError, match="no agent token"):
        qp.Client()
    monkeypatch.setenv("QP_TOKEN", server.agent_token)
    monkeypatch.setenv("QP_URL", server.url)
    with qp.Client() as c:
        assert c.ask("OPS123", "From the environment?").id
    # QP_TOKEN without QP_URL: the stored URL, else the default.
    monkeypatch.delenv("QP_URL")
    assert qp.Client().url == qp.DEFAULT_URL
    monkeypatch.setenv("QP_CONFIG_DIR", str(logged_in))
    assert qp.Client().url == server.url


def test_tokens_never_in_reprs_logs_or_exceptions(
    server: Server, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "qpa_" + "s" * 40
    c = qp.Client(server.url, secret)
    assert secret not in repr(c) and secret not in str(vars(c).get("url"))
    with pytest.raises(qp.AuthenticationError) as e:
        c.ask("OPS123", "Leak?")
    dead = qp.Client("http://127.0.0.1:9", secret)
    with pytest.raises(qp.TransportError) as t:
        dead.get("q_1")
    good = qp.Client(server.url, server.agent_token)
    h = good.ask("OPS123", "Logged?")
    assert server.agent_token not in repr(h) and server.agent_token not in repr(h.question)
    for err in (e.value, t.value):
        text = str(err) + repr(err) + json.dumps(getattr(err, "body", {}))
        assert secret not in text
    # Nor reachable through the exception chain: httpx's own exception holds
    # its request, whose headers carry the token.
    assert t.value.__context__ is None and t.value.__cause__ is None
    out, errs = capfd.readouterr()
    logs = caplog.text + out + errs
    assert secret not in logs and server.agent_token not in logs
    assert "HTTP Request" in caplog.text, "httpx logged its requests, without the token"
    assert secret not in repr(qp.credentials.StoredCredential(url="u", token=secret))
    for x in (c, dead, good):
        x.close()


WAITER = textwrap.dedent(
    """
    import signal, sys, questionprotocol as qp
    # A shell without job control starts background commands with SIGINT
    # ignored, and Python then raises no KeyboardInterrupt: the waiter takes
    # Ctrl-C as a terminal gives it, whatever started the tests.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    c = qp.Client(sys.argv[1], sys.argv[2], poll_seconds=2)
    h = c.ask("OPS123", "Interrupt me?")
    print(h.id, flush=True)
    try:
        h.wait()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
    """
)


def test_ctrl_c_leaves_the_question_pending(server: Server) -> None:
    p = subprocess.Popen(
        [sys.executable, "-c", WAITER, server.url, server.agent_token],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    qid = p.stdout.readline().strip()
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    assert p.wait(10) == 130 and p.stdout.read().strip() == "interrupted"
    with qp.Client(server.url, server.agent_token) as c:
        assert c.get(qid).state == "pending"


async def test_cancelling_the_task_leaves_the_question_pending(server: Server) -> None:
    async with qp.AsyncClient(server.url, server.agent_token, poll_seconds=2) as c:
        h = await c.ask("OPS123", "Cancel my task?")
        task = asyncio.create_task(h.wait())
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (await h.get()).state == "pending"


@pytest.mark.parametrize(
    ("given", "stored", "same"),
    [
        # The cases of asker.rs's a_stored_token_goes_only_to_its_own_origin.
        ("https://qp.example.com", "https://qp.example.com", True),
        ("https://qp.example.com:443/", "https://qp.example.com", True),
        ("HTTPS://QP.example.com", "https://qp.example.com", True),
        ("http://127.0.0.1:9999", "http://127.0.0.1:8750", False),
        ("http://qp.example.com", "https://qp.example.com", False),
        ("https://qp.example.com.evil.net", "https://qp.example.com", False),
        ("https://evil.net#@qp.example.com", "https://qp.example.com", False),
        ("not a url", "https://qp.example.com", False),
    ],
)
def test_origins_compare_as_the_cli_compares_them(given: str, stored: str, same: bool) -> None:
    assert qp.credentials.same_origin(given, stored) is same
