"""Two principals on one real server over streamable HTTP with real bearer tokens: every tool, resource
and prompt is tried by one against the other's thread ids, memory ids and words. Nothing of the
other comes back, and nothing of the other changes."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_memory.models import short_id
from tests.security.bearer import bearer_client, challenge, credential, post_tool_call, start_with_tokens
from tests.services.mcp_client import call
from tests.services.server_process import ServerStarter

pytestmark = pytest.mark.anyio


def _texts(result: Any) -> list[str]:
    """Everything a client can read in a result: text contents and structured content."""
    texts = [getattr(c, "text", "") or "" for c in getattr(result, "content", None) or []]
    texts += [getattr(c, "text", "") or "" for c in getattr(result, "contents", None) or []]
    texts += [getattr(m.content, "text", "") or "" for m in getattr(result, "messages", None) or []]
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        texts.append(json.dumps(structured))
    return texts


async def _export_body(client: Client) -> list[dict[str, Any]]:
    """The user's stored state as export lines, without the header (its time changes)."""
    lines = (await call(client, "export_memories"))["jsonl"].splitlines()
    return [json.loads(line) for line in lines[1:]]


async def _ann_writes(client: Client, secret: str) -> dict[str, Any]:
    ids: dict[str, Any] = {"turns": []}
    for i in range(4):
        added = await call(
            client, "add_turn", thread_id="ann-only", role="user", content=f"{secret} note {i}"
        )
        ids["turns"].append(added["id"])
    shared = await call(client, "add_turn", thread_id="shared", role="user", content=f"{secret} in shared")
    ids["turns"].append(shared["id"])
    await call(client, "summarize_thread", thread_id="ann-only", keep_recent=1)
    ids["summary"] = "summary_ann_ann-only"
    tools = {t.name for t in (await client.list_tools()).tools}
    if "remember" in tools:
        fact = await client.call_tool("remember", {"content": f"Ann keeps a {secret} in the garden"})
        if not fact.is_error and fact.structured_content:
            ids["fact"] = fact.structured_content.get("memory", fact.structured_content).get("id")
            history = await call(client, "memory_history", memory_id=ids["fact"])
            ids["revision"] = history["revisions"][0]["id"]
    if "create_entities" in tools:
        ids["entity"] = "Garden"  # her words are in its observation; bob names it as she does
        entity = {"name": ids["entity"], "entityType": "place", "observations": [f"{secret} roses"]}
        await call(client, "create_entities", entities=[entity])
        relation = {"from": ids["entity"], "to": "Ann", "relationType": "belongs to"}
        await call(client, "create_relations", relations=[relation])
    return ids


def _bob_attempts(secret: str, ann: dict[str, Any], ann_export: str) -> dict[str, list[dict[str, Any]]]:
    """Per tool, the calls the other principal makes with ann's ids, thread names and words."""
    turn, fact = ann["turns"][0], ann.get("fact", ann["turns"][1])
    entity = ann.get("entity", "Garden")  # ann's entity: bob names it (her words are in what it holds)
    # A file naming ann, with ann's memory ids, imported by the other principal (her words removed,
    # so that anything of hers the other then reads can only have come from her store).
    forged = ann_export.replace(secret, "bobword")
    return {
        "add_turn": [{"thread_id": "ann-only", "role": "user", "content": "bob writes here"}],
        "search_memory": [
            {"query": secret},
            {"query": secret, "thread_id": "ann-only", "mode": "text"},
            {"query": f"{secret} note", "mode": "vector", "types": ["turn", "summary", "fact"]},
        ],
        "timeline": [
            {},
            {"thread_id": "ann-only"},
            {"query": secret, "max_tokens": 8000},
            {"query": secret, "thread_id": "ann-only", "since": "2000-01-01T00:00:00Z"},
        ],
        "get_working_memory": [{"thread_id": "ann-only"}, {"thread_id": "shared"}],
        "summarize_thread": [{"thread_id": "ann-only"}, {"thread_id": "shared", "keep_recent": 0}],
        "set_thread_data": [
            {"thread_id": "ann-only", "data": {"bob": "was here"}},
            {"thread_id": "shared", "data": {}},
        ],
        "forget": [
            {"memory_id": turn},
            {"memory_id": ann["summary"]},
            {"memory_id": fact},
            {"thread_id": "shared"},
            {"everything": True, "dry_run": True},
        ],
        "export_memories": [{}],
        "import_memories": [{"jsonl": forged}],
        "forget_user": [{"user_id": "ann"}, {"user_id": "ann", "dry_run": True}],
        "remember": [{"content": f"bob also knows {secret}"}],
        "update_memory": [{"memory_id": fact, "content": "bob overwrote this"}],
        "memory_history": [{"memory_id": fact}, {"memory_id": turn}],
        "rollback_memory": [{"memory_id": fact, "revision_id": ann.get("revision", "rev_x")}],
        "extract_memories": [{"thread_id": "ann-only"}],
        "reconcile_memories": [{}],
        # The knowledge graph: ann's entity by name, her words as a query; bob's writes name her entity.
        "read_graph": [{}, {"limit": 5}],
        "search_nodes": [{"query": secret}, {"query": "Garden"}],
        "open_nodes": [{"names": [entity, "Ann"]}],
        # (What bob writes says "bob also knows": his own words echoed back are not a leak. That
        # create_entities creates the name at all shows he does not see ann's entity of that name.)
        "create_entities": [
            {"entities": [{"name": entity, "entityType": "x", "observations": ["bob also knows"]}]}
        ],
        "create_relations": [
            {"relations": [{"from": entity, "to": "Bob", "relationType": "bob also knows"}]}
        ],
        "add_observations": [{"observations": [{"entityName": entity, "contents": ["bob also knows this"]}]}],
        "delete_observations": [{"deletions": [{"entityName": entity, "observations": [f"{secret} roses"]}]}],
        "delete_relations": [{"relations": [{"from": entity, "to": "Ann", "relationType": "belongs to"}]}],
        "delete_entities": [{"entityNames": [entity]}],
        "list_memories": [
            {},
            {"thread_id": "ann-only", "include_superseded": True},
            {"types": ["fact"], "as_of": "2100-01-01T00:00:00Z", "order": "oldest"},
        ],
    }


