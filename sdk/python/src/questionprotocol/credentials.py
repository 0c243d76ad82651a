"""Which server and token a client uses, with the same file and precedence as
the ``qp`` command (cli/src/credentials.rs and asker.rs, the
reference): an explicit token, else ``QP_TOKEN``; else what ``qp login``
stored in ``$QP_CONFIG_DIR/credentials.json``, else
``$XDG_CONFIG_HOME/qp/credentials.json``, else ``~/.config/qp/credentials.json``.

A stored token is sent only to the origin it was issued for: a URL given
(``url=`` or ``QP_URL``) that names another scheme, host or port is refused
with :class:`CredentialsError`, before any request, rather than sending the
token to whoever listens there.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Tuple
from urllib.parse import urlsplit

from .errors import CredentialsError

#: Where ``qp serve`` listens by default, and so where clients look.
DEFAULT_URL = "http://127.0.0.1:8750"


@dataclass(frozen=True)
class StoredCredential:
    url: str
    token: str = field(repr=False)
    agent_id: str = ""
    agent_name: str = ""


def credentials_path(env: Optional[Mapping[str, str]] = None) -> Optional[Path]:
    """The file ``qp login`` writes (None without a home or config directory)."""
    e = os.environ if env is None else env

    def var(k: str) -> Optional[str]:
        v = e.get(k)
        return v if v else None

    d = var("QP_CONFIG_DIR")
    if d:
        return Path(d) / "credentials.json"
    x = var("XDG_CONFIG_HOME")
    if x:
        return Path(x) / "qp" / "credentials.json"
    h = var("HOME")
    if h:
        return Path(h) / ".config" / "qp" / "credentials.json"
    return None


def load_stored(env: Optional[Mapping[str, str]] = None) -> Optional[StoredCredential]:
    """The stored credential, if there is a readable one."""
    p = credentials_path(env)
    if p is None:
        return None
    try:
        body = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict):
        return None
    url, token = body.get("url"), body.get("token")
    if not isinstance(url, str) or not isinstance(token, str):
        return None
    return StoredCredential(
        url=url,
        token=token,
        agent_id=str(body.get("agent_id", "")),
        agent_name=str(body.get("agent_name", "")),
    )


_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}


def origin(url: str) -> Optional[Tuple[str, str, int]]:
    """(scheme, host, port) with the default port filled in; None for a URL
    that does not parse or has no host (it matches nothing)."""
    try:
        u = urlsplit(url.strip())
        port = u.port
    except ValueError:
        return None
    scheme = u.scheme.lower()
    host = (u.hostname or "").lower()
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    return (scheme, host, port if port is not None else _DEFAULT_PORTS[scheme])


def origin_text(url: str) -> str:
    """``https://host:port`` of a URL, for messages (never its path, query or user-info)."""
    o = origin(url)
    if o is None:
        return "an unreadable URL"
    scheme, host, port = o
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}" + ("" if port == _DEFAULT_PORTS[scheme] else f":{port}")


def same_origin(a: str, b: str) -> bool:
    oa = origin(a)
    return oa is not None and oa == origin(b)


def resolve(
    url: Optional[str] = None,
    token: Optional[str] = None,
    *,
    env: Optional[Mapping[str, str]] = None,
) -> Tuple[str, str]:
    """The (url, token) a client uses; see the module's documentation."""
    e = os.environ if env is None else env
    url = url or e.get("QP_URL") or None
    token = token or e.get("QP_TOKEN") or None
    stored = load_stored(e)
    if token is not None:
        return url or (stored.url if stored else DEFAULT_URL), token
    if stored is None:
        raise CredentialsError(
            "no agent token; pass token=, set QP_TOKEN, or run `qp login CODE`",
            code="no_token",
        )
    if url is not None and not same_origin(url, stored.url):
        raise CredentialsError(
            f"the token `qp login` stored is for {origin_text(stored.url)}, not {origin_text(url)}: "
            f"it is never sent elsewhere; pass token= or set QP_TOKEN for that server, "
            f"or run `qp login CODE --url {origin_text(url)}`",
            code="other_origin",
        )
    return stored.url, stored.token
