"""The audit trail on a real server over streamable HTTP with real bearer tokens (issue 39): who changed
or read a space's memories, when and through which client, for its owners; one's own trail for everyone;
every trail for an admin and the operator's `mcp-memory audit`; nobody else. Records hold ids and
counts, never text; the chain verifies, survives forget_user's pseudonyms, and names an edited record.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.integration.test_explorer_audit import rows_of
from tests.security.bearer import Credential, credential, start_with_tokens
from tests.security.test_spaces import Team, as_, start
from tests.services.mcp_client import call
from tests.services.server_process import NetworkServer, ServerStarter, mcp_memory_command

pytestmark = pytest.mark.anyio

SECRET = "kingfisher"


async def trail(client: Client, uri: str) -> dict[str, Any]:
    page: dict[str, Any] = json.loads((await client.read_resource(uri)).contents[0].text)
    return page


async def refused(client: Client, uri: str) -> str:
    with pytest.raises(MCPError) as caught:
        await client.read_resource(uri)
    return str(caught.value)


def cli(server: NetworkServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [mcp_memory_command(), "audit", *args],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def _work_in_the_space(server: NetworkServer, team: Team) -> dict[str, str]:
    async with as_(server, team.ann) as ann:
        turn = await call(
            ann, "add_turn", thread_id="plan", role="user", content=f"{SECRET} is 5439", space="team"
        )
        fact = await call(ann, "remember", content=f"The team picked {SECRET}", space="team")
        await call(ann, "add_turn", thread_id="mine", role="user", content=f"my own {SECRET}")
    async with as_(server, team.rita) as rita:
        found = await call(rita, "search_memory", query=SECRET, space="team")
    async with as_(server, team.olga) as olga:
        mine = await call(olga, "add_turn", thread_id="plan", role="assistant", content="noted", space="team")
        await call(olga, "forget", thread_id="plan", space="team")
    return {
        "turn": turn["id"],
        "fact": fact["id"],
        "olga_turn": mine["id"],
        "found": ",".join(sorted(h["id"] for h in found["results"])),
    }


async def test_an_owner_sees_who_removed_a_thread_and_when_and_no_record_holds_text(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    ids = await _work_in_the_space(server, team)
    async with as_(server, team.olga) as olga:
        removed = await trail(olga, "memory://spaces/team/audit?action=forget&thread_id=plan")
        everything = await trail(olga, "memory://spaces/team/audit")
    everything["records"] = [r for r in everything["records"] if r["action"] != "membership"]
    [forget] = removed["records"]
    assert (forget["actor"], forget["client"], forget["tool"], forget["ledger"]) == (
        "olga",
        "olga-read-write",
        "forget",
        "@team",
    )
    assert set(forget["memory_ids"]) == {ids["turn"], ids["olga_turn"]} and forget["counts"]["turn"] == 2
    actions = [(r["actor"], r["action"], r["tool"]) for r in reversed(everything["records"])]
    assert actions == [
        ("ann", "add", "add_turn"),
        ("ann", "add", "remember"),
        ("rita", "read", "search_memory"),
        ("olga", "add", "add_turn"),
        ("olga", "forget", "forget"),
    ]
    read = everything["records"][2]
    assert ",".join(sorted(read["memory_ids"])) == ids["found"] and ids["found"]
    assert [r["memory_ids"] for r in reversed(everything["records"])][:2] == [[ids["turn"]], [ids["fact"]]]
    assert SECRET not in json.dumps(everything)  # ids and counts, never text
    # The personal turn Ann wrote is in her trail, not the space's.
    assert all(r["thread_id"] != "mine" for r in everything["records"])
    # The same answer from one command, and the chain verifies.
    shown = cli(server, "show", "--space", "team", "--action", "forget", "--thread", "plan")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "olga (olga-read-write): forget in @team thread plan, 2 ids (2 turn)" in shown.stdout
    verified = cli(server, "verify")
    assert verified.returncode == 0 and "every chain is intact" in verified.stdout, (
        verified.stdout + verified.stderr
    )
    # One ledger's chain alone: the space's, Ann's own.
    for ledger, expected in (
        (("--space", "team"), "in 1 chain,"),
        (("--user", "ann"), "1 records in 1 chain,"),
    ):
        one = cli(server, "verify", *ledger)
        assert one.returncode == 0 and expected in one.stdout, one.stdout + one.stderr


async def test_the_explorer_shows_the_owner_who_removed_the_thread_and_refuses_the_writer(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    ids = await _work_in_the_space(server, team)
    url = f"{server.base_url}/ui/audit?space=team&action=forget&thread_id=plan"
    async with httpx2.AsyncClient(timeout=60) as http:
        shown = await http.get(url, headers={"Authorization": f"Bearer {team.olga.token}"})
        refused = await http.get(url, headers={"Authorization": f"Bearer {team.ann.token}"})
        members = await http.get(
            f"{server.base_url}/ui/audit?space=team&action=membership",
            headers={"Authorization": f"Bearer {team.olga.token}"},
        )
    assert shown.status_code == 200, shown.text[:2000]
    [row] = rows_of(shown.text)
    assert (row["actor"], row["action"], row["tool"], row["ledger"], row["thread"]) == (
        "olga (olga-read-write)",
        "forget",
        "forget",
        "space team",
        "plan",
    )
    assert sorted(row["links"].split()) == sorted(f"/ui/memories/{ids[k]}" for k in ("turn", "olga_turn"))
    assert SECRET not in shown.text
    assert (
        refused.status_code == 403 and "needs its owner role" in refused.text and SECRET not in refused.text
    )
    [seen] = rows_of(members.text)  # the members the server saw first, with their roles
    assert (seen["actor"], seen["action"]) == ("cli:settings (security.spaces)", "membership")
    assert seen["counts"].startswith("3 added") and "olga owner" in seen["counts"]


async def test_each_role_reads_only_the_trails_it_may(start_server: ServerStarter, tmp_path: Path) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    await _work_in_the_space(server, team)
    space = "memory://spaces/team/audit"
    async with as_(server, team.olga) as olga:  # owner
        assert len((await trail(olga, space))["records"]) == 6  # with the membership seen first
        own = await trail(olga, "memory://audit")
        assert own["ledger"] == "olga" and own["records"] == []
    async with as_(server, team.admin) as admin:  # admin: any space's
        assert len((await trail(admin, space))["records"]) == 6
    for who, role in ((team.ann, "writer"), (team.rita, "reader"), (team.nora, "non-member")):
        async with as_(server, who) as client:
            assert "needs its owner role" in await refused(client, space), role
            mine = await trail(client, "memory://audit")  # everyone reads their own
            assert {r["ledger"] for r in mine["records"]} <= {who.user_id}, role
    async with as_(server, team.ann) as ann:
        [own_turn] = (await trail(ann, "memory://audit"))["records"]
        assert (own_turn["thread_id"], own_turn["action"]) == ("mine", "add")
        assert "needs its owner role" in await refused(ann, "memory://spaces/elsewhere/audit")
        assert "needs its owner role" in await refused(ann, "memory://spaces/no-such-space/audit")


async def test_forget_user_leaves_a_pseudonym_and_a_chain_that_verifies_until_a_record_is_edited(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    ids = await _work_in_the_space(server, team)
    async with as_(server, team.admin) as admin:
        await call(admin, "forget_user", user_id="ann")
    async with as_(server, team.olga) as olga:
        page = await trail(olga, "memory://spaces/team/audit")
    assert "ann" not in {r["actor"] for r in page["records"]}
    # Nor anywhere in what she did; a membership record names her only while the settings still do.
    assert "ann" not in json.dumps([r for r in page["records"] if r["action"] != "membership"])
    aliases = {r["actor"] for r in page["records"] if r["actor"].startswith("anon-")}
    assert len(aliases) == 1  # one stable pseudonym for all she did
    forgotten = [r for r in page["records"] if r["action"] == "forget_user"]
    assert forgotten and forgotten[0]["actor"] == "root" and ids["fact"] in forgotten[0]["memory_ids"]
    verified = cli(server, "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    # An edit in the file: the record that changed is named.
    seq = page["records"][-2]["seq"]
    with sqlite3.connect(Path(server.env["MCP_MEMORY_DATA_DIR"]) / "memory.db") as db:
        text = db.execute("SELECT record FROM audit_log WHERE seq = ?", (seq,)).fetchone()[0]
        edited = json.loads(text) | {"actor": "olga"}
        db.execute("UPDATE audit_log SET record = ?, actor = 'olga' WHERE seq = ?", (json.dumps(edited), seq))
    broken = cli(server, "verify")
    assert broken.returncode == 1 and f"at record {seq}:" in broken.stdout, broken.stdout + broken.stderr
    exported = cli(server, "export", "--space", "team")
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert exported.returncode == 0 and [r["seq"] for r in lines] == sorted(r["seq"] for r in page["records"])


async def test_a_writer_taking_back_their_part_of_a_thread_is_one_record_of_all_of_it(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    team = Team()
    server = start(start_server, tmp_path, team)
    async with as_(server, team.ann) as ann:
        said = [
            await call(ann, "add_turn", thread_id="t2", role="user", content=f"part {i}", space="team")
            for i in range(3)
        ]
        mine = [added["id"] for added in said]
    async with as_(server, team.olga) as olga:
        await call(olga, "add_turn", thread_id="t2", role="user", content="stays", space="team")
    async with as_(server, team.ann) as ann:
        await call(ann, "forget", thread_id="t2", space="team", dry_run=True)  # a dry run records nothing
        await call(ann, "forget", thread_id="t2", space="team")
    async with as_(server, team.olga) as olga:
        [record] = (await trail(olga, "memory://spaces/team/audit?action=forget"))["records"]
    assert (record["actor"], record["thread_id"], sorted(record["memory_ids"])) == ("ann", "t2", sorted(mine))
    assert record["counts"] == {"turn": 3}


MINUTE = 60.0  # the target: two writers and an owner at work in one space for a minute
MAX_CALLS = 3000  # and at most this many calls each, whatever the speed


async def _worker(
    server: NetworkServer, who: Credential, thread: str, done: list[tuple[str, str, str]]
) -> None:
    """Changes, one after another, until the minute is up: each acknowledged one noted as (tool, id, who)."""
    deadline = anyio.current_time() + MINUTE
    async with as_(server, who) as client:
        for i in range(MAX_CALLS):
            if anyio.current_time() > deadline:
                return
            turn = await call(
                client, "add_turn", thread_id=thread, role="user", content=f"{who.user_id} {i}", space="team"
            )
            done.append(("add_turn", turn["id"], who.user_id))
            if i % 5 == 4:
                fact = await call(client, "remember", content=f"{who.user_id} fact number {i}", space="team")
                done.append(("remember", fact["id"], who.user_id))
            if i % 7 == 6:
                await call(client, "forget", memory_id=turn["id"], space="team")
                done.append(("forget", turn["id"], who.user_id))
            if i % 11 == 10:
                await call(client, "search_memory", query=f"{who.user_id} fact", space="team")


async def test_two_writers_and_an_owner_for_a_minute_each_change_has_one_record_and_the_chain_holds(
    start_server: ServerStarter, tmp_path: Path
) -> None:
    olga, ann, wes = credential("olga"), credential("ann"), credential("wes")
    spaces = [{"name": "team", "members": {"olga": "owner", "ann": "writer", "wes": "writer"}}]
    server = start_with_tokens(
        start_server, tmp_path, [olga, ann, wes], MCP_MEMORY_SECURITY__SPACES=json.dumps(spaces)
    )
    done: list[tuple[str, str, str]] = []
    async with anyio.create_task_group() as group:
        for who, thread in ((ann, "a"), (wes, "w"), (olga, "o")):
            group.start_soon(_worker, server, who, thread, done)
    exported = cli(server, "export", "--space", "team")
    assert exported.returncode == 0, exported.stderr[-2000:]
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    changes = [r for r in records if r["action"] not in ("read", "membership")]
    recorded = sorted((r["tool"], r["memory_ids"][0], r["actor"]) for r in changes if r["outcome"] == "ok")
    assert len(done) > 100 and all(len(r["memory_ids"]) == 1 for r in changes)
    assert recorded == sorted(done)  # every acknowledged change: exactly one record, and no other
    assert all(r["outcome"] == "ok" for r in records)
    assert any(r["action"] == "read" for r in records)
    verified = cli(server, "verify")
    expected = f"audit trail verified: {len(records)} records in 1 chain, every chain is intact"  # one space
    assert verified.returncode == 0 and expected in verified.stdout, verified.stdout + verified.stderr
    # An edit in the file is found, at the record edited.
    middle = changes[len(changes) // 2]["seq"]
    with sqlite3.connect(Path(server.env["MCP_MEMORY_DATA_DIR"]) / "memory.db") as db:
        text = db.execute("SELECT record FROM audit_log WHERE seq = ?", (middle,)).fetchone()[0]
        db.execute("UPDATE audit_log SET record = ? WHERE seq = ?", (text.replace('"ok"', '"OK"'), middle))
    broken = cli(server, "verify")
    assert broken.returncode == 1 and f"broken in ledger @team at record {middle}:" in broken.stdout, (
        broken.stdout
    )
