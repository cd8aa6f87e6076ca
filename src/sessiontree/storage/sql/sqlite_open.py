"""Opening a SQLite store: the ``sqlite:`` URL, the connection, the schema check and migration.

One ``sqlite3`` connection per engine (shared by the repository and every session it opens),
in WAL mode with a busy timeout, so readers never block and writers from several processes
queue instead of failing. Every write runs in ``BEGIN IMMEDIATE`` … ``COMMIT``
(:func:`write_transaction`), so the validation read and the writes see the same state.

Opening is careful: the file is checked to be a sessiontree database (or empty) *before*
anything is written to it; setting WAL and migrating are retried while another process holds
the lock during its own first open; a newer schema version is refused.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sessiontree.errors import SessionTreeError, StorageError
from sessiontree.ids import now_ms
from sessiontree.storage.sql.schema import (
    APP,
    MIGRATIONS,
    SCHEMA_VERSION,
    check_version,
    foreign_database,
)

__all__ = ["SQLiteConnection", "is_busy", "sqlite_path_from_url", "write_transaction"]

_SYNC_LEVELS = {"off": "OFF", "normal": "NORMAL", "full": "FULL", "extra": "EXTRA"}


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
def write_transaction(conn: sqlite3.Connection, *, begun: bool = False) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` (unless the caller ``begun`` it) … ``COMMIT``; ``ROLLBACK`` if the
    body raises. Every write of this engine runs in one of these."""
    if not begun:
        conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def is_busy(exc: sqlite3.Error) -> bool:
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


class SQLiteConnection:
    """The connection of one SQLite file, opened (checked, migrated) on first use.

    Not thread-safe: use one per thread (asyncio tasks on one loop are fine as long as no
    method awaits inside a transaction).
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.path, opts = sqlite_path_from_url(url)
        self._sync = _SYNC_LEVELS[opts.get("synchronous", "normal").lower()]
        try:
            self._timeout = float(opts.get("timeout", "30"))
        except ValueError:
            raise StorageError(f"timeout must be a number of seconds in {url!r}") from None
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._leaf_types: dict[str, tuple[str | None, str]] = {}
        """Per session: the leaf this connection's last append left and its type."""

    def _error(self, exc: BaseException) -> SessionTreeError:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, sqlite3.DatabaseError) and "not a database" in msg:
            return foreign_database(self.path, msg)
        if "readonly" in msg or "read-only" in msg:
            return StorageError(f"{self.path}: the database is read-only ({msg})")
        if isinstance(exc, sqlite3.Error) and is_busy(exc):
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

    def _connect(self) -> sqlite3.Connection:
        memory = self.path == ":memory:" or self.path.startswith("file::memory:")
        if not memory:
            path = Path(self.path)
            if path.exists():
                mode = path.stat().st_mode
                if not os.access(path, os.W_OK) or not mode & (
                    stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
                ):
                    raise StorageError(f"{path}: the database file is read-only")
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
        )
        try:
            self._prepare(conn, memory)
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
                if not memory:
                    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
                    if str(mode).lower() != "wal":
                        conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {self._sync}")
                if version != SCHEMA_VERSION:
                    self._migrate(conn)
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

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
        with write_transaction(conn):
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

    def _query(self, sql: str, params: Any = ()) -> list[Any]:
        conn = self._db()
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
