"""The memory explorer (/ui) over HTTP in process: the app `mcp-memory ui` serves, driven by an ASGI
client while the same ServiceHost is filled through an in-process MCP client (or, for other users,
through the service). Each test is about one protection or one flow, and fails if it is removed:
security headers, escaping of hostile memory text, CSRF, the loopback-only mode without tokens, login,
per-user isolation, scopes, forgetting, editing with rollback, and input errors.

No sleeps and no timers: every request is answered before the next one is sent.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
from mcp import Client
from starlette.routing import Mount
from starlette.types import ASGIApp

from mcp_memory.config import Settings, TokenEntry
from mcp_memory.errors import ConfigError
from mcp_memory.learning import Learning
from mcp_memory.mcp.host import ServiceHost
from mcp_memory.mcp.server import build_server
from mcp_memory.security.static_tokens import hash_token, new_token
from mcp_memory.service.memory_service import MemoryService
from mcp_memory.ui.app import check_explorer_exposure, explorer_mount, standalone_app
from tests.services.mcp_client import call

pytestmark = pytest.mark.anyio

BASE_URL = "http://127.0.0.1:8765"
ORIGIN = BASE_URL  # what a browser sends as Origin for a form of this site
LOOPBACK_PEER = ("127.0.0.1", 50000)
REMOTE_PEER = ("203.0.113.9", 5000)  # TEST-NET-3: never this machine

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
SVG = '"><svg onload=alert(1)>'
# As markupsafe writes them: < > " become &lt; &gt; &#34;
ESCAPED = (
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "&lt;img src=x onerror=alert(1)&gt;",
    "&#34;&gt;&lt;svg onload=alert(1)&gt;",
)


# ---- the site -------------------------------------------------------------------------------------


@dataclass
class Site:
    """The standalone explorer app over one open ServiceHost."""

    app: ASGIApp
    host: ServiceHost
    mcp: Client | None = None  # in-process MCP client as the configured user (no-token sites only)

    @property
    def service(self) -> MemoryService:
        return self.host.service

    def client(self, peer: tuple[str, int] = LOOPBACK_PEER) -> httpx2.AsyncClient:
        """A browser-like client: keeps cookies, never follows redirects."""
        return httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=self.app, client=peer),
            base_url=BASE_URL,
            follow_redirects=False,
        )


@pytest.fixture
async def site(fast_settings: Settings) -> AsyncIterator[Site]:
    """No tokens configured: the explorer serves the configured user to loopback clients."""
    server = build_server(fast_settings)
    async with Client(server, raise_exceptions=False) as mcp:
        yield Site(standalone_app(server.host, fast_settings), server.host, mcp)


@pytest.fixture
async def http(site: Site) -> AsyncIterator[httpx2.AsyncClient]:
    async with site.client() as client:
        yield client


@dataclass(frozen=True)
class Tokens:
    ann: str  # read + write, user ann
    ann_read: str  # read only, user ann
    bob: str  # read + write, user bob
    admin: str  # admin, user root


@pytest.fixture
def tokens() -> Tokens:
    return Tokens(ann=new_token(), ann_read=new_token(), bob=new_token(), admin=new_token())


@pytest.fixture
def token_settings(fast_settings: Settings, tokens: Tokens) -> Settings:
    entries = [
        TokenEntry(sha256=hash_token(tokens.ann), user_id="ann", name="ann-rw", scopes=["read", "write"]),
        TokenEntry(sha256=hash_token(tokens.ann_read), user_id="ann", name="ann-ro", scopes=["read"]),
        TokenEntry(sha256=hash_token(tokens.bob), user_id="bob", name="bob-rw", scopes=["read", "write"]),
        TokenEntry(sha256=hash_token(tokens.admin), user_id="root", name="root", scopes=["admin"]),
    ]
    security = fast_settings.security.model_copy(update={"tokens": entries})
    return fast_settings.model_copy(update={"security": security})


@pytest.fixture
async def token_site(token_settings: Settings) -> AsyncIterator[Site]:
    host = ServiceHost(token_settings)
    async with host.use():
        yield Site(standalone_app(host, token_settings), host)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# ---- reading pages --------------------------------------------------------------------------------


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))


def elements(html: str) -> list[tuple[str, dict[str, str]]]:
    """Every start tag of the page with its attributes, as a browser's parser would see them."""
    parser = _Elements()
    parser.feed(html)
    parser.close()
    return parser.elements


def has(html: str, tag: str, element_id: str) -> bool:
    return any(t == tag and a.get("id") == element_id for t, a in elements(html))


def csrf_of(html: str) -> str:
    values = [a["value"] for t, a in elements(html) if t == "input" and a.get("name") == "csrf"]
    assert values and values[0], "the page has no csrf field"
    return values[0]


