"""The memory explorer (/ui) in a real headless Chromium, against the real server process filled through
MCP over streamable HTTP with bearer tokens: logging in, threads and the token gauge, search, editing a
fact and rolling it back, forgetting a thread, hostile content shown as text, scopes, CSRF and the CSP.

Every navigation is a plain link or form post: Selenium returns when the page has loaded, and a submit
waits explicitly for the next page (no sleeps). Tests share one server per module, each with thread ids
and facts of its own.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import httpx2
import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select

from tests.services.browser import (
    TokenServer,
    UiCommand,
    login,
    submit,
    submit_button,
    wait_for_navigation,
)
from tests.services.mcp_client import call
from tests.services.server_process import E2E_USER, StdioServer, server_env

HOSTILE_SCRIPT = "<script>document.title='pwned';window.__pwned=1</script>"
HOSTILE_IMG = "<img src=x onerror=\"document.title='pwned';window.__pwned=1\">"
MAIN_PAGES = (
    "/threads",
    "/search?q=trip&mode=hybrid",
    "/memories",
    "/profile",
    "/forget",
    "/activity",
    "/audit",
)


def new_id(prefix: str = "ui") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def new_tag() -> str:
    """A distinctive word no other test writes."""
    return uuid.uuid4().hex[:10]


# ---- MCP, from a synchronous test -------------------------------------------------------------------


async def _calls(server: TokenServer, token: str | None, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    async with server.connect_as(token) as client:
        return [await call(client, tool, **arguments) for tool, arguments in calls]


def mcp(server: TokenServer, tool: str, token: str | None = None, **arguments: Any) -> dict[str, Any]:
    """One tool call over streamable HTTP with a bearer token (default: the write token)."""
    results = anyio.run(functools.partial(_calls, server, token, [(tool, arguments)]))
    return results[0]  # type: ignore[no-any-return]


def add_turns(
    server: TokenServer, thread: str, turns: list[tuple[str, str]], context_window: int | None = None
) -> list[dict[str, Any]]:
    """Add the turns in order over one connection; the add_turn results."""
    extra = {} if context_window is None else {"context_window": context_window}
    calls = [
        ("add_turn", {"thread_id": thread, "role": role, "content": content, **extra})
        for role, content in turns
    ]
    return anyio.run(functools.partial(_calls, server, None, calls))


def remember(server: TokenServer, content: str) -> dict[str, Any]:
    """remember's answer, with the content as stored (read back: remember does not echo it)."""
    written = mcp(server, "remember", content=content)
    assert written["action"] == "created", f"remember did not create a new fact: {written}"
    assert written["type"] == "fact" and "content" not in written
    return {**written, "content": history(server, written["id"])["memory"]["content"]}


# ---- the page ---------------------------------------------------------------------------------------


def css(driver: webdriver.Chrome, selector: str) -> list[Any]:
    return driver.find_elements(By.CSS_SELECTOR, selector)


def one(driver: webdriver.Chrome, selector: str) -> Any:
    found = css(driver, selector)
    assert found, (
        f"no {selector!r} on {driver.current_url}: {driver.find_element(By.TAG_NAME, 'body').text[:2000]}"
    )
    return found[0]


def path_of(driver: webdriver.Chrome) -> str:
    return urlsplit(driver.current_url).path


def thread_ids_listed(driver: webdriver.Chrome) -> list[str]:
    return [link.text.strip() for link in css(driver, "table#threads tr.thread a.thread-link")]


def numbers_in(text: str) -> set[int]:
    """The integers in a text, thousands separators (',', spaces) allowed."""
    return {
        int(re.sub(r"[,\s\u00a0\u202f]", "", n)) for n in re.findall(r"\d(?:[\d,\u00a0\u202f]*\d)?", text)
    }


def error_text(driver: webdriver.Chrome) -> str:
    return " ".join(e.text for e in css(driver, "#error"))


