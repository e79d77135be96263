"""The explorer's audit page (/ui/audit) in process over HTTP with real bearer tokens (issue 39): a
space's owner reads who changed or read what there, and when (who removed a thread, even from the
explorer itself); an admin reads any trail and every one, and verifies the chain; everyone reads their
own; a writer, a reader and a non-member of the space are refused with PermissionDeniedError's words.
The page shows memory ids and counts, never a memory's text."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from pathlib import Path

import httpx2
import pytest

from mcp_memory.audit import Actor, acting
from mcp_memory.config import Settings, SpaceSettings, TokenEntry
from mcp_memory.learning import Learning
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.models import Owner
from mcp_memory.security.static_tokens import hash_token, new_token
from mcp_memory.storage.sqlite.audit import SqliteAuditLog
from mcp_memory.ui.app import standalone_app
from tests.integration.test_explorer_http import ORIGIN, Site, bearer, csrf_of, error_of, has

pytestmark = pytest.mark.anyio

USERS = ("olga", "ann", "rita", "nora", "root")
TOKENS = {user: new_token() for user in USERS}
SECRET = "kingfisher"  # in every turn written: never on an audit page
OWNER_ONLY = "reading the audit trail of space &#39;team&#39; needs its owner role"


@pytest.fixture
async def team_site(fast_settings: Settings) -> AsyncIterator[Site]:
    """olga owns the space team, ann writes there, rita reads through a group, nora is no member, root
    is an admin. Ann and Olga wrote in the thread plan, Ann a turn of her own."""
    entries = [
        TokenEntry(
            sha256=hash_token(token),
            user_id=user,
            name=user,
            scopes=["admin"] if user == "root" else ["read", "write"],
            groups=["g-read"] if user == "rita" else [],
        )
        for user, token in TOKENS.items()
    ]
    space = SpaceSettings(name="team", members={"olga": "owner", "ann": "writer", "group:g-read": "reader"})
    security = fast_settings.security.model_copy(update={"tokens": entries, "spaces": [space]})
    settings = fast_settings.model_copy(update={"security": security})
    host = ServiceHost(settings)
    async with host.use():
        service = host.service
        with acting(Actor("ann", client="ann", tool="add_turn")):
            await service.add_turn(Owner("ann", "team", "writer"), "plan", "user", f"{SECRET} is 5439")
            await service.add_turn(Owner("ann"), "own", "user", f"my own {SECRET}")
        with acting(Actor("olga", client="olga", tool="add_turn")):
            await service.add_turn(Owner("olga", "team", "owner"), "plan", "assistant", f"{SECRET} noted")
        yield Site(standalone_app(host, settings), host)


async def get(site: Site, user: str, path: str) -> httpx2.Response:
    async with site.client() as client:
        return await client.get(f"/ui{path}", headers=bearer(TOKENS[user]))


class _Rows(HTMLParser):
    """The audit table's rows: each cell's text by its class, and the memory links of the row."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[dict[str, str]] = []
        self.cell: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "tr" and found.get("class") == "record":
            self.rows.append({"links": ""})
        elif tag == "td" and self.rows:
            self.cell = (found.get("class") or "").split()[0]
            self.rows[-1][self.cell] = ""
        elif tag == "a" and self.rows and "memory-link" in (found.get("class") or ""):
            self.rows[-1]["links"] += (found.get("href") or "") + " "

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "tr"):
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None and self.rows:
            self.rows[-1][self.cell] += data


def rows_of(html: str) -> list[dict[str, str]]:
    parser = _Rows()
    parser.feed(html)
    return [{k: " ".join(v.split()) for k, v in row.items()} for row in parser.rows]


def actions_of(html: str) -> list[tuple[str, str]]:
    """Who did what, newest first; the membership the server saw first (test_membership_...) left out."""
    rows = [(row["actor"].split()[0], row["action"]) for row in rows_of(html)]
    return [row for row in rows if row[1] != "membership"]


