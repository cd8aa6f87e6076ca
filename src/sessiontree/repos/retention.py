"""Retention and size: the trash, :func:`prune` and the size report (docs/storage.md "Retention").

Nothing here runs by itself: a store keeps every session until its user asks otherwise.

* **The trash** is a soft delete. :meth:`TrashRepo.trash` moves a session aside whole (SQL:
  the ``trash`` table, in the transaction that removes its rows; JSONL: its directory is
  renamed into ``<root>/.trash/``; memory: a dict), :meth:`TrashRepo.restore` gives it back
  with exactly the entries it had, and only :meth:`TrashRepo.purge` deletes it for good.
  :meth:`SessionRepo.delete` stays the immediate, explicit delete.
* :func:`prune` moves the sessions not modified for a while into the trash and purges those
  trashed longer than the keep period (:data:`TRASH_KEEP_DAYS`); named and labelled
  sessions are kept unless asked for, and a dry run only reports.
* :func:`store_usage` is the size report: bytes per session, agent or project, the
  largest single entries, and (SQL) the payloads stored once with the largest of them.

A session's size is what the store holds for it: on JSONL its log file (header and lines),
on SQL and memory the stored JSON of its entries. On SQL, the large payloads stored once
(:mod:`sessiontree.backends.sql.payloads`) count once in each session that refers to them,
so sessions sharing a screenshot each count it: the store's unique payload bytes are
reported apart (:attr:`StoreUsage.payloads`).
"""

from __future__ import annotations

import builtins
import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from sessiontree.entries import LabelEntry
from sessiontree.errors import InvalidArgumentError, StorageError
from sessiontree.metadata import SessionInfo, SessionMetadata, agent_of, project_name, project_of
from sessiontree.repos.base import SessionRepo
from sessiontree.storage.base import EntryCursor
from sessiontree.tree import labels_of

if TYPE_CHECKING:
    from sessiontree.session import Session

__all__ = [
    "TRASH_KEEP_DAYS",
    "EntrySize",
    "PayloadSize",
    "PayloadStore",
    "PayloadUsage",
    "PruneCandidate",
    "PruneReport",
    "SizeGroup",
    "StoreUsage",
    "TrashRepo",
    "TrashedSession",
    "as_trash_repo",
    "prune",
    "store_usage",
]

TRASH_KEEP_DAYS = 30
"""How long :func:`prune` keeps a trashed session before it purges it, in days."""


@dataclass(frozen=True)
class TrashedSession:
    """A session in the trash (:meth:`TrashRepo.list_trash`)."""

    id: str
    """The session id; :meth:`TrashRepo.restore` brings the session back under it."""
    name: str | None
    """The session's name when it was trashed; ``None`` for an unnamed session."""
    trashed_at: datetime
    """When it was moved to the trash, an aware UTC datetime."""
    created_at: datetime
    """When the session was created, an aware UTC datetime."""
    modified_at: datetime
    """When the session was last appended to before it was trashed, an aware UTC datetime."""
    entry_count: int
    """Entries of every type."""
    size_bytes: int
    """What the trashed session takes in the store, in bytes (purging frees it)."""
    metadata: SessionMetadata
    """What the session was created with."""


@dataclass(frozen=True)
class EntrySize:
    """One stored entry and its size (:meth:`TrashRepo.largest_entries`)."""

    session_id: str
    """The session holding the entry."""
    entry_id: str
    """The entry's id."""
    type: str
    """The entry's ``type`` (``message``, ``compaction``, ...)."""
    size_bytes: int
    """The entry's stored JSON, in bytes."""


@dataclass(frozen=True)
class PayloadSize:
    """One payload stored once (:class:`PayloadUsage`): a large string of entry JSON."""

    hash: str
    """The SHA-256 (hex) of its stored bytes."""
    size_bytes: int
    """Its stored bytes (the JSON string literal, UTF-8)."""
    references: int
    """Sessions (live or trashed) whose entries refer to it."""


@dataclass(frozen=True)
class PayloadUsage:
    """The payload store of a SQL store (docs/storage.md "Large payloads")."""

    payloads: int
    """Payloads stored."""
    unique_bytes: int
    """Their bytes, each counted once."""
    references: int
    """References to them: one per session (live or trashed) and payload it refers to."""
    largest: list[PayloadSize]
    """The largest single payloads, largest first."""


@runtime_checkable
class PayloadStore(Protocol):
    """A repository that stores large payloads once (the SQL backends)."""

    async def payload_usage(self, limit: int) -> PayloadUsage:
        """The payload store's totals and its ``limit`` largest payloads (two queries)."""
        ...


