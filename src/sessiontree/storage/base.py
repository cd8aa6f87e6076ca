"""The ``SessionStorage`` protocol: one session's append-only log (docs/storage.md).

Backends (memory, JSONL, SQL) live side by side in this package and all pass the one
conformance suite in :mod:`sessiontree.testing`. The rules they enforce come from the pure
core (:mod:`sessiontree.tree`), so they cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from sessiontree._args import check_bool, check_count, check_entry_id, check_types
from sessiontree.entries import Entry, LabelEntry, is_path_entry
from sessiontree.errors import EntryNotFoundError, InvalidEntryError
from sessiontree.metadata import SessionMetadata
from sessiontree.stored import Prepared
from sessiontree.tree import ForkPosition, fork_chain, labels_of

__all__ = [
    "ContextBranchReader",
    "DraftSlot",
    "EntryCursor",
    "SessionStorage",
    "fork_plan",
    "fork_storage",
    "select_entries",
]


@dataclass(frozen=True)
class EntryCursor:
    """Which entries :meth:`SessionStorage.get_entries` returns, in append order.

    Attributes:
        after: start after this entry id (in the direction of travel); ``None`` = from the start.
        limit: at most this many entries; ``None`` = all.
        types: only entries of these types; ``None`` = all.
        reverse: newest first.
    """

    after: str | None = None
    limit: int | None = None
    types: frozenset[str] | None = None
    reverse: bool = False

    def __post_init__(self) -> None:
        """Refuse what no backend can page by, alike on every backend.

        Raises:
            InvalidArgumentError: ``after`` not an entry id or ``None``; ``limit`` not an
                int >= 0 or ``None``; ``types`` not a set of str or ``None``; ``reverse``
                not a bool.
        """
        check_entry_id(self.after, "after", optional=True)
        check_count(self.limit, "limit", optional=True)
        if self.types is not None:
            object.__setattr__(self, "types", check_types(self.types))
        check_bool(self.reverse, "reverse")


@runtime_checkable
class ContextBranchReader(Protocol):
    """A storage that can read only the part of a branch the default context needs.

    Optional next to :class:`SessionStorage` (the built-in backends have it; a storage without
    it has its whole branch read): ``Session.build_context`` with the default transform uses
    it, so the cost of a context grows with the context, not with the history before the
    newest compaction that carries a state snapshot.
    """

    async def get_context_branch(self, leaf_id: str | None = None) -> list[Entry]:
        """The path from :func:`~sessiontree.context.context_start` (or the root) to ``leaf_id``.

        Bookkeeping entries are left out, as in :meth:`SessionStorage.get_branch`. The default
        context built from it equals the one built from the whole branch; corruption older
        than the start (a cycle, a missing parent) is not looked for.

        Raises:
            EntryNotFoundError: ``leaf_id`` names no entry.
            CorruptSessionError: a cycle or a missing parent on the part read.
        """
        ...


@runtime_checkable
class DraftSlot(Protocol):
    """A storage that holds one draft per session beside its entries (docs/harness.md).

    Optional next to :class:`SessionStorage` (the built-in backends have it): the harness
    saves the part of a reply that has arrived there while it streams, overwriting it each
    time, so a crash loses at most the time between two saves and the log gains no entry per
    chunk. The slot holds opaque JSON (:class:`sessiontree.drafts.Draft`); it is not an entry,
    is never read by ``get_entries`` or context building, is not copied by ``fork`` and goes
    with ``delete``. A storage without it has no durable streaming.
    """

    async def get_draft(self) -> bytes | None:
        """The draft's JSON, ``None`` when there is none. One read (SQL: one row; JSONL: the
        sidecar file; memory: a field)."""
        ...

    async def put_draft(self, body: bytes | None) -> None:
        """Replace the draft with ``body`` (``None`` clears it), whole or not at all.

        Raises:
            SessionNotFoundError: the session was deleted.
            StorageError: it cannot be written.
        """
        ...


@runtime_checkable
class SessionStorage(Protocol):
    """One session's storage. Every method is async except the two properties.

    Ordering: ``get_entries`` returns append order (a per-session sequence number);
    ``get_branch`` returns root → leaf.
    """

    @property
    def id(self) -> str:
        """The session id."""
        ...

    @property
    def metadata(self) -> SessionMetadata:
        """The session metadata (immutable after creation)."""
        ...

    async def get_leaf_id(self) -> str | None:
        """The current leaf (docs/tree.md), ``None`` for an empty session or after ``set_leaf_id(None)``."""
        ...

    async def set_leaf_id(self, target_id: str | None) -> Entry:
        """Append a ``leaf`` entry (``parentId`` = old leaf) that moves the leaf to ``target_id``.

        Raises:
            EntryNotFoundError: ``target_id`` names no entry.
            InvalidEntryError: ``target_id`` names a bookkeeping entry.
        """
        ...

    async def set_leaf_id_if(self, target_id: str | None, expected_id: str | None) -> Entry:
        """:meth:`set_leaf_id`, only while the current leaf is still ``expected_id``.

        A compare-and-set: the check and the append are one atomic step against every other
        writer of the session, in this process or another (memory: no ``await`` between
        them; JSONL: under the file lock; SQL: in the append's transaction). Read-modify-write
        code (read the leaf or the branch, decide where the leaf goes) uses it with a retry
        loop on :class:`~sessiontree.errors.LeafMovedError`, so a move decided on a stale
        read is never written.

        Raises:
            LeafMovedError: the leaf is not ``expected_id``; nothing appended.
            EntryNotFoundError: ``target_id`` names no entry.
            InvalidEntryError: ``target_id`` names a bookkeeping entry.
        """
        ...

    async def append_entry_if(
        self, entry: Entry | Prepared, expected_leaf: str | None, *, at_leaf: bool = False
    ) -> Entry:
        """:meth:`append_entry`, only while the current leaf is still ``expected_leaf``.

        The compare-and-set of :meth:`set_leaf_id_if` for any entry: the check and the
        append are one atomic step against every other writer (memory: no ``await`` between
        them; JSONL: under the file lock; SQL: in the append's transaction). For an entry
        decided from a read of the leaf or the branch (a compaction, a branch summary), so
        that it is never written on a stale read.

        Raises:
            LeafMovedError: the leaf is not ``expected_leaf``; nothing appended.
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: as :meth:`append_entry`.
        """
        ...

    async def get_entry(self, entry_id: str) -> Entry | None:
        """The entry with this id, ``None`` when there is none."""
        ...

    async def get_entries(self, cursor: EntryCursor | None = None) -> list[Entry]:
        """Entries in append order, filtered and paged by ``cursor``.

        Raises:
            EntryNotFoundError: ``cursor.after`` names no entry.
        """
        ...

    async def get_branch(
        self, leaf_id: str | None = None, *, include_bookkeeping: bool = False
    ) -> list[Entry]:
        """The path root → ``leaf_id`` (current leaf by default); ``[]`` when the leaf is ``None``.

        Bookkeeping entries the path runs through are left out unless asked for.

        Raises:
            EntryNotFoundError: ``leaf_id`` names no entry.
            CorruptSessionError: a cycle or a missing parent.
        """
        ...

    async def append_entry(self, entry: Entry | Prepared, *, at_leaf: bool = False) -> Entry:
        """Validate and append one entry; returns it as stored.

        ``entry`` is an entry (or a dict), or a :data:`~sessiontree.stored.Prepared` value
        already checked (a :class:`~sessiontree.stored.PreparedMessage` is what
        :meth:`Session.append_message` passes): a backend turns either into the one value it
        stores with :func:`~sessiontree.stored.prepare_entry` (a prepared value is taken as it
        is) and writes its ``body``, so each entry is validated once, built once and
        serialised once.

        With ``at_leaf`` the entry's ``parentId`` is set to the current leaf in the same
        atomic step (what :class:`Session`'s ``append_*`` methods use; ``under``).

        Raises:
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: docs/tree.md; nothing changed.
        """
        ...

    async def append_entries(self, entries: Sequence[Entry]) -> None:
        """Validate and append entries in order, all or nothing (imports, forks, batches).

        Raises:
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: nothing appended.
        """
        ...

    async def set_modified_at(self, modified_at: datetime) -> None:
        """Set the session's ``modified_at`` as :meth:`SessionRepo.list` shows and sorts it.

        An import sets its source's newest entry time once after its batch append, so the
        session lists by its own dates; the next append moves ``modified_at`` to now again.
        Appends nothing and changes no entry.

        Raises:
            InvalidMetadataError: not an aware datetime.
            SessionNotFoundError: the session was deleted.
        """
        ...

    async def get_label(self, entry_id: str) -> str | None:
        """The entry's label (newest ``label`` entry targeting it), ``None`` when none."""
        ...

    async def get_name(self) -> str | None:
        """The session name (newest ``session_info``), ``None`` when none."""
        ...

    async def fork(self, target_id: str, position: ForkPosition = "at") -> SessionStorage:
        """A new session in the same store holding copies of the path to ``target_id`` (docs/branching.md).

        See :func:`fork_storage` (references to entries not copied become ``null``; the new
        session is created whole, atomically).

        Raises:
            EntryNotFoundError: ``target_id`` names no entry.
            InvalidEntryError: ``target_id`` is a bookkeeping entry, or a bad ``position``.
        """
        ...

    async def delete(self) -> None:
        """Delete the session and all its entries."""
        ...

    async def close(self) -> None:
        """Release what the storage holds (files, connections). Idempotent."""
        ...


def select_entries(
    entries: Sequence[Entry],
    seq_of: Callable[[str], int | None],
    cursor: EntryCursor | None,
    *,
    session_id: str,
) -> list[Entry]:
    """Apply an :class:`EntryCursor` to entries held in append order (in-memory backends).

    Raises:
        EntryNotFoundError: ``cursor.after`` names no entry.
    """
    cursor = cursor or EntryCursor()
    if cursor.reverse:
        start = len(entries) - 1
        if cursor.after is not None:
            pos = seq_of(cursor.after)
            if pos is None:
                raise EntryNotFoundError(
                    "cursor names no entry", session_id=session_id, entry_id=cursor.after
                )
            start = pos - 1
        indices: range = range(start, -1, -1)
    else:
        start = 0
        if cursor.after is not None:
            pos = seq_of(cursor.after)
            if pos is None:
                raise EntryNotFoundError(
                    "cursor names no entry", session_id=session_id, entry_id=cursor.after
                )
            start = pos + 1
        indices = range(start, len(entries))
    out: list[Entry] = []
    limit = cursor.limit
    if limit is not None and limit <= 0:
        return out
    types = cursor.types
    for i in indices:
        e = entries[i]
        if types is None or e.type in types:
            out.append(e)
            if limit is not None and len(out) >= limit:
                break
    return out


async def fork_plan(
    source: SessionStorage, target_id: str, position: ForkPosition
) -> tuple[SessionMetadata, list[Entry]]:
    """What a fork of ``source`` holds: its metadata and its entries, in order (docs/branching.md).

    The chain root → target (``before``: up to the target's parent) with the same ids
    (:func:`~sessiontree.tree.fork_chain` says which references become ``null``), then a
    label entry for each copied entry whose label the copies alone would not give it (set or
    cleared), so each has the label it has now; the metadata records
    ``parentSessionId`` / ``forkedFromEntryId``. Copied entries are the objects ``source``
    returned (a backend can copy their stored rows as they are).

    Raises:
        EntryNotFoundError: ``target_id`` names no entry.
        InvalidEntryError: the target is a bookkeeping entry, or ``position`` is bad.
    """
    if position not in ("at", "before"):
        raise InvalidEntryError(
            f"fork position must be 'at' or 'before', not {position!r}", session_id=source.id
        )
    chain = await source.get_branch(target_id, include_bookkeeping=True)
    if not is_path_entry(chain[-1]):
        raise InvalidEntryError(
            "a fork target must be a path entry, not a bookkeeping entry",
            session_id=source.id,
            entry_id=target_id,
        )
    copied = fork_chain(chain, position)
    current = labels_of(await source.get_entries(EntryCursor(types=frozenset({"label"}))))
    inherited = labels_of(copied)  # what the copied label entries alone would say
    leaf = next((e.id for e in reversed(copied) if is_path_entry(e)), None)
    labels: list[Entry] = [
        LabelEntry(target_id=e.id, label=current.get(e.id), parent_id=leaf)
        for e in copied
        if current.get(e.id) != inherited.get(e.id)
    ]
    meta = source.metadata.model_copy(
        update={"parent_session_id": source.id, "forked_from_entry_id": target_id}
    )
    meta.__pydantic_fields_set__.update({"parent_session_id", "forked_from_entry_id"})
    return meta, [*copied, *labels]


async def fork_storage(
    source: SessionStorage,
    target_id: str,
    position: ForkPosition,
    create: Callable[[SessionMetadata, list[Entry]], Awaitable[SessionStorage]],
) -> SessionStorage:
    """The fork algorithm every backend shares: :func:`fork_plan`, then ``create``, which
    makes the new session holding the given entries in the source's store, atomically: the
    fork appears whole or not at all (a crash mid-fork leaves no empty or partial session).

    Raises:
        EntryNotFoundError: ``target_id`` names no entry.
        InvalidEntryError: the target is a bookkeeping entry, or ``position`` is bad, or a
            copied entry cannot be written; nothing is created then.
    """
    meta, entries = await fork_plan(source, target_id, position)
    return await create(meta, entries)
