"""SQL backends, beyond the conformance suite: schema and migrations, foreign or newer
databases, bad URLs and servers, driver errors, lazy drivers, search, listing without entries,
one-query branches, the default store (docs/storage.md "sql", docs/api.md)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from backends import pg_exec, throwaway_pg_database
from sessiontree import (
    CorruptSessionError,
    DuplicateEntryError,
    EntryNotFoundError,
    InvalidEntryError,
    SessionNotFoundError,
    StorageError,
    open_repo,
)
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.backends.sql.schema import MIGRATIONS, SCHEMA_VERSION
from sessiontree.backends.sql.storage import SQLStorage, make_engine
from sessiontree.errors import MissingExtraError
from sessiontree.messages import message_text
from sessiontree.testing.builders import assistant, user

SRC = Path(__file__).resolve().parents[1] / "src"


def _exec(url: str, *statements: str) -> list[Any]:
    """Run raw SQL on the store behind ``url`` (a separate connection); rows of the last one."""
    if url.startswith("sqlite:"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        try:
            out: list[Any] = []
            for sql in statements:
                out = conn.execute(sql).fetchall()
            return out
        finally:
            conn.close()
    return pg_exec(url, *statements)


# ---------------------------------------------------------------------- schema and versions


async def test_new_store_is_stamped_with_the_schema_version(sql_repo: SQLRepo) -> None:
    await sql_repo.create()
    rows = _exec(sql_repo.url, "SELECT app, version FROM schema_version ORDER BY version")
    assert rows == [("sessiontree", i + 1) for i in range(len(MIGRATIONS))]
    assert len(MIGRATIONS) == SCHEMA_VERSION


async def test_reopening_does_not_migrate_twice(sql_repo: SQLRepo) -> None:
    s = await sql_repo.create()
    await s.append_message(user("kept"))
    async with SQLRepo(sql_repo.url) as again:
        (info,) = await again.list()
        assert info.message_count == 1
    assert len(_exec(sql_repo.url, "SELECT version FROM schema_version")) == SCHEMA_VERSION


async def test_newer_schema_version_is_refused(sql_repo: SQLRepo) -> None:
    s = await sql_repo.create()
    await s.append_message(user("from the future"))
    await sql_repo.close()
    _exec(
        sql_repo.url,
        f"INSERT INTO schema_version (app, version, applied_at_ms) VALUES ('sessiontree', {SCHEMA_VERSION + 1}, 0)",
    )
    before = _exec(sql_repo.url, "SELECT count(*) FROM entries")
    newer = SQLRepo(sql_repo.url)
    with pytest.raises(StorageError, match="newer sessiontree") as err:
        await newer.list()
    await newer.close()
    assert f"schema version {SCHEMA_VERSION + 1}" in str(err.value)
    assert "\n" not in str(err.value)
    assert _exec(sql_repo.url, "SELECT count(*) FROM entries") == before


async def test_foreign_sqlite_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO customers (name) VALUES ('ada')")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    repo = SQLRepo(f"sqlite:///{path}")
    with pytest.raises(CorruptSessionError, match="not a sessiontree database") as err:
        await repo.create()
    await repo.close()
    assert str(path) in str(err.value)
    assert path.read_bytes() == before
    assert not os.path.exists(f"{path}-wal")  # noqa: ASYNC240


async def test_file_that_is_not_a_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    before = path.read_bytes()
    repo = SQLRepo(f"sqlite:///{path}")
    with pytest.raises(CorruptSessionError) as err:
        await repo.list()
    await repo.close()
    assert isinstance(err.value.__cause__, sqlite3.DatabaseError)
    assert path.read_bytes() == before


async def test_foreign_postgres_schema_is_refused_untouched() -> None:
    with throwaway_pg_database() as url:
        pg_exec(url, "CREATE TABLE invoices (id int)")
        repo = SQLRepo(url)
        with pytest.raises(CorruptSessionError, match="not a sessiontree database"):
            await repo.create()
        await repo.close()
        tables = pg_exec(url, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        assert tables == [("invoices",)]


async def test_read_only_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    async with SQLRepo(f"sqlite:///{path}") as repo:
        s = await repo.create()
        await s.append_message(user("hello"))
    before = path.read_bytes()
    path.chmod(0o444)
    try:
        repo = SQLRepo(f"sqlite:///{path}")
        with pytest.raises(StorageError, match="read-only") as err:
            await repo.create()
        await repo.close()
        assert "\n" not in str(err.value)
        assert path.read_bytes() == before
    finally:
        path.chmod(0o644)


# ---------------------------------------------------------------------- URLs, servers, drivers


def test_unknown_scheme_is_a_storage_error() -> None:
    with pytest.raises(StorageError, match="unknown"):
        open_repo("mysql://root@localhost/db")
    with pytest.raises(StorageError, match="unknown SQL URL scheme"):
        make_engine("oracle://x")
    with pytest.raises(StorageError, match="option"):
        SQLRepo("sqlite:///x.db?journal=delete")


async def test_unreachable_server_is_a_quick_one_line_storage_error() -> None:
    repo = SQLRepo("postgresql://postgres@127.0.0.1:1/nowhere?connect_timeout=2")
    started = time.monotonic()
    with pytest.raises(StorageError) as err:
        await repo.create()
    await repo.close()
    assert time.monotonic() - started < 10
    assert "\n" not in str(err.value)
    assert "127.0.0.1" in str(err.value)
    import psycopg

    assert isinstance(err.value.__cause__, psycopg.OperationalError)


def test_password_is_not_shown_in_errors() -> None:
    repo = SQLRepo("postgresql://postgres:s3cret@127.0.0.1:1/x?connect_timeout=1")
    with pytest.raises(StorageError) as err:
        asyncio.run(repo.list())
    asyncio.run(repo.close())
    assert "s3cret" not in str(err.value)


_BLOCKER = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("psycopg", "psycopg_pool"):
            raise ImportError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Block())
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_missing_postgres_extra_names_the_pip_command() -> None:
    proc = _run(
        _BLOCKER
        + """
