"""Every SQL schema that shipped on main upgrades to today's (docs/storage.md "sql").

The fixtures in ``tests/data/old_schemas/`` are stores written by the old code itself:
``make_fixtures.py`` there took ``src/`` of each commit below with ``git archive``, ran that
commit's SQLRepo to write the same few sessions on SQLite and on PostgreSQL, and dumped each
store as SQL (DDL and rows). One commit per schema that shipped:

* ``6edf31c``: version 1 (sessions, entries; FTS5 ``unicode61`` / ``tsvector`` search);
* ``e0a754a``: version 2 (SQLite search-index watermark);
* ``64e17cc``: version 3 = ``session_meta``; ``471fcfe``: the same, with metadata keys and
  values over 1,000 bytes stored as their SHA-256 on PostgreSQL;
* ``c261190``: version 3 = the trigram search step, and no ``session_meta`` (the two lines
  were merged in ``f0451e9``, which made the trigram step version 4);
* ``f0451e9`` and ``3ffaac1``: version 4 (``3ffaac1`` stores long metadata values hashed);
* ``828b4cf``: version 5 (PostgreSQL ``search_pending``);
* ``15c331d``: version 6 (PostgreSQL entries without a foreign key), today's.

Each store holds ``old-a`` (metadata with ``team``/``rank``, three messages, a label, a name,
the leaf moved back and a second branch), ``old-b`` (a 1,500-byte ``note``, one message, then the leaf cleared),
``old-empty``, and a fork of ``old-a`` at its third message. Today's code opens each, and
create, fork, list(where=...), search and reading the old sessions all work.
"""

from __future__ import annotations

import contextlib
import sqlite3
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends import pg_exec, throwaway_pg_database
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.backends.sql.schema import SCHEMA_VERSION
from sessiontree.entries import Entry, MessageEntry
from sessiontree.messages import message_text

FIXTURES = Path(__file__).parent / "data" / "old_schemas"
LONG_NOTE = "a long note " * 125
"""``old-b``'s ``note``: 1,500 bytes, over PostgreSQL's 1,000-byte limit of a ``session_meta``
value stored as it is (longer ones are stored as their SHA-256)."""
NAMES = sorted(p.name.removesuffix(".sqlite.sql") for p in FIXTURES.glob("*.sqlite.sql"))


def test_every_shipped_schema_has_a_fixture() -> None:
    assert len(NAMES) == 9
    assert {n.split("-")[0] for n in NAMES} >= {f"v{v}" for v in (1, 2, 4, 5, 6)}
    assert {"v3trigram-c261190", "v3meta-64e17cc", "v3meta-471fcfe"} <= set(NAMES)
    assert all((FIXTURES / f"{n}.postgres.sql").is_file() for n in NAMES)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextlib.contextmanager
def _loaded(name: str, backend: str, tmp_path: Path) -> Iterator[str]:
    """The URL of a store loaded from fixture ``name``."""
    if backend == "sqlite":
        path = tmp_path / "old.db"
        conn = sqlite3.connect(path)
        conn.executescript((FIXTURES / f"{name}.sqlite.sql").read_text())
        conn.close()
        yield f"sqlite:///{path}"
        return
    with throwaway_pg_database() as url:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        schema = query["options"][0].split("=", 1)[1]
        base = url.split("?", 1)[0]
        script = (FIXTURES / f"{name}.postgres.sql").read_text().replace("@SCHEMA@", schema)
        pg_exec(base, "CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public", script)
        yield url


