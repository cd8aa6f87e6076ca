"""The PostgreSQL append: the part of :class:`~sessiontree.backends.sql.postgres.PostgresEngine`
that writes entries (:class:`PostgresAppends`, owned by the engine, over its connection).

A single append is two statements and one commit, with no lock held across a round trip: a
snapshot read of the session row *and* the types of every id the entry refers to (one query),
the core validation in Python, then one statement that updates the session row only if its
``entry_count`` (and leaf) are still the ones read (compare-and-set) and inserts the entry in
the same statement. If another process appended in between, nothing is written and the append
is re-validated and retried, so appenders from many machines lose nothing and never hang an
entry under a leaf that moved. Large batches (imports, forks) take the session row lock
(``SELECT … FOR UPDATE``) in one transaction instead and insert in chunks.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

from sessiontree.backends.sql.fork import ForkPlan
from sessiontree.backends.sql.payloads import PAYLOAD_THRESHOLD, may_split, split_rows
from sessiontree.backends.sql.plan import (
    AppendPlan,
    SessionState,
    lookup_ids,
    now_us,
    plan_append,
    sync_position_sql,
)
from sessiontree.backends.sql.postgres_payloads import store_payloads
from sessiontree.backends.sql.postgres_pool import PostgresConnection, clean_text
from sessiontree.backends.sql.postgres_sql import (
    CAS_ONE_SQL,
    CAS_SQL,
    INSERT_SQL,
    LOOKUP_SQL,
    UPDATE_SQL,
)
from sessiontree.entries import Entry
from sessiontree.errors import LeafMovedError, SessionNotFoundError, StorageError
from sessiontree.storage.lease import Lease, LeaseRecord, check_fence
from sessiontree.storage.sync_index import newest_position
from sessiontree.tree import entry_refs

__all__ = [
    "CAS_CHUNK",
    "MAX_ATTEMPTS",
    "PostgresAppends",
    "check_lease",
    "lease_record",
    "row_params",
    "session_params",
]

SYNC_POSITION_SQL = sync_position_sql("%s")
"""Stores a session's newest sync position (``session_id``, ``position``)."""

CAS_CHUNK = 1000
"""Batches up to this many entries are one compare-and-set statement; larger ones lock."""
MAX_ATTEMPTS = 200
"""Compare-and-set retries before an append gives up (StorageError)."""

_clean = clean_text


async def lease_record(conn: Any, session_id: str, *, lock: str = "") -> LeaseRecord | None:
    """The session's ``leases`` row (``lock``: ``FOR SHARE`` / ``FOR UPDATE``, held to the end
    of the caller's transaction), ``None`` when it has none."""
    cur = await conn.execute(
        f"SELECT owner, fence, expires_ms FROM leases WHERE session_id = %s {lock}",
        (session_id,),
    )
    row = await cur.fetchone()
    return None if row is None else LeaseRecord(row[0], row[1], row[2])


async def check_lease(conn: Any, session_id: str, lease: Lease | None) -> None:
    """Inside the caller's transaction: ``lease`` (when the write is under one) is still the
    session's current lease. The row is read ``FOR SHARE``, so a takeover (which updates it)
    waits for the caller's commit, and the caller waits for a takeover's.

    Raises:
        LeaseLostError: it is not; the caller writes nothing (its transaction rolls back).
    """
    if lease is not None:
        check_fence(lease, await lease_record(conn, session_id, lock="FOR SHARE"))


def session_params(session_id: str, plan: AppendPlan | ForkPlan) -> dict[str, Any]:
    """The ``sessions`` row values after ``plan`` (the ``UPDATE_SET`` parameters)."""
    return {
        "sid": session_id,
        "leaf": plan.leaf_id,
        "count": plan.entry_count,
        "msgs": plan.message_count,
        "now": now_us(),
        "first": _clean(plan.first_message),
        "name": _clean(plan.name),
    }


def row_params(session_id: str, plan: AppendPlan | ForkPlan, rows: Sequence[Any]) -> dict[str, Any]:
    """:func:`session_params` and the ``entries`` columns of ``rows`` as arrays (the
    parameters of the insert and compare-and-set statements)."""
    return session_params(session_id, plan) | {
        "seq": [r.seq for r in rows],
        "id": [r.id for r in rows],
        "parent": [r.parent_id for r in rows],
        "type": [r.type for r in rows],
        "ts": [r.timestamp for r in rows],
        "target": [r.target_id for r in rows],
        "body": [r.body for r in rows],
        "text": [_clean(r.text) for r in rows],
    }


