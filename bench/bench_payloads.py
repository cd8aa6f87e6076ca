"""Large payloads stored once (issue 30): ``.venv/bin/python bench/bench_payloads.py [--quick]``.

A generated Codex-like session: every turn a user message re-sends the same screenshot (a
PNG-sized base64 image; a new one every ``turns / distinct`` turns), then a tool call, its
output and an answer. Written to SQLite and PostgreSQL twice: with payloads stored once (the
default, ``payload_threshold=4096``) and without (``payload_threshold=None``, every entry
whole). For each store it prints:

* **store / unique**: what the store takes (SQLite: the file's pages in use; PostgreSQL: the
  total size of its tables, TOAST, indexes and their free-space maps) over the unique bytes:
  the distinct screenshots (their JSON literals) plus what the same session takes without
  its screenshots (the text store: the other entries, the search index, the schema). The
  goal: ≤ 1.1 with payloads stored once. Also printed: the empty store (the fixed overhead)
  and the store over the unique JSON (the distinct screenshots plus the entries' JSON) once
  the empty store is taken off, which leaves the search index and the row overheads in.
* **append** and **read** times (the whole session appended one entry at a time; a cold read
  of the branch by a new repository, best of ``--repeat``) and their ratios, dedup over whole.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import os
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sessiontree.backends.sql.repo import SQLRepo

PG_ADMIN = os.environ.get("SESSIONTREE_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def screenshot(seed: int, size: int) -> str:
    """Base64 of ``size`` pseudo-random bytes (incompressible, as a PNG is)."""
    out = bytearray()
    block = hashlib.sha256(f"shot {seed}".encode()).digest()
    while len(out) < size:
        block = hashlib.sha256(block).digest()
        out += block
    return base64.b64encode(bytes(out[:size])).decode()


def turn_messages(i: int, shot: str) -> list[dict[str, Any]]:
    ts = 1_760_000_000_000 + i * 1000
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"step {i}: here is the screen, click the next button"},
                {"type": "image", "data": shot, "mimeType": "image/png"},
            ],
            "timestamp": ts,
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Clicking at step {i}."},
                {"type": "toolCall", "id": f"call_{i}", "name": "click", "arguments": {"x": i}},
            ],
            "api": "openai-responses",
            "provider": "openai",
            "model": "gpt-5-codex",
            "stopReason": "toolUse",
            "timestamp": ts + 1,
        },
        {
            "role": "toolResult",
            "toolCallId": f"call_{i}",
            "toolName": "click",
            "content": [{"type": "text", "text": f"clicked ({i}, 0)\n" + "ok " * 200}],
            "isError": False,
            "timestamp": ts + 2,
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": f"Done with step {i}."}],
            "api": "openai-responses",
            "provider": "openai",
            "model": "gpt-5-codex",
            "stopReason": "stop",
            "timestamp": ts + 3,
        },
    ]


def sqlite_size(path: Path) -> int:
    """Bytes of the SQLite file's pages in use (the WAL checkpointed first)."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    return int((pages - free) * size)


