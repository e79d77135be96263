"""The hooks' routes on a memory server: a real `mcp-memory serve --transport http` (and sse) with real
bearer tokens and a space acme-api (alice and bob writers, dave a reader, olga its owner; carol is not a
member). A teammate's machine delivers captured events (POST /hooks/capture) and asks what to inject
(POST /hooks/recall) as the verified principal: a writer's sessions go into the space and are recalled by
the other members with who said it; a reader recalls but captures into their own memory; a non-member
captures into their own memory and recalls nothing of the space. The routes answer 401/403 with the
challenges /mcp answers; a batch is stored in order, once, a bad event refused alone; no file the
request names is ever read.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_memory.models import short_id
from tests.security.bearer import Credential, bearer_client, challenge, credential, start_with_tokens
from tests.security.test_audit import trail
from tests.security.test_oauth_tokens import oauth_env
from tests.services.local_issuer import local_issuer
from tests.services.mcp_client import call, call_error
from tests.services.redis_server import RedisServer
from tests.services.server_process import NetworkServer, ServerStarter

pytestmark = pytest.mark.anyio

SPACES = [
    {"name": "acme-api", "members": {"alice": "writer", "bob": "writer", "dave": "reader", "olga": "owner"}}
]
PROJECT = {"id": "github.com/acme/api", "key": "api-1a2b3c4d", "space": "acme-api"}
DECISION = "We decided the billing service stays on PostgreSQL 16 and invoices round half-even."
ASKED = "Which database should the billing service use for invoices?"
QUESTION = "which database does the billing service use for invoices?"


class Team:
    def __init__(self) -> None:
        self.alice = credential("alice")
        self.bob = credential("bob")
        self.carol = credential("carol")
        self.dave = credential("dave")
        self.olga = credential("olga")
        self.alice_reads = credential("alice", "read")

    def all(self) -> list[Credential]:
        return [self.alice, self.bob, self.carol, self.dave, self.olga, self.alice_reads]


def start(start_server: ServerStarter, tmp_path: Path, team: Team, **extra: str) -> NetworkServer:
    return start_with_tokens(
        start_server, tmp_path, team.all(), MCP_MEMORY_SECURITY__SPACES=json.dumps(SPACES), **extra
    )


THREE_DAYS_AGO = datetime.now(UTC) - timedelta(days=3)


def at(seconds: int) -> str:
    """A moment of alice's session, three days ago."""
    return (THREE_DAYS_AGO + timedelta(seconds=seconds)).isoformat()


def item(key: str, kind: str, role: str, content: str, time: str | None = None) -> dict[str, Any]:
    return {"key": key, "kind": kind, "role": role, "content": content, "time": time, "paths": []}


def event(ident: str, session: str, items: list[dict[str, Any]], **entry: Any) -> dict[str, Any]:
    return {
        "id": ident,
        "entry": {
            "client": "claude-code",
            "event": "Stop",
            "kind": "reply",
            "session_id": session,
            "cwd": "/home/dev/api",
            "time": at(5),
            "project": PROJECT,
        }
        | entry,
        "items": items,
    }


def decided(ident: str = "e1", session: str = "alice-1") -> dict[str, Any]:
    return event(
        ident,
        session,
        [
            item("u1", "prompt", "user", ASKED, at(0)),
            item("a1", "reply", "assistant", DECISION, at(4)),
        ],
    )


async def post(server: NetworkServer, path: str, token: str | None, body: object) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx2.AsyncClient(timeout=60) as http:
        return await http.post(server.base_url + path, json=body, headers=headers)


async def capture(server: NetworkServer, who: Credential, *events: dict[str, Any]) -> list[dict[str, Any]]:
    answer = await post(server, "/hooks/capture", who.token, {"events": list(events)})
    assert answer.status_code == 200, answer.text
    results: list[dict[str, Any]] = answer.json()["results"]
    return results


async def recall(server: NetworkServer, who: Credential, prompt: str, session: str) -> str:
    request = {
        "client": "claude-code",
        "kind": "prompt",
        "session_id": session,
        "cwd": "/home/dev/api",
        "prompt": prompt,
        "project": PROJECT,
        "cap_chars": 10_000,
    }
    answer = await post(server, "/hooks/recall", who.token, request)
    assert answer.status_code == 200, answer.text
    assert "error" not in answer.json(), answer.json()
    context: str = answer.json()["context"]
    return context


async def texts(server: NetworkServer, who: Credential, space: str | None = None) -> list[str]:
    """What `who` sees in the space, or (no space) in their own memory alone."""
    async with bearer_client(server, who.token) as client:
        page = await call(client, "list_memories", limit=100, **({"space": space} if space else {}))
    return [m["content"] for m in page["memories"] if m.get("space") == space]