def cookies_of(driver: webdriver.Chrome) -> dict[str, str]:
    """The browser's cookies for the current page (HttpOnly ones too: WebDriver sees them)."""
    return {c["name"]: c["value"] for c in driver.get_cookies()}


def csrf_of(driver: webdriver.Chrome) -> str:
    fields = css(driver, "input[name=csrf]")
    assert fields, f"no csrf field on {driver.current_url}"
    value = fields[0].get_attribute("value")
    assert value, "the csrf field is empty"
    return str(value)


def post(
    url: str,
    data: dict[str, str],
    cookies: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
) -> httpx2.Response:
    with httpx2.Client(timeout=30, follow_redirects=False, cookies=cookies) as http:
        return http.post(url, data=data, headers=headers or {})


def history(server: TokenServer, memory_id: str) -> dict[str, Any]:
    """memory_history's answer with the memory's content filled in where it was left out (it is then
    the last revision's content)."""
    found = mcp(server, "memory_history", memory_id=memory_id)
    found["memory"].setdefault("content", found["revisions"][-1]["content"])
    return found


def console_problems(driver: webdriver.Chrome) -> list[str]:
    """Console entries that are CSP violations or errors (a missing favicon aside); clears the log."""
    problems = []
    for entry in driver.get_log("browser"):  # type: ignore[no-untyped-call]
        message = str(entry.get("message", ""))
        if "favicon.ico" in message:
            continue
        if entry.get("level") == "SEVERE" or "Content Security Policy" in message or "Refused to" in message:
            problems.append(message)
    return problems


def assert_nothing_executable(driver: webdriver.Chrome) -> None:
    """No script ran or was even parsed into the page from memory content."""
    assert driver.title != "pwned"
    assert driver.execute_script("return window.__pwned") is None
    assert css(driver, "script") == [], "the explorer serves no JavaScript, yet the page holds a <script>"
    assert css(driver, "img[src=x]") == [], "memory content became an <img> element"
    assert css(driver, "[onerror]") == []


# ---- the tests --------------------------------------------------------------------------------------


def post_from_page(browser: webdriver.Chrome, url: str, fields: dict[str, str]) -> None:
    """Build a form in the current page and submit it, as a script on that page could."""
    browser.execute_script(
        """
        const form = document.createElement('form');
        form.method = 'post';
        form.action = arguments[0];
        for (const [name, value] of Object.entries(arguments[1])) {
            const input = document.createElement('input');
            input.type = 'hidden'; input.name = name; input.value = value;
            form.appendChild(input);
        }
        document.body.appendChild(form);
        form.submit();
        """,
        url,
        fields,
    )


