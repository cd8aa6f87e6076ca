"""Encryption at rest (issue 30): the overhead on append and read, as ratios against the same
store unencrypted, measured in one run.

For each backend (SQLite always; PostgreSQL when ``$SESSIONTREE_BENCH_PG`` names a server
URL, e.g. ``postgresql://postgres@127.0.0.1:5432/postgres``, where a throwaway database is
made and dropped), a plain store and an encrypted one (``keys=KeyRing(...)``) each get the
same session of ``--messages`` turns (a user message of ~300 bytes, an assistant reply of
~1.5 kB, every tenth turn a 20 kB tool output), appended one message at a time. Then reads,
each by a fresh repository object (no parse cache): the whole log (``get_entries``) and the
context of the leaf (``build_context``). Plain and encrypted runs alternate, ``--repeat``
times; the median of each is reported, and the ratio encrypted / plain.

Run: ``.venv/bin/python bench/bench_encryption.py [--messages 1000] [--repeat 3]``;
``--quick``: 300 messages, 2 repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.storage.encryption import KeyRing, new_key
from sessiontree.testing.builders import assistant, tool_call, tool_result, user

KEYS = KeyRing([("bench", new_key())])


def _turns(n: int) -> list[Any]:
    """The messages of ``n`` turns (the same for every store)."""
    out: list[Any] = []
    for i in range(n):
        out.append(user(f"turn {i}: " + "please look at the parser again " * 9))
        if i % 10 == 9:
            out.append(assistant("", tool_call(f"call{i}", "read", path=f"src/file{i}.py")))
            out.append(tool_result(f"call{i}", "x = 1  # a line of source\n" * 800))
        out.append(assistant(f"reply {i}: " + "the parser keeps its state in a stack; " * 38))
    return out


async def _timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def _one(url: str, keys: KeyRing | None, messages: list[Any]) -> dict[str, float]:
    """Append ``messages`` to a new session of store ``url``, then read it back; seconds."""
    times: dict[str, float] = {}
    async with SQLRepo(url, keys=keys) as repo:
        s = await repo.create()
        await s.append_message(user("warm-up"))  # the connection, schema and key check

        async def append() -> None:
            for m in messages:
                await s.append_message(m)

        times["append"] = await _timed(append)
        sid = s.id
    for what in ("get_entries", "build_context"):
        async with SQLRepo(url, keys=keys) as repo:
            await repo.list(limit=1)  # connected and checked before the clock starts
            opened = await repo.open(sid)
            if what == "get_entries":
                times[what] = await _timed(opened.get_entries)
            else:
                times[what] = await _timed(opened.build_context)
    return times


@contextmanager
def _pg_database(admin_url: str) -> Iterator[str]:
    import psycopg

    name = f"sessiontree_bench_enc_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    base = admin_url.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _urls(backend: str, tmp: Path, run: int) -> Iterator[tuple[str, str]]:
    """``(plain URL, encrypted URL)`` of fresh stores of ``backend`` for run ``run``."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp / f'plain{run}.db'}", f"sqlite:///{tmp / f'sealed{run}.db'}"
        return
    admin = os.environ["SESSIONTREE_BENCH_PG"]
    with _pg_database(admin) as plain, _pg_database(admin) as sealed:
        yield plain, sealed


async def _bench(backend: str, n: int, repeat: int, tmp: Path) -> dict[str, tuple[float, float]]:
    messages = _turns(n)
    plain: dict[str, list[float]] = {}
    sealed: dict[str, list[float]] = {}
    for run in range(repeat):
        for plain_url, sealed_url in _urls(backend, tmp, run):
            order = [(plain_url, None, plain), (sealed_url, KEYS, sealed)]
            if run % 2:
                order.reverse()  # alternate which goes first
            for url, keys, into in order:
                for k, v in (await _one(url, keys, messages)).items():
                    into.setdefault(k, []).append(v)
    return {k: (statistics.median(plain[k]), statistics.median(sealed[k])) for k in plain}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1000, help="turns per session")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="300 turns, 2 repeats")
    args = parser.parse_args(argv)
    n, repeat = (300, 2) if args.quick else (args.messages, args.repeat)
    backends = ["sqlite"] + (["postgres"] if os.environ.get("SESSIONTREE_BENCH_PG") else [])
    print(f"encryption at rest: {n} turns ({len(_turns(n))} messages), median of {repeat}")
    print(f"{'backend':<10} {'operation':<28} {'plain':>10} {'encrypted':>10} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for backend in backends:
            results = asyncio.run(_bench(backend, n, repeat, Path(tmp)))
            for op, (p, s) in results.items():
                label = {
                    "append": f"append ({len(_turns(n))} messages)",
                    "get_entries": "read: get_entries",
                    "build_context": "read: build_context",
                }[op]
                print(f"{backend:<10} {label:<28} {p:>9.3f}s {s:>9.3f}s {s / p:>6.2f}×")
    if "postgres" not in backends:
        print("(PostgreSQL: set SESSIONTREE_BENCH_PG to a server URL to measure it too)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
