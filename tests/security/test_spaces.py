"""Shared spaces on a real server over streamable HTTP with real bearer tokens: members with each role,
a member through a group named by the token, and a non-member, across every tool, resource, prompt,
completion and subscription. A non-member never sees, hears or infers a space's memories; a reader
never writes; a writer forgets only what they wrote; an owner may forget anything there, or all of it.
"""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client
from mcp.server.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types import PromptReference, ResourceTemplateReference

from mcp_memory.errors import shown
from mcp_memory.mcp.server import thread_uri
from mcp_memory.models import short_id
from tests.security.bearer import Credential, bearer_client, credential, start_with_tokens
from tests.security.test_isolation import _texts
from tests.security.test_notification_isolation import MARKER, Heard, http_client
from tests.services.mcp_client import call, call_error
from tests.services.server_process import NetworkServer, ServerStarter

pytestmark = pytest.mark.anyio

TEAM_SPACES = [
    {"name": "team", "members": {"olga": "owner", "ann": "writer", "group:g-read": "reader"}},
    {"name": "elsewhere", "members": {"nora": "owner"}},
]
SPACE_THREAD = ResourceTemplateReference(uri="memory://spaces/{space}/threads/{thread_id}")
MEMORY = ResourceTemplateReference(uri="memory://memories/{memory_id}")
SPACE_GRAPH = "memory://spaces/team/knowledge-graph"


class Team:
    """Everyone in the tests: the space's owner, a writer, a reader through a group, and a non-member."""

    def __init__(self) -> None:
        self.olga = credential("olga")
        self.ann = credential("ann")
        self.rita = credential("rita", groups=("g-read", "g-other"))
        self.rita_left = credential("rita", groups=("g-other",))  # the IdP took her out of g-read
        self.nora = credential("nora")
        self.admin = credential("root", "read", "write", "admin")

    def all(self) -> list[Credential]:
        return [self.olga, self.ann, self.rita, self.rita_left, self.nora, self.admin]


def start(start_server: ServerStarter, tmp_path: Path, team: Team, **extra: str) -> NetworkServer:
    spaces = json.dumps(TEAM_SPACES)
    return start_with_tokens(start_server, tmp_path, team.all(), MCP_MEMORY_SECURITY__SPACES=spaces, **extra)


@asynccontextmanager
async def as_(server: NetworkServer, who: Credential) -> AsyncIterator[Client]:
    async with bearer_client(server, who.token) as client:
        yield client


async def _space_export(server: NetworkServer, team: Team) -> list[dict[str, Any]]:
    async with as_(server, team.olga) as client:
        lines = (await call(client, "export_memories", space="team"))["jsonl"].splitlines()
    return [json.loads(line) for line in lines[1:]]


async def _team_writes(server: NetworkServer, team: Team, secret: str) -> dict[str, Any]:
    async with as_(server, team.ann) as ann:
        turn = await call(
            ann, "add_turn", thread_id="plan", role="user", content=f"{secret} staging is 5439", space="team"
        )
        # add_turn answers the turn's id; the turn as stored, read back.
        stored = await ann.read_resource(f"memory://memories/{turn['id']}")
        turn_view = json.loads(stored.contents[0].text)  # type: ignore[union-attr]
        fact = await call(ann, "remember", content=f"The team chose {secret} for Postgres", space="team")
        history = await call(ann, "memory_history", memory_id=fact["id"], space="team")
        entity = {"name": "Staging", "entityType": "service", "observations": [f"{secret} listens on 5439"]}
        await call(ann, "create_entities", entities=[entity], space="team")
    async with as_(server, team.olga) as olga:
        other = await call(
            olga, "add_turn", thread_id="plan", role="assistant", content=f"{secret} noted", space="team"
        )
    return {
        "turn": turn["id"],
        "olga_turn": other["id"],
        "fact": fact["id"],
        "revision": history["revisions"][0]["id"],
        "turn_view": turn_view,
    }