def test_login_required_then_threads_and_thread_page_with_gauge(
    ui_server: TokenServer, browser: webdriver.Chrome
) -> None:
    thread = new_id()
    tag = new_tag()
    turns = [
        ("user", f"We are planning the {tag} trip to Maui in March."),
        ("assistant", "Lovely. Which dates, and what budget?"),
        ("user", "March 14 to 24, about 10000 dollars."),
        ("assistant", "Noted: ten nights on Maui within 10000 dollars."),
    ]
    added = add_turns(ui_server, thread, turns, context_window=4096)
    working = mcp(ui_server, "get_working_memory", thread_id=thread)
    assert working["message_count"] == 4

    ui = ui_server.ui_url
    browser.get(f"{ui}/threads")
    assert path_of(browser) == "/ui/login", "an unauthenticated page view did not go to the login page"
    token_field = one(browser, "form#login input[name=token]")
    assert token_field.get_attribute("type") == "password"

    login(browser, ui, "mmt_not-a-configured-token", expect_ok=False)
    assert error_text(browser), "a bad token was not refused with #error"
    assert css(browser, "form#login"), "a refused login should show the login form again"

    login(browser, ui, ui_server.write_token)
    assert path_of(browser) == "/ui/threads"
    assert E2E_USER in one(browser, "#who").text
    assert css(browser, "nav#nav a")
    assert thread in thread_ids_listed(browser)

    link = next(a for a in css(browser, "a.thread-link") if a.text.strip() == thread)
    assert urlsplit(link.get_attribute("href")).path == f"/ui/threads/{thread}"
    submit(browser, link)
    assert path_of(browser) == f"/ui/threads/{thread}"
    one(browser, "#summary")  # present, empty before any summarization
    messages = css(browser, "ol#messages li.message")
    assert [m.find_element(By.CSS_SELECTOR, ".content").text for m in messages] == [c for _, c in turns]
    assert [m.find_element(By.CSS_SELECTOR, ".role").text.strip().lower() for m in messages] == [
        r for r, _ in turns
    ]
    assert one(browser, "svg#gauge").is_displayed()
    gauge = numbers_in(one(browser, "#gauge-text").text)
    expected = {working["token_count"], working["threshold_tokens"], working["context_window"]}
    assert expected <= gauge, f"#gauge-text shows {gauge}, not tokens/threshold/window {expected}"
    assert added[-1]["thread"]["tokens"] == working["token_count"]

    # Logging out (a form post) ends the session: the next page view asks for a login again.
    logout = one(browser, "form[action$='/ui/logout']")
    assert logout.find_element(By.CSS_SELECTOR, "input[name=csrf]").get_attribute("value")
    submit(browser, submit_button(logout))
    browser.get(f"{ui}/threads/{thread}")
    assert path_of(browser) == "/ui/login"


def test_without_credentials_pages_redirect_and_posts_are_refused(ui_server: TokenServer) -> None:
    thread = new_id()
    add_turns(ui_server, thread, [("user", "Keep this thread, nobody logged in may forget it.")])
    ui = ui_server.ui_url
    with httpx2.Client(timeout=30, follow_redirects=False) as http:
        for path in [*MAIN_PAGES, f"/threads/{thread}"]:
            page = http.get(f"{ui}{path}", headers={"Accept": "text/html"})
            assert page.status_code == 303, (path, page.status_code)
            assert urlsplit(page.headers["location"]).path == "/ui/login", path
        for token in ("mmt_not-a-configured-token", ui_server.admin_token[:-1]):
            refused = http.get(f"{ui}/threads", headers={"Authorization": f"Bearer {token}"})
            assert refused.status_code == 401, refused.status_code
    refused = post(f"{ui}/forget", {"thread_id": thread, "confirm": "1", "csrf": "x" * 43})
    assert refused.status_code == 401, (refused.status_code, refused.text[:500])
    assert mcp(ui_server, "get_working_memory", thread_id=thread)["message_count"] == 1


