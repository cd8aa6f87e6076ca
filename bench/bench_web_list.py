"""The viewer's session list, search and usage pages on a store of thousands of sessions, and
their screenshots for the README and docs.

Run: ``.venv/bin/python bench/bench_web_list.py [--sessions 2000] [--backends sqlite,jsonl]
[--screenshots docs/img]``

A store per backend gets the repository's real sessions (``data/sessions``) and
``--sessions`` synthetic ones (each: 3 user turns, 3 replies with usage, a label on one in 10;
20 projects, 5 models). ``sessiontree serve``'s app runs on 127.0.0.1 in a thread and each
page is fetched over real HTTP:

* cold — the first request after the server starts: the list reads the 50 sessions it shows
  (their model, turns, tokens and cost are not in the listing); a model filter and the usage
  page read every session once;
* warm — the median of 5 more requests (what was read is kept until a session changes).

``--screenshots DIR`` saves the list, a search, and the usage page at 1,400 and 390 px wide
(``list.png``, ``list-phone.png``, ``search.png``, ``usage.png``, ``usage-phone.png``) from a
store of the real sessions alone.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from sessiontree import SessionRepo, open_repo
from sessiontree.interop import import_session
from sessiontree.testing.builders import assistant, user
from sessiontree.web.app import create_app
from sessiontree.web.server import serve_in_thread

ROOT = Path(__file__).resolve().parents[1]
VENDORED = ROOT / "data" / "sessions"
MODELS = ("claude-sonnet-4-5", "claude-opus-4-5", "gpt-5", "gemini-2.5-pro", "glm-4.6")


async def fill(repo: SessionRepo, sessions: int) -> None:
    """The real sessions, then ``sessions`` synthetic ones."""
    for path in sorted(p for p in VENDORED.rglob("*") if p.is_file() and p.suffix != ".md"):
        s, _ = await import_session(path, repo, lenient=True)
        await s.close()
    for i in range(sessions):
        s = await repo.create(metadata={"cwd": f"/home/dev/project-{i % 20:02d}"})
        model = MODELS[i % len(MODELS)]
        first = None
        for turn in range(3):
            at = await s.append_message(user(f"session {i} turn {turn}: fix the parser bug"))
            first = first or at
            usage = {"input": 900 + i, "output": 120, "cacheRead": 4000, "cacheWrite": 0}
            await s.append_message(assistant("Done.", model=model, usage=usage))
        if i % 10 == 0 and first is not None:
            await s.append_label(first, f"checkpoint {i}")
        await s.close()


def timed(client: httpx.Client, url: str) -> float:
    start = time.perf_counter()
    r = client.get(url)
    r.raise_for_status()
    return (time.perf_counter() - start) * 1000


PAGES = {
    "list": "/",
    "list, model filter": "/?model=gpt-5",
    "search": "/?search=parser",
    "usage": "/usage",
    "usage by project, weekly": "/usage?stack=project&period=week",
}


def bench(backend: str, sessions: int, tmp: Path) -> None:
    url = {"sqlite": f"sqlite:///{tmp / 'list.db'}", "jsonl": str(tmp / "jsonl")}[backend]
    start = time.perf_counter()

    async def make() -> None:
        repo = open_repo(url)
        try:
            await fill(repo, sessions)
        finally:
            await repo.close()

    asyncio.run(make())
    print(f"\n{backend}: {sessions:,} sessions + the real ones, filled in "
          f"{time.perf_counter() - start:.0f} s")  # fmt: skip
    print(f"{'page':<28}{'cold ms':>10}{'warm ms':>10}")
    with (
        serve_in_thread(create_app(open_repo(url)), host="127.0.0.1") as base,
        httpx.Client(timeout=600) as client,
    ):
        for name, path in PAGES.items():
            cold = timed(client, base + path)
            warm = statistics.median(timed(client, base + path) for _ in range(5))
            print(f"{name:<28}{cold:>10,.0f}{warm:>10,.0f}")


def screenshots(out: Path, tmp: Path) -> None:
    from sessiontree.testing.browser import headless_chromium

    url = str(tmp / "shots")

    async def make() -> None:
        repo = open_repo(url)
        try:
            await fill(repo, 0)
        finally:
            await repo.close()

    asyncio.run(make())
    out.mkdir(parents=True, exist_ok=True)
    shots: list[tuple[str, str, int]] = [
        ("list.png", "/", 1400),
        ("search.png", "/?search=hello.py", 1400),
        ("usage.png", "/usage?period=week", 1400),
        ("list-phone.png", "/", 390),
        ("usage-phone.png", "/usage?period=month", 390),
    ]
    driver: Any = headless_chromium(tmp / "profile", width=1400, height=1000)
    try:
        with serve_in_thread(create_app(open_repo(url)), host="127.0.0.1") as base:
            for name, path, width in shots:
                height = 1000 if width > 500 else 844
                driver.execute_cdp_cmd(
                    "Emulation.setDeviceMetricsOverride",
                    {"width": width, "height": height, "deviceScaleFactor": 1,
                     "mobile": width < 500},
                )  # fmt: skip
                driver.get(base + path)
                time.sleep(0.5)  # the charts are drawn after the load event
                driver.save_screenshot(str(out / name))
                print(f"screenshot: {out / name}")
    finally:
        driver.quit()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--backends", default="sqlite,jsonl")
    ap.add_argument("--screenshots", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.screenshots is not None:
            screenshots(args.screenshots, Path(tmp))
            return
        for backend in args.backends.split(","):
            bench(backend, args.sessions, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
