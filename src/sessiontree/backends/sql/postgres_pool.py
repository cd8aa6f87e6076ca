"""Opening a PostgreSQL store: the drivers, the URL, the schema check and migration, the pool.

Needs ``pip install 'sessiontree[postgres]'``; the driver is imported when an engine is made,
never by ``import sessiontree`` (a missing driver raises :class:`MissingExtraError`).
Connections are in autocommit mode. The first connection checks the database is ours (or
empty) and migrates it under an advisory lock, so concurrent first opens are safe; a newer
schema version is refused. Then the pool opens.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sessiontree.backends.sql.plan import row_index_text
from sessiontree.backends.sql.schema import (
    APP,
    MIGRATIONS,
    POSTGRES_VERSION_SQL,
    SEARCH_VERSION,
    check_version,
    foreign_database,
)
from sessiontree.errors import (
    DuplicateEntryError,
    InvalidEntryError,
    MissingExtraError,
    SessionTreeError,
    StorageError,
    StorageTimeoutError,
)
from sessiontree.ids import now_ms
from sessiontree.redact import redact_url
from sessiontree.storage.encryption import META_KEY, Codec, check_store_keys

__all__ = [
    "CONNECT_TIMEOUT_S",
    "POOL_MAX_SIZE",
    "SQLSTATE_ERRORS",
    "PostgresConnection",
    "clean_text",
    "import_drivers",
    "redact",
]

CONNECT_TIMEOUT_S = 5
"""Default ``connect_timeout`` (seconds) when the URL does not set one."""
POOL_MAX_SIZE = 8
"""Connections one engine's pool may open."""
_MIGRATION_LOCK = 0x5E55_10_7E  # advisory lock key for schema creation

SQLSTATE_ERRORS: dict[str, tuple[bool, str]] = {
    "57014": (False, "PostgreSQL cancelled the statement (pg_cancel_backend, an administrator)"),
    "55P03": (True, "a lock was not granted within lock_timeout (another transaction holds it)"),
    "25P03": (True, "PostgreSQL ended the session after idle_in_transaction_session_timeout"),
    "25P04": (True, "PostgreSQL ended the transaction after transaction_timeout"),
    "57P05": (True, "PostgreSQL ended the session after idle_session_timeout"),
    "57P": (False, "PostgreSQL ended the connection (the server is shutting down or restarting)"),
    "08": (False, "lost the connection to PostgreSQL"),
    "53300": (False, "PostgreSQL refused the connection: too many connections"),
    "53": (False, "PostgreSQL is out of resources (disk, memory)"),
    "40": (False, "the transaction conflicted with another one and was rolled back; try again"),
    "28": (False, "PostgreSQL refused the login"),
    "3D": (False, "no such database"),
    "25006": (False, "the server only allows reads (a standby?); nothing written"),
    "42501": (False, "permission denied"),
}
"""What a PostgreSQL error means, by SQLSTATE (a code, or a class prefix; the first match
wins): ``(timed out, what happened)``. A timed-out one is a
:class:`~sessiontree.errors.StorageTimeoutError`, the rest :class:`StorageError`. A statement
cancelled by ``statement_timeout`` shares ``57014`` with one cancelled on request; the server's
message tells them apart (English server messages, the default ``lc_messages``)."""


def import_drivers() -> tuple[Any, Any]:
    """``(psycopg, psycopg_pool)``, imported on first use.

    Raises:
        MissingExtraError: naming ``pip install 'sessiontree[postgres]'``.
    """
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise MissingExtraError("postgres", exc.name or "psycopg") from exc
    return psycopg, psycopg_pool


def clean_text(text: str | None) -> str | None:
    """PostgreSQL ``text`` cannot hold NUL: derived columns get U+FFFD instead."""
    return text if text is None or "\x00" not in text else text.replace("\x00", "\ufffd")


def redact(url: str) -> str:
    """The URL with any password replaced by ``***`` (for error messages):
    :func:`sessiontree.redact.redact_url`."""
    return redact_url(url)