async def test_two_principals_never_read_or_write_each_others_memories(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    ann, bob = credential("ann"), credential("bob")
    server = start_with_tokens(start_server, tmp_path, [ann, bob])
    secret = f"zebra{uuid.uuid4().hex[:10]}"

    async with bearer_client(server, ann.token) as client:
        ann_ids = await _ann_writes(client, secret)
        before = await _export_body(client)
        ann_export = (await call(client, "export_memories"))["jsonl"]
        ann_working = {
            t: await call(client, "get_working_memory", thread_id=t) for t in ("ann-only", "shared")
        }
    assert any(secret in json.dumps(line) for line in before)

    seen: list[str] = []
    async with bearer_client(server, bob.token) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        attempts = _bob_attempts(secret, ann_ids, ann_export)
        untried = tools - attempts.keys()
        assert not untried, f"tools without a cross-user attempt in this test: {sorted(untried)}; add them"
        for tool, calls in attempts.items():
            if tool not in tools:
                continue
            for arguments in calls:
                try:
                    seen += _texts(await client.call_tool(tool, arguments))
                except MCPError as e:  # forget_user: refused by the guard in front (403, no admin scope)
                    seen.append(str(e))

        uris = ["memory://threads", "memory://threads/ann-only", "memory://threads/ann-only/summary"]
        uris.append("memory://threads/ann-only/timeline")
        uris += [
            f"memory://memories/{i}" for i in (*ann_ids["turns"], ann_ids["summary"], ann_ids.get("fact"))
        ]
        uris += [f"memory://memories/{short_id(i)}" for i in ann_ids["turns"]]  # a timeline's short ids
        uris += [str(r.uri) for r in (await client.list_resources()).resources]
        uris.append(f"memory://knowledge-graph/entities/{ann_ids.get('entity')}")
        for uri in dict.fromkeys(u for u in uris if u and not u.endswith("None")):
            try:
                seen += _texts(await client.read_resource(uri))
            except MCPError as e:
                seen.append(str(e))
        for prompt in (await client.list_prompts()).prompts:
            arguments = {a.name: secret for a in prompt.arguments or [] if a.required}
            seen += _texts(await client.get_prompt(prompt.name, arguments))
        seen += _texts(await client.call_tool("forget", {"everything": True}))

    leaked = [text for text in seen if secret in text and "bob also knows" not in text]
    assert not leaked, f"the other principal read ann's memories: {leaked[0][:400]}"
    async with bearer_client(server, ann.token) as client:
        assert await _export_body(client) == before, "the other principal changed ann's memories"
        for thread, working in ann_working.items():
            assert await call(client, "get_working_memory", thread_id=thread) == working


@pytest.mark.parametrize("role", ["reader", "writer"])
async def test_a_read_only_token_reads_but_never_writes(
    start_server: ServerStarter, tmp_path: Path, role: str
) -> None:
    writer, reader = credential("ann"), credential("ann", "read")
    server = start_with_tokens(start_server, tmp_path, [writer, reader])
    async with bearer_client(server, writer.token) as client:
        await call(client, "add_turn", thread_id="t", role="user", content="written by the writer")
    token = reader.token if role == "reader" else writer.token
    async with bearer_client(server, token) as client:
        found = await call(client, "search_memory", query="writer")
        assert [r["content"] for r in found["results"]] == ["written by the writer"]
        tools = {t.name: t for t in (await client.list_tools()).tools}
        writing = sorted(n for n, t in tools.items() if not (t.annotations and t.annotations.read_only_hint))
        assert {"add_turn", "forget", "import_memories", "summarize_thread"} <= set(writing)
        if role == "reader":
            # The guard in front answers each writing tool 403 with a step-up challenge; nothing runs.
            for name in writing:
                refused = await post_tool_call(server.url, token, name, {"everything": True})
                assert refused.status_code == 403, name
                needed = "read write admin" if name == "forget_user" else "read write"
                assert challenge(refused) | {"error_description": ""} == {
                    "error": "insufficient_scope",
                    "error_description": "",
                    "scope": needed,
                }, name
            found = await call(client, "search_memory", query="writer")
            assert len(found["results"]) == 1  # nothing was changed by the refused calls
        else:
            refused = await client.call_tool("forget", {"everything": True, "dry_run": True})
            assert not refused.is_error
