"""The issuer's keys: fetched once, re-read for a new kid at most once per floor (rotation works, a flood
of made-up kids costs the identity provider nothing), kept when it is down; and the claim rules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_memory.config import SecuritySettings, Settings
from mcp_memory.security.oauth.claims import ClaimRules
from mcp_memory.security.oauth.issuer import InvalidToken, Issuer, discovery_urls
from mcp_memory.security.oauth.tokens import JwtVerifier
from tests.services.local_issuer import LocalIssuer, local_issuer

pytestmark = pytest.mark.anyio

RESOURCE = "https://memory.example.com/mcp"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def served() -> Iterator[LocalIssuer]:
    with local_issuer() as issuer:
        yield issuer


def verifier_for(issuer: LocalIssuer, tmp_path: Path, clock: Clock, **security: object) -> JwtVerifier:
    settings = Settings(
        user_id="tester",
        data_dir=tmp_path,
        security=SecuritySettings(
            authorization_server=issuer.url, resource_url=RESOURCE, jwks_refetch_seconds=30, **security
        ),
    )
    return JwtVerifier(settings, Issuer(settings.security, clock=clock))


async def test_a_flood_of_unknown_kids_reads_the_keys_once_per_floor(
    served: LocalIssuer, tmp_path: Path
) -> None:
    clock = Clock()
    verifier = verifier_for(served, tmp_path, clock)
    token = served.mint(served.claims(RESOURCE))
    assert (await verifier.verify(token)).subject == "ann"
    assert served.jwks_requests == 1
    for _ in range(3):
        await verifier.verify(token)
    assert served.jwks_requests == 1, "known keys are cached"

    strangers = [LocalIssuer().keys[0] for _ in range(5)]
    clock.now += 31  # past the floor: the first unknown kid may re-read the keys, the rest may not

    async def forged(i: int) -> None:
        with pytest.raises(InvalidToken, match="not one of the issuer's keys"):
            await verifier.verify(served.mint(served.claims(RESOURCE), key=strangers[i % 5]))

    async with anyio.create_task_group() as tasks:
        for i in range(50):
            tasks.start_soon(forged, i)
    assert served.jwks_requests == 2, "50 unknown kids at once: one re-read"
    for key in strangers:
        with pytest.raises(InvalidToken):
            await verifier.verify(served.mint(served.claims(RESOURCE), key=key))
    assert served.jwks_requests == 2, "within the floor: no re-read"


async def test_a_rotated_key_is_picked_up_at_once(served: LocalIssuer, tmp_path: Path) -> None:
    clock = Clock()
    verifier = verifier_for(served, tmp_path, clock)
    old = served.mint(served.claims(RESOURCE))
    await verifier.verify(old)
    clock.now += 31
    served.rotate()
    rotated = served.mint(served.claims(RESOURCE))
    assert (await verifier.verify(rotated)).subject == "ann"
    assert served.jwks_requests == 2
    with pytest.raises(InvalidToken):
        await verifier.verify(old)  # the old key left the set


async def test_keys_held_keep_working_while_the_issuer_is_down(tmp_path: Path) -> None:
    clock = Clock()
    with local_issuer() as issuer:
        verifier = verifier_for(issuer, tmp_path, clock)
        token = issuer.mint(issuer.claims(RESOURCE))
        await verifier.verify(token)
    clock.now += 4000  # past jwks_cache_seconds: a re-read is due, and fails
    assert (await verifier.verify(token)).subject == "ann"


async def test_an_es256_token_verifies_and_an_alg_outside_the_list_does_not(
    served: LocalIssuer, tmp_path: Path
) -> None:
    clock = Clock()
    ec_token = served.mint(served.claims(RESOURCE), key=served.keys[1])
    assert (await verifier_for(served, tmp_path, clock).verify(ec_token)).scopes == ["read", "write"]
    rs_only = verifier_for(served, tmp_path, clock, algorithms=["RS256"])
    with pytest.raises(InvalidToken, match="'ES256' are not accepted"):
        await rs_only.verify(ec_token)


async def test_a_token_for_another_resource_is_refused_and_a_listed_audience_accepted(
    served: LocalIssuer, tmp_path: Path
) -> None:
    clock = Clock()
    other = served.mint(served.claims("api://another-app"))
    with pytest.raises(InvalidToken, match="another resource"):
        await verifier_for(served, tmp_path, clock).verify(other)
    listed = verifier_for(served, tmp_path, clock, audiences=["api://another-app"])
    assert (await listed.verify(other)).subject == "ann"


def test_claim_rules_read_the_user_and_scopes_as_configured() -> None:
    default = ClaimRules()
    assert default.user_id({"sub": "ann"}) == "ann"
    hashed = default.user_id({"sub": "auth0|ann@example.com"})
    assert (
        hashed.startswith("u-")
        and len(hashed) == 42
        and hashed == default.user_id({"sub": "auth0|ann@example.com"})
    )
    with pytest.raises(InvalidToken, match="no sub claim"):
        default.user_id({"oid": "x"})
    assert default.scopes({"scope": "openid read write other"}) == {"read", "write"}
    entra = ClaimRules(
        user_claims=("tid", "oid"),
        scope_claims=("scp", "roles"),
        scope_prefix="memory.",
        scope_request_prefix="https://memory.example.com/mcp/",
    )
    assert entra.user_id({"tid": "t1", "oid": "o1", "sub": "pairwise"}) == "t1:o1"
    assert entra.scopes({"scp": "memory.read", "roles": ["memory.admin", "read"]}) == {"read", "admin"}
    assert entra.scopes({"scp": "https://memory.example.com/mcp/memory.write"}) == {"write"}
    assert entra.requested(("read", "write")) == (
        "https://memory.example.com/mcp/memory.read https://memory.example.com/mcp/memory.write"
    )


def test_metadata_is_looked_for_where_clients_look() -> None:
    assert discovery_urls("https://login.microsoftonline.com/tid/v2.0") == [
        "https://login.microsoftonline.com/.well-known/oauth-authorization-server/tid/v2.0",
        "https://login.microsoftonline.com/tid/v2.0/.well-known/openid-configuration",
        "https://login.microsoftonline.com/.well-known/openid-configuration/tid/v2.0",
    ]
    assert discovery_urls("http://127.0.0.1:4000") == [
        "http://127.0.0.1:4000/.well-known/oauth-authorization-server",
        "http://127.0.0.1:4000/.well-known/openid-configuration",
    ]
