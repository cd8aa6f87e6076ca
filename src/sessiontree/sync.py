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

After ``os.fork()`` (gunicorn ``--preload``, multiprocessing's ``fork`` start method) the
child has none of the parent's loop threads, and the store's connections are the parent's.
A repository made before the fork is opened again, from the same URL (or factory), on a new
loop thread in the child on its first use there, and the sessions it returned are opened
again by id; the parent's connections are never used or closed by the child. A repository
that cannot be opened again (a ``memory://`` store lives in the parent's memory only), and a
bare :class:`LoopThread` of the parent, raise ``RuntimeError`` in the child. A child that
never uses sessiontree exits without waiting for anything of the parent's.
"""

from __future__ import annotations

import asyncio
import atexit
import builtins
import itertools
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sessiontree.context import EntryProjector, SessionContext, Transform, default_transform
from sessiontree.drafts import Draft, ToolRun
from sessiontree.entries import CompactionDetails, Entry, ThinkingLevel
from sessiontree.messages import AgentMessage, ContentBlock, Usage
from sessiontree.metadata import SearchHit, SessionInfo, SessionMetadata, SessionStats
from sessiontree.repos import MemoryRepo, SessionRepo
from sessiontree.repos import open_repo as _open_async_repo
from sessiontree.session import Session
from sessiontree.storage.base import SessionStorage
from sessiontree.storage.lease import Lease, LeaseRecord
from sessiontree.stored import PreparedEntry
from sessiontree.summarizers.base import Summarizer
from sessiontree.tree import ForkPosition, TreeNode

__all__ = ["LoopThread", "SyncRepo", "SyncSession", "open_repo", "shared_repo", "wrap_repo"]

T = TypeVar("T")


class LoopThread:
    """An event loop running forever in a daemon thread; :meth:`run` waits for a coroutine.

    Args:
        name: the thread's name (shown in tracebacks and ``threading.enumerate()``).
    """

    def __init__(self, name: str = "sessiontree-sync") -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self._closed = False
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def _check_process(self, coro: Coroutine[Any, Any, object]) -> None:
        """Refuse a call in a process forked from the one that started the thread (the
        thread does not exist there: waiting for it would never end)."""
        if self.pid != os.getpid():
            coro.close()
            raise RuntimeError(
                f"this sessiontree.sync loop thread was started in process {self.pid}, before "
                f"os.fork(); it does not run in this process ({os.getpid()}): open the "
                "repository again here (sessiontree.sync.open_repo)"
            )

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and return its result (its exception is raised here).

        Raises:
            RuntimeError: called from the loop's own thread (it would wait for itself), after
                :meth:`close`, or in a process forked after the thread was started.
        """
        self._check_process(coro)
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
        """Await ``coro`` run on this loop from another loop (the caller's loop keeps running).

        Raises:
            RuntimeError: after :meth:`close`, or in a process forked after the thread was
                started.
        """
        self._check_process(coro)
        if threading.current_thread() is self.thread:
            return await coro
        with self._lock:
            if self._closed:
                coro.close()
                raise RuntimeError("this sessiontree.sync repository is closed")
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Stop the loop and join the thread. Idempotent; does nothing in a forked child
        (the thread is the parent's)."""
        if self.pid != os.getpid():
            return
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


def _wrap(value: Any, runner: LoopThread, owner: SyncRepo | None) -> Any:
    if isinstance(value, Session):
        return SyncSession(value, runner, owner)
    if isinstance(value, list) and value and isinstance(value[0], Session):
        return [SyncSession(v, runner, owner) for v in value]
    return value


class _SyncProxy:
    """Runs the wrapped object's coroutines on the loop thread and waits for them."""

    _target: Any
    _runner: LoopThread
    _owner: SyncRepo | None

    def _current(self) -> None:
        """In a process forked since the target was opened: open it again here."""

    def _repo(self) -> SyncRepo | None:
        """The repository that calls returning sessions wrap them for."""
        return self._owner

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """``await coro`` on the loop thread (made after :meth:`_current`, so on this
        process's loop) and its result."""
        return self._runner.run(coro)

    def _session_of(self, coro: Coroutine[Any, Any, Session]) -> SyncSession:
        """The session ``coro`` returns, wrapped for this repository."""
        return SyncSession(self._runner.run(coro), self._runner, self._repo())


class SyncSession(_SyncProxy):
    """A :class:`~sessiontree.Session` whose methods are called without ``await``.

    ``id`` and ``storage`` are the session's; ``fork`` returns a :class:`SyncSession`. The
    async session stays reachable as :attr:`aio` (use it only on the repository's loop).
    """

    def __init__(self, session: Session, runner: LoopThread, owner: SyncRepo | None = None) -> None:
        self._target = session
        self._runner = runner
        self._owner = owner
        self.id = session.id

    def _current(self) -> None:
        """In a process forked since the session was opened: open it again by id from its
        repository (itself opened again here), or raise if it cannot be.

        Raises:
            RuntimeError: the repository cannot be opened again in this process.
        """
        if self._runner.pid == os.getpid():
            return
        owner = self._owner
        if owner is None:
            return  # the runner refuses the call with a clear error
        owner._current()
        stale = self._target
        self._target = owner._runner.run(owner._target.open(self.id))
        self._runner = owner._runner
        _ABANDONED.append(stale)

    @property
    def aio(self) -> Session:
        """The async :class:`~sessiontree.Session` behind this object."""
        self._current()
        return self._target  # type: ignore[no-any-return]

    @property
    def storage(self) -> SessionStorage:
        """The session's storage (:attr:`Session.storage <sessiontree.session.Session.storage>`;
        its methods are async and must run on the repository's loop)."""
        return self.aio.storage

    def __repr__(self) -> str:
        return f"SyncSession({self.id!r})"

    def __enter__(self) -> SyncSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # The methods of Session, in its order; tests/test_sync_api.py checks they are all here.

    def get_metadata(self) -> SessionMetadata:
        """:meth:`Session.get_metadata <sessiontree.session.Session.get_metadata>`, without ``await``."""
        return self._run(self.aio.get_metadata())

    def get_leaf_id(self) -> str | None:
        """:meth:`Session.get_leaf_id <sessiontree.session.Session.get_leaf_id>`, without ``await``."""
        return self._run(self.aio.get_leaf_id())

    def find_entry(self, entry_id: str) -> Entry | None:
        """:meth:`Session.find_entry <sessiontree.session.Session.find_entry>`, without ``await``."""
        return self._run(self.aio.find_entry(entry_id))

    def get_entry(self, entry_id: str) -> Entry | None:
        """:meth:`Session.get_entry <sessiontree.session.Session.get_entry>`, without ``await``."""
        return self._run(self.aio.get_entry(entry_id))

    def get_entries(
        self,
        *,
        after: str | None = None,
        limit: int | None = None,
        types: Collection[str] | None = None,
        reverse: bool = False,
    ) -> list[Entry]:
        """:meth:`Session.get_entries <sessiontree.session.Session.get_entries>`, without ``await``."""
        return self._run(
            self.aio.get_entries(after=after, limit=limit, types=types, reverse=reverse)
        )

    def get_branch(self, leaf_id: str | None = None) -> list[Entry]:
        """:meth:`Session.get_branch <sessiontree.session.Session.get_branch>`, without ``await``."""
        return self._run(self.aio.get_branch(leaf_id))

    def get_tree(self) -> list[TreeNode]:
        """:meth:`Session.get_tree <sessiontree.session.Session.get_tree>`, without ``await``."""
        return self._run(self.aio.get_tree())

    def get_label(self, entry_id: str) -> str | None:
        """:meth:`Session.get_label <sessiontree.session.Session.get_label>`, without ``await``."""
        return self._run(self.aio.get_label(entry_id))

    def get_name(self) -> str | None:
        """:meth:`Session.get_name <sessiontree.session.Session.get_name>`, without ``await``."""
        return self._run(self.aio.get_name())

    def build_context(
        self,
        leaf_id: str | None = None,
        system_prompt: str | None = None,
        transform: Transform = default_transform,
        entry_projectors: Mapping[str, EntryProjector] | None = None,
        *,
        repair_tool_pairs: bool = True,
    ) -> SessionContext:
        """:meth:`Session.build_context <sessiontree.session.Session.build_context>`, without ``await``."""
        return self._run(
            self.aio.build_context(
                leaf_id,
                system_prompt,
                transform,
                entry_projectors,
                repair_tool_pairs=repair_tool_pairs,
            )
        )

    def get_stats(self) -> SessionStats:
        """:meth:`Session.get_stats <sessiontree.session.Session.get_stats>`, without ``await``."""
        return self._run(self.aio.get_stats())

    def append_entry(self, entry: Entry | Mapping[str, Any]) -> str:
        """:meth:`Session.append_entry <sessiontree.session.Session.append_entry>`, without ``await``."""
        return self._run(self.aio.append_entry(entry))

    def append_entry_if(self, entry: Entry | Mapping[str, Any], expected_leaf: str | None) -> str:
        """:meth:`Session.append_entry_if <sessiontree.session.Session.append_entry_if>`, without ``await``."""
        return self._run(self.aio.append_entry_if(entry, expected_leaf))

    def append_message(
        self, message: AgentMessage | Mapping[str, Any], *, entry_id: str | None = None
    ) -> str:
        """:meth:`Session.append_message <sessiontree.session.Session.append_message>`, without ``await``."""
        return self._run(self.aio.append_message(message, entry_id=entry_id))

    def get_draft(self) -> Draft | None:
        """:meth:`Session.get_draft <sessiontree.session.Session.get_draft>`, without ``await``."""
        return self._run(self.aio.get_draft())

    def put_draft(self, draft: Draft | None) -> bool:
        """:meth:`Session.put_draft <sessiontree.session.Session.put_draft>`, without ``await``."""
        return self._run(self.aio.put_draft(draft))

    def settle_draft(self) -> str | None:
        """:meth:`Session.settle_draft <sessiontree.session.Session.settle_draft>`, without ``await``."""
        return self._run(self.aio.settle_draft())

    def acquire_lease(self, owner: str, *, ttl_s: float) -> Lease:
        """:meth:`Session.acquire_lease <sessiontree.session.Session.acquire_lease>`, without ``await``."""
        return self._run(self.aio.acquire_lease(owner, ttl_s=ttl_s))

    def renew_lease(self, lease: Lease, *, ttl_s: float) -> Lease:
        """:meth:`Session.renew_lease <sessiontree.session.Session.renew_lease>`, without ``await``."""
        return self._run(self.aio.renew_lease(lease, ttl_s=ttl_s))

    def release_lease(self, lease: Lease) -> None:
        """:meth:`Session.release_lease <sessiontree.session.Session.release_lease>`, without ``await``."""
        return self._run(self.aio.release_lease(lease))

    def get_lease(self) -> LeaseRecord | None:
        """:meth:`Session.get_lease <sessiontree.session.Session.get_lease>`, without ``await``."""
        return self._run(self.aio.get_lease())

    def get_tool_run(self) -> ToolRun | None:
        """:meth:`Session.get_tool_run <sessiontree.session.Session.get_tool_run>`, without ``await``."""
        return self._run(self.aio.get_tool_run())

    def put_tool_run(self, run: ToolRun | None) -> bool:
        """:meth:`Session.put_tool_run <sessiontree.session.Session.put_tool_run>`, without ``await``."""
        return self._run(self.aio.put_tool_run(run))

    def append_model_change(self, provider: str, model_id: str) -> str:
        """:meth:`Session.append_model_change <sessiontree.session.Session.append_model_change>`, without ``await``."""
        return self._run(self.aio.append_model_change(provider, model_id))

    def append_thinking_level_change(self, level: ThinkingLevel) -> str:
        """:meth:`Session.append_thinking_level_change <sessiontree.session.Session.append_thinking_level_change>`, without ``await``."""
        return self._run(self.aio.append_thinking_level_change(level))

    def append_active_tools_change(self, names: list[str]) -> str:
        """:meth:`Session.append_active_tools_change <sessiontree.session.Session.append_active_tools_change>`, without ``await``."""
        return self._run(self.aio.append_active_tools_change(names))

    def append_compaction(
        self,
        summary: str,
        tokens_before: int,
        *,
        first_kept_entry_id: str | None = None,
        details: CompactionDetails | Mapping[str, Any] | None = None,
        usage: Usage | Mapping[str, Any] | None = None,
        retained_tail: Sequence[AgentMessage | Mapping[str, Any]] | None = None,
    ) -> str:
        """:meth:`Session.append_compaction <sessiontree.session.Session.append_compaction>`, without ``await``."""
        return self._run(
            self.aio.append_compaction(
                summary,
                tokens_before,
                first_kept_entry_id=first_kept_entry_id,
                details=details,
                usage=usage,
                retained_tail=retained_tail,
            )
        )

    def append_branch_summary(
        self,
        summary: str,
        from_id: str,
        *,
        details: Any = None,
        usage: Usage | Mapping[str, Any] | None = None,
    ) -> str:
        """:meth:`Session.append_branch_summary <sessiontree.session.Session.append_branch_summary>`, without ``await``."""
        return self._run(
            self.aio.append_branch_summary(summary, from_id, details=details, usage=usage)
        )

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        """:meth:`Session.append_custom_entry <sessiontree.session.Session.append_custom_entry>`, without ``await``."""
        return self._run(self.aio.append_custom_entry(custom_type, data))

    def append_custom_message_entry(
        self,
        custom_type: str,
        content: str | list[ContentBlock] | list[Mapping[str, Any]],
        *,
        display: bool = True,
        details: Any = None,
    ) -> str:
        """:meth:`Session.append_custom_message_entry <sessiontree.session.Session.append_custom_message_entry>`, without ``await``."""
        return self._run(
            self.aio.append_custom_message_entry(
                custom_type, content, display=display, details=details
            )
        )

    def append_label(self, target_id: str, label: str | None) -> str:
        """:meth:`Session.append_label <sessiontree.session.Session.append_label>`, without ``await``."""
        return self._run(self.aio.append_label(target_id, label))

    def append_session_name(self, name: str) -> str:
        """:meth:`Session.append_session_name <sessiontree.session.Session.append_session_name>`, without ``await``."""
        return self._run(self.aio.append_session_name(name))

    def set_leaf_id(self, target_id: str | None) -> None:
        """:meth:`Session.set_leaf_id <sessiontree.session.Session.set_leaf_id>`, without ``await``."""
        self._run(self.aio.set_leaf_id(target_id))

    def set_leaf_id_if(self, target_id: str | None, expected_id: str | None) -> None:
        """:meth:`Session.set_leaf_id_if <sessiontree.session.Session.set_leaf_id_if>`, without ``await``."""
        self._run(self.aio.set_leaf_id_if(target_id, expected_id))

    def delete(self) -> None:
        """:meth:`Session.delete <sessiontree.session.Session.delete>`, without ``await``."""
        self._run(self.aio.delete())

    def close(self) -> None:
        """:meth:`Session.close <sessiontree.session.Session.close>`, without ``await``."""
        self._run(self.aio.close())

    def navigate(
        self,
        target_id: str | None,
        *,
        summarize: bool = False,
        summarizer: Summarizer | None = None,
        instructions: str | None = None,
    ) -> str | None:
        """:meth:`Session.navigate <sessiontree.session.Session.navigate>`, without ``await``."""
        return self._run(
            self.aio.navigate(
                target_id, summarize=summarize, summarizer=summarizer, instructions=instructions
            )
        )

    def fork(self, target_id: str, position: ForkPosition = "at") -> SyncSession:
        """:meth:`Session.fork <sessiontree.session.Session.fork>`, without ``await``: the
        new session as a :class:`SyncSession`."""
        return self._session_of(self.aio.fork(target_id, position))


class SyncRepo(_SyncProxy):
    """A :class:`~sessiontree.SessionRepo` whose methods are called without ``await``.

    ``create``, ``open`` and ``fork`` return :class:`SyncSession` objects. Usable as
    ``with open_repo(url) as repo:``. The async repository is :attr:`aio`; :meth:`call` runs
    any coroutine function on the repository's loop (e.g. ``repo.call(compact, session.aio)``).
    """

    def __init__(
        self,
        repo: SessionRepo,
        runner: LoopThread,
        factory: Callable[[], SessionRepo] | None = None,
    ) -> None:
        """Wrap ``repo``, which lives on ``runner``'s loop; ``factory`` builds it again (in a
        forked child).
        """
        self._target = repo
        self._runner = runner
        self._owner = None
        self._factory = factory
        self._closed = False
        self.url = repo.url
        self._finalizer = weakref.finalize(self, _close, repo, runner)
        self._order = next(_OPENED)
        _LIVE.add(self)

    def _repo(self) -> SyncRepo:
        return self

    def _forked(self) -> None:
        """In a forked child, right after the fork: never close the parent's store or wait
        for its thread from here (the objects are kept, so nothing of theirs is finalized)."""
        self._finalizer.detach()
        _ABANDONED.append((self._target, self._runner))

    def _current(self) -> None:
        """In a process forked since the repository was opened: open it again here on a new
        loop thread (once), from the URL or factory it was opened from.

        Raises:
            RuntimeError: it cannot be opened again (a memory store, or no factory), or it
                was closed.
        """
        if self._runner.pid == os.getpid():
            return
        with _REOPEN_LOCK:
            if self._runner.pid == os.getpid():
                return
            parent = self._runner.pid
            if self._factory is None or isinstance(self._target, MemoryRepo):
                raise RuntimeError(
                    f"the sessiontree.sync repository {self.url!r} was opened in process "
                    f"{parent}, before os.fork(), and cannot be opened again in this process "
                    f"({os.getpid()}): open the repository after the fork"
                )
            if self._closed or self._runner._closed:
                raise RuntimeError("this sessiontree.sync repository is closed")
            repo, runner = _build(self._factory)
            self._target, self._runner = repo, runner
            self._finalizer = weakref.finalize(self, _close, repo, runner)

    @property
    def aio(self) -> SessionRepo:
        """The async repository (its methods must run on :attr:`runner`'s loop)."""
        self._current()
        return self._target  # type: ignore[no-any-return]

    @property
    def runner(self) -> LoopThread:
        """The loop thread this repository runs on."""
        self._current()
        return self._runner

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Run ``await fn(*args, **kwargs)`` on the repository's loop and return the result."""

        async def go() -> T:
            return await fn(*args, **kwargs)

        self._current()
        return _wrap(self._runner.run(go()), self._runner, self)  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close the store and stop the loop thread. Idempotent."""
        self._closed = True
        self._finalizer()

    # The methods of SessionRepo; tests/test_sync_api.py checks they are all here.

    def create(
        self,
        id: str | None = None,
        metadata: SessionMetadata | Mapping[str, Any] | None = None,
        *,
        entries: Sequence[Entry | PreparedEntry] = (),
        created_at: datetime | None = None,
    ) -> SyncSession:
        """:meth:`SessionRepo.create <sessiontree.repos.base.SessionRepo.create>`, without
        ``await``: the new session as a :class:`SyncSession`."""
        return self._session_of(
            self.aio.create(id, metadata, entries=entries, created_at=created_at)
        )

    def open(self, id: str) -> SyncSession:
        """:meth:`SessionRepo.open <sessiontree.repos.base.SessionRepo.open>`, without
        ``await``: the session as a :class:`SyncSession`."""
        return self._session_of(self.aio.open(id))

    def list(
        self,
        *,
        limit: int | None = None,
        offset: int = 0,
        where: Mapping[str, str | int | bool | None] | None = None,
    ) -> builtins.list[SessionInfo]:
        """:meth:`SessionRepo.list <sessiontree.repos.base.SessionRepo.list>`, without ``await``."""
        return self._run(self.aio.list(limit=limit, offset=offset, where=where))

    def delete(self, id: str) -> None:
        """:meth:`SessionRepo.delete <sessiontree.repos.base.SessionRepo.delete>`, without ``await``."""
        self._run(self.aio.delete(id))

    def fork(self, id: str, target_id: str, position: ForkPosition = "at") -> SyncSession:
        """:meth:`SessionRepo.fork <sessiontree.repos.base.SessionRepo.fork>`, without
        ``await``: the new session as a :class:`SyncSession`."""
        return self._session_of(self.aio.fork(id, target_id, position))

    def search(self, query: str, limit: int = 20) -> builtins.list[SearchHit]:
        """:meth:`SessionRepo.search <sessiontree.repos.base.SessionRepo.search>`, without ``await``."""
        return self._run(self.aio.search(query, limit))

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


def _build(factory: Callable[[], SessionRepo]) -> tuple[SessionRepo, LoopThread]:
    """``factory()`` run on a new loop thread's loop, and that thread."""
    runner = LoopThread()

    async def build() -> SessionRepo:
        return factory()

    try:
        repo = runner.run(build())
    except BaseException:
        runner.close()
        raise
    return repo, runner


def wrap_repo(factory: Callable[[], SessionRepo]) -> SyncRepo:
    """A :class:`SyncRepo` of the repository ``factory()`` builds on a new loop thread.

    The factory runs on that thread's loop, so everything the repository creates belongs
    to it. In a process forked later, the factory is run again there (see the module
    docstring).
    """
    repo, runner = _build(factory)
    return SyncRepo(repo, runner, factory)


def open_repo(url: str | None = None) -> SyncRepo:
    """:func:`sessiontree.open_repo` for sync code: the same URLs, the same errors.

    Raises:
        StorageError: an unknown scheme. MissingExtraError: the backend's driver is missing.
    """
    return wrap_repo(lambda: _open_async_repo(url))


_SHARED: dict[str, SyncRepo] = {}
_SHARED_LOCK = threading.Lock()

_LIVE: weakref.WeakSet[SyncRepo] = weakref.WeakSet()
"""Every :class:`SyncRepo` of this process not yet collected (a fork tells each of them)."""
_OPENED = itertools.count()
"""The order repositories were opened in (closed newest first at exit)."""
_ABANDONED: list[object] = []
"""In a forked child, the parent's stores and sessions: kept, never closed or finalized."""
_REOPEN_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    """``os.register_at_fork(after_in_child=...)``: only the forking thread exists now, so
    the locks another thread held are replaced, and no repository of the parent's is closed
    or waited for from here (each is opened again on first use, see :meth:`SyncRepo._current`)."""
    global _SHARED_LOCK, _REOPEN_LOCK
    _SHARED_LOCK = threading.Lock()
    _REOPEN_LOCK = threading.Lock()
    for repo in list(_LIVE):
        repo._forked()


os.register_at_fork(after_in_child=_after_fork_in_child)


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


def _close_at_exit() -> None:
    """At interpreter exit: close every repository of this process still open, newest first
    (the shared ones included), while the threads their stores run on still run.

    It runs before the ``weakref.finalize`` callbacks of interpreter exit (it is registered
    with ``atexit`` after them, and ``atexit`` runs the last registered first): a store's own
    finalizers (an SQLite connection's thread, say) stop what the store needs to close, so a
    repository closed after them would wait for ever.
    """
    with _SHARED_LOCK:
        _SHARED.clear()
    for repo in sorted(_LIVE, key=lambda r: r._order, reverse=True):
        repo.close()


weakref.finalize(_close_at_exit, lambda: None)  # weakref's exit hook is registered by now
atexit.register(_close_at_exit)
