"""Backend benchmarks (issue 3): memory, SQLite and PostgreSQL, against the raw driver.

Run: ``.venv/bin/python bench/bench_backends.py [--quick] [--depths 1000,10000]
[--sessions 10000] [--backends memory,sqlite,postgres]``

For each backend: append (one at a time, and a batch), open, ``build_context`` at branch depth
1k / 10k / 100k (cold: the first read in the process parses every entry; reopen: ``repo.open``
again, as a server does per request; warm: the same session object again, as an agent loop
does), fork, list of 10k sessions, search. Each line prints
microseconds per operation and, measured in the same run on the same database, the raw driver
doing the equivalent work by hand and the ratio:

* append — ``orjson.dumps`` of the entry dict + one ``INSERT`` into a table with the same
  columns and indexes, in its own transaction (SQLite: same file settings, WAL,
  ``synchronous=NORMAL``; PostgreSQL: an autocommit statement);
* batch — the same rows with ``executemany`` in one transaction;
* open — select the session row, ``orjson.loads`` its metadata;
* build_context — the recursive select of the branch's rows in path order + ``orjson.loads``
  (cold: the first read in the process, every entry parsed; reopen: ``repo.open`` again, as a
  server does per request, reusing the repository's parsed entries — the SQL repositories
  here are made with ``parse_cache_mb=64``, which is opt-in; warm: the same session
  object again, as an agent loop does);
* list — select the same ``sessions`` columns of 10k rows as tuples;
* search — the store's own search query (SQLite: the FTS5 trigram lookup; PostgreSQL: the
  ``LIKE`` over the ``pg_trgm``-indexed ``search_text``) by hand, rows as tuples.

Realistic entries: user messages of ~200 bytes, tool results of ~2 KB, assistant messages with
a tool call (and usage), repeating as user → assistant(call) → result → assistant(call) →
result → assistant(text).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

from sessiontree import MemoryRepo
from sessiontree.backends.sql.postgres_search import SEARCH_SQL, like_pattern
from sessiontree.backends.sql.sqlite_index import match_clause
from sessiontree.entries import Entry, MessageEntry, dump_entry
from sessiontree.ids import new_id
from sessiontree.repos.base import SessionRepo

PG_ADMIN = os.environ.get("SESSIONTREE_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
USAGE = {
    "input": 1200,
    "output": 80,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 1280,
    "cost": {"input": 0.001, "output": 0.0004, "cacheRead": 0, "cacheWrite": 0, "total": 0.0014},
}
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "theta",
    "kappa",
    "lambda",
    "sigma",
    "omega",
    "tracker",
]


def _text(n_bytes: int, seed: int) -> str:
    out: list[str] = []
    size = 0
    i = seed
    while size < n_bytes:
        w = WORDS[(i * 7 + size) % len(WORDS)]
        out.append(w)
        size += len(w) + 1
        i += 1
    return " ".join(out)


def make_message(i: int) -> dict[str, Any]:
    """The i-th message of a realistic agent conversation (camelCase dict)."""
    ts = 1_760_000_000_000 + i
    kind = i % 6
    if kind == 0:
        return {"role": "user", "content": _text(200, i), "timestamp": ts}
    if kind in (1, 3):
        call = {
            "type": "toolCall",
            "id": f"call_{i}",
            "name": "bash",
            "arguments": {"command": f"grep -rn pattern_{i} src/"},
        }
        return {
            "role": "assistant",
            "content": [{"type": "text", "text": "Let me look at that."}, call],
            "api": "openai-responses",
            "provider": "openai",
            "model": "gpt-5",
            "usage": USAGE,
            "stopReason": "toolUse",
            "timestamp": ts,
        }
    if kind in (2, 4):
        return {
            "role": "toolResult",
            "toolCallId": f"call_{i - 1}",
            "toolName": "bash",
            "content": [{"type": "text", "text": _text(2000, i)}],
            "isError": False,
            "timestamp": ts,
        }
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": _text(300, i)}],
        "api": "openai-responses",
        "provider": "openai",
        "model": "gpt-5",
        "usage": USAGE,
        "stopReason": "stop",
        "timestamp": ts,
    }


def chain(n: int, start: int = 0) -> list[Entry]:
    """n message entries, each the child of the previous one."""
    out: list[Entry] = []
    parent: str | None = None
    for i in range(start, start + n):
        e = MessageEntry(message=make_message(i), parent_id=parent)  # type: ignore[arg-type]
        out.append(e)
        parent = e.id
    return out


async def timed(fn: Callable[[], Awaitable[Any]], reps: int) -> float:
    """Fastest of ``reps`` runs of ``fn``, in microseconds (robust on a loaded machine)."""
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t) * 1e6)
    return min(samples)


async def paired(
    ours: Callable[[], Awaitable[Any]], raw: Callable[[], Awaitable[Any]] | None, reps: int
) -> tuple[float, float | None]:
    """:func:`timed` of ``ours`` and ``raw``, run alternately so load hits both alike."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(reps):
        a.append(await timed(ours, 1))
        if raw is not None:
            b.append(await timed(raw, 1))
    return min(a), (min(b) if b else None)


