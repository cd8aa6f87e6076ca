"""The PostgreSQL engine: psycopg 3 through a ``psycopg_pool`` connection pool (``sql`` backend).

Drivers, URL, schema check and pool live in :mod:`~sessiontree.storage.sql.postgres_pool`;
this module holds the queries and the append. A single append is two statements and one commit, with no
lock held across a round trip: a snapshot read of the session row *and* the types of every id
the entry refers to (one query), the core validation in Python, then one statement that updates
the session row only if its ``entry_count`` is still the one read (compare-and-set) and inserts
the entry in the same statement. If another process appended in between, nothing is written and
the append is re-validated and retried, so appenders from many machines lose nothing and never
hang an entry under a leaf that moved. Large batches (imports, forks) take the session row lock
(``SELECT … FOR UPDATE``) in one transaction instead and insert in chunks.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Any

from sessiontree.entries import Entry
from sessiontree.errors import (
    DuplicateEntryError,
    SessionExistsError,
    SessionNotFoundError,
    StorageError,
)
from sessiontree.metadata import SearchHit, SessionInfo, SessionMetadata
from sessiontree.storage.base import EntryCursor
from sessiontree.storage.sql.plan import (
    LIST_COLUMNS,
    AppendPlan,
    SessionState,
    fold_diacritics,
    hit_from_row,
    info_from_row,
    lookup_ids,
    meta_rows,
    now_us,
    plan_append,
    search_terms,
    where_clause,
)
from sessiontree.storage.sql.postgres_pool import PostgresConnection, import_drivers
from sessiontree.tree import entry_refs

__all__ = ["PostgresEngine", "import_drivers"]

CAS_CHUNK = 1000
"""Batches up to this many entries are one compare-and-set statement; larger ones lock."""
MAX_ATTEMPTS = 200
"""Compare-and-set retries before an append gives up (StorageError)."""

_LOOKUP_SQL = """
SELECT s.leaf_id, s.entry_count, s.message_count, s.first_message IS NOT NULL,
       (SELECT json_object_agg(e.id, e.type) FROM entries AS e
         WHERE e.session_id = s.id AND e.id = ANY(array_append(%(ids)s::text[], s.leaf_id)))
  FROM sessions AS s WHERE s.id = %(sid)s
