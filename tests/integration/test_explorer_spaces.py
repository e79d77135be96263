"""The explorer (/ui) with shared spaces, in process over HTTP with bearer tokens: members see a space's
threads and memories with their space and author and can filter by space; a non-member sees nothing
of it, and naming it answers as naming no space; a reader cannot forget there; a writer forgets only
what they wrote."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest

from mcp_memory.config import Settings, SpaceSettings, TokenEntry
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.models import Owner
from mcp_memory.search.query import SearchQuery
from mcp_memory.security.static_tokens import hash_token, new_token
from mcp_memory.ui.app import standalone_app
from tests.integration.test_explorer_http import ORIGIN, Site, bearer, csrf_of, error_of

pytestmark = pytest.mark.anyio

TOKENS = {user: new_token() for user in ("olga", "ann", "rita", "nora")}
SECRET = "osprey staging listens on 5439"


@pytest.fixture
async def team_site(fast_settings: Settings) -> AsyncIterator[Site]:
    entries = [
        TokenEntry(
            sha256=hash_token(token), user_id=user, name=user, groups=["g-read"] if user == "rita" else []
        )
        for user, token in TOKENS.items()
    ]
    space = SpaceSettings(name="team", members={"olga": "owner", "ann": "writer", "group:g-read": "reader"})
    security = fast_settings.security.model_copy(update={"tokens": entries, "spaces": [space]})
    settings = fast_settings.model_copy(update={"security": security})
    host = ServiceHost(settings)
    async with host.use():
        service = host.service
        await service.add_turn(Owner("ann", "team", "writer"), "plan", "user", SECRET)
        await service.add_turn(Owner("olga", "team", "owner"), "plan", "assistant", "noted by olga")
        await service.add_turn(Owner("ann"), "own", "user", "ann's own note")
        yield Site(standalone_app(host, settings), host)


async def page(site: Site, user: str, path: str) -> httpx2.Response:
    async with site.client() as client:
        return await client.get(f"/ui{path}", headers=bearer(TOKENS[user]))


async def test_members_see_the_space_with_each_memorys_space_and_author(team_site: Site) -> None:
    for user in ("olga", "ann", "rita"):
        threads = await page(team_site, user, "/threads")
        assert threads.status_code == 200
        assert 'href="/ui/threads/plan?space=team"' in threads.text
        thread = await page(team_site, user, "/threads/plan?space=team")
        assert SECRET in thread.text and '<small class="author">ann</small>' in thread.text
        listed = await page(team_site, user, "/memories?space=team")
        assert SECRET in listed.text and "by ann" in listed.text and "ann&#39;s own note" not in listed.text
        assert "by olga" in listed.text
        found = await page(team_site, user, "/search?q=staging+5439")
        assert SECRET in found.text and '<span class="badge space">team</span>' in found.text
    mine = await page(team_site, "ann", "/memories?space=personal")
    assert "ann&#39;s own note" in mine.text and SECRET not in mine.text
    both = await page(team_site, "ann", "/memories")
    assert "ann&#39;s own note" in both.text and SECRET in both.text


async def test_a_non_member_sees_nothing_of_the_space_and_cannot_tell_it_exists(team_site: Site) -> None:
    turn_id = (
        (
            await team_site.service.search(
                SearchQuery.of(Owner("ann", "team", "writer"), "staging", settings=team_site.service.settings)
            )
        )
        .results[0]
        .id
    )
    for path in ("/threads", "/memories", "/search?q=osprey+staging", "/memories?types=turn&order=oldest"):
        response = await page(team_site, "nora", path)
        assert response.status_code == 200 and SECRET not in response.text and "team" not in response.text, (
            path
        )
    answers = []
    for name in ("team", "nosuch"):
        response = await page(team_site, "nora", f"/memories?space={name}")
        answers.append((response.status_code, error_of(response).replace(name, "X")))
    assert answers[0] == answers[1] and answers[0][0] == 404
    thread = await page(team_site, "nora", "/threads/plan?space=team")
    assert thread.status_code == 404 and SECRET not in thread.text
    memory = await page(team_site, "nora", f"/memories/{turn_id}")
    nowhere = await page(team_site, "nora", "/memories/turn_0123456789abcdef0123456789abcdef")
    assert memory.status_code == nowhere.status_code == 404
    assert error_of(memory).replace(turn_id, "X") == error_of(nowhere).replace(
        "turn_0123456789abcdef0123456789abcdef", "X"
    )


async def forget_memory(site: Site, user: str, memory_id: str) -> httpx2.Response:
    async with site.client() as client:
        form = await client.get("/ui/forget", headers=bearer(TOKENS[user]))
        data = {"csrf": csrf_of(form.text), "memory_id": memory_id, "confirm": "1"}
        return await client.post("/ui/forget", data=data, headers={**bearer(TOKENS[user]), "Origin": ORIGIN})


async def test_forgetting_in_a_space_follows_the_roles(team_site: Site) -> None:
    listed = await team_site.service.search(
        SearchQuery.of(
            Owner("olga", "team", "owner"), "staging noted", limit=5, settings=team_site.service.settings
        )
    )
    by_author = {hit.author: hit.id for hit in listed.results if hit.type == "turn"}
    refused = await forget_memory(team_site, "rita", by_author["ann"])
    assert refused.status_code == 403 and "needs the writer role in space &#39;team&#39;" in error_of(refused)
    refused = await forget_memory(team_site, "ann", by_author["olga"])
    assert refused.status_code == 403 and "may forget only what you wrote" in error_of(refused)
    done = await forget_memory(team_site, "ann", by_author["ann"])
    assert done.status_code == 200 and "receipt-done" in done.text
    left = await team_site.service.get_working_memory(Owner("olga", "team", "owner"), "plan")
    assert [m.author for m in left.messages] == ["olga"]