@pytest.fixture(params=NAMES)
def old_store(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> Iterator[str]:
    """The URL of a store loaded from one fixture."""
    with _loaded(request.param, backend, tmp_path) as url:
        yield url


async def test_an_old_store_opened_read_only_has_no_draft(backend: str, tmp_path: Path) -> None:
    """A read-only open of a store from before the drafts table upgrades it first when it
    can be written, so reading the draft slot finds none instead of a missing table."""
    with _loaded(NAMES[-1], backend, tmp_path) as url:
        async with SQLRepo(url, read_only=True) as repo:
            session = await repo.open("old-a")
            assert await session.get_draft() is None
            assert await session.get_tool_run() is None
            (root,) = await session.get_tree()
            assert not root.draft
        assert _stamp(url)[0] == SCHEMA_VERSION


def _role(entry: Entry) -> str:
    assert isinstance(entry, MessageEntry)
    return entry.message.role


def _text(entry: Entry) -> str:
    assert isinstance(entry, MessageEntry)
    return message_text(entry.message)


def _stamp(url: str) -> tuple[int, bool]:
    """The store's newest schema version, and whether it has a session_meta table."""
    if url.startswith("sqlite:"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            (version,) = conn.execute("SELECT max(version) FROM schema_version").fetchone()
            meta = conn.execute(
                "SELECT count(*) FROM sqlite_master WHERE name = 'session_meta'"
            ).fetchone()[0]
        finally:
            conn.close()
        return version, bool(meta)
    ((version, meta),) = pg_exec(
        url,
        "SELECT (SELECT max(version) FROM schema_version),"
        " to_regclass(quote_ident(current_schema()) || '.session_meta') IS NOT NULL",
    )
    return version, meta


async def test_an_old_store_upgrades_and_works(old_store: str) -> None:
    async with SQLRepo(old_store) as repo:
        listed = await repo.list()
        ids = {i.id for i in listed}
        assert {"old-a", "old-b", "old-empty"} < ids and len(ids) == 4
        (fork_id,) = ids - {"old-a", "old-b", "old-empty"}

        # the old sessions read as they were written
        a = await repo.open("old-a")
        branch = await a.get_branch()
        assert [_role(e) for e in branch] == ["user", "assistant", "user"]
        assert _text(branch[-1]) == "Other branch: the museum"
        assert await a.get_label(branch[1].id) == "answer"
        assert await a.get_name() == "zebra hunt"
        assert len((await a.build_context()).messages) == 3
        assert len(await a.get_tree()) == 1
        b = await repo.open("old-b")
        assert await b.get_branch() == [] and await b.get_leaf_id() is None
        assert len(await b.get_entries()) == 2
        fork = await repo.open(fork_id)
        assert _text((await fork.get_branch())[-1]) == "and the bakery?"
        assert (await fork.get_metadata()).parent_session_id == "old-a"

        # list(where=...) on the old sessions' metadata (a fork keeps its source's)
        assert {i.id for i in await repo.list(where={"team": "blue"})} == {"old-a", fork_id}
        assert [i.id for i in await repo.list(where={"team": "red"})] == ["old-b"]
        assert [i.id for i in await repo.list(where={"note": LONG_NOTE})] == ["old-b"]
        assert {i.id for i in await repo.list(where={"rank": 3})} == {"old-a", fork_id}

        # search: a case-insensitive substring of the old messages
        hits = await repo.search("ZEBRA CROSS")
        assert {h.session_id for h in hits} == {"old-a", fork_id}
        assert {h.session_id for h in await repo.search("museum")} == {"old-a"}

        # new sessions, appends and forks
        new = await repo.create(metadata={"team": "green"})
        first = await new.append_message({"role": "user", "content": "a new zebra"})
        await new.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
        assert [i.id for i in await repo.list(where={"team": "green"})] == [new.id]
        child = await repo.fork(new.id, first)
        assert [e.id for e in await child.get_branch()] == [first]
        again = await repo.fork("old-a", branch[1].id)
        assert [e.id for e in await again.get_branch()] == [e.id for e in branch[:2]]
        assert await again.get_label(branch[1].id) == "answer"
        await a.append_message(
            {"role": "assistant", "content": [{"type": "text", "text": "the museum is closed"}]}
        )
        assert len(await a.get_branch()) == 4
        assert new.id in {h.session_id for h in await repo.search("new zebra")}
        assert "old-a" in {h.session_id for h in await repo.search("IS CLOSED")}

    assert _stamp(old_store) == (SCHEMA_VERSION, True)
    async with SQLRepo(old_store) as repo:  # opened again: nothing left to do, all there
        assert len(await repo.list()) == 7
        blue = {i.id for i in await repo.list(where={"team": "blue"})}
        assert blue == {"old-a", fork_id, again.id}
