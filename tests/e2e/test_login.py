"""Signing in to a memory server from a user's machine: `mcp-memory login`, the kept credential, its
refresh, `mcp-memory logout`, and `mcp-memory serve --server` bridging a client's stdio to the server.

All real: the memory server is `mcp-memory serve --transport http` whose authorization server is the
real oidc-provider (tests/services/oidc_server.py) with access tokens that live a few seconds; each
`mcp-memory login` is a subprocess with a private HOME and data dir, driven as a person would drive it
(the sign-in page it prints, the redirect back to its loopback address; the device code's page).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
import httpx2
import keyring
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp_memory.remote import places
from mcp_memory.remote.credentials import (
    KEYRING_SERVICE,
    SignedOut,
    access_token,
    http_auth,
    load_credential,
)
from tests.e2e import login_keyring
from tests.security.test_oauth_flows import start_oauth_server
from tests.services.mcp_client import call
from tests.services.oidc_server import OidcServer, local_oidc_server
from tests.services.server_process import (
    READ_TIMEOUT_SECONDS,
    NetworkServer,
    ServerStarter,
    mcp_memory_command,
)

pytestmark = pytest.mark.anyio

ACCESS_TTL = 6  # seconds an access token lives: long enough to use once, short enough to outlive
REPOSITORY = Path(__file__).resolve().parents[2]
OUTPUT_SECONDS = 60.0  # for a login process to print what the test waits for
SIGNED_IN = re.compile(r"^signed in to (\S+)(?: as (\S+))? \((.*)\)$")


def start_signed_in_server(
    start_server: ServerStarter, tmp_path: Path, oidc: OidcServer, **extra: str
) -> NetworkServer:
    """The memory server, its users signing in at `oidc`; no leeway for a token's expiry, so an expired
    token is refused at once (and a refresh is what keeps a session going)."""
    return start_oauth_server(
        start_server, tmp_path, oidc, MCP_MEMORY_SECURITY__CLOCK_SKEW_SECONDS="0", **extra
    )


@pytest.fixture(scope="module")
def oidc() -> Iterator[OidcServer]:
    with local_oidc_server(OIDC_ACCESS_TTL=str(ACCESS_TTL)) as server:
        yield server


@dataclass
class Machine:
    """One user's machine: a private HOME and data dir; its keyring is `keyring_file` when given (the
    test backend), else none (keyring's fail backend: the credential goes to credential.json)."""

    root: Path
    keyring_file: Path | None = None

    @property
    def data_dir(self) -> Path:
        return self.root / "home" / "data"

    def env(self) -> dict[str, str]:
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith("MCP_MEMORY_") and name not in ("DISPLAY", "WAYLAND_DISPLAY")
        }
        env |= {"HOME": str(self.root / "home"), "MCP_MEMORY_DATA_DIR": str(self.data_dir)}
        env["PYTHONPATH"] = str(REPOSITORY)  # for the test keyring backend
        if self.keyring_file is None:
            env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
            env.pop(login_keyring.VARIABLE, None)
        else:
            env["PYTHON_KEYRING_BACKEND"] = "tests.e2e.login_keyring.FileKeyring"
            env[login_keyring.VARIABLE] = str(self.keyring_file)
        return env

    def run(self, *arguments: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return subprocess.run(
            [mcp_memory_command(), *arguments],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env(),
            cwd=self.root,
            timeout=120,
        )

    def state_files(self, url: str) -> list[str]:
        state = places.state_dir(self.data_dir, url)
        return (
            sorted(p.name for p in state.iterdir() if not p.name.endswith(".lock")) if state.exists() else []
        )


class Login:
    """A running `mcp-memory login` process, whose stderr the test reads as the person at the terminal."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self.stderr = ""

    async def wait_for(self, pattern: str) -> re.Match[str]:
        assert self.process.stderr is not None
        with anyio.fail_after(OUTPUT_SECONDS):
            while not (found := re.search(pattern, self.stderr)):
                try:
                    self.stderr += (await self.process.stderr.receive()).decode()
                except anyio.EndOfStream:
                    raise AssertionError(
                        f"login ended without printing {pattern!r}:\n{self.stderr}"
                    ) from None
        return found

    async def finish(self) -> tuple[int, str, str]:
        """(exit code, stdout, the whole stderr) once it ended."""
        assert self.process.stdout is not None and self.process.stderr is not None
        out = b""
        with anyio.fail_after(OUTPUT_SECONDS):
            async for chunk in self.process.stdout:
                out += chunk
            async for chunk in self.process.stderr:
                self.stderr += chunk.decode()
            code = await self.process.wait()
        return code, out.decode(), self.stderr


@asynccontextmanager
async def login(machine: Machine, *arguments: str) -> AsyncIterator[Login]:
    machine.data_dir.mkdir(parents=True, exist_ok=True)
    process = await anyio.open_process(
        [mcp_memory_command(), "login", *arguments], env=machine.env(), cwd=machine.root
    )
    async with process:
        try:
            yield Login(process)
        finally:
            if process.returncode is None:
                process.kill()


async def sign_in_with_browser(machine: Machine, server: NetworkServer, oidc: OidcServer, user: str) -> str:
    """`mcp-memory login URL --no-browser`, the printed page signed in at as `user`, the browser's redirect
    to the loopback address made: the line it ends with."""
    async with login(machine, server.base_url, "--no-browser") as running:
        page = (await running.wait_for(r"\n  (http://\S+)\n")).group(1)
        assert page.startswith(oidc.issuer + "/"), page
        callback = await oidc.authorize(page, user)
        assert callback.startswith("http://127.0.0.1:"), callback
        async with httpx2.AsyncClient(timeout=30) as http:
            answer = await http.get(callback)  # the browser, handed back to the login process
        assert answer.status_code == 200 and "You can close this tab" in answer.text, answer.text
        code, out, err = await running.finish()
    assert code == 0, err
    return out.strip()


def expiry_of(line: str) -> str:
    found = SIGNED_IN.match(line)
    assert found, line
    return found.group(3)


@asynccontextmanager
async def remote_client(machine: Machine, server: NetworkServer) -> AsyncIterator[Client]:
    """An MCP client in this process over streamable HTTP, with the machine's credential (http_auth)."""
    async with (
        create_mcp_http_client(auth=http_auth(machine.data_dir, server.base_url)) as http,
        Client(
            streamable_http_client(server.url, http_client=http), read_timeout_seconds=READ_TIMEOUT_SECONDS
        ) as c,
    ):
        yield c


async def accepted(server: NetworkServer, token: str) -> bool:
    """Whether the server takes `token` (an MCP initialize answered, not 401)."""
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.post(
            server.url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
        )
    assert answer.status_code in (200, 401), answer.text
    return answer.status_code == 200


def private_file(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) == 0o600


async def until_expired(expires_at: float) -> None:
    """Waits on the clock: the token's own lifetime is what is under test (nothing to poll but time)."""
    assert expires_at - time.time() <= ACCESS_TTL + 5, "a token of this server's short lifetime"
    await anyio.sleep(max(0.0, expires_at - time.time()) + 1.0)


async def test_a_browser_sign_in_is_kept_refreshed_and_forgotten(
    start_server: ServerStarter, tmp_path: Path, oidc: OidcServer
) -> None:
    server = start_signed_in_server(start_server, tmp_path, oidc)
    machine = Machine(tmp_path / "laptop")
    line = await sign_in_with_browser(machine, server, oidc, "alice")
    assert SIGNED_IN.match(line) and f"signed in to {server.base_url} as alice (" in line, line
    assert "refreshed automatically" in expiry_of(line)

    credential_file = places.credential_file(machine.data_dir, server.base_url)
    assert private_file(credential_file), "the credential is the user's alone"
    kept = json.loads(credential_file.read_text())
    assert kept["tokens"]["refresh_token"] and kept["user"] == "alice" and kept["client"]["client_id"]
    cached = places.cached_token(machine.data_dir, server.base_url)
    assert cached is not None and cached.user == "alice" and cached.expires_at is not None
    assert private_file(places.token_file(machine.data_dir, server.base_url))
    assert "refresh_token" not in places.token_file(machine.data_dir, server.base_url).read_text()

    async with remote_client(machine, server) as client:  # the credential works, through http_auth
        added = await call(client, "add_turn", thread_id="trip", role="user", content="Alice flies to Lisbon")
        found = await call(client, "search_memory", query="Lisbon", mode="text")
        assert [r["id"] for r in found["results"]] == [added["id"]]

    first = places.cached_token(machine.data_dir, server.base_url)
    assert first is not None and first.expires_at is not None
    await until_expired(first.expires_at)
    assert not await accepted(server, first.access_token), "the first token has expired"
    renewed = await access_token(machine.data_dir, server.base_url, margin=0)
    assert renewed != first.access_token and await accepted(server, renewed), "refreshed, no new sign-in"
    again = places.cached_token(machine.data_dir, server.base_url)
    assert again is not None and again.access_token == renewed and again.user == "alice", "token.json follows"

    before = await load_credential(machine.data_dir, server.base_url)
    assert before is not None and before.tokens.refresh_token and before.server_metadata is not None
    out = machine.run("logout", server.base_url)
    assert out.returncode == 0 and out.stdout.strip() == f"signed out of {server.base_url}", out
    assert machine.state_files(server.base_url) == [], "credential.json and token.json are gone"
    with pytest.raises(SignedOut, match="not signed in"):
        await access_token(machine.data_dir, server.base_url)
    async with httpx2.AsyncClient(timeout=30) as http:  # and the refresh token was revoked at the server
        refresh = await http.post(
            str(before.server_metadata.token_endpoint),
            data={
                "grant_type": "refresh_token",
                "refresh_token": before.tokens.refresh_token,
                "client_id": before.client.client_id if before.client else "",
            },
        )
    assert refresh.status_code == 400 and refresh.json()["error"] == "invalid_grant", refresh.text


async def test_a_device_sign_in_with_a_code_entered_elsewhere(
    start_server: ServerStarter, tmp_path: Path, oidc: OidcServer
) -> None:
    server = start_signed_in_server(start_server, tmp_path, oidc)
    machine = Machine(tmp_path / "headless")
    async with login(machine, server.base_url, "--device") as running:
        shown = await running.wait_for(r"enter the code (\S+)\n  or open: (\S+)\n")
        assert shown.group(1) in shown.group(2) and shown.group(2).startswith(oidc.issuer + "/")
        await oidc.approve_device(shown.group(2), "bob")  # on a phone, say
        code, out, err = await running.finish()
    assert code == 0, err
    assert out.strip().startswith(f"signed in to {server.base_url} as bob ("), out
    assert private_file(places.credential_file(machine.data_dir, server.base_url))
    async with remote_client(machine, server) as client:
        await call(client, "add_turn", thread_id="t", role="user", content="Bob signed in with a code")
        found = await call(client, "search_memory", query="code", mode="text")
        assert len(found["results"]) == 1
    first = places.cached_token(machine.data_dir, server.base_url)
    assert first is not None
    renewed = await access_token(machine.data_dir, server.base_url, margin=10**6)  # refreshes now
    assert renewed != first.access_token and await accepted(server, renewed)


async def test_a_token_made_by_an_administrator_is_taken_from_stdin(
    start_server: ServerStarter, tmp_path: Path, oidc: OidcServer
) -> None:
    machine = Machine(tmp_path / "ci")
    made = machine.run("token", "--user", "carol", "--name", "carol-ci")
    assert made.returncode == 0, made.stderr
    entry = made.stdout.strip().splitlines()[-1]
    server = start_signed_in_server(start_server, tmp_path, oidc, MCP_MEMORY_SECURITY__TOKENS=f"[{entry}]")

    refused = machine.run("login", server.base_url, "--token-stdin", stdin="mm_not-a-token-anyone-made\n")
    assert refused.returncode == 1 and "refused this token" in refused.stderr, refused
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr
    assert machine.state_files(server.base_url) == [], "nothing kept"

    out = machine.run("login", server.base_url, "--token-stdin", stdin=made.stdout)  # the whole output
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"signed in to {server.base_url} (a token with no expiry known here)"
    token = await access_token(machine.data_dir, server.base_url)
    assert token in made.stdout and await accepted(server, token)
    async with remote_client(machine, server) as client:
        await call(client, "add_turn", thread_id="ci", role="user", content="Carol's nightly job ran")


async def test_a_refused_refresh_signs_the_machine_out(
    start_server: ServerStarter, tmp_path: Path, oidc: OidcServer
) -> None:
    server = start_signed_in_server(start_server, tmp_path, oidc)
    machine = Machine(tmp_path / "laptop")
    await sign_in_with_browser(machine, server, oidc, "dora")
    credential = await load_credential(machine.data_dir, server.base_url)
    assert credential is not None and credential.server_metadata is not None and credential.client is not None
    async with httpx2.AsyncClient(timeout=30) as http:  # an administrator revokes the grant
        revoked = await http.post(
            str(credential.server_metadata.revocation_endpoint),
            data={"token": credential.tokens.refresh_token, "client_id": credential.client.client_id},
        )
    assert revoked.status_code == 200, revoked.text
    with pytest.raises(SignedOut, match=r"refused to renew the sign-in.*invalid_grant.*mcp-memory login"):
        await access_token(machine.data_dir, server.base_url, margin=10**6)
    await until_expired(credential.expires_at or 0)
    with pytest.raises(BaseException) as caught:  # a bridge's request: no browser answers the 401
        async with remote_client(machine, server) as client:
            await client.list_tools()
    assert signed_out(caught.value), caught.value


def signed_out(error: BaseException) -> bool:
    """SignedOut, or a task group's error with a SignedOut in it (the HTTP transport's tasks raise it)."""
    if isinstance(error, BaseExceptionGroup):
        return any(signed_out(inner) for inner in error.exceptions)
    return isinstance(error, SignedOut)


async def test_sign_in_problems_are_one_plain_line(
    start_server: ServerStarter, tmp_path: Path, oidc: OidcServer
) -> None:
    machine = Machine(tmp_path / "laptop")
    nowhere = machine.run("login", "http://127.0.0.1:9", "--no-browser")
    open_server = start_server("http", tmp_path / "open-data")  # loopback, no sign-in at all
    unprotected = machine.run("login", open_server.base_url, "--device")
    server = start_signed_in_server(start_server, tmp_path, oidc)
    async with login(machine, server.base_url, "--no-browser") as running:
        page = (await running.wait_for(r"\n  (http://\S+)\n")).group(1)
        redirect = parse_qs(urlsplit(page).query)["redirect_uri"][0]
        async with httpx2.AsyncClient(timeout=30) as http:  # the person said no at the identity provider
            answer = await http.get(redirect, params={"error": "access_denied", "state": "x"})
        assert answer.status_code == 200 and "Not signed in" in answer.text
        refused = await running.finish()
    for code, err, expected in (
        (nowhere.returncode, nowhere.stderr, "mcp-memory: cannot reach http://127.0.0.1:9/mcp"),
        (unprotected.returncode, unprotected.stderr, "does not ask for sign-in"),
        (
            refused[0],
            refused[2].split("...\n")[-1],
            "the authorization server refused the sign-in: access_denied",
        ),
    ):
        assert code == 1 and expected in err and len(err.strip().splitlines()) == 1, err
        assert "Traceback" not in err
    assert machine.state_files(server.base_url) == [], "nothing kept"


async def test_with_a_keyring_only_the_hooks_token_is_on_disk(
    start_server: ServerStarter, tmp_path: Path, oidc: OidcServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = start_signed_in_server(start_server, tmp_path, oidc)
    machine = Machine(tmp_path / "desktop", keyring_file=tmp_path / "os-keyring.json")
    line = await sign_in_with_browser(machine, server, oidc, "erin")
    assert " as erin (" in line, line
    assert machine.state_files(server.base_url) == ["token.json"]
    entries = json.loads(machine.keyring_file.read_text())  # type: ignore[union-attr]
    kept = json.loads(entries[f"{KEYRING_SERVICE}|{server.base_url}"])
    assert kept["tokens"]["refresh_token"] and kept["user"] == "erin"
    on_disk = [p for p in machine.data_dir.rglob("*") if p.is_file() and not p.name.endswith(".lock")]
    assert [p.name for p in on_disk] == ["token.json"], on_disk

    monkeypatch.setenv(login_keyring.VARIABLE, str(machine.keyring_file))
    previous = keyring.get_keyring()
    keyring.set_keyring(login_keyring.FileKeyring())
    try:
        token = await access_token(machine.data_dir, server.base_url, margin=10**6)  # refreshed, kept there
        assert await accepted(server, token)
        assert machine.state_files(server.base_url) == ["token.json"]
        assert (
            json.loads(json.loads(machine.keyring_file.read_text())[f"{KEYRING_SERVICE}|{server.base_url}"])[  # type: ignore[union-attr]
                "tokens"
            ]["access_token"]
            == token
        )
    finally:
        keyring.set_keyring(previous)

    out = machine.run("logout", server.base_url)
    assert out.returncode == 0, out.stderr
    assert json.loads(machine.keyring_file.read_text()) == {}  # type: ignore[union-attr]
    assert machine.state_files(server.base_url) == []


async def test_the_bridge_carries_a_client_session_to_the_server(
    start_server: ServerStarter, tmp_path: Path, oidc: OidcServer
) -> None:
    server = start_signed_in_server(start_server, tmp_path, oidc)
    machine = Machine(tmp_path / "laptop")
    signed_out = machine.run("serve", "--server", server.base_url)
    assert signed_out.returncode == 1, signed_out
    assert signed_out.stderr.strip() == (
        f"mcp-memory: not signed in to {server.base_url}: run `mcp-memory login {server.base_url}`"
    )

    await sign_in_with_browser(machine, server, oidc, "frank")
    errors = (tmp_path / "bridge.stderr").open("w")
    params = StdioServerParameters(
        command=mcp_memory_command(),
        args=["serve", "--server", server.base_url],
        env=machine.env(),
        cwd=machine.root,
    )
    try:
        async with Client(
            stdio_client(params, errlog=errors), read_timeout_seconds=READ_TIMEOUT_SECONDS
        ) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"add_turn", "search_memory"} <= tools
            added = await call(client, "add_turn", thread_id="t", role="user", content="Frank's bridge works")
            first = places.cached_token(machine.data_dir, server.base_url)
            assert first is not None and first.expires_at is not None
            await until_expired(
                first.expires_at
            )  # mid-session: the bridge refreshes, the client sees nothing
            found = await call(client, "search_memory", query="bridge", mode="text")
            assert [r["id"] for r in found["results"]] == [added["id"]]
        renewed = places.cached_token(machine.data_dir, server.base_url)
        assert renewed is not None and renewed.access_token != first.access_token
    finally:
        errors.close()
    assert "Traceback" not in (tmp_path / "bridge.stderr").read_text()
