"""Page load times of the web viewer (issue 15): the largest real session and a 100k one.

Run: ``.venv/bin/python bench/bench_web.py [--entries 100000] [--backends jsonl,sqlite]
[--browser] [--screenshot docs/tree-view.png] [--transcript-screenshots docs/img]``

A store per backend is filled with the largest real session file found (the shared
collection ``../shared/data/sessions`` when present, else ``data/sessions``) and a synthetic
linear session of ``--entries`` entries (user → assistant with a tool call → ~1 KB tool
result → assistant text, repeating). ``sessiontree serve``'s app runs on 127.0.0.1 in a
thread; each page is fetched over real HTTP:

* cold — the first request after the server starts (opens the session: JSONL reads and
  indexes the file once, SQL runs its queries);
* warm — the median of 5 more requests (the session stays open between requests);
* with ``--browser``, the warm page's load time in headless Chromium (navigation start to
  the load event, from the Navigation Timing API), which adds parsing and layout;
* responsiveness — on a fresh server, the synthetic session's cold transcript is asked for
  and, while it is built, the real session's tree page again and again: their median and
  worst times against the heavy page's.

Pages: the transcript (the session page: opens at the leaf; the first request reads every
entry into the session's index, later ones only what was appended), its earlier turns (the
fragment the page's script asks for), the tree's first page, the tree's last page (where the
leaf is), the context (reads the branch: for a linear session that is every entry), stats
(reads every entry). ``--screenshot`` saves the tree view of a small demo session
(branches, a label, a compaction, the leaf) for the README; ``--transcript-screenshots DIR``
saves ``transcript.png`` (1,400 px) and ``transcript-phone.png`` (390 px) of the vendored
Claude Code session with sub-agents.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from sessiontree import SessionRepo, open_repo
from sessiontree.entries import Entry, MessageEntry
from sessiontree.interop import import_session
from sessiontree.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from sessiontree.web.app import create_app
from sessiontree.web.server import serve_in_thread

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "sessions"
IMPORTABLE = ("pi", "claude-code", "codex", "swe-agent-traj")


def real_files() -> list[Path]:
    """Real session files, largest first (shared collection if present)."""
    base = SHARED if SHARED.is_dir() else ROOT / "data" / "sessions"
    files = [p for d in IMPORTABLE for p in (base / d).glob("*") if p.is_file()]
    return sorted(files, key=lambda p: p.stat().st_size, reverse=True)


def synthetic(n: int) -> list[Entry]:
    """A linear session of ``n`` entries in a realistic four-step rhythm."""
    out: list[Entry] = []
    parent: str | None = None
    for i in range(n):
        step = i % 4
        if step == 0:
            msg: Any = UserMessage(content=f"step {i}: please look at module_{i % 97}.py " * 3)
        elif step == 1:
            msg = AssistantMessage(
                content=[
                    TextContent(text="Reading the file."),
                    ToolCall(id=f"c{i}", name="read", arguments={"path": f"module_{i % 97}.py"}),
                ],
                provider="bench",
                model="bench-model",
                usage=Usage(input=1000 + i, output=40, total_tokens=1040 + i),
                stop_reason="toolUse",
            )
        elif step == 2:
            msg = ToolResultMessage(
                tool_call_id=f"c{i - 1}",
                tool_name="read",
                content=[TextContent(text=f"def f_{i}(x):\n    return x * {i}\n" * 30)],
            )
        else:
            msg = AssistantMessage(
                content=[TextContent(text=f"The module multiplies by {i}. **Done.**")],
                provider="bench",
                model="bench-model",
                stop_reason="stop",
            )
        entry = MessageEntry(id=f"e{i:06d}", parent_id=parent, message=msg)
        out.append(entry)
        parent = entry.id
    return out


async def fill(repo: SessionRepo, real: Path, n: int) -> dict[str, str]:
    """Import ``real`` and write the synthetic session; returns name → session id."""
    s, _ = await import_session(real, repo, lenient=True)
    big = await repo.create()
    entries = synthetic(n)
    for start in range(0, n, 10_000):
        await big.storage.append_entries(entries[start : start + 10_000])
    ids = {f"real ({real.name}, {len(await s.get_entries()):,} entries)": s.id}
    ids[f"synthetic ({n:,} entries)"] = big.id
    await s.close()
    await big.close()
    return ids


async def demo(repo: SessionRepo) -> str:
    """A small session with branches, a label, a compaction and a moved leaf."""
    from sessiontree.testing.builders import assistant, tool_call, tool_result, user

    s = await repo.create(metadata={"cwd": "/home/user/project"})
    await s.append_model_change("anthropic", "claude-sonnet-4")
    await s.append_thinking_level_change("medium")
    q = await s.append_message(user("Why does `parse_config` fail on an empty file?"))
    await s.append_message(
        assistant("Let me read it.", tool_call("t1", "read", path="src/config.py"))
    )
    await s.append_message(
        tool_result("t1", "def parse_config(text):\n    return toml.loads(text)['tool']")
    )
    a1 = await s.append_message(
        assistant("`toml.loads('')` returns `{}`, so `['tool']` raises **KeyError**.")
    )
    await s.append_label(a1, "diagnosis")
    fix = await s.append_message(user("Fix it and add a test."))
    await s.append_message(assistant("Done: `parse_config` now returns defaults."))
    await s.append_compaction(
        "The user asked why parse_config fails on empty input; it indexes a missing key.",
        18_400,
        first_kept_entry_id=fix,
    )
    await s.append_message(user("Now run the whole suite."))
    await s.set_leaf_id(a1)
    await s.append_message(user("Instead: make an empty file an error with a clear message."))
    await s.append_message(assistant("Raising `ConfigError('empty config file')` instead."))
    await s.set_leaf_id(q)
    await s.append_message(user("Actually, just explain TOML tables."))
    await s.append_session_name("config parsing")
    tip = (await s.get_entries(types={"message"}))[-3].id
    await s.set_leaf_id(tip)
    sid = s.id
    await s.close()
    return sid


def fetch(client: httpx.Client, url: str) -> float:
    t = time.perf_counter()
    r = client.get(url)
    r.raise_for_status()
    return (time.perf_counter() - t) * 1000


def while_heavy(base: str, heavy: str, small: str) -> tuple[float, list[float]]:
    """Fetch ``heavy`` in a thread and ``small`` again and again meanwhile: the heavy page's
    time and each small fetch's time (ms) that came back before the heavy one."""
    took: dict[str, float] = {}
    done = threading.Event()

    def fetch_heavy() -> None:
        with httpx.Client(timeout=600) as c:
            took["heavy"] = fetch(c, base + heavy)
        done.set()

    thread = threading.Thread(target=fetch_heavy, daemon=True)
    smalls: list[float] = []
    with httpx.Client(timeout=600) as c:
        thread.start()
        time.sleep(0.2)
        while not done.is_set():
            ms = fetch(c, base + small)
            if not done.is_set():
                smalls.append(ms)
            time.sleep(0.05)
    thread.join()
    return took["heavy"], smalls