def test_search_shows_the_hit_with_score_and_reason(
    ui_server: TokenServer, browser: webdriver.Chrome
) -> None:
    thread = new_id()
    word = f"quokka{new_tag()}"
    turns = [
        ("user", "Which beach is best for snorkeling near Kapalua?"),
        ("assistant", f"Honolua Bay, and the {word} reef right next to it on calm mornings."),
        ("user", "Great, we will go on the first morning."),
    ]
    added = add_turns(ui_server, thread, turns)
    hit_id = added[1]["id"]

    ui = ui_server.ui_url
    login(browser, ui, ui_server.write_token)
    browser.get(f"{ui}/search")
    form = one(browser, "form#search")
    form.find_element(By.CSS_SELECTOR, "input[name=q]").send_keys(word)
    Select(form.find_element(By.CSS_SELECTOR, "select[name=mode]")).select_by_value("hybrid")
    submit(browser, submit_button(form))
    assert path_of(browser) == "/ui/search"

    hits = css(browser, "ol#results li.hit")
    assert hits, f"no hits for {word!r}"
    best = hits[0]
    assert best.find_element(By.CSS_SELECTOR, ".content").text == turns[1][1]
    score = float(best.find_element(By.CSS_SELECTOR, ".score").text.strip())
    assert 0.0 <= score <= 1.0
    assert best.find_element(By.CSS_SELECTOR, ".matched").text.strip().lower() in ("text", "both")
    link = best.find_element(By.CSS_SELECTOR, "a.memory-link")
    assert urlsplit(link.get_attribute("href")).path == f"/ui/memories/{hit_id}"

    # The page shows what search_memory finds, in its order.
    expected = mcp(ui_server, "search_memory", query=word, mode="hybrid")["results"]
    assert [
        urlsplit(h.find_element(By.CSS_SELECTOR, "a.memory-link").get_attribute("href")).path for h in hits
    ] == [f"/ui/memories/{r['id']}" for r in expected]

    # Keywords only: the same best hit, matched by its text.
    form = one(browser, "form#search")
    assert form.find_element(By.CSS_SELECTOR, "input[name=q]").get_attribute("value") == word
    Select(form.find_element(By.CSS_SELECTOR, "select[name=mode]")).select_by_value("text")
    submit(browser, submit_button(form))
    hits = css(browser, "ol#results li.hit")
    expected = mcp(ui_server, "search_memory", query=word, mode="text")["results"]
    assert [h.find_element(By.CSS_SELECTOR, ".content").text for h in hits] == [
        r["content"] for r in expected
    ]
    assert hits[0].find_element(By.CSS_SELECTOR, ".content").text == turns[1][1]
    assert hits[0].find_element(By.CSS_SELECTOR, ".matched").text.strip().lower() == "text"

    submit(browser, hits[0].find_element(By.CSS_SELECTOR, "a.memory-link"))
    assert path_of(browser) == f"/ui/memories/{hit_id}"
    assert one(browser, "#content").text == turns[1][1]


def test_editing_a_fact_makes_a_revision_and_rollback_restores_it(
    ui_server: TokenServer, browser: webdriver.Chrome
) -> None:
    tag = new_tag()
    original, edited = f"The user {tag} is vegetarian", f"The user {tag} is vegan and eats no dairy"
    fact = remember(ui_server, original)

    ui = ui_server.ui_url
    login(browser, ui, ui_server.write_token)
    browser.get(f"{ui}/memories/{fact['id']}")
    assert one(browser, "#content").text == original
    assert "fact" in one(browser, "#memory-type").text.lower()
    assert len(css(browser, "ol#revisions li.revision")) == 1

    form = one(browser, "form#edit")
    textarea = form.find_element(By.CSS_SELECTOR, "textarea[name=content]")
    assert textarea.get_attribute("value") == original
    textarea.clear()
    textarea.send_keys(edited)
    submit(browser, submit_button(form))
    assert path_of(browser) == f"/ui/memories/{fact['id']}"
    assert one(browser, "#content").text == edited
    revisions = css(browser, "ol#revisions li.revision")
    assert len(revisions) == 2
    assert [r.find_element(By.CSS_SELECTOR, ".revision-seq").text.strip() for r in revisions] == ["1", "2"]
    assert [r.find_element(By.CSS_SELECTOR, ".revision-content").text for r in revisions] == [
        original,
        edited,
    ]
    diff = revisions[1].find_element(By.CSS_SELECTOR, ".diff")
    assert diff.find_elements(By.TAG_NAME, "ins") and diff.find_elements(By.TAG_NAME, "del")
    assert revisions[0].find_elements(By.CSS_SELECTOR, "form.rollback")
    assert not revisions[1].find_elements(By.CSS_SELECTOR, "form.rollback"), "the latest has no rollback"
    stored = history(ui_server, fact["id"])
    assert stored["memory"]["content"] == edited and len(stored["revisions"]) == 2

    rollback = revisions[0].find_element(By.CSS_SELECTOR, "form.rollback")
    revision_id = rollback.find_element(By.CSS_SELECTOR, "input[name=revision_id]").get_attribute("value")
    assert revision_id == stored["revisions"][0]["id"]
    submit(browser, submit_button(rollback))
    assert path_of(browser) == f"/ui/memories/{fact['id']}"
    assert one(browser, "#content").text == original
    revisions = css(browser, "ol#revisions li.revision")
    assert [r.find_element(By.CSS_SELECTOR, ".revision-content").text for r in revisions] == [
        original,
        edited,
        original,
    ]

    stored = history(ui_server, fact["id"])
    assert stored["memory"]["content"] == original
    assert [r["content"] for r in stored["revisions"]] == [original, edited, original]
    assert [r.find_element(By.CSS_SELECTOR, ".revision-action").text.strip().lower() for r in revisions] == [
        r["action"] for r in stored["revisions"]
    ]