import sessiontree
from sessiontree import open_repo
from sessiontree.errors import MissingExtraError
try:
    open_repo("postgresql://postgres@127.0.0.1:5432/test")
except MissingExtraError as exc:
    print("MISSING", exc)
else:
    print("NO ERROR")
"""
    )
    assert proc.returncode == 0, proc.stderr
    assert "MISSING" in proc.stdout
    assert "pip install 'sessiontree[postgres]'" in proc.stdout


def test_import_sessiontree_imports_no_driver() -> None:
    proc = _run(
        """
import sys
import sessiontree
from sessiontree import open_repo
print(sorted(m for m in ("psycopg", "psycopg_pool", "sqlite3") if m in sys.modules))
repo = open_repo("sqlite:///:memory:")
print(type(repo).__name__, "psycopg" in sys.modules)
"""
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "SQLRepo False"]


def test_missing_extra_error_is_an_import_error() -> None:
    assert issubclass(MissingExtraError, ImportError)


async def test_driver_errors_keep_their_cause_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    async with SQLRepo(f"sqlite:///{path}") as repo:
        s = await repo.create()
        await s.append_message(user("one"))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        repo = SQLRepo(f"sqlite:///{path}?timeout=0.2")
        session = await repo.open(s.id)
        with pytest.raises(StorageError, match="locked") as err:
            await session.append_message(user("two"))
        assert isinstance(err.value.__cause__, sqlite3.OperationalError)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(await session.get_entries()) == 1
    await repo.close()


async def test_driver_errors_keep_their_cause_postgres() -> None:
    """A write the server refuses (a role that may only read) is a StorageError whose
    cause is psycopg's error. (A NUL in an id, which PostgreSQL refuses, never reaches the
    driver: every backend refuses it alike, tests/test_edge_inputs.py.)"""
    import psycopg

    with throwaway_pg_database() as url:
        async with SQLRepo(url) as repo:
            s = await repo.create()
            with pytest.raises(InvalidEntryError) as refused:
                await s.append_entry({"type": "custom", "id": "bad\x00id", "customType": "x"})
            assert not isinstance(refused.value.__cause__, psycopg.Error)
        schema = url.rsplit("%3D", 1)[1]
        role = f"ro_{uuid.uuid4().hex[:12]}"
        pg_exec(
            url,
            f'CREATE ROLE "{role}" LOGIN',
            f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"',
            f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"',
        )
        try:
            async with SQLRepo(url.replace("postgres@", f"{role}@", 1)) as reader:
                session = await reader.open(s.id)
                with pytest.raises(StorageError, match="permission denied") as err:
                    await session.append_custom_entry("x", {})
                assert isinstance(err.value.__cause__, psycopg.Error)
                assert await session.get_entries() == []
        finally:
            pg_exec(url, f'DROP OWNED BY "{role}"', f'DROP ROLE "{role}"')


async def test_closed_repo_refuses_work(store_url: str) -> None:
    repo = SQLRepo(store_url)
    s = await repo.create()
    await repo.close()
    await repo.close()
    with pytest.raises(StorageError, match="closed"):
        await s.append_message(user("late"))


# ---------------------------------------------------------------------- behaviour


async def test_list_reads_no_entries(sql_repo: SQLRepo) -> None:
    for i in range(3):
        s = await sql_repo.create(metadata={"cwd": f"/w/{i}"})
        await s.append_message(user(f"question {i}"))
        await s.append_session_name(f"name {i}")
    # hide the entries table: list() must not need it
    _exec(sql_repo.url, "ALTER TABLE entries RENAME TO entries_hidden")
    try:
        infos = await sql_repo.list()
    finally:
        _exec(sql_repo.url, "ALTER TABLE entries_hidden RENAME TO entries")
    assert [i.name for i in infos] == ["name 2", "name 1", "name 0"]
    assert [i.first_message for i in infos] == ["question 2", "question 1", "question 0"]
    assert [i.metadata.cwd for i in infos] == ["/w/2", "/w/1", "/w/0"]
    assert all(i.entry_count == 2 and i.message_count == 1 for i in infos)


async def test_get_branch_is_one_query(tmp_path: Path) -> None:
    async with SQLRepo(f"sqlite:///{tmp_path / 'q.db'}") as repo:
        s = await repo.create()
        for i in range(300):
            await s.append_message(user(f"m{i}"))
        conn = repo._engine.connection.db()  # type: ignore[attr-defined]
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        fresh = await SQLRepo(repo.url).open(s.id)  # a cold cache: every entry parsed
        statements.clear()
        branch = await fresh.get_branch()
        ctx = await s.build_context()
        conn.set_trace_callback(None)
        assert len(branch) == 300 and len(ctx.messages) == 300
        assert sum("WITH RECURSIVE" in q for q in statements) == 1  # build_context: one query
        assert len(statements) == 1
        await fresh.close()


async def test_deep_branch(sql_repo: SQLRepo) -> None:
    s = await sql_repo.create()
    from sessiontree.entries import MessageEntry
    from sessiontree.messages import UserMessage

    parent = None
    batch = []
    for i in range(5000):
        e = MessageEntry(message=UserMessage(content=f"m{i}", timestamp=i), parent_id=parent)
        batch.append(e)
        parent = e.id
    await s.storage.append_entries(batch)
    branch = await s.get_branch()
    assert [e.id for e in branch] == [e.id for e in batch]
    mid = await s.get_branch(batch[2500].id)
    assert len(mid) == 2501
    (info,) = await sql_repo.list()
    assert info.entry_count == 5000 and info.first_message == "m0"


async def test_broken_chains_are_corrupt(sql_repo: SQLRepo) -> None:
    s = await sql_repo.create()
    a = await s.append_message(user("a"))
    b = await s.append_message(user("b"))
    c = await s.append_message(user("c"))
    await sql_repo.close()
    _exec(sql_repo.url, f"UPDATE entries SET parent_id = '{c}' WHERE id = '{a}'")
    async with SQLRepo(sql_repo.url) as again:
        reopened = await again.open(s.id)
        with pytest.raises(CorruptSessionError, match="cycle"):
            await reopened.get_branch()
    _exec(sql_repo.url, f"UPDATE entries SET parent_id = 'ghost' WHERE id = '{a}'")
    async with SQLRepo(sql_repo.url) as again:
        reopened = await again.open(s.id)
        with pytest.raises(CorruptSessionError, match="ghost"):
            await reopened.get_branch(b)


async def test_search_is_a_case_insensitive_substring(sql_repo: SQLRepo) -> None:
    # version 4: word-prefix search ("zebra track" found both) became a substring search,
    # the semantics of the memory and JSONL backends
    a = await sql_repo.create()
    b = await sql_repo.create()
    one = await a.append_message(user("Deploying the zebrafish-tracker to staging"))
    done = await a.append_message(assistant("done; the tracker runs"))
    two = await b.append_message(user("ZEBRAFISH larvae, tracker v2, café"))
    hits = await sql_repo.search("zebrafish")
    assert {(h.session_id, h.entry_id) for h in hits} == {(a.id, one), (b.id, two)}
    assert await sql_repo.search("zebra track") == []  # not a substring of either
    assert [h.entry_id for h in await sql_repo.search("fish-TRACK")] == [one]
    assert {h.entry_id for h in await sql_repo.search("tracker")} == {one, done, two}
    assert await sql_repo.search("cafe") == []  # no folding beyond case
    assert [h.entry_id for h in await sql_repo.search("CAFÉ")] == [two]
    assert [h.entry_id for h in await sql_repo.search("v2")] == [two]  # under 3 characters
    assert await sql_repo.search("   ") == []
    assert await sql_repo.search("'\"():*&|") == []
    assert await sql_repo.search("100%") == [] and await sql_repo.search("_") == []
    assert len(await sql_repo.search("tracker", limit=1)) == 1
    assert "zebrafish" in (await sql_repo.search("staging"))[0].snippet


async def test_search_index_follows_deletes_and_forks(sql_repo: SQLRepo) -> None:
    a = await sql_repo.create()
    hit = await a.append_message(user("platypus sighting"))
    fork = await a.fork(hit)
    assert {h.session_id for h in await sql_repo.search("platypus")} == {a.id, fork.id}
    await sql_repo.delete(a.id)
    assert [h.session_id for h in await sql_repo.search("platypus")] == [fork.id]
    await fork.delete()
    assert await sql_repo.search("platypus") == []
    if sql_repo.url.startswith("sqlite:"):
        assert _exec(sql_repo.url, "SELECT count(*) FROM entries_fts") == [(0,)]


async def test_deleted_session_raises_on_use(sql_repo: SQLRepo) -> None:
    s = await sql_repo.create()
    await s.append_message(user("x"))
    await s.delete()
    with pytest.raises(SessionNotFoundError):
        await s.append_message(user("y"))
    with pytest.raises(SessionNotFoundError):
        await s.get_leaf_id()
    with pytest.raises(SessionNotFoundError):
        await s.get_entries()


async def test_get_entries_cursor_unknown_after(sql_repo: SQLRepo) -> None:
    s = await sql_repo.create()
    await s.append_message(user("x"))
    with pytest.raises(EntryNotFoundError):
        await s.get_entries(after="nope")


async def test_standalone_storage(store_url: str) -> None:
    st = await SQLStorage.create(store_url, "solo", None)
    from sessiontree.session import Session

    s = Session(st)
    first = await s.append_message(user("alone"))
    await st.close()
    again = await SQLStorage.open(store_url, "solo")
    assert [e.id for e in await again.get_branch()] == [first]
    await again.close()
    with pytest.raises(SessionNotFoundError):
        await SQLStorage.open(store_url, "nobody")


async def test_default_store_is_sqlite_in_user_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SESSIONTREE_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    repo = open_repo()
    assert isinstance(repo, SQLRepo)
    assert repo.url.startswith("sqlite:///") and str(tmp_path / "data") in repo.url
    async with repo:
        s = await repo.create()
        await s.append_message(user("embedded default"))
    db = Path(repo.url.removeprefix("sqlite:///"))  # sqlite:////abs/path: an absolute path
    assert os.path.isfile(db)  # noqa: ASYNC240
    monkeypatch.setenv("SESSIONTREE_URL", repo.url)
    async with open_repo() as again:
        assert [i.first_message for i in await again.list()] == ["embedded default"]


async def test_memory_sqlite_url(tmp_path: Path) -> None:
    async with SQLRepo("sqlite:///:memory:") as repo:
        s = await repo.create()
        await s.append_message(user("in memory"))
        assert len(await repo.list()) == 1


async def test_two_clients_interleaving_appends_keep_one_chain(store_url: str) -> None:
    """Each client's knowledge of the leaf goes stale when the other appends (regression:
    the PostgreSQL one-round-trip path must notice and re-validate)."""
    async with SQLRepo(store_url) as one, SQLRepo(store_url) as two:
        a = await one.create()
        b = await two.open(a.id)
        ids = []
        for i in range(6):
            ids.append(await (a if i % 3 else b).append_message(user(f"m{i}")))
        branch = await a.get_branch()
        assert [e.id for e in branch] == ids
        assert [e.parent_id for e in branch] == [None, *ids[:-1]]
        dup = await a.get_entry(ids[-1])
        assert dup is not None
        with pytest.raises(DuplicateEntryError) as err:
            await a.append_entry(dup.model_copy(update={"parent_id": ids[-1]}))
        assert ids[-1] in str(err.value)
        with pytest.raises(DuplicateEntryError):
            await b.append_entry(dup.model_copy(update={"parent_id": ids[-1]}))
        old = await a.get_entry(ids[1])
        assert old is not None
        with pytest.raises(DuplicateEntryError) as err:  # an older id, not the known leaf
            await a.append_entry(old.model_copy(update={"parent_id": ids[-1]}))
        assert ids[1] in str(err.value)
        assert [e.id for e in await b.get_entries()] == ids
        ids.append(await a.append_message(user("after the rejections")))
        assert [e.id for e in await b.get_branch()] == ids


def count_parses(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The stored JSON texts SQL storage parses from now on (a list that grows)."""
    from sessiontree.backends.sql import storage as sql_storage
    from sessiontree.entries import parse_entry_json

    parsed: list[Any] = []
    real = parse_entry_json  # what storage imported

    def counting(body: Any) -> Any:
        parsed.append(body)
        return real(body)

    monkeypatch.setattr(sql_storage, "parse_entry_json", counting)
    return parsed


