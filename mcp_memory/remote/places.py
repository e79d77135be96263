"""Where this machine keeps what it holds for a memory server (`install <client> --server URL`): standard
library only, since the hooks (a process per event) read it.

Everything for one server lives in `<data dir>/remote/<host>-<8 hex>/`, the user's alone (0700, files
0600):
- `outbox/`: events written by the hooks (redacted first), delivered in order by the courier;
- `token.json`: the current access token and when it expires, for the hooks (they cannot open the OS
  keyring in a tenth of a second); the refresh token is never here when there is a keyring;
- `credential.json`: the whole credential (tokens, the registered client) when there is no keyring;
- `status.json`: the last delivery and the last problem, for `mcp-memory doctor`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from mcp_memory.private_files import make_dirs

EXPIRY_MARGIN = 10.0  # seconds: a token this close to expiring is not handed to a hook (its deadline is 2 s)


class UnusableUrl(ValueError):
    """Not the URL of a memory server (http or https, a host)."""


def normalized(url: str) -> str:
    """The server's base URL: scheme, host, port and path prefix, without a trailing slash or `/mcp`.
    `https://memory.example.com/mcp/` and `https://memory.example.com` are one server."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnusableUrl(f"{url[:80]!r} is not a memory server's URL (http:// or https://, with a host)")
    path = parts.path.rstrip("/").removesuffix("/mcp").rstrip("/")
    host = parts.hostname.lower() + (f":{parts.port}" if parts.port else "")
    return f"{parts.scheme}://{host}{path}"


def state_dir(data_dir: Path, url: str) -> Path:
    base = normalized(url)
    host = (urlsplit(base).hostname or "server").replace(":", "-")[:60]
    return data_dir / "remote" / f"{host}-{hashlib.sha256(base.encode()).hexdigest()[:8]}"


def outbox_dir(data_dir: Path, url: str) -> Path:
    return state_dir(data_dir, url) / "outbox"


def token_file(data_dir: Path, url: str) -> Path:
    return state_dir(data_dir, url) / "token.json"


def credential_file(data_dir: Path, url: str) -> Path:
    return state_dir(data_dir, url) / "credential.json"


def status_file(data_dir: Path, url: str) -> Path:
    return state_dir(data_dir, url) / "status.json"


def private(path: Path) -> Path:
    """The directory, made if missing, with every directory from `<data dir>/remote` down 0700."""
    make_dirs(path)  # 0700, and so are the missing folders above it (the data dir)
    for directory in (path, *path.parents):
        if directory.stat().st_mode & 0o077:
            directory.chmod(0o700)
        if directory.name == "remote":
            break
    return path


def write_json(path: Path, value: Any) -> None:
    """Written whole (a temporary file renamed into place), 0600 from its creation."""
    private(path.parent)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as handle:
        json.dump(value, handle)
    os.replace(temporary, path)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


class CachedToken(NamedTuple):
    access_token: str
    expires_at: float | None  # epoch seconds; None: the token says no expiry (an administrator's)
    user: str | None  # who it signs in (the server's word for them), when known

    def usable(self, now: float | None = None) -> bool:
        return self.expires_at is None or self.expires_at - EXPIRY_MARGIN > (now or time.time())


def cached_token(data_dir: Path, url: str) -> CachedToken | None:
    """The access token the hooks may use now, or None (signed out, or expired: the courier refreshes)."""
    found = read_json(token_file(data_dir, url))
    if not found or not isinstance(found.get("access_token"), str):
        return None
    expires = found.get("expires_at")
    user = found.get("user")
    return CachedToken(
        found["access_token"],
        float(expires) if isinstance(expires, (int, float)) else None,
        user if isinstance(user, str) else None,
    )


def cache_token(data_dir: Path, url: str, token: CachedToken) -> None:
    write_json(token_file(data_dir, url), token._asdict())


def forget_token(data_dir: Path, url: str) -> None:
    with contextlib.suppress(OSError):
        token_file(data_dir, url).unlink()
