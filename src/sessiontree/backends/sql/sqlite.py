"""The SQLite engine: the embedded default store (``sql`` backend over one SQLite file).

:class:`SQLiteEngine` is one class composed of two parts it owns: its connection
(:class:`~sessiontree.backends.sql.sqlite_open.SQLiteConnection`: the URL, opening, schema
check and migration, the connection's thread) and its appends
(:class:`~sessiontree.backends.sql.sqlite_append.SQLiteAppends`: validating and writing
entries, and what the last append left known). The deferred search index is
:mod:`~sessiontree.backends.sql.sqlite_index`, the longer statements
:mod:`~sessiontree.backends.sql.sqlite_sql`; this module holds the session rows, the reads,
search and fork.
The async methods' bodies are synchronous ``sqlite3`` code, run whole on the connection's
own thread (:func:`~sessiontree.backends.sql.sqlite_open.on_connection_thread`), never on the
event loop. The search-index watermark is read in the append's session-row query, so the
common append runs no extra statement.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from sessiontree.backends.sql.fork import ChainRow, ForkPlan, chain_in_window, copy_runs
from sessiontree.backends.sql.payloads import (
    COPY_REFS_SQL,
    ENTRIES_WITH_PAYLOADS_SQL,
    HEAD,
    LARGEST_SQL,
    MOVE_REFS_SQL,
    REFERRED_BYTES_SQL,
    SESSION_SIZES_SQL,
    USAGE_SQL,
    expand_all,
    largest_entries,
    owner_in_trash,
    split_rows,
)
from sessiontree.backends.sql.plan import (
    INSERT_TRASH_SQL,
    LIST_COLUMNS,
    LIST_TRASH_SQL,
    TRASH_SOURCE_SQL,
    TRASHED_BODIES_SQL,
    entries_page_sql,
    hit_from_row,
    info_from_row,
    lease_upsert_sql,
    meta_condition,
    meta_rows,
    now_us,
    trash_taken,
    trash_values,
    where_clause,
)
from sessiontree.backends.sql.rekey import RekeyTable, rekey_sql, scan_params
from sessiontree.backends.sql.sqlite_append import SQLiteAppends, check_lease, lease_record
from sessiontree.backends.sql.sqlite_index import (
    catch_up,
    match_clause,
    search_pending,
)
from sessiontree.backends.sql.sqlite_open import (
    SQLiteConnection,
    on_connection_thread,
    sqlite_path_from_url,
)
from sessiontree.backends.sql.sqlite_payloads import (
    fetch_payloads,
    release_payloads,
    store_payloads,
)
from sessiontree.backends.sql.sqlite_sql import (
    CHAIN_SQL,
    CHAIN_UNTIL_SQL,
    COPY_ROWS,
    COPY_RUNS,
    FORK_CHAIN_SQL,
    FORK_WINDOW_SQL,
    INSERT_ENTRY,
    UPDATE_SESSION,
)
from sessiontree.entries import Entry
from sessiontree.errors import SessionExistsError, SessionNotFoundError
from sessiontree.metadata import SearchHit, SessionInfo, SessionMetadata
from sessiontree.storage.base import EntryCursor
from sessiontree.storage.lease import Lease, LeaseRecord, grant, release, renew
from sessiontree.storage.search import search_needle

__all__ = ["SQLiteEngine", "sqlite_path_from_url"]

_LENGTH = "length(CAST(body AS BLOB))"
"""The UTF-8 bytes of an ``entries.body``."""


def _insert_session(
    conn: sqlite3.Connection, session_id: str, metadata: SessionMetadata, now: int
) -> None:
    """The new session's row and its metadata lookup rows (inside the caller's transaction)."""
    conn.execute(
        "INSERT INTO sessions (id, metadata, created_us, modified_us, parent_session_id)"
        " VALUES (?, ?, ?, ?, ?)",
        (
            session_id,
            metadata.model_dump_json(by_alias=True, exclude_unset=True),
            now,
            now,
            metadata.parent_session_id,
        ),
    )
    conn.executemany(
        "INSERT INTO session_meta (key, value, session_id) VALUES (?, ?, ?)",
        meta_rows(session_id, metadata),
    )


_PUT_LEASE = lease_upsert_sql("?")
"""Stores a session's lease record (``session_id``, ``owner``, ``fence``, ``expires_ms``)."""


