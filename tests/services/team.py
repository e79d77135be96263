"""A person's machine in team mode (issue 57), as the end-to-end tests make one: a private HOME and data
directory, signed in to a memory server with `mcp-memory login URL --no-browser` (authorization code +
PKCE through the loopback redirect, the browser's part played by `OidcServer.authorize`), then
`mcp-memory install claude-code --server URL`; and what the server stored, read from its SQLite file.

The machine has no OS keyring (keyring's fail backend, as on a server or in CI): its credential is in
`credential.json`, where a test can read the refresh token it was given.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import anyio

from tests.services.memory_user import mcp_memory, user_env
from tests.services.oidc_server import OidcServer

LOGIN_SECONDS = 60.0  # for `mcp-memory login` to print its page, and to finish once signed in


@dataclass(frozen=True)
class Machine:
    """One person's machine: a home, a data directory, and what its commands add to the environment."""

    user: str
    home: Path
    data_dir: Path
    env: dict[str, str]

    def environment(self) -> dict[str, str]:
        """The whole environment of a command run on this machine (a hook, the courier it starts)."""
        return user_env(self.home) | self.env


def machine(root: Path, user: str) -> Machine:
    """A new machine of `user` under `root`, not signed in to anything yet."""
    home, data_dir, temporary = root / "home", root / "data", root / "tmp"
    for directory in (home, temporary):
        directory.mkdir(parents=True)
    env = {
        "MCP_MEMORY_DATA_DIR": str(data_dir),
        "MCP_MEMORY_USER_ID": f"{user}-local",
        "TMPDIR": str(temporary),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    return Machine(user, home, data_dir, env)


def log_in(on: Machine, url: str, oidc: OidcServer) -> str:
    """`mcp-memory login URL --no-browser` on this machine, signing in as its user at the page it prints:
    what it said (stdout, then stderr)."""
    login = subprocess.Popen(
        [sys.executable, "-m", "mcp_memory", "login", url, "--no-browser"],
        cwd=on.home,
        env=on.environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    said: list[str] = []
    err = ""
    try:
        assert login.stderr is not None
        authorization_url = None
        deadline = time.monotonic() + LOGIN_SECONDS
        while authorization_url is None and time.monotonic() < deadline:
            line = login.stderr.readline()
            if not line:
                break
            said.append(line)
            found = re.search(re.escape(oidc.issuer) + r"/\S+", line)
            authorization_url = found.group(0) if found else None
        assert authorization_url, f"login printed no authorization URL: {''.join(said)}"
        callback = anyio.run(oidc.authorize, authorization_url, on.user)
        with urllib.request.urlopen(callback, timeout=30) as answer:  # the browser lands on the loopback
            assert answer.status == 200
        out, err = login.communicate(timeout=LOGIN_SECONDS)
    finally:
        if login.poll() is None:
            login.kill()
    assert login.returncode == 0, f"login failed: {''.join(said)}{err}"
    assert on.user in out + err, out + err
    return out + "".join(said) + err


def sign_in(url: str, oidc: OidcServer, root: Path, user: str) -> Machine:
    """A new machine of `user`, signed in to the memory server at `url` (whose users sign in at `oidc`)
    and installed for Claude Code in team mode."""
    new = machine(root, user)
    log_in(new, url, oidc)
    mcp_memory(new.home, new.env, "install", "claude-code", "--server", url)
    return new


def stored_turns(server_data_dir: Path, text: str) -> list[tuple[str, str]]:
    """(owner key, content) of every turn holding `text` that the server stored in its data directory's
    SQLite file ([] before it has one)."""
    database = server_data_dir / "memory.db"
    if not database.is_file():
        return []
    try:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5) as db:
            found = db.execute(
                "SELECT user_id, content FROM memories WHERE type = 'turn' AND content LIKE ?", (f"%{text}%",)
            ).fetchall()
    except sqlite3.Error:
        return []
    return [(str(owner), str(content)) for owner, content in found]