class Raw:
    """The raw driver doing each operation by hand (``None`` for the memory backend)."""

    async def setup(self) -> None: ...
    async def insert_one(
        self, sid: str, seq: int, row: dict[str, Any], fts: bool = False
    ) -> None: ...
    async def insert_batch(self, sid: str, rows: list[dict[str, Any]]) -> None: ...
    async def open(self, sid: str) -> Any: ...
    async def branch(self, sid: str) -> list[Any]: ...
    async def list(self) -> list[Any]: ...
    async def search(self, word: str) -> list[Any]: ...
    async def close(self) -> None: ...


_CHAIN = """
WITH RECURSIVE chain (id, parent_id, body, depth) AS (
  SELECT id, parent_id, body, 0 FROM entries
   WHERE session_id = {p} AND id = (SELECT leaf_id FROM sessions WHERE id = {p})
  UNION ALL
  SELECT e.id, e.parent_id, e.body, c.depth + 1 FROM chain c
    JOIN entries e ON e.session_id = {p} AND e.id = c.parent_id
)
SELECT body{cast} FROM chain
"""
_RAW_TABLE = """CREATE TABLE raw_entries (
  session_id TEXT NOT NULL, seq BIGINT NOT NULL, id TEXT NOT NULL, parent_id TEXT,
  type TEXT NOT NULL, timestamp TEXT NOT NULL, target_id TEXT, body {json} NOT NULL{extra},
  PRIMARY KEY (session_id, seq), UNIQUE (session_id, id))"""
_LIST = (
    "SELECT id, metadata{cast}, created_us, modified_us, name, entry_count, message_count,"
    " first_message, parent_session_id FROM sessions ORDER BY modified_us DESC, id DESC"
)


class RawSQLite(Raw):
    def __init__(self, path: Path) -> None:
        self.path = path

    async def setup(self) -> None:
        self.c = sqlite3.connect(self.path, isolation_level=None)
        self.c.execute("PRAGMA journal_mode = WAL")
        self.c.execute("PRAGMA synchronous = NORMAL")
        self.c.execute(_RAW_TABLE.format(json="TEXT", extra=""))
        self.c.execute("CREATE VIRTUAL TABLE raw_fts USING fts5 (text)")

    def _row(self, sid: str, seq: int, r: dict[str, Any]) -> tuple[Any, ...]:
        return (
            sid,
            seq,
            r["id"],
            r.get("parentId"),
            r["type"],
            r["timestamp"],
            None,
            orjson.dumps(r).decode(),
        )

    async def insert_one(self, sid: str, seq: int, row: dict[str, Any], fts: bool = False) -> None:
        self.c.execute("BEGIN")
        cur = self.c.execute(
            "INSERT INTO raw_entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)", self._row(sid, seq, row)
        )
        if fts:
            self.c.execute(
                "INSERT INTO raw_fts (rowid, text) VALUES (?, ?)", (cur.lastrowid, _plain(row))
            )
        self.c.execute("COMMIT")

    async def insert_batch(self, sid: str, rows: list[dict[str, Any]]) -> None:
        self.c.execute("BEGIN")
        self.c.executemany(
            "INSERT INTO raw_entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [self._row(sid, i, r) for i, r in enumerate(rows)],
        )
        self.c.execute("COMMIT")

    async def open(self, sid: str) -> Any:
        (meta,) = self.c.execute("SELECT metadata FROM sessions WHERE id = ?", (sid,)).fetchone()
        return orjson.loads(meta)

    async def branch(self, sid: str) -> list[Any]:
        rows = self.c.execute(_CHAIN.format(p=":sid", cast=""), {"sid": sid}).fetchall()
        return [orjson.loads(b) for (b,) in reversed(rows)]  # walk order is leaf first

    async def list(self) -> list[Any]:
        return self.c.execute(_LIST.format(cast="")).fetchall()

    async def search(self, word: str) -> list[Any]:
        where, params = match_clause(word.lower())  # the store's own trigram lookup
        return self.c.execute(
            "SELECT e.session_id, e.id, e.body FROM"
            f" (SELECT rowid FROM entries_fts WHERE {where} ORDER BY rowid DESC LIMIT 20)"
            " AS f JOIN entries AS e ON e.rowid = f.rowid ORDER BY f.rowid DESC",
            params,
        ).fetchall()

    async def close(self) -> None:
        self.c.close()


