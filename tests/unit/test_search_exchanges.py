"""Exchanges as hits (issue 48): search_memory's `unit`. A user's turn with its reply as one hit; an
account over time answered from exchanges oldest first; what the user brought up from their own turns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from mcp import Client

from tests.services.mcp_client import call, call_error

pytestmark = pytest.mark.anyio

START = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
CONVERSATION = [
    ("user", "Let's plan the billing migration from Braintree to Stripe."),
    ("assistant", "First export the Braintree customers, then map their plans to Stripe prices."),
    ("user", "What should the weekend hiking trip packing list hold?"),
    ("assistant", "Boots, a rain jacket, water filters and a paper map."),
    ("user", "The billing migration export is done; how do we move the subscriptions?"),
    ("assistant", "Recreate each subscription in Stripe with its billing anchor, then cancel Braintree's."),
    ("user", "Billing migration finished: every customer is on Stripe now."),
    ("assistant", "Great. Keep Braintree read-only for refunds for ninety days."),
]


async def add(client: Client) -> list[str]:
    ids = []
    for n, (role, content) in enumerate(CONVERSATION):
        at = START + timedelta(days=n // 2, minutes=n)
        out = await call(
            client, "add_turn", thread_id="t", role=role, content=content, created_at=at.isoformat()
        )
        ids.append(out["id"])
    return ids


async def test_an_exchange_hit_holds_the_turn_and_its_reply_once(client: Client) -> None:
    ids = await add(client)
    out = await call(
        client, "search_memory", query="Braintree read-only refunds", thread_id="t", unit="exchange"
    )
    top = out["results"][0]
    # The reply matched: the hit is the turn it answered, with the reply beside it.
    assert top["unit"] == "exchange" and top["id"] == ids[6] and top["reply"]["id"] == ids[7]
    assert "read-only" in top["reply"]["text"]
    heads = [hit["id"] for hit in out["results"]]
    assert len(heads) == len(set(heads)), "one hit per exchange"
    replies = [hit["reply"]["id"] for hit in out["results"] if "reply" in hit]
    assert not set(replies) & set(heads)


async def test_an_account_over_time_comes_as_exchanges_oldest_first(client: Client) -> None:
    await add(client)
    out = await call(
        client,
        "search_memory",
        query="In what order did we do the steps of the billing migration?",
        thread_id="t",
    )
    hits = out["results"]
    assert hits and all(hit.get("unit") == "exchange" for hit in hits)
    times = [hit["created_at"] for hit in hits]
    assert times == sorted(times) and out["in_time_order"] is True


async def test_what_the_user_brought_up_comes_from_their_own_turns(client: Client) -> None:
    await add(client)
    out = await call(
        client,
        "search_memory",
        query="List the order in which I brought up the billing migration steps",
        thread_id="t",
        limit=3,
    )
    assert [hit["role"] for hit in out["results"]] == ["user"] * len(out["results"]) and out["results"]
    times = [hit["created_at"] for hit in out["results"]]
    assert times == sorted(times)


async def test_other_questions_and_unit_memory_rank_memories_as_before(client: Client) -> None:
    ids = await add(client)
    plain = await call(client, "search_memory", query="Braintree read-only refunds", thread_id="t")
    assert plain["results"][0]["id"] == ids[7] and "unit" not in plain["results"][0]
    assert "in_time_order" not in plain  # best first
    forced = await call(
        client, "search_memory", query="In what order did we migrate billing?", thread_id="t", unit="memory"
    )
    assert all("reply" not in hit for hit in forced["results"])


async def test_a_bad_unit_is_named(client: Client) -> None:
    assert "unit" in await call_error(client, "search_memory", query="billing", unit="sentence")