"""

# arrays go in binary (``%b``): the text format escapes every quote of the JSON bodies in Python
_ROWS = (
    "FROM unnest(%(seq)b::bigint[], %(id)b::text[], %(parent)b::text[], %(type)b::text[],"
    " %(ts)b::text[], %(target)b::text[], %(body)b::text[], %(text)b::text[])"
    " AS r (seq, id, parent_id, type, ts, target_id, body, text)"
)
_INSERT_COLUMNS = (
    "INSERT INTO entries (session_id, seq, id, parent_id, type, timestamp, target_id, body, fts)"
)
_ROW_VALUES = (
    "r.seq, r.id, r.parent_id, r.type, r.ts, r.target_id, r.body::json,"
    " to_tsvector('simple', r.text)"
)
_UPDATE_SET = (
    "UPDATE sessions SET leaf_id = %(leaf)s, entry_count = %(count)s, message_count = %(msgs)s,"
    " modified_us = %(now)s, first_message = COALESCE(first_message, %(first)s),"
    " name = COALESCE(%(name)s, name)"
)
# the session row as the plan read it: same count AND same leaf. The count alone passed when
# another process deleted the session and made it again with as many entries (found in
# review: the entry went under a parent of the old session, which no longer existed)
_UNCHANGED = (
    "id = %(sid)s AND entry_count = %(old)s AND leaf_id IS NOT DISTINCT FROM %(old_leaf)s::text"
)
_CAS_SQL = (
    f"WITH upd AS ({_UPDATE_SET} WHERE {_UNCHANGED} RETURNING id)"
    f" {_INSERT_COLUMNS} SELECT upd.id, {_ROW_VALUES} FROM upd, ({'SELECT * ' + _ROWS}) AS r"
)
# one row (every append an agent loop makes): scalar parameters; psycopg's per-element array
# dumping was a fifth of the append's time for a one-element array
_CAS_ONE_SQL = (
    f"WITH upd AS ({_UPDATE_SET} WHERE {_UNCHANGED} RETURNING id)"
    f" {_INSERT_COLUMNS} SELECT upd.id, %(seq)s::bigint, %(id)s::text, %(parent)s::text,"
    " %(type)s::text, %(ts)s::text, %(target)s::text, %(body)s::json,"
    " to_tsvector('simple', %(text)s::text) FROM upd"
)
_INSERT_SQL = f"{_INSERT_COLUMNS} SELECT %(sid)s, {_ROW_VALUES} {_ROWS}"
# a fork's copied rows, in the fork's order, with their tsvector as it is
_COPY_ROWS_SQL = (
    f"{_INSERT_COLUMNS} SELECT %(sid)s, c.seq, e.id, e.parent_id, e.type, e.timestamp,"
    " e.target_id, e.body, e.fts FROM unnest(%(id)s::text[], %(seq)s::bigint[]) AS c (id, seq)"
    " JOIN entries AS e ON e.session_id = %(src)s AND e.id = c.id"
)
_UPDATE_SQL = f"{_UPDATE_SET} WHERE id = %(sid)s"

_CHAIN_TEMPLATE = """
WITH RECURSIVE chain (id, parent_id, type, body, depth) AS (
    SELECT id, parent_id, type, body, 0 FROM entries
     WHERE session_id = %(sid)s
       AND id = COALESCE(%(leaf)s::text, (SELECT leaf_id FROM sessions WHERE id = %(sid)s))
    UNION ALL
    SELECT e.id, e.parent_id, e.type, e.body, c.depth + 1
      FROM chain AS c JOIN entries AS e ON e.session_id = %(sid)s AND e.id = c.parent_id
     WHERE c.depth < (SELECT entry_count FROM sessions WHERE id = %(sid)s)
{until})
SELECT id, parent_id, type, body::text, depth FROM chain
"""
_CHAIN_SQL = _CHAIN_TEMPLATE.format(until="")
# the same walk, also ending after a row of type stype or with id stop (either may be
# NULL: no such end)
_CHAIN_UNTIL_SQL = _CHAIN_TEMPLATE.format(
    until="       AND (%(stype)s::text IS NULL OR c.type <> %(stype)s::text)\n"
    "       AND (%(stop)s::text IS NULL OR c.id <> %(stop)s::text)\n"
)


def _clean(text: str | None) -> str | None:
    """PostgreSQL ``text`` cannot hold NUL: derived columns get U+FFFD instead."""
    return text if text is None or "\x00" not in text else text.replace("\x00", "\ufffd")


META_MAX_BYTES = 1000
"""``session_meta`` keys and values longer than this (UTF-8) are stored as their SHA-256: a
B-tree index row holds at most about 2,700 bytes, and a long ``systemPrompt`` is common."""


def _meta_text(text: str) -> str:
    """A ``session_meta`` key or value as stored and looked up: NUL-free, and at most
    :data:`META_MAX_BYTES` long or else ``sha256:<hex>`` of its UTF-8 (no JSON text, which
    the values are, starts with ``s``). Written with the row and applied to every ``where``."""
    cleaned = _clean(text) or ""
    data = cleaned.encode()
    return cleaned if len(data) <= META_MAX_BYTES else "sha256:" + hashlib.sha256(data).hexdigest()


async def _insert_session(conn: Any, session_id: str, metadata: SessionMetadata, now: int) -> None:
    """The new session's row and its metadata lookup rows (inside the caller's transaction)."""
    await conn.execute(
        "INSERT INTO sessions (id, metadata, created_us, modified_us,"
        " parent_session_id) VALUES (%s, %s::json, %s, %s, %s)",
        (
            session_id,
            metadata.model_dump_json(by_alias=True, exclude_unset=True),
            now,
            now,
            _clean(metadata.parent_session_id),
        ),
    )
    rows = meta_rows(session_id, metadata)
    if rows:
        async with conn.cursor() as cur:
            await cur.executemany(
                "INSERT INTO session_meta (key, value, session_id) VALUES (%s, %s, %s)",
                [(_meta_text(k), _meta_text(v), sid) for k, v, sid in rows],
            )


class PostgresEngine(PostgresConnection):
    """The :class:`~sessiontree.storage.sql.plan.SQLEngine` over one PostgreSQL database.

    The pool opens on first use (after a direct connection has checked and migrated the schema).

    Raises (constructor):
        MissingExtraError: psycopg or psycopg_pool is not installed.
        StorageError: a malformed URL.
    """

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self._known: dict[str, tuple[SessionState, dict[str, str]]] = {}

    # ------------------------------------------------------------------ sessions

    async def create_session(
        self, session_id: str, metadata: SessionMetadata, *, created_us: int | None = None
    ) -> None:
        """See :class:`SQLEngine`."""
        now = now_us() if created_us is None else created_us
        pool = self._pool or await self._get_pool()
        try:
            async with pool.connection() as conn, conn.transaction():
                await _insert_session(conn, session_id, metadata, now)
        except self._psycopg.Error as exc:
            error = self._error(exc, session_id)
            if isinstance(error, DuplicateEntryError):
                raise SessionExistsError(
                    "a session with this id already exists", session_id=session_id
                ) from exc
            raise error from exc

    async def fork_session(
        self,
        source_id: str,
        session_id: str,
        metadata: SessionMetadata,
        entries: Sequence[Entry],
        bodies: Sequence[bytes | None],
    ) -> None:
        """See :class:`SQLEngine`: one transaction; copied rows by ``INSERT … SELECT``."""
        pool = self._pool or await self._get_pool()
        now = now_us()
        try:
            async with pool.connection() as conn, conn.transaction():
                await _insert_session(conn, session_id, metadata, now)
                empty = SessionState(None, 0, 0, False)
                plan = plan_append(
                    session_id, empty, entries, {}, at_leaf=False, bodies=[b or b"" for b in bodies]
                )
                rows = list(zip(plan.rows, bodies, strict=True))
                copied = [r for r, b in rows if b is None]
                if copied:
                    cur = await conn.execute(
                        _COPY_ROWS_SQL,
                        {
                            "sid": session_id,
                            "src": source_id,
                            "id": [r.id for r in copied],
                            "seq": [r.seq for r in copied],
                        },
                    )
                    if cur.rowcount != len(copied):
                        raise SessionNotFoundError(source_id, "session was deleted during the fork")
                written = [r for r, b in rows if b is not None]
                for start in range(0, len(written), CAS_CHUNK):
                    chunk = written[start : start + CAS_CHUNK]
                    await conn.execute(_INSERT_SQL, self._params(session_id, plan, chunk))
                await conn.execute(_UPDATE_SQL, self._params(session_id, plan, ()))
        except self._psycopg.errors.UniqueViolation as exc:
            raise SessionExistsError(
                "a session with this id already exists", session_id=session_id
            ) from exc
        except self._psycopg.Error as exc:
            raise self._error(exc, session_id) from exc

    async def set_modified(self, session_id: str, modified_us: int) -> bool:
        """See :class:`SQLEngine`."""
        found = await self._execute(
            "UPDATE sessions SET modified_us = %s WHERE id = %s",
            (modified_us, session_id),
            session_id,
        )
        return found > 0

    async def load_metadata(self, session_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = await self._fetch(
            "SELECT metadata::text FROM sessions WHERE id = %s", (session_id,), session_id
        )
        return rows[0][0] if rows else None

    async def session_leaf(self, session_id: str) -> tuple[bool, str | None]:
        """See :class:`SQLEngine`."""
        rows = await self._fetch(
            "SELECT leaf_id FROM sessions WHERE id = %s", (session_id,), session_id
        )
        return (True, rows[0][0]) if rows else (False, None)

    async def delete_session(self, session_id: str) -> bool:
        """See :class:`SQLEngine`: entries and their search vectors go by ``ON DELETE CASCADE``."""
        self._known.pop(session_id, None)
        found = await self._execute("DELETE FROM sessions WHERE id = %s", (session_id,), session_id)
        return found > 0

    async def list_sessions(
        self, limit: int | None, offset: int, where: Mapping[str, str]
    ) -> list[SessionInfo]:
        """See :class:`SQLEngine`."""
        columns = LIST_COLUMNS.replace("metadata", "metadata::text")
        condition, params = where_clause(
            {_meta_text(k): _meta_text(v) for k, v in where.items()}, "%s"
        )
        rows = await self._fetch(
            f"SELECT {columns} FROM sessions{condition} ORDER BY modified_us DESC, id DESC"
            " LIMIT %s OFFSET %s",
            (*params, None if limit is None else max(limit, 0), max(offset, 0)),
        )
        return [info_from_row(r) for r in rows]

    async def search(self, query: str, limit: int) -> list[SearchHit]:
        """See :class:`SQLEngine`: ``tsvector @@ tsquery`` (every word as a prefix), by ``ts_rank``."""
        terms = search_terms(fold_diacritics(query))
        if not terms or limit <= 0:
            return []
        tsquery = " & ".join(f"{t}:*" for t in terms)
        rows = await self._fetch(
            "SELECT e.session_id, e.id, e.body::text FROM entries AS e,"
            " to_tsquery('simple', %s) AS q WHERE e.fts IS NOT NULL AND e.fts @@ q"
            " ORDER BY ts_rank(e.fts, q) DESC, e.session_id, e.seq LIMIT %s",
            (tsquery, limit),
        )
        return [hit_from_row(sid, eid, body, query) for sid, eid, body in rows]

    # ------------------------------------------------------------------ entries

    async def get_entry(self, session_id: str, entry_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = await self._fetch(
            "SELECT body::text FROM entries WHERE session_id = %s AND id = %s",
            (session_id, entry_id),
            session_id,
        )
        return rows[0][0] if rows else None

    async def entry_seq(self, session_id: str, entry_id: str) -> int | None:
        """See :class:`SQLEngine`."""
        rows = await self._fetch(
            "SELECT seq FROM entries WHERE session_id = %s AND id = %s",
            (session_id, entry_id),
            session_id,
        )
        return int(rows[0][0]) if rows else None

    async def get_entries(
        self, session_id: str, cursor: EntryCursor, after_seq: int | None
    ) -> list[tuple[str, str]]:
        """See :class:`SQLEngine`."""
        sql = ["SELECT id, body::text FROM entries WHERE session_id = %s"]
        params: list[Any] = [session_id]
        if after_seq is not None:
            sql.append("AND seq < %s" if cursor.reverse else "AND seq > %s")
            params.append(after_seq)
        if cursor.types is not None:
            sql.append("AND type = ANY(%s::text[])")
            params.append(sorted(cursor.types))
        sql.append("ORDER BY seq DESC" if cursor.reverse else "ORDER BY seq")
        if cursor.limit is not None:
            sql.append("LIMIT %s")
            params.append(max(cursor.limit, 0))
        return await self._fetch(" ".join(sql), params, session_id)

    async def get_chain(
        self, session_id: str, leaf_id: str | None
    ) -> list[tuple[str, str | None, str, str, int]]:
        """See :class:`SQLEngine` (no ORDER BY: a sort would spill the bodies to disk)."""
        return await self._fetch(_CHAIN_SQL, {"sid": session_id, "leaf": leaf_id}, session_id)

    async def get_chain_until(
        self, session_id: str, leaf_id: str | None, stop_type: str | None, stop_id: str | None
    ) -> list[tuple[str, str | None, str, str, int]]:
        """See :class:`SQLEngine`."""
        params = {"sid": session_id, "leaf": leaf_id, "stype": stop_type, "stop": stop_id}
        return await self._fetch(_CHAIN_UNTIL_SQL, params, session_id)

    async def get_label_body(self, session_id: str, entry_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = await self._fetch(
            "SELECT body::text FROM entries WHERE session_id = %s AND type = 'label'"
            " AND target_id = %s ORDER BY seq DESC LIMIT 1",
            (session_id, entry_id),
            session_id,
        )
        return rows[0][0] if rows else None

    async def get_name_body(self, session_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = await self._fetch(
            "SELECT body::text FROM entries WHERE session_id = %s AND type = 'session_info'"
            " ORDER BY seq DESC LIMIT 1",
            (session_id,),
            session_id,
        )
        return rows[0][0] if rows else None

    @staticmethod
    def _session_params(session_id: str, plan: AppendPlan) -> dict[str, Any]:
        """The ``sessions`` row values after ``plan`` (the ``_UPDATE_SET`` parameters)."""
        return {
            "sid": session_id,
            "leaf": plan.leaf_id,
            "count": plan.entry_count,
            "msgs": plan.message_count,
            "now": now_us(),
            "first": _clean(plan.first_message),
            "name": _clean(plan.name),
        }

    @classmethod
    def _params(cls, session_id: str, plan: AppendPlan, rows: Sequence[Any]) -> dict[str, Any]:
        return cls._session_params(session_id, plan) | {
            "seq": [r.seq for r in rows],
            "id": [r.id for r in rows],
            "parent": [r.parent_id for r in rows],
            "type": [r.type for r in rows],
            "ts": [r.timestamp for r in rows],
            "target": [r.target_id for r in rows],
            "body": [r.body for r in rows],
            "text": [None if r.text is None else _clean(fold_diacritics(r.text)) for r in rows],
        }

    def _cas(
        self, session_id: str, plan: AppendPlan, old: SessionState
    ) -> tuple[str, dict[str, Any]]:
        """The compare-and-set statement and its parameters (scalars for one row)."""
        unchanged = {"old": old.entry_count, "old_leaf": old.leaf_id}
        if len(plan.rows) != 1:
            return _CAS_SQL, self._params(session_id, plan, plan.rows) | unchanged
        r = plan.rows[0]
        return _CAS_ONE_SQL, self._session_params(session_id, plan) | unchanged | {
            "seq": r.seq,
            "id": r.id,
            "parent": r.parent_id,
            "type": r.type,
            "ts": r.timestamp,
            "target": r.target_id,
            "body": r.body,
            "text": None if r.text is None else _clean(fold_diacritics(r.text)),
        }

    async def append(
        self,
        session_id: str,
        entries: Sequence[Entry],
        *,
        at_leaf: bool,
        bodies: Sequence[bytes] | None = None,
    ) -> list[Entry]:
        """See :class:`SQLEngine`: compare-and-set (retried), or a locked transaction for big batches.

        Fast path: when this engine made the session's last append, it still knows the session
        row and the type of its leaf; an entry that refers to nothing else is validated against
        that (the same :func:`plan_append`) and written in one round trip. The compare-and-set
        proves nothing changed in between; if something did, the full path runs.
        """
        pool = self._pool or await self._get_pool()
        try:
            if len(entries) > CAS_CHUNK:
                self._known.pop(session_id, None)
                return await self._append_locked(pool, session_id, entries, at_leaf, bodies)
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
                except self._psycopg.errors.UniqueViolation:
                    pass  # a duplicate id: the full path below names it precisely
                self._known.pop(session_id, None)
            for attempt in range(MAX_ATTEMPTS):
                async with pool.connection() as conn:
                    cur = await conn.execute(
                        _LOOKUP_SQL, {"sid": session_id, "ids": lookup_ids(entries)}
                    )
                    row = await cur.fetchone()
                    if row is None:
                        raise SessionNotFoundError(session_id)
                    state = SessionState(row[0], row[1], row[2], row[3])
                    known = row[4] or {}
                    plan = plan_append(
                        session_id, state, entries, known, at_leaf=at_leaf, bodies=bodies
                    )
                    sql, params = self._cas(session_id, plan, state)
                    cur = await conn.execute(sql, params)
                    if cur.rowcount == len(plan.rows):
                        self._learn(session_id, state, known, plan)
                        return plan.entries
                # another writer appended since the read: re-validate against the new state
                await asyncio.sleep(random.uniform(0, 0.0005 * min(attempt + 1, 20)))
        except self._psycopg.Error as exc:
            raise self._error(exc, session_id) from exc
        raise StorageError(
            f"{self._where}: gave up appending to session {session_id!r} after {MAX_ATTEMPTS}"
            " attempts: too many concurrent writers"
        )

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
        plan = plan_append(session_id, state, entries, types, at_leaf=at_leaf, bodies=bodies)
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
    ) -> list[Entry]:
        async with pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                "SELECT leaf_id, entry_count, message_count, first_message IS NOT NULL"
                " FROM sessions WHERE id = %s FOR UPDATE",
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
            plan = plan_append(session_id, state, entries, known, at_leaf=at_leaf, bodies=bodies)
            for start in range(0, len(plan.rows), CAS_CHUNK):
                chunk = plan.rows[start : start + CAS_CHUNK]
                await conn.execute(_INSERT_SQL, self._params(session_id, plan, chunk))
            await conn.execute(_UPDATE_SQL, self._params(session_id, plan, ()))
        return plan.entries