class RawPostgres(Raw):
    def __init__(self, url: str) -> None:
        self.url = url

    async def setup(self) -> None:
        import psycopg

        self.c = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
        await self.c.execute(_RAW_TABLE.format(json="JSON", extra=", fts TSVECTOR"))
        await self.c.execute("CREATE INDEX ON raw_entries USING GIN (fts) WHERE fts IS NOT NULL")

    async def insert_one(self, sid: str, seq: int, r: dict[str, Any], fts: bool = False) -> None:
        await self.c.execute(
            "INSERT INTO raw_entries VALUES"
            " (%s, %s, %s, %s, %s, %s, %s, %s::json, to_tsvector('simple', %s))",
            (
                sid,
                seq,
                r["id"],
                r.get("parentId"),
                r["type"],
                r["timestamp"],
                None,
                orjson.dumps(r).decode(),
                _plain(r) if fts else None,
            ),
        )

    async def insert_batch(self, sid: str, rows: list[dict[str, Any]]) -> None:
        async with self.c.transaction(), self.c.cursor() as cur:
            await cur.executemany(
                "INSERT INTO raw_entries VALUES (%s, %s, %s, %s, %s, %s, %s, %s::json, NULL)",
                [
                    (
                        sid,
                        i,
                        r["id"],
                        r.get("parentId"),
                        r["type"],
                        r["timestamp"],
                        None,
                        orjson.dumps(r).decode(),
                    )
                    for i, r in enumerate(rows)
                ],
            )

    async def open(self, sid: str) -> Any:
        cur = await self.c.execute("SELECT metadata::text FROM sessions WHERE id = %s", (sid,))
        (meta,) = await cur.fetchone()  # type: ignore[misc]
        return orjson.loads(meta)

    async def branch(self, sid: str) -> list[Any]:
        cur = await self.c.execute(_CHAIN.format(p="%(sid)s", cast="::text"), {"sid": sid})
        return [orjson.loads(b) for (b,) in reversed(await cur.fetchall())]

    async def list(self) -> list[Any]:
        cur = await self.c.execute(_LIST.format(cast="::text"))
        return await cur.fetchall()

    async def search(self, word: str) -> list[Any]:
        # the store's own query: a substring LIKE over its pg_trgm-indexed search_text column
        cur = await self.c.execute(SEARCH_SQL, (like_pattern(word.lower()), 20))
        return await cur.fetchall()

    async def close(self) -> None:
        await self.c.close()


def _plain(row: dict[str, Any]) -> str:
    """The text of a message dict, by hand (what the search index holds)."""
    content = row["message"].get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def report(backend: str, op: str, us: float, raw_us: float | None, note: str = "") -> None:
    ratio = f"{us / raw_us:5.2f}x" if raw_us else "    -"
    raw = f"{raw_us:12.1f}" if raw_us else f"{'-':>12}"
    print(f"{backend:9} {op:28} {us:12.1f} {raw} {ratio}  {note}", flush=True)


