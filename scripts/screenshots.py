"""Screenshots of the memory explorer for the docs: scripts/screenshots [--out DIR] (default docs/screenshots).

Fills a fresh temporary store through a real MCP client (the `mcp-memory serve` command over stdio): a
Hawaii-trip conversation replayed over the past days with a small context window, so it summarizes; a
few remembered facts, one of them corrected (a revision with a diff); and a scratch thread to forget.
Then it starts `mcp-memory ui` on that store and saves PNGs of the main views from headless Chromium at
1280x900 (Debian's chromium and chromedriver, found as the browser tests find them).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import pytest  # noqa: E402
from mcp import Client  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

from mcp_memory.cli.demo import CONVERSATION as DEMO_CONVERSATION  # noqa: E402
from tests.services.browser import (  # noqa: E402
    WINDOW,
    BrowserMissingError,
    UiCommand,
    find_driver_paths,
    new_driver,
    submit,
)
from tests.services.server_process import StdioServer, server_env  # noqa: E402

THREAD = "hawaii-trip"
SCRATCH_THREAD = "scratch-notes"
CONTEXT_WINDOW = 384  # small, so the conversation passes its threshold and summarizes
CONVERSATION = [  # the demo's conversation, and where it went next
    *DEMO_CONVERSATION,
    ("user", "For Kauai, is the Kalalau trail too hard for a beginner hiker?"),
    ("assistant", "The first two miles to Hanakapiai beach are fine; the full trail needs a permit."),
    ("user", "Just the first part then. Maya gets seasick, is the Na Pali boat tour a bad idea?"),
    ("assistant", "Take a catamaran in the morning when the sea is calmer, or see Na Pali by helicopter."),
    ("user", "Helicopter sounds amazing. What does it cost?"),
    ("assistant", "About $300 per person for an hour with doors on; book a week ahead."),
    ("user", "Let's do it on March 21. Can you sum up the plan?"),
    ("assistant", "Seattle to Maui March 14, Molokini snorkel March 16, Kauai from March 19, heli March 21."),
]
SCRATCH = [
    ("user", "Scratch: the rental's gate code is 4711."),
    ("assistant", "Noted the gate code."),
    ("user", "And the wifi password is on the fridge."),
]
FACTS = [
    ("The user is vegetarian", "preference"),
    ("The user's sister Maya travels with them to Hawaii", "semantic"),
    ("The user flies out of Seattle on March 14", "episodic"),
    ("The user prefers vacation rentals over hotels", "preference"),
    ("The user needs to renew their passport before the trip", "semantic"),
]
CORRECTION = (
    "The user flies out of Seattle",
    "The user flies out of Seattle on March 15, a day later than planned",
)


async def _call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise SystemExit(f"scripts/screenshots: {tool} failed: {result.content[0].text}")  # type: ignore[union-attr]
    assert result.structured_content is not None
    return dict(result.structured_content)


async def fill(stdio: StdioServer) -> dict[str, str]:
    """Fill the store; the ids the screenshots need."""
    ids: dict[str, str] = {}
    start = datetime.now(UTC) - timedelta(days=9)
    async with stdio.connect() as client:
        for n, (role, content) in enumerate(CONVERSATION):
            said_at = start + timedelta(hours=10 * n)  # spread over the past days, for the activity plots
            added = await _call(
                client,
                "add_turn",
                thread_id=THREAD,
                role=role,
                content=content,
                context_window=CONTEXT_WINDOW,
                created_at=said_at.isoformat(),
            )
            if added["summarized"]:
                print(f"  turn {n + 1}: summarized", file=sys.stderr)
        for role, content in SCRATCH:
            await _call(client, "add_turn", thread_id=SCRATCH_THREAD, role=role, content=content)
        for content, kind in FACTS:
            written = await _call(client, "remember", content=content, type=kind, thread_id=THREAD)
            if content.startswith(CORRECTION[0]):
                ids["corrected"] = written["id"]
        await _call(client, "update_memory", memory_id=ids["corrected"], content=CORRECTION[1])
        working = await _call(client, "get_working_memory", thread_id=THREAD)
        print(
            f"  {THREAD}: {working['message_count']} messages in working memory, "
            f"{working['token_count']}/{working['context_window']} tokens, summary: {bool(working['summary'])}",
            file=sys.stderr,
        )
    return ids


def shoot(driver: webdriver.Chrome, out: Path, name: str) -> None:
    path = out / f"{name}.png"
    if not driver.save_screenshot(str(path)):
        raise SystemExit(f"scripts/screenshots: could not save {path}")
    print(f"  {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}", file=sys.stderr)


def take(driver: webdriver.Chrome, ui: str, out: Path, ids: dict[str, str]) -> None:
    views = [  # (file name, page, an element to scroll to the top first, if any)
        ("threads", "/threads", None),
        ("thread", f"/threads/{THREAD}", None),
        ("search", "/search?q=vegetarian+food+near+the+rental&mode=hybrid", None),
        ("memories", "/memories?types=fact", None),
        ("memory-history", f"/memories/{ids['corrected']}", "ol#revisions"),
        ("profile", "/profile", None),
        ("activity", "/activity", None),
    ]
    for name, path, anchor in views:
        driver.get(f"{ui}{path}")
        if anchor is not None:
            element = driver.find_element(By.CSS_SELECTOR, anchor)
            driver.execute_script(
                "arguments[0].scrollIntoView({behavior: 'instant', block: 'start'});"
                "window.scrollBy({top: -160, behavior: 'instant'});",
                element,
            )
        shoot(driver, out, name)
    driver.get(f"{ui}/forget")
    form = driver.find_element(By.CSS_SELECTOR, "form#forget")
    form.find_element(By.CSS_SELECTOR, "input[name=thread_id]").send_keys(SCRATCH_THREAD)
    submit(driver, form.find_element(By.CSS_SELECTOR, "button[name=dry_run][value='1']"))
    shoot(driver, out, "forget-receipt")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots", help="where the PNGs go")
    args = parser.parse_args()
    out: Path = args.out.resolve()
    try:
        paths = find_driver_paths()
    except BrowserMissingError as e:
        raise SystemExit(f"scripts/screenshots: {e}") from None
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mcp-memory-screenshots-") as scratch_dir:
        scratch = Path(scratch_dir)
        env = server_env(scratch / "data", {"MCP_MEMORY_LOG_LEVEL": "WARNING"})
        print("filling a fresh store through MCP (mcp-memory serve over stdio)", file=sys.stderr)
        stdio = StdioServer(scratch / "stdio", env)
        try:
            ids = anyio.run(fill, stdio)
        finally:
            stdio.close()
        ui = UiCommand(scratch / "ui", env)
        try:
            ui.start()
        except pytest.fail.Exception as e:
            raise SystemExit(f"scripts/screenshots: {e}") from None
        try:
            driver = new_driver(paths, scratch / "chromium-profile")
            try:
                # The page itself 1280x900 (the window's size includes the browser's own frame).
                width, height = WINDOW
                driver.execute_cdp_cmd(
                    "Emulation.setDeviceMetricsOverride",
                    {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                )
                print(f"screenshots of {ui.ui_url} into {out}", file=sys.stderr)
                take(driver, ui.ui_url, out, ids)
            finally:
                driver.quit()
        finally:
            ui.stop()


if __name__ == "__main__":
    main()
