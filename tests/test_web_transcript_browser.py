"""The transcript page in a real browser (headless Chromium through selenium): a real Claude
Code session with sub-agents, a Codex compaction, a pi fork (switch branches, compare them),
the page updating itself while a real writer process appends to a SQLite and a JSONL store,
and the layout at 390 and 1,400 pixels wide. A failing test leaves a screenshot in the
temporary directory."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backends import REQUIRE_ALL, unavailable

if not REQUIRE_ALL:  # with SESSIONTREE_REQUIRE_ALL=1 a missing web extra fails the import
    pytest.importorskip("starlette", reason="needs the web extra")

from sessiontree.backends.jsonl.repo import JSONLRepo
from sessiontree.entries import MessageEntry
from sessiontree.interop import import_session
from test_web_transcript import (
    CLAUDE,
    CODEX_COMPACTED,
    PI,
    _start_writer,
    codex_rollout_with_compaction,
    make_store,
)
from web_support import HOSTILE, chromium, hostile_session

SCREENSHOTS = Path(tempfile.gettempdir()) / "sessiontree-web-screenshots"
"""Where the tests save what the pages looked like (every width, and any failure)."""


@contextlib.contextmanager
def run_server(url: str) -> Iterator[str]:
    """Serve the store at ``url`` on 127.0.0.1 (a free port); yields the base URL."""
    from sessiontree.repos import open_repo
    from sessiontree.web.app import create_app
    from sessiontree.web.server import serve_in_thread

    with serve_in_thread(create_app(open_repo(url)), host="127.0.0.1") as base:
        yield base


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    """A JSONL store with the Claude Code session, a Codex rollout with a compaction, the
    pi session with a fork (made as pi's ``/tree`` makes one) and the hostile session."""
    root = tmp_path_factory.mktemp("transcript-store")

    async def fill() -> dict[str, str]:
        repo = JSONLRepo(root / "store")
        try:
            ids = {}
            ids["claude"] = (await import_session(CLAUDE, repo))[0].id
            rollout = codex_rollout_with_compaction(root / "rollout.jsonl")
            ids["codex"] = (await import_session(rollout, repo))[0].id
            if CODEX_COMPACTED.exists():
                ids["codex-real"] = (await import_session(CODEX_COMPACTED, repo))[0].id
            pi, _ = await import_session(PI, repo)
            path = await pi.get_branch()
            users = [e for e in path if isinstance(e, MessageEntry) and e.message.role == "user"]
            fork_at = users[len(users) // 2].id
            ids["pi-old-leaf"] = str(await pi.get_leaf_id())
            await pi.set_leaf_id(fork_at)
            await pi.append_message(
                {"role": "user", "content": "try the other approach instead", "timestamp": 1}
            )
            ids["pi"], ids["pi-fork"] = pi.id, fork_at
            ids["hostile"] = (await hostile_session(repo)).id
            return ids
        finally:
            await repo.close()

    return f"jsonl://{root / 'store'}", asyncio.run(fill())


@pytest.fixture(scope="module")
def server(store: tuple[str, dict[str, str]]) -> Iterator[str]:
    with run_server(store[0]) as url:
        yield url


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium-profile"), width=1400, height=1000) as driver:
        yield driver


@contextlib.contextmanager
def shot_on_failure(driver: Any, name: str) -> Iterator[None]:
    try:
        yield
    except BaseException:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(Exception):
            driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
        raise


def _css(driver: Any, selector: str) -> list[Any]:
    return list(driver.find_elements("css selector", selector))


def _until(driver: Any, check: Any, timeout: float = 20.0) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(lambda d: check(d))


def _in_view(driver: Any, element: Any) -> bool:
    return bool(
        driver.execute_script(
            "const r = arguments[0].getBoundingClientRect();"
            "return r.bottom > 0 && r.top < window.innerHeight;",
            element,
        )
    )


def test_claude_code_sub_agents_open_at_the_leaf(
    browser: Any, server: str, store: tuple[str, dict[str, str]]
) -> None:
    d = browser
    with shot_on_failure(d, "transcript_claude"):
        d.set_window_size(1400, 1000)
        d.get(f"{server}/s/{store[1]['claude']}")
        _until(d, lambda d: _css(d, "#transcript section.turn"))
        leaf = _css(d, ".badge.leaf")
        assert len(leaf) == 1
        _until(d, lambda d: _in_view(d, leaf[0]))
        assert d.execute_script("return window.scrollY") > 0, "it opens at the leaf"
        chains = _css(d, "details.sidechain")
        assert len(chains) == 2
        labels = sorted(c.find_element("css selector", "summary .badge").text for c in chains)
        assert labels == [
            "general-purpose: Analyze current project structure",
            "general-purpose: Check package configuration",
        ]
        inner = chains[0].find_elements("css selector", ".nested .item")
        assert inner and inner[0].is_displayed()
        chains[0].find_element("css selector", "summary").click()
        assert chains[0].get_attribute("open") is None and not inner[0].is_displayed()
        shell = _css(d, "details.tool.shell")[0]
        out = shell.find_element("css selector", ".out")
        assert not out.is_displayed(), "shell output starts folded"
        d.execute_script("arguments[0].scrollIntoView()", shell)
        shell.find_element("css selector", "summary").click()
        assert out.is_displayed() and out.text.strip()
        assert _css(d, "details.tool.read"), "reads are collapsed to their path"
        edits = _css(d, "[data-kind=edit] pre.diff span.add")
        assert edits and edits[0].value_of_css_property("background-color") != "rgba(0, 0, 0, 0)"
        assert _css(d, "#context-chart canvas"), "the context chart is drawn"


def test_a_codex_compaction_and_what_it_replaced(
    browser: Any, server: str, store: tuple[str, dict[str, str]]
) -> None:
    d = browser
    with shot_on_failure(d, "transcript_codex"):
        d.set_window_size(1400, 1000)
        d.get(f"{server}/s/{store[1]['codex']}")
        box = _until(d, lambda d: _css(d, ".summary-box.compaction"))[0]
        assert "compaction" in box.text
        chart = _css(d, "#context-chart")[0]
        assert chart.get_attribute("data-drawn") == "1", "the compaction is marked on the chart"
        d.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        link = box.find_element("css selector", "a.replaced")
        target = link.get_attribute("href").split("#", 1)[1]
        link.click()
        first = _css(d, f"#{target}")[0]
        _until(d, lambda d: _in_view(d, first))
        assert "look at level 2" in first.text


def test_the_real_codex_compaction_is_reached_by_loading_earlier_turns(
    browser: Any, server: str, store: tuple[str, dict[str, str]]
) -> None:
    if "codex-real" not in store[1]:
        unavailable(f"{CODEX_COMPACTED} is not beside the checkout")
    d = browser
    with shot_on_failure(d, "transcript_codex_real"):
        d.get(f"{server}/s/{store[1]['codex-real']}")
        _until(d, lambda d: _css(d, "#transcript section.turn"))
        d.execute_script("window.__same_page = 1")
        for _ in range(20):
            if _css(d, ".summary-box.compaction"):
                break
            turns = len(_css(d, "section.turn"))
            more = _css(d, "#earlier")
            assert more, "no earlier turns and no compaction"
            d.execute_script("arguments[0].click()", more[0])
            _until(d, lambda d, n=turns: len(_css(d, "section.turn")) > n)
        assert _css(d, ".summary-box.compaction")
        assert d.execute_script("return window.__same_page") == 1, "earlier turns load in place"


def test_a_pi_fork_switches_branches_and_compares_them(
    browser: Any, server: str, store: tuple[str, dict[str, str]]
) -> None:
    d = browser
    ids = store[1]
    with shot_on_failure(d, "transcript_pi_fork"):
        d.set_window_size(1400, 1000)
        d.get(f"{server}/s/{ids['pi']}?at={ids['pi-fork']}")
        switcher = _until(d, lambda d: _css(d, f"[data-fork='{ids['pi-fork']}']"))[0]
        assert "2 branches here" in switcher.text
        d.execute_script("arguments[0].scrollIntoView()", switcher)
        switcher.find_element("css selector", "a.switch").click()
        _until(d, lambda d: "another branch" in _css(d, "#transcript-info")[0].text)
        assert "try the other approach instead" not in _css(d, "#transcript")[0].text
        assert ids["pi-old-leaf"] in d.current_url
        d.back()
        switcher = _until(d, lambda d: _css(d, f"[data-fork='{ids['pi-fork']}']"))[0]
        d.execute_script("arguments[0].scrollIntoView()", switcher)
        switcher.find_element("css selector", "a.cmp").click()
        _until(d, lambda d: _css(d, "#compare"))
        head = _css(d, "#compare-head")[0].text
        assert "shared message" in head and "they part after" in head
        differ = _css(d, "#compare .crow.differ")
        assert differ and "try the other approach instead" in _css(d, "#compare")[0].text


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_the_page_updates_itself_while_a_writer_appends(
    browser: Any, kind: str, tmp_path: Path
) -> None:
    url, sid = make_store(kind, tmp_path)
    writer = _start_writer(url, sid)
    d = browser
    try:
        with run_server(url) as base, shot_on_failure(d, f"transcript_live_{kind}"):
            d.get(f"{base}/s/{sid}")
            _until(d, lambda d: _css(d, "#live[data-state=on]"))
            d.execute_script("window.__same_page = 1")
            delays = []
            for n in range(3):
                assert writer.stdin is not None and writer.stdout is not None
                writer.stdin.write(f"live message {n}\n")
                writer.stdin.flush()
                written = float(writer.stdout.readline())
                _until(d, lambda d, n=n: f"live message {n}" in _css(d, "#transcript")[0].text)
                delays.append(time.time() - written)
            assert d.execute_script("return window.__same_page") == 1, "no reload"
            assert max(delays) < 1.0, f"{kind}: shown {max(delays):.2f} s after the append"
            assert len(_css(d, ".badge.leaf")) == 1
    finally:
        for pipe in (writer.stdin, writer.stdout):
            if pipe is not None:
                pipe.close()
        writer.wait(20)


@pytest.mark.parametrize("width", [390, 1400])
def test_the_pages_fit_a_phone_and_a_wide_screen(
    browser: Any, server: str, store: tuple[str, dict[str, str]], width: int
) -> None:
    d = browser
    ids = store[1]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with shot_on_failure(d, f"transcript_{width}"):
        d.set_window_size(width, 900)
        for name, path in (
            ("claude", f"/s/{ids['claude']}"),
            ("codex", f"/s/{ids['codex']}"),
            ("compare", f"/s/{ids['pi']}/compare?b={ids['pi-old-leaf']}"),
            ("hostile", f"/s/{ids['hostile']}"),
        ):
            d.get(server + path)
            _until(d, lambda d: _css(d, "#transcript, #compare"))
            assert d.execute_script("return window.__pwned === undefined")
            inner = d.execute_script("return document.documentElement.clientWidth")
            wide = d.execute_script("return document.documentElement.scrollWidth")
            assert wide <= inner + 1, f"{name} at {width}px scrolls sideways ({wide} > {inner})"
            d.save_screenshot(str(SCREENSHOTS / f"transcript-{name}-{width}.png"))
        assert HOSTILE in d.find_element("css selector", "#transcript").get_attribute("textContent")
