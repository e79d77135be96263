"""A real headless Chromium for the memory explorer's tests, and the server processes that serve /ui.

Chromium and chromedriver are Debian's (packages `chromium` and `chromium-driver`; scripts/test installs
them when missing and it is root), named by MCP_MEMORY_TEST_CHROMIUM / MCP_MEMORY_TEST_CHROMEDRIVER or
found on PATH. Selenium never downloads a driver: the paths are always given. A missing browser fails
the test with the packages to install; it never skips.

Servers: `ui_server` is `mcp-memory serve --transport http` with three bearer tokens (read+write and
read-only for the user `e2e`, admin for the user `admin`); `UiCommand` is `mcp-memory ui --port N`, the
standalone explorer on loopback that needs no token. Both are NetworkServers, so a failing test's report
shows their stderr; a failing test that used `browser` also gets the page it was on and the console log.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator, Generator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

from mcp_memory.security.static_tokens import hash_token, new_token
from tests.services.server_process import (
    E2E_USER,
    READ_TIMEOUT_SECONDS,
    NetworkServer,
    running,
    server_env,
    tail,
)

CHROMIUM_ENV = "MCP_MEMORY_TEST_CHROMIUM"
CHROMEDRIVER_ENV = "MCP_MEMORY_TEST_CHROMEDRIVER"
DEBIAN_PACKAGES = "chromium chromium-driver"
DEBIAN_CHROMEDRIVER = Path("/usr/lib/chromium/chromedriver")
WINDOW = (1280, 900)
PAGE_LOAD_SECONDS = 30.0
WAIT_SECONDS = 15.0  # an explicit wait for a navigation to finish, never a sleep
ADMIN_USER = "admin"


class BrowserMissingError(RuntimeError):
    """Chromium or chromedriver cannot be found; the message says what to install."""


@dataclass(frozen=True)
class DriverPaths:
    chromium: str
    chromedriver: str


def _from_env(name: str) -> str | None:
    value = os.environ.get(name)
    if not value:
        return None
    if not (os.path.isfile(value) and os.access(value, os.X_OK)):
        raise BrowserMissingError(f"{name}={value} is not an executable file")
    return value


def find_driver_paths() -> DriverPaths:
    """Chromium and chromedriver: from the environment variables, else PATH (and Debian's own place)."""
    chromium = _from_env(CHROMIUM_ENV) or shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = _from_env(CHROMEDRIVER_ENV) or shutil.which("chromedriver")
    if chromedriver is None and DEBIAN_CHROMEDRIVER.is_file():
        chromedriver = str(DEBIAN_CHROMEDRIVER)
    missing = [
        what for what, found in (("chromium", chromium), ("chromedriver", chromedriver)) if found is None
    ]
    if missing:
        raise BrowserMissingError(
            f"the browser tests need {' and '.join(missing)}: install the Debian packages "
            f"`{DEBIAN_PACKAGES}` (scripts/test does when run as root), or name the binaries with "
            f"{CHROMIUM_ENV} and {CHROMEDRIVER_ENV}"
        )
    assert chromium is not None and chromedriver is not None
    return DriverPaths(chromium, chromedriver)


def new_driver(paths: DriverPaths, user_data_dir: Path) -> webdriver.Chrome:
    """Headless Chromium at 1280x900 with a private profile; its console log is kept (get_log("browser"))."""
    options = webdriver.ChromeOptions()
    options.binary_location = paths.chromium
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        f"--user-data-dir={user_data_dir}",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-background-networking",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    user_data_dir.mkdir(parents=True, exist_ok=True)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=paths.chromedriver))
    driver.set_page_load_timeout(PAGE_LOAD_SECONDS)
    return driver


def wait_for_navigation(driver: webdriver.Chrome, old_page: WebElement) -> None:
    """Wait until the page `old_page` belonged to is replaced and the new one has loaded."""
    WebDriverWait(driver, WAIT_SECONDS).until(lambda _: _replaced(old_page))
    # Asked while the new document is still being committed, Chromium can answer with a transient
    # error instead of the state: ask again until it is complete (or the wait times out).
    WebDriverWait(driver, WAIT_SECONDS, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )


def _replaced(old_page: WebElement) -> bool:
    """Whether the element's document is gone. Selenium's staleness_of knows only the stale-element
    error; when the check lands mid-navigation, chromedriver reports the same fact as "Node with given
    id does not belong to the document" (an unknown error), which is just as final."""
    try:
        old_page.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as e:
        if "does not belong to the document" in str(e):
            return True
        raise
    return False


def submit(driver: webdriver.Chrome, button: WebElement) -> None:
    """Click a form's submit button (or a link) and wait for the page it leads to."""
    page = driver.find_element(By.TAG_NAME, "html")
    button.click()
    wait_for_navigation(driver, page)


def submit_button(form: WebElement) -> WebElement:
    """The submit button of a form."""
    return form.find_element(By.CSS_SELECTOR, "button[type=submit], button:not([type]), input[type=submit]")


def login(driver: webdriver.Chrome, ui_url: str, token: str, *, expect_ok: bool = True) -> None:
    """Log in on /ui/login with a bearer token (a normal form post); it must land on /ui/threads unless
    `expect_ok` is False."""
    driver.get(f"{ui_url}/login")
    form = driver.find_element(By.CSS_SELECTOR, "form#login")
    form.find_element(By.CSS_SELECTOR, "input[name=token]").send_keys(token)
    submit(driver, submit_button(form))
    if expect_ok and urlsplit(driver.current_url).path != "/ui/threads":
        errors = " ".join(e.text for e in driver.find_elements(By.CSS_SELECTOR, "#error"))
        pytest.fail(
            f"logging in with a configured token did not reach /ui/threads but {driver.current_url} "
            f"(title {driver.title!r}, #error: {errors or 'none'})",
            pytrace=False,
        )


# ---- the browser fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def chromium_driver_paths() -> DriverPaths:
    try:
        return find_driver_paths()
    except BrowserMissingError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture
def browser(chromium_driver_paths: DriverPaths, tmp_path: Path) -> Iterator[webdriver.Chrome]:
    """A fresh headless Chromium per test (its own profile, so no cookie is shared); quit at teardown."""
    driver = new_driver(chromium_driver_paths, tmp_path / "chromium-profile")
    try:
        yield driver
    finally:
        driver.quit()


# ---- the servers ------------------------------------------------------------------------------------


class TokenServer(NetworkServer):
    """`mcp-memory serve --transport http` (MCP at /mcp, the explorer at /ui) with three bearer tokens:
    `write_token` (read+write) and `read_token` (read) for the user `e2e`, `admin_token` for `admin`."""

    def __init__(self, workdir: Path, data_dir: Path) -> None:
        self.write_token, self.read_token, self.admin_token = new_token(), new_token(), new_token()
        entries = [
            _entry(self.write_token, E2E_USER, "e2e-write", ["read", "write"]),
            _entry(self.read_token, E2E_USER, "e2e-read", ["read"]),
            _entry(self.admin_token, ADMIN_USER, "admin", ["admin"]),
        ]
        super().__init__(
            "http", workdir, server_env(data_dir, {"MCP_MEMORY_SECURITY__TOKENS": json.dumps(entries)})
        )

    @property
    def ui_url(self) -> str:
        return f"{self.base_url}/ui"

    @asynccontextmanager
    async def connect_as(self, token: str | None = None) -> AsyncIterator[Client]:
        """An MCP client over streamable HTTP sending `Authorization: Bearer <token>` (default: write)."""
        headers = {"Authorization": f"Bearer {token or self.write_token}"}
        async with create_mcp_http_client(headers=headers) as http:
            transport = streamable_http_client(self.url, http_client=http)
            async with Client(transport, read_timeout_seconds=READ_TIMEOUT_SECONDS) as client:
                yield client


def _entry(token: str, user_id: str, name: str, scopes: list[str]) -> dict[str, object]:
    return {"sha256": hash_token(token), "user_id": user_id, "name": name, "scopes": scopes}


class UiCommand(NetworkServer):
    """`mcp-memory ui --port N`: the standalone explorer on 127.0.0.1, no token needed on loopback."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        # BROWSER=true: should the command open a web browser, it runs `true` instead of one.
        super().__init__("http", workdir, {**env, "BROWSER": "true"})
        self.stderr_path = workdir / "mcp-memory-ui.stderr"

    @property
    def ui_url(self) -> str:
        return f"{self.base_url}/ui"

    health_path = "/ui/threads"  # no token is configured: loopback pages answer 200

    def arguments(self) -> list[str]:
        return ["ui", "--port", str(self.port)]


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TokenServer]:
    """One token-protected HTTP server per test module; tests use thread ids of their own."""
    workdir = tmp_path_factory.mktemp("mcp-memory-ui")
    yield from running(TokenServer(workdir, workdir / "data"), "the UI server")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach the page a failing browser test was on, and the browser's console log, to its report."""
    report = yield
    driver = getattr(item, "funcargs", {}).get("browser")
    if report.when == "call" and report.failed and isinstance(driver, webdriver.Chrome):
        try:
            text = driver.find_element(By.TAG_NAME, "body").text
            page = f"{driver.current_url}\ntitle: {driver.title!r}\n\n{tail(text)}"
            console = "\n".join(entry["message"] for entry in driver.get_log("browser"))  # type: ignore[no-untyped-call]
        except Exception as e:  # the browser itself may be what failed
            page, console = f"(cannot read the page: {e!r})", ""
        report.sections.append(("browser page", page))
        report.sections.append(("browser console", console or "(empty)"))
    return report