async def forget_thread(site: Site, user: str, thread: str, space: str) -> httpx2.Response:
    async with site.client() as client:
        form = await client.get("/ui/forget", headers=bearer(TOKENS[user]))
        data = {"csrf": csrf_of(form.text), "thread_id": thread, "space": space, "confirm": "1"}
        return await client.post("/ui/forget", data=data, headers={**bearer(TOKENS[user]), "Origin": ORIGIN})


async def test_the_owner_sees_who_removed_the_thread_and_when_without_any_memory_text(
    team_site: Site,
) -> None:
    before = await team_site.service.get_working_memory(Owner("olga", "team", "owner"), "plan")
    turn_ids = sorted(m.id for m in before.messages)
    assert (await forget_thread(team_site, "olga", "plan", "team")).status_code == 200
    page = await get(team_site, "olga", "/audit?space=team&action=forget&thread_id=plan")
    assert page.status_code == 200
    [row] = rows_of(page.text)
    assert (row["actor"], row["action"], row["tool"], row["ledger"], row["thread"]) == (
        "olga (olga)",
        "forget",
        "explorer:forget",  # removed from the explorer: named as its visitor, not the server's user
        "space team",
        "plan",
    )
    assert row["ids"].startswith("2 ") and row["counts"] == "2 turn" and row["outcome"] == "ok"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", row["when"])
    assert sorted(row["links"].split()) == sorted(f"/ui/memories/{i}" for i in turn_ids)
    everything = await get(team_site, "olga", "/audit?space=team")
    assert actions_of(everything.text) == [("olga", "forget"), ("olga", "add"), ("ann", "add")]
    for shown in (page, everything):
        assert SECRET not in shown.text  # ids and counts, never text


async def test_only_the_owner_and_an_admin_read_the_space_trail(team_site: Site) -> None:
    expected = [("olga", "add"), ("ann", "add")]
    for user in ("olga", "root"):
        page = await get(team_site, user, "/audit?space=team")
        assert page.status_code == 200, (user, page.text[:1000])
        assert actions_of(page.text) == expected, user
        assert SECRET not in page.text
    for user in ("ann", "rita", "nora"):  # writer, reader, non-member
        refused = await get(team_site, user, "/audit?space=team")
        assert refused.status_code == 403, user
        assert error_of(refused) == OWNER_ONLY, user
        assert "www-authenticate" not in refused.headers  # a role, not a scope: as every role refusal
        assert SECRET not in refused.text
    # A space that does not exist is refused with the same words: the page tells no space apart.
    nowhere = await get(team_site, "nora", "/audit?space=nosuch")
    assert nowhere.status_code == 403 and error_of(nowhere) == OWNER_ONLY.replace("team", "nosuch")


async def test_everyone_reads_their_own_trail_and_nobody_elses(team_site: Site) -> None:
    ann = await get(team_site, "ann", "/audit")
    assert ann.status_code == 200
    [own] = rows_of(ann.text)
    assert (own["actor"], own["action"], own["ledger"], own["thread"]) == ("ann (ann)", "add", "ann", "own")
    assert SECRET not in ann.text
    for user in ("olga", "rita", "nora", "root"):
        page = await get(team_site, user, "/audit")
        assert page.status_code == 200 and rows_of(page.text) == [], user
        assert "No records match." in page.text


