"""SQLite's search index is written after the append, not in it (issue: append cost; docs/storage.md
"sql"): the watermark table, catch-up by search and by a long backlog, the version 1 → 2
migration, rowid reuse after a delete, several writing processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from sessiontree import EntryNotFoundError
from sessiontree.backends.sql import sqlite_append as sql_sqlite
from sessiontree.backends.sql import sqlite_index
from sessiontree.backends.sql.payloads import expand_all
from sessiontree.backends.sql.plan import FTS_MAX_CHARS, index_text
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.backends.sql.schema import APP, MIGRATIONS, SCHEMA_VERSION
from sessiontree.backends.sql.sqlite_payloads import fetch_payloads
from sessiontree.entries import Entry, MessageEntry, dump_entry_json, parse_entry, parse_entry_json
from sessiontree.messages import message_text
from sessiontree.testing.builders import assistant, bash, user


def _db(tmp_path: Path, name: str = "store.db") -> tuple[str, Path]:
    path = tmp_path / name
    return f"sqlite:///{path}", path


def _sql(path: Path, sql: str, params: Any = ()) -> list[Any]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def _fts_rows(path: Path) -> list[tuple[int, str]]:
    return [(r, t) for r, t in _sql(path, "SELECT rowid, text FROM entries_fts ORDER BY rowid")]


def _watermark(path: Path) -> int:
    ((upto,),) = _sql(path, "SELECT indexed_upto FROM search_index_state")
    return int(upto)


def _expected_index(path: Path) -> list[tuple[int, str]]:
    """What the index must hold: the text of every message row, as the planner computes it."""
    out = []
    rows = _sql(path, "SELECT rowid, body FROM entries ORDER BY rowid")
    with sqlite3.connect(path) as conn:  # long texts are stored once, apart: put them back
        bodies = expand_all([b for _, b in rows], lambda hashes: fetch_payloads(conn, hashes))
    for (rowid, _), body in zip(rows, bodies, strict=True):
        entry = parse_entry_json(body)
        if isinstance(entry, MessageEntry):
            text = index_text(message_text(entry.message))
            if text is not None:
                out.append((rowid, text))
    return out


def _messages(texts: list[str]) -> list[Entry]:
    """Message entries, each the child of the previous one (a batch to append)."""
    out: list[Entry] = []
    parent: str | None = None
    for text in texts:
        e = parse_entry({"type": "message", "parentId": parent, "message": user(text)})
        out.append(e)
        parent = e.id
    return out


async def test_append_leaves_the_index_to_search(tmp_path: Path) -> None:
    url, path = _db(tmp_path)
    async with SQLRepo(url) as repo:
        s = await repo.create()
        one = await s.append_message(user("wombat burrow survey"))
        await s.append_label(one, "important")
        await s.append_message(assistant("", {"type": "toolCall", "id": "c", "name": "x"}))
        await s.append_message(bash("ls", "wombat.txt"))
        # nothing indexed yet: the appends wrote their rows only
        assert _fts_rows(path) == [] and _watermark(path) == 0
        assert [h.entry_id for h in await repo.search("burrow")] == [one]
        top = _sql(path, "SELECT max(rowid) FROM entries")[0][0]
        assert _watermark(path) == top
        # the label and the blank assistant message are not indexed; the texts are the planner's
        assert _fts_rows(path) == _expected_index(path)
        assert len(_fts_rows(path)) == 2
        # a second search has nothing to catch up and indexes nothing twice
        assert len(await repo.search("wombat")) == 2
        assert len(_fts_rows(path)) == 2


async def test_search_finds_entries_from_another_connection(tmp_path: Path) -> None:
    url, _ = _db(tmp_path)
    async with SQLRepo(url) as reader, SQLRepo(url) as writer:
        assert await reader.search("quokka") == []  # opens the reader's connection first
        s = await writer.create()
        hit = await s.append_message(user("quokka selfie"))
        assert [h.entry_id for h in await reader.search("quokka")] == [hit]


async def test_long_backlog_is_indexed_by_the_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sql_sqlite, "INDEX_BACKLOG", 5)
    url, path = _db(tmp_path)
    async with SQLRepo(url) as repo:
        a = await repo.create()
        b = await repo.create()
        for i in range(4):
            await (a if i % 2 else b).append_message(user(f"numbat {i}"))
        assert _fts_rows(path) == []
        await a.append_label(await a.get_leaf_id() or "", "x")  # the fifth row: not a message
        assert _watermark(path) == 5
        assert _fts_rows(path) == _expected_index(path) and len(_fts_rows(path)) == 4
        await a.append_message(user("numbat 4"))
        assert _watermark(path) == 5  # one pending row: below the threshold
        # a batch that crosses the threshold indexes the backlog and itself before it commits
        await b.storage.append_entries(_messages([f"numbat batch {i}" for i in range(6)]))
        assert _watermark(path) == 12
        assert _fts_rows(path) == _expected_index(path) and len(_fts_rows(path)) == 11
        assert len(await repo.search("numbat", limit=100)) == 11


async def test_indexed_text_is_the_planners_on_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long = "emu " * (FTS_MAX_CHARS // 2)
    messages = [user(long), user("   "), user("café crème"), bash("echo hi", "hi\n")]
    for backlog, name in ((10_000, "search.db"), (1, "append.db")):  # catch-up / in the append
        monkeypatch.setattr(sql_sqlite, "INDEX_BACKLOG", backlog)
        url, path = _db(tmp_path, name)
        async with SQLRepo(url) as repo:
            s = await repo.create()
            for m in messages:
                await s.append_message(m)
            await repo.search("emu")
        rows = _fts_rows(path)
        assert rows == _expected_index(path)
        assert [len(t) for _, t in rows] == [
            FTS_MAX_CHARS,
            len("café crème"),
            len("$ echo hi\nhi\n"),
        ]


async def test_rejected_append_leaves_the_index_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sql_sqlite, "INDEX_BACKLOG", 2)
    url, path = _db(tmp_path)
    async with SQLRepo(url) as repo:
        s = await repo.create()
        first = await s.append_message(user("bilby one"))
        (bad,) = _messages(["bilby two"])
        with pytest.raises(EntryNotFoundError):
            await s.storage.append_entries([bad.model_copy(update={"parent_id": "nope"})])
        assert _fts_rows(path) == [] and _watermark(path) == 0
        assert [h.entry_id for h in await repo.search("bilby")] == [first]


async def test_delete_of_the_newest_rows_lowers_the_watermark(tmp_path: Path) -> None:
    url, path = _db(tmp_path)
    async with SQLRepo(url) as repo:
        keep = await repo.create()
        kept = await keep.append_message(user("koala eucalyptus"))
        a = await repo.create()
        for i in range(3):
            await a.append_message(user(f"dingo {i}"))
        assert len(await repo.search("dingo")) == 3  # indexed: the watermark is at 4
        assert _watermark(path) == 4
        await a.delete()
        assert _watermark(path) == 1
        b = await repo.create()
        fresh = [await b.append_message(user(f"echidna {i}")) for i in range(3)]
        # the new rows reuse rowids 2..4; they are still above the watermark, so indexed
        assert sorted(r for (r,) in _sql(path, "SELECT rowid FROM entries")) == [1, 2, 3, 4]
        assert sorted(h.entry_id for h in await repo.search("echidna")) == sorted(fresh)
        assert await repo.search("dingo") == []
        assert [h.entry_id for h in await repo.search("koala")] == [kept]
        assert _fts_rows(path) == _expected_index(path)
        await keep.delete()
        await b.delete()
        assert _watermark(path) == 0 and _fts_rows(path) == []


async def test_version_1_database_migrates_to_the_substring_index(tmp_path: Path) -> None:
    # version 2 kept the rows version 1 had indexed; version 4 (substring search) builds a
    # trigram index of every row again, lazily, at the next search
    url, path = _db(tmp_path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in MIGRATIONS[0].sqlite:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_version (app, version, applied_at_ms) VALUES (?, 1, 0)", (APP,)
        )
        (entry,) = _messages(["Wallaby crossing 最新の状態"])
        conn.execute(
            "INSERT INTO sessions (id, metadata, created_us, modified_us, leaf_id, entry_count,"
            " message_count) VALUES ('s1', '{}', 1, 1, ?, 1, 1)",
            (entry.id,),
        )
        cur = conn.execute(
            "INSERT INTO entries (session_id, seq, id, parent_id, type, timestamp, body)"
            " VALUES ('s1', 0, ?, NULL, 'message', ?, ?)",
            (entry.id, entry.timestamp, dump_entry_json(entry).decode()),
        )
        conn.execute(
            "INSERT INTO entries_fts (rowid, text) VALUES (?, 'wallaby crossing')",
            (cur.lastrowid,),
        )
    finally:
        conn.close()
    async with SQLRepo(url) as repo:
        assert [(h.session_id, h.entry_id) for h in await repo.search("wallaby")] == [
            ("s1", entry.id)
        ]
        s = await repo.open("s1")
        later = await s.append_message(user("wallaby again"))
        assert [h.entry_id for h in await repo.search("again")] == [later]
        assert [h.entry_id for h in await repo.search("の状")] == [entry.id]
        assert [h.entry_id for h in await repo.search("LLABY CR")] == [entry.id]
    versions = _sql(path, "SELECT version FROM schema_version ORDER BY version")
    assert versions == [(v,) for v in range(1, SCHEMA_VERSION + 1)]  # every later step applied
    assert _watermark(path) == 2
    # the old row once, the new one once, both lower-cased
    assert _fts_rows(path) == [(1, "wallaby crossing 最新の状態"), (2, "wallaby again")]


_WORKER = textwrap.dedent(
    """
    import asyncio, os, sys, time
    from sessiontree.backends.sql.repo import SQLRepo

    async def main(url, go, sid, n, tag):
        while not os.path.exists(go):
            time.sleep(0.005)
        async with SQLRepo(url) as repo:
            s = await repo.open(sid) if sid != "-" else await repo.create()
            for i in range(n):
                await s.append_message({"role": "user", "content": f"tok{tag}x{i}y common"})
                if i % 25 == 0:
                    await repo.search("common", limit=1)  # catch-ups race the appends

    url, go, sid, n, tag = sys.argv[1:]
    asyncio.run(main(url, go, sid, int(n), tag))
    """
)


def _run_workers(url: str, tmp_path: Path, sid: str, processes: int, appends: int) -> None:
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, url, str(go), sid, str(appends), str(k)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(processes)
    ]
    time.sleep(0.3)
    go.touch()
    errors = [p.communicate(timeout=300)[1][-2000:] for p in procs]
    assert [p.returncode for p in procs] == [0] * processes, errors


@pytest.mark.parametrize("shared_session", [True, False])
async def test_search_after_concurrent_appends_finds_everything(
    tmp_path: Path, shared_session: bool
) -> None:
    processes, appends = 3, 120  # 360 rows: the appends' own catch-up (256) happens too
    url, path = _db(tmp_path)
    async with SQLRepo(url) as repo:
        sid = (await repo.create()).id if shared_session else "-"
    _run_workers(url, tmp_path, sid, processes, appends)
    async with SQLRepo(url) as repo:
        for k in range(processes):
            for i in range(appends):
                hits = await repo.search(f"tok{k}x{i}y")
                assert len(hits) == 1, (k, i)
        assert len(await repo.search("common", limit=1000)) == processes * appends
    rows = _fts_rows(path)
    assert len(rows) == len({r for r, _ in rows}) == processes * appends
    assert rows == _expected_index(path)


async def test_damaged_row_does_not_block_search_for_the_rest(tmp_path: Path) -> None:
    # a damaged pending body must not escape the catch-up as InvalidEntryError: one bad row
    # would make search fail for every session, forever
    url, path = _db(tmp_path)
    async with SQLRepo(url) as repo:
        s = await repo.create()
        bad = await s.append_message(user("kiwi orchard"))
        good = await s.append_message(user("kiwi harvest"))
        _sql(path, 'UPDATE entries SET body = \'{"type": "message"}\' WHERE id = ?', (bad,))
        assert [h.entry_id for h in await repo.search("kiwi")] == [good]
        assert _watermark(path) == _sql(path, "SELECT max(rowid) FROM entries")[0][0]


async def test_search_does_not_wait_for_another_writer(tmp_path: Path) -> None:
    # with rows waiting to be indexed and another process holding the write lock (a long
    # import), a search must not wait the whole busy timeout and then fail
    _, path = _db(tmp_path)
    async with SQLRepo(f"sqlite:///{path}?timeout=5") as repo:
        s = await repo.create()
        old = await s.append_message(user("quebec indexed"))
        assert [h.entry_id for h in await repo.search("quebec")] == [old]
        new = await s.append_message(user("quebec pending"))
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            started = time.monotonic()
            hits = await repo.search("quebec")
            assert time.monotonic() - started < 2
            assert sorted(h.entry_id for h in hits) == sorted([old, new])
            assert _watermark(path) < _sql(path, "SELECT max(rowid) FROM entries")[0][0]
            assert (
                await repo.search("quebec", limit=1)
                and len(await repo.search("quebec", limit=1)) == 1
            )
            other.execute("ROLLBACK")
        finally:
            other.close()
        # the lock gone, the next search brings the index up to date
        assert sorted(h.entry_id for h in await repo.search("quebec")) == sorted([old, new])
        assert _fts_rows(path) == _expected_index(path)


async def test_search_under_a_lock_lists_each_entry_once_newest_first(tmp_path: Path) -> None:
    # rows another process indexes between the watermark read and the query come once; and
    # bm25 ranks of the tiny pending table must not put the newest matches last
    url, path = _db(tmp_path)
    async with SQLRepo(url) as repo:
        s = await repo.create()
        ids = [await s.append_message(user(f"zebra crossing {i}")) for i in range(5)]
        assert len(await repo.search("zebra", limit=10)) == 5  # all indexed now
        engine: Any = s.storage._engine  # type: ignore[attr-defined]
        # the worst interleaving: every row is both indexed and taken as pending
        rows = sqlite_index.search_pending(
            engine.connection.db(), *sqlite_index.match_clause("zebra"), 10, 0
        )
        assert sorted(r[1] for r in rows) == sorted(ids)
        newest = await s.append_message(user("zebra zebra zebra"))
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            hits = await repo.search("zebra", limit=3)
            other.execute("ROLLBACK")
        finally:
            other.close()
        assert hits[0].entry_id == newest and len({h.entry_id for h in hits}) == 3
