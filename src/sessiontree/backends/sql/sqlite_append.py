"""The SQLite append: the part of :class:`~sessiontree.backends.sql.sqlite.SQLiteEngine` that
writes entries (:class:`SQLiteAppends`, owned by the engine, over the engine's connection).

One ``BEGIN IMMEDIATE`` transaction per append, the core validation inside it. The session row
query also reads the search-index watermark, so the common append runs no extra statement;
the engine remembers the leaf it wrote last and its type, so a single entry under that leaf
needs no lookup of the ids it refers to.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import orjson

from sessiontree.backends.sql.payloads import PAYLOAD_THRESHOLD, split_rows
from sessiontree.backends.sql.plan import (
    SessionState,
    lookup_ids,
    now_us,
    plan_append,
    sync_position_sql,
)
from sessiontree.backends.sql.sqlite_index import ADVANCE_INDEX, INSERT_FTS, index_pending
from sessiontree.backends.sql.sqlite_open import SQLiteConnection
from sessiontree.backends.sql.sqlite_payloads import store_payloads
from sessiontree.backends.sql.sqlite_sql import INSERT_ENTRY, SESSION_ROW, UPDATE_SESSION
from sessiontree.entries import Entry
from sessiontree.errors import DuplicateEntryError, LeafMovedError, SessionNotFoundError
from sessiontree.storage.lease import Lease, LeaseRecord, check_fence
from sessiontree.tree import entry_refs

SYNC_POSITION = sync_position_sql("?")
"""Stores a session's newest sync position (``session_id``, ``position``)."""

__all__ = ["INDEX_BACKLOG", "SQLiteAppends", "lease_record", "check_lease"]


