"""What every framework adapter shares: a repository from ``url``/``repo``, a session opened
or created by id, and one lock per event loop."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import math
import random
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

import orjson

from sessiontree.entries import MessageEntry
from sessiontree.errors import (
    DuplicateEntryError,
    InvalidEntryError,
    LeafMovedError,
    MissingExtraError,
    SessionNotFoundError,
)
from sessiontree.ids import check_session_id
from sessiontree.messages import AgentMessage, parse_message
from sessiontree.repos import Scope, ScopedRepo, SessionRepo, default_url, is_private_url
from sessiontree.session import Session
from sessiontree.stored import prepare_entry
from sessiontree.sync import LoopThread, SyncRepo, shared_repo
from sessiontree.sync import open_repo as open_sync_repo

__all__ = [
    "LoopLocks",
    "RepoHandle",
    "adapter_scope",
    "append_chain",
    "check_batch",
    "clear_leaf",
    "holds_non_finite",
    "import_extra",
    "open_or_create",
    "original_of",
    "retry_leaf_move",
    "tree_session_id",
    "with_original",
]

T = TypeVar("T")


def check_batch(items: Sequence[object], kind: type, *, item: str, expected: str) -> None:
    """Reject a batch holding anything but ``kind`` before any of it is stored.

    Args:
        items: what the framework handed over.
        kind: the class every item must be an instance of.
        item: the items' name in the message (``message``, ``transcript line``).
        expected: what an item should be, with its article (``a JSON object``).

    Raises:
        InvalidEntryError: the first item that is not a ``kind``, by its index.
    """
    for index, value in enumerate(items):
        if not isinstance(value, kind):
            raise InvalidEntryError(
                f"{item} {index} of the batch is a {type(value).__name__}, not {expected}"
            )


class RepoHandle:
    """Where an adapter's calls run: on the caller's loop over an async repository it was
    given, or on the loop thread of a :class:`sessiontree.sync.SyncRepo` it was given, or of
    the process-wide :func:`sessiontree.sync.shared_repo` of a URL.

    A private URL (``memory://``, ``sqlite:///:memory:``: :func:`sessiontree.repos.is_private_url`)
    gets a store of its own instead, on a loop thread of its own, closed when the object is
    dropped; a named ``memory://NAME`` is shared like any other URL.

    The loop thread is what makes an adapter built from a URL work under any loop: the SDKs run
    their hooks on loops they create and tear down (``Runner.run_sync`` shuts down a loop's
    async generators after every call), which a connection pool created on one of them does
    not survive.

    With a ``scope`` (:func:`adapter_scope`), :attr:`repo` is the view of the repository
    restricted to it (:func:`sessiontree.repos.scoped`).

    Raises:
        ValueError: both ``url`` and ``repo`` were given.
    """

    def __init__(
        self, url: str | None, repo: SessionRepo | SyncRepo | None, scope: Scope | None = None
    ) -> None:
        if repo is not None and url is not None:
            raise ValueError("give url or repo, not both")
        self._runner: LoopThread | None = None
        given: Any = repo
        if given is None:
            url = url if url is not None else default_url()
            # a private store (memory://, sqlite:///:memory:) is this object's own: sharing
            # the process-wide repository of its URL would show it every other object's data
            given = open_sync_repo(url) if is_private_url(url) else shared_repo(url)
        if isinstance(given, SyncRepo):
            self._sync = given  # held: a private store is closed when its SyncRepo is dropped
            self.repo: SessionRepo = given.aio
            self._runner = given.runner
        else:
            self.repo = given
        if scope is not None:  # the adapter sees (and creates) only sessions of its scope
            self.repo = ScopedRepo(self.repo, scope)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` where the repository lives."""
        if self._runner is None:
            return await coro
        return await self._runner.run_async(coro)

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` where the repository lives, from sync code (no loop of the caller's).

        Raises:
            RuntimeError: the repository was given (it lives on the caller's loop).
        """
        if self._runner is None:
            coro.close()
            raise RuntimeError(
                "sync calls need an adapter built from a URL or a sessiontree.sync repository, "
                "not an async repository (it lives on the caller's event loop)"
            )
        return self._runner.run(coro)


def tree_session_id(external_id: str, prefix: str, scope: Scope | None = None) -> str:
    """The sessiontree id for a framework's session id.

    An id that is already a valid sessiontree id (``[A-Za-z0-9_-]{1,128}``) is used as it is,
    so ``sessiontree show <id>`` finds it; any other string maps to ``<prefix>-`` plus 40 hex
    digits of its SHA-256 (stable across processes), with the original kept in the metadata.
    With a ``scope`` every id maps so, the hash taken over the scope and the id: two users'
    ``chat-1`` are two sessions, and neither user can reach the other's.
    """
    if scope is not None:
        key = orjson.dumps([scope.user_id, scope.app, scope.project, external_id])
        return f"{prefix}-{hashlib.sha256(key).hexdigest()[:40]}"
    try:
        return check_session_id(external_id)
    except ValueError:
        digest = hashlib.sha256(external_id.encode("utf-8", "surrogatepass")).hexdigest()
        return f"{prefix}-{digest[:40]}"


def adapter_scope(user_id: str | None, app: str | None, project: str | None = None) -> Scope | None:
    """The scope an adapter was given; ``None`` when none of the fields is.

    Raises:
        InvalidArgumentError: a field that is not a non-empty string.
    """
    if user_id is None and app is None and project is None:
        return None
    return Scope(user_id=user_id, app=app, project=project)


async def open_or_create(
    repo: SessionRepo, session_id: str, metadata: Mapping[str, Any]
) -> Session:
    """Open ``session_id``, creating it with ``metadata`` when absent (safe against a racing
    creator: the loser of the race opens the winner's session)."""
    try:
        return await repo.open(session_id)
    except SessionNotFoundError:
        pass
    try:
        return await repo.create(id=session_id, metadata=dict(metadata))
    except DuplicateEntryError:
        return await repo.open(session_id)


class LoopLocks:
    """One :class:`asyncio.Lock` per running event loop.

    A lock belongs to the loop it first waited on; an adapter object may be used from several
    loops over its life (``Runner.run_sync`` runs a loop per call, notebooks and threads have
    their own), so each loop gets its own lock, dropped with the loop.
    """

    def __init__(self) -> None:
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> asyncio.Lock:
        """The lock of the running loop."""
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock


def holds_non_finite(value: Any) -> bool:
    """Whether a float ``inf`` or ``nan`` is anywhere in ``value`` (through dicts, lists,
    tuples and sets): what a framework's JSON dump would write as ``null`` unasked."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
    return False


def import_extra(module: str, extra: str) -> Any:
    """Import ``module`` or raise :class:`MissingExtraError` naming ``sessiontree[extra]``."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(extra, module.split(".")[0]) from exc


async def append_chain(session: Session, messages: Sequence[AgentMessage]) -> None:
    """Append ``messages`` under the leaf in order, one ``message`` entry each; the last
    becomes the leaf.

    Every entry is validated before the first is written, so a bad message stores nothing.
    Each append takes its parent from the stored leaf atomically (``at_leaf``): a writer in
    another process appending at the same time may interleave with the batch but never hangs
    it, or its own entry, off a stale leaf (which would drop one of the two from the branch).
    Writers in one process keep a batch contiguous by serialising calls (the adapters' locks).

    Raises:
        InvalidEntryError: a message that cannot be stored (nothing appended).
    """
    prepared = [prepare_entry(MessageEntry(message=message)) for message in messages]
    for entry in prepared:
        await session.storage.append_entry(entry, at_leaf=True)


async def retry_leaf_move(step: Callable[[], Awaitable[T]]) -> T:
    """``await step()`` until it ends without :class:`LeafMovedError`.

    ``step`` is one read-modify-write of the leaf: it reads the leaf (and the branch under
    it), decides, and moves the leaf with :meth:`Session.set_leaf_id_if` expecting the leaf
    it read, so a move decided on a stale read is never written. A conflict means another
    writer got through, so the loop always progresses; a short random pause between tries
    keeps writers in several processes from colliding in step.
    """
    attempt = 0
    while True:
        try:
            return await step()
        except LeafMovedError:
            attempt += 1
            await asyncio.sleep(random.uniform(0, 0.001 * min(attempt, 20)))


async def clear_leaf(session: Session) -> None:
    """Move the leaf to ``None`` (the next append starts a new root), unless it is there
    already; atomic against other writers (:func:`retry_leaf_move`)."""

    async def step() -> None:
        leaf = await session.get_leaf_id()
        if leaf is not None:
            await session.set_leaf_id_if(None, leaf)

    await retry_leaf_move(step)


def with_original(message: AgentMessage, key: str, original: Any, stamp: int) -> AgentMessage:
    """``message`` stamped ``stamp`` (Unix ms) and carrying ``original`` (a JSON value, e.g.
    the framework's own serialisation) under the message key ``key``, so an adapter can give
    the framework back exactly what it stored."""
    wire = message.to_wire()
    wire["timestamp"] = stamp
    wire[key] = original
    return parse_message(wire)


def original_of(message: AgentMessage, key: str) -> Any:
    """A deep copy of what :func:`with_original` kept under ``key``; ``None`` when nothing."""
    value = (message.model_extra or {}).get(key)
    if value is None:
        return None
    try:  # stored values are JSON: a JSON round trip copies them faster than deepcopy
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONDecodeError):  # an integer beyond 64 bits
        return copy.deepcopy(value)