def error_of(response: httpx2.Response) -> str:
    found = re.search(r'id="error"[^>]*>(.*?)</p>', response.text, re.S)
    assert found, f"no #error on a {response.status_code} page: {response.text[:1500]}"
    return found.group(1)


def revisions_on(html: str) -> int:
    return sum(1 for t, a in elements(html) if t == "li" and a.get("class") == "revision")


def assert_secured(response: httpx2.Response) -> None:
    """The headers SecurityHeaders adds to every response of the explorer."""
    headers = response.headers
    csp = headers.get("content-security-policy")
    assert csp, f"{response.request.url}: no Content-Security-Policy"
    directives = {part.split()[0]: part.split()[1:] for part in (p.strip() for p in csp.split(";")) if part}
    assert directives.get("script-src") == ["'none'"], csp
    assert directives.get("default-src") == ["'none'"], csp
    assert directives.get("frame-ancestors") == ["'none'"], csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, csp
    assert headers.get("x-content-type-options") == "nosniff"
    assert headers.get("x-frame-options") == "DENY"
    assert headers.get("referrer-policy") == "same-origin"
    assert headers.get("cache-control") == "no-store"


def assert_inert(html: str) -> None:
    """The hostile strings are on the page as text only: escaped, and no element came of them."""
    for escaped in ESCAPED:
        assert escaped in html, f"{escaped!r} is not on the page"
    for raw in (SCRIPT, IMG, SVG, "<script", "<img", "<svg onload"):
        assert raw not in html, f"{raw!r} is on the page unescaped"
    for tag, attrs in elements(html):
        assert tag not in ("script", "img"), (tag, attrs)
        handlers = [name for name in attrs if name.startswith("on")]
        assert not handlers, f"<{tag}> has event handler attributes {handlers}"


async def add_turn(site: Site, thread: str, content: str, role: str = "user") -> dict[str, Any]:
    assert site.mcp is not None
    return await call(site.mcp, "add_turn", thread_id=thread, role=role, content=content)


async def remember(site: Site, content: str) -> dict[str, Any]:
    """remember's answer, with the content as stored (read back: remember does not echo it)."""
    assert site.mcp is not None
    written = await call(site.mcp, "remember", content=content)
    assert written["action"] == "created" and "content" not in written, written
    return {**written, "content": await content_of(site.service, "tester", written["id"])}


async def history(site: Site, memory_id: str) -> list[dict[str, Any]]:
    assert site.mcp is not None
    return (await call(site.mcp, "memory_history", memory_id=memory_id))["revisions"]  # type: ignore[no-any-return]


async def remember_for(service: MemoryService, user: str, content: str) -> Any:
    """A fact of another user than the configured one, written as the remember tool writes it."""
    assert isinstance(service.learning, Learning)
    return await service.learning.editor.remember(user, content, "semantic", None)


async def content_of(service: MemoryService, user: str, memory_id: str) -> str:
    return (await service.get_memory(user, memory_id)).content


async def thread_ids(service: MemoryService, user: str) -> list[str]:
    return [t.thread_id for t in await service.list_threads(user)]


# ---- 1. every page answers, with the security headers ---------------------------------------------