def pg_size(url: str) -> int:
    """Bytes of every table of the store's schema (TOAST and indexes included)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM")
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class AS c"
            " JOIN pg_namespace AS n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchone()
    return int(row[0]) if row else 0


@contextmanager
def pg_database() -> Iterator[str]:
    """A throwaway PostgreSQL database (dropped afterwards)."""
    import psycopg

    name = f"bench_payloads_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def run_store(
    url: str, threshold: int | None, turns: int, shots: list[str], repeat: int
) -> dict[str, float]:
    per = max(turns // len(shots), 1)
    async with SQLRepo(url, payload_threshold=threshold) as repo:
        s = await repo.create(id="codex")
        started = time.perf_counter()
        for i in range(turns):
            for m in turn_messages(i, shots[min(i // per, len(shots) - 1)]):
                await s.append_message(m)
        append_s = time.perf_counter() - started
        usage = await repo.payload_usage(1)
        json_bytes = (await repo.session_sizes())["codex"]
    reads = []
    for _ in range(repeat):
        async with SQLRepo(url, payload_threshold=threshold) as repo:
            started = time.perf_counter()
            branch = await (await repo.open("codex")).get_branch()
            reads.append(time.perf_counter() - started)
            assert len(branch) == 4 * turns
    return {
        "append_s": append_s,
        "read_s": min(reads),
        "payload_bytes": usage.unique_bytes,
        "session_bytes": json_bytes,
    }


def unique_bytes(shots: list[str], turns: int, session_bytes_whole: float) -> float:
    """The distinct screenshots plus the entries' JSON without the screenshots in it."""
    per = max(turns // len(shots), 1)
    sent = sum(len(shots[min(i // per, len(shots) - 1)]) + 2 for i in range(turns))
    distinct = sum(len(s) + 2 for s in shots)
    return session_bytes_whole - sent + distinct


async def bench_dialect(
    name: str, url_of: Any, size_of: Any, turns: int, shots: list[str], repeat: int
) -> list[str]:
    rows = []
    results = {}
    overhead = 0
    blank = [""] * len(shots)
    for label, threshold, images in (
        ("once", 4096, shots),
        ("whole", None, shots),
        ("text", 4096, blank),
    ):
        with url_of(label) as (url, where):
            if label == "once":  # an empty store, measured as the full ones are
                async with SQLRepo(url) as repo:
                    await repo.list()
                overhead = size_of(where)
            r = await run_store(url, threshold, turns, images, repeat if label != "text" else 1)
            r["store"] = size_of(where)
            results[label] = r
    whole_json = results["whole"]["session_bytes"]
    unique_json = unique_bytes(shots, turns, whole_json)
    once, whole, text = results["once"], results["whole"], results["text"]
    distinct = sum(len(s) + 2 for s in shots)
    unique = text["store"] + distinct
    rows.append(
        f"| {name} | {turns} × {len(shots[0]) / 2**20:.2f} MB, {len(shots)} distinct"
        f" | {once['store'] / 2**20:.2f} MB | {whole['store'] / 2**20:.1f} MB"
        f" | {distinct / 2**20:.2f} MB + {text['store'] / 2**20:.2f} MB"
        f" | **{once['store'] / unique:.3f}** | {overhead / 2**10:.0f} kB"
        f" | {(once['store'] - overhead) / unique_json:.3f}"
        f" | {once['append_s']:.2f} s / {whole['append_s']:.2f} s"
        f" = {once['append_s'] / whole['append_s']:.2f}"
        f" | {once['read_s'] * 1000:.0f} ms / {whole['read_s'] * 1000:.0f} ms"
        f" = {once['read_s'] / whole['read_s']:.2f} |"
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=200, help="turns of the session")
    parser.add_argument("--mb", type=float, default=1.0, help="MB of each screenshot's bytes")
    parser.add_argument("--distinct", type=int, default=4, help="distinct screenshots")
    parser.add_argument("--repeat", type=int, default=3, help="cold reads (the best is kept)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--quick", action="store_true", help="40 turns of 0.25 MB")
    args = parser.parse_args(argv)
    if args.quick:
        args.turns, args.mb, args.repeat = 40, 0.25, 1
    shots = [screenshot(i, int(args.mb * 2**20)) for i in range(args.distinct)]
    print(
        "| store | session | store, once | store, whole | unique: screenshots + text store"
        " | once / unique | empty store | (once − empty) / unique JSON"
        " | append once / whole | cold read once / whole |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:

        @contextmanager
        def sqlite_url(label: str) -> Iterator[tuple[str, Path]]:
            path = Path(tmp) / f"{label}.db"
            yield f"sqlite:///{path}", path

        for row in asyncio.run(
            bench_dialect("SQLite", sqlite_url, sqlite_size, args.turns, shots, args.repeat)
        ):
            print(row, flush=True)
    if not args.no_postgres:

        @contextmanager
        def pg_url(label: str) -> Iterator[tuple[str, str]]:
            with pg_database() as url:
                yield url, url

        for row in asyncio.run(
            bench_dialect("PostgreSQL", pg_url, pg_size, args.turns, shots, args.repeat)
        ):
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