@runtime_checkable
class TrashRepo(Protocol):
    """What a repository offers for retention and size reports; every shipped backend has it.

    A separate protocol from :class:`SessionRepo`, so a third-party repository without it
    still is a :class:`SessionRepo` (:func:`as_trash_repo` says what is missing).
    """

    async def trash(self, id: str) -> TrashedSession:
        """Move a session to the trash, whole; it no longer lists, opens or searches.

        Raises:
            SessionNotFoundError: no such session.
            SessionExistsError: a session with this id is already in the trash (restore or
                purge it first); nothing changed.
            StorageError: the store cannot be written; nothing changed.
        """
        ...

    async def list_trash(self) -> builtins.list[TrashedSession]:
        """The trashed sessions, most recently trashed first."""
        ...

    async def restore(self, id: str) -> Session:
        """Bring a trashed session back with exactly the entries, metadata and times it had.

        Raises:
            SessionNotFoundError: no such session in the trash.
            SessionExistsError: a live session has this id; nothing changed.
        """
        ...

    async def purge(self, id: str) -> None:
        """Delete a trashed session for good.

        Raises:
            SessionNotFoundError: no such session in the trash.
        """
        ...

    async def session_sizes(self) -> dict[str, int]:
        """Bytes each live session takes in the store, by session id (one pass over the store;
        JSONL: one ``stat`` per session)."""
        ...

    async def largest_entries(self, limit: int) -> builtins.list[EntrySize]:
        """The ``limit`` largest stored entries of live sessions, largest first (reads every
        entry's size: one query on SQL, every log line on JSONL)."""
        ...


def as_trash_repo(repo: SessionRepo) -> TrashRepo:
    """``repo`` as a :class:`TrashRepo`.

    Raises:
        StorageError: the repository has no trash (a third-party backend without it).
    """
    if not isinstance(repo, TrashRepo):
        raise StorageError(
            f"{type(repo).__name__} has no trash or size report (it is not a TrashRepo)"
        )
    return repo


# ---------------------------------------------------------------------- prune


@dataclass(frozen=True)
class PruneCandidate:
    """A session :func:`prune` moves (or, in a dry run, would move) to the trash."""

    info: SessionInfo
    """Its listing row."""
    size_bytes: int
    """What it takes in the store, in bytes."""


@dataclass
class PruneReport:
    """What :func:`prune` did, or would do in a dry run."""

    dry_run: bool
    """Nothing was changed: the lists say what would be."""
    trashed: list[PruneCandidate] = field(default_factory=list)
    """Sessions moved to the trash, oldest ``modified_at`` first."""
    kept: list[PruneCandidate] = field(default_factory=list)
    """Old enough sessions kept because they are named or labelled."""
    purged: list[TrashedSession] = field(default_factory=list)
    """Trashed sessions purged for good (in the trash longer than the keep period)."""

    @property
    def bytes_freed(self) -> int:
        """Bytes freed for good: the purged sessions (trashed ones still take their space)."""
        return sum(t.size_bytes for t in self.purged)

    @property
    def bytes_trashed(self) -> int:
        """Bytes of the sessions moved to the trash (freed when they are purged)."""
        return sum(c.size_bytes for c in self.trashed)


def _check_age(value: object, name: str) -> timedelta:
    if not isinstance(value, timedelta) or value < timedelta(0):
        raise InvalidArgumentError(f"{name} must be a timedelta of 0 or more, not {value!r}")
    return value


def matches_project(info: SessionInfo, project: str) -> bool:
    """Whether the session's project (:func:`~sessiontree.metadata.project_of`: its
    ``project``, else its working directory) is ``project``: the same path, a directory under
    it, or a directory whose last part is ``project`` (``app`` for ``/home/u/app``)."""
    cwd = project_of(info.metadata)
    if not cwd:
        return False
    wanted = project.rstrip("/\\") or project
    return (
        cwd.rstrip("/\\") == wanted or cwd.startswith(wanted + "/") or project_name(cwd) == wanted
    )


async def _is_marked(repo: SessionRepo, info: SessionInfo) -> bool:
    """Whether a user marked the session to keep: it has a name or a label (reads its label
    entries only)."""
    if info.name:
        return True
    session = await repo.open(info.id)
    labels = await session.storage.get_entries(EntryCursor(types=frozenset({"label"})))
    return bool(labels_of(e for e in labels if isinstance(e, LabelEntry)))


