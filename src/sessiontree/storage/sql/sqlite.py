"""The SQLite engine: the embedded default store (SPEC §6 "sql").

One ``sqlite3`` connection per engine (shared by the repository and every session it opens),
in WAL mode with a busy timeout, so readers never block and writers from several processes
queue instead of failing. Calls are synchronous inside the async methods: each is a short
local critical section, far cheaper than a hop to a thread. Every write runs in
``BEGIN IMMEDIATE`` … ``COMMIT``, so the validation read and the writes see the same state.

An append writes the ``entries`` row and the session row only; the FTS5 table is brought up to
date later. Writing it in every append made each ``COMMIT`` flush a new FTS5 segment: ~106 µs
instead of ~39 µs, an append of ~150 µs against ~35 µs for a raw one-row insert. Rows above
the watermark ``search_index_state.indexed_upto`` are not indexed yet; :meth:`search` indexes
them first ("catch-up", one write transaction, one ``executemany``), and an append that
leaves :data:`INDEX_BACKLOG` or more of them does it before its own ``COMMIT`` (with the text
its plan already holds for its own rows), so a search never has much to catch up. The watermark
is read in the append's session-row query, so the common append runs no extra statement.
A search waits at most :data:`CATCH_UP_WAIT_MS` for the write lock; while another process holds
it, the lagging rows are searched through a connection-private FTS5 table instead.
Indexed text is :func:`~sessiontree.storage.sql.plan.index_text` on every path.

Opening is careful (LESSONS 15, 18): the file is checked to be a sessiontree database (or
empty) *before* anything is written to it; setting WAL and migrating are retried while another
process holds the lock during its own first open; a newer schema version is refused.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from sessiontree.entries import Entry, MessageEntry, parse_entry_json
from sessiontree.errors import (
    DuplicateEntryError,
    InvalidEntryError,
    SessionNotFoundError,
    SessionTreeError,
    StorageError,
)
from sessiontree.ids import now_ms
from sessiontree.messages import message_text
from sessiontree.metadata import SearchHit, SessionInfo, SessionMetadata
from sessiontree.storage.base import EntryCursor
from sessiontree.storage.files import (
    create_private_file,
    make_private_dirs,
    on_read_only_file_system,
    read_only_reason,
)
from sessiontree.storage.search import search_needle
from sessiontree.storage.sql.plan import (
    LIST_COLUMNS,
    SessionState,
    hit_from_row,
    index_text,
    info_from_row,
    lookup_ids,
    now_us,
    plan_append,
)
from sessiontree.storage.sql.schema import (
    APP,
    MIGRATIONS,
    SCHEMA_VERSION,
    SQLITE_TOKENIZER,
    check_version,
    foreign_database,
)

__all__ = ["CATCH_UP_WAIT_MS", "INDEX_BACKLOG", "SQLiteEngine", "sqlite_path_from_url"]

CATCH_UP_WAIT_MS = 50
"""How long a search waits for the write lock to bring the index up to date (ms); past
that it searches the lagging rows in a private table instead (see ``_search_pending``)."""

INDEX_BACKLOG = 256
"""An append that leaves this many ``entries`` rows (or more) above the search index watermark
indexes them all before it commits, so the rows a search has to index first stay few."""

_SYNC_LEVELS = {"off": "OFF", "normal": "NORMAL", "full": "FULL", "extra": "EXTRA"}

_CHAIN_SQL = """
WITH RECURSIVE chain (id, parent_id, type, body, depth) AS (
    SELECT id, parent_id, type, body, 0 FROM entries
     WHERE session_id = :sid
       AND id = COALESCE(:leaf, (SELECT leaf_id FROM sessions WHERE id = :sid))
    UNION ALL
    SELECT e.id, e.parent_id, e.type, e.body, c.depth + 1
      FROM chain AS c JOIN entries AS e ON e.session_id = :sid AND e.id = c.parent_id
     WHERE c.depth < (SELECT entry_count FROM sessions WHERE id = :sid)
)
SELECT id, parent_id, type, body, depth FROM chain
"""

_INSERT_ENTRY = (
    "INSERT INTO entries (session_id, seq, id, parent_id, type, timestamp, target_id, body)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_SESSION_ROW = (
    "SELECT leaf_id, entry_count, message_count, first_message IS NOT NULL,"
    " (SELECT indexed_upto FROM search_index_state), (SELECT max(rowid) FROM entries)"
    " FROM sessions WHERE id = ?"
)
_INSERT_FTS = "INSERT INTO entries_fts (rowid, text) VALUES (?, ?)"
_ADVANCE_INDEX = (
    "UPDATE search_index_state SET indexed_upto = (SELECT coalesce(max(rowid), 0) FROM entries)"
)
_UPDATE_SESSION = (
    "UPDATE sessions SET leaf_id = ?, entry_count = ?, message_count = ?, modified_us = ?,"
    " first_message = COALESCE(first_message, ?), name = COALESCE(?, name) WHERE id = ?"
)


def sqlite_path_from_url(url: str) -> tuple[str, dict[str, str]]:
    """The file path and query options of a ``sqlite:`` URL.

    ``sqlite:///abs/file.db`` → ``/abs/file.db``; ``sqlite:///:memory:`` → ``:memory:``;
    ``sqlite:rel.db`` → ``rel.db``. Options: ``?synchronous=normal|full|off|extra``
    (default ``normal``: durable against a crash of the process, not of the machine),
    ``?timeout=<seconds>`` (busy timeout, default 30).

    Raises:
        StorageError: no path, or an unknown option.
    """
    rest = url.split(":", 1)[1]
    rest, _, query = rest.partition("?")
    if rest.startswith("//"):
        rest = rest[2:]
    if rest.startswith("/:memory:"):
        rest = ":memory:"
    opts: dict[str, str] = {}
    for part in filter(None, query.split("&")):
        key, _, value = part.partition("=")
        if key not in ("synchronous", "timeout"):
            raise StorageError(f"unknown option {key!r} in {url!r} (synchronous, timeout)")
        opts[key] = value
    if opts.get("synchronous", "normal").lower() not in _SYNC_LEVELS:
        raise StorageError(f"synchronous must be one of {sorted(_SYNC_LEVELS)} in {url!r}")
    if not rest:
        raise StorageError(f"no database file in {url!r}: use sqlite:///abs/path.db")
    return rest, opts


@contextlib.contextmanager
def _write_transaction(
    conn: sqlite3.Connection,
    *,
    begun: bool = False,
    before_commit: Callable[[], None] | None = None,
) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` (unless the caller ``begun`` it) … ``COMMIT``; ``ROLLBACK`` if the
    body or ``before_commit`` raises. Every write of this engine runs in one of these."""
    if not begun:
        conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        if before_commit is not None:
            before_commit()
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _match_clause(needle: str) -> tuple[str, tuple[str, ...]]:
    """The ``WHERE`` clause (over ``entries_fts``) and parameters that find ``needle``, a
    lower-cased query: a trigram phrase lookup narrowed by ``instr`` for three characters or
    more; ``instr`` alone below that (a trigram index has nothing to look up)."""
    if len(needle) >= 3:
        phrase = '"' + needle.replace('"', '""') + '"'
        return "entries_fts MATCH ? AND instr(entries_fts.text, ?) > 0", (phrase, needle)
    return "instr(entries_fts.text, ?) > 0", (needle,)