def test_forget_a_thread_dry_run_then_confirm(ui_server: TokenServer, browser: webdriver.Chrome) -> None:
    thread = new_id()
    word = f"walrus{new_tag()}"
    turns = [
        ("user", f"Note the {word} gate code for the rental: 4711."),
        ("assistant", "Noted the gate code."),
        ("user", "And the wifi password is on the fridge."),
    ]
    add_turns(ui_server, thread, turns)
    expected = mcp(ui_server, "forget", thread_id=thread, dry_run=True)
    assert expected["long_term"]["memories"] == 3 and expected["working_memory"]["messages"] == 3

    ui = ui_server.ui_url
    login(browser, ui, ui_server.write_token)
    assert thread in thread_ids_listed(browser)

    def dry_run() -> None:
        browser.get(f"{ui}/forget")
        form = one(browser, "form#forget")
        form.find_element(By.CSS_SELECTOR, "input[name=thread_id]").send_keys(thread)
        assert form.find_element(By.CSS_SELECTOR, "input[name=csrf]").get_attribute("value")
        submit(browser, form.find_element(By.CSS_SELECTOR, "button[name=dry_run][value='1']"))
        receipt = one(browser, "#receipt")
        assert receipt.find_element(By.CSS_SELECTOR, ".receipt-dry-run").text.strip().lower() == "dry run"
        assert not receipt.find_elements(By.CSS_SELECTOR, ".receipt-done")
        assert numbers_in(one(browser, "#receipt-memories").text) == {expected["long_term"]["memories"]}
        assert numbers_in(one(browser, "#receipt-messages").text) == {expected["working_memory"]["messages"]}

    dry_run()
    # Nothing is deleted yet: the store still has it all, and so does the threads page.
    assert mcp(ui_server, "get_working_memory", thread_id=thread)["message_count"] == 3
    assert len(mcp(ui_server, "list_memories", thread_id=thread)["memories"]) == 3
    browser.get(f"{ui}/threads")
    assert thread in thread_ids_listed(browser)

    dry_run()
    confirm = one(browser, "form#confirm")
    hidden = {
        field.get_attribute("name"): field.get_attribute("value")
        for field in confirm.find_elements(By.CSS_SELECTOR, "input[type=hidden]")
    }
    assert hidden.get("thread_id") == thread and hidden.get("confirm") == "1" and hidden.get("csrf")
    submit(browser, submit_button(confirm))
    receipt = one(browser, "#receipt")
    assert receipt.find_elements(By.CSS_SELECTOR, ".receipt-done")
    assert not receipt.find_elements(By.CSS_SELECTOR, ".receipt-dry-run")
    assert numbers_in(one(browser, "#receipt-memories").text) == {3}
    assert numbers_in(one(browser, "#receipt-messages").text) == {3}

    browser.get(f"{ui}/threads")
    assert thread not in thread_ids_listed(browser)
    assert mcp(ui_server, "search_memory", query=word, thread_id=thread)["results"] == []
    assert thread not in {
        hit.get("thread_id") for hit in mcp(ui_server, "search_memory", query=word)["results"]
    }
    assert mcp(ui_server, "list_memories", thread_id=thread)["memories"] == []
    assert mcp(ui_server, "get_working_memory", thread_id=thread)["messages"] == []