async def prune(
    repo: SessionRepo,
    older_than: timedelta,
    *,
    agent: str | None = None,
    project: str | None = None,
    include_named: bool = False,
    dry_run: bool = False,
    trash_days: float = TRASH_KEEP_DAYS,
    now: datetime | None = None,
) -> PruneReport:
    """Move the sessions not modified for ``older_than`` to the trash and purge the trash.

    Only what the user asks for: a session qualifies when its ``modified_at`` is older than
    ``now - older_than`` and it matches ``agent`` (the agent that wrote it, as ``sessiontree
    usage`` names it: ``claude-code``, ``codex``, ``sessiontree``, ...) and ``project`` (see
    :func:`matches_project`) when given. A named or labelled session is kept (and reported
    in :attr:`PruneReport.kept`) unless ``include_named``. Sessions trashed more than
    ``trash_days`` ago are purged. With ``dry_run`` nothing is changed and the report says
    what would be.

    Cost: one listing; each qualifying unnamed session's label entries are read.

    Raises:
        InvalidArgumentError: a negative or non-timedelta ``older_than``, a negative
            ``trash_days``.
        StorageError: the repository has no trash (:func:`as_trash_repo`), or the store
            cannot be written; the sessions trashed before the failure stay in the trash.
    """
    _check_age(older_than, "older_than")
    if isinstance(trash_days, bool) or not isinstance(trash_days, int | float) or trash_days < 0:
        raise InvalidArgumentError(f"trash_days must be a number of days ≥ 0, not {trash_days!r}")
    trash = as_trash_repo(repo)
    now = now or datetime.now(UTC)
    cutoff = now - older_than
    report = PruneReport(dry_run=dry_run)
    sizes = await trash.session_sizes()
    old = [
        info
        for info in await repo.list()
        if info.modified_at < cutoff
        and (agent is None or agent_of(info) == agent)
        and (project is None or matches_project(info, project))
    ]
    old.sort(key=lambda i: (i.modified_at, i.id))
    for info in old:
        candidate = PruneCandidate(info, sizes.get(info.id, 0))
        if not include_named and await _is_marked(repo, info):
            report.kept.append(candidate)
            continue
        if not dry_run:
            await trash.trash(info.id)
        report.trashed.append(candidate)
    expiry = now - timedelta(days=trash_days)
    for t in await trash.list_trash():
        if t.trashed_at < expiry:
            if not dry_run:
                await trash.purge(t.id)
            report.purged.append(t)
    return report


# ---------------------------------------------------------------------- du

By = Literal["session", "agent", "project"]


@dataclass(frozen=True)
class SizeGroup:
    """One row of the size report: a session, an agent or a project."""

    key: str
    """The session id, agent name or project (the working directory's last part;
    ``(unknown)`` when the session does not say)."""
    size_bytes: int
    """Bytes its sessions take in the store."""
    sessions: int
    """How many sessions."""
    name: str | None = None
    """For a session: its name, else its first message (``None`` when it has neither)."""


@dataclass
class StoreUsage:
    """The size report of a store (:func:`store_usage`)."""

    total_bytes: int
    """Bytes of every live session."""
    sessions: int
    """Live sessions."""
    groups: list[SizeGroup]
    """Largest first, at most the ``limit`` asked for."""
    largest_entries: list[EntrySize]
    """The largest single entries (payloads: tool outputs, images, summaries), largest first."""
    trash_bytes: int
    """Bytes of the sessions in the trash."""
    trash_sessions: int
    """Sessions in the trash."""
    payloads: PayloadUsage | None = None
    """The payloads stored once, shared by the sessions (each session's size above counts
    those it refers to); ``None`` on a backend that keeps them inline (JSONL, memory)."""


async def store_usage(repo: SessionRepo, *, by: By = "session", limit: int = 10) -> StoreUsage:
    """What the store's sessions take, grouped ``by`` session, agent or project.

    Cost: one listing, one size pass (:meth:`TrashRepo.session_sizes`) and one pass over
    every entry's size (:meth:`TrashRepo.largest_entries`).

    Raises:
        InvalidArgumentError: an unknown ``by`` or a negative ``limit``.
        StorageError: the repository has no size report (:func:`as_trash_repo`).
    """
    if by not in ("session", "agent", "project"):
        raise InvalidArgumentError(f"by must be session, agent or project, not {by!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidArgumentError(f"limit must be an int ≥ 0, not {limit!r}")
    trash = as_trash_repo(repo)
    sizes = await trash.session_sizes()
    infos = await repo.list()
    totals: dict[str, list[int]] = {}
    names: dict[str, str | None] = {}
    for info in infos:
        if by == "session":
            key = info.id
            names[key] = info.name or info.first_message
        elif by == "agent":
            key = agent_of(info)
        else:
            own = project_of(info.metadata)
            key = project_name(own) if own else "(unknown)"
        row = totals.setdefault(key, [0, 0])
        row[0] += sizes.get(info.id, 0)
        row[1] += 1
    top = heapq.nlargest(limit, totals.items(), key=lambda kv: (kv[1][0], kv[0]))
    groups = [SizeGroup(k, v[0], v[1], names.get(k)) for k, v in top]
    trashed: Sequence[TrashedSession] = await trash.list_trash()
    return StoreUsage(
        total_bytes=sum(sizes.get(i.id, 0) for i in infos),
        sessions=len(infos),
        groups=groups,
        largest_entries=await trash.largest_entries(limit),
        trash_bytes=sum(t.size_bytes for t in trashed),
        trash_sessions=len(trashed),
        payloads=await repo.payload_usage(limit) if isinstance(repo, PayloadStore) else None,
    )