@pytest.fixture
async def cached_repo(store_url: str) -> AsyncIterator[SQLRepo]:
    async with SQLRepo(store_url, parse_cache_mb=8) as repo:
        yield repo


async def test_reopened_session_reuses_parsed_entries(
    cached_repo: SQLRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a server opens the session anew per request: the second open parses nothing again

    sql_repo = cached_repo
    s = await sql_repo.create()
    for i in range(30):
        await s.append_message(user(f"turn {i}"))
    parsed = count_parses(monkeypatch)
    first = await (await sql_repo.open(s.id)).build_context()
    assert len(parsed) == 30
    again = await (await sql_repo.open(s.id)).build_context()
    assert len(parsed) == 30 and again.messages == first.messages
    # another repository (another process's view) has its own cache
    async with SQLRepo(sql_repo.url) as other:
        await (await other.open(s.id)).build_context()
    assert len(parsed) == 60


async def test_parse_cache_never_serves_a_rewritten_entry(cached_repo: SQLRepo) -> None:
    # same session id, same entry ids, other text (deleted and written again, e.g. by another
    # process re-importing): the cache checks the stored text, so the new text is read
    sql_repo = cached_repo

    def entry(text: str) -> dict[str, Any]:
        return {
            "type": "message",
            "id": "e1",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": user(text),
        }

    s = await sql_repo.create(id="same-id")
    await s.append_entry(entry("old text"))
    await s.set_leaf_id("e1")
    assert [
        message_text(m) for m in (await (await sql_repo.open("same-id")).build_context()).messages
    ] == ["old text"]
    async with SQLRepo(sql_repo.url) as other:
        await other.delete("same-id")
        t = await other.create(id="same-id")
        await t.append_entry(entry("new text"))
        await t.set_leaf_id("e1")
    reopened = await sql_repo.open("same-id")
    assert [message_text(m) for m in (await reopened.build_context()).messages] == ["new text"]


async def test_append_after_another_repo_recreated_the_session(store_url: str) -> None:
    # PostgreSQL's one-round-trip append must not compare the entry count only: a session
    # deleted and made again elsewhere with as many entries would take the next entry under
    # the old session's leaf, which no longer exists (a broken tree)
    async with SQLRepo(store_url) as r1, SQLRepo(store_url) as r2:
        s = await r1.create(id="S1")
        await s.append_message(user("hello A"))
        await s.append_message(user("hello B"))
        await (await r2.open("S1")).delete()
        t = await r2.create(id="S1")
        await t.append_message(user("other X"))
        y = await t.append_message(user("other Y"))
        c = await s.append_message(user("hello C"))
        branch = await (await r2.open("S1")).get_branch()
        assert [e.id for e in branch][-2:] == [y, c]


async def test_default_repository_shares_no_entries_between_opens(sql_repo: SQLRepo) -> None:
    # the shared cache is off by default: a request that changes a returned entry's dict in
    # place (redacting before an LLM call) must not change what the next open sees
    s = await sql_repo.create()
    await s.append_message(user("go"))
    call = {"type": "toolCall", "id": "c", "name": "f", "arguments": {"x": 1}}
    await s.append_message(assistant("", call))
    first = await (await sql_repo.open(s.id)).build_context()
    first.messages[1].content[0].arguments["x"] = "REDACTED"  # type: ignore[union-attr]
    again = await (await sql_repo.open(s.id)).build_context()
    assert again.messages[1].content[0].arguments == {"x": 1}  # type: ignore[union-attr]


def test_parse_cache_is_bounded_by_the_stored_bytes() -> None:
    from sessiontree.backends.sql.parse_cache import ParseCache
    from sessiontree.entries import parse_entry

    cache = ParseCache(max_bytes=10_000)
    e = parse_entry({"type": "message", "message": user("x")})
    for i in range(100):
        cache.put("s", f"e{i}", "x" * 1_000 + str(i), e)
    held = [i for i in range(100) if cache.get("s", f"e{i}", "x" * 1_000 + str(i)) is not None]
    assert held == list(range(91, 100))  # the newest that fit; the oldest went first
    assert cache.get("s", "e99", "changed") is None  # other text: not served
    off = ParseCache()
    off.put("s", "e1", "body", e)
    assert off.get("s", "e1", "body") is None


async def test_session_cache_is_bounded_by_bytes(
    sql_repo: SQLRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the per-session cache is bounded by bytes too, not by count only (20,000 entries with
    # large tool outputs would hold GBs per open session)
    from sessiontree.backends.sql import storage as sql_storage

    monkeypatch.setattr(sql_storage, "ENTRY_CACHE_BYTES", 20_000)
    s = await sql_repo.create()
    for i in range(40):
        await s.append_message(user(f"{i} " + "x" * 2_000))
    storage: Any = s.storage
    assert storage._cache_bytes <= 20_000 and 5 <= len(storage._cache) <= 10
    again = await sql_repo.open(s.id)
    texts = [message_text(m) for m in (await again.build_context()).messages]
    assert [t.split()[0] for t in texts] == [str(i) for i in range(40)]
    assert again.storage._cache_bytes <= 20_000  # type: ignore[attr-defined]


async def test_branch_larger_than_the_cache_still_hits_what_the_cache_holds(
    sql_repo: SQLRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a full cache keeps what it holds: dropping the oldest entry first would make a branch
    # larger than the budget, read root to leaf each turn, evict everything before reuse
    from sessiontree.backends.sql import storage as sql_storage

    s = await sql_repo.create()
    for i in range(100):
        await s.append_message(user(f"{i} " + "y" * 1_000))
    monkeypatch.setattr(sql_storage, "ENTRY_CACHE_BYTES", 50_000)
    parsed = count_parses(monkeypatch)
    again = await sql_repo.open(s.id)
    await again.get_branch()
    assert len(parsed) == 100
    await again.get_branch()
    assert 100 < len(parsed) <= 160  # the ~48 entries the budget holds were not parsed again


@pytest.mark.parametrize("bad", [-1, float("inf"), float("nan"), "64", True])
def test_parse_cache_size_is_checked(bad: Any) -> None:
    with pytest.raises(ValueError, match="parse_cache_mb"):
        SQLRepo("sqlite:///:memory:", parse_cache_mb=bad)


async def test_context_walk_of_a_broken_chain_is_corrupt(sql_repo: SQLRepo) -> None:
    """build_context reads from the newest compaction's start; a broken link on that part, or
    anywhere when the compaction has no full state snapshot, is still reported."""
    from sessiontree import CompactionEntry

    s = await sql_repo.create()
    a = await s.append_message(user("a"))
    await s.append_message(user("b"))
    await s.append_entry(
        CompactionEntry(parent_id=await s.get_leaf_id(), summary="s", first_kept_entry_id=a)
    )
    c = await s.append_message(user("c"))
    await sql_repo.close()
    _exec(sql_repo.url, f"UPDATE entries SET parent_id = 'ghost' WHERE id = '{a}'")
    async with SQLRepo(sql_repo.url) as again:
        reopened = await again.open(s.id)
        with pytest.raises(CorruptSessionError, match="ghost"):
            await reopened.build_context()
    _exec(sql_repo.url, f"UPDATE entries SET parent_id = 'ghost' WHERE id = '{c}'")
    async with SQLRepo(sql_repo.url) as again:
        reopened = await again.open(s.id)
        with pytest.raises(CorruptSessionError, match="ghost"):
            await reopened.build_context()


def _tracked_reachable(roots: list[Any]) -> set[int]:
    """Ids of the GC-tracked objects reachable from ``roots`` (classes and modules not
    followed: they are not made by a read)."""
    import gc

    seen: set[int] = set()
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in seen or not gc.is_tracked(obj) or isinstance(obj, type):
            continue
        seen.add(id(obj))
        stack.extend(gc.get_referents(obj))
    return seen


async def test_sqlite_read_makes_no_object_per_entry_beyond_the_entries(tmp_path: Path) -> None:
    # A cold read's cost includes the cyclic collector's passes over every container object
    # it creates (bench/README.md, reads against b71f116): the storage keeps the parsed
    # entries themselves, not a wrapper per entry (the cache once kept a (size, entry) tuple
    # each, 1,000 more tracked objects per 1,000 entries read)
    import gc

    url = f"sqlite:///{tmp_path / 's.db'}"
    async with SQLRepo(url) as repo:
        s = await repo.create()
        for i in range(300):
            await s.append_message(user(f"turn {i}") if i % 2 else assistant(f"answer {i}"))
        sid = s.id
    async with SQLRepo(url) as repo:
        session = await repo.open(sid)
        gc.collect()
        before = {id(o) for o in gc.get_objects()}
        gc.disable()
        try:
            entries = await session.storage.get_branch()
            made = {id(o) for o in gc.get_objects()} - before
        finally:
            gc.enable()
        assert len(entries) == 300
        beyond = made - _tracked_reachable([entries])
        assert len(beyond) < 100, f"{len(beyond)} objects beyond the 300 entries' own"
