"""The sessiontree API without ``await``: for scripts, Flask/Django views and notebooks.

:func:`open_repo` gives a :class:`SyncRepo` whose methods are those of
:class:`~sessiontree.SessionRepo`, called without ``await``; the sessions it returns are
:class:`SyncSession` objects with the methods of :class:`~sessiontree.Session`::

    from sessiontree.sync import open_repo

    with open_repo("sqlite:///chats.db") as repo:
        session = repo.create(metadata={"userId": "u1"})
        session.append_message({"role": "user", "content": "hi"})
        print(session.build_context().messages)

Every repository runs on a private event loop in a daemon thread of its own (the store's
connections and locks belong to that loop for their whole life). A call from any thread
submits the coroutine to that loop and waits for it, so one repository is safe to share
between threads, and works where a loop is already running (a notebook cell, an async
framework calling sync code): the caller's loop is never used. ``close()`` closes the store
on its loop, then stops and joins the thread; a repository dropped without ``close()`` is
closed when it is garbage-collected or at interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import inspect
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from sessiontree.repos import SessionRepo
from sessiontree.repos import open_repo as _open_async_repo
from sessiontree.session import Session

__all__ = ["LoopThread", "SyncRepo", "SyncSession", "open_repo", "shared_repo", "wrap_repo"]

T = TypeVar("T")


class LoopThread:
    """An event loop running forever in a daemon thread; :meth:`run` waits for a coroutine.

    Args:
        name: the thread's name (shown in tracebacks and ``threading.enumerate()``).
    """

    def __init__(self, name: str = "sessiontree-sync") -> None:
        self.loop = asyncio.new_event_loop()
        self._closed = False
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and return its result (its exception is raised here).

        Raises:
            RuntimeError: called from the loop's own thread (it would wait for itself), or
                after :meth:`close`.
        """
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError(
                "a sessiontree.sync call was made from the repository's own event loop; "
                "use the async API there"
            )
        with self._lock:
            if self._closed:
                coro.close()
                raise RuntimeError("this sessiontree.sync repository is closed")
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result()

    async def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` run on this loop from another loop (the caller's loop keeps running)."""
        if threading.current_thread() is self.thread:
            return await coro
        with self._lock:
            if self._closed:
                coro.close()
                raise RuntimeError("this sessiontree.sync repository is closed")
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Stop the loop and join the thread. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if threading.current_thread() is self.thread:  # pragma: no cover - misuse
            self.loop.stop()
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


def _wrap(value: Any, runner: LoopThread) -> Any:
    if isinstance(value, Session):
        return SyncSession(value, runner)
    if isinstance(value, list) and value and isinstance(value[0], Session):
        return [SyncSession(v, runner) for v in value]
    return value


class _SyncProxy:
    """Calls the wrapped object's coroutine methods on the loop thread and waits for them."""

    _target: Any
    _runner: LoopThread

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not inspect.iscoroutinefunction(attr):
            return attr
        runner = self._runner

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            return _wrap(runner.run(attr(*args, **kwargs)), runner)

        return call

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(dir(self._target)))


class SyncSession(_SyncProxy):
    """A :class:`~sessiontree.Session` whose methods are called without ``await``.

    ``id`` and ``storage`` are the session's; ``fork`` returns a :class:`SyncSession`. The
    async session stays reachable as :attr:`aio` (use it only on the repository's loop).
    """

    def __init__(self, session: Session, runner: LoopThread) -> None:
        self._target = session
        self._runner = runner
        self.id = session.id

    @property
    def aio(self) -> Session:
        """The async :class:`~sessiontree.Session` behind this object."""
        return self._target  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"SyncSession({self.id!r})"

    def __enter__(self) -> SyncSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncRepo(_SyncProxy):
    """A :class:`~sessiontree.SessionRepo` whose methods are called without ``await``.

    ``create``, ``open`` and ``fork`` return :class:`SyncSession` objects. Usable as
    ``with open_repo(url) as repo:``. The async repository is :attr:`aio`; :meth:`call` runs
    any coroutine function on the repository's loop (e.g. ``repo.call(compact, session.aio)``).
    """

    def __init__(self, repo: SessionRepo, runner: LoopThread) -> None:
        self._target = repo
        self._runner = runner
        self.url = repo.url
        self._finalizer = weakref.finalize(self, _close, repo, runner)

    @property
    def aio(self) -> SessionRepo:
        """The async repository (its methods must run on :attr:`runner`'s loop)."""
        return self._target  # type: ignore[no-any-return]

    @property
    def runner(self) -> LoopThread:
        """The loop thread this repository runs on."""
        return self._runner

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Run ``await fn(*args, **kwargs)`` on the repository's loop and return the result."""

        async def go() -> T:
            return await fn(*args, **kwargs)

        return _wrap(self._runner.run(go()), self._runner)  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close the store and stop the loop thread. Idempotent."""
        self._finalizer()

    def __repr__(self) -> str:
        return f"SyncRepo({self.url!r})"

    def __enter__(self) -> SyncRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close(repo: SessionRepo, runner: LoopThread) -> None:
    try:
        runner.run(repo.close())
    except RuntimeError:
        pass
    finally:
        runner.close()


def wrap_repo(factory: Callable[[], SessionRepo]) -> SyncRepo:
    """A :class:`SyncRepo` of the repository ``factory()`` builds on a new loop thread.

    The factory runs on that thread's loop, so everything the repository creates belongs
    to it.
    """
    runner = LoopThread()

    async def build() -> SessionRepo:
        return factory()

    try:
        repo = runner.run(build())
    except BaseException:
        runner.close()
        raise
    return SyncRepo(repo, runner)


def open_repo(url: str | None = None) -> SyncRepo:
    """:func:`sessiontree.open_repo` for sync code: the same URLs, the same errors.

    Raises:
        StorageError: an unknown scheme. MissingExtraError: the backend's driver is missing.
    """
    return wrap_repo(lambda: _open_async_repo(url))


_SHARED: dict[str, SyncRepo] = {}
_SHARED_LOCK = threading.Lock()


def shared_repo(url: str) -> SyncRepo:
    """One :class:`SyncRepo` per URL for the whole process, closed at interpreter exit.

    Framework adapters given only a URL use it, so a thousand session objects share one
    connection pool and one loop thread.
    """
    with _SHARED_LOCK:
        repo = _SHARED.get(url)
        if repo is None:
            repo = _SHARED[url] = open_repo(url)
        return repo


@atexit.register
def _close_shared() -> None:
    with _SHARED_LOCK:
        repos = list(_SHARED.values())
        _SHARED.clear()
    for repo in repos:
        repo.close()
