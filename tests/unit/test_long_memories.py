"""A long turn through the MCP surface (a real in-process client): stored whole, found by the passage that
holds the answer, shown by that passage, fitted into max_tokens by it, and forgotten with all of it."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from tests.services.mcp_client import call
from tests.unit.test_passages import LONG

pytestmark = pytest.mark.anyio


async def test_a_long_turn_is_found_and_shown_by_its_matching_passage(client: Client) -> None:
    turn = await call(client, "add_turn", thread_id="ops", role="assistant", content=LONG)
    await call(client, "add_turn", thread_id="ops", role="user", content="Thanks, noted.")
    found = await call(client, "search_memory", query="how often does the staging password rotate?")
    top = found["results"][0]
    assert top["id"] == turn["id"]
    assert "content" not in top  # the part that matched, not the whole memory
    passage = top["passage"]
    assert "rotates every 45 days" in passage["text"]
    assert LONG[passage["start"] : passage["end"]] == passage["text"]
    assert passage["start"] > 0 and len(passage["text"]) < len(LONG) / 3
    whole = await call(client, "search_memory", query="staging password rotation", full_content=True)
    assert whole["results"][0]["content"] == LONG  # asked for whole
    assert set(whole["results"][0]["passage"]) == {"start", "end"}  # the text is in content

    fitted = await call(client, "search_memory", query="staging password rotation", max_tokens=120, limit=1)
    shown = fitted["results"][0]
    assert shown["snippet"] and shown["token_count"] > 120  # the whole memory's count
    assert "rotat" in shown["content"] and shown["content"].strip("…") in LONG  # the match, not the opening

    whole = await client.read_resource(f"memory://memories/{turn['id']}")
    assert json.loads(whole.contents[0].text)["content"] == LONG  # type: ignore[union-attr]


async def test_forgetting_a_long_turn_removes_every_passage(client: Client) -> None:
    turn = await call(client, "add_turn", thread_id="ops", role="assistant", content=LONG)
    await call(client, "add_turn", thread_id="ops", role="user", content="Loki keeps logs how long?")
    await call(client, "forget", memory_id=turn["id"])
    for query in ("staging password rotates", "Kubernetes cluster in Frankfurt", "React app built with Vite"):
        results = (await call(client, "search_memory", query=query))["results"]
        assert turn["id"] not in {r["id"] for r in results}
