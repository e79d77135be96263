"""The revision and trigger-counter contracts against a real Azure Cosmos DB account.

Runs only when COSMOS_ENDPOINT is set (see test_cosmos_live.py for the variables); skipped, saying so,
otherwise: it needs a paid cloud account. similar() (VectorDistance) runs live in test_cosmos_live.py,
which collects the whole long-term contract.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from mcp_memory.config import CosmosSettings
from mcp_memory.storage.learning_base import RevisionStore, TriggerCounters
from tests.contract import test_counters_contract as counters_contract
from tests.contract import test_revisions_contract as revisions_contract
from tests.contract.conftest_long_term import open_cosmos
from tests.contract.test_cosmos_live import live_settings  # noqa: F401  # the session's live database

pytestmark = [
    pytest.mark.live_azure,
    pytest.mark.anyio,
    pytest.mark.skipif(
        not os.environ.get("COSMOS_ENDPOINT"),
        reason="live Azure Cosmos DB suite skipped: set COSMOS_ENDPOINT (and COSMOS_KEY, or sign in for "
        "Entra ID)",
    ),
]

# The contracts' backend-neutral tests (not the Cosmos- or Redis-only ones), collected again here with
# this module's fixtures.
globals().update(
    {
        name: test
        for module in (revisions_contract, counters_contract)
        for name, test in vars(module).items()
        if name.startswith("test_") and "cosmos" not in name and "redis" not in name
    }
)


@pytest.fixture
async def revision_store(live_settings: CosmosSettings) -> AsyncIterator[RevisionStore]:  # noqa: F811
    from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore
    from mcp_memory.storage.cosmos.revisions import CosmosRevisionStore

    async with open_cosmos(live_settings) as store:
        assert isinstance(store, CosmosLongTermStore)
        yield CosmosRevisionStore(
            await store.open_learning_container(),
            store.usage,
            timeout_seconds=live_settings.timeout_seconds,
        )


@pytest.fixture
async def counters(live_settings: CosmosSettings) -> AsyncIterator[TriggerCounters]:  # noqa: F811
    from mcp_memory.storage.cosmos.counters import CosmosTriggerCounters
    from mcp_memory.storage.cosmos.long_term import CosmosLongTermStore

    async with open_cosmos(live_settings) as store:
        assert isinstance(store, CosmosLongTermStore)
        yield CosmosTriggerCounters(
            await store.open_learning_container(), timeout_seconds=live_settings.timeout_seconds
        )
