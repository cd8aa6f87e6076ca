"""The web viewer and the HTML export in a real browser: the system's headless Chromium,
driven through selenium and /usr/bin/chromedriver. The server runs in a thread on
127.0.0.1 (a free port); a failing test leaves a screenshot in the temporary directory."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backends import REQUIRE_ALL

if not REQUIRE_ALL:  # with SESSIONTREE_REQUIRE_ALL=1 a missing web extra fails the import
    pytest.importorskip("starlette", reason="needs the web extra")

from sessiontree.backends.jsonl.repo import JSONLRepo
from web_support import HOSTILE, check_page, chromium, hostile_session, import_repo_sessions

SCREENSHOTS = Path(tempfile.gettempdir()) / "sessiontree-web-screenshots"
"""Where a failing browser test saves what the page looked like."""


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
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver


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
"""The imported Claude Code session of data/sessions/claude-code (53 entries, three roots)."""


def test_list_search_open_expand_and_context(
    browser: Any, server: str, store: tuple[Path, dict[str, str]]
) -> None:
    d = browser
    with screenshot_on_failure(d, "list_search_open_expand_and_context"):
        d.get(server + "/")
        assert len(_css(d, "#sessions tr")) == 1 + len(store[1])
        box = _css(d, "input[name=search]")[0]
        box.send_keys("hello.py")
        box.submit()
        _wait(d, "#hits")
        assert len(_css(d, "#hits tr")) > 1
        d.get(server + "/")
        link = _css(d, f'#sessions tr[data-session="{CLAUDE}"] a')[0]
        link.click()
        _wait(d, "#transcript")
        _css(d, "#tab-tree")[0].click()
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
        for path in (f"/s/{sid}", f"/s/{sid}/tree", f"/s/{sid}/context", "/?q=name"):
            d.get(server + path)
            assert d.execute_script("return window.__pwned === undefined")
            for el in _css(d, "details"):
                if el.get_attribute("open") is None and el.is_displayed():
                    el.find_element("css selector", "summary").click()
            assert HOSTILE in d.find_element("css selector", "body").text, path
        d.get(server + f"/s/{sid}/tree")
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


def test_write_actions_from_the_pages(browser: Any, tmp_path: Path) -> None:
    """With writes on, the entry page's buttons move the leaf, label an entry and fork."""

    async def make() -> tuple[str, str]:
        repo = JSONLRepo(tmp_path / "store")
        try:
            (s, *_) = await import_repo_sessions(repo)
            first = (await s.get_branch())[0].id
            return s.id, first
        finally:
            await repo.close()

    sid, first = asyncio.run(make())
    d = browser
    with (
        run_server(tmp_path / "store", write=True) as url,
        screenshot_on_failure(d, "write_actions"),
    ):
        d.get(f"{url}/s/{sid}/entry/{first}")
        _css(d, "#write-actions input[name=label]")[0].send_keys("start here")
        _css(d, "#do-label")[0].click()
        _wait(d, "#tree")
        assert "start here" in _css(d, f"#e-{first} .badge.label")[0].text
        d.get(f"{url}/s/{sid}/entry/{first}")
        _css(d, "#do-checkout")[0].click()
        _wait(d, "#tree")
        assert _css(d, f"#e-{first} .badge.leaf")
        d.get(f"{url}/s/{sid}/entry/{first}")
        _css(d, "#do-fork")[0].click()
        _wait(d, "#transcript")
        assert sid not in d.current_url and "fork of" in d.find_element("css selector", "main").text
