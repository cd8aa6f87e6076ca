"""Where the viewer's requests read the store: a few reader threads, each with its own event
loop and its own connection to the store, never the server's event loop.

A page's work — opening a session, reading and parsing its entries, listing, searching,
summarizing, laying out and rendering — runs whole on one reader (:meth:`Readers.run`). The
server's loop only accepts connections and hands requests over, so however long one page takes
(a 100,000-entry transcript, a model filter that reads every session, a search) the others are
served meanwhile by another reader: a request goes to the reader with the fewest requests in
hand, and among equals to the one that last served the same session (whose open session and
transcript index it still holds).

Each reader opens the store anew from its URL (:func:`~sessiontree.repos.open_repo`): a SQLite
reader has its own connection and thread (a long read of one reader does not queue the
others'), a PostgreSQL reader its own pool on its own loop (a pool belongs to one loop), a
JSONL reader its own view of the directory (JSONL stores are made for several writers). A store
that cannot be opened again by URL (``memory://``, ``sqlite:///:memory:``, a repository of
another class) is shared by every reader.

The readers start with the first request and stop when the app stops.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from sessiontree.backends.jsonl.repo import JSONLRepo
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.repos import open_repo
from sessiontree.repos.base import SessionRepo

__all__ = ["READERS", "Readers", "own_repo"]

READERS = 4
"""Reader threads of one app: up to this many heavy pages are built at once while another
reader is still free for the next request."""

S = TypeVar("S")
T = TypeVar("T")


def own_repo(repo: SessionRepo) -> tuple[SessionRepo, bool]:
    """A repository of its own for one reader: ``(repo, opened)``; ``opened`` is ``False``
    when ``repo`` itself is shared (a store that cannot be opened again by its URL)."""
    url = repo.url
    if type(repo) is SQLRepo and ":memory:" not in url:
        return SQLRepo(url, read_only=repo.read_only, keys=repo.keys), True
    if type(repo) is JSONLRepo:
        return open_repo("jsonl://" + str(repo.root), read_only=repo.read_only), True
    return repo, False


class _Reader(Generic[S]):
    """One thread running its own event loop, and the state requests use on it."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.busy = 0
        """Requests handed to it and not yet answered (counted on the server's loop)."""
        self.state: S | None = None
        self.opened: SessionRepo | None = None
        """The repository opened for it (``None`` while it shares the app's)."""
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """``await work()`` on this reader's loop; its result or exception here. Cancelled
        here (the client went away), the work is cancelled there."""
        future = asyncio.run_coroutine_threadsafe(_call(work), self.loop)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise


async def _call(work: Callable[[], Awaitable[T]]) -> T:
    return await work()


class Readers(Generic[S]):
    """The readers of one app.

    ``make(repo)`` builds a reader's state (its open sessions, its indexes) on its loop, from
    the repository :func:`own_repo` gives it; ``close(state)`` releases it when the app stops.
    """

    def __init__(
        self,
        repo: SessionRepo,
        make: Callable[[SessionRepo], S],
        close: Callable[[S], Awaitable[None]],
        *,
        size: int = READERS,
    ) -> None:
        self.repo = repo
        self._make = make
        self._close = close
        self.size = size
        self._readers: list[_Reader[S]] = []
        self._last: dict[Hashable, _Reader[S]] = {}

    def _pick(self, key: Hashable | None, sticky: bool) -> _Reader[S]:
        if not self._readers:
            self._readers = [_Reader(f"sessiontree-reader-{i}") for i in range(self.size)]
        idle = min(r.busy for r in self._readers)
        last = self._last.get(key) if key is not None else None
        if last is not None and (sticky or last.busy == idle):
            return last
        return next(r for r in self._readers if r.busy == idle)

    async def run(
        self,
        work: Callable[[S], Awaitable[T]],
        *,
        key: Hashable | None = None,
        sticky: bool = False,
    ) -> T:
        """``await work(state)`` on a reader with that reader's state; its result or
        exception. The reader is the least busy; among equals the one that last served
        ``key`` (a session id), and with ``sticky`` that one even when busy (a live stream's
        look at a session, which that reader's index answers by reading only what is new).

        Called on the server's loop; the work never runs there.
        """
        reader = self._pick(key, sticky)
        if key is not None:
            self._last[key] = reader
            if len(self._last) > 4096:  # forget the oldest preferences
                del self._last[next(iter(self._last))]
        reader.busy += 1
        try:
            return await reader.run(lambda: self._on_reader(reader, work))
        finally:
            reader.busy -= 1

    async def _on_reader(self, reader: _Reader[S], work: Callable[[S], Awaitable[T]]) -> T:
        if reader.state is None:
            repo, opened = own_repo(self.repo)
            if opened:
                reader.opened = repo
            reader.state = self._make(repo)
        return await work(reader.state)

    async def close(self) -> None:
        """Release every reader's state and repository and stop the threads. Idempotent."""
        readers, self._readers = self._readers, []
        for reader in readers:
            state, opened = reader.state, reader.opened
            reader.state = reader.opened = None
            try:
                if state is not None:
                    await reader.run(functools.partial(self._close, state))
            finally:
                try:
                    if opened is not None:
                        await reader.run(opened.close)
                finally:
                    reader.loop.call_soon_threadsafe(reader.loop.stop)
                    reader.thread.join(10)
        self._last.clear()
