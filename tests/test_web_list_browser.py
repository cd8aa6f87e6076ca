"""The session list, search and usage pages in headless Chromium: the filters, the keys
(j/k, enter, /), the search hits' marks (and hostile text that stays text), the usage
charts drawn by the vendored uPlot with the right series, and a 390 px wide phone screen
without sideways scrolling. The store and the browser are test_web_browser.py's."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from backends import REQUIRE_ALL

if not REQUIRE_ALL:  # with SESSIONTREE_REQUIRE_ALL=1 a missing web extra fails the import
    pytest.importorskip("starlette", reason="needs the web extra")

import test_web_browser as shared

_css, _wait, screenshot_on_failure = shared._css, shared._wait, shared.screenshot_on_failure
browser, server, store = shared.browser, shared.server, shared.store
"""test_web_browser.py's fixtures, found by pytest here too: one store and one browser."""

PHONE = 390
"""A phone screen's width in CSS pixels (an iPhone 14's)."""


@contextlib.contextmanager
def phone(driver: Any) -> Iterator[None]:
    """The browser as a 390 px wide touch screen for the block (Chromium's device
    emulation: a headless window cannot be made that narrow)."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": PHONE, "height": 844, "deviceScaleFactor": 1, "mobile": True},
    )
    try:
        yield
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def _keys(driver: Any, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver)
    for key in keys:
        chain.send_keys(key)
    chain.perform()


def _selected(driver: Any) -> list[str]:
    return [r.get_attribute("data-href") for r in _css(driver, "tr.sel")]


def test_list_keys_move_open_and_search(browser: Any, server: str) -> None:
    from selenium.webdriver.common.keys import Keys

    d = browser
    with screenshot_on_failure(d, "list_keys_move_open_and_search"):
        d.get(server + "/")
        rows = [r.get_attribute("data-href") for r in _css(d, "#sessions tr[data-href]")]
        assert len(rows) > 3 and not _selected(d)
        _keys(d, "j")
        assert _selected(d) == rows[:1]
        _keys(d, "j", "j", "k")
        assert _selected(d) == rows[1:2]
        _keys(d, "k", "k")  # stops at the first row
        assert _selected(d) == rows[:1]
        _keys(d, "j", Keys.ENTER)
        _wait(d, "#transcript")  # a session opens at its transcript
        assert d.current_url == server + rows[1]
        d.back()
        _wait(d, "#sessions")
        before = _selected(d)  # the page may come back from the cache as it was left
        _keys(d, "/")
        active = d.switch_to.active_element
        assert active.get_attribute("id") == "search"
        _keys(d, "j")  # typed into the field, not a move
        assert active.get_attribute("value") == "j" and _selected(d) == before
        active.clear()
        active.send_keys("hello.py", Keys.ENTER)
        _wait(d, "#hits")
        marks = _css(d, "#hits mark")
        assert marks and all(m.text.lower() == "hello.py" for m in marks)
        _keys(d, "j", Keys.ENTER)  # the first hit opens at its entry
        _wait(d, "#tree")
        assert "?start=" in d.current_url


def test_list_filters_from_the_form(browser: Any, server: str) -> None:
    from selenium.webdriver.support.ui import Select

    d = browser
    with screenshot_on_failure(d, "list_filters_from_the_form"):
        d.get(server + "/")
        every = len(_css(d, "#sessions tr[data-href]"))
        Select(_css(d, "select[name=agent]")[0]).select_by_visible_text("claude-code")
        _css(d, "#filter button")[0].click()
        _wait(d, "#clear")
        agents = [c.text for c in _css(d, "#sessions td.agent")]
        assert agents and set(agents) == {"claude-code"} and len(agents) < every
        models = Select(_css(d, "select[name=model]")[0])
        choice = next(o.text for o in models.options if o.text.startswith("claude-"))
        Select(_css(d, "select[name=agent]")[0]).select_by_visible_text("any")
        Select(_css(d, "select[name=model]")[0]).select_by_visible_text(choice)
        _css(d, "#filter button")[0].click()
        _wait(d, "#clear")
        shown = [c.text for c in _css(d, "#sessions td.model")]
        assert shown and len(shown) < every
        label = _css(d, "input[name=label]")[0]
        Select(_css(d, "select[name=model]")[0]).select_by_visible_text("any")
        label.send_keys("label <script>")
        label.submit()
        _wait(d, "#clear")
        rows = _css(d, "#sessions tr[data-href]")
        assert len(rows) == 1 and "label <script>" in rows[0].text
        assert d.execute_script("return window.__pwned === undefined")
        _css(d, "#clear")[0].click()
        _wait(d, "#sessions")
        assert len(_css(d, "#sessions tr[data-href]")) == every


def test_search_marks_hostile_text_without_running_it(browser: Any, server: str) -> None:
    from selenium.webdriver.common.keys import Keys

    d = browser
    with screenshot_on_failure(d, "search_marks_hostile_text"):
        d.get(server + "/")
        box = _css(d, "#search")[0]
        box.send_keys("<script>window", Keys.ENTER)
        _wait(d, "#hits")
        marks = _css(d, "#hits mark")
        assert marks and {m.text for m in marks} == {"<script>window"}
        assert d.execute_script("return window.__pwned === undefined")
        assert not _css(d, "#hits script")
        snippet = _css(d, "#hits td.snippet")[0]
        assert "<script>window.__pwned = 1</script>" in snippet.text


def _legend(driver: Any, chart: str) -> list[str]:
    labels = _css(driver, f"#{chart} .u-legend .u-series .u-label")
    return [label.text.rstrip(":") for label in labels][1:]  # the first is the x series


def test_usage_charts_are_drawn_with_their_series(browser: Any, server: str) -> None:
    d = browser
    with screenshot_on_failure(d, "usage_charts_are_drawn"):
        for stack in ("model", "agent", "project"):
            d.get(f"{server}/usage?stack={stack}&period=week")
            _wait(d, "#charts[data-drawn]")
            data = json.loads(_css(d, "#charts")[0].get_attribute("data-chart"))
            labels = [s["label"] for s in data["series"]]
            assert labels, stack
            for chart in ("chart-tokens", "chart-cost"):
                canvas = _css(d, f"#{chart} canvas")
                assert canvas and int(canvas[0].get_attribute("width")) > 200
                assert _legend(d, chart) == labels, (stack, chart)
                painted = d.execute_script(
                    "const c = arguments[0], x = c.getContext('2d');"
                    "const p = x.getImageData(0, 0, c.width, c.height).data;"
                    "let n = 0; for (let i = 3; i < p.length; i += 4) if (p[i]) n++;"
                    "return n;",
                    canvas[0],
                )
                assert painted > 1000, (stack, chart, painted)
            if stack == "agent":
                assert "claude-code" in labels and "pi" in labels
        bars = _css(d, "#by-session li")
        assert bars and all(b.find_element("css selector", ".bar").size["width"] > 0 for b in bars)
        requested = d.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert requested and all(u.startswith(server + "/static/") for u in requested)


@pytest.mark.parametrize("path", ["/", "/?search=file", "/usage", "/usage?stack=project"])
def test_a_phone_screen_needs_no_sideways_scrolling(browser: Any, server: str, path: str) -> None:
    d = browser
    name = "phone" + path.replace("/", "_").replace("?", "_").replace("=", "_")
    with phone(d), screenshot_on_failure(d, name):
        d.get(server + path)
        _wait(d, "main")
        if path.startswith("/usage"):
            _wait(d, "#charts[data-drawn]")
        width = d.execute_script("return document.documentElement.clientWidth")
        scroll = d.execute_script("return document.documentElement.scrollWidth")
        assert width == PHONE and scroll <= PHONE, (path, scroll)
        wide = d.execute_script(
            "return [...document.querySelectorAll('main *')]"
            ".filter(e => e.getBoundingClientRect().right > innerWidth + 1"
            " && !e.closest('.scroll')).map(e => e.tagName + '.' + e.className).slice(0, 5)"
        )
        assert wide == [], (path, wide)
