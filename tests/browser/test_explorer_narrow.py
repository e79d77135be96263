"""The explorer on a phone (issue 58, item 6): at 360 px wide every item of the navigation is on screen,
clickable (the element at its centre is the link itself) and leads to its page, in a real headless
Chromium emulating a 360 px mobile viewport against the real server process.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.services.browser import TokenServer, login, submit

WIDTH, HEIGHT = 360, 740
NAV = ["Threads", "Search", "Memories", "Profile", "Activity", "Audit", "Forget"]

# Where a link is and whether a click at its centre reaches it (not an overflowing neighbour, not
# nothing): what a finger tapping it would hit.
_PLACE = """
const link = arguments[0];
const box = link.getBoundingClientRect();
const x = box.left + box.width / 2, y = box.top + box.height / 2;
const hit = document.elementFromPoint(x, y);
return {left: box.left, right: box.right, top: box.top, bottom: box.bottom, width: box.width,
        height: box.height, reached: hit !== null && (hit === link || link.contains(hit)),
        viewport: document.documentElement.clientWidth,
        navOverflow: link.closest('nav').scrollWidth - link.closest('nav').clientWidth};
"""


def narrow(driver: webdriver.Chrome) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 2, "mobile": True},
    )


def nav_link(driver: webdriver.Chrome, label: str) -> Any:
    [link] = [a for a in driver.find_elements(By.CSS_SELECTOR, "nav#nav a") if a.text.strip() == label]
    return link


def test_every_nav_item_is_visible_clickable_and_navigates_at_360_px(
    ui_server: TokenServer, browser: webdriver.Chrome
) -> None:
    narrow(browser)
    login(browser, ui_server.ui_url, ui_server.write_token)
    assert browser.execute_script("return document.documentElement.clientWidth") == WIDTH
    for label in NAV:
        link = nav_link(browser, label)
        browser.execute_script("arguments[0].scrollIntoView({block: 'nearest', inline: 'nearest'})", link)
        place = browser.execute_script(_PLACE, link)
        assert place["viewport"] == WIDTH
        assert place["width"] > 0 and place["height"] > 0, (label, place)
        assert place["left"] >= 0 and place["right"] <= WIDTH, (label, place)  # wholly on screen
        assert place["navOverflow"] <= 0, (label, place)  # the navigation cuts nothing off
        assert place["reached"], (label, place)
        submit(browser, link)  # a real click, then the next page loaded
        assert urlsplit(browser.current_url).path == f"/ui/{label.lower()}", (label, browser.current_url)
        current = browser.find_element(By.CSS_SELECTOR, "nav#nav a[aria-current=page]")
        assert current.text.strip() == label