def test_the_audit_page_shows_who_did_what_and_its_filters_work(
    ui_server: TokenServer, browser: webdriver.Chrome
) -> None:
    thread, other = new_id(), new_id()
    tag = new_tag()
    added = add_turns(ui_server, thread, [("user", f"The {tag} door code is 2468"), ("assistant", "Noted.")])
    add_turns(ui_server, other, [("user", "Another thread entirely.")])

    ui = ui_server.ui_url
    login(browser, ui, ui_server.write_token)
    console_problems(browser)  # start the log afresh
    submit(browser, one(browser, "nav#nav a[href$='/ui/audit']"))
    assert path_of(browser) == "/ui/audit"
    assert {thread, other} <= {e.text.strip() for e in css(browser, "table#audit tr.record td.thread")}
    assert tag not in browser.page_source, "memory text on the audit page"

    form = one(browser, "form#audit-filters")
    form.find_element(By.CSS_SELECTOR, "input[name=thread_id]").send_keys(thread)
    Select(form.find_element(By.CSS_SELECTOR, "select[name=action]")).select_by_value("add")
    submit(browser, submit_button(form))
    assert path_of(browser) == "/ui/audit"
    rows = css(browser, "table#audit tr.record")
    cells = [
        {c: row.find_element(By.CSS_SELECTOR, f"td.{c}").text.strip() for c in ("actor", "action", "thread")}
        for row in rows
    ]
    assert cells == [{"actor": f"{E2E_USER} (e2e-write)", "action": "add", "thread": thread}] * 2
    # Its ids open the memories' own pages, newest first.
    newest = rows[0]
    newest.find_element(By.CSS_SELECTOR, "details summary").click()  # opens the list, no navigation
    link = newest.find_element(By.CSS_SELECTOR, "a.memory-link")
    assert urlsplit(link.get_attribute("href")).path == f"/ui/memories/{added[1]['id']}"
    assert not css(browser, "form#verify"), "a write token got the admin's verify button"
    assert console_problems(browser) == []

    login(browser, ui, ui_server.admin_token)
    browser.get(f"{ui}/audit?space=*")
    submit(browser, submit_button(one(browser, "form#verify")))
    assert "every chain is intact" in one(browser, "#verification").text


def test_hostile_content_is_shown_as_text(ui_server: TokenServer, browser: webdriver.Chrome) -> None:
    thread = new_id()
    tag = new_tag()
    hostile = f"Plan {tag}: {HOSTILE_SCRIPT} and {HOSTILE_IMG} done"
    added = add_turns(ui_server, thread, [("user", hostile), ("assistant", f"</textarea>{HOSTILE_IMG}")])
    fact = remember(ui_server, f"The user {tag} wrote </textarea>{HOSTILE_SCRIPT}{HOSTILE_IMG}")

    ui = ui_server.ui_url
    login(browser, ui, ui_server.write_token)
    console_problems(browser)  # start the log afresh

    browser.get(f"{ui}/threads/{thread}")
    contents = [e.text for e in css(browser, "ol#messages li.message .content")]
    assert contents == [hostile, f"</textarea>{HOSTILE_IMG}"]
    assert "<script>" in contents[0] and "<img src=x onerror=" in contents[0]
    assert css(browser, "ol#messages img") == []
    assert_nothing_executable(browser)

    browser.get(f"{ui}/search?q={tag}&mode=text")
    hits = {h.find_element(By.CSS_SELECTOR, ".content").text for h in css(browser, "ol#results li.hit")}
    assert hostile in hits and fact["content"] in hits
    assert css(browser, "ol#results img") == []
    assert_nothing_executable(browser)

    browser.get(f"{ui}/memories/{fact['id']}")
    assert one(browser, "#content").text == fact["content"]
    assert one(browser, "form#edit textarea[name=content]").get_attribute("value") == fact["content"]
    assert_nothing_executable(browser)

    browser.get(f"{ui}/memories/{added[0]['id']}")
    assert one(browser, "#content").text == hostile
    assert_nothing_executable(browser)

    browser.get(f"{ui}/memories?types=fact")
    assert fact["content"] in [e.text for e in css(browser, "ol#memories li.memory .content")]
    assert_nothing_executable(browser)

    assert console_problems(browser) == []


