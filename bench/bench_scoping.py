"""Scoping benchmark (issue 30): what a scoped view (:func:`sessiontree.repos.scoped`) costs
over the repository, on a store of many users' sessions.

Each figure is the median time of ``--repeat`` runs and its ratio to a figure of the same
run: a scoped listing against ``list(where=...)`` on the same keys (the view's own cost) and
against the unscoped listing (what the index saves); a scoped search against the unscoped
search and against an unscoped search for a word only the user's sessions hold (as
selective as the scope); a scoped open against an open.

Run: ``.venv/bin/python bench/bench_scoping.py [--sessions 2000] [--users 100]
[--backends sqlite,jsonl,postgres] [--repeat 7]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sessiontree.repos import SessionRepo, open_repo, scoped


async def _median(repeat: int, fn: Callable[[], Awaitable[Any]]) -> float:
    """Median seconds of ``repeat`` calls of ``fn`` (after one warm-up call)."""
    await fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def _fill(repo: SessionRepo, sessions: int, users: int) -> list[str]:
    """``sessions`` sessions spread over ``users`` users, each with a user message that holds
    the word ``common`` (every session's hit for the search) and ``owner<n>owner`` (only
    its user's sessions' hit)."""
    ids = []
    for i in range(sessions):
        s = await repo.create(metadata={"userId": f"u{i % users}", "app": "bench"})
        text = f"common words of session {i}, owner{i % users}owner"
        await s.append_message({"role": "user", "content": text})
        ids.append(s.id)
    return ids


async def bench(url: str, sessions: int, users: int, repeat: int) -> list[tuple[str, float, str]]:
    """The rows ``(figure, seconds, ratio text)`` of one backend."""
    async with open_repo(url) as repo:
        ids = await _fill(repo, sessions, users)
        view = scoped(repo, user_id="u1", app="bench")
        where = {"userId": "u1", "app": "bench"}
        t_all = await _median(repeat, lambda: repo.list())
        t_where = await _median(repeat, lambda: repo.list(where=where))
        t_view = await _median(repeat, lambda: view.list())
        t_search = await _median(repeat, lambda: repo.search("common", 20))
        t_sparse = await _median(repeat, lambda: repo.search("owner1owner", 20))
        t_vsearch = await _median(repeat, lambda: view.search("common", 20))
        mine = ids[1]

        async def open_close(r: SessionRepo) -> None:
            await (await r.open(mine)).close()

        t_open = await _median(repeat, lambda: open_close(repo))
        t_vopen = await _median(repeat, lambda: open_close(view))
    return [
        ("list (every session)", t_all, "1.00"),
        ("list(where=userId, app)", t_where, f"{t_where / t_all:.3f} of list"),
        ("scoped list", t_view, f"{t_view / t_where:.2f}x where, {t_view / t_all:.3f} of list"),
        ("search 20 hits", t_search, "1.00"),
        ("search as selective, 20 hits", t_sparse, f"{t_sparse / t_search:.1f}x search"),
        (
            "scoped search 20 hits",
            t_vsearch,
            f"{t_vsearch / t_search:.1f}x search, {t_vsearch / t_sparse:.2f}x as selective",
        ),
        ("open", t_open, "1.00"),
        ("scoped open", t_vopen, f"{t_vopen / t_open:.2f}x open"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--backends", default="sqlite,jsonl")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    print(f"{args.sessions:,} sessions over {args.users} users; the view sees one user's")
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            url = {
                "sqlite": f"sqlite:///{Path(tmp) / 'bench.db'}",
                "jsonl": f"jsonl://{Path(tmp) / 'store'}",
                "memory": "memory://",
            }.get(backend, args.pg)
            rows = asyncio.run(bench(url, args.sessions, args.users, args.repeat))
        print(f"\n{backend}")
        for name, seconds, ratio in rows:
            print(f"  {name:28} {seconds * 1000:9.2f} ms   {ratio}")


if __name__ == "__main__":
    main()