async def bench(
    backend: str, repo: SessionRepo, raw: Raw | None, depths: list[int], n_sessions: int
) -> None:
    if raw is not None:
        await raw.setup()

    # append, one at a time (what Session.append_* does: at_leaf=True), interleaved with raw
    s = await repo.create()
    entries = chain(1100)
    raw_sid = new_id()
    dicts = [dump_entry(e) for e in chain(1100)]
    ours_s: list[float] = []
    raw_s: list[float] = []
    fts_s: list[float] = []
    for i, e in enumerate(entries):
        t = time.perf_counter()
        await s.storage.append_entry(e, at_leaf=True)
        ours_s.append((time.perf_counter() - t) * 1e6)
        if raw is not None:
            t = time.perf_counter()
            await raw.insert_one(raw_sid, i, dicts[i])
            raw_s.append((time.perf_counter() - t) * 1e6)
            t = time.perf_counter()
            await raw.insert_one(raw_sid + "-fts", i, dicts[i], fts=True)
            fts_s.append((time.perf_counter() - t) * 1e6)
    ours = statistics.median(ours_s[100:])
    raw_us = statistics.median(raw_s[100:]) if raw_s else None
    report(backend, "append (one, in its own tx)", ours, raw_us, "median of 1000")
    if fts_s:
        report(backend, "  vs raw insert + text index", ours, statistics.median(fts_s[100:]))

    # append a batch of 1000 (three runs each, interleaved; fastest kept)
    batch = chain(1000)
    dicts = [dump_entry(e) for e in batch]

    async def ours_batch() -> None:
        b = await repo.create()
        await b.storage.append_entries(batch)

    async def raw_batch() -> None:
        await raw.insert_batch(new_id(), dicts)  # type: ignore[union-attr]

    ours, raw_us = await paired(ours_batch, raw and raw_batch, 3)
    report(backend, "append batch of 1000 (/entry)", ours / 1000, raw_us and raw_us / 1000)

    # open
    ours, raw_us = await paired(lambda: repo.open(s.id), raw and (lambda: raw.open(s.id)), 200)
    report(backend, "open", ours, raw_us)

    # build_context at depth 1k / 10k / 100k
    for depth in depths:
        deep = await repo.create()
        last: str | None = None
        for start in range(0, depth, 5000):
            part = chain(min(5000, depth - start), start)
            if start:
                part[0] = part[0].model_copy(update={"parent_id": last})
            await deep.storage.append_entries(part)
            last = part[-1].id
        reps = max(1, min(20, 20_000 // depth))

        async def cold(sid: str = deep.id) -> None:
            parse_cache = getattr(repo, "_parse_cache", None)
            if parse_cache is not None:  # SQLRepo: forget the entries parsed before
                parse_cache.clear()
            fresh = await repo.open(sid)
            await fresh.build_context()

        async def reopen(sid: str = deep.id) -> None:
            fresh = await repo.open(sid)
            await fresh.build_context()

        warm_session = await repo.open(deep.id)
        await warm_session.build_context()
        rawf = raw and (lambda d=deep.id: raw.branch(d))
        cold_us, raw_us = await paired(cold, rawf, reps)
        await reopen()
        reopen_us, raw2 = await paired(reopen, rawf, reps)
        warm_us, raw3 = await paired(warm_session.build_context, rawf, reps)
        raw_us = min(x for x in (raw_us, raw2, raw3) if x) if raw_us else None
        for kind, us, note in (
            ("cold", cold_us, "first read in the process: parses every entry"),
            ("reopen", reopen_us, "repo.open again, parse_cache_mb=64 (server)"),
            ("warm", warm_us, "same session again (agent loop)"),
        ):
            report(backend, f"build_context depth {depth:,} {kind}", us, raw_us, note)
        await deep.delete()

    # fork in the middle of a 1k branch
    f = await repo.create()
    fb = chain(1000)
    await f.storage.append_entries(fb)
    ours = await timed(lambda: f.fork(fb[500].id), 5)
    report(backend, "fork at depth 500 of 1k", ours, None)

    # list of 10k sessions
    for i in range(n_sessions - len(await repo.list())):
        x = await repo.create(metadata={"cwd": "/work/project"})
        await x.append_message(make_message(0 if i % 2 else 6))
    ours, raw_us = await paired(lambda: repo.list(), raw and raw.list, 7)
    count = len(await repo.list())
    goal = "goal < 50 ms" if count >= 10_000 else ""
    report(backend, f"list {count:,} sessions", ours, raw_us, goal)

    # search
    ours, raw_us = await paired(
        lambda: repo.search("tracker", limit=20), raw and (lambda: raw.search("tracker")), 20
    )
    report(backend, "search (20 hits)", ours, raw_us)
    if raw is not None:
        await raw.close()


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="depths 1k/10k, 2k sessions")
    parser.add_argument(
        "--depths", help="comma-separated branch depths (default 1000,10000,100000)"
    )
    parser.add_argument("--sessions", type=int, help="sessions to list (default 10000)")
    parser.add_argument("--backends", default="memory,sqlite,postgres")
    args = parser.parse_args()
    depths = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    if args.depths:
        depths = [int(d) for d in args.depths.split(",")]
    n_sessions = args.sessions or (2_000 if args.quick else 10_000)
    print(f"{'backend':9} {'operation':28} {'µs/op':>12} {'raw µs/op':>12} {'ratio':>6}")
    for backend in args.backends.split(","):
        if backend == "memory":
            await bench("memory", MemoryRepo(), None, depths, n_sessions)
        elif backend == "sqlite":
            from sessiontree.backends.sql.repo import SQLRepo

            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "bench.db"
                async with SQLRepo(f"sqlite:///{path}", parse_cache_mb=64) as repo:
                    await repo.list()
                    await bench("sqlite", repo, RawSQLite(path), depths, n_sessions)
        elif backend == "postgres":
            import psycopg

            from sessiontree.backends.sql.repo import SQLRepo

            schema = f"bench_{uuid.uuid4().hex[:10]}"
            with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
                admin.execute(f'CREATE SCHEMA "{schema}"')
            url = f"{PG_ADMIN}?options=-csearch_path%3D{schema}"
            try:
                async with SQLRepo(url, parse_cache_mb=64) as repo:
                    await repo.list()
                    await bench("postgres", repo, RawPostgres(url), depths, n_sessions)
            finally:
                with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
                    admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        else:
            sys.exit(f"unknown backend {backend!r}")


if __name__ == "__main__":
    asyncio.run(main())