def browser() -> Any:
    from sessiontree.testing.browser import headless_chromium

    return headless_chromium(Path(tempfile.mkdtemp(prefix="bench-chromium-")), height=860)


def browser_ms(driver: Any, url: str) -> float:
    driver.get(url)
    timing = driver.execute_script(
        "const n = performance.getEntriesByType('navigation')[0];"
        "return [n.loadEventEnd - n.startTime, n.transferSize];"
    )
    return float(timing[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--backends", default="jsonl,sqlite")
    ap.add_argument("--browser", action="store_true")
    ap.add_argument("--screenshot", type=Path, default=None)
    ap.add_argument("--transcript-screenshots", type=Path, default=None)
    ap.add_argument(
        "--pages", default="", help="only the pages whose names start with these (comma-separated)"
    )
    args = ap.parse_args()
    real = real_files()[0]
    driver = browser() if args.browser or args.screenshot or args.transcript_screenshots else None
    try:
        for backend in args.backends.split(","):
            tmp = Path(tempfile.mkdtemp(prefix=f"bench-web-{backend}-"))
            url = f"jsonl://{tmp}" if backend == "jsonl" else f"sqlite:///{tmp}/store.db"
            t = time.perf_counter()
            ids = asyncio.run(fill(open_repo(url), real, args.entries))
            print(f"\n{backend}: store filled in {time.perf_counter() - t:.1f} s")
            with (
                serve_in_thread(create_app(open_repo(url))) as base,
                httpx.Client(timeout=300) as c,
            ):
                for name, sid in ids.items():
                    print(f"  {name}")
                    first = transcript_first_id(c, base, sid)
                    for page, path in (
                        ("transcript", f"/s/{sid}"),
                        ("earlier turns", f"/s/{sid}/turns?before={first}"),
                        ("tree, first page", f"/s/{sid}/tree"),
                        ("tree, last page", f"/s/{sid}/tree?last=1"),
                        ("context", f"/s/{sid}/context"),
                        ("stats", f"/s/{sid}/stats"),
                    ):
                        wanted = [w for w in args.pages.split(",") if w]
                        if wanted and not any(page.startswith(w) for w in wanted):
                            continue
                        cold = fetch(c, base + path)
                        warm = statistics.median(fetch(c, base + path) for _ in range(5))
                        size = len(c.get(base + path).content)
                        line = f"    {page:17} cold {cold:8.0f} ms  warm {warm:7.0f} ms  {size / 1024:7.0f} KiB"
                        if driver is not None and args.browser:
                            line += f"  browser {browser_ms(driver, base + path):7.0f} ms"
                        print(line, flush=True)
            # responsiveness: a fresh server (nothing read), the synthetic session's
            # transcript asked for, and meanwhile the real session's first tree page
            real_sid, big_sid = ids.values()
            with serve_in_thread(create_app(open_repo(url))) as base:
                httpx.get(f"{base}/s/{real_sid}/tree", timeout=300).raise_for_status()
                heavy, smalls = while_heavy(base, f"/s/{big_sid}", f"/s/{real_sid}/tree")
            if smalls:
                print(
                    f"  while the cold synthetic transcript loads ({heavy:.0f} ms): "
                    f"{len(smalls)} small pages, median {statistics.median(smalls):.0f} ms, "
                    f"max {max(smalls):.0f} ms",
                    flush=True,
                )
        if args.screenshot is not None and driver is not None:
            tmp = Path(tempfile.mkdtemp(prefix="bench-web-demo-")) / "sessions"
            sid = asyncio.run(demo(open_repo(f"jsonl://{tmp}")))
            with serve_in_thread(create_app(open_repo(f"jsonl://{tmp}"))) as base:
                driver.set_window_size(1100, 860)
                driver.get(f"{base}/s/{sid}/tree")
                from selenium.webdriver.common.by import By

                # open the first folded branch (the one with the compaction), leave the rest
                for run in driver.find_elements(By.CSS_SELECTOR, "details.run"):
                    if run.get_attribute("open") is None:
                        run.find_element(By.CSS_SELECTOR, "summary").click()
                        break
                args.screenshot.parent.mkdir(parents=True, exist_ok=True)
                driver.save_screenshot(str(args.screenshot))
                print(f"\nscreenshot: {args.screenshot}")
        if args.transcript_screenshots is not None and driver is not None:
            transcript_screenshots(driver, args.transcript_screenshots)
    finally:
        if driver is not None:
            driver.quit()


def transcript_first_id(client: httpx.Client, base: str, sid: str) -> str:
    """The first entry of the transcript's opening page (where "earlier turns" start);
    times the session's first (cold) transcript request as a side effect."""
    t = time.perf_counter()
    r = client.get(f"{base}/s/{sid}/turns")
    r.raise_for_status()
    print(f"    {'transcript, cold':17} {(time.perf_counter() - t) * 1000:8.0f} ms (index built)")
    return r.headers["X-First-Id"]


CLAUDE_SUBAGENTS = (
    ROOT / "data" / "sessions" / "claude-code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
)


def transcript_screenshots(driver: Any, out: Path) -> None:
    """Save the transcript of the vendored Claude Code session (two sub-agents) at 1,400 px
    (``transcript.png``, at the first sub-agent) and 390 px (``transcript-phone.png``)."""
    from selenium.webdriver.common.by import By

    tmp = Path(tempfile.mkdtemp(prefix="bench-web-transcript-")) / "sessions"

    async def load() -> str:
        repo = open_repo(f"jsonl://{tmp}")
        s, _ = await import_session(CLAUDE_SUBAGENTS, repo)
        sid = s.id
        await repo.close()
        return sid

    sid = asyncio.run(load())
    out.mkdir(parents=True, exist_ok=True)
    with serve_in_thread(create_app(open_repo(f"jsonl://{tmp}"))) as base:
        for name, width, height in (
            ("transcript.png", 1400, 1000),
            ("transcript-phone.png", 390, 844),
        ):
            driver.set_window_size(width, height)
            driver.get(f"{base}/s/{sid}")
            time.sleep(0.5)
            agent = driver.find_elements(By.CSS_SELECTOR, "[data-kind=agent]")[1]
            driver.execute_script("arguments[0].scrollIntoView()", agent)
            driver.execute_script("window.scrollBy(0, -140)")
            time.sleep(0.2)
            driver.save_screenshot(str(out / name))
            print(f"screenshot: {out / name}")


if __name__ == "__main__":
    sys.exit(main())