def lease_record(conn: sqlite3.Connection, session_id: str) -> LeaseRecord | None:
    """The session's ``leases`` row, ``None`` when it has none."""
    row = conn.execute(
        "SELECT owner, fence, expires_ms FROM leases WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if row is None else LeaseRecord(row[0], row[1], row[2])


def check_lease(conn: sqlite3.Connection, session_id: str, lease: Lease | None) -> None:
    """Inside the caller's write transaction: ``lease`` (when the write is under one) is still
    the session's current lease.

    Raises:
        LeaseLostError: it is not; the caller writes nothing (its transaction rolls back).
    """
    if lease is not None:
        check_fence(lease, lease_record(conn, session_id))


INDEX_BACKLOG = 256
"""An append that leaves this many ``entries`` rows (or more) above the search index watermark
indexes them all before it commits, so the rows a search has to index first stay few."""


class SQLiteAppends:
    """Appending entries to the sessions of one SQLite file (see the module docstring).

    Every method runs on the connection's thread (the engine's methods that call them are
    :func:`~sessiontree.backends.sql.sqlite_open.on_connection_thread`).
    """

    def __init__(self, connection: SQLiteConnection) -> None:
        self.connection = connection
        """The connection of the engine that owns this part."""
        self._leaf_types: dict[str, tuple[str | None, str]] = {}
        """Per session: the leaf this engine's last append left and its type."""
        self.payload_threshold: int | None = PAYLOAD_THRESHOLD
        """Strings of this many bytes or more are stored once, as payloads (``None``: off;
        :mod:`sessiontree.backends.sql.payloads`)."""

    def forget(self, session_id: str) -> None:
        """Drop what the last append to ``session_id`` left known (the session is deleted)."""
        self._leaf_types.pop(session_id, None)

    def append(
        self,
        session_id: str,
        entries: Sequence[Entry],
        *,
        at_leaf: bool,
        bodies: Sequence[bytes] | None = None,
        lease: Lease | None = None,
    ) -> list[Entry]:
        """See :class:`SQLEngine` ``append``: one ``BEGIN IMMEDIATE`` transaction, validation
        (and the lease check) inside it."""
        conn = self.connection.db()
        try:
            try:
                with self.connection.writing(conn):
                    check_lease(conn, session_id, lease)
                    stored = self.append_locked(conn, session_id, entries, at_leaf, bodies, True)
            except sqlite3.IntegrityError:
                # the fast path trusts the UNIQUE constraint for the new id; the full path
                # (rolled back and run again) names the duplicate as check_append does
                self._leaf_types.pop(session_id, None)
                with self.connection.writing(conn):
                    check_lease(conn, session_id, lease)
                    stored = self.append_locked(conn, session_id, entries, at_leaf, bodies)
        except sqlite3.IntegrityError as exc:
            raise DuplicateEntryError(
                f"entry id already used ({exc})", session_id=session_id
            ) from exc
        except sqlite3.Error as exc:
            self._leaf_types.pop(session_id, None)
            raise self.connection.error(exc) from exc
        except BaseException:
            self._leaf_types.pop(session_id, None)
            raise
        return stored

    def append_if_leaf(
        self,
        session_id: str,
        entry: Entry,
        body: bytes,
        expected_id: str | None,
        *,
        at_leaf: bool = True,
        lease: Lease | None = None,
    ) -> Entry:
        """See :class:`SQLEngine` ``append_if_leaf``: the leaf check and the append in one ``BEGIN IMMEDIATE``
        transaction (no other writer can come between them)."""
        conn = self.connection.db()
        try:
            with self.connection.writing(conn):
                check_lease(conn, session_id, lease)
                row = conn.execute(SESSION_ROW, (session_id,)).fetchone()
                if row is None:
                    raise SessionNotFoundError(session_id)
                if row[0] != expected_id:
                    raise LeafMovedError(session_id, expected_id, row[0])
                (stored,) = self.append_locked(conn, session_id, [entry], at_leaf, [body])
        except sqlite3.Error as exc:
            self._leaf_types.pop(session_id, None)
            raise self.connection.error(exc) from exc
        except BaseException:
            self._leaf_types.pop(session_id, None)
            raise
        return stored

    def _known_types(
        self, session_id: str, state: SessionState, entries: Sequence[Entry], at_leaf: bool
    ) -> dict[str, str] | None:
        """The types the planner needs, from this engine's last append, without a query.

        Only for one entry whose only reference is its parent, which is the stored leaf (the
        leaf this engine wrote last: entries never change, so its type is still known). The
        new id's own uniqueness is left to the ``UNIQUE`` constraint.
        """
        known = self._leaf_types.get(session_id)
        if known is None or len(entries) != 1 or known[0] != state.leaf_id:
            return None
        entry = entries[0]
        if not at_leaf and entry.parent_id != state.leaf_id:
            return None
        if any(what != "parentId" for what, _ in entry_refs(entry)):
            return None
        return {} if known[0] is None else {known[0]: known[1]}

    def append_locked(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        entries: Sequence[Entry],
        at_leaf: bool,
        bodies: Sequence[bytes] | None = None,
        fast: bool = False,
        *,
        keep_unknown: bool = False,
    ) -> list[Entry]:
        """Validate and insert ``entries`` inside the caller's write transaction on ``conn``
        (``fast``: plan a single entry under the leaf from what the last append left known;
        ``keep_unknown``: see :func:`~sessiontree.backends.sql.plan.plan_append`); returns
        them as stored.

        Raises:
            SessionNotFoundError: no such session. EntryNotFoundError, InvalidEntryError,
                DuplicateEntryError: an entry is refused.
        """
        row = conn.execute(SESSION_ROW, (session_id,)).fetchone()
        if row is None:
            raise SessionNotFoundError(session_id)
        state = SessionState(row[0], row[1], row[2], bool(row[3]))
        found = self._known_types(session_id, state, entries, at_leaf) if fast else None
        if found is None:
            # the type of every id the entries refer to: one indexed lookup per id, one
            # statement (no OR in the WHERE clause: it would make SQLite scan the session)
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
            codec=self.connection.codec,
        )
        # the leaf after this append and its type, for the next one (remembered before the
        # COMMIT: append() forgets it when the transaction fails)
        leaf = plan.leaf_id
        leaf_type = next((e.type for e in plan.entries if e.id == leaf), None) or found.get(
            leaf or ""
        )
        if leaf is None or leaf_type is not None:
            self._leaf_types[session_id] = (leaf, leaf_type or "")
        else:
            self._leaf_types.pop(session_id, None)
        if not plan.rows:
            return plan.entries
        rows, payloads = split_rows(plan.rows, self.payload_threshold)
        store_payloads(conn, session_id, payloads)
        indexed_upto, top = row[4], row[5] or 0
        index_now = top - indexed_upto + len(rows) >= INDEX_BACKLOG
        if index_now:
            # the backlog left by earlier appends first; this append's rows below, with the
            # text the planner already has
            index_pending(conn, indexed_upto, self.connection.codec)
        if len(rows) == 1:
            r = rows[0]
            cur = conn.execute(
                INSERT_ENTRY,
                (session_id, r.seq, r.id, r.parent_id, r.type, r.timestamp, r.target_id, r.body),
            )
            if index_now:
                if r.text is not None:
                    conn.execute(INSERT_FTS, (cur.lastrowid, r.text))
                conn.execute(ADVANCE_INDEX)
        else:
            conn.executemany(
                INSERT_ENTRY,
                [
                    (session_id, r.seq, r.id, r.parent_id, r.type, r.timestamp, r.target_id, r.body)
                    for r in rows
                ],
            )
            if index_now:
                conn.executemany(
                    "INSERT INTO entries_fts (rowid, text)"
                    " SELECT rowid, ? FROM entries WHERE session_id = ? AND seq = ?",
                    [(r.text, session_id, r.seq) for r in plan.rows if r.text is not None],
                )
                conn.execute(ADVANCE_INDEX)
        conn.execute(
            UPDATE_SESSION,
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
        if plan.position is not None:
            conn.execute(SYNC_POSITION, (session_id, plan.position))
        return plan.entries
