"""Identity-provider tokens on the real server process: each bad token gets its status and challenge,
and nothing is written; Entra ID shapes (v1 and v2, tid/oid, scp and roles) are accepted as configured.

The tokens are signed by the tests' own issuer (tests/services/local_issuer.py), whose metadata and
keys the server fetches over HTTP like any identity provider's; the sign-in flows themselves run
against a real authorization server in test_oauth_flows.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.security.bearer import UNMETERED, bearer_client, challenge, credential, post_tool_call, tokens_env
from tests.services.local_issuer import LocalIssuer, local_issuer
from tests.services.mcp_client import call
from tests.services.server_process import NetworkServer, ServerStarter

pytestmark = pytest.mark.anyio

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
OBJECT_ID = "b1a3c6de-0f2a-4c4b-9d8e-4a1f5a7e9c01"
API_CLIENT_ID = "5e3b7a6c-1d2f-4e8a-9b0c-7f6e5d4c3b2a"


@pytest.fixture
def issuer() -> Iterator[LocalIssuer]:
    with local_issuer() as served:
        yield served


def oauth_env(issuer: LocalIssuer, **extra: str) -> dict[str, str]:
    return {
        "MCP_MEMORY_SECURITY__AUTHORIZATION_SERVER": issuer.url,
        "MCP_MEMORY_SECURITY__RESOURCE_URL": "http://127.0.0.1:{port}/mcp",
        **UNMETERED,
        **extra,
    }


def _segments_swapped(token: str, claims: dict[str, object]) -> str:
    """The same header and signature around another payload: a tampered token."""
    import base64

    head, _, signature = token.split(".")
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{body}.{signature}"


def bad_tokens(issuer: LocalIssuer, audience: str) -> dict[str, str]:
    now = int(time.time())
    claims = issuer.claims(audience)
    stranger = LocalIssuer()  # keys nobody published
    return {
        "expired": issuer.mint(issuer.claims(audience, exp=now - 3600, iat=now - 7200, nbf=now - 7200)),
        "not yet valid": issuer.mint(issuer.claims(audience, nbf=now + 3600, iat=now)),
        "wrong issuer": issuer.mint(issuer.claims(audience, iss="https://login.example.com/other")),
        "wrong audience": issuer.mint(issuer.claims("https://another-resource.example.com/mcp")),
        "unknown kid": issuer.mint(claims, key=stranger.keys[0]),
        "tampered payload": _segments_swapped(issuer.mint(claims), {**claims, "sub": "bob"}),
        "alg none": LocalIssuer.unsigned(claims, kid=issuer.keys[0].kid),
        "HS256 with the public key": issuer.hmac_with_public_key(claims),
        "malformed": "eyJhbGciOi.not-base64!.x",
        "100 KB": "a" * 100_000,
        "no sub": issuer.mint(issuer.claims(audience, sub=None)),
        "no exp": issuer.mint(issuer.claims(audience, exp=None)),
    }


async def _nothing_written(server: NetworkServer, issuer: LocalIssuer) -> None:
    good = issuer.mint(issuer.claims(server.url))
    async with bearer_client(server, good) as client:
        assert (await call(client, "search_memory", query="intruder", mode="text"))["results"] == []
        assert (await call(client, "list_memories"))["memories"] == []


async def test_every_bad_token_gets_401_invalid_token_and_writes_nothing(
    start_server: ServerStarter, tmp_path: Path, issuer: LocalIssuer
) -> None:
    server = start_server("http", tmp_path / "data", oauth_env(issuer))
    metadata = f"{server.base_url}/.well-known/oauth-protected-resource/mcp"
    tokens = bad_tokens(issuer, server.url)
    for name, token in tokens.items():
        arguments = {"thread_id": "t", "role": "user", "content": f"intruder {name}"}
        refused = await post_tool_call(server.url, token, "add_turn", arguments)
        assert refused.status_code == 401, (name, refused.status_code, refused.text)
        params = challenge(refused)
        assert params["error"] == "invalid_token", name
        assert params["resource_metadata"] == metadata, name
        assert params["scope"] == "read write", name
        assert params["error_description"], name
    for header in (None, "Basic YW5uOnNlY3JldA==", "Bearer"):
        refused = await post_tool_call(server.url, None, "add_turn", {"thread_id": "t"}, authorization=header)
        assert refused.status_code == 401, header
        # No token sent (or not as a bearer): RFC 6750 section 3.1 says no error code.
        assert challenge(refused) == {"resource_metadata": metadata, "scope": "read write"}, header
    await _nothing_written(server, issuer)
    log = server.stderr()
    assert "refused a bearer token" in log
    for name, token in tokens.items():
        if name != "100 KB":
            assert token[-24:] not in log, f"the {name} token reached the log"


async def test_a_read_only_token_gets_403_with_the_scopes_to_step_up_to(
    start_server: ServerStarter, tmp_path: Path, issuer: LocalIssuer
) -> None:
    server = start_server("http", tmp_path / "data", oauth_env(issuer))
    reader = issuer.mint(issuer.claims(server.url, scope="read"))
    arguments = {"thread_id": "t", "role": "user", "content": "intruder from a reader"}
    refused = await post_tool_call(server.url, reader, "add_turn", arguments)
    assert refused.status_code == 403
    params = challenge(refused)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "read write"  # every scope the call needs, in one challenge
    assert params["resource_metadata"] == f"{server.base_url}/.well-known/oauth-protected-resource/mcp"
    admin = await post_tool_call(server.url, reader, "forget_user", {"user_id": "bob"})
    assert admin.status_code == 403 and challenge(admin)["scope"] == "read write admin"
    async with bearer_client(server, reader) as client:  # and what it may do, it does
        assert (await call(client, "search_memory", query="anything"))["results"] == []
    await _nothing_written(server, issuer)


async def test_the_metadata_names_the_resource_and_the_issuer(
    start_server: ServerStarter, tmp_path: Path, issuer: LocalIssuer
) -> None:
    import httpx2

    server = start_server("http", tmp_path / "data", oauth_env(issuer))
    # Discovered and keys read at start, so a wrong issuer shows in the log before anyone signs in.
    assert issuer.jwks_requests == 1
    assert "metadata and 2 signing key(s) read" in server.stderr()
    async with httpx2.AsyncClient(timeout=30) as http:
        for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
            document = (await http.get(server.base_url + path)).json()
            assert document == {
                "resource": server.url,  # no trailing slash
                "authorization_servers": [issuer.url],
                "scopes_supported": ["read", "write"],
                "bearer_methods_supported": ["header"],
                "resource_name": "mcp-memory",
            }
        health = await http.get(server.base_url + "/health")
        assert health.status_code == 200  # unprotected, like the metadata


async def test_two_users_of_one_issuer_see_only_their_own_memories(
    start_server: ServerStarter, tmp_path: Path, issuer: LocalIssuer
) -> None:
    # A static token works beside the issuer's: one principal model, two verifiers.
    static_bob = credential("bob")
    env = oauth_env(
        issuer, MCP_MEMORY_SECURITY__TOKENS=tokens_env([static_bob])["MCP_MEMORY_SECURITY__TOKENS"]
    )
    server = start_server("http", tmp_path / "data", env)
    ann = issuer.mint(issuer.claims(server.url, sub="ann"))
    bob = issuer.mint(issuer.claims(server.url, sub="bob"))
    async with bearer_client(server, static_bob.token) as client:
        await call(
            client, "add_turn", thread_id="boat", role="user", content="bob's boat through a static token"
        )
    async with bearer_client(server, ann) as client:
        await call(client, "add_turn", thread_id="plans", role="user", content="ann's secret plan")
    async with bearer_client(server, bob) as client:
        assert (await call(client, "search_memory", query="secret plan", mode="text"))["results"] == []
        assert [m["thread_id"] for m in (await call(client, "list_memories"))["memories"]] == ["boat"]
    async with bearer_client(server, ann) as client:
        assert len((await call(client, "search_memory", query="secret plan", mode="text"))["results"]) == 1
        assert (await call(client, "search_memory", query="boat", mode="text"))["results"] == []
    async with bearer_client(server, bob) as client:  # the same user, whichever verifier let him in
        found = await call(client, "search_memory", query="boat", mode="text")
        assert [r["content"] for r in found["results"]] == ["bob's boat through a static token"]


@pytest.mark.parametrize("version", ["v1", "v2"])
async def test_entra_id_tokens_name_the_user_by_tenant_and_object_id(
    start_server: ServerStarter, tmp_path: Path, version: str
) -> None:
    # Entra ID: v1 tokens come from https://sts.windows.net/{tid}/ with the App ID URI as aud; v2 from
    # https://login.microsoftonline.com/{tid}/v2.0 with the API's client id as aud. sub is pairwise.
    path = f"/{TENANT}/v2.0"
    with local_issuer(path) as entra:
        v1_issuer = f"{entra.base}/{TENANT}/"
        env = oauth_env(
            entra,
            MCP_MEMORY_SECURITY__ISSUERS=json.dumps([entra.url, v1_issuer]),
            MCP_MEMORY_SECURITY__AUDIENCES=json.dumps([API_CLIENT_ID]),
            MCP_MEMORY_SECURITY__USER_CLAIMS='["tid", "oid"]',
            MCP_MEMORY_SECURITY__SCOPE_CLAIMS='["scp", "roles"]',
            MCP_MEMORY_SECURITY__SCOPE_PREFIX="memory.",
        )
        server = start_server("http", tmp_path / "data", env)
        common = {"tid": TENANT, "oid": OBJECT_ID, "scope": None, "client_id": None}
        if version == "v1":
            claims = entra.claims(
                server.url,
                iss=v1_issuer,
                sub="pairwise-1",
                appid="app",
                scp="memory.read memory.write",
                **common,
            )
        else:
            claims = entra.claims(
                API_CLIENT_ID,
                sub="pairwise-2",
                azp="app",
                scp="memory.read memory.write",
                ver="2.0",
                **common,
            )
        async with bearer_client(server, entra.mint(claims)) as client:
            added = await call(client, "add_turn", thread_id="t", role="user", content="from entra")
            working = await call(client, "get_working_memory", thread_id="t")
            assert [(m["id"], m["content"]) for m in working["messages"]] == [(added["id"], "from entra")]
        # The same person through the other token version (another sub): the same memories.
        app_role = entra.claims(server.url, **{**common, "roles": ["memory.read"], "sub": "pairwise-3"})
        async with bearer_client(server, entra.mint(app_role)) as client:
            found = await call(client, "search_memory", query="entra", mode="text")
            assert [r["content"] for r in found["results"]] == ["from entra"]
        refused = await post_tool_call(server.url, entra.mint(app_role), "add_turn", {"thread_id": "t"})
        assert refused.status_code == 403 and challenge(refused)["scope"] == "memory.read memory.write"


async def test_an_unreachable_issuer_is_logged_at_start_and_requests_get_503_with_retry_after(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    with local_issuer() as gone:
        address = gone.url
    server = start_server("http", tmp_path / "data", oauth_env(gone))
    assert f"the identity provider {address} cannot be read yet" in server.stderr()
    token = gone.mint(gone.claims(server.url))
    refused = await post_tool_call(server.url, token, "search_memory", {"query": "x"})
    assert refused.status_code == 503 and refused.headers["retry-after"]


async def test_an_idp_group_in_the_token_makes_its_holder_a_space_member(
    start_server: ServerStarter, tmp_path: Path, issuer: LocalIssuer
) -> None:
    # Entra ID puts security-group object ids in "groups" and app roles in "roles": both may name members.
    group, role = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", "Memory.Team"
    spaces = [{"name": "team", "members": {f"group:{group}": "writer", f"group:{role}": "reader"}}]
    env = oauth_env(
        issuer,
        MCP_MEMORY_SECURITY__SPACES=json.dumps(spaces),
        MCP_MEMORY_SECURITY__GROUP_CLAIMS='["groups", "roles"]',
    )
    server = start_server("http", tmp_path / "data", env)
    writer = issuer.mint(issuer.claims(server.url, sub="ann", groups=[group, "another-group"]))
    reader = issuer.mint(issuer.claims(server.url, sub="rita", roles=[role]))
    outsider = issuer.mint(issuer.claims(server.url, sub="nora", groups=["another-group"]))
    async with bearer_client(server, writer) as client:
        added = await call(
            client, "add_turn", thread_id="t", role="user", content="staging is 5439", space="team"
        )
        read = await client.read_resource(f"memory://memories/{added['id']}")  # add_turn answers the id
        stored = json.loads(read.contents[0].text)  # type: ignore[union-attr]
        assert (stored["space"], stored["author"]) == ("team", "ann")
    async with bearer_client(server, reader) as client:
        found = await call(client, "list_memories", space="team")
        assert [(m["content"], m["author"]) for m in found["memories"]] == [("staging is 5439", "ann")]
        refused = await client.call_tool(
            "add_turn", {"thread_id": "t", "role": "user", "content": "x", "space": "team"}
        )
        assert refused.is_error and "needs the writer role" in refused.content[0].text  # type: ignore[union-attr]
    async with bearer_client(server, outsider) as client:
        refused = await client.call_tool("list_memories", {"space": "team"})
        assert refused.is_error and "no space 'team'" in refused.content[0].text  # type: ignore[union-attr]
        assert (await call(client, "search_memory", query="staging", mode="text"))["results"] == []
