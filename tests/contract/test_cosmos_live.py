"""The whole long-term contract, hybrid search included, against a real Azure Cosmos DB account.

Runs only when COSMOS_ENDPOINT is set; skipped (saying so) otherwise: it needs a paid cloud account.
  COSMOS_ENDPOINT  https://<account>.documents.azure.com:443/
  COSMOS_KEY       the account key; unset = Microsoft Entra ID (DefaultAzureCredential). With Entra ID the
                   database must exist already (data-plane roles cannot create databases): name it in
                   COSMOS_DATABASE. With a key and no COSMOS_DATABASE, a database is created for the
                   session and deleted at its end.
The account needs the 'Vector Search for NoSQL API' and 'Full Text & Hybrid Search for NoSQL API' features.
Every contract test below is the one in test_long_term_contract.py or test_passages_contract.py, with
both store fixtures pointed here.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest
from pydantic import SecretStr

from mcp_memory.config import CosmosSettings
from mcp_memory.models import Memory
from mcp_memory.storage.base import LongTermStore
from tests.contract import test_long_term_contract as contract
from tests.contract import test_passages_contract as passages_contract
from tests.contract.conftest_long_term import embed, open_cosmos

pytestmark = [
    pytest.mark.live_azure,
    pytest.mark.anyio,
    pytest.mark.skipif(
        not os.environ.get("COSMOS_ENDPOINT"),
        reason="live Azure Cosmos DB suite skipped: set COSMOS_ENDPOINT (and COSMOS_KEY, or sign in for "
        "Entra ID)",
    ),
]

# The contracts' tests (passages too), collected again here with this module's fixtures.
for _module in (contract, passages_contract):
    globals().update({name: test for name, test in vars(_module).items() if name.startswith("test_")})


@pytest.fixture(scope="session")
def live_settings() -> Iterator[CosmosSettings]:
    key = os.environ.get("COSMOS_KEY")
    named = os.environ.get("COSMOS_DATABASE")
    settings = CosmosSettings(
        endpoint=os.environ["COSMOS_ENDPOINT"],
        key=SecretStr(key) if key else None,
        database=named or f"mcp_memory_test_{uuid.uuid4().hex[:8]}",
        timeout_seconds=30.0,
    )
    yield settings
    if not named and key:
        from azure.cosmos import CosmosClient  # the sync client: session teardown runs outside an event loop

        CosmosClient(settings.endpoint or "", key).delete_database(settings.database)


@pytest.fixture
async def long_term_store(live_settings: CosmosSettings) -> AsyncIterator[LongTermStore]:
    async with open_cosmos(live_settings) as store:
        yield store


@pytest.fixture
async def search_store(live_settings: CosmosSettings) -> AsyncIterator[LongTermStore]:
    async with open_cosmos(live_settings) as store:
        yield store


async def test_turns_expire_with_their_ttl(live_settings: CosmosSettings) -> None:
    settings = live_settings.model_copy(update={"turn_ttl_seconds": 2})
    user = f"u-{uuid.uuid4().hex[:12]}"
    async with open_cosmos(settings) as store:
        await store.put(
            [
                Memory(id="turn1", user_id=user, thread_id="t1", role="user", content="short-lived"),
                Memory(id="fact1", user_id=user, type="fact", content="kept"),
            ]
        )
        # Expired items stop being returned once their ttl passes; poll for that, bounded. Nothing to
        # wait on but time here, hence the sleep between polls.
        with anyio.fail_after(120):
            while await store.recent(user, "t1", limit=5):  # noqa: ASYNC110
                await anyio.sleep(1)
        assert (await store.get(user, "fact1")).content == "kept"


async def test_hybrid_search_runs_on_the_service(search_store: LongTermStore) -> None:
    """The full-text and vector queries of both sides are accepted by the service (the SQL-text tests
    cannot show that), and ranked as on every backend."""
    user = f"u-{uuid.uuid4().hex[:12]}"
    await contract.seed_search(search_store, user)
    text = "bicycle chain " + " ".join(f"w{i}" for i in range(40))

    hits = await search_store.search(
        user, contract.search_query(text, text_weight=2.0, vector_weight=0.5), embed("bicycle chain")
    )

    assert hits[0].memory.id == "repair"