async def test_every_page_answers_a_loopback_client_with_the_security_headers(
    site: Site, http: httpx2.AsyncClient
) -> None:
    added = await add_turn(site, "trip", "We fly to Lisbon on the ninth.")
    fact = await remember(site, "The user prefers aisle seats")
    pages = [
        "/ui/threads",
        "/ui/threads/trip",
        "/ui/search?q=Lisbon&mode=hybrid",
        "/ui/memories",
        f"/ui/memories/{added['id']}",
        f"/ui/memories/{fact['id']}",
        "/ui/profile",
        "/ui/activity",
        "/ui/forget",
    ]
    for path in pages:
        response = await http.get(path)
        assert response.status_code == 200, (path, response.status_code, response.text[:1000])
        assert response.headers["content-type"].startswith("text/html"), path
        assert_secured(response)
    assert "Lisbon" in (await http.get("/ui/threads/trip")).text
    assert "aisle seats" in (await http.get(f"/ui/memories/{fact['id']}")).text

    # Without tokens there is nothing to log in to: the login page sends the browser on to the threads.
    login = await http.get("/ui/login")
    assert login.status_code == 303 and login.headers["location"] == "/ui/threads"
    assert_secured(login)

    css = await http.get("/ui/static/explorer.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert_secured(css)


async def test_the_login_page_answers_when_tokens_are_configured(token_site: Site) -> None:
    async with token_site.client() as http:
        response = await http.get("/ui/login")
    assert response.status_code == 200
    assert has(response.text, "form", "login")
    assert_secured(response)


async def test_error_and_refusal_pages_carry_the_security_headers(site: Site) -> None:
    async with site.client() as http:
        missing = await http.get("/ui/memories/fact_nope")
    async with site.client(REMOTE_PEER) as remote:
        refused = await remote.get("/ui/threads")
    assert missing.status_code == 404 and refused.status_code == 403
    assert_secured(missing)
    assert_secured(refused)


# ---- 2. memory text is shown as text -------------------------------------------------------------


async def test_hostile_memory_text_is_escaped_on_every_page(site: Site, http: httpx2.AsyncClient) -> None:
    hostile_turn = f"quokka turn {SCRIPT} {IMG} {SVG}"
    hostile_fact = f"The user keeps a quokka named {SCRIPT} {IMG} {SVG}"
    turn = await add_turn(site, "hostile", hostile_turn)
    fact = await remember(site, hostile_fact)

    pages = {
        "thread": "/ui/threads/hostile",
        "search": "/ui/search?q=quokka&mode=hybrid",
        "memories": "/ui/memories",
        "turn": f"/ui/memories/{turn['id']}",
        "fact": f"/ui/memories/{fact['id']}",
        "profile": "/ui/profile",
    }
    for name, path in pages.items():
        response = await http.get(path)
        assert response.status_code == 200, (name, response.text[:1000])
        assert_inert(response.text)
    search = (await http.get(pages["search"])).text
    assert search.count('class="hit"') >= 2, "the search for the hostile word found neither memory"


async def test_a_hostile_query_is_escaped_where_it_is_shown_again(http: httpx2.AsyncClient) -> None:
    query = f"{SVG} {SCRIPT}"
    response = await http.get("/ui/search", params={"q": query, "mode": "text"})
    assert response.status_code == 200, response.text[:1000]
    assert "&#34;&gt;&lt;svg onload=alert(1)&gt;" in response.text
    for raw in ("<svg onload", "<script"):
        assert raw not in response.text
    value = [a["value"] for t, a in elements(response.text) if t == "input" and a.get("name") == "q"]
    assert value == [query], "the query did not come back as the search field's value, and only there"


async def test_a_thread_id_outside_the_safe_alphabet_is_refused_and_escaped(
    site: Site, http: httpx2.AsyncClient
) -> None:
    hostile = IMG  # no '/', so it reaches the thread route
    response = await http.get(f"/ui/threads/{quote(hostile, safe='')}")
    assert response.status_code == 400
    assert "thread_id" in error_of(response)
    assert "&lt;img src=x onerror=alert(1)&gt;" in response.text
    assert "<img" not in response.text
    assert_secured(response)
    assert site.mcp is not None
    refused = await site.mcp.call_tool("add_turn", {"thread_id": hostile, "role": "user", "content": "hi"})
    assert refused.is_error, "a thread id with HTML characters was stored"


async def test_an_unknown_memory_id_with_html_characters_is_escaped_on_the_error_page(
    http: httpx2.AsyncClient,
) -> None:
    hostile = f"fact_{SVG}{IMG}"
    response = await http.get(f"/ui/memories/{quote(hostile, safe='')}")
    assert response.status_code == 404
    assert has(response.text, "p", "error")
    assert "&lt;svg onload=alert(1)&gt;" in response.text and "&lt;img src=x" in response.text
    for raw in ("<svg onload", "<img"):
        assert raw not in response.text
    assert_secured(response)


async def test_hostile_query_parameters_are_escaped_wherever_they_are_shown_again(
    http: httpx2.AsyncClient,
) -> None:
    hostile = f"{SVG}{SCRIPT}"
    pages = [("/ui/forget", name) for name in ("thread_id", "memory_id")]
    pages += [("/ui/search", name) for name in ("mode", "types")]
    pages += [
        ("/ui/memories", name)
        for name in ("thread_id", "kind", "since", "until", "as_of", "order", "limit", "cursor", "types")
    ]
    for path, name in pages:
        params = {name: hostile, "q": "anything"} if path == "/ui/search" else {name: hostile}
        response = await http.get(path, params=params)
        assert response.status_code in (200, 400), (path, name, response.status_code)
        for raw in ("<svg onload", "<script"):
            assert raw not in response.text, (path, name)
        assert not [t for t, _ in elements(response.text) if t in ("script", "svg")], (path, name)


# ---- 3. CSRF ----------------------------------------------------------------------------------------


async def test_editing_refuses_forms_without_a_matching_csrf_value_or_from_another_site(
    site: Site, http: httpx2.AsyncClient
) -> None:
    fact = await remember(site, "The user drinks oat milk")
    page = await http.get(f"/ui/memories/{fact['id']}")
    assert page.status_code == 200 and has(page.text, "form", "edit")
    csrf = csrf_of(page.text)
    assert http.cookies.get("mm_csrf") == csrf, "the form's csrf value is not the mm_csrf cookie"
    edit = f"/ui/memories/{fact['id']}/edit"
    changed = "The user drinks soy milk"

    refusals = {
        "no csrf field": ({"content": changed}, {}),
        "a csrf field that is not the cookie": ({"content": changed, "csrf": csrf[::-1]}, {}),
        "Sec-Fetch-Site: cross-site": ({"content": changed, "csrf": csrf}, {"Sec-Fetch-Site": "cross-site"}),
        "Sec-Fetch-Site: same-site": ({"content": changed, "csrf": csrf}, {"Sec-Fetch-Site": "same-site"}),
        "another Origin": ({"content": changed, "csrf": csrf}, {"Origin": "http://evil.example"}),
    }
    for case, (data, headers) in refusals.items():
        response = await http.post(edit, data=data, headers=headers)
        assert response.status_code == 403, (case, response.status_code)
        assert error_of(response), case
        assert_secured(response)
    assert await content_of(site.service, "tester", fact["id"]) == fact["content"]
    assert len(await history(site, fact["id"])) <= 1

    # The field alone, without the cookie it must equal, is refused too.
    async with site.client() as cookieless:
        response = await cookieless.post(edit, data={"content": changed, "csrf": csrf})
    assert response.status_code == 403
    assert await content_of(site.service, "tester", fact["id"]) == fact["content"]

    # The page's own form, as a browser sends it, is accepted.
    response = await http.post(
        edit,
        data={"content": changed, "csrf": csrf},
        headers={"Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"},
    )
    assert response.status_code == 303, response.text[:1000]
    assert response.headers["location"] == f"/ui/memories/{fact['id']}"
    assert await content_of(site.service, "tester", fact["id"]) == changed
    revisions = await history(site, fact["id"])
    assert [r["content"] for r in revisions][-2:] == [fact["content"], changed]


async def test_forgetting_refuses_forms_without_a_matching_csrf_value_or_from_another_site(
    site: Site, http: httpx2.AsyncClient
) -> None:
    await add_turn(site, "keep", "Please keep this thread.")
    csrf = csrf_of((await http.get("/ui/forget?thread_id=keep")).text)
    confirmed = {"thread_id": "keep", "confirm": "1"}
    refusals = {
        "no csrf field": (confirmed, {}),
        "a csrf field that is not the cookie": ({**confirmed, "csrf": "x" * 43}, {}),
        "Sec-Fetch-Site: cross-site": ({**confirmed, "csrf": csrf}, {"Sec-Fetch-Site": "cross-site"}),
        "another Origin": ({**confirmed, "csrf": csrf}, {"Origin": "http://evil.example"}),
    }
    for case, (data, headers) in refusals.items():
        response = await http.post("/ui/forget", data=data, headers=headers)
        assert response.status_code == 403, (case, response.status_code)
        assert "receipt-done" not in response.text, case
    assert "keep" in await thread_ids(site.service, "tester")
    assert (await site.service.get_working_memory("tester", "keep")).message_count == 1

    response = await http.post("/ui/forget", data={**confirmed, "csrf": csrf}, headers={"Origin": ORIGIN})
    assert response.status_code == 200 and "receipt-done" in response.text
    assert "keep" not in await thread_ids(site.service, "tester")


# ---- 4. without tokens: this machine only ---------------------------------------------------------


PAGES = (
    "/ui/threads",
    "/ui/threads/trip",
    "/ui/search?q=Lisbon",
    "/ui/memories",
    "/ui/memories/fact_x",
    "/ui/profile",
    "/ui/activity",
    "/ui/forget",
)


async def test_without_tokens_another_machine_is_refused_every_page(site: Site) -> None:
    await add_turn(site, "trip", "We fly to Lisbon on the ninth.")
    async with site.client(REMOTE_PEER) as remote:
        for path in (*PAGES, "/ui/login"):
            response = await remote.get(path)
            assert response.status_code == 403, (path, response.status_code)
            assert "Lisbon" not in response.text
            assert_secured(response)
        posted = await remote.post("/ui/forget", data={"thread_id": "trip", "confirm": "1"})
        assert posted.status_code == 403
    assert "trip" in await thread_ids(site.service, "tester")


async def test_without_tokens_a_foreign_host_name_is_refused_against_dns_rebinding(
    site: Site, http: httpx2.AsyncClient
) -> None:
    await add_turn(site, "trip", "We fly to Lisbon on the ninth.")
    for path in PAGES:
        response = await http.get(path, headers={"Host": "evil.example"})
        assert response.status_code == 400, (path, response.status_code)
        assert "Lisbon" not in response.text
    rebound = await http.get("/ui/threads", headers={"Host": "evil.example:8765"})
    assert rebound.status_code == 400
    for name in ("localhost:8765", "127.0.0.1", "[::1]:8765"):
        response = await http.get("/ui/threads/trip", headers={"Host": name})
        assert response.status_code == 200, (name, response.status_code)


def test_without_tokens_the_explorer_is_never_exposed_to_the_network(
    fast_settings: Settings, token_settings: Settings
) -> None:
    with pytest.raises(ConfigError, match="tokens"):
        check_explorer_exposure(fast_settings, "0.0.0.0")
    check_explorer_exposure(fast_settings, "127.0.0.1")
    check_explorer_exposure(token_settings, "0.0.0.0")

    host = ServiceHost(fast_settings)  # never opened: mounting does not touch the service
    assert explorer_mount(host, fast_settings, "0.0.0.0") == []
    mounted = explorer_mount(host, fast_settings, "127.0.0.1")
    assert len(mounted) == 1 and isinstance(mounted[0], Mount) and mounted[0].path == "/ui"
    assert len(explorer_mount(ServiceHost(token_settings), token_settings, "0.0.0.0")) == 1


# ---- 5. with tokens: login, isolation, scopes ------------------------------------------------------


async def test_with_tokens_nothing_is_shown_without_a_valid_token(token_site: Site, tokens: Tokens) -> None:
    await token_site.service.add_turn("ann", "ann-trip", "user", "Ann flies to Oslo.")
    async with token_site.client() as http:
        for path in PAGES:
            response = await http.get(path)
            assert response.status_code == 303, (path, response.status_code)
            assert response.headers["location"] == "/ui/login"
        csrf = csrf_of((await http.get("/ui/login")).text)
        posted = await http.post("/ui/forget", data={"thread_id": "ann-trip", "confirm": "1", "csrf": csrf})
        assert posted.status_code == 401
        for bad in ("not-a-token", tokens.ann + "x", hash_token(tokens.ann)):
            response = await http.get("/ui/threads", headers=bearer(bad))
            assert response.status_code == 401, bad
            assert "Oslo" not in response.text and "ann-trip" not in response.text
        forged = await http.post(
            "/ui/forget", data={"thread_id": "ann-trip", "confirm": "1"}, headers=bearer("not-a-token")
        )
        assert forged.status_code == 401
    async with token_site.client(REMOTE_PEER) as remote:  # with tokens any address may ask, with one
        assert (await remote.get("/ui/threads", headers=bearer(tokens.ann))).status_code == 200
    assert "ann-trip" in await thread_ids(token_site.service, "ann")


async def test_login_sets_a_strict_http_only_cookie_and_logout_clears_it(
    token_site: Site, tokens: Tokens
) -> None:
    await token_site.service.add_turn("ann", "ann-trip", "user", "Ann flies to Oslo.")
    async with token_site.client() as http:
        csrf = csrf_of((await http.get("/ui/login")).text)

        refused = await http.post("/ui/login", data={"token": "mmt_wrong", "csrf": csrf})
        assert refused.status_code == 401
        assert error_of(refused)
        assert "mm_token" not in refused.headers.get("set-cookie", "")
        assert_secured(refused)

        # A login form posted from another site is refused before the token is even looked at.
        cross = await http.post(
            "/ui/login", data={"token": tokens.ann, "csrf": csrf}, headers={"Sec-Fetch-Site": "cross-site"}
        )
        assert cross.status_code == 403 and "mm_token" not in cross.headers.get("set-cookie", "")

        response = await http.post("/ui/login", data={"token": tokens.ann, "csrf": csrf})
        assert response.status_code == 303
        assert response.headers["location"] == "/ui/threads"
        cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith("mm_token="))
        attributes = {a.strip().split("=")[0].lower(): a.strip() for a in cookie.split(";")[1:]}
        assert "httponly" in attributes
        assert attributes.get("samesite", "").lower() == "samesite=strict"
        assert attributes.get("path") == "Path=/ui"

        threads = await http.get("/ui/threads")
        assert threads.status_code == 200 and "ann-trip" in threads.text
        for path in PAGES:
            if path != "/ui/memories/fact_x":
                assert (await http.get(path)).status_code == 200, path

        logout = await http.post("/ui/logout", data={"csrf": csrf_of(threads.text)})
        assert logout.status_code == 303 and logout.headers["location"] == "/ui/login"
        assert "mm_token" not in http.cookies
        after = await http.get("/ui/threads")
        assert after.status_code == 303 and after.headers["location"] == "/ui/login"