def _handing_over(psycopg: Any, first: Any) -> Any:
    """A connection class for the pool whose first ``connect`` returns ``first``, the
    connection that checked the schema (made with the pool's own conninfo and autocommit):
    the pool starts with it instead of opening a second one (a connection less to make per
    repository open).
    Every later ``connect`` opens a new connection."""
    handed: list[Any] = [first]

    class HandingOver(psycopg.AsyncConnection):  # type: ignore[misc]
        @classmethod
        async def connect(cls, conninfo: str = "", **kwargs: Any) -> Any:
            if handed:
                conn = handed.pop()
                if not conn.closed:
                    return conn
            return await super().connect(conninfo, **kwargs)

    return HandingOver


class PostgresConnection:
    """The connection pool of one PostgreSQL database, opened on first use (after a direct
    connection has checked and migrated the schema).

    With ``read_only`` a database holding no sessiontree store is a :class:`StorageError`
    instead of getting one, and every write raises :class:`StorageError`.

    Raises (constructor):
        MissingExtraError: psycopg or psycopg_pool is not installed.
        StorageError: a malformed URL.
    """

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self.psycopg, self._pool_mod = import_drivers()
        self.url = url
        self.read_only = read_only
        self.where = redact(url)
        conninfo = "postgresql" + url[url.index(":") :] if url.startswith("postgres:") else url
        try:
            params = self.psycopg.conninfo.conninfo_to_dict(conninfo)
        except self.psycopg.Error as exc:
            raise StorageError(f"{self.where}: bad PostgreSQL URL: {exc}") from exc
        if "connect_timeout" not in params:
            conninfo = self.psycopg.conninfo.make_conninfo(
                conninfo, connect_timeout=CONNECT_TIMEOUT_S
            )
        self._conninfo = conninfo
        self.pool: Any = None
        """The connection pool once opened (:meth:`get_pool`), else ``None``."""
        self._opening: asyncio.Lock | None = None
        self._closed = False
        self.codec: Codec | None = None
        """The cipher of an encrypted store (set by its engine before first use), checked
        against the store's ``encryption`` row on the first connection."""

    def error(
        self, exc: BaseException, session_id: str | None = None, *, connecting: bool = False
    ) -> SessionTreeError:
        """The sessiontree error for a driver error: every psycopg error of this engine is
        translated here, by class and SQLSTATE (:data:`SQLSTATE_ERRORS`), into what happened.
        ``connecting``: it came from opening the first connection (no SQLSTATE then means
        the server cannot be reached, not a connection lost)."""
        psycopg, errors = self.psycopg, self.psycopg.errors
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        where = self.where
        if isinstance(exc, errors.UniqueViolation):
            return DuplicateEntryError(f"already exists ({first})", session_id=session_id)
        if isinstance(exc, psycopg.DataError):
            return InvalidEntryError(
                f"PostgreSQL refused the value: {first}", session_id=session_id
            )
        if isinstance(exc, self._pool_mod.PoolTimeout):
            return StorageTimeoutError(
                f"{where}: no connection free in time (all {POOL_MAX_SIZE} of the pool busy,"
                f" or the server cannot be reached): {first}"
            )
        if isinstance(exc, getattr(errors, "ConnectionTimeout", ())):
            return StorageTimeoutError(
                f"{where}: cannot reach PostgreSQL within connect_timeout: {first}"
            )
        sqlstate: str | None = getattr(exc, "sqlstate", None)
        if sqlstate is not None:
            if sqlstate == "57014" and "statement timeout" in first:
                return StorageTimeoutError(
                    f"{where}: the statement ran past statement_timeout and PostgreSQL"
                    f" cancelled it: {first}"
                )
            if connecting and sqlstate.startswith("08"):
                return StorageError(f"{where}: cannot reach PostgreSQL: {first}")
            for prefix, (timed_out, what) in SQLSTATE_ERRORS.items():
                if sqlstate.startswith(prefix):
                    kind = StorageTimeoutError if timed_out else StorageError
                    return kind(f"{where}: {what}: {first}")
            return StorageError(f"{where}: {first}")
        if isinstance(exc, psycopg.OperationalError):
            if connecting:
                return StorageError(f"{where}: cannot reach PostgreSQL: {first}")
            return StorageError(f"{where}: lost the connection to PostgreSQL: {first}")
        return StorageError(f"{where}: {first}")

    async def get_pool(self) -> Any:
        """The ``psycopg_pool`` pool, opened on first call (after :meth:`_setup` on a direct
        connection); callers use ``connection.pool or await connection.get_pool()``.

        Raises:
            StorageError: closed, the server cannot be reached, or the database is not a
                store (or one of a newer schema).
        """
        if self.pool is not None:
            return self.pool
        if self._closed:
            raise StorageError(f"{self.where}: the repository is closed")
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self.pool is None:
                connected = False
                try:
                    first = await self.psycopg.AsyncConnection.connect(
                        self._conninfo, autocommit=True
                    )
                    connected = True
                    try:
                        await self._setup(first)
                    except BaseException:
                        await first.close()
                        raise
                    pool = self._pool_mod.AsyncConnectionPool(
                        self._conninfo,
                        min_size=1,
                        max_size=POOL_MAX_SIZE,
                        kwargs={"autocommit": True},
                        connection_class=_handing_over(self.psycopg, first),
                        open=False,
                        timeout=30,
                    )
                    try:
                        await pool.open(wait=True, timeout=CONNECT_TIMEOUT_S * 2)
                    except BaseException:
                        await pool.close()
                        await first.close()  # if the pool never took it
                        raise
                except SessionTreeError:
                    raise
                except self.psycopg.Error as exc:
                    raise self.error(exc, connecting=not connected) from exc
                self.pool = pool
        return self.pool

    async def _setup(self, conn: Any) -> None:
        """On the first connection (direct, so a server that is down or a foreign database
        fails at once): check the database holds this library's store (or none) and migrate
        it. A store at the current version needs two queries and no lock; anything to create
        or migrate is done under an advisory lock, read again under it, so concurrent first
        opens are safe.

        Raises:
            StorageError: a foreign database, a newer schema, or no store with ``read_only``.
        """
        if await self._stored_version(conn) == len(MIGRATIONS):
            await self._check_keys(conn)
            return
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            version = await self._stored_version(conn) or 0
            check_version(version, self.where)
            for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in migration.postgres:
                    await conn.execute(statement)
                if number == SEARCH_VERSION:
                    await self._migrate_search(conn)
                for statement in migration.postgres_after:
                    await conn.execute(statement)
                await conn.execute(
                    "INSERT INTO schema_version (app, version, applied_at_ms) VALUES (%s, %s, %s)",
                    (APP, number, now_ms()),
                )
        await self._check_keys(conn)

    async def _check_keys(self, conn: Any) -> None:
        """Check :attr:`codec` against the store's ``encryption`` row and write the row it
        needs (under the migration lock, read again there) unless read-only.

        Raises:
            EncryptionKeyError: the store is encrypted and the keys do not open it.
        """
        select = "SELECT value FROM store_meta WHERE key = %s"
        cur = await conn.execute(select, (META_KEY,))
        row = await cur.fetchone()
        if check_store_keys(self.codec, row and row[0], self.where) is None or self.read_only:
            return
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            cur = await conn.execute(select, (META_KEY,))
            row = await cur.fetchone()
            value = check_store_keys(self.codec, row and row[0], self.where)
            if value is not None:
                await conn.execute(
                    "INSERT INTO store_meta (key, value) VALUES (%s, %s)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (META_KEY, value),
                )

    async def _stored_version(self, conn: Any) -> int | None:
        """The store's schema version, ``None`` for an empty database.

        Raises:
            StorageError: the database holds another application's tables, its schema is
                newer than this library's, or it is empty and the store is ``read_only``.
        """
        # a name lookup first (cheaper than the pg_tables view on a new connection); the view
        # only when there is no schema_version table, to tell an empty database from another's
        cur = await conn.execute(
            "SELECT to_regclass(quote_ident(current_schema()) || '.schema_version') IS NOT NULL"
        )
        if not (await cur.fetchone())[0]:
            cur = await conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
            names = {r[0] for r in await cur.fetchall()}
            if "schema_version" in names:  # another process created the store in between
                return await self._stored_version(conn)
            if names:
                raise foreign_database(self.where, f"it holds tables {sorted(names)[:5]}")
            if self.read_only:
                raise StorageError(
                    f"{self.where}: no store here (the database holds no sessiontree "
                    "tables); check the URL"
                )
            return None
        cur = await conn.execute(POSTGRES_VERSION_SQL, (APP,))
        top, count, ours = await cur.fetchone()
        if count and not ours:
            raise foreign_database(self.where, "schema_version belongs to another application")
        version = int(top or 0)
        check_version(version, self.where)
        return version

    async def _trgm_schema(self, conn: Any) -> str:
        """The schema of the ``pg_trgm`` extension, created (in ``public`` when it may be,
        else in the current schema) when the database does not have it yet.

        Raises:
            StorageError: the extension is not installed and cannot be created here.
        """
        find = (
            "SELECT n.nspname FROM pg_extension AS e JOIN pg_namespace AS n"
            " ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'"
        )
        row = await (await conn.execute(find)).fetchone()
        if row is not None:
            return str(row[0])
        problem = ""
        for statement in (
            "CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public",
            "CREATE EXTENSION IF NOT EXISTS pg_trgm",
        ):
            try:
                async with conn.transaction():  # a savepoint: a refusal undoes only itself
                    await conn.execute(statement)
            except self.psycopg.Error as exc:
                problem = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                continue
            row = await (await conn.execute(find)).fetchone()
            if row is not None:
                return str(row[0])
        raise StorageError(
            f"{self.where}: search needs the PostgreSQL extension pg_trgm, which is not in this"
            f" database and cannot be created by this role ({problem}); ask an administrator"
            " to run CREATE EXTENSION pg_trgm in it (Debian: package postgresql-contrib)"
        )

    async def _migrate_search(self, conn: Any) -> None:
        """Version 4: fill ``search_text`` of every message row and index it with ``pg_trgm``
        (inside the migration's transaction)."""
        schema = await self._trgm_schema(conn)
        cur = await conn.execute(
            "SELECT session_id, seq, body::text FROM entries WHERE type = 'message'"
        )
        updates = []
        for session_id, seq, body in await cur.fetchall():
            text = row_index_text(body)
            if text is not None:
                updates.append((clean_text(text), session_id, seq))
        async with conn.cursor() as c:
            await c.executemany(
                "UPDATE entries SET search_text = %s WHERE session_id = %s AND seq = %s", updates
            )
        quoted = '"' + schema.replace('"', '""') + '"'
        await conn.execute(
            "CREATE INDEX IF NOT EXISTS entries_search ON entries"
            f" USING GIN (search_text {quoted}.gin_trgm_ops)"
            " WHERE search_text IS NOT NULL"
        )

    def writable(self, session_id: str | None = None) -> None:
        """Raise if this store was opened read-only.

        Raises:
            StorageError: it was; nothing is written.
        """
        if self.read_only:
            raise StorageError(
                f"{self.where}: the store was opened read-only; nothing written"
                + (f" (session {session_id!r})" if session_id else "")
            )

    async def close(self) -> None:
        """Close the pool. Idempotent."""
        self._closed = True
        if self.pool is not None:
            pool, self.pool = self.pool, None
            await pool.close()

    async def fetch(self, sql: str, params: Any = None, session_id: str | None = None) -> list[Any]:
        """The rows of one statement on a pooled connection.

        Raises:
            StorageError: the database failed (:meth:`error`).
        """
        pool = self.pool or await self.get_pool()
        try:
            async with pool.connection() as conn:
                cur = await conn.execute(sql, params)
                return await cur.fetchall()  # type: ignore[no-any-return]
        except self.psycopg.Error as exc:
            raise self.error(exc, session_id) from exc

    async def execute(self, sql: str, params: Any = None, session_id: str | None = None) -> int:
        """Run one statement on a pooled connection; the rows it changed.

        Raises:
            StorageError: the database failed (:meth:`error`).
        """
        pool = self.pool or await self.get_pool()
        try:
            async with pool.connection() as conn:
                cur = await conn.execute(sql, params)
                return int(cur.rowcount)
        except self.psycopg.Error as exc:
            raise self.error(exc, session_id) from exc
