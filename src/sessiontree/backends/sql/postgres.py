"""The PostgreSQL engine: psycopg 3 through a ``psycopg_pool`` connection pool (``sql`` backend).

:class:`PostgresEngine` is one class composed of two parts it owns: its connection
(:class:`~sessiontree.backends.sql.postgres_pool.PostgresConnection`: drivers, URL, schema
check and migration, the pool, error translation) and its appends
(:class:`~sessiontree.backends.sql.postgres_append.PostgresAppends`: validating and writing
entries, and what the last append left known). The statements are
:mod:`~sessiontree.backends.sql.postgres_sql`; this module holds the session rows, the reads,
search and fork.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from sessiontree.backends.sql.fork import ChainRow, ForkPlan, chain_in_window, copy_runs
from sessiontree.backends.sql.payloads import (
    ENTRIES_WITH_PAYLOADS_SQL,
    HEAD,
    LARGEST_SQL,
    MOVE_REFS_SQL,
    REFERRED_BYTES_SQL,
    SESSION_SIZES_SQL,
    USAGE_SQL,
    expand_all_async,
    largest_entries,
    owner_in_trash,
    split_rows,
)
from sessiontree.backends.sql.plan import (
    INSERT_TRASH_SQL,
    LIST_COLUMNS,
    LIST_TRASH_SQL,
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
from sessiontree.backends.sql.postgres_append import (
    PostgresAppends,
    check_lease,
    lease_record,
    row_params,
)
from sessiontree.backends.sql.postgres_payloads import (
    copy_refs,
    fetch_payloads,
    release_payloads,
    store_payloads,
)
from sessiontree.backends.sql.postgres_pool import PostgresConnection, clean_text, import_drivers
from sessiontree.backends.sql.postgres_search import (
    SEARCH_SQL,
    catch_up,
    like_pattern,
    pending_hits,
    scoped_search_sql,
)
from sessiontree.backends.sql.postgres_sql import (
    CHAIN_SQL,
    CHAIN_UNTIL_SQL,
    FORK_CHAIN_SQL,
    FORK_WINDOW_META_SQL,
    FORK_WINDOW_SQL,
    fork_sql,
)
from sessiontree.backends.sql.rekey import RekeyTable, rekey_sql, scan_params
from sessiontree.entries import Entry
from sessiontree.errors import (
    DuplicateEntryError,
    SessionExistsError,
    SessionNotFoundError,
)
from sessiontree.metadata import SearchHit, SessionInfo, SessionMetadata
from sessiontree.storage.base import EntryCursor
from sessiontree.storage.lease import Lease, LeaseRecord, grant, release, renew
from sessiontree.storage.search import search_needle

__all__ = ["PostgresEngine", "import_drivers"]

_LENGTH = "octet_length(body::text)"
"""The UTF-8 bytes of an ``entries.body``."""
_PAYLOAD_SIZES = "SELECT hash, size FROM payloads"

_clean = clean_text


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


_PUT_LEASE = lease_upsert_sql("%s")
"""Stores a session's lease record (``session_id``, ``owner``, ``fence``, ``expires_ms``)."""
_DELETE_DRAFT = "DELETE FROM drafts WHERE session_id = %s"
_PUT_DRAFT = (
    "INSERT INTO drafts (session_id, body, updated_ms)"
    " SELECT id, %s, %s FROM sessions WHERE id = %s"
    " ON CONFLICT (session_id) DO UPDATE"
    " SET body = excluded.body, updated_ms = excluded.updated_ms"
)
"""Upserts a session's draft (``body``, ``updated_ms``, ``session_id``) if the session exists."""

_SESSION_TABLES = ("entries", "sync_positions", "drafts", "payload_refs", "leases")
"""The tables holding rows of a session besides ``sessions`` (``session_meta`` goes with
the session row). ``payload_refs`` goes last, by :func:`release_payloads`, which also frees
the payloads no other session refers to."""