async def test_an_admin_reads_every_trail_and_verifies_the_chain(team_site: Site) -> None:
    page = await get(team_site, "root", "/audit?space=*")
    assert page.status_code == 200
    assert {row["ledger"] for row in rows_of(page.text)} == {"space team", "ann"}
    assert len(actions_of(page.text)) == 3 and SECRET not in page.text
    assert has(page.text, "form", "verify")
    for user in ("olga", "ann"):
        refused = await get(team_site, user, "/audit?space=*")
        assert refused.status_code == 403
        assert error_of(refused) == "reading every audit trail needs the admin scope"
        challenge = refused.headers["www-authenticate"]  # a scope it lacks: RFC 6750, as the explorer says
        assert 'error="insufficient_scope"' in challenge and "admin" in challenge
        assert not has((await get(team_site, user, "/audit")).text, "form", "verify")

    metrics = team_site.service.metrics.registry
    async with team_site.client() as client:
        verified = await client.post(
            "/ui/audit/verify", data={"csrf": csrf_of(page.text)}, headers=bearer(TOKENS["root"])
        )
        assert verified.status_code == 200
        assert (
            "4 records in 2 chains, every chain is intact" in verified.text
        )  # 3 changes and the membership first seen
        assert metrics.get_sample_value("mcp_memory_audit_verifications_total", {"result": "ok"}) == 1
        for user in ("olga", "ann", "nora"):
            refused = await client.post(
                "/ui/audit/verify", data={"csrf": csrf_of(page.text)}, headers=bearer(TOKENS[user])
            )
            assert refused.status_code == 403 and "needs the admin scope" in error_of(refused), user
            assert "insufficient_scope" in refused.headers["www-authenticate"]
    # In a browser (the token in its cookie), only a form with this page's CSRF value is run.
    async with team_site.client() as browser:
        login = {"token": TOKENS["root"], "csrf": csrf_of((await browser.get("/ui/login")).text)}
        assert (await browser.post("/ui/login", data=login)).status_code == 303
        page = await browser.get("/ui/audit")
        assert has(page.text, "form", "verify")
        forged = await browser.post("/ui/audit/verify", data={"csrf": "x" * 43}, headers={"Origin": ORIGIN})
        assert forged.status_code == 403
        across = await browser.post(
            "/ui/audit/verify", data={"csrf": csrf_of(page.text)}, headers={"Sec-Fetch-Site": "cross-site"}
        )
        assert across.status_code == 403
        assert metrics.get_sample_value("mcp_memory_audit_verifications_total", {"result": "ok"}) == 1
        verified = await browser.post(
            "/ui/audit/verify", data={"csrf": csrf_of(page.text)}, headers={"Origin": ORIGIN}
        )
        assert verified.status_code == 200 and "4 records in 2 chains, every chain is intact" in verified.text
    assert metrics.get_sample_value("mcp_memory_audit_verifications_total", {"result": "ok"}) == 2


async def test_verify_names_the_record_that_was_edited(team_site: Site) -> None:
    log = team_site.service.audit.log
    assert isinstance(log, SqliteAuditLog)
    with sqlite3.connect(Path(log.db.path)) as db:
        where = "WHERE ledger = '@team' AND seq = 2"
        text = db.execute(f"SELECT record FROM audit_log {where}").fetchone()[0]
        edited = json.loads(text) | {"counts": {"turn": 99}}
        db.execute(f"UPDATE audit_log SET record = ? {where}", (json.dumps(edited),))
    page = await get(team_site, "root", "/audit")
    async with team_site.client() as client:
        verified = await client.post(
            "/ui/audit/verify", data={"csrf": csrf_of(page.text)}, headers=bearer(TOKENS["root"])
        )
    assert verified.status_code == 200 and "broken in ledger @team at record 2: it " in verified.text
    metrics = team_site.service.metrics.registry
    assert metrics.get_sample_value("mcp_memory_audit_verifications_total", {"result": "broken"}) == 1


async def test_the_filters_and_the_older_link_page_through_the_trail(team_site: Site) -> None:
    newest = await get(team_site, "olga", "/audit?space=team&action=add&limit=1")
    assert actions_of(newest.text) == [("olga", "add")]
    older = re.search(r'id="older"[^>]*href="([^"]+)"', newest.text)
    assert older, "no link to older records"
    link = older.group(1).replace("&amp;", "&")
    assert link.startswith("/ui/audit?") and "space=team" in link and "limit=1" in link
    assert actions_of((await get(team_site, "olga", link.removeprefix("/ui"))).text) == [("ann", "add")]
    by_actor = await get(team_site, "olga", "/audit?space=team&actor=ann")
    assert actions_of(by_actor.text) == [("ann", "add")]
    bad = await get(team_site, "olga", "/audit?space=team&limit=many")
    assert bad.status_code == 400 and "limit" in error_of(bad)


