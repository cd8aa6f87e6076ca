"""The worker thread of one SQLite connection: every call of the engine runs there, off the loop.

``sqlite3`` blocks the calling thread: on a lock held by another writer for up to the busy
timeout (30 s by default), on the disk, on a checkpoint. Run on the event loop, that stalls
every other task of the program for the whole wait. So each
:class:`~sessiontree.backends.sql.sqlite_open.SQLiteConnection` owns one thread, started on
first use, and runs every operation on it, whole and in the order they were asked for: the
loop only hands the call over and awaits its result (:class:`ConnectionThread`).

One thread per connection keeps what SQLite needs: one connection is used by one thread at a
time, and one operation (a whole transaction) never interleaves with another of the same
connection. The hand-over costs a thread wake-up each way (bench/README.md); an operation
that waits for a lock costs the loop nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["ConnectionThread"]

T = TypeVar("T")

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[[], Any]]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """Give the job's outcome to its awaiter (on the loop's thread); nothing if it was cancelled."""
    if future.done():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    """Run the jobs in order until ``None`` comes. Holds no reference to the connection's
    owner between jobs, so an owner dropped without closing is collected (and stops this)."""
    while True:
        job = jobs.get()
        if job is None:
            return
        loop, future, call = job
        del job
        if future.cancelled():  # its awaiter gave up before its turn: nothing is done
            del loop, future, call
            continue
        result: Any = None
        error: BaseException | None = None
        try:
            result = call()
        except BaseException as exc:  # handed to the awaiter, which re-raises it
            error = exc
        del call
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody awaits the result
            loop.call_soon_threadsafe(_settle, future, result, error)
        del loop, future, result, error


class ConnectionThread:
    """One daemon thread running blocking calls one after another, for any event loop.

    :meth:`run` hands a call over and awaits it. A call whose awaiter is cancelled before
    its turn is skipped (nothing is done); once started it runs to its end (a transaction
    commits or rolls back whole) and its result is dropped. :meth:`stop` ends the thread
    after the calls already handed over; it is called when the owner closes, or is
    collected without closing (``weakref.finalize`` in the owner).

    The thread is a daemon: a call waiting for another process's lock does not keep the
    program from exiting (its transaction then never commits).
    """

    def __init__(self, name: str) -> None:
        self.pid = os.getpid()
        """The process the thread runs in (a forked child has no such thread)."""
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=_serve, args=(self._jobs,), name=name, daemon=True)
        self._thread.start()

    @property
    def ident(self) -> int | None:
        """The thread's identifier (``threading.get_ident()`` inside it)."""
        return self._thread.ident

    async def run(self, call: Callable[[], T]) -> T:
        """``call()`` on the thread, after every call handed over before it; its result or
        its exception here."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((loop, future, call))
        return await future

    def stop(self) -> None:
        """End the thread once the calls handed over so far are done. Idempotent."""
        self._jobs.put(None)