def test_a_read_only_token_cannot_edit(ui_server: TokenServer, browser: webdriver.Chrome) -> None:
    tag = new_tag()
    original = f"The user {tag} prefers window seats"
    fact = remember(ui_server, original)
    edit_url = f"{ui_server.ui_url}/memories/{fact['id']}/edit"

    ui = ui_server.ui_url
    login(browser, ui, ui_server.read_token)
    who = one(browser, "#who").text.lower()
    assert E2E_USER in who and "read" in who and "write" not in who, who
    browser.get(f"{ui}/memories/{fact['id']}")
    assert one(browser, "#content").text == original
    assert css(browser, "form#edit") == [] and css(browser, "textarea[name=content]") == []
    assert css(browser, "form.rollback") == []

    # A POST crafted in the page itself: same origin, the session's cookies and its CSRF value.
    fields = css(browser, "input[name=csrf]")
    if not fields:
        browser.get(f"{ui}/threads")
    csrf = csrf_of(browser)
    page = browser.find_element(By.TAG_NAME, "html")
    post_from_page(browser, edit_url, {"content": "hijacked by a reader", "csrf": csrf})
    wait_for_navigation(browser, page)
    assert "write" in error_text(browser), f"not refused for want of the write scope: {error_text(browser)!r}"

    # The same with the session's cookies from a script, and with the read token as a bearer header.
    refused = post(
        edit_url,
        {"content": "hijacked by a reader", "csrf": csrf},
        cookies=cookies_of(browser),
        headers={"Origin": ui_server.base_url},
    )
    assert refused.status_code == 403, (refused.status_code, refused.text[:500])
    refused = post(
        edit_url,
        {"content": "hijacked by a reader"},
        headers={"Authorization": f"Bearer {ui_server.read_token}"},
    )
    assert refused.status_code == 403, (refused.status_code, refused.text[:500])
    assert 'id="error"' in refused.text

    stored = history(ui_server, fact["id"])
    assert stored["memory"]["content"] == original and len(stored["revisions"]) == 1


def test_posts_without_a_valid_csrf_value_or_from_another_site_are_refused(
    ui_server: TokenServer, browser: webdriver.Chrome
) -> None:
    tag = new_tag()
    original = f"The user {tag} collects old maps"
    fact = remember(ui_server, original)
    edit_url = f"{ui_server.ui_url}/memories/{fact['id']}/edit"

    login(browser, ui_server.ui_url, ui_server.write_token)
    browser.get(f"{ui_server.ui_url}/memories/{fact['id']}")
    csrf = one(browser, "form#edit input[name=csrf]").get_attribute("value")
    cookies = cookies_of(browser)
    same_origin = {"Origin": ui_server.base_url}

    for data, headers, why in [
        ({"content": "no csrf field"}, same_origin, "no csrf field"),
        ({"content": "a forged csrf", "csrf": "forged-" + "x" * 40}, same_origin, "a wrong csrf value"),
        ({"content": "from elsewhere", "csrf": csrf}, {"Origin": "http://evil.example"}, "another origin"),
        ({"content": "from elsewhere", "csrf": csrf}, {"Sec-Fetch-Site": "cross-site"}, "another site"),
    ]:
        refused = post(edit_url, data, cookies=cookies, headers=headers)
        assert refused.status_code == 403, (why, refused.status_code, refused.text[:500])
        assert 'id="error"' in refused.text, why
    assert history(ui_server, fact["id"])["memory"]["content"] == original

    # A real cross-site form post from another page: the SameSite=Strict cookie is not sent along.
    browser.get("data:text/html,<title>elsewhere</title><p>another site</p>")
    page = browser.find_element(By.TAG_NAME, "html")
    post_from_page(browser, edit_url, {"content": "posted from another site", "csrf": csrf})
    wait_for_navigation(browser, page)
    assert "posted from another site" not in browser.find_element(By.TAG_NAME, "body").text
    stored = history(ui_server, fact["id"])
    assert stored["memory"]["content"] == original and len(stored["revisions"]) == 1

    # The same request with the csrf value and from the page's own origin is accepted.
    accepted = post(
        edit_url, {"content": f"The user {tag} collects sea charts", "csrf": str(csrf)}, cookies, same_origin
    )
    assert accepted.status_code == 303, (accepted.status_code, accepted.text[:500])
    assert urlsplit(accepted.headers["location"]).path == f"/ui/memories/{fact['id']}"
    assert history(ui_server, fact["id"])["memory"]["content"] == f"The user {tag} collects sea charts"