async def test_a_writers_decision_reaches_the_members_attributed_and_nobody_else(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    assert await capture(server, team.alice, decided()) == [{"id": "e1", "stored": 2}]
    # The courier sends the batch again (its answer was lost): nothing is stored twice.
    assert await capture(server, team.alice, decided()) == [{"id": "e1", "stored": 0}]
    in_space = await texts(server, team.olga, space="acme-api")
    assert sorted(in_space) == sorted([ASKED, DECISION])
    assert await texts(server, team.alice) == []  # it went to the space, not alice's own memory

    told_bob = await recall(server, team.bob, QUESTION, "bob-1")
    assert "PostgreSQL 16" in told_bob
    assert "alice, 3 days ago" in told_bob, told_bob  # who said it, and when

    # dave reads the space: he is told, but what his own sessions say stays his.
    told_dave = await recall(server, team.dave, QUESTION, "dave-1")
    assert "PostgreSQL 16" in told_dave and "alice, " in told_dave
    mine = event(
        "d1", "dave-1", [item("du1", "prompt", "user", "Dave thinks invoices could use MySQL 8 instead.")]
    )
    assert await capture(server, team.dave, mine) == [{"id": "d1", "stored": 1}]
    assert await texts(server, team.dave) == ["Dave thinks invoices could use MySQL 8 instead."]
    assert "Dave thinks" not in " ".join(await texts(server, team.olga, space="acme-api"))

    # carol is not a member: her session naming the space stays hers, and she is told nothing of it.
    hers = event(
        "c1",
        "carol-1",
        [item("cu1", "prompt", "user", "Carol keeps the billing service invoices in SQLite.")],
    )
    assert await capture(server, team.carol, hers) == [{"id": "c1", "stored": 1}]
    assert await texts(server, team.carol) == ["Carol keeps the billing service invoices in SQLite."]
    told_carol = await recall(server, team.carol, QUESTION, "carol-2")
    assert "PostgreSQL 16" not in told_carol and "alice" not in told_carol
    assert "SQLite" in told_carol  # her own memory still answers her
    assert "SQLite" not in await recall(server, team.bob, QUESTION, "bob-2")


async def test_the_routes_refuse_as_mcp_does(start_server: ServerStarter, tmp_path: Path) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    for path in ("/hooks/recall", "/hooks/capture"):
        missing = await post(server, path, None, {"events": []})
        assert missing.status_code == 401
        assert challenge(missing)["scope"] == "read write"
        wrong = await post(server, path, "mmt_not-a-token", {"events": []})
        assert wrong.status_code == 401 and challenge(wrong)["error"] == "invalid_token"
    # A token without write may recall, not capture; nothing is stored.
    refused = await post(server, "/hooks/capture", team.alice_reads.token, {"events": [decided()]})
    assert refused.status_code == 403
    assert challenge(refused)["error"] == "insufficient_scope" and challenge(refused)["scope"] == "read write"
    assert (await recall(server, team.alice_reads, QUESTION, "a-2")) == ""
    assert await texts(server, team.olga, space="acme-api") == []


async def test_the_routes_are_on_sse_too(start_server: ServerStarter, tmp_path: Path) -> None:
    team = Team()
    server = start_server(
        "sse",
        tmp_path / "data",
        {
            "MCP_MEMORY_SECURITY__TOKENS": json.dumps([c.entry() for c in team.all()]),
            "MCP_MEMORY_SECURITY__SPACES": json.dumps(SPACES),
        },
    )
    assert (await post(server, "/hooks/capture", None, {"events": []})).status_code == 401
    assert await capture(server, team.alice, decided()) == [{"id": "e1", "stored": 2}]
    assert "alice, 3 days ago" in await recall(server, team.bob, QUESTION, "bob-1")


async def test_a_bad_event_is_refused_alone_and_no_file_is_read(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team, MCP_MEMORY_MAX_CONTENT_CHARS="2000")
    # A transcript on the server's own disk, named by a request: never read.
    transcript = tmp_path / "server-side.jsonl"
    transcript.write_text(
        json.dumps(
            {
                "type": "user",
                "uuid": "t1",
                "timestamp": "2026-03-02T09:00:00Z",
                "message": {"role": "user", "content": "SERVER FILE CONTENTS must never be stored"},
            }
        )
        + "\n"
    )
    later = event(
        "e9",
        "alice-1",
        [item("u9", "prompt", "user", "Then we moved invoices to the queue.", at(3600))],
    )
    batch = [
        decided(),
        event("bad-kind", "alice-1", [item("x1", "thought", "user", "a kind nobody sends")]),
        event("bad-role", "alice-1", [item("x2", "prompt", "wizard", "a role nobody has")]),
        event("too-long", "alice-1", [item("x3", "prompt", "user", "x" * 2001)]),
        {"id": "no-items", "entry": decided()["entry"]},
        event("no-session", "", [item("x4", "prompt", "user", "whose session?")]),
        event("file", "alice-1", [], transcript_path=str(transcript)),
        "not an event",
        later,
    ]
    results = await capture(server, team.alice, *batch)
    assert [r.get("id") for r in results] == [
        "e1",
        "bad-kind",
        "bad-role",
        "too-long",
        "no-items",
        "no-session",
        "file",
        None,
        "e9",
    ]
    assert results[0] == {"id": "e1", "stored": 2} and results[-1] == {"id": "e9", "stored": 1}
    assert results[6] == {"id": "file", "stored": 0}
    reasons = {r["id"]: r["rejected"] for r in results if "rejected" in r}
    assert "kind" in reasons["bad-kind"] and "role" in reasons["bad-role"]
    assert "2001 characters" in reasons["too-long"] and "items" in reasons["no-items"]
    assert "session" in reasons["no-session"] and "JSON object" in reasons[None]
    assert all(len(r) <= 300 for r in reasons.values())
    stored = await texts(server, team.olga, space="acme-api")
    assert sorted(stored) == sorted([ASKED, DECISION, "Then we moved invoices to the queue."])
    # A body that is no batch at all: 400, nothing stored.
    assert (await post(server, "/hooks/capture", team.alice.token, {"event": []})).status_code == 400


async def test_a_member_sees_and_forgets_their_captured_turns_and_the_owner_sees_the_trail(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    assert await capture(server, team.alice, decided()) == [{"id": "e1", "stored": 2}]
    async with bearer_client(server, team.alice.token) as alice:
        page = await call(alice, "list_memories", space="acme-api", limit=100)
        theirs = {m["content"]: m for m in page["memories"]}
        assert {m["author"] for m in theirs.values()} == {"alice"}
        reply_id = theirs[DECISION]["id"]
        found = await call(alice, "search_memory", query="PostgreSQL billing", space="acme-api")
        assert reply_id in {h["id"] for h in found["results"]}
    async with bearer_client(server, team.bob.token) as bob:  # a writer forgets only what they wrote
        assert "alice wrote" in await call_error(bob, "forget", memory_id=reply_id, space="acme-api")
    async with bearer_client(server, team.alice.token) as alice:
        await call(alice, "forget", memory_id=reply_id, space="acme-api")
    assert await texts(server, team.olga, space="acme-api") == [ASKED]
    async with bearer_client(server, team.olga.token) as olga:
        records = (await trail(olga, "memory://spaces/acme-api/audit"))["records"]
    done = [(r["actor"], r["action"], r["tool"]) for r in reversed(records) if r["action"] != "membership"]
    assert ("alice", "add", "hooks:capture") in done and ("alice", "forget", "forget") in done
    added = [r for r in records if r["action"] == "add"]
    assert {short_id(i) for r in added for i in r["memory_ids"]} >= {short_id(reply_id)}


async def test_a_name_from_the_identity_provider_says_who(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    with local_issuer() as issuer:
        server = start_server(
            "http", tmp_path / "data", oauth_env(issuer, MCP_MEMORY_SECURITY__SPACES=json.dumps(SPACES))
        )
        alice = issuer.mint(issuer.claims(server.url, sub="alice", name="Alice Liddell"))
        bob = issuer.mint(issuer.claims(server.url, sub="bob", preferred_username="bob@acme.example"))
        assert await capture(server, Credential("alice", alice), decided()) == [{"id": "e1", "stored": 2}]
        told = await recall(server, Credential("bob", bob), QUESTION, "bob-1")
        assert "Alice Liddell, 3 days ago" in told, told


async def test_a_backend_outage_answers_503_and_the_batch_is_stored_once_later(
    start_server: ServerStarter, tmp_path: Path, private_redis: RedisServer
) -> None:
    team = Team()
    server = start(
        start_server,
        tmp_path,
        team,
        MCP_MEMORY_WORKING__BACKEND="redis",
        MCP_MEMORY_WORKING__REDIS_URL=private_redis.url,
        MCP_MEMORY_WORKING__TIMEOUT_SECONDS="1",
        MCP_MEMORY_WORKING__RETRIES="1",
    )
    assert await capture(server, team.alice, decided()) == [{"id": "e1", "stored": 2}]
    later = event(
        "e2", "alice-1", [item("u2", "prompt", "user", "Then we moved invoices to the queue.", at(60))]
    )
    private_redis.stop()
    down = await post(server, "/hooks/capture", team.alice.token, {"events": [decided(), later]})
    assert down.status_code == 503, down.text
    assert int(down.headers["retry-after"]) > 0 and "results" not in down.json()
    private_redis.start()  # back (empty): the courier sends the same batch again
    assert [r["id"] for r in await capture(server, team.alice, decided(), later)] == ["e1", "e2"]
    stored = await texts(server, team.olga, space="acme-api")
    assert sorted(stored) == sorted([ASKED, DECISION, "Then we moved invoices to the queue."])