class SQLiteEngine:
    """The :class:`~sessiontree.backends.sql.plan.SQLEngine` over one SQLite file.

    The connection opens on first use. Each method runs on the connection's thread, one
    after another, so tasks (and threads) may share one engine; a method awaits only other
    methods of the engine.

    Args:
        url: a ``sqlite:`` URL (:func:`sqlite_path_from_url`).
        read_only: never create or write the store (see :class:`SQLiteConnection`).

    Raises (constructor):
        StorageError: a malformed URL or option.
    """

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self.connection = SQLiteConnection(url, read_only=read_only)
        """The connection: opening, the schema, errors and the thread every method runs on."""
        self._appends = SQLiteAppends(self.connection)
        """Appending entries, and what the last append to each session left known."""
        self.url = url
        """The ``sqlite:`` URL."""
        self.read_only = read_only
        """Opened for reading only."""

    @property
    def payload_threshold(self) -> int | None:
        """Strings of this many bytes or more are stored once, as payloads (``None``: off;
        :mod:`sessiontree.backends.sql.payloads`)."""
        return self._appends.payload_threshold

    @payload_threshold.setter
    def payload_threshold(self, value: int | None) -> None:
        self._appends.payload_threshold = value

    @property
    def path(self) -> str:
        """The database file's path (``:memory:`` for an in-memory store)."""
        return self.connection.path

    async def close(self) -> None:
        """Close the connection once the operations already called are done (see
        :meth:`SQLiteConnection.close`). Idempotent."""
        await self.connection.close()

    # ------------------------------------------------------------------ entries written

    @on_connection_thread
    async def append(
        self,
        session_id: str,
        entries: Sequence[Entry],
        *,
        at_leaf: bool,
        bodies: Sequence[bytes] | None = None,
        lease: Lease | None = None,
    ) -> list[Entry]:
        """See :class:`SQLEngine` (:meth:`SQLiteAppends.append`)."""
        return self._appends.append(
            session_id, entries, at_leaf=at_leaf, bodies=bodies, lease=lease
        )

    @on_connection_thread
    async def append_if_leaf(
        self,
        session_id: str,
        entry: Entry,
        body: bytes,
        expected_id: str | None,
        *,
        at_leaf: bool = True,
        lease: Lease | None = None,
    ) -> Entry:
        """See :class:`SQLEngine` (:meth:`SQLiteAppends.append_if_leaf`)."""
        return self._appends.append_if_leaf(
            session_id, entry, body, expected_id, at_leaf=at_leaf, lease=lease
        )

    # ------------------------------------------------------------------ sessions

    @on_connection_thread
    async def create_session(
        self,
        session_id: str,
        metadata: SessionMetadata,
        entries: Sequence[Entry] = (),
        bodies: Sequence[bytes] | None = None,
        *,
        created_us: int | None = None,
    ) -> None:
        """See :class:`SQLEngine`: the session row and its entries in one transaction."""
        conn = self.connection.db()
        now = now_us() if created_us is None else created_us
        try:
            with self.connection.writing(conn):
                try:
                    _insert_session(conn, session_id, metadata, now)
                except sqlite3.IntegrityError as exc:
                    raise SessionExistsError(
                        "a session with this id already exists", session_id=session_id
                    ) from exc
                if entries:
                    self._appends.append_locked(
                        conn, session_id, entries, False, bodies, keep_unknown=True
                    )
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc

    @on_connection_thread
    async def fork_session(
        self, source_id: str, session_id: str, metadata: SessionMetadata, plan: ForkPlan
    ) -> None:
        """See :class:`SQLEngine`: one transaction; copied rows by ``INSERT … SELECT``.

        The copies' search index is filled like an append's: lazily, above the watermark.
        """
        conn = self.connection.db()
        now = now_us()
        try:
            with self.connection.writing(conn):
                _insert_session(conn, session_id, metadata, now)
                if plan.copies:
                    if not self._copy(conn, source_id, session_id, plan):
                        raise SessionNotFoundError(source_id, "session was deleted during the fork")
                    conn.execute(COPY_REFS_SQL.format(p="?"), (session_id, source_id))
                rows, payloads = split_rows(plan.rows, self.payload_threshold)
                store_payloads(conn, session_id, payloads)
                conn.executemany(
                    INSERT_ENTRY,
                    [
                        (
                            session_id,
                            r.seq,
                            r.id,
                            r.parent_id,
                            r.type,
                            r.timestamp,
                            r.target_id,
                            r.body,
                        )
                        for r in rows
                    ],
                )
                conn.execute(
                    UPDATE_SESSION,
                    (
                        plan.leaf_id,
                        plan.entry_count,
                        plan.message_count,
                        now,
                        plan.first_message,
                        plan.name,
                        session_id,
                    ),
                )
        except sqlite3.IntegrityError as exc:
            raise SessionExistsError(
                "a session with this id already exists", session_id=session_id
            ) from exc
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc

    @staticmethod
    def _copy(conn: sqlite3.Connection, source_id: str, session_id: str, plan: ForkPlan) -> bool:
        """Copy ``plan.copies`` into the new session (which holds nothing else yet): by place
        when the plan knows the source rows' seqs (one index range per run), else by id;
        ``False`` when the rows found are not the planned ones (the source is gone, or was
        made again since it was read)."""
        if plan.copy_sources is None:
            copied = conn.execute(COPY_ROWS, (session_id, source_id, orjson.dumps(plan.copies)))
            return bool(copied.rowcount == len(plan.copies))
        runs = copy_runs(plan.copies, plan.copy_sources)
        conn.execute(COPY_RUNS, (session_id, source_id, orjson.dumps(runs)))
        found = conn.execute(
            "SELECT id FROM entries WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
        return [r[0] for r in found] == [i for i, _ in plan.copies]

    @on_connection_thread
    async def set_modified(
        self, session_id: str, modified_us: int, lease: Lease | None = None
    ) -> bool:
        """See :class:`SQLEngine`."""
        conn = self.connection.db()
        try:
            with self.connection.writing(conn):
                check_lease(conn, session_id, lease)
                found = conn.execute(
                    "UPDATE sessions SET modified_us = ? WHERE id = ?", (modified_us, session_id)
                ).rowcount
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc
        return bool(found)

    @on_connection_thread
    async def load_metadata(self, session_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = self.connection.query("SELECT metadata FROM sessions WHERE id = ?", (session_id,))
        return rows[0][0] if rows else None

    @on_connection_thread
    async def session_leaf(self, session_id: str) -> tuple[bool, str | None]:
        """See :class:`SQLEngine`."""
        rows = self.connection.query("SELECT leaf_id FROM sessions WHERE id = ?", (session_id,))
        return (True, rows[0][0]) if rows else (False, None)

    def _delete_rows(self, conn: sqlite3.Connection, session_id: str) -> bool:
        """Delete a session's rows and search index (inside the caller's transaction)."""
        conn.execute(
            "DELETE FROM entries_fts WHERE rowid IN"
            " (SELECT rowid FROM entries WHERE session_id = ?)",
            (session_id,),
        )
        conn.execute("DELETE FROM entries WHERE session_id = ?", (session_id,))
        conn.execute("DELETE FROM session_meta WHERE session_id = ?", (session_id,))
        conn.execute("DELETE FROM sync_positions WHERE session_id = ?", (session_id,))
        conn.execute("DELETE FROM drafts WHERE session_id = ?", (session_id,))
        release_payloads(conn, session_id)
        conn.execute("DELETE FROM leases WHERE session_id = ?", (session_id,))
        # SQLite gives the next row max(rowid) + 1: if the newest rows just went, new
        # rows would reuse rowids under the watermark and never be indexed
        conn.execute(
            "UPDATE search_index_state SET indexed_upto = min(indexed_upto,"
            " (SELECT coalesce(max(rowid), 0) FROM entries))"
        )
        self._appends.forget(session_id)
        return bool(conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount)

    @on_connection_thread
    async def delete_session(self, session_id: str) -> bool:
        """See :class:`SQLEngine`."""
        conn = self.connection.db()
        try:
            with self.connection.writing(conn):
                found = self._delete_rows(conn, session_id)
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc
        return found

    @on_connection_thread
    async def sync_positions(self) -> list[tuple[str, str]]:
        """See :class:`SQLEngine`."""
        rows = self.connection.query("SELECT session_id, position FROM sync_positions", ())
        return [(r[0], r[1]) for r in rows]

    @on_connection_thread
    async def get_draft(self, session_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = self.connection.query("SELECT body FROM drafts WHERE session_id = ?", (session_id,))
        return rows[0][0] if rows else None

    @on_connection_thread
    async def put_draft(
        self, session_id: str, body: str | None, updated_ms: int, lease: Lease | None = None
    ) -> bool:
        """See :class:`SQLEngine`."""
        conn = self.connection.db()
        try:
            with self.connection.writing(conn):
                check_lease(conn, session_id, lease)
                if body is None:
                    conn.execute("DELETE FROM drafts WHERE session_id = ?", (session_id,))
                    return True
                found = conn.execute(
                    "INSERT INTO drafts (session_id, body, updated_ms)"
                    " SELECT id, ?, ? FROM sessions WHERE id = ?"
                    " ON CONFLICT (session_id) DO UPDATE"
                    " SET body = excluded.body, updated_ms = excluded.updated_ms",
                    (body, updated_ms, session_id),
                ).rowcount
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc
        return bool(found)

    # ------------------------------------------------------------------ store settings, rekey

    @on_connection_thread
    async def get_store_meta(self, key: str) -> str | None:
        """The ``store_meta`` value of ``key``, ``None`` when unset."""
        rows = self.connection.query("SELECT value FROM store_meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    @on_connection_thread
    async def put_store_meta(self, key: str, value: str) -> None:
        """Set the ``store_meta`` value of ``key``.

        Raises:
            StorageError: read-only, or the database failed.
        """
        conn = self.connection.db()
        try:
            with self.connection.writing(conn):
                conn.execute(
                    "INSERT INTO store_meta (key, value) VALUES (?, ?)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc

    @on_connection_thread
    async def rekey_count(self, table: RekeyTable, prefix: str) -> int:
        """Rows of ``table`` whose sealed value does not start with ``prefix``
        (:mod:`~sessiontree.backends.sql.rekey`)."""
        which, params = scan_params(table, prefix, None, None)
        rows = self.connection.query(rekey_sql(table, "sqlite", len(prefix))[which], params)
        return int(rows[0][0])

    @on_connection_thread
    async def rekey_scan(
        self, table: RekeyTable, prefix: str, after: tuple[Any, ...] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        """The next ``limit`` rows ``(key..., value)`` of ``table`` after key ``after`` whose
        value does not start with ``prefix``, in key order."""
        which, params = scan_params(table, prefix, after, limit)
        return self.connection.query(rekey_sql(table, "sqlite", len(prefix))[which], params)

    @on_connection_thread
    async def rekey_write(self, table: RekeyTable, updates: Sequence[tuple[Any, ...]]) -> int:
        """``(new, key..., old)`` updates of ``table``, in one transaction, each made only
        where the value is still ``old``; how many were made.

        Raises:
            StorageError: read-only, or the database failed (nothing written).
        """
        if not updates:
            return 0
        sql = rekey_sql(table, "sqlite", 0)["update"]
        conn = self.connection.db()
        try:
            with self.connection.writing(conn):
                return sum(conn.execute(sql, u).rowcount for u in updates)
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc

    @on_connection_thread
    async def scrub_after_rekey(self, drop_search: bool) -> None:
        """After ``rekey``: empty the search index when the store indexes no plaintext
        (``drop_search``; text indexed before the store was encrypted), then rewrite the
        file (``VACUUM``) and empty the WAL, so no page or frame keeps an old value.

        Raises:
            StorageError: read-only, or the database failed.
        """
        conn = self.connection.db()
        try:
            if drop_search:
                with self.connection.writing(conn):
                    conn.execute("DELETE FROM entries_fts")
            if self.connection.cannot_write:
                return
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc

    # ------------------------------------------------------------------ the writer lease

    @on_connection_thread
    async def acquire_lease(
        self, session_id: str, owner: str, now_ms: int, ttl_ms: int
    ) -> Lease | None:
        """See :class:`SQLEngine`."""
        conn = self.connection.db()
        try:
            with self.connection.writing(conn):
                if (
                    conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
                    is None
                ):
                    return None
                lease, record = grant(
                    session_id, lease_record(conn, session_id), owner, now_ms, ttl_ms
                )
                conn.execute(
                    _PUT_LEASE, (session_id, record.owner, record.fence, record.expires_ms)
                )
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc
        return lease

    @on_connection_thread
    async def renew_lease(self, lease: Lease, now_ms: int, ttl_ms: int) -> Lease:
        """See :class:`SQLEngine`."""
        conn = self.connection.db()
        try:
            with self.connection.writing(conn):
                renewed = renew(lease, lease_record(conn, lease.session_id), now_ms, ttl_ms)
                conn.execute(
                    "UPDATE leases SET expires_ms = ? WHERE session_id = ?",
                    (renewed.expires_ms, lease.session_id),
                )
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc
        return renewed

    @on_connection_thread
    async def release_lease(self, lease: Lease) -> None:
        """See :class:`SQLEngine`."""
        conn = self.connection.db()
        try:
            with self.connection.writing(conn):
                record = release(lease, lease_record(conn, lease.session_id))
                if record is not None:
                    conn.execute(
                        _PUT_LEASE,
                        (lease.session_id, record.owner, record.fence, record.expires_ms),
                    )
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc

    @on_connection_thread
    async def get_lease(self, session_id: str) -> LeaseRecord | None:
        """See :class:`SQLEngine`."""
        rows = self.connection.query(
            "SELECT owner, fence, expires_ms FROM leases WHERE session_id = ?", (session_id,)
        )
        return LeaseRecord(rows[0][0], rows[0][1], rows[0][2]) if rows else None

    # ------------------------------------------------------------------ trash and sizes

    @on_connection_thread
    async def trash_session(self, session_id: str, trashed_us: int) -> tuple[Any, ...] | None:
        """See :class:`SQLEngine`: the trash row written and the session's rows deleted in
        one transaction."""
        conn = self.connection.db()
        try:
            with self.connection.writing(conn):
                row = conn.execute(TRASH_SOURCE_SQL.format(p="?"), (session_id,)).fetchone()
                if row is None:
                    return None
                if conn.execute(
                    "SELECT 1 FROM trash WHERE session_id = ?", (session_id,)
                ).fetchone():
                    raise trash_taken(session_id)
                bodies = [
                    b if isinstance(b, str) else bytes(b).decode()
                    for (b,) in conn.execute(
                        "SELECT body FROM entries WHERE session_id = ? ORDER BY seq",
                        (session_id,),
                    )
                ]
                (referred,) = conn.execute(
                    REFERRED_BYTES_SQL.format(p="?"), (session_id,)
                ).fetchone()
                values = trash_values(session_id, trashed_us, row, bodies, int(referred))
                conn.execute(INSERT_TRASH_SQL.format(p="?"), values)
                # the trashed bodies keep their payloads: their refs move to the trash row
                conn.execute(MOVE_REFS_SQL.format(p="?"), (owner_in_trash(session_id), session_id))
                self._delete_rows(conn, session_id)
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc
        return values[:8]

    @on_connection_thread
    async def list_trash(self) -> list[tuple[Any, ...]]:
        """See :class:`SQLEngine`."""
        return self.connection.query(LIST_TRASH_SQL)

    @on_connection_thread
    async def trashed_bodies(self, session_id: str) -> tuple[Any, ...] | None:
        """See :class:`SQLEngine`."""
        rows = self.connection.query(TRASHED_BODIES_SQL.format(p="?"), (session_id,))
        return tuple(rows[0]) if rows else None

    @on_connection_thread
    async def purge_trash(self, session_id: str) -> bool:
        """See :class:`SQLEngine`."""
        conn = self.connection.db()
        try:
            with self.connection.writing(conn):
                found = conn.execute(
                    "DELETE FROM trash WHERE session_id = ?", (session_id,)
                ).rowcount
                release_payloads(conn, owner_in_trash(session_id))
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc
        return bool(found)

    @on_connection_thread
    async def session_sizes(self) -> dict[str, int]:
        """See :class:`SQLEngine` (``length(CAST(body AS BLOB))``: UTF-8 bytes)."""
        rows = self.connection.query(
            SESSION_SIZES_SQL.format(length=_LENGTH, where="", where_refs="")
        )
        return {r[0]: int(r[1] or 0) for r in rows}

    @on_connection_thread
    async def session_size(self, session_id: str) -> int:
        """See :class:`SQLEngine` (as :meth:`session_sizes`, one session by index)."""
        rows = self.connection.query(
            SESSION_SIZES_SQL.format(
                length=_LENGTH,
                where=" WHERE session_id = ?",
                where_refs=" WHERE r.session_id = ?",
            ),
            (session_id, session_id),
        )
        return int(rows[0][1] or 0) if rows else 0

    @on_connection_thread
    async def largest_entries(self, limit: int) -> list[tuple[Any, ...]]:
        """See :class:`SQLEngine`."""
        top = self.connection.query(
            f"SELECT session_id, id, type, {_LENGTH} AS n FROM entries ORDER BY n DESC LIMIT ?",
            (limit,),
        )
        heads = self.connection.query(
            ENTRIES_WITH_PAYLOADS_SQL.format(
                length=_LENGTH, body="body", prefix=f"substr(body, 1, {len(HEAD)})", p="?"
            ),
            (HEAD,),
        )
        sizes = dict(self.connection.query("SELECT hash, size FROM payloads")) if heads else {}
        return largest_entries(top, heads, sizes, limit)

    @on_connection_thread
    async def list_sessions(
        self, limit: int | None, offset: int, where: Mapping[str, str]
    ) -> list[SessionInfo]:
        """See :class:`SQLEngine`."""
        condition, params = where_clause(where, "?")
        rows = self.connection.query(
            f"SELECT {LIST_COLUMNS} FROM sessions{condition} ORDER BY modified_us DESC, id DESC"
            " LIMIT ? OFFSET ?",
            (*params, -1 if limit is None else max(limit, 0), max(offset, 0)),
        )
        return [info_from_row(r) for r in rows]

    @on_connection_thread
    async def search(
        self, query: str, limit: int, where: Mapping[str, str] | None = None
    ) -> list[SearchHit]:
        """See :class:`SQLEngine`: a case-insensitive substring (:mod:`sessiontree.storage.search`),
        newest entries first. ``where`` keeps the index rows of the sessions it names (their
        entries' rowids, through ``session_meta`` and the entries' primary key).

        A query of three characters or more is looked up in the trigram index, then checked
        with ``instr``; a shorter one (no trigram to look up) is checked with ``instr`` against
        every indexed text. Entries appended since the index was last brought up to date are
        indexed first, in one write transaction (:meth:`_catch_up`), so every committed entry
        can be found.
        """
        needle = search_needle(query)
        if needle is None or limit <= 0:
            return []
        where_sql, params = match_clause(needle)
        if where:
            sessions, meta_params = meta_condition(where, "?", "session_id")
            where_sql += f" AND entries_fts.rowid IN (SELECT rowid FROM entries WHERE {sessions})"
            params = (*params, *meta_params)
        lagging = self._catch_up()
        if lagging is not None:
            try:
                rows = search_pending(
                    self.connection.db(), where_sql, params, limit, lagging, self.connection.codec
                )
            except sqlite3.Error as exc:
                raise self.connection.error(exc) from exc
            return self._hits(rows, query)
        rows = self.connection.query(
            "SELECT e.session_id, e.id, e.body FROM"
            f" (SELECT rowid FROM entries_fts WHERE {where_sql} ORDER BY rowid DESC LIMIT ?)"
            " AS f JOIN entries AS e ON e.rowid = f.rowid ORDER BY f.rowid DESC",
            (*params, limit),
        )
        return self._hits(rows, query)

    def _hits(self, rows: Sequence[Any], query: str) -> list[SearchHit]:
        """Search hits of ``(session_id, entry_id, stored body)`` rows (payloads expanded)."""
        conn = self.connection.db()
        bodies = expand_all([r[2] for r in rows], lambda hashes: fetch_payloads(conn, hashes))
        return [
            hit_from_row(sid, eid, body, query, self.connection.codec)
            for (sid, eid, _), body in zip(rows, bodies, strict=True)
        ]

    # ------------------------------------------------------------------ payloads

    @on_connection_thread
    async def get_payloads(self, hashes: Sequence[str]) -> dict[str, str]:
        """See :class:`SQLEngine`."""
        try:
            return fetch_payloads(self.connection.db(), hashes)
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc

    @on_connection_thread
    async def payload_usage(self, limit: int) -> tuple[tuple[int, int, int], list[Any]]:
        """See :class:`SQLEngine`."""
        (usage,) = self.connection.query(USAGE_SQL)
        largest = self.connection.query(LARGEST_SQL.format(p="?"), (limit,))
        return (int(usage[0]), int(usage[1]), int(usage[2])), largest

    # ------------------------------------------------------------------ entries

    @on_connection_thread
    async def get_entry(self, session_id: str, entry_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = self.connection.query(
            "SELECT body FROM entries WHERE session_id = ? AND id = ?", (session_id, entry_id)
        )
        return rows[0][0] if rows else None

    @on_connection_thread
    async def entry_seq(self, session_id: str, entry_id: str) -> int | None:
        """See :class:`SQLEngine`."""
        rows = self.connection.query(
            "SELECT seq FROM entries WHERE session_id = ? AND id = ?", (session_id, entry_id)
        )
        return rows[0][0] if rows else None

    @on_connection_thread
    async def get_entries(
        self, session_id: str, cursor: EntryCursor, after_seq: int | None
    ) -> list[tuple[str, str]]:
        """See :class:`SQLEngine`."""
        sql, params = entries_page_sql(
            session_id,
            cursor,
            after_seq,
            mark="?",
            body="body",
            types_in=lambda types: (f"AND type IN ({', '.join('?' * len(types))})", types),
        )
        return self.connection.query(sql, params)

    @on_connection_thread
    async def get_chain(
        self, session_id: str, leaf_id: str | None
    ) -> list[tuple[str, str | None, str, str, int]]:
        """See :class:`SQLEngine` (no ORDER BY: a sort would spill the bodies to disk)."""
        return self.connection.query(CHAIN_SQL, {"sid": session_id, "leaf": leaf_id})

    @on_connection_thread
    async def get_chain_until(
        self, session_id: str, leaf_id: str | None, stop_type: str | None, stop_id: str | None
    ) -> list[tuple[str, str | None, str, str, int, int]]:
        """See :class:`SQLEngine`."""
        return self.connection.query(
            CHAIN_UNTIL_SQL,
            {"sid": session_id, "leaf": leaf_id, "stype": stop_type, "stop": stop_id},
        )

    @on_connection_thread
    async def get_fork_rows(
        self, session_id: str, leaf_id: str, *, metadata: bool = False
    ) -> tuple[list[ChainRow], list[tuple[str, str]], str | None]:
        """See :class:`SQLEngine`."""
        params = {"sid": session_id, "leaf": leaf_id}
        chain = chain_in_window(self.connection.query(FORK_WINDOW_SQL, params), leaf_id)
        if chain is None:
            chain = [ChainRow(*r) for r in self.connection.query(FORK_CHAIN_SQL, params)]
        labels = self.connection.query(
            # "+seq": sorted after the read, so SQLite reads the label index instead of every
            # row of the session in seq order
            "SELECT id, body FROM entries WHERE session_id = ? AND type = 'label' ORDER BY +seq",
            (session_id,),
        )
        return chain, labels, await self.load_metadata(session_id) if metadata else None

    @on_connection_thread
    async def get_bodies(self, session_id: str, entry_ids: Sequence[str]) -> dict[str, str]:
        """See :class:`SQLEngine`."""
        if not entry_ids:
            return {}
        rows = self.connection.query(
            "SELECT id, body FROM entries WHERE session_id = ? AND id IN (SELECT value FROM"
            " json_each(?))",
            (session_id, orjson.dumps(list(entry_ids)).decode()),
        )
        return dict(rows)

    @on_connection_thread
    async def get_label_body(self, session_id: str, entry_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = self.connection.query(
            "SELECT body FROM entries WHERE session_id = ? AND type = 'label' AND target_id = ?"
            " ORDER BY seq DESC LIMIT 1",
            (session_id, entry_id),
        )
        return rows[0][0] if rows else None

    @on_connection_thread
    async def get_name_body(self, session_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = self.connection.query(
            "SELECT body FROM entries WHERE session_id = ? AND type = 'session_info'"
            " ORDER BY seq DESC LIMIT 1",
            (session_id,),
        )
        return rows[0][0] if rows else None

    # ------------------------------------------------------------------ search index

    def _catch_up(self) -> int | None:
        """:func:`~sessiontree.backends.sql.sqlite_index.catch_up` on this engine's connection
        (nothing is written on a connection that cannot write).

        Raises:
            StorageError: the database failed.
        """
        conn = self.connection.db()
        try:
            return catch_up(
                conn,
                self.connection.timeout,
                can_write=not self.connection.cannot_write,
                before_commit=self.connection.same_file,
                codec=self.connection.codec,
            )
        except sqlite3.Error as exc:
            raise self.connection.error(exc) from exc
