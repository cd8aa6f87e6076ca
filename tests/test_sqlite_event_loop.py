"""A SQLite store never stalls the event loop, not even while another process holds the lock.

Another process holds ``BEGIN IMMEDIATE`` for :data:`LOCK_S` seconds; meanwhile a heartbeat
task on the loop measures its largest gap between two ticks. The target is 50 ms; the bound
asserted is :data:`MAX_GAP_S`, generous for a loaded 2-core machine: a store that waits on
the loop stalls it for the whole lock (seconds).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from sessiontree import StorageError
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.errors import StorageTimeoutError

T = TypeVar("T")

LOCK_S = 2.5
"""How long the other process holds the write lock (seconds)."""
MAX_GAP_S = 0.25
"""The largest heartbeat gap allowed (seconds); the target is 0.05."""

_HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
"""


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text, "timestamp": 1}


@contextmanager
def write_lock_held(path: Path, seconds: float = LOCK_S) -> Iterator[subprocess.Popen[str]]:
    """Another process holds the database's write lock for ``seconds`` (from when this
    enters)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        yield holder
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


class Heartbeat:
    """A task ticking every 5 ms; :attr:`max_gap` is the longest time between two ticks (s)."""

    def __init__(self) -> None:
        self.max_gap = 0.0
        self._last = time.perf_counter()
        self._task: asyncio.Task[None] | None = None

    def _tick(self) -> None:
        now = time.perf_counter()
        self.max_gap = max(self.max_gap, now - self._last)
        self._last = now

    async def _beat(self) -> None:
        self._last = time.perf_counter()
        while True:
            await asyncio.sleep(0.005)
            self._tick()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Heartbeat]:
        self._task = asyncio.create_task(self._beat())
        await asyncio.sleep(0.02)  # the first tick
        try:
            yield self
        finally:
            self._tick()  # the time since the last tick counts too
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


async def timed(call: Awaitable[T]) -> tuple[T, float]:
    start = time.perf_counter()
    result = await call
    return result, time.perf_counter() - start


async def test_an_append_waiting_for_another_process_lock_leaves_the_loop_running(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    async with SQLRepo(f"sqlite:///{path}") as repo:
        s = await repo.create()
        first = await s.append_message(user("before the lock"))
        with write_lock_held(path) as holder:
            async with Heartbeat().running() as beat:
                second, took = await timed(s.append_message(user("while locked")))
            assert holder.poll() is not None or took >= LOCK_S * 0.5  # it did wait
        assert beat.max_gap < MAX_GAP_S, f"the loop stalled {beat.max_gap:.3f} s"
        assert took >= LOCK_S * 0.5
        assert [e.id for e in await s.get_branch()] == [first, second]


async def test_reads_during_a_waiting_append_leave_the_loop_running(tmp_path: Path) -> None:
    # the same repository's reads queue behind its waiting append without blocking the loop;
    # another connection's reads are served at once (WAL readers take no lock)
    path = tmp_path / "s.db"
    url = f"sqlite:///{path}"
    async with SQLRepo(url) as repo, SQLRepo(url) as reader:
        s = await repo.create(id="s1")
        ids = [await s.append_message(user(f"m{i}")) for i in range(20)]
        other = await reader.open("s1")
        with write_lock_held(path) as holder:
            async with Heartbeat().running() as beat:
                append = asyncio.create_task(s.append_message(user("while locked")))
                await asyncio.sleep(0.05)
                same = asyncio.create_task(timed(s.get_branch()))
                (branch, took), (listed, list_took) = await asyncio.gather(
                    timed(other.get_branch()), timed(reader.list())
                )
                assert holder.poll() is None  # both answered while the lock is still held
                assert not same.done()
                new = await append
                same_branch, same_took = await same
        assert beat.max_gap < MAX_GAP_S, f"the loop stalled {beat.max_gap:.3f} s"
        assert took < LOCK_S / 2 and list_took < LOCK_S / 2
        assert [e.id for e in branch] == ids and [i.id for i in listed] == ["s1"]
        assert same_took >= LOCK_S * 0.3  # queued behind the append, in order
        assert [e.id for e in same_branch] == [*ids, new]


async def test_a_search_while_another_process_holds_the_lock_leaves_the_loop_running(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    async with SQLRepo(f"sqlite:///{path}") as repo:
        s = await repo.create()
        hit = await s.append_message(user("a zebra crossing"))
        with write_lock_held(path) as holder:
            async with Heartbeat().running() as beat:
                hits = await repo.search("zebra")
            assert holder.poll() is None
        assert beat.max_gap < MAX_GAP_S
        assert [h.entry_id for h in hits] == [hit]


async def test_a_lock_held_past_the_busy_timeout_fails_the_append_without_stalling(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    async with SQLRepo(f"sqlite:///{path}?timeout=0.5") as repo:
        s = await repo.create()
        kept = await s.append_message(user("kept"))
        with write_lock_held(path):
            async with Heartbeat().running() as beat:
                with pytest.raises(
                    StorageTimeoutError, match=r"locked by another writer for over 0.5 s"
                ):
                    await s.append_message(user("refused"))
        assert beat.max_gap < MAX_GAP_S
        assert [e.id for e in await s.get_entries()] == [kept]


async def test_calls_after_close_are_refused_and_close_waits_for_calls_in_flight(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    repo = SQLRepo(f"sqlite:///{path}")
    s = await repo.create()
    with write_lock_held(path, 1.0):
        append = asyncio.create_task(s.append_message(user("in flight")))
        await asyncio.sleep(0.05)
        await repo.close()  # waits for the append queued before it
        assert append.done()
        new = append.result()
    with pytest.raises(StorageError, match="closed"):
        await s.get_leaf_id()
    await repo.close()  # idempotent
    async with SQLRepo(f"sqlite:///{path}") as again:
        assert await (await again.open(s.id)).get_leaf_id() == new


async def test_a_cancelled_call_still_waiting_for_its_turn_does_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SQLRepo(f"sqlite:///{path}") as repo:
        s = await repo.create()
        with write_lock_held(path, 1.0):
            first = asyncio.create_task(s.append_message(user("first")))
            await asyncio.sleep(0.05)
            second = asyncio.create_task(s.append_message(user("cancelled")))
            await asyncio.sleep(0.01)
            second.cancel()
            kept = await first
        with pytest.raises(asyncio.CancelledError):
            await second
        assert [e.id for e in await s.get_entries()] == [kept]


def test_an_engine_dropped_without_close_stops_its_thread(tmp_path: Path) -> None:
    import gc
    import threading

    async def use() -> threading.Thread:
        repo = SQLRepo(f"sqlite:///{tmp_path / 's.db'}")
        await (await repo.create()).append_message(user("x"))
        ours = [t for t in threading.enumerate() if t.name.startswith("sessiontree-sqlite")]
        mine = [t for t in ours if str(tmp_path) in t.name]
        assert len(mine) == 1
        return mine[0]

    thread = asyncio.run(use())
    gc.collect()
    thread.join(5)
    assert not thread.is_alive()


def _append_in_child(session: Any, done: Any) -> None:
    async def child() -> str:
        new: str = await session.append_message(user("from the child"))
        await session.storage.close()
        return new

    done.put(asyncio.run(child()))


@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")  # fork with threads alive
def test_a_forked_child_opens_its_own_connection_and_thread(tmp_path: Path) -> None:
    # the connection's thread does not exist in a forked child: the child's calls must not
    # wait for it, nor use the parent's connection
    import multiprocessing

    repo = SQLRepo(f"sqlite:///{tmp_path / 's.db'}")

    async def start() -> tuple[Any, str]:
        s = await repo.create()
        return s, await s.append_message(user("from the parent"))

    session, first = asyncio.run(start())
    ctx = multiprocessing.get_context("fork")
    done = ctx.Queue()
    child = ctx.Process(target=_append_in_child, args=(session, done))
    child.start()
    child.join(30)
    if child.is_alive():
        child.kill()
        child.join()
    assert child.exitcode == 0
    from_child = done.get(timeout=5)
    done.close()

    async def finish() -> list[str]:
        third = await session.append_message(user("the parent again"))
        ids = [e.id for e in await session.get_branch()]
        await repo.close()
        assert ids[-1] == third
        return ids

    assert asyncio.run(finish())[:2] == [first, from_child]
