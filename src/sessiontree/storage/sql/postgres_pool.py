"""Opening a PostgreSQL store: the drivers, the URL, the schema check and migration, the pool.

Needs ``pip install 'sessiontree[postgres]'``; the driver is imported when an engine is made,
never by ``import sessiontree`` (a missing driver raises :class:`MissingExtraError`).
Connections are in autocommit mode. The first connection checks the database is ours (or
empty) and migrates it under an advisory lock, so concurrent first opens are safe; a newer
schema version is refused. Then the pool opens.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from sessiontree.errors import (
    DuplicateEntryError,
    InvalidEntryError,
    MissingExtraError,
    SessionTreeError,
    StorageError,
)
from sessiontree.ids import now_ms
from sessiontree.storage.sql.schema import (
    APP,
    MIGRATIONS,
    check_version,
    foreign_database,
)

__all__ = ["CONNECT_TIMEOUT_S", "POOL_MAX_SIZE", "PostgresConnection", "import_drivers", "redact"]

CONNECT_TIMEOUT_S = 5
"""Default ``connect_timeout`` (seconds) when the URL does not set one."""
POOL_MAX_SIZE = 8
"""Connections one engine's pool may open."""
_MIGRATION_LOCK = 0x5E55_10_7E  # advisory lock key for schema creation


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


def redact(url: str) -> str:
    """The URL with any password replaced by ``***`` (for error messages)."""
    return re.sub(r"(//[^:@/]*):[^@/]*@", r"\1:***@", url)


class PostgresConnection:
    """The connection pool of one PostgreSQL database, opened on first use (after a direct
    connection has checked and migrated the schema).

    Raises (constructor):
        MissingExtraError: psycopg or psycopg_pool is not installed.
        StorageError: a malformed URL.
    """

    def __init__(self, url: str) -> None:
        self._psycopg, self._pool_mod = import_drivers()
        self.url = url
        self._where = redact(url)
        conninfo = "postgresql" + url[url.index(":") :] if url.startswith("postgres:") else url
        try:
            params = self._psycopg.conninfo.conninfo_to_dict(conninfo)
        except self._psycopg.Error as exc:
            raise StorageError(f"{self._where}: bad PostgreSQL URL: {exc}") from exc
        if "connect_timeout" not in params:
            conninfo = self._psycopg.conninfo.make_conninfo(
                conninfo, connect_timeout=CONNECT_TIMEOUT_S
            )
        self._conninfo = conninfo
        self._pool: Any = None
        self._opening: asyncio.Lock | None = None
        self._closed = False

    def _error(self, exc: BaseException, session_id: str | None = None) -> SessionTreeError:
        errors = self._psycopg.errors
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if isinstance(exc, errors.UniqueViolation):
            return DuplicateEntryError(f"already exists ({first})", session_id=session_id)
        if isinstance(exc, self._psycopg.DataError):
            return InvalidEntryError(
                f"PostgreSQL refused the value: {first}", session_id=session_id
            )
        if isinstance(exc, self._pool_mod.PoolTimeout):
            return StorageError(f"{self._where}: no connection available: {first}")
        if isinstance(exc, self._psycopg.OperationalError):
            return StorageError(f"{self._where}: cannot reach PostgreSQL: {first}")
        return StorageError(f"{self._where}: {first}")

    async def _get_pool(self) -> Any:
        if self._pool is not None:
            return self._pool
        if self._closed:
            raise StorageError(f"{self._where}: the repository is closed")
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                try:
                    await self._setup()
                    pool = self._pool_mod.AsyncConnectionPool(
                        self._conninfo,
                        min_size=1,
                        max_size=POOL_MAX_SIZE,
                        kwargs={"autocommit": True},
                        open=False,
                        timeout=30,
                    )
                    await pool.open(wait=True, timeout=CONNECT_TIMEOUT_S * 2)
                except SessionTreeError:
                    raise
                except self._psycopg.Error as exc:
                    raise self._error(exc) from exc
                self._pool = pool
        return self._pool

    async def _setup(self) -> None:
        conn = await self._psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        async with conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            cur = await conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
            names = {r[0] for r in await cur.fetchall()}
            version = 0
            if "schema_version" not in names:
                if names:
                    raise foreign_database(self._where, f"it holds tables {sorted(names)[:5]}")
            else:
                cur = await conn.execute(
                    "SELECT max(version), count(*), count(*) FILTER (WHERE app = %s)"
                    " FROM schema_version",
                    (APP,),
                )
                top, count, ours = await cur.fetchone()
                if count and not ours:
                    raise foreign_database(
                        self._where, "schema_version belongs to another application"
                    )
                version = int(top or 0)
            check_version(version, self._where)
            for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in migration.postgres:
                    await conn.execute(statement)
                await conn.execute(
                    "INSERT INTO schema_version (app, version, applied_at_ms) VALUES (%s, %s, %s)",
                    (APP, number, now_ms()),
                )

    async def close(self) -> None:
        """Close the pool. Idempotent."""
        self._closed = True
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    async def _fetch(
        self, sql: str, params: Any = None, session_id: str | None = None
    ) -> list[Any]:
        pool = self._pool or await self._get_pool()
        try:
            async with pool.connection() as conn:
                cur = await conn.execute(sql, params)
                return await cur.fetchall()  # type: ignore[no-any-return]
        except self._psycopg.Error as exc:
            raise self._error(exc, session_id) from exc

    async def _execute(self, sql: str, params: Any = None, session_id: str | None = None) -> int:
        pool = self._pool or await self._get_pool()
        try:
            async with pool.connection() as conn:
                cur = await conn.execute(sql, params)
                return int(cur.rowcount)
        except self._psycopg.Error as exc:
            raise self._error(exc, session_id) from exc