async def test_one_user_never_sees_or_changes_another_users_memories(
    token_site: Site, tokens: Tokens
) -> None:
    service = token_site.service
    await service.add_turn("ann", "ann-secret", "user", "Ann's wombat password hint is marmalade.")
    fact = await remember_for(service, "ann", "Ann keeps a wombat named Marmalade")
    await service.add_turn("bob", "bob-notes", "user", "Bob likes chess.")

    async with token_site.client() as http:
        as_bob = bearer(tokens.bob)
        threads = await http.get("/ui/threads", headers=as_bob)
        assert threads.status_code == 200 and "bob-notes" in threads.text
        assert "ann-secret" not in threads.text
        for path in (
            "/ui/search?q=wombat&mode=hybrid",
            "/ui/search?q=wombat&mode=text",
            "/ui/memories",
            "/ui/profile",
        ):
            response = await http.get(path, headers=as_bob)
            assert response.status_code == 200, path
            # (the query itself is shown again, and bob's own turn may be a weak hit by meaning)
            assert "marmalade" not in response.text.lower() and fact.id not in response.text, path
        thread = await http.get("/ui/threads/ann-secret", headers=as_bob)
        assert "marmalade" not in thread.text.lower()

        page = await http.get(f"/ui/memories/{fact.id}", headers=as_bob)
        assert page.status_code == 404 and error_of(page)
        assert "Marmalade" not in page.text
        for action, data in (("edit", {"content": "Bob owns it now"}), ("rollback", {"revision_id": "x"})):
            response = await http.post(f"/ui/memories/{fact.id}/{action}", data=data, headers=as_bob)
            assert response.status_code == 404, (action, response.status_code)
        forgotten = await http.post("/ui/forget", data={"memory_id": fact.id, "confirm": "1"}, headers=as_bob)
        assert forgotten.status_code == 404
        await http.post("/ui/forget", data={"thread_id": "ann-secret", "confirm": "1"}, headers=as_bob)

        mine = await http.get(f"/ui/memories/{fact.id}", headers=bearer(tokens.ann))
        assert mine.status_code == 200 and "Marmalade" in mine.text
    assert await content_of(service, "ann", fact.id) == fact.content
    assert "ann-secret" in await thread_ids(service, "ann")
    assert (await service.get_working_memory("ann", "ann-secret")).message_count == 1


