"""The web viewer and the HTML export in a real browser: the system's headless Chromium,
driven through selenium and /usr/bin/chromedriver. The server runs in a thread on
127.0.0.1 (a free port); a failing test leaves a screenshot in the temporary directory."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from backends import unavailable

pytest.importorskip("starlette", reason="needs the web extra")

from sessiontree import Session
from sessiontree.repos.jsonl import JSONLRepo
from web_support import HOSTILE, check_page, hostile_session, import_repo_sessions

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SCREENSHOTS = Path(tempfile.gettempdir()) / "sessiontree-web-screenshots"
"""Where a failing browser test saves what the page looked like."""
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
)


@dataclass
class Served:
    url: str
    sessions: dict[str, Session]
    repo: JSONLRepo


@contextlib.contextmanager
def run_server(root: Path, *, write: bool = False) -> Iterator[str]:
    """Serve the JSONL store at ``root`` on 127.0.0.1 (a free port); yields the base URL."""
    from sessiontree.web.app import create_app
    from sessiontree.web.server import serve_in_thread

    with serve_in_thread(create_app(JSONLRepo(root), write=write), host="127.0.0.1") as url:
        assert url.startswith("http://127.0.0.1:")
        yield url


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A JSONL store holding the repository's real sessions and the hostile one."""
    root = tmp_path_factory.mktemp("web-store")

    async def fill() -> dict[str, str]:
        repo = JSONLRepo(root)
        try:
            ids = {s.id: s.id for s in await import_repo_sessions(repo)}
            hostile = await hostile_session(repo)
            ids["hostile"] = hostile.id
            return ids
        finally:
            await repo.close()

    yield root, asyncio.run(fill())


@pytest.fixture(scope="module")
def server(store: tuple[Path, dict[str, str]]) -> Iterator[str]:
    with run_server(store[0]) as url:
        yield url


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        unavailable(
            "needs /usr/bin/chromium and /usr/bin/chromedriver (apt-get install chromium chromium-driver)"
        )
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("needs selenium (the dev extra)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    profile = tmp_path_factory.mktemp("chromium-profile")
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@contextlib.contextmanager
def screenshot_on_failure(driver: Any, name: str) -> Iterator[None]:
    """Save the browser's screenshot to :data:`SCREENSHOTS` when the block raises."""
    try:
        yield
    except BaseException:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shot = SCREENSHOTS / f"{name}.png"
        with contextlib.suppress(Exception):
            driver.save_screenshot(str(shot))
            print(f"screenshot of the failure: {shot}")
        raise


def _css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, selector))


def _wait(driver: Any, selector: str) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, 20).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, selector))
    )


CLAUDE = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
"""The imported Claude Code session of data/sessions (53 entries, three roots)."""


def test_list_search_open_expand_and_context(browser: Any, server: str) -> None:
    d = browser
    with screenshot_on_failure(d, "list_search_open_expand_and_context"):
        d.get(server + "/")
        assert len(_css(d, "#sessions tr")) == 1 + 4
        box = _css(d, "input[name=search]")[0]
        box.send_keys("hello.py")
        box.submit()
        _wait(d, "#hits")
        assert len(_css(d, "#hits tr")) > 1
        d.get(server + "/")
        link = next(a for a in _css(d, "#sessions a") if CLAUDE.startswith(a.text))
        link.click()
        _wait(d, "#tree")
        closed = [r for r in _css(d, "details.run") if r.get_attribute("open") is None]
        assert closed, "a branch off the current path starts collapsed"
        branch = closed[0]
        rows = branch.find_elements("css selector", "details.row")
        assert rows and not rows[0].is_displayed()
        branch.find_element("css selector", "summary").click()
        assert branch.get_attribute("open") is not None and rows[0].is_displayed()
        rows[0].find_element("css selector", "summary").click()
        assert rows[0].find_element("css selector", ".detail").is_displayed()
        assert _css(d, ".badge.leaf")[0].is_displayed()
        _css(d, "#tab-context")[0].click()
        _wait(d, "#context")
        text = _css(d, "#context")[0].text
        assert "tokens (estimate)" in text and "messages" in text
        assert _css(d, "#context .msg")


def test_hostile_text_is_shown_and_never_runs(
    browser: Any, server: str, store: tuple[Path, dict[str, str]]
) -> None:
    d = browser
    sid = store[1]["hostile"]
    with screenshot_on_failure(d, "hostile_text_is_shown_and_never_runs"):
        for path in (f"/s/{sid}", f"/s/{sid}/context", "/?q=name"):
            d.get(server + path)
            assert d.execute_script("return window.__pwned === undefined")
            for el in _css(d, "details"):
                if el.get_attribute("open") is None and el.is_displayed():
                    el.find_element("css selector", "summary").click()
            assert HOSTILE in d.find_element("css selector", "body").text, path
        d.get(server + f"/s/{sid}")
        off = [r for r in _css(d, "details.run") if r.get_attribute("open") is None]
        assert len(off) == 1
        off[0].find_element("css selector", "summary").click()
        assert "other branch" in off[0].text


def test_html_export_opens_offline_in_the_browser(
    browser: Any, store: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    from sessiontree.web.export import export_html

    async def export() -> str:
        repo = JSONLRepo(store[0])
        try:
            s = await repo.open(store[1]["hostile"])
            return await export_html(s)
        finally:
            await repo.close()

    html = asyncio.run(export())
    check_page(html)
    out = tmp_path / "export.html"
    out.write_text(html, encoding="utf-8")
    d = browser
    with screenshot_on_failure(d, "html_export_opens_offline_in_the_browser"):
        d.get(out.as_uri())
        _wait(d, "#tree")
        assert d.execute_script("return window.__pwned === undefined")
        entries = d.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert entries == [], entries
        runs = _css(d, "details.run")
        assert len(runs) == 3
        closed = [r for r in runs if r.get_attribute("open") is None]
        closed[0].find_element("css selector", "summary").click()
        assert "other branch" in closed[0].text
        img = _css(d, "img.inline")
        assert img and img[0].get_attribute("src").startswith("data:image/png")