def _non_member_attempts(secret: str, ids: dict[str, Any], space: str) -> dict[str, list[dict[str, Any]]]:
    """Per tool, what a non-member tries with the space's name, thread and memory ids."""
    return {
        "add_turn": [{"thread_id": "plan", "role": "user", "content": "nora writes", "space": space}],
        "search_memory": [
            {"query": secret},
            {"query": secret, "space": space},
            {"query": secret, "thread_id": "plan"},
        ],
        "timeline": [
            {"space": space},
            {"query": secret, "space": space},
            {"thread_id": "plan"},
            {"query": secret},
        ],
        "get_working_memory": [{"thread_id": "plan", "space": space}, {"thread_id": "plan"}],
        "set_thread_data": [{"thread_id": "plan", "data": {"x": 1}, "space": space}],
        "summarize_thread": [{"thread_id": "plan", "space": space}],
        "forget": [
            {"memory_id": ids["turn"], "space": space},
            {"memory_id": ids["turn"]},
            {"thread_id": "plan", "space": space},
            {"everything": True, "space": space},
        ],
        "export_memories": [{"space": space}],
        "import_memories": [{"jsonl": "{}", "space": space, "dry_run": True}],
        "remember": [{"content": "nora was here", "space": space}],
        "update_memory": [
            {"memory_id": ids["fact"], "content": "nora overwrote", "space": space},
            {"memory_id": ids["fact"], "content": "x"},
        ],
        "memory_history": [{"memory_id": ids["fact"], "space": space}, {"memory_id": ids["fact"]}],
        "rollback_memory": [{"memory_id": ids["fact"], "revision_id": ids["revision"], "space": space}],
        "extract_memories": [{"thread_id": "plan", "space": space}],
        "reconcile_memories": [{"space": space}],
        "list_memories": [{}, {"space": space}, {"thread_id": "plan", "include_superseded": True}],
        "read_graph": [{}, {"space": space}],
        "search_nodes": [{"query": secret}, {"query": secret, "space": space}],
        "open_nodes": [{"names": ["Staging"]}, {"names": ["Staging"], "space": space}],
        "create_entities": [
            {"entities": [{"name": "Staging", "entityType": "x", "observations": []}], "space": space}
        ],
        "create_relations": [
            {"relations": [{"from": "Staging", "to": "Nora", "relationType": "r"}], "space": space}
        ],
        "add_observations": [
            {"observations": [{"entityName": "Staging", "contents": ["nora"]}], "space": space}
        ],
        "delete_observations": [
            {
                "deletions": [{"entityName": "Staging", "observations": [f"{secret} listens on 5439"]}],
                "space": space,
            }
        ],
        "delete_relations": [
            {"relations": [{"from": "Staging", "to": "Nora", "relationType": "r"}], "space": space}
        ],
        "delete_entities": [{"entityNames": ["Staging"], "space": space}],
    }