async def test_a_read_only_token_sees_but_cannot_edit_or_forget(token_site: Site, tokens: Tokens) -> None:
    service = token_site.service
    await service.add_turn("ann", "ann-trip", "user", "Ann flies to Oslo.")
    fact = await remember_for(service, "ann", "Ann is allergic to peanuts")

    async with token_site.client() as http:
        read_only = bearer(tokens.ann_read)
        page = await http.get(f"/ui/memories/{fact.id}", headers=read_only)
        assert page.status_code == 200 and "peanuts" in page.text
        assert not has(page.text, "form", "edit")
        assert has(
            (await http.get(f"/ui/memories/{fact.id}", headers=bearer(tokens.ann))).text, "form", "edit"
        )

        edit = await http.post(
            f"/ui/memories/{fact.id}/edit", data={"content": "Ann loves peanuts"}, headers=read_only
        )
        assert edit.status_code == 403 and "write" in error_of(edit)
        forget = await http.post(
            "/ui/forget", data={"thread_id": "ann-trip", "confirm": "1"}, headers=read_only
        )
        assert forget.status_code == 403
        forget_fact = await http.post(
            "/ui/forget", data={"memory_id": fact.id, "confirm": "1"}, headers=read_only
        )
        assert forget_fact.status_code == 403
        summarize = await http.post("/ui/threads/ann-trip/summarize", headers=read_only)
        assert summarize.status_code == 403

        # The same through the browser's login cookie and a valid form.
        csrf = csrf_of((await http.get("/ui/login")).text)
        assert (
            await http.post("/ui/login", data={"token": tokens.ann_read, "csrf": csrf})
        ).status_code == 303
        edit = await http.post(
            f"/ui/memories/{fact.id}/edit", data={"content": "Ann loves peanuts", "csrf": csrf}
        )
        assert edit.status_code == 403
    assert await content_of(service, "ann", fact.id) == fact.content
    assert "ann-trip" in await thread_ids(service, "ann")


