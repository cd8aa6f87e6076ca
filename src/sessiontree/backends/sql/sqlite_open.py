"""Opening a SQLite store: the ``sqlite:`` URL, the connection, the schema check and migration.

One ``sqlite3`` connection per engine (shared by the repository and every session it opens),
in WAL mode with a busy timeout, so readers never block and writers from several processes
queue instead of failing. Every write runs in ``BEGIN IMMEDIATE`` … ``COMMIT``
(:func:`write_transaction`), so the validation read and the writes see the same state.
Every operation runs on the connection's own thread
(:mod:`~sessiontree.backends.sql.sqlite_thread`), so a write waiting for another process's
lock, or the opening's retries, never stall the event loop.

Opening is careful: the file is checked to be a sessiontree database (or empty) *before*
anything is written to it; setting WAL and migrating are retried while another process holds
the lock during its own first open; a newer schema version is refused.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

from sessiontree.backends.sql.schema import (
    APP,
    MIGRATIONS,
    SCHEMA_VERSION,
    SQLITE_VERSION_SQL,
    check_version,
    foreign_database,
)
from sessiontree.backends.sql.sqlite_thread import ConnectionThread
from sessiontree.errors import SessionTreeError, StorageError, StorageTimeoutError
from sessiontree.ids import now_ms
from sessiontree.storage.encryption import META_KEY, Codec, check_store_keys
from sessiontree.storage.private_files import (
    create_private_file,
    make_private_dirs,
    on_read_only_file_system,
    read_only_reason,
)

__all__ = [
    "SQLiteConnection",
    "is_busy",
    "on_connection_thread",
    "sqlite_path_from_url",
    "write_transaction",
]

_SYNC_LEVELS = {"off": "OFF", "normal": "NORMAL", "full": "FULL", "extra": "EXTRA"}


def sqlite_path_from_url(url: str) -> tuple[str, dict[str, str]]:
    """The file path and query options of a ``sqlite:`` URL (SQLAlchemy's convention).

    ``sqlite:///rel/file.db`` → ``rel/file.db`` (relative to the working directory, as
    SQLAlchemy reads it); ``sqlite:////abs/file.db`` → ``/abs/file.db``;
    ``sqlite:///:memory:`` and ``sqlite://`` → ``:memory:``; ``sqlite:rel.db`` → ``rel.db``. Options:
    ``?synchronous=normal|full|off|extra`` (default ``normal``: durable against a crash of the
    process, not of the machine), ``?timeout=<seconds>`` (busy timeout, default 30).

    Raises:
        StorageError: no path, a host (``sqlite://host/…``), or an unknown option.
    """
    rest = url.split(":", 1)[1]
    rest, _, query = rest.partition("?")
    if rest == "//":  # SQLAlchemy's in-memory database
        rest = ":memory:"
    elif rest.startswith("//"):
        host, slash, rest = rest[2:].partition("/")
        if host or not slash:
            raise StorageError(
                f"a sqlite URL names no host: {url!r}; use sqlite:///relative/path.db "
                "or sqlite:////absolute/path.db"
            )
    opts: dict[str, str] = {}
    for part in filter(None, query.split("&")):
        key, _, value = part.partition("=")
        if key not in ("synchronous", "timeout"):
            raise StorageError(f"unknown option {key!r} in {url!r} (synchronous, timeout)")
        opts[key] = value
    if opts.get("synchronous", "normal").lower() not in _SYNC_LEVELS:
        raise StorageError(f"synchronous must be one of {sorted(_SYNC_LEVELS)} in {url!r}")
    if not rest:
        raise StorageError(
            f"no database file in {url!r}: use sqlite:///relative/path.db or "
            "sqlite:////absolute/path.db"
        )
    return rest, opts


@contextlib.contextmanager
def write_transaction(
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


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is SQLite's "database is locked" (another connection holds the lock)."""
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


def _drive(
    method: Callable[..., Coroutine[Any, Any, Any]],
    owner: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Run a coroutine method of an engine to its end in this thread.

    The engine's coroutine methods are synchronous code behind ``async def`` (the protocol
    is async); they await nothing but each other, so one ``send`` runs them whole.

    Raises:
        RuntimeError: the method awaited something else (it would need the loop).
    """
    coro = method(owner, *args, **kwargs)
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError(
        f"{method.__qualname__} awaited something other than the engine's own methods"
    )


def on_connection_thread(
    method: Callable[..., Coroutine[Any, Any, Any]],
) -> Callable[..., Coroutine[Any, Any, Any]]:
    """``method`` of an engine (an object whose ``connection`` is a :class:`SQLiteConnection`)
    run whole on that connection's thread (:meth:`SQLiteConnection.run`). Its body is
    synchronous ``sqlite3`` code and may await only other such methods of the engine."""

    @functools.wraps(method)
    async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return await self.connection.run(method, self, args, kwargs)

    call.__sessiontree_on_thread__ = True  # type: ignore[attr-defined]
    return call


class SQLiteConnection:
    """The connection of one SQLite file, opened (checked, migrated) on first use.

    Every operation of the engine that owns it (a method marked :func:`on_connection_thread`)
    runs whole on the connection's own thread
    (:class:`~sessiontree.backends.sql.sqlite_thread.ConnectionThread`), in the order called:
    its body is synchronous ``sqlite3`` code and may await only other such methods. The event loop is never blocked, not by a lock another process
    holds for the whole busy timeout nor by the disk, and tasks and threads may share one
    connection. A call cancelled before its turn does nothing; once started it runs to its
    end (its transaction commits or rolls back whole).

    Files: a new database is created ``0600`` (SQLite gives its ``-wal``/``-shm`` files the
    same mode) and missing directories ``0700``. With ``read_only`` the file is opened with
    ``mode=ro`` (on a read-only file system ``immutable=1``), a missing file is an error
    instead of a new store, and every write raises :class:`StorageError`. A file that cannot
    be written (permissions, read-only media) is opened read-only too: reads work, writes
    raise :class:`StorageError` saying why. A read-only open of a store written by an older
    sessiontree upgrades its schema once first when the file can be written, and says why
    it cannot be read otherwise.

    Every write (:meth:`writing`) checks, just before its ``COMMIT``, that the file at the
    path is still the one the connection opened (device and inode): a database deleted or
    replaced under an open store would otherwise take the write into an unlinked file and
    acknowledge entries that are gone. The write is rolled back and :class:`StorageError`
    raised instead.
    """

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self.url = url
        self.read_only = read_only
        self._unwritable: str | None = None  # why this connection cannot write, if it cannot
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the opened file
        self.path, opts = sqlite_path_from_url(url)
        self._sync = _SYNC_LEVELS[opts.get("synchronous", "normal").lower()]
        try:
            self.timeout = float(opts.get("timeout", "30"))
        except ValueError:
            raise StorageError(f"timeout must be a number of seconds in {url!r}") from None
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._thread: ConnectionThread | None = None
        self._stop_thread: weakref.finalize[Any, Any] | None = None
        self._inherited: list[sqlite3.Connection] = []
        """Connections of the process this one was forked from (see :meth:`_running_thread`)."""
        self.codec: Codec | None = None
        """The cipher of an encrypted store (set by its engine before first use), checked
        against the store's ``encryption`` row when the file is opened."""

    async def run(
        self,
        method: Callable[..., Coroutine[Any, Any, Any]],
        owner: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        """``method(owner, *args, **kwargs)`` run whole on this connection's thread (started on
        first use), after the operations called before it; inline when called from an
        operation already running there.

        Raises:
            StorageError: the connection is closed.
        """
        thread = self._running_thread()
        if thread is not None and threading.get_ident() == thread.ident:
            # called by another operation of this connection: already on its thread
            return await method(owner, *args, **kwargs)
        if self._closed:
            raise StorageError(f"{self.url}: the repository is closed")
        if thread is None:
            thread = self._start_thread()
        return await thread.run(functools.partial(_drive, method, owner, args, kwargs))

    def _running_thread(self) -> ConnectionThread | None:
        """The connection's thread, ``None`` before it starts, or in a process forked since
        (where it does not run). A forked child drops the connection too: SQLite connections
        must not be used across ``fork``, and closing it could touch the parent's locks; the
        child opens its own on its next call."""
        thread = self._thread
        if thread is not None and thread.pid != os.getpid():
            if self._stop_thread is not None:
                self._stop_thread.detach()
            self._thread = self._stop_thread = None
            if self._conn is not None:
                self._inherited.append(self._conn)  # kept, never used nor closed here
                self._conn = None
            return None
        return thread

    def _start_thread(self) -> ConnectionThread:
        """The connection's thread, started; stopped when this is closed or collected."""
        thread = ConnectionThread(f"sessiontree-sqlite {self.path}")
        self._thread = thread
        self._stop_thread = weakref.finalize(self, thread.stop)
        return thread

    def error(self, exc: BaseException) -> SessionTreeError:
        """The :mod:`sessiontree.errors` error for a driver error of this connection (the
        caller raises it ``from exc``): a foreign file, a write it cannot make, a lock not
        granted within the busy timeout (:class:`StorageTimeoutError`), else
        :class:`StorageError` naming the file."""
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, sqlite3.DatabaseError) and "not a database" in msg:
            return foreign_database(self.path, msg)
        if "readonly" in msg or "read-only" in msg:
            return self._read_only_error()
        if isinstance(exc, sqlite3.Error) and is_busy(exc):
            return StorageTimeoutError(
                f"{self.path}: database is locked by another writer for over {self.timeout:g} s"
            )
        return StorageError(f"{self.path}: {msg}")

    def db(self) -> sqlite3.Connection:
        """The ``sqlite3`` connection, opened (checked, migrated) on first use; call it on the
        connection's thread.

        Raises:
            StorageError: closed, or the file cannot be opened or is not a store.
        """
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
            raise self.error(exc) from exc
        self._conn = conn
        return conn

    @property
    def cannot_write(self) -> bool:
        """Opened read-only, or on a file that cannot be written."""
        return self.read_only or self._unwritable is not None

    def _read_only_error(self) -> StorageError:
        """The error of a write this connection cannot make."""
        if self.read_only:
            return StorageError(f"{self.path}: the store was opened read-only; nothing written")
        why = self._unwritable or "the database file is read-only"
        return StorageError(f"{self.path}: cannot write: {why}; nothing written")

    def same_file(self) -> None:
        """Raise if the file at the path is not the one the connection opened (deleted or
        replaced since); the caller's transaction is then rolled back.

        Raises:
            StorageError: the file is gone or another one.
        """
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

    def writing(self, conn: sqlite3.Connection) -> contextlib.AbstractContextManager[None]:
        """The write transaction of this engine: refused on a connection that cannot write,
        checked to still be on the opened file before ``COMMIT``.

        Raises:
            StorageError: the connection cannot write (nothing is begun).
        """
        if self.cannot_write:
            raise self._read_only_error()
        return write_transaction(conn, before_commit=self.same_file)

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
            if self.cannot_write:
                uri = True
                # one leading slash: "file://x" would name a host
                target = f"file:{urllib.parse.quote('/' + str(path).lstrip('/'))}?mode=ro"
                if on_read_only_file_system(path) and not Path(f"{path}-shm").exists():
                    # read-only media: no -shm file can be made for WAL reads, and no
                    # writer can change the file under us
                    target += "&immutable=1"
        conn = sqlite3.connect(
            target, timeout=self.timeout, isolation_level=None, check_same_thread=False, uri=uri
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
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                # read-only checks first: nothing is written to a database that is not ours
                version = self._stored_version(conn)
                check_version(version, self.path)
                if self.cannot_write:
                    self._check_readable_version(version)
                    self._check_keys(conn)
                    return
                if not memory:
                    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
                    if str(mode).lower() != "wal":
                        conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {self._sync}")
                if version != SCHEMA_VERSION:
                    self._migrate(conn)
                self._check_keys(conn)
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _check_keys(self, conn: sqlite3.Connection) -> None:
        """Check :attr:`codec` against the store's ``encryption`` row and write the row it
        needs (under the write lock, read again there) when the file can be written.

        Raises:
            EncryptionKeyError: the store is encrypted and the keys do not open it.
        """
        select = "SELECT value FROM store_meta WHERE key = ?"
        row = conn.execute(select, (META_KEY,)).fetchone()
        if check_store_keys(self.codec, row and row[0], self.path) is None or self.cannot_write:
            return
        with self.writing(conn):
            row = conn.execute(select, (META_KEY,)).fetchone()
            value = check_store_keys(self.codec, row and row[0], self.path)
            if value is not None:
                conn.execute(
                    "INSERT INTO store_meta (key, value) VALUES (?, ?)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (META_KEY, value),
                )

    def _check_readable_version(self, version: int | None) -> None:
        """A connection that cannot write needs a store of this schema version already.

        Raises:
            StorageError: no sessiontree store in the file, or one that needs migrating
                and cannot be written.
        """
        if version is None:
            raise StorageError(f"{self.path}: no store here (the file holds no sessiontree data)")
        if version < SCHEMA_VERSION:
            if self.read_only and self._unwritable is None:
                # the file can be written: upgrade it once through a writing connection
                writer = SQLiteConnection(self.url)
                try:
                    writer.db()
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
        row = conn.execute(SQLITE_VERSION_SQL, (APP,)).fetchone()
        if row[1] and not row[2]:
            raise foreign_database(self.path, "schema_version belongs to another application")
        return None if row[0] is None else int(row[0])

    def _migrate(self, conn: sqlite3.Connection) -> None:
        with self.writing(conn):
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
        """Close the connection once the operations already called are done, and stop its
        thread. Later calls raise :class:`StorageError`. Idempotent."""
        self._closed = True
        thread = self._running_thread()
        if thread is None:
            self._close_now()
            return
        await thread.run(self._close_now)
        if self._stop_thread is not None:
            self._stop_thread()  # once, however many closes wait here
        self._thread = None

    def _close_now(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()

    def query(self, sql: str, params: Any = ()) -> list[Any]:
        """The rows of one statement (on the connection's thread).

        Raises:
            StorageError: the database failed (:meth:`error`).
        """
        conn = self.db()
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self.error(exc) from exc
