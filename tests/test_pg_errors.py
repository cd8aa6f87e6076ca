"""PostgreSQL driver errors say what happened, against the real server: a statement cancelled by
``statement_timeout`` or a lock not granted within ``lock_timeout`` is a
:class:`StorageTimeoutError` naming the setting, a cancelled or terminated backend says so, and
only a server that cannot be reached says "cannot reach"."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from backends import throwaway_pg_database
from sessiontree import StorageError
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.errors import StorageTimeoutError

psycopg = pytest.importorskip("psycopg")


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text, "timestamp": 1}


@pytest.fixture
def pg_url() -> Iterator[str]:
    """An empty store; its URL ends with ``options=-csearch_path%3D<schema>``."""
    with throwaway_pg_database() as url:
        assert "options=-csearch_path%3D" in url
        yield url


def with_setting(url: str, name: str, value: str) -> str:
    """``url`` with one more server setting in its ``options``."""
    return f"{url}%20-c{name}%3D{value}"


class TableLock:
    """Another session holding ``ACCESS EXCLUSIVE`` on the ``sessions`` table until closed:
    every statement that reads or writes sessions waits for it."""

    def __init__(self, url: str) -> None:
        self.conn: Any = psycopg.connect(url, connect_timeout=5)
        self.conn.execute("LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE")

    def waiting_pid(self, timeout: float = 5.0) -> int:
        """The pid of the backend waiting for this lock."""
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.conn.info.dsn, autocommit=True, connect_timeout=5) as admin:
            while time.monotonic() < deadline:
                row = admin.execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND pid <> %s LIMIT 1",
                    (self.conn.info.backend_pid,),
                ).fetchone()
                if row:
                    return int(row[0])
                time.sleep(0.02)
        raise AssertionError("no backend waits for the lock")

    def signal(self, function: str, pid: int) -> None:
        with psycopg.connect(self.conn.info.dsn, autocommit=True, connect_timeout=5) as admin:
            assert admin.execute(f"SELECT {function}(%s)", (pid,)).fetchone() == (True,)

    def close(self) -> None:
        self.conn.rollback()
        self.conn.close()


async def test_a_statement_cancelled_by_statement_timeout_is_a_timeout_error(pg_url: str) -> None:
    async with SQLRepo(pg_url) as repo:
        s = await repo.create(id="t")
        kept = await s.append_message(user("kept"))
    async with SQLRepo(with_setting(pg_url, "statement_timeout", "300")) as repo:
        session = await repo.open("t")
        lock = TableLock(pg_url)
        try:
            for call in (repo.list(), session.append_message(user("refused"))):
                with pytest.raises(StorageTimeoutError) as err:
                    await call
                message = str(err.value)
                assert "statement_timeout" in message and "cancelled" in message, message
                assert "cannot reach" not in message and "\n" not in message
                assert isinstance(err.value, TimeoutError)
                assert isinstance(err.value.__cause__, psycopg.errors.QueryCanceled)
        finally:
            lock.close()
        assert [e.id for e in await session.get_entries()] == [kept]  # nothing written
        assert [i.id for i in await repo.list()] == ["t"]  # the repository still works


async def test_a_lock_not_granted_within_lock_timeout_is_a_timeout_error(pg_url: str) -> None:
    async with SQLRepo(pg_url) as repo:
        await repo.create(id="t")
    async with SQLRepo(with_setting(pg_url, "lock_timeout", "200")) as repo:
        await repo.open("t")
        lock = TableLock(pg_url)
        try:
            with pytest.raises(StorageTimeoutError, match="lock_timeout") as err:
                await repo.list()
        finally:
            lock.close()
        assert "cannot reach" not in str(err.value)
        assert isinstance(err.value.__cause__, psycopg.errors.LockNotAvailable)


async def test_a_cancelled_statement_says_it_was_cancelled_not_timed_out(pg_url: str) -> None:
    async with SQLRepo(pg_url) as repo:
        await repo.create(id="t")
        lock = TableLock(pg_url)
        try:
            listing = asyncio.create_task(repo.list())
            pid = await asyncio.to_thread(lock.waiting_pid)
            await asyncio.to_thread(lock.signal, "pg_cancel_backend", pid)
            with pytest.raises(StorageError, match="cancelled") as err:
                await listing
        finally:
            lock.close()
        assert not isinstance(err.value, StorageTimeoutError)
        assert "cannot reach" not in str(err.value)


async def test_a_terminated_backend_says_the_server_ended_the_connection(pg_url: str) -> None:
    async with SQLRepo(pg_url) as repo:
        await repo.create(id="t")
        lock = TableLock(pg_url)
        try:
            listing = asyncio.create_task(repo.list())
            pid = await asyncio.to_thread(lock.waiting_pid)
            await asyncio.to_thread(lock.signal, "pg_terminate_backend", pid)
            with pytest.raises(StorageError, match="ended the connection") as err:
                await listing
        finally:
            lock.close()
        assert "cannot reach" not in str(err.value)
        assert [i.id for i in await repo.list()] == ["t"]  # the pool replaces the connection


async def test_only_an_unreachable_server_says_cannot_reach() -> None:
    repo = SQLRepo("postgresql://postgres@127.0.0.1:1/nowhere?connect_timeout=2")
    with pytest.raises(StorageError, match="cannot reach PostgreSQL") as err:
        await repo.list()
    await repo.close()
    assert not isinstance(err.value, StorageTimeoutError)