def _is_busy(exc: sqlite3.Error) -> bool:
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


class SQLiteEngine:
    """The :class:`~sessiontree.storage.sql.plan.SQLEngine` over one SQLite file.

    The connection opens on first use. Not thread-safe: use one engine per thread (asyncio
    tasks on one loop are fine: no method awaits inside a transaction).

    Files: a new database is created ``0600`` (SQLite gives its ``-wal``/``-shm`` files the
    same mode) and missing directories ``0700``. With ``read_only`` the file is opened with
    ``mode=ro`` (on a read-only file system ``immutable=1``), a missing file is an error
    instead of a new store, and every write raises :class:`StorageError`. A file that cannot
    be written (permissions, read-only media) is opened read-only too: reads work, writes
    raise :class:`StorageError` saying why.

    Every write checks, just before its ``COMMIT``, that the file at the path is still the
    one the connection opened (device and inode): a database deleted or replaced under an
    open store would otherwise take the write into an unlinked file and acknowledge entries
    that are gone. The write is rolled back and :class:`StorageError` raised instead.
    """

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self.url = url
        self.read_only = read_only
        self._unwritable: str | None = None  # why this connection cannot write, if it cannot
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the opened file
        self.path, opts = sqlite_path_from_url(url)
        self._sync = _SYNC_LEVELS[opts.get("synchronous", "normal").lower()]
        try:
            self._timeout = float(opts.get("timeout", "30"))
        except ValueError:
            raise StorageError(f"timeout must be a number of seconds in {url!r}") from None
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    # ------------------------------------------------------------------ connection

    def _error(self, exc: BaseException) -> SessionTreeError:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, sqlite3.DatabaseError) and "not a database" in msg:
            return foreign_database(self.path, msg)
        if "readonly" in msg or "read-only" in msg:
            return self._read_only_error()
        if isinstance(exc, sqlite3.Error) and _is_busy(exc):
            return StorageError(
                f"{self.path}: database is locked by another writer for over {self._timeout:g} s"
            )
        return StorageError(f"{self.path}: {msg}")

    def _db(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is not None:
            return conn
        if self._closed:
            raise StorageError(f"{self.url}: the repository is closed")
        try:
            conn = self._connect()
        except SessionTreeError:
            raise
        except (sqlite3.Error, OSError) as exc:
            raise self._error(exc) from exc
        self._conn = conn
        return conn

    def _read_only_error(self) -> StorageError:
        """The error of a write this connection cannot make."""
        if self.read_only:
            return StorageError(f"{self.path}: the store was opened read-only; nothing written")
        why = self._unwritable or "the database file is read-only"
        return StorageError(f"{self.path}: cannot write: {why}; nothing written")

    def _before_write(self) -> None:
        """Raise unless this connection may write: a read-only open or an unwritable file."""
        if self.read_only or self._unwritable is not None:
            raise self._read_only_error()

    def _same_file(self) -> None:
        """Raise if the file at the path is not the one the connection opened (deleted or
        replaced since); the caller's transaction is then rolled back."""
        if self._identity is None:
            return
        try:
            st = os.stat(self.path)
            now: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except FileNotFoundError:
            now = None
        if now != self._identity:
            what = "deleted" if now is None else "replaced by another file"
            raise StorageError(
                f"{self.path}: the database file was {what} while the store was open; "
                "nothing written (open the store again)"
            )

    def _writing(self, conn: sqlite3.Connection) -> contextlib.AbstractContextManager[None]:
        """The write transaction of this engine: refused on a read-only connection, checked
        to still be on the opened file before ``COMMIT``."""
        self._before_write()
        return _write_transaction(conn, before_commit=self._same_file)

    def _connect(self) -> sqlite3.Connection:
        memory = self.path == ":memory:" or self.path.startswith("file::memory:")
        target: str = self.path
        uri = False
        if not memory:
            path = Path(self.path).absolute()
            if not path.exists():
                if self.read_only:
                    raise StorageError(
                        f"{path}: no store here (the file does not exist); check the path"
                    )
                make_private_dirs(path.parent)
                create_private_file(path)
            elif not self.read_only:
                self._unwritable = read_only_reason(path)
            if self.read_only or self._unwritable is not None:
                uri = True
                # one leading slash: "file://x" would name a host
                target = f"file:{urllib.parse.quote('/' + str(path).lstrip('/'))}?mode=ro"
                if on_read_only_file_system(path) and not Path(f"{path}-shm").exists():
                    # read-only media: no -shm file can be made for WAL reads, and no
                    # writer can change the file under us
                    target += "&immutable=1"
        conn = sqlite3.connect(
            target, timeout=self._timeout, isolation_level=None, check_same_thread=False, uri=uri
        )
        try:
            self._prepare(conn, memory)
            if not memory:
                st = os.stat(self.path)
                self._identity = (st.st_dev, st.st_ino)
        except BaseException:
            conn.close()
            raise
        return conn

    def _prepare(self, conn: sqlite3.Connection, memory: bool) -> None:
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                # read-only checks first: nothing is written to a database that is not ours
                version = self._stored_version(conn)
                check_version(version, self.path)
                if self.read_only or self._unwritable is not None:
                    self._check_readable_version(version)
                    return
                if not memory:
                    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
                    if str(mode).lower() != "wal":
                        conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {self._sync}")
                if version != SCHEMA_VERSION:
                    self._migrate(conn)
                return
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _check_readable_version(self, version: int | None) -> None:
        """A connection that cannot write needs a store of this schema version already.

        Raises:
            StorageError: no sessiontree store in the file, or one that needs migrating.
        """
        if version is None:
            raise StorageError(f"{self.path}: no store here (the file holds no sessiontree data)")
        if version < SCHEMA_VERSION:
            if self.read_only and self._unwritable is None:
                # the file can be written: upgrade it once through a writing connection
                writer = SQLiteEngine(self.url)
                try:
                    writer._db()
                finally:
                    if writer._conn is not None:
                        writer._conn.close()
                return
            raise StorageError(
                f"{self.path}: the store has schema version {version} and needs upgrading to "
                f"{SCHEMA_VERSION}, which writes to it, but "
                f"{self._unwritable or 'it was opened read-only'}"
            )

    def _stored_version(self, conn: sqlite3.Connection) -> int | None:
        names = {
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
        }
        if "schema_version" not in names:
            if names:
                raise foreign_database(self.path, f"it holds tables {sorted(names)[:5]}")
            return None
        row = conn.execute(
            "SELECT max(version), count(*), sum(app = ?) FROM schema_version", (APP,)
        ).fetchone()
        if row[1] and not row[2]:
            raise foreign_database(self.path, "schema_version belongs to another application")
        return None if row[0] is None else int(row[0])

    def _migrate(self, conn: sqlite3.Connection) -> None:
        with self._writing(conn):
            version = self._stored_version(conn) or 0  # again, under the write lock
            check_version(version, self.path)
            for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in migration.sqlite:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_version (app, version, applied_at_ms) VALUES (?, ?, ?)",
                    (APP, number, now_ms()),
                )

    async def close(self) -> None:
        """Close the connection. Idempotent."""
        self._closed = True
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()

    # ------------------------------------------------------------------ sessions

    async def create_session(
        self,
        session_id: str,
        metadata: SessionMetadata,
        entries: Sequence[Entry] = (),
        bodies: Sequence[bytes] | None = None,
    ) -> None:
        """See :class:`SQLEngine`: the session row and its entries in one transaction."""
        conn = self._db()
        now = now_us()
        try:
            with self._writing(conn):
                try:
                    conn.execute(
                        "INSERT INTO sessions (id, metadata, created_us, modified_us,"
                        " parent_session_id) VALUES (?, ?, ?, ?, ?)",
                        (
                            session_id,
                            metadata.model_dump_json(by_alias=True, exclude_unset=True),
                            now,
                            now,
                            metadata.parent_session_id,
                        ),
                    )
                except sqlite3.IntegrityError as exc:
                    raise DuplicateEntryError(
                        "a session with this id already exists", session_id=session_id
                    ) from exc
                if entries:
                    self._append_locked(conn, session_id, entries, False, bodies, keep_unknown=True)
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    def _query(self, sql: str, params: Any = ()) -> list[Any]:
        conn = self._db()
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    async def load_metadata(self, session_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = self._query("SELECT metadata FROM sessions WHERE id = ?", (session_id,))
        return rows[0][0] if rows else None

    async def session_leaf(self, session_id: str) -> tuple[bool, str | None]:
        """See :class:`SQLEngine`."""
        rows = self._query("SELECT leaf_id FROM sessions WHERE id = ?", (session_id,))
        return (True, rows[0][0]) if rows else (False, None)

    async def delete_session(self, session_id: str) -> bool:
        """See :class:`SQLEngine`."""
        conn = self._db()
        try:
            with self._writing(conn):
                conn.execute(
                    "DELETE FROM entries_fts WHERE rowid IN"
                    " (SELECT rowid FROM entries WHERE session_id = ?)",
                    (session_id,),
                )
                conn.execute("DELETE FROM entries WHERE session_id = ?", (session_id,))
                # SQLite gives the next row max(rowid) + 1: if the newest rows just went, new
                # rows would reuse rowids under the watermark and never be indexed
                conn.execute(
                    "UPDATE search_index_state SET indexed_upto = min(indexed_upto,"
                    " (SELECT coalesce(max(rowid), 0) FROM entries))"
                )
                found = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        return bool(found)

    async def list_sessions(self, limit: int | None, offset: int) -> list[SessionInfo]:
        """See :class:`SQLEngine`."""
        rows = self._query(
            f"SELECT {LIST_COLUMNS} FROM sessions ORDER BY modified_us DESC, id DESC"
            " LIMIT ? OFFSET ?",
            (-1 if limit is None else max(limit, 0), max(offset, 0)),
        )
        return [info_from_row(r) for r in rows]

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        """See :class:`SQLEngine`: a case-insensitive substring (:mod:`sessiontree.storage.search`),
        newest entries first.

        A query of three characters or more is looked up in the trigram index, then checked
        with ``instr``; a shorter one (no trigram to look up) is checked with ``instr`` against
        every indexed text. Entries appended since the index was last brought up to date are
        indexed first, in one write transaction (:meth:`_catch_up`), so every committed entry
        can be found.
        """
        needle = search_needle(query)
        if needle is None or limit <= 0:
            return []
        where, params = _match_clause(needle)
        lagging = self._catch_up()
        if lagging is not None:
            try:
                rows = self._search_pending(where, params, limit, lagging)
            except sqlite3.Error as exc:
                raise self._error(exc) from exc
            return [hit_from_row(sid, eid, body, query) for sid, eid, body in rows]
        rows = self._query(
            "SELECT e.session_id, e.id, e.body FROM"
            f" (SELECT rowid FROM entries_fts WHERE {where} ORDER BY rowid DESC LIMIT ?)"
            " AS f JOIN entries AS e ON e.rowid = f.rowid ORDER BY f.rowid DESC",
            (*params, limit),
        )
        return [hit_from_row(sid, eid, body, query) for sid, eid, body in rows]

    # ------------------------------------------------------------------ entries

    async def get_entry(self, session_id: str, entry_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = self._query(
            "SELECT body FROM entries WHERE session_id = ? AND id = ?", (session_id, entry_id)
        )
        return rows[0][0] if rows else None

    async def entry_seq(self, session_id: str, entry_id: str) -> int | None:
        """See :class:`SQLEngine`."""
        rows = self._query(
            "SELECT seq FROM entries WHERE session_id = ? AND id = ?", (session_id, entry_id)
        )
        return rows[0][0] if rows else None

    async def get_entries(
        self, session_id: str, cursor: EntryCursor, after_seq: int | None
    ) -> list[tuple[str, str]]:
        """See :class:`SQLEngine`."""
        sql = ["SELECT id, body FROM entries WHERE session_id = ?"]
        params: list[Any] = [session_id]
        if after_seq is not None:
            sql.append("AND seq < ?" if cursor.reverse else "AND seq > ?")
            params.append(after_seq)
        if cursor.types is not None:
            sql.append(f"AND type IN ({', '.join('?' * len(cursor.types))})")
            params.extend(sorted(cursor.types))
        sql.append("ORDER BY seq DESC" if cursor.reverse else "ORDER BY seq")
        if cursor.limit is not None:
            sql.append("LIMIT ?")
            params.append(max(cursor.limit, 0))
        return self._query(" ".join(sql), params)

    async def get_chain(
        self, session_id: str, leaf_id: str | None
    ) -> list[tuple[str, str | None, str, str, int]]:
        """See :class:`SQLEngine` (no ORDER BY: a sort would spill the bodies to disk)."""
        return self._query(_CHAIN_SQL, {"sid": session_id, "leaf": leaf_id})

    async def get_label_body(self, session_id: str, entry_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = self._query(
            "SELECT body FROM entries WHERE session_id = ? AND type = 'label' AND target_id = ?"
            " ORDER BY seq DESC LIMIT 1",
            (session_id, entry_id),
        )
        return rows[0][0] if rows else None

    async def get_name_body(self, session_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = self._query(
            "SELECT body FROM entries WHERE session_id = ? AND type = 'session_info'"
            " ORDER BY seq DESC LIMIT 1",
            (session_id,),
        )
        return rows[0][0] if rows else None

    async def append(
        self,
        session_id: str,
        entries: Sequence[Entry],
        *,
        at_leaf: bool,
        bodies: Sequence[bytes] | None = None,
    ) -> list[Entry]:
        """See :class:`SQLEngine`: one ``BEGIN IMMEDIATE`` transaction, validation inside it."""
        conn = self._db()
        try:
            with self._writing(conn):
                stored = self._append_locked(conn, session_id, entries, at_leaf, bodies)
        except sqlite3.IntegrityError as exc:
            raise DuplicateEntryError(
                f"entry id already used ({exc})", session_id=session_id
            ) from exc
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        return stored

    def _append_locked(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        entries: Sequence[Entry],
        at_leaf: bool,
        bodies: Sequence[bytes] | None = None,
        *,
        keep_unknown: bool = False,
    ) -> list[Entry]:
        row = conn.execute(_SESSION_ROW, (session_id,)).fetchone()
        if row is None:
            raise SessionNotFoundError(session_id)
        state = SessionState(row[0], row[1], row[2], bool(row[3]))
        # the type of every id the entries refer to: one indexed lookup per id, one statement
        # (no OR in the WHERE clause: it would make SQLite scan the whole session)
        ids = lookup_ids(entries, state.leaf_id if at_leaf else None)
        if len(ids) <= 32:
            match = f"IN ({', '.join('?' * len(ids))})"
            params: tuple[Any, ...] = (session_id, *ids)
        else:
            match = "IN (SELECT value FROM json_each(?))"
            params = (session_id, orjson.dumps(ids).decode())
        found = dict(
            conn.execute(
                f"SELECT id, type FROM entries WHERE session_id = ? AND id {match}", params
            ).fetchall()
        )
        plan = plan_append(
            session_id,
            state,
            entries,
            found,
            at_leaf=at_leaf,
            bodies=bodies,
            keep_unknown=keep_unknown,
        )
        if not plan.rows:
            return plan.entries
        indexed_upto, top = row[4], row[5] or 0
        index_now = top - indexed_upto + len(plan.rows) >= INDEX_BACKLOG
        if index_now:
            # the backlog left by earlier appends first; this append's rows below, with the
            # text the planner already has
            self._index_pending(conn, indexed_upto)
        if len(plan.rows) == 1:
            r = plan.rows[0]
            cur = conn.execute(
                _INSERT_ENTRY,
                (session_id, r.seq, r.id, r.parent_id, r.type, r.timestamp, r.target_id, r.body),
            )
            if index_now:
                if r.text is not None:
                    conn.execute(_INSERT_FTS, (cur.lastrowid, r.text))
                conn.execute(_ADVANCE_INDEX)
        else:
            conn.executemany(
                _INSERT_ENTRY,
                [
                    (session_id, r.seq, r.id, r.parent_id, r.type, r.timestamp, r.target_id, r.body)
                    for r in plan.rows
                ],
            )
            if index_now:
                conn.executemany(
                    "INSERT INTO entries_fts (rowid, text)"
                    " SELECT rowid, ? FROM entries WHERE session_id = ? AND seq = ?",
                    [(r.text, session_id, r.seq) for r in plan.rows if r.text is not None],
                )
                conn.execute(_ADVANCE_INDEX)
        conn.execute(
            _UPDATE_SESSION,
            (
                plan.leaf_id,
                plan.entry_count,
                plan.message_count,
                now_us(),
                plan.first_message,
                plan.name,
                session_id,
            ),
        )
        return plan.entries

    # ------------------------------------------------------------------ search index

    def _catch_up(self) -> int | None:
        """Index every entry above the watermark, if any, in one write transaction.

        Waits at most :data:`CATCH_UP_WAIT_MS` for the write lock (found in review: with a
        long write of another process in progress, every search waited the whole busy
        timeout, then failed). Returns ``None`` when the index is complete, else the
        watermark it could not move (another writer holds the lock): the caller then searches
        the rows above it separately (:meth:`_search_pending`).

        Raises:
            StorageError: the database failed.
        """
        conn = self._db()
        try:
            row = conn.execute(
                "SELECT indexed_upto, indexed_upto < (SELECT coalesce(max(rowid), 0) FROM entries)"
                " FROM search_index_state"
            ).fetchone()
            if not row or not row[1]:
                return None
            if self.read_only or self._unwritable is not None:
                return int(row[0])  # no write possible: search the lagging rows aside
            conn.execute(f"PRAGMA busy_timeout = {CATCH_UP_WAIT_MS}")
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):
                    return int(row[0])
                raise
            finally:
                conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            with _write_transaction(conn, begun=True, before_commit=self._same_file):
                # read again under the write lock: another process may have caught up
                (indexed_upto,) = conn.execute(
                    "SELECT indexed_upto FROM search_index_state"
                ).fetchone()
                self._index_pending(conn, indexed_upto)
                conn.execute(_ADVANCE_INDEX)
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        return None

    def _search_pending(
        self, where: str, params: tuple[str, ...], limit: int, indexed_upto: int
    ) -> list[Any]:
        """The search of :meth:`search` while the index lags and another writer holds the lock.

        The rows above ``indexed_upto`` go into a connection-private (``temp``) FTS5 table
        with the same tokenizer — writing it takes no lock on the database. Its matches (the
        newest entries) come first, then the index's, newest first; no row twice. Rows as
        ``(session_id, entry_id, body)``.
        """
        conn = self._db()
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.pending_fts USING fts5"
            f" (text, tokenize = '{SQLITE_TOKENIZER}')"
        )
        conn.execute("DELETE FROM temp.pending_fts")
        pending_where = where.replace("entries_fts", "pending_fts")
        try:
            conn.executemany(
                "INSERT INTO temp.pending_fts (rowid, text) VALUES (?, ?)",
                self._pending_texts(conn, indexed_upto),
            )
            # a row both tables hold (another process caught up meanwhile) comes once
            return conn.execute(
                "SELECT e.session_id, e.id, e.body FROM"
                " (SELECT rowid, min(src) AS src FROM"
                f"   (SELECT rowid, 1 AS src FROM main.entries_fts WHERE {where}"
                f"    UNION ALL SELECT rowid, 0 AS src FROM temp.pending_fts WHERE {pending_where})"
                "  GROUP BY rowid ORDER BY src, rowid DESC LIMIT ?)"
                " AS f JOIN entries AS e ON e.rowid = f.rowid ORDER BY f.src, f.rowid DESC",
                (*params, *params, limit),
            ).fetchall()
        finally:
            conn.execute("DELETE FROM temp.pending_fts")

    @staticmethod
    def _pending_texts(conn: sqlite3.Connection, indexed_upto: int) -> list[tuple[int, str]]:
        """``(rowid, text)`` of every ``message`` row above ``indexed_upto`` with text to index."""
        rows = conn.execute(
            "SELECT rowid, body FROM entries WHERE rowid > ? AND type = 'message' ORDER BY rowid",
            (indexed_upto,),
        ).fetchall()
        texts = []
        for rowid, body in rows:
            try:
                entry = parse_entry_json(body)
            except InvalidEntryError:
                continue  # a damaged row holds no text to find; reading it names the entry
            if isinstance(entry, MessageEntry):
                text = index_text(message_text(entry.message))
                if text is not None:
                    texts.append((rowid, text))
        return texts

    @classmethod
    def _index_pending(cls, conn: sqlite3.Connection, indexed_upto: int) -> None:
        """Insert the search text of every ``message`` row above ``indexed_upto`` (in a write
        transaction; the caller then moves the watermark with ``_ADVANCE_INDEX``)."""
        texts = cls._pending_texts(conn, indexed_upto)
        if texts:
            conn.executemany(_INSERT_FTS, texts)