async def test_members_share_a_space_and_a_non_member_never_sees_hears_or_infers_it(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    secret = f"kestrel{uuid.uuid4().hex[:10]}"
    ids = await _team_writes(server, team, secret)
    assert ids["turn_view"]["space"] == "team" and ids["turn_view"]["author"] == "ann"

    # Every member reads it, each memory saying its space and who wrote it; the reader through a group.
    for member in (team.olga, team.ann, team.rita):
        async with as_(server, member) as client:
            found = await call(client, "search_memory", query=f"{secret} staging")
            hit = next(h for h in found["results"] if h["id"] == ids["turn"])
            assert (hit["space"], hit["author"]) == ("team", "ann")
            listed = await call(client, "list_memories", space="team", order="oldest")
            assert [
                (m["id"], m["space"], m["author"]) for m in listed["memories"] if m["type"] == "turn"
            ] == [
                (ids["turn"], "team", "ann"),
                (ids["olga_turn"], "team", "olga"),
            ]
            thread = json.loads((await client.read_resource(thread_uri("plan", "team"))).contents[0].text)
            assert [m["author"] for m in thread["messages"]] == ["ann", "olga"]
            outline = await call(client, "timeline", space="team")
            assert short_id(ids["turn"]) in {item.get("id") for item in outline["items"]}
            assert {item.get("space") for item in outline["items"]} == {"team"}
            memory = json.loads(
                (await client.read_resource(f"memory://memories/{ids['fact']}")).contents[0].text
            )
            assert (memory["space"], memory["author"]) == ("team", "ann")
            threads = json.loads((await client.read_resource("memory://threads")).contents[0].text)
            assert {"thread_id": "plan", "space": "team"}.items() <= next(
                t for t in threads if t["space"]
            ).items()
            spaces = (await client.complete(SPACE_THREAD, {"name": "space", "value": "te"})).completion
            assert spaces.values == ["team"]

    # The non-member: nothing of the space in any answer, and naming it answers as for no space at all.
    seen: list[str] = []
    unknown_texts: list[str] = []
    async with as_(server, team.nora) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        attempts = _non_member_attempts(secret, ids, "team")
        with_space = {n for n, t in tools.items() if "space" in (t.input_schema.get("properties") or {})}
        assert with_space <= attempts.keys(), (
            f"tools taking space without a non-member attempt: {with_space - attempts.keys()}"
        )
        for tool, calls in attempts.items():
            for arguments in calls:
                result = await client.call_tool(tool, arguments)
                seen += _texts(result)
                if "space" in arguments and result.is_error:
                    unknown = await client.call_tool(tool, {**arguments, "space": "nosuch"})
                    assert result.is_error and unknown.is_error, tool
                    mine, none = result.content[0].text, unknown.content[0].text  # type: ignore[union-attr]
                    assert mine == none.replace("nosuch", "team"), f"{tool} tells a member's space from none"
                    unknown_texts.append(mine)
        uris = [
            thread_uri("plan", "team"),
            f"{thread_uri('plan', 'team')}/summary",
            "memory://threads",
            "memory://facts",
            "memory://knowledge-graph",
            "memory://spaces/team/knowledge-graph",
        ]
        uris += [f"memory://memories/{ids[k]}" for k in ("turn", "fact", "olga_turn")]
        for uri in uris:
            try:
                seen += _texts(await client.read_resource(uri))
            except MCPError as e:
                seen.append(str(e))
        # Another space's memory id reads exactly as an id that exists nowhere.
        for uri, nowhere in (
            (thread_uri("plan", "team"), thread_uri("plan", "nosuch")),
            (f"memory://memories/{ids['turn']}", "memory://memories/turn_0123456789abcdef0123456789abcdef"),
        ):
            errors = []
            for target in (uri, nowhere):
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(target)
                errors.append(str(refused.value))
            assert errors[0] == errors[1].replace("nosuch", "team").replace(
                "turn_0123456789abcdef0123456789abcdef", ids["turn"]
            )
        seen += _texts(await client.get_prompt("recall", {"query": "staging 5439 postgres"}))
        with pytest.raises(MCPError) as recall:
            await client.get_prompt("recall", {"query": secret, "space": "team"})
        assert "no space 'team' that you are a member of" in str(recall.value)
        assert (await client.complete(SPACE_THREAD, {"name": "space", "value": ""})).completion.values == [
            "elsewhere"
        ]
        for argument, context in (("space", None), ("thread_id", {"space": "team"})):
            offered = await client.complete(SPACE_THREAD, {"name": argument, "value": ""}, context)
            assert "team" not in offered.completion.values and "plan" not in offered.completion.values
        offered = await client.complete(MEMORY, {"name": "memory_id", "value": ""})
        assert not {ids["turn"], ids["fact"], ids["olga_turn"]} & set(offered.completion.values)
        recall_space = await client.complete(PromptReference(name="recall"), {"name": "space", "value": "t"})
        assert recall_space.completion.values == []
    leaked = [t for t in seen if secret in t]
    assert not leaked, f"a non-member read the space: {leaked[0][:300]}"
    assert unknown_texts and all("no space 'team' that you are a member of" in t for t in unknown_texts)

    # The reader: reads, but every write is refused by name, and nothing in the space changes.
    before = await _space_export(server, team)
    async with as_(server, team.rita) as client:
        for tool, arguments in (
            ("add_turn", {"thread_id": "plan", "role": "user", "content": "rita writes"}),
            ("remember", {"content": "rita remembers"}),
            ("forget", {"memory_id": ids["turn"]}),
            ("summarize_thread", {"thread_id": "plan"}),
            ("set_thread_data", {"thread_id": "plan", "data": {}}),
            ("update_memory", {"memory_id": ids["fact"], "content": "rita edits"}),
            ("import_memories", {"jsonl": "{}"}),
            ("create_entities", {"entities": [{"name": "R", "entityType": "x", "observations": []}]}),
            ("delete_entities", {"entityNames": ["Staging"]}),
        ):
            refusal = await call_error(client, tool, **arguments, space="team")
            assert f"{tool} needs the writer role in space 'team'; you are a reader there" in refusal
    assert await _space_export(server, team) == before


async def test_a_writer_forgets_only_what_they_wrote_and_an_owner_anything(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    ids = await _team_writes(server, team, "heron")
    async with as_(server, team.ann) as ann:
        refusal = await call_error(ann, "forget", memory_id=ids["olga_turn"], space="team")
        assert "needs the owner role; you are a writer there and may forget only what you wrote" in refusal
        # A thread: her own part of it; Olga's turn stays, and the receipt says so. A dry run shows the same.
        dry = await call(ann, "forget", thread_id="plan", space="team", dry_run=True)
        part = await call(ann, "forget", thread_id="plan", space="team")
        assert (part["scope"], part["long_term"]["by_type"], part["left_by_others"]) == (
            "thread",
            {"turn": 1},
            {"turn": 1},
        )
        assert (dry["dry_run"], dry["long_term"], dry["left_by_others"]) == (
            True,
            part["long_term"],
            part["left_by_others"],
        )
        thread = await call(ann, "get_working_memory", thread_id="plan", space="team")
        assert [m["content"] for m in thread["messages"]] == ["heron noted"]
        # Everything: the rest of what she wrote there (her fact, her observation); Olga's turn stays.
        rest = await call(ann, "forget", everything=True, space="team")
        assert rest["scope"] == "everything" and rest["left_by_others"] == {"turn": 1}
        assert rest["long_term"]["by_type"].get("fact") == 1
        # Her personal memory is another memory: the space's ids are not found there.
        assert f"no memory with id {ids['fact']!r}" in await call_error(ann, "forget", memory_id=ids["fact"])
    async with as_(server, team.olga) as olga:
        left = await call(olga, "list_memories", space="team")
        assert [m["id"] for m in left["memories"]] == [ids["olga_turn"]]
        whole = await call(olga, "forget", everything=True, space="team")  # an owner: the whole space
        assert whole["long_term"]["memories"] >= 1 and whole.get("left_by_others") is None  # null: left out
        assert (await call(olga, "list_memories", space="team"))["memories"] == []
        assert (await call(olga, "get_working_memory", thread_id="plan", space="team"))["messages"] == []


async def test_bad_space_input_is_named_and_stores_nothing(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    async with as_(server, team.ann) as ann:
        for bad in ("te\x00am", "team\n", "", "../team", "x" * 65):
            refusal = await call_error(ann, "add_turn", thread_id="t", role="user", content="hi", space=bad)
            assert f"space {shown(bad)} is not valid" in refusal  # 65 characters: a prefix and the length
        assert "no space 'nosuch' that you are a member of" in await call_error(
            ann, "add_turn", thread_id="t", role="user", content="hi", space="nosuch"
        )
        assert "no space 'elsewhere'" in await call_error(ann, "search_memory", query="hi", space="elsewhere")
        assert (await call(ann, "list_memories"))["memories"] == []
    async with as_(server, team.olga) as olga:
        assert (await call(olga, "list_memories", space="team"))["memories"] == []


async def test_membership_comes_from_each_requests_token(start_server: ServerStarter, tmp_path: Path) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    await _team_writes(server, team, "plover")
    async with as_(server, team.rita) as client:
        assert (await call(client, "list_memories", space="team"))["memories"]
    # The same user, the next request, a token no longer naming the group: the space is gone for her.
    async with as_(server, team.rita_left) as client:
        assert "no space 'team'" in await call_error(client, "list_memories", space="team")
        found = await call(client, "search_memory", query="plover")
        assert found["results"] == []


async def test_two_writers_adding_to_one_shared_thread_at_once_lose_nothing(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    per_writer = 12

    async def write(who: Credential) -> None:
        async with as_(server, who) as client:
            for i in range(per_writer):
                await call(
                    client,
                    "add_turn",
                    thread_id="race",
                    role="user",
                    content=f"{who.user_id} line {i}",
                    space="team",
                    context_window=1_000_000,
                )

    async with anyio.create_task_group() as tg:
        tg.start_soon(write, team.ann)
        tg.start_soon(write, team.olga)
    async with as_(server, team.olga) as client:
        working = await call(client, "get_working_memory", thread_id="race", space="team")
        listed = await call(client, "list_memories", space="team", thread_id="race", limit=100)
    expected = {f"{who} line {i}" for who in ("ann", "olga") for i in range(per_writer)}
    assert {m["content"] for m in working["messages"]} == expected
    assert working["message_count"] == 2 * per_writer
    assert {(m["content"], m["author"]) for m in listed["memories"]} == {(c, c.split()[0]) for c in expected}


async def test_forget_user_takes_their_personal_memory_and_what_they_wrote_in_spaces(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    ids = await _team_writes(server, team, "curlew")
    async with as_(server, team.ann) as ann:
        await call(ann, "add_turn", thread_id="own", role="user", content="curlew personal note")
    async with as_(server, team.olga) as olga:
        await call(olga, "summarize_thread", thread_id="plan", space="team", keep_recent=0)
    async with as_(server, team.admin) as admin:
        counted = await call(admin, "forget_user", user_id="ann", dry_run=True)
        receipt = await call(admin, "forget_user", user_id="ann")
    assert counted["long_term"] == receipt["long_term"]
    # Her personal turn, her turn, fact and graph observation in the space, and the space thread's summary
    # built from it.
    assert receipt["long_term"]["by_type"] == {"turn": 2, "fact": 1, "summary": 1, "observation": 1}
    async with as_(server, team.olga) as olga:
        left = await call(olga, "list_memories", space="team", include_superseded=True)
        assert [(m["id"], m["author"]) for m in left["memories"]] == [(ids["olga_turn"], "olga")]
        export = (await call(olga, "export_memories", space="team"))["jsonl"]
        assert "staging is 5439" not in export and "chose curlew" not in export
        working = await call(olga, "get_working_memory", thread_id="plan", space="team")
        assert "5439" not in json.dumps(working)
        # The entity stays the space's; her observation of it went.
        graph = await call(olga, "read_graph", space="team")
        assert graph["entities"] == [{"name": "Staging", "entityType": "service", "observations": []}]
    async with as_(server, team.ann) as ann:  # still a member: she sees only what others wrote there
        left = (await call(ann, "list_memories"))["memories"]
        assert [(m["id"], m["space"]) for m in left] == [(ids["olga_turn"], "team")]


async def test_each_space_has_its_own_storage_quota(start_server: ServerStarter, tmp_path: Path) -> None:
    team = Team()
    server = start(start_server, tmp_path, team, MCP_MEMORY_SECURITY__MAX_STORED_BYTES="2000")
    line = "x" * 600
    async with as_(server, team.ann) as ann:
        for i in range(3):
            await call(ann, "add_turn", thread_id="fill", role="user", content=f"{i} {line}", space="team")
        refusal = await call_error(ann, "add_turn", thread_id="fill", role="user", content=line, space="team")
        assert "quota" in refusal.lower() or "limit" in refusal.lower()
        # Her own memory has a quota of its own, untouched by the space's.
        for i in range(3):
            await call(ann, "add_turn", thread_id="own", role="user", content=f"{i} {line}")
    async with as_(server, team.olga) as olga:  # the space is full for every member
        refusal = await call_error(
            olga, "add_turn", thread_id="fill", role="user", content=line, space="team"
        )
        assert "quota" in refusal.lower() or "limit" in refusal.lower()
        assert len((await call(olga, "list_memories", space="team"))["memories"]) == 3


async def test_a_space_s_own_quota_in_its_entry_stands_beside_the_users_one(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    spaces = [{**TEAM_SPACES[0], "max_stored_bytes": 1500}, TEAM_SPACES[1]]
    server = start_with_tokens(
        start_server,
        tmp_path,
        team.all(),
        MCP_MEMORY_SECURITY__SPACES=json.dumps(spaces),
        MCP_MEMORY_SECURITY__MAX_STORED_BYTES="100000",
    )
    line = "y" * 600
    async with as_(server, team.ann) as ann:
        for i in range(2):
            await call(ann, "add_turn", thread_id="fill", role="user", content=f"{i} {line}", space="team")
        refusal = await call_error(ann, "add_turn", thread_id="fill", role="user", content=line, space="team")
        assert "space 'team' stores" in refusal and "of 1,500 bytes" in refusal
        for i in range(5):  # her own memory keeps the users' limit, far above the space's
            await call(ann, "add_turn", thread_id="own", role="user", content=f"{i} {line}")
    async with as_(server, team.olga) as olga:
        assert len((await call(olga, "list_memories", space="team"))["memories"]) == 2
        refused = json.loads(
            (await olga.read_resource("memory://spaces/team/audit?action=add&limit=1")).contents[0].text
        )
        [record] = refused["records"]  # the refusal is in the space's trail too
        assert (record["actor"], record["action"], record["outcome"]) == (
            "ann",
            "add",
            "refused: LimitExceededError",
        )


async def _listen(server: NetworkServer, who: Credential, heard: Heard, *, task_status: Any) -> None:
    uris = [thread_uri("plan", "team"), thread_uri(MARKER), SPACE_GRAPH]
    async with as_(server, who) as client, client.listen(resource_subscriptions=uris) as events:
        task_status.started()
        async for event in events:
            if isinstance(event, ResourceUpdated):
                heard.add(event.uri)


async def _subscribe(server: NetworkServer, who: Credential, heard: Heard, *, task_status: Any) -> None:
    async def on_message(message: object) -> None:
        if isinstance(message, mcp_types.ResourceUpdatedNotification):
            heard.add(str(message.params.uri))

    async with http_client(server, who.token, mode="legacy", message_handler=on_message) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # resources/subscribe: deprecated in the 2026 protocol
            for uri in (thread_uri("plan", "team"), thread_uri(MARKER), SPACE_GRAPH):
                await client.subscribe_resource(uri)
        task_status.started()
        await anyio.sleep_forever()


async def test_a_change_in_a_space_reaches_each_subscribed_member_once_and_no_one_else(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    sessions = {(who, path): Heard() for who in ("olga", "rita", "nora") for path in ("2025", "2026")}
    people = {"olga": team.olga, "rita": team.rita, "nora": team.nora}
    space_uri = thread_uri("plan", "team")
    async with anyio.create_task_group() as tg:
        for (who, path), heard in sessions.items():
            await tg.start(_listen if path == "2026" else _subscribe, server, people[who], heard)
        async with as_(server, team.ann) as ann:
            await call(ann, "add_turn", thread_id="plan", role="user", content="one change", space="team")
            entity = {"name": "Staging", "entityType": "service", "observations": []}
            await call(ann, "create_entities", entities=[entity], space="team")  # the space's graph changed
        # Each then writes its own marker: heard, it proves every earlier event had its chance to arrive.
        for person in people.values():
            async with as_(server, person) as client:
                await call(client, "add_turn", thread_id=MARKER, role="user", content="marker")
        with anyio.fail_after(30):
            for heard in sessions.values():
                await heard.wait_for_markers(1)
        tg.cancel_scope.cancel()
    for (who, path), heard in sessions.items():
        expected = 0 if who == "nora" else 1
        assert heard.uris.count(space_uri) == expected, (who, path, heard.uris)
        assert heard.uris.count(SPACE_GRAPH) == expected, (who, path, heard.uris)


async def test_an_edit_of_the_spaces_file_applies_to_the_next_request(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    path = tmp_path / "spaces.json"
    path.write_text(json.dumps({"spaces": TEAM_SPACES}))
    server = start_with_tokens(start_server, tmp_path, team.all(), MCP_MEMORY_SECURITY__SPACES_FILE=str(path))
    await _team_writes(server, team, "grebe")
    async with as_(server, team.nora) as client:
        assert "no space 'team'" in await call_error(client, "list_memories", space="team")
        members = {**TEAM_SPACES[0]["members"], "nora": "reader"}  # type: ignore[dict-item]
        members.pop("ann")
        path.write_text(json.dumps({"spaces": [{"name": "team", "members": members}, TEAM_SPACES[1]]}))
        listed = await call(client, "list_memories", space="team")  # the same session, its next request
        assert {m["author"] for m in listed["memories"]} == {"ann", "olga"}
    async with as_(server, team.ann) as client:
        assert "no space 'team'" in await call_error(client, "search_memory", query="grebe", space="team")
        assert (await call(client, "search_memory", query="grebe"))["results"] == []
    # The owner's trail says what changed and when the server first saw it (one record per change).
    async with as_(server, team.olga) as olga:
        uri = "memory://spaces/team/audit?action=membership"
        seen = json.loads((await olga.read_resource(uri)).contents[0].text)["records"]
    assert [(r["actor"], r["counts"]) for r in seen] == [
        ("cli:settings", {"added": 1, "removed": 1}),
        ("cli:settings", {"added": 3}),
    ]
    assert seen[0]["members"] == members


async def test_an_import_into_a_space_is_written_by_whoever_imports_it(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    ids = await _team_writes(server, team, "avocet")
    async with as_(server, team.rita) as reader:  # any member may export a space
        exported = (await call(reader, "export_memories", space="team"))["jsonl"]
    lines = [json.loads(line) for line in exported.splitlines()[1:]]
    assert {
        (line["id"], line["author"]) for line in lines if line["kind"] == "memory" and line["type"] == "turn"
    } == {
        (ids["turn"], "ann"),
        (ids["olga_turn"], "olga"),
    }
    async with as_(server, team.nora) as nora:  # into her own memory: hers, whatever the file says
        await call(nora, "import_memories", jsonl=exported)
        mine = (await call(nora, "list_memories", types=["turn"]))["memories"]
    assert {(m.get("space"), m["author"]) for m in mine} == {(None, "nora")}  # no space: left out
    async with as_(server, team.olga) as olga:
        await call(olga, "forget", everything=True, space="team")
    async with as_(server, team.ann) as ann:  # into the space, by a writer: authored by the importer
        await call(ann, "import_memories", jsonl=exported, space="team")
        back = (await call(ann, "list_memories", space="team", types=["turn"]))["memories"]
    assert {(m["id"], m["space"], m["author"]) for m in back} == {
        (ids["turn"], "team", "ann"),
        (ids["olga_turn"], "team", "ann"),
    }


async def test_a_space_s_knowledge_graph_follows_its_roles(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    entity = {"name": "Staging DB", "entityType": "service", "observations": ["listens on 5439"]}
    async with as_(server, team.ann) as ann:
        created = await call(ann, "create_entities", entities=[entity], space="team")
        assert created == {"entities": [entity]}
        assert (await call(ann, "read_graph"))["entities"] == []  # her own graph is another graph
    async with as_(server, team.rita) as rita:
        assert (await call(rita, "read_graph", space="team"))["entities"] == [entity]
        refused = await call_error(
            rita,
            "add_observations",
            observations=[{"entityName": "Staging DB", "contents": ["x"]}],
            space="team",
        )
        assert "writer" in refused
        graph = await rita.read_resource("memory://spaces/team/knowledge-graph")
        assert json.loads(graph.contents[0].text)["entities"] == [entity]  # type: ignore[union-attr]
        # Its observations are memories of the space, found by search with their space and author.
        hits = await call(rita, "search_memory", query="5439", mode="text")
        assert [(h["content"], h["space"], h["author"]) for h in hits["results"]] == [
            ("listens on 5439", "team", "ann")
        ]
    async with as_(server, team.nora) as nora:
        for tool, arguments in (
            ("read_graph", {}),
            ("search_nodes", {"query": "Staging"}),
            ("open_nodes", {"names": ["Staging DB"]}),
        ):
            assert (await call(nora, tool, **arguments))["entities"] == []
            assert "no space 'team'" in await call_error(nora, tool, **arguments, space="team")
        assert "no space 'team'" in await call_error(
            nora, "delete_entities", entityNames=["Staging DB"], space="team"
        )
        with pytest.raises(MCPError):
            await nora.read_resource("memory://spaces/team/knowledge-graph")
    async with as_(server, team.olga) as olga:
        assert (await call(olga, "read_graph", space="team"))["entities"] == [entity]
