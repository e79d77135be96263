"""Bearer tokens on the real server process: who gets in, who does not, and what the server refuses."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx2
import pytest

from mcp_memory.config import SecuritySettings, Settings, TokenEntry, load_tokens
from mcp_memory.errors import ConfigError
from mcp_memory.security.exposure import check_exposure
from mcp_memory.security.static_tokens import HashedTokenVerifier, hash_token
from tests.security.bearer import bearer_client, challenge, credential, start_with_tokens
from tests.services.mcp_client import call
from tests.services.server_process import START_SECONDS, ServerStarter, mcp_memory_command, server_env

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


async def _post_initialize(url: str, token: str | None) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(url, headers=headers, content=json.dumps(INITIALIZE))


async def test_missing_invalid_and_expired_tokens_are_refused(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    good, expired = credential("ann"), credential("ann", expired=True)
    server = start_with_tokens(start_server, tmp_path, [good, expired])
    for token in (None, "not-a-configured-token", expired.token, good.token + "x", hash_token(good.token)):
        response = await _post_initialize(server.url, token)
        assert response.status_code == 401, (token, response.status_code)
        # RFC 6750 section 3.1: an error code only when a token was sent; always the scope to ask for.
        params = challenge(response)
        assert params.get("error") == (None if token is None else "invalid_token"), token
        assert params["scope"] == "read write"
    accepted = await _post_initialize(server.url, good.token)
    assert accepted.status_code == 200
    async with bearer_client(server, good.token) as client:
        added = await call(client, "add_turn", thread_id="t", role="user", content="let in")
        working = await call(client, "get_working_memory", thread_id="t")
        assert [(m["id"], m["content"]) for m in working["messages"]] == [(added["id"], "let in")]
    assert good.token not in server.stderr(), "a token reached the log"


async def test_health_and_readiness_answer_without_a_token(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    server = start_with_tokens(start_server, tmp_path, [credential("ann")])
    async with httpx2.AsyncClient(timeout=30) as http:
        health = await http.get(f"{server.base_url}/health")
        ready = await http.get(f"{server.base_url}/ready")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert ready.status_code == 200, ready.text
    assert ready.json() == {
        "status": "ready",
        "backends": {"working memory (sqlite)": "ok", "long term (sqlite)": "ok"},
    }


async def test_a_session_is_bound_to_the_token_that_opened_it(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    ann, bob = credential("ann"), credential("bob")
    server = start_with_tokens(start_server, tmp_path, [ann, bob])
    opened = await _post_initialize(server.url, ann.token)
    session = opened.headers["mcp-session-id"]
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {bob.token}",
        "mcp-session-id": session,
    }
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    async with httpx2.AsyncClient(timeout=30) as http:
        hijack = await http.post(server.url, headers=headers, content=json.dumps(listing))
    assert hijack.status_code == 404


def test_tokens_file_is_read_and_only_hashes_are_kept(tmp_path: Path) -> None:
    entry = {"sha256": hash_token("s3cret"), "user_id": "ann", "name": "ann-laptop", "scopes": ["read"]}
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tokens": [entry]}))
    entries = load_tokens(SecuritySettings(tokens_file=path))
    assert [(e.user_id, e.scopes) for e in entries] == [("ann", ["read"])]
    path.write_text(json.dumps({"tokens": [{"token": "s3cret", "user_id": "ann"}]}))
    with pytest.raises(ConfigError, match="tokens_file"):
        load_tokens(SecuritySettings(tokens_file=path))
    duplicate = TokenEntry(sha256=hash_token("x"), user_id="ann")
    with pytest.raises(ConfigError, match="twice"):
        load_tokens(SecuritySettings(tokens=[duplicate, duplicate]))


async def test_the_verifier_maps_a_token_to_its_principal() -> None:
    verifier = HashedTokenVerifier([TokenEntry(sha256=hash_token("t0k"), user_id="ann", name="laptop")])
    access = await verifier.verify_token("t0k")
    assert access is not None and access.subject == "ann" and access.client_id == "laptop"
    assert "t0k" not in access.token
    assert await verifier.verify_token("t0k ") is None


def test_a_public_address_without_tokens_is_refused(settings: Settings) -> None:
    with pytest.raises(ConfigError, match="without authentication"):
        check_exposure(settings, "http", "0.0.0.0")
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        check_exposure(settings, "http", host)
    check_exposure(settings, "stdio", "0.0.0.0")
    overridden = settings.model_copy(
        update={"security": SecuritySettings(allow_unauthenticated_network=True)}
    )
    check_exposure(overridden, "sse", "0.0.0.0")
    with_tokens = settings.model_copy(
        update={"security": SecuritySettings(tokens=[TokenEntry(sha256=hash_token("x"), user_id="ann")])}
    )
    check_exposure(with_tokens, "http", "0.0.0.0")


def test_the_real_server_refuses_to_start_on_a_public_address_without_auth(tmp_path: Path) -> None:
    result = subprocess.run(
        [mcp_memory_command(), "serve", "--transport", "http", "--host", "0.0.0.0", "--port", "0"],
        env=server_env(tmp_path / "data"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=START_SECONDS,
        check=False,
    )
    assert result.returncode == 1
    assert "refusing to serve http on 0.0.0.0 without authentication" in result.stderr