async def test_the_navigation_and_the_spaces_pages_link_to_the_trail_for_its_readers(team_site: Site) -> None:
    for user in ("olga", "ann"):
        threads = await get(team_site, user, "/threads")
        assert 'href="/ui/audit"' in threads.text, user  # everyone has a trail of their own
    thread = await get(team_site, "olga", "/threads/plan?space=team")
    assert 'id="audit-link" href="/ui/audit?space=team&amp;thread_id=plan"' in thread.text
    listed = await get(team_site, "olga", "/memories?space=team")
    assert 'id="audit-link" href="/ui/audit?space=team"' in listed.text
    for user in ("ann", "rita"):  # members, not owners: no link to a trail they may not read
        thread = await get(team_site, user, "/threads/plan?space=team")
        assert thread.status_code == 200 and "audit-link" not in thread.text, user
        assert "audit-link" not in (await get(team_site, user, "/memories?space=team")).text, user
    own = await get(team_site, "ann", "/threads/own")
    assert 'id="audit-link" href="/ui/audit?thread_id=own"' in own.text


async def test_an_edit_and_a_rollback_in_the_explorer_are_in_the_trail_as_its_visitor(
    team_site: Site,
) -> None:
    learning = team_site.service.learning
    assert isinstance(learning, Learning)
    fact = await learning.editor.remember("ann", f"The user likes {SECRET}s", "semantic", None)
    async with team_site.client() as client:
        page = await client.get(f"/ui/memories/{fact.id}", headers=bearer(TOKENS["ann"]))
        edit = {"csrf": csrf_of(page.text), "content": "The user likes herons"}
        edited = await client.post(f"/ui/memories/{fact.id}/edit", data=edit, headers=bearer(TOKENS["ann"]))
        assert edited.status_code == 303
        revision = (await learning.editor.history(Owner("ann"), fact.id)).revisions[0].id
        rollback = {"csrf": csrf_of(page.text), "revision_id": revision}
        rolled = await client.post(
            f"/ui/memories/{fact.id}/rollback", data=rollback, headers=bearer(TOKENS["ann"])
        )
        assert rolled.status_code == 303
    trail = await get(team_site, "ann", "/audit?action=update")
    [row] = rows_of(trail.text)
    assert (row["actor"], row["tool"], row["links"].strip()) == (
        "ann (ann)",
        "explorer:edit_memory",
        f"/ui/memories/{fact.id}",
    )
    [row] = rows_of((await get(team_site, "ann", "/audit?action=rollback")).text)
    assert (row["actor"], row["tool"]) == ("ann (ann)", "explorer:rollback_memory")


async def test_what_a_member_reads_in_the_explorer_is_in_the_space_trail(team_site: Site) -> None:
    assert (await get(team_site, "rita", "/threads/plan?space=team")).status_code == 200
    found = await get(team_site, "rita", "/search?q=5439&mode=text&space=team")
    assert found.status_code == 200 and SECRET in found.text
    assert (await get(team_site, "ann", "/threads/own")).status_code == 200  # her own: not recorded
    page = await get(team_site, "olga", "/audit?space=team&action=read")
    rows = rows_of(page.text)
    assert [(r["actor"], r["tool"]) for r in rows] == [
        ("rita (rita)", "explorer:search"),
        ("rita (rita)", "explorer:thread"),
    ]
    assert int(rows[0]["ids"].split()[0]) >= 1 and rows[1]["ids"].startswith("2 ")  # the hits; the turns
    assert SECRET not in page.text
    assert [a for _, a in actions_of((await get(team_site, "ann", "/audit")).text)] == ["add"]