async def test_only_an_admin_token_gets_the_forget_user_form_and_may_post_it(
    token_site: Site, tokens: Tokens
) -> None:
    service = token_site.service
    await service.add_turn("ann", "ann-trip", "user", "Ann flies to Oslo.")
    async with token_site.client() as http:
        admin_page = await http.get("/ui/forget", headers=bearer(tokens.admin))
        assert admin_page.status_code == 200 and has(admin_page.text, "form", "forget-user")
        for token in (tokens.ann, tokens.ann_read, tokens.bob):
            page = await http.get("/ui/forget", headers=bearer(token))
            assert page.status_code == 200 and not has(page.text, "form", "forget-user")

        for token in (tokens.ann, tokens.bob):
            refused = await http.post(
                "/ui/forget-user", data={"user_id": "ann", "confirm": "1"}, headers=bearer(token)
            )
            assert refused.status_code == 403 and "admin" in error_of(refused)
        assert "ann-trip" in await thread_ids(service, "ann")

        dry = await http.post("/ui/forget-user", data={"user_id": "ann"}, headers=bearer(tokens.admin))
        assert dry.status_code == 200 and has(dry.text, "article", "admin-receipt")
        assert "receipt-dry-run" in dry.text
        assert "ann-trip" in await thread_ids(service, "ann")
        done = await http.post(
            "/ui/forget-user", data={"user_id": "ann", "confirm": "1"}, headers=bearer(tokens.admin)
        )
        assert done.status_code == 200 and "receipt-done" in done.text
    assert await thread_ids(service, "ann") == []