class PostgresAppends:
    """Appending entries to the sessions of one PostgreSQL database (see the module
    docstring), over the connection of the engine that owns it."""

    def __init__(self, connection: PostgresConnection) -> None:
        self.connection = connection
        """The connection (pool) of the engine that owns this part."""
        self.payload_threshold: int | None = PAYLOAD_THRESHOLD
        """Strings of this many bytes or more are stored once, as payloads (``None``: off;
        :mod:`sessiontree.backends.sql.payloads`)."""
        self._known: dict[str, tuple[SessionState, dict[str, str]]] = {}
        """Per session this engine appended to last: the session row after that append and
        the type of its leaf (the fast path's knowledge; dropped when anything differs)."""

    def forget(self, session_id: str) -> None:
        """Drop what the last append to ``session_id`` left known (a write that bypasses the
        fast path, or the session deleted)."""
        self._known.pop(session_id, None)

    def _cas(
        self, session_id: str, plan: AppendPlan, old: SessionState
    ) -> tuple[str, dict[str, Any]]:
        """The compare-and-set statement and its parameters (scalars for one row)."""
        unchanged = {"old": old.entry_count, "old_leaf": old.leaf_id}
        if len(plan.rows) != 1:
            return CAS_SQL, row_params(session_id, plan, plan.rows) | unchanged
        r = plan.rows[0]
        return CAS_ONE_SQL, session_params(session_id, plan) | unchanged | {
            "seq": r.seq,
            "id": r.id,
            "parent": r.parent_id,
            "type": r.type,
            "ts": r.timestamp,
            "target": r.target_id,
            "body": r.body,
            "text": _clean(r.text),
        }

    async def append(
        self,
        session_id: str,
        entries: Sequence[Entry],
        *,
        at_leaf: bool,
        bodies: Sequence[bytes] | None = None,
        lease: Lease | None = None,
    ) -> list[Entry]:
        """See :class:`SQLEngine`: compare-and-set (retried), or a locked transaction for big
        batches and for an append under a lease (checked in that transaction).

        Fast path: when this engine made the session's last append, it still knows the session
        row and the type of its leaf; an entry that refers to nothing else is validated against
        that (the same :func:`plan_append`) and written in one round trip. The compare-and-set
        proves nothing changed in between; if something did, the full path runs.
        """
        self.connection.writable(session_id)
        pool = self.connection.pool or await self.connection.get_pool()
        try:
            if (
                lease is not None
                or len(entries) > CAS_CHUNK
                or newest_position(entries) is not None
                or may_split(bodies, self.payload_threshold)
            ):
                # big batches, a sync position with its entries (its sync_positions row goes
                # in the same transaction), entries with large payloads (stored with their
                # references in the same transaction) and an append under a lease (its
                # leases row read in it): one locked transaction
                self._known.pop(session_id, None)
                return await self._append_locked(pool, session_id, entries, at_leaf, bodies, lease)
            fast = self._fast_plan(session_id, entries, at_leaf, bodies)
            if fast is not None:
                state, types, plan = fast
                sql, params = self._cas(session_id, plan, state)
                try:
                    async with pool.connection() as conn:
                        cur = await conn.execute(sql, params)
                        if cur.rowcount == len(plan.rows):
                            self._learn(session_id, state, types, plan)
                            return plan.entries
                except self.connection.psycopg.errors.UniqueViolation:
                    pass  # a duplicate id: the full path below names it precisely
                self._known.pop(session_id, None)
            for attempt in range(MAX_ATTEMPTS):
                async with pool.connection() as conn:
                    cur = await conn.execute(
                        LOOKUP_SQL, {"sid": session_id, "ids": lookup_ids(entries)}
                    )
                    row = await cur.fetchone()
                    if row is None:
                        raise SessionNotFoundError(session_id)
                    state = SessionState(row[0], row[1], row[2], row[3])
                    known = row[4] or {}
                    plan = plan_append(
                        session_id,
                        state,
                        entries,
                        known,
                        at_leaf=at_leaf,
                        bodies=bodies,
                        codec=self.connection.codec,
                    )
                    sql, params = self._cas(session_id, plan, state)
                    cur = await conn.execute(sql, params)
                    if cur.rowcount == len(plan.rows):
                        self._learn(session_id, state, known, plan)
                        return plan.entries
                # another writer appended since the read: re-validate against the new state
                await asyncio.sleep(random.uniform(0, 0.0005 * min(attempt + 1, 20)))
        except self.connection.psycopg.Error as exc:
            raise self.connection.error(exc, session_id) from exc
        raise StorageError(
            f"{self.connection.where}: gave up appending to session {session_id!r} after {MAX_ATTEMPTS}"
            " attempts: too many concurrent writers"
        )

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
        """See :class:`SQLEngine`: one transaction holding the session row lock (which the
        compare-and-set appends of other writers wait for) from the leaf check to the
        commit."""
        self.connection.writable(session_id)
        pool = self.connection.pool or await self.connection.get_pool()
        self._known.pop(session_id, None)
        try:
            async with pool.connection() as conn, conn.transaction():
                await check_lease(conn, session_id, lease)
                cur = await conn.execute(
                    "SELECT leaf_id FROM sessions WHERE id = %s FOR UPDATE", (session_id,)
                )
                row = await cur.fetchone()
                if row is None:
                    raise SessionNotFoundError(session_id)
                if row[0] != expected_id:
                    raise LeafMovedError(session_id, expected_id, row[0])
                (stored,) = await self.append_in(conn, session_id, [entry], at_leaf, [body])
        except self.connection.psycopg.Error as exc:
            raise self.connection.error(exc, session_id) from exc
        return stored

    def _fast_plan(
        self,
        session_id: str,
        entries: Sequence[Entry],
        at_leaf: bool,
        bodies: Sequence[bytes] | None,
    ) -> tuple[SessionState, dict[str, str], AppendPlan] | None:
        """Plan a single append from what this engine last wrote, if the entry needs no more."""
        known = self._known.get(session_id)
        if known is None or len(entries) != 1:
            return None
        state, types = known
        entry = entries[0]
        parent = state.leaf_id if at_leaf else entry.parent_id
        refs = [ref for what, ref in entry_refs(entry) if what != "parentId"]
        if parent is not None:
            refs.append(parent)
        if any(ref not in types for ref in refs) or entry.id in types:
            return None
        plan = plan_append(
            session_id,
            state,
            entries,
            types,
            at_leaf=at_leaf,
            bodies=bodies,
            codec=self.connection.codec,
        )
        return state, types, plan

    def _learn(
        self, session_id: str, state: SessionState, types: dict[str, str], plan: AppendPlan
    ) -> None:
        """Remember the session row and the leaf's type after a successful append."""
        if len(self._known) >= 1024:
            self._known.clear()
        leaf = plan.leaf_id
        leaf_type = next((e.type for e in plan.entries if e.id == leaf), None) or types.get(
            leaf or ""
        )
        if leaf is not None and leaf_type is None:
            self._known.pop(session_id, None)
            return
        new_state = SessionState(
            leaf,
            plan.entry_count,
            plan.message_count,
            state.has_first_message or plan.first_message is not None,
        )
        self._known[session_id] = (new_state, {} if leaf is None else {leaf: leaf_type or ""})

    async def _append_locked(
        self,
        pool: Any,
        session_id: str,
        entries: Sequence[Entry],
        at_leaf: bool,
        bodies: Sequence[bytes] | None = None,
        lease: Lease | None = None,
    ) -> list[Entry]:
        async with pool.connection() as conn, conn.transaction():
            await check_lease(conn, session_id, lease)
            return await self.append_in(conn, session_id, entries, at_leaf, bodies)

    async def append_in(
        self,
        conn: Any,
        session_id: str,
        entries: Sequence[Entry],
        at_leaf: bool,
        bodies: Sequence[bytes] | None = None,
        *,
        lock: bool = True,
        keep_unknown: bool = False,
    ) -> list[Entry]:
        """Validate and insert ``entries`` inside the caller's transaction on ``conn``
        (``lock``: take the session row lock first; a session made in this transaction
        needs none; ``keep_unknown``: see :func:`plan_append`)."""
        cur = await conn.execute(
            "SELECT leaf_id, entry_count, message_count, first_message IS NOT NULL"
            " FROM sessions WHERE id = %s" + (" FOR UPDATE" if lock else ""),
            (session_id,),
        )
        row = await cur.fetchone()
        if row is None:
            raise SessionNotFoundError(session_id)
        state = SessionState(row[0], row[1], row[2], row[3])
        ids = lookup_ids(entries, state.leaf_id if at_leaf else None)
        cur = await conn.execute(
            "SELECT id, type FROM entries WHERE session_id = %s AND id = ANY(%s::text[])",
            (session_id, ids),
        )
        known = {r[0]: r[1] for r in await cur.fetchall()}
        plan = plan_append(
            session_id,
            state,
            entries,
            known,
            at_leaf=at_leaf,
            bodies=bodies,
            keep_unknown=keep_unknown,
            codec=self.connection.codec,
        )
        rows, payloads = split_rows(plan.rows, self.payload_threshold)
        await store_payloads(conn, session_id, payloads)
        for start in range(0, len(rows), CAS_CHUNK):
            chunk = rows[start : start + CAS_CHUNK]
            await conn.execute(INSERT_SQL, row_params(session_id, plan, chunk))
        await conn.execute(UPDATE_SQL, row_params(session_id, plan, ()))
        if plan.position is not None:
            await conn.execute(SYNC_POSITION_SQL, (session_id, plan.position))
        return plan.entries
