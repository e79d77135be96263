"""The explorer signs in through the identity provider, in a real headless Chromium: the login page's
"Sign in with your organisation" goes to the real authorization server (oidc-provider), its login and
consent pages are filled in as a person would, and the browser comes back to its own memories only.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.security.bearer import UNMETERED
from tests.security.test_oauth_flows import Storage, signed_in, user_provider
from tests.services.browser import submit, wait_for_navigation
from tests.services.mcp_client import call
from tests.services.oidc_server import OidcServer, ScriptedUser
from tests.services.server_process import NetworkServer, ServerStarter, free_port


async def register_explorer(oidc: OidcServer, redirect_uri: str) -> str:
    """Register the explorer with the authorization server (dynamic registration), as an operator would."""
    async with httpx2.AsyncClient(timeout=30) as http:
        discovery = (await http.get(f"{oidc.issuer}/.well-known/openid-configuration")).json()
        answer = await http.post(
            discovery["registration_endpoint"],
            json={
                "client_name": "mcp-memory explorer",
                "redirect_uris": [redirect_uri],
                "grant_types": ["authorization_code"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            },
        )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["client_id"])


def start_explorer_server(start_server: ServerStarter, tmp_path: Path, oidc: OidcServer) -> NetworkServer:
    port = free_port()
    client_id = anyio.run(register_explorer, oidc, f"http://127.0.0.1:{port}/ui/auth/callback")
    env = {
        "MCP_MEMORY_SECURITY__AUTHORIZATION_SERVER": oidc.issuer,
        "MCP_MEMORY_SECURITY__RESOURCE_URL": f"http://127.0.0.1:{port}/mcp",
        "MCP_MEMORY_SECURITY__EXPLORER_CLIENT_ID": client_id,
        **UNMETERED,
    }
    return start_server("http", tmp_path / "data", env, port=port)


async def _remember(server: NetworkServer, oidc: OidcServer, login: str, thread: str, content: str) -> None:
    async with signed_in(server, user_provider(server, ScriptedUser(oidc, login), Storage())) as client:
        await call(client, "add_turn", thread_id=thread, role="user", content=content)


def test_the_explorer_signs_in_through_the_identity_provider_and_shows_only_ones_own_memories(
    start_server: ServerStarter, tmp_path: Path, oidc_server: OidcServer, browser: webdriver.Chrome
) -> None:
    server = start_explorer_server(start_server, tmp_path, oidc_server)
    anyio.run(_remember, server, oidc_server, "alice", "alice-garden", "alice plants tulips")
    anyio.run(_remember, server, oidc_server, "bob", "bob-boat", "bob repaints the boat")
    ui = f"{server.base_url}/ui"

    browser.get(f"{ui}/threads")
    assert urlsplit(browser.current_url).path == "/ui/login", "not signed in: sent to the login page"
    submit(browser, browser.find_element(By.ID, "sign-in"))
    assert browser.current_url.startswith(oidc_server.issuer), "at the identity provider"
    browser.find_element(By.NAME, "login").send_keys("alice")
    submit(browser, browser.find_element(By.ID, "submit"))
    consent = browser.find_elements(By.ID, "consent")
    if consent:
        page = browser.find_element(By.TAG_NAME, "html")
        consent[0].click()
        wait_for_navigation(browser, page)
    # The callback's page moves on to the threads by itself (a same-site navigation).
    if urlsplit(browser.current_url).path != "/ui/threads":
        page = browser.find_element(By.TAG_NAME, "html")
        assert "alice" in browser.find_element(By.ID, "signed-in").text
        wait_for_navigation(browser, page)
    assert urlsplit(browser.current_url).path == "/ui/threads", browser.current_url
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "alice-garden" in body and "bob-boat" not in body
    assert "alice" in browser.find_element(By.ID, "who").text

    browser.get(f"{ui}/search?q=boat&mode=text")
    assert "bob repaints" not in browser.find_element(By.TAG_NAME, "body").text
    browser.get(f"{ui}/search?q=tulips&mode=text")
    assert "alice plants tulips" in browser.find_element(By.TAG_NAME, "body").text


def test_a_callback_that_was_not_started_here_is_refused(
    start_server: ServerStarter, tmp_path: Path, oidc_server: OidcServer, browser: webdriver.Chrome
) -> None:
    server = start_explorer_server(start_server, tmp_path, oidc_server)
    browser.get(f"{server.base_url}/ui/auth/callback?code=forged&state=forged")
    assert "not started here" in browser.find_element(By.ID, "error").text
    browser.get(f"{server.base_url}/ui/threads")
    assert urlsplit(browser.current_url).path == "/ui/login"


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # The explorer fetches the provider's endpoints on 127.0.0.1 itself; nothing in between.
    monkeypatch.delenv("HTTP_PROXY", raising=False)