async def test_without_tokens_nobody_is_an_admin(http: httpx2.AsyncClient, site: Site) -> None:
    await add_turn(site, "trip", "We fly to Lisbon on the ninth.")
    page = await http.get("/ui/forget")
    assert page.status_code == 200 and not has(page.text, "form", "forget-user")
    refused = await http.post(
        "/ui/forget-user", data={"user_id": "tester", "confirm": "1", "csrf": csrf_of(page.text)}
    )
    assert refused.status_code == 403
    assert "trip" in await thread_ids(site.service, "tester")


# ---- 6. forgetting: a dry run first --------------------------------------------------------------


async def test_forgetting_a_thread_shows_a_dry_run_then_deletes_on_confirm(
    site: Site, http: httpx2.AsyncClient
) -> None:
    assert site.mcp is not None
    await add_turn(site, "doomed", "Remember the blue door.")
    await add_turn(site, "doomed", "It is on Rua Augusta.", role="assistant")
    await add_turn(site, "kept", "A thread that stays.")
    csrf = csrf_of((await http.get("/ui/forget?thread_id=doomed")).text)

    dry = await http.post("/ui/forget", data={"thread_id": "doomed", "csrf": csrf})
    assert dry.status_code == 200, dry.text[:1000]
    assert "receipt-dry-run" in dry.text and "receipt-done" not in dry.text
    assert has(dry.text, "form", "confirm")
    assert re.search(r'id="receipt-messages">2<', dry.text), "the dry run does not count the 2 messages"
    assert "doomed" in await thread_ids(site.service, "tester")
    assert (await site.service.get_working_memory("tester", "doomed")).message_count == 2

    done = await http.post("/ui/forget", data={"thread_id": "doomed", "confirm": "1", "csrf": csrf})
    assert done.status_code == 200
    assert "receipt-done" in done.text and "receipt-dry-run" not in done.text
    threads = await http.get("/ui/threads")
    assert "doomed" not in threads.text and "kept" in threads.text
    assert await thread_ids(site.service, "tester") == ["kept"]
    listed = await call(site.mcp, "list_memories", thread_id="doomed")
    assert listed["memories"] == []
    assert "Nothing of it is left on disk" in done.text

    # Again: nothing matches now, said in words, and there is nothing to confirm.
    again = await http.post("/ui/forget", data={"thread_id": "doomed", "csrf": csrf})
    assert "receipt-nothing" in again.text and "Nothing matched: no thread" in again.text
    assert not has(again.text, "form", "confirm")
    assert (await site.service.get_working_memory("tester", "doomed")).message_count == 0


# ---- 7. editing and rolling back -----------------------------------------------------------------