async def _delete_session_rows(conn: Any, session_id: str) -> None:
    """Delete a session's rows from :data:`_SESSION_TABLES`, in the caller's transaction."""
    for table in _SESSION_TABLES:
        if table == "payload_refs":
            await release_payloads(conn, session_id)
        else:
            await conn.execute(f"DELETE FROM {table} WHERE session_id = %s", (session_id,))


class PostgresEngine:
    """The :class:`~sessiontree.backends.sql.plan.SQLEngine` over one PostgreSQL database.

    The pool opens on first use (after a direct connection has checked and migrated the schema).

    Args:
        url: a ``postgresql:`` (or ``postgres:``) URL.
        read_only: never create or write the store (see :class:`PostgresConnection`).

    Raises (constructor):
        MissingExtraError: psycopg or psycopg_pool is not installed.
        StorageError: a malformed URL.
    """

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self.connection = PostgresConnection(url, read_only=read_only)
        """The connection pool: drivers, the schema, error translation."""
        self._appends = PostgresAppends(self.connection)
        """Appending entries, and what the last append to each session left known."""
        self.url = url
        """The ``postgresql:`` URL."""
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

    async def close(self) -> None:
        """Close the pool. Idempotent."""
        await self.connection.close()

    async def get_payloads(self, hashes: Sequence[str]) -> dict[str, str]:
        """See :class:`SQLEngine`."""
        if not hashes:
            return {}
        pool = self.connection.pool or await self.connection.get_pool()
        try:
            async with pool.connection() as conn:
                return await fetch_payloads(conn, hashes)
        except self.connection.psycopg.Error as exc:
            raise self.connection.error(exc) from exc

    async def payload_usage(self, limit: int) -> tuple[tuple[int, int, int], list[Any]]:
        """See :class:`SQLEngine`."""
        (usage,) = await self.connection.fetch(USAGE_SQL)
        largest = await self.connection.fetch(LARGEST_SQL.format(p="%s"), (limit,))
        return (int(usage[0]), int(usage[1]), int(usage[2])), largest

    # ------------------------------------------------------------------ entries written

    async def append(
        self,
        session_id: str,
        entries: Sequence[Entry],
        *,
        at_leaf: bool,
        bodies: Sequence[bytes] | None = None,
        lease: Lease | None = None,
    ) -> list[Entry]:
        """See :class:`SQLEngine` (:meth:`PostgresAppends.append`)."""
        return await self._appends.append(
            session_id, entries, at_leaf=at_leaf, bodies=bodies, lease=lease
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
        """See :class:`SQLEngine` (:meth:`PostgresAppends.append_if_leaf`)."""
        return await self._appends.append_if_leaf(
            session_id, entry, body, expected_id, at_leaf=at_leaf, lease=lease
        )

    # ------------------------------------------------------------------ sessions

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
        self.connection.writable(session_id)
        now = now_us() if created_us is None else created_us
        pool = self.connection.pool or await self.connection.get_pool()
        try:
            async with pool.connection() as conn, conn.transaction():
                await _insert_session(conn, session_id, metadata, now)
                if entries:
                    await self._appends.append_in(
                        conn, session_id, entries, False, bodies, lock=False, keep_unknown=True
                    )
        except self.connection.psycopg.Error as exc:
            error = self.connection.error(exc, session_id)
            if isinstance(error, DuplicateEntryError):
                raise SessionExistsError(
                    "a session with this id already exists", session_id=session_id
                ) from exc
            raise error from exc

    async def fork_session(
        self, source_id: str, session_id: str, metadata: SessionMetadata, plan: ForkPlan
    ) -> None:
        """See :class:`SQLEngine`: one statement (:func:`~sessiontree.backends.sql.postgres_sql.fork_sql`),
        so one transaction and one round trip; copied rows by ``INSERT … SELECT``."""
        self.connection.writable(session_id)
        now = now_us()
        meta = [(_meta_text(k), _meta_text(v)) for k, v, _ in meta_rows(session_id, metadata)]
        params = row_params(session_id, plan, plan.rows) | {
            "now": now,
            "src": source_id,
            "copies": len(plan.copies),
            "meta": metadata.model_dump_json(by_alias=True, exclude_unset=True),
            "parent_session": _clean(metadata.parent_session_id),
            "meta_key": [k for k, _ in meta],
            "meta_value": [v for _, v in meta],
        }
        runs = plan.copy_sources is not None
        if plan.copy_sources is not None:
            placed = copy_runs(plan.copies, plan.copy_sources)
            params["run_first"] = [r[0] for r in placed]
            params["run_last"] = [r[1] for r in placed]
            params["run_shift"] = [r[2] for r in placed]
            params["copy_ids"] = orjson.dumps([i for i, _ in plan.copies]).decode()
        else:
            params["copy_id"] = [i for i, _ in plan.copies]
            params["copy_seq"] = [seq for _, seq in plan.copies]
        sql = fork_sql(
            copies=bool(plan.copies), meta=bool(meta), written=bool(plan.rows), runs=runs
        )
        written, payloads = split_rows(plan.rows, self.payload_threshold)
        params["body"] = [r.body for r in written]
        pool = self.connection.pool or await self.connection.get_pool()
        try:
            async with pool.connection() as conn, conn.transaction():
                # the references first (under the shared lock): a delete of the source that
                # commits before the copy below makes the copy find no rows and fail whole
                if plan.copies:
                    await copy_refs(conn, session_id, source_id)
                await store_payloads(conn, session_id, payloads)
                cur = await conn.execute(sql, params)
                rows = await cur.fetchall()
                if not rows or not rows[0][0]:
                    raise SessionNotFoundError(source_id, "session was deleted during the fork")
        except self.connection.psycopg.Error as exc:
            error = self.connection.error(exc, session_id)
            if isinstance(error, DuplicateEntryError):
                raise SessionExistsError(
                    "a session with this id already exists", session_id=session_id
                ) from exc
            raise error from exc
        if not rows or not rows[0][0]:
            raise SessionNotFoundError(source_id, "session was deleted during the fork")

    async def set_modified(
        self, session_id: str, modified_us: int, lease: Lease | None = None
    ) -> bool:
        """See :class:`SQLEngine` (under a lease: checked in the update's transaction)."""
        if lease is not None:
            self.connection.writable(session_id)
            pool = self.connection.pool or await self.connection.get_pool()
            try:
                async with pool.connection() as conn, conn.transaction():
                    await check_lease(conn, session_id, lease)
                    cur = await conn.execute(
                        "UPDATE sessions SET modified_us = %s WHERE id = %s",
                        (modified_us, session_id),
                    )
                    return bool(cur.rowcount)
            except self.connection.psycopg.Error as exc:
                raise self.connection.error(exc, session_id) from exc
        found = await self.connection.execute(
            "UPDATE sessions SET modified_us = %s WHERE id = %s",
            (modified_us, session_id),
            session_id,
        )
        return found > 0

    async def load_metadata(self, session_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = await self.connection.fetch(
            "SELECT metadata::text FROM sessions WHERE id = %s", (session_id,), session_id
        )
        return rows[0][0] if rows else None

    async def session_leaf(self, session_id: str) -> tuple[bool, str | None]:
        """See :class:`SQLEngine`."""
        rows = await self.connection.fetch(
            "SELECT leaf_id FROM sessions WHERE id = %s", (session_id,), session_id
        )
        return (True, rows[0][0]) if rows else (False, None)

    async def delete_session(self, session_id: str) -> bool:
        """See :class:`SQLEngine`: the session row, then its entries, in one transaction (its
        metadata and ``search_pending`` rows go by ``ON DELETE CASCADE``).

        No entry outlives its session: every insert into ``entries`` holds the session row
        (updated, locked or inserted in its transaction), so the first ``DELETE`` waits for
        it to commit, and the second, a statement of its own, sees its rows; an insert
        after it finds no session row and writes nothing.
        """
        self.connection.writable(session_id)
        self._appends.forget(session_id)
        pool = self.connection.pool or await self.connection.get_pool()
        try:
            async with pool.connection() as conn, conn.transaction():
                cur = await conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,))
                found = int(cur.rowcount)
                if found:
                    await _delete_session_rows(conn, session_id)
        except self.connection.psycopg.Error as exc:
            raise self.connection.error(exc, session_id) from exc
        return found > 0

    async def sync_positions(self) -> list[tuple[str, str]]:
        """See :class:`SQLEngine`."""
        rows = await self.connection.fetch("SELECT session_id, position FROM sync_positions", ())
        return [(r[0], r[1]) for r in rows]

    async def get_store_meta(self, key: str) -> str | None:
        """The ``store_meta`` value of ``key``, ``None`` when unset."""
        rows = await self.connection.fetch("SELECT value FROM store_meta WHERE key = %s", (key,))
        return rows[0][0] if rows else None

    async def put_store_meta(self, key: str, value: str) -> None:
        """Set the ``store_meta`` value of ``key``.

        Raises:
            StorageError: read-only, or the database failed.
        """
        self.connection.writable()
        await self.connection.execute(
            "INSERT INTO store_meta (key, value) VALUES (%s, %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    async def rekey_count(self, table: RekeyTable, prefix: str) -> int:
        """Rows of ``table`` whose sealed value does not start with ``prefix``
        (:mod:`~sessiontree.backends.sql.rekey`)."""
        which, params = scan_params(table, prefix, None, None)
        rows = await self.connection.fetch(rekey_sql(table, "postgres", len(prefix))[which], params)
        return int(rows[0][0])

    async def rekey_scan(
        self, table: RekeyTable, prefix: str, after: tuple[Any, ...] | None, limit: int
    ) -> list[tuple[Any, ...]]:
        """The next ``limit`` rows ``(key..., value)`` of ``table`` after key ``after`` whose
        value does not start with ``prefix``, in key order."""
        which, params = scan_params(table, prefix, after, limit)
        sql = rekey_sql(table, "postgres", len(prefix))[which]
        return [tuple(r) for r in await self.connection.fetch(sql, params)]

    async def rekey_write(self, table: RekeyTable, updates: Sequence[tuple[Any, ...]]) -> int:
        """``(new, key..., old)`` updates of ``table``, in one transaction, each made only
        where the value is still ``old``; how many were made.

        Raises:
            StorageError: read-only, or the database failed (nothing written).
        """
        self.connection.writable()
        if not updates:
            return 0
        sql = rekey_sql(table, "postgres", 0)["update"]
        pool = self.connection.pool or await self.connection.get_pool()
        try:
            async with pool.connection() as conn, conn.transaction():
                done = 0
                for u in updates:
                    cur = await conn.execute(sql, u)
                    done += cur.rowcount
                return done
        except self.connection.psycopg.Error as exc:
            raise self.connection.error(exc) from exc

    async def scrub_after_rekey(self, drop_search: bool) -> None:
        """After ``rekey``: clear the search text when the store indexes no plaintext
        (``drop_search``; text indexed before the store was encrypted). The old row versions
        stay in the table's dead tuples until PostgreSQL reuses them (``VACUUM FULL``
        rewrites the table; docs/storage.md).

        Raises:
            StorageError: read-only, or the database failed.
        """
        self.connection.writable()
        if drop_search:
            await self.connection.execute(
                "UPDATE entries SET search_text = NULL WHERE search_text IS NOT NULL"
            )

    async def get_draft(self, session_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = await self.connection.fetch(
            "SELECT body FROM drafts WHERE session_id = %s", (session_id,), session_id
        )
        return rows[0][0] if rows else None

    async def put_draft(
        self, session_id: str, body: str | None, updated_ms: int, lease: Lease | None = None
    ) -> bool:
        """See :class:`SQLEngine` (under a lease: the lease check and the write in one
        transaction)."""
        self.connection.writable(session_id)
        if lease is not None:
            pool = self.connection.pool or await self.connection.get_pool()
            try:
                async with pool.connection() as conn, conn.transaction():
                    await check_lease(conn, session_id, lease)
                    if body is None:
                        await conn.execute(_DELETE_DRAFT, (session_id,))
                        return True
                    cur = await conn.execute(_PUT_DRAFT, (body, updated_ms, session_id))
                    return bool(cur.rowcount)
            except self.connection.psycopg.Error as exc:
                raise self.connection.error(exc, session_id) from exc
        if body is None:
            await self.connection.execute(_DELETE_DRAFT, (session_id,), session_id)
            return True
        found = await self.connection.execute(
            _PUT_DRAFT, (body, updated_ms, session_id), session_id
        )
        return found > 0

    # ------------------------------------------------------------------ the writer lease

    async def acquire_lease(
        self, session_id: str, owner: str, now_ms: int, ttl_ms: int
    ) -> Lease | None:
        """See :class:`SQLEngine`: the row made if missing, then locked ``FOR UPDATE``."""
        self.connection.writable(session_id)
        pool = self.connection.pool or await self.connection.get_pool()
        try:
            async with pool.connection() as conn, conn.transaction():
                await conn.execute(
                    "INSERT INTO leases (session_id, owner, fence, expires_ms)"
                    " SELECT id, '', 0, 0 FROM sessions WHERE id = %s"
                    " ON CONFLICT (session_id) DO NOTHING",
                    (session_id,),
                )
                record = await lease_record(conn, session_id, lock="FOR UPDATE")
                if record is None:
                    return None
                lease, new = grant(session_id, record, owner, now_ms, ttl_ms)
                await conn.execute(_PUT_LEASE, (session_id, new.owner, new.fence, new.expires_ms))
        except self.connection.psycopg.Error as exc:
            raise self.connection.error(exc, session_id) from exc
        return lease

    async def renew_lease(self, lease: Lease, now_ms: int, ttl_ms: int) -> Lease:
        """See :class:`SQLEngine`."""
        sid = lease.session_id
        self.connection.writable(sid)
        pool = self.connection.pool or await self.connection.get_pool()
        try:
            async with pool.connection() as conn, conn.transaction():
                record = await lease_record(conn, sid, lock="FOR UPDATE")
                renewed = renew(lease, record, now_ms, ttl_ms)
                await conn.execute(
                    "UPDATE leases SET expires_ms = %s WHERE session_id = %s",
                    (renewed.expires_ms, sid),
                )
        except self.connection.psycopg.Error as exc:
            raise self.connection.error(exc, sid) from exc
        return renewed

    async def release_lease(self, lease: Lease) -> None:
        """See :class:`SQLEngine`."""
        sid = lease.session_id
        self.connection.writable(sid)
        pool = self.connection.pool or await self.connection.get_pool()
        try:
            async with pool.connection() as conn, conn.transaction():
                record = release(lease, await lease_record(conn, sid, lock="FOR UPDATE"))
                if record is not None:
                    await conn.execute(
                        _PUT_LEASE, (sid, record.owner, record.fence, record.expires_ms)
                    )
        except self.connection.psycopg.Error as exc:
            raise self.connection.error(exc, sid) from exc

    async def get_lease(self, session_id: str) -> LeaseRecord | None:
        """See :class:`SQLEngine`."""
        rows = await self.connection.fetch(
            "SELECT owner, fence, expires_ms FROM leases WHERE session_id = %s",
            (session_id,),
            session_id,
        )
        return LeaseRecord(rows[0][0], rows[0][1], rows[0][2]) if rows else None

    async def trash_session(self, session_id: str, trashed_us: int) -> tuple[Any, ...] | None:
        """See :class:`SQLEngine`: the session row is locked (appends wait), the trash row
        written, then the session's rows deleted as :meth:`delete_session` does, in one
        transaction."""
        self.connection.writable(session_id)
        self._appends.forget(session_id)
        pool = self.connection.pool or await self.connection.get_pool()
        try:
            async with pool.connection() as conn, conn.transaction():
                cur = await conn.execute(
                    "SELECT metadata::text, created_us, modified_us, name, entry_count"
                    " FROM sessions WHERE id = %s FOR UPDATE",
                    (session_id,),
                )
                row = await cur.fetchone()
                if row is None:
                    return None
                cur = await conn.execute("SELECT 1 FROM trash WHERE session_id = %s", (session_id,))
                if await cur.fetchone() is not None:
                    raise trash_taken(session_id)
                cur = await conn.execute(
                    "SELECT body::text FROM entries WHERE session_id = %s ORDER BY seq",
                    (session_id,),
                )
                bodies = [r[0] for r in await cur.fetchall()]
                cur = await conn.execute(REFERRED_BYTES_SQL.format(p="%s"), (session_id,))
                referred = await cur.fetchone()
                values = trash_values(
                    session_id, trashed_us, row, bodies, int(referred[0]) if referred else 0
                )
                await conn.execute(INSERT_TRASH_SQL.format(p="%s"), values)
                # the trashed bodies keep their payloads: their refs move to the trash row
                await conn.execute(
                    MOVE_REFS_SQL.format(p="%s"), (owner_in_trash(session_id), session_id)
                )
                await conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,))
                await _delete_session_rows(conn, session_id)
        except self.connection.psycopg.Error as exc:
            raise self.connection.error(exc, session_id) from exc
        return values[:8]

    async def list_trash(self) -> list[tuple[Any, ...]]:
        """See :class:`SQLEngine`."""
        return await self.connection.fetch(LIST_TRASH_SQL)

    async def trashed_bodies(self, session_id: str) -> tuple[Any, ...] | None:
        """See :class:`SQLEngine`."""
        rows = await self.connection.fetch(
            TRASHED_BODIES_SQL.format(p="%s"), (session_id,), session_id
        )
        return tuple(rows[0]) if rows else None

    async def purge_trash(self, session_id: str) -> bool:
        """See :class:`SQLEngine`."""
        self.connection.writable(session_id)
        pool = self.connection.pool or await self.connection.get_pool()
        try:
            async with pool.connection() as conn, conn.transaction():
                cur = await conn.execute("DELETE FROM trash WHERE session_id = %s", (session_id,))
                found = int(cur.rowcount)
                await release_payloads(conn, owner_in_trash(session_id))
        except self.connection.psycopg.Error as exc:
            raise self.connection.error(exc, session_id) from exc
        return found > 0

    async def session_sizes(self) -> dict[str, int]:
        """See :class:`SQLEngine` (``octet_length`` of the stored JSON text)."""
        rows = await self.connection.fetch(
            SESSION_SIZES_SQL.format(length=_LENGTH, where="", where_refs="")
        )
        return {r[0]: int(r[1] or 0) for r in rows}

    async def session_size(self, session_id: str) -> int:
        """See :class:`SQLEngine` (as :meth:`session_sizes`, one session by index)."""
        rows = await self.connection.fetch(
            SESSION_SIZES_SQL.format(
                length=_LENGTH,
                where=" WHERE session_id = %s",
                where_refs=" WHERE r.session_id = %s",
            ),
            (session_id, session_id),
        )
        return int(rows[0][1] or 0) if rows else 0

    async def largest_entries(self, limit: int) -> list[tuple[Any, ...]]:
        """See :class:`SQLEngine`."""
        top = await self.connection.fetch(
            f"SELECT session_id, id, type, {_LENGTH} AS n FROM entries ORDER BY n DESC LIMIT %s",
            (limit,),
        )
        heads = await self.connection.fetch(
            ENTRIES_WITH_PAYLOADS_SQL.format(
                length=_LENGTH,
                body="body::text",
                prefix=f"left(body::text, {len(HEAD)})",
                p="%s",
            ),
            (HEAD,),
        )
        sizes = {}
        if heads:
            sizes = {r[0]: int(r[1]) for r in await self.connection.fetch(_PAYLOAD_SIZES)}
        return largest_entries(top, heads, sizes, limit)

    async def list_sessions(
        self, limit: int | None, offset: int, where: Mapping[str, str]
    ) -> list[SessionInfo]:
        """See :class:`SQLEngine`."""
        columns = LIST_COLUMNS.replace("metadata", "metadata::text")
        condition, params = where_clause(
            {_meta_text(k): _meta_text(v) for k, v in where.items()}, "%s"
        )
        rows = await self.connection.fetch(
            f"SELECT {columns} FROM sessions{condition} ORDER BY modified_us DESC, id DESC"
            " LIMIT %s OFFSET %s",
            (*params, None if limit is None else max(limit, 0), max(offset, 0)),
        )
        return [info_from_row(r) for r in rows]

    async def search(
        self, query: str, limit: int, where: Mapping[str, str] | None = None
    ) -> list[SearchHit]:
        """See :class:`SQLEngine`: a case-insensitive substring
        (:mod:`sessiontree.storage.search`): ``search_text LIKE '%needle%'`` over the
        lower-cased text, through the ``pg_trgm`` GIN index; newest sessions first, then
        append order. Fork copies still without search text are resolved first
        (:mod:`~sessiontree.backends.sql.postgres_search`), or matched in Python by an engine
        that may not write."""
        needle = search_needle(query)
        if needle is None or limit <= 0:
            return []
        sql, params = SEARCH_SQL, [like_pattern(needle)]
        if where:
            hashed = {_meta_text(k): _meta_text(v) for k, v in where.items()}
            condition, meta_params = meta_condition(hashed, "%s", "e.session_id")
            sql, params = scoped_search_sql(condition), [*params, *meta_params]
        pool = self.connection.pool or await self.connection.get_pool()
        errors = self.connection.psycopg.errors
        codec = self.connection.codec
        try:
            async with pool.connection() as conn:
                pending: list[Any] = []
                if self.read_only:
                    pending = await pending_hits(conn, needle, codec)
                else:
                    try:
                        await catch_up(conn, codec)
                    except (errors.InsufficientPrivilege, errors.ReadOnlySqlTransaction):
                        pending = await pending_hits(conn, needle, codec)
                if pending and where:  # only the sessions ``where`` names
                    cur = await conn.execute(
                        f"SELECT id FROM sessions{where_clause(hashed, '%s')[0]}",
                        where_clause(hashed, "%s")[1],
                    )
                    named = {r[0] for r in await cur.fetchall()}
                    pending = [r for r in pending if r[0] in named]
                cur = await conn.execute(sql, (*params, limit))
                rows = await cur.fetchall()
                if pending:
                    rows = sorted([*rows, *pending], key=lambda r: (-r[3], r[0], r[4]))[:limit]
                bodies = await expand_all_async(
                    [r[2] for r in rows], lambda hashes: fetch_payloads(conn, hashes)
                )
        except self.connection.psycopg.Error as exc:
            raise self.connection.error(exc) from exc
        return [
            hit_from_row(r[0], r[1], b, query, codec) for r, b in zip(rows, bodies, strict=True)
        ]

    # ------------------------------------------------------------------ entries

    async def get_entry(self, session_id: str, entry_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = await self.connection.fetch(
            "SELECT body::text FROM entries WHERE session_id = %s AND id = %s",
            (session_id, entry_id),
            session_id,
        )
        return rows[0][0] if rows else None

    async def entry_seq(self, session_id: str, entry_id: str) -> int | None:
        """See :class:`SQLEngine`."""
        rows = await self.connection.fetch(
            "SELECT seq FROM entries WHERE session_id = %s AND id = %s",
            (session_id, entry_id),
            session_id,
        )
        return int(rows[0][0]) if rows else None

    async def get_entries(
        self, session_id: str, cursor: EntryCursor, after_seq: int | None
    ) -> list[tuple[str, str]]:
        """See :class:`SQLEngine`."""
        sql, params = entries_page_sql(
            session_id,
            cursor,
            after_seq,
            mark="%s",
            body="body::text",
            types_in=lambda types: ("AND type = ANY(%s::text[])", [types]),
        )
        return await self.connection.fetch(sql, params, session_id)

    async def get_chain(
        self, session_id: str, leaf_id: str | None
    ) -> list[tuple[str, str | None, str, str, int]]:
        """See :class:`SQLEngine` (no ORDER BY: a sort would spill the bodies to disk)."""
        return await self.connection.fetch(
            CHAIN_SQL, {"sid": session_id, "leaf": leaf_id}, session_id
        )

    async def get_chain_until(
        self, session_id: str, leaf_id: str | None, stop_type: str | None, stop_id: str | None
    ) -> list[tuple[str, str | None, str, str, int, int]]:
        """See :class:`SQLEngine`."""
        params = {"sid": session_id, "leaf": leaf_id, "stype": stop_type, "stop": stop_id}
        return await self.connection.fetch(CHAIN_UNTIL_SQL, params, session_id)

    async def get_fork_rows(
        self, session_id: str, leaf_id: str, *, metadata: bool = False
    ) -> tuple[list[ChainRow], list[tuple[str, str]], str | None]:
        """See :class:`SQLEngine`: the range read, the labels and the metadata in one query;
        the recursive walk in a second when the range does not hold the chain."""
        params = {"sid": session_id, "leaf": leaf_id}
        pool = self.connection.pool or await self.connection.get_pool()
        try:
            async with pool.connection() as conn:
                cur = await conn.execute(
                    FORK_WINDOW_META_SQL if metadata else FORK_WINDOW_SQL, params
                )
                rows = await cur.fetchall()
                meta = None
                if metadata:
                    meta = next((r[3] for r in rows if r[0] is None), None)
                    rows = [r for r in rows if r[0] is not None]
                labels = sorted((r for r in rows if r[2] == "label"), key=lambda r: r[4])
                chain = chain_in_window(rows, leaf_id)
                if chain is None:
                    cur = await conn.execute(FORK_CHAIN_SQL, params)
                    chain = [ChainRow(*r) for r in await cur.fetchall()]
                return chain, [(r[0], r[3]) for r in labels], meta
        except self.connection.psycopg.Error as exc:
            raise self.connection.error(exc, session_id) from exc

    async def get_bodies(self, session_id: str, entry_ids: Sequence[str]) -> dict[str, str]:
        """See :class:`SQLEngine`."""
        if not entry_ids:
            return {}
        rows = await self.connection.fetch(
            "SELECT id, body::text FROM entries WHERE session_id = %s AND id = ANY(%s::text[])",
            (session_id, list(entry_ids)),
            session_id,
        )
        return dict(rows)

    async def get_label_body(self, session_id: str, entry_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = await self.connection.fetch(
            "SELECT body::text FROM entries WHERE session_id = %s AND type = 'label'"
            " AND target_id = %s ORDER BY seq DESC LIMIT 1",
            (session_id, entry_id),
            session_id,
        )
        return rows[0][0] if rows else None

    async def get_name_body(self, session_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        rows = await self.connection.fetch(
            "SELECT body::text FROM entries WHERE session_id = %s AND type = 'session_info'"
            " ORDER BY seq DESC LIMIT 1",
            (session_id,),
            session_id,
        )
        return rows[0][0] if rows else None