def test_pages_carry_a_csp_that_forbids_scripts_and_the_browser_reports_no_violation(
    ui_server: TokenServer, browser: webdriver.Chrome
) -> None:
    thread = new_id()
    turns = add_turns(ui_server, thread, [("user", "A quiet day on the beach in Kaanapali.")])
    fact = remember(ui_server, f"The user {new_tag()} likes sunrise hikes")
    pages = [
        *MAIN_PAGES,
        f"/threads/{thread}",
        f"/memories/{fact['id']}",
        f"/memories/{turns[0]['id']}",
    ]
    ui = ui_server.ui_url

    bearer = {"Authorization": f"Bearer {ui_server.write_token}"}
    with httpx2.Client(timeout=30, follow_redirects=False) as http:
        for path in ["/login", *pages]:
            response = http.get(f"{ui}{path}", headers={} if path == "/login" else bearer)
            assert response.status_code == 200, (path, response.status_code)
            policy = response.headers.get("content-security-policy")
            assert policy, f"{path} has no Content-Security-Policy header"
            directives = {
                d.split()[0].lower(): d.split()[1:] for d in (p.strip() for p in policy.split(";")) if d
            }
            scripts = directives.get("script-src", directives.get("default-src"))
            assert scripts == ["'none'"], f"{path}: scripts allowed by {policy!r}"

    browser.get(f"{ui}/login")
    login(browser, ui, ui_server.write_token)
    for path in pages:
        browser.get(f"{ui}{path}")
        assert css(browser, "nav#nav"), path
        assert not error_text(browser), (path, error_text(browser))
    assert console_problems(browser) == []


# ---- the standalone command -------------------------------------------------------------------------


@pytest.fixture
def ui_command(tmp_path: Path) -> Iterator[tuple[UiCommand, str]]:
    """A data dir filled over stdio, then `mcp-memory ui --port N` on it; (the command, a thread id)."""
    data_dir = tmp_path / "data"
    thread = new_id("standalone")

    async def fill() -> None:
        stdio = StdioServer(tmp_path / "stdio", server_env(data_dir))
        try:
            async with stdio.connect() as client:
                for role, content in [("user", "Is Kauai quieter than Maui?"), ("assistant", "Yes, mostly.")]:
                    await call(client, "add_turn", thread_id=thread, role=role, content=content)
        finally:
            stdio.close()

    anyio.run(fill)
    command = UiCommand(tmp_path / "ui", server_env(data_dir))
    command.start()
    try:
        yield command, thread
    finally:
        command.stop()


def test_the_ui_command_serves_loopback_without_a_login(
    ui_command: tuple[UiCommand, str], browser: webdriver.Chrome
) -> None:
    command, thread = ui_command
    browser.get(f"{command.ui_url}/threads")
    assert path_of(browser) == "/ui/threads", "the loopback explorer asked for a login"
    assert E2E_USER in one(browser, "#who").text
    assert thread in thread_ids_listed(browser)
    browser.get(f"{command.ui_url}/threads/{quote(thread)}")
    assert [e.text for e in css(browser, "ol#messages li.message .content")] == [
        "Is Kauai quieter than Maui?",
        "Yes, mostly.",
    ]
    assert console_problems(browser) == []