async def test_editing_a_fact_shows_a_diff_and_rollback_restores_it(
    site: Site, http: httpx2.AsyncClient
) -> None:
    fact = await remember(site, "The user lives in Porto")
    page = (await http.get(f"/ui/memories/{fact['id']}")).text
    edited = await http.post(
        f"/ui/memories/{fact['id']}/edit",
        data={"content": "The user lives in Braga since May", "csrf": csrf_of(page)},
    )
    assert edited.status_code == 303 and edited.headers["location"] == f"/ui/memories/{fact['id']}"

    page = (await http.get(f"/ui/memories/{fact['id']}")).text
    assert revisions_on(page) == 2
    diff = re.search(r'<div class="diff[^"]*">(.*?)</div>', page, re.S)
    assert diff and "<ins>" in diff.group(1) and "Braga" in diff.group(1), page
    assert re.search(r"<del>[^<]*Porto", diff.group(1)), diff.group(1)
    assert re.search(r'id="content"[^>]*>The user lives in Braga since May<', page)

    revisions = await history(site, fact["id"])
    assert [r["seq"] for r in revisions] == [1, 2]
    first = revisions[0]
    assert first["content"] == "The user lives in Porto"
    assert first["id"] in page, "no rollback form for revision 1"
    rolled = await http.post(
        f"/ui/memories/{fact['id']}/rollback", data={"revision_id": first["id"], "csrf": csrf_of(page)}
    )
    assert rolled.status_code == 303

    page = (await http.get(f"/ui/memories/{fact['id']}")).text
    assert revisions_on(page) == 3
    assert re.search(r'id="content"[^>]*>The user lives in Porto<', page)
    assert await content_of(site.service, "tester", fact["id"]) == "The user lives in Porto"
    revisions = await history(site, fact["id"])
    assert [r["action"] for r in revisions][-1] == "restore" and len(revisions) == 3


async def test_a_turn_cannot_be_edited(site: Site, http: httpx2.AsyncClient) -> None:
    turn = await add_turn(site, "trip", "We fly to Lisbon on the ninth.")
    page = await http.get(f"/ui/memories/{turn['id']}")
    assert page.status_code == 200 and not has(page.text, "form", "edit")
    csrf = csrf_of((await http.get("/ui/forget")).text)
    response = await http.post(f"/ui/memories/{turn['id']}/edit", data={"content": "rewritten", "csrf": csrf})
    assert response.status_code == 400 and "cannot be edited" in error_of(response)
    assert await content_of(site.service, "tester", turn["id"]) == "We fly to Lisbon on the ninth."


# ---- 8. input errors -----------------------------------------------------------------------------


async def test_bad_input_is_a_clear_error_page(http: httpx2.AsyncClient) -> None:
    cases = {
        "/ui/search?q=hello&mode=bogus": (400, "mode"),
        "/ui/memories?limit=0": (400, "limit"),
        "/ui/memories?limit=many": (400, "limit"),
        "/ui/memories?cursor=garbage": (400, "cursor"),
        "/ui/memories?order=sideways": (400, "order"),
        "/ui/memories/fact_does_not_exist": (404, "fact_does_not_exist"),
    }
    for path, (status, named) in cases.items():
        response = await http.get(path)
        assert response.status_code == status, (path, response.status_code, response.text[:500])
        assert named in error_of(response), (path, error_of(response))
        assert_secured(response)


async def test_a_limit_that_is_not_a_plain_number_is_a_clear_error(http: httpx2.AsyncClient) -> None:
    for limit in ("²", "9" * 5000):
        response = await http.get("/ui/memories", params={"limit": limit})
        assert response.status_code == 400, (limit[:10], response.status_code)
        assert "limit" in error_of(response)


async def test_an_edit_keeps_non_ascii_text_as_typed(site: Site, http: httpx2.AsyncClient) -> None:
    fact = await remember(site, "The user lives in Zurich")
    page = (await http.get(f"/ui/memories/{fact['id']}")).text
    typed = "The user lives in Zürich — near the café “Odéon” 🐻"
    edited = await http.post(
        f"/ui/memories/{fact['id']}/edit", data={"content": typed, "csrf": csrf_of(page)}
    )
    assert edited.status_code == 303
    assert await content_of(site.service, "tester", fact["id"]) == typed
    assert typed in (await http.get(f"/ui/memories/{fact['id']}")).text


async def test_a_very_long_turn_is_shown_as_an_excerpt_in_lists_and_whole_on_its_page(
    site: Site, http: httpx2.AsyncClient
) -> None:
    lines = [f"line {i:06d} of the pasted build log, step {i % 40} finished" for i in range(2_000)]
    pasted = "quokka build log\n" + "\n".join(lines)
    assert site.mcp is not None
    added = await call(
        site.mcp, "add_turn", thread_id="pasted", role="user", content=pasted, context_window=200_000
    )
    assert not added["summarized"], "the thread page lists the turn itself"
    last = lines[-1]
    for path in ("/ui/threads/pasted", "/ui/memories", "/ui/search?q=quokka&mode=text"):
        page = (await http.get(path)).text
        assert "quokka build log" in page and last not in page, path
        assert f"({len(pasted):,} characters in all: open it to read it whole)" in page, path
        assert len(page) < 100_000, path
    assert last in (await http.get(f"/ui/memories/{added['id']}")).text
