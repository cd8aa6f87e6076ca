"""In-memory storage: dicts and lists, for tests and ephemeral sessions (docs/storage.md "memory")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from sessiontree.context import ContextStart
from sessiontree.entries import Entry, LeafEntry, dump_entry_json
from sessiontree.errors import LeafMovedError, SessionNotFoundError
from sessiontree.ids import new_id, now_ms
from sessiontree.metadata import SessionMetadata, session_time
from sessiontree.storage.base import EntryCursor, SessionStorage, fork_storage, select_entries
from sessiontree.storage.growth import check_max_session_bytes, refuse_growth, warn_growth
from sessiontree.storage.lease import (
    Lease,
    LeaseRecord,
    check_fence,
    grant,
    release,
    renew,
    writing_under,
)
from sessiontree.storage.sync_index import newest_position
from sessiontree.stored import Prepared, prepare_entry
from sessiontree.tree import ForkPosition, TreeIndex, branch_of, check_append, trace_chain

__all__ = ["MemoryStorage"]


class MemoryStorage:
    """One session held in memory: a :class:`~sessiontree.tree.TreeIndex` and its metadata.

    Operations have no ``await`` inside, so each is atomic under asyncio. Data is lost when
    the process ends.

    ``max_session_bytes``: refuse an append that would take the session's stored JSON over
    this many bytes (:mod:`sessiontree.storage.growth`); ``None`` (default): no limit. A fork
    keeps its source's limit.
    """

    def __init__(
        self,
        id: str | None = None,
        metadata: SessionMetadata | None = None,
        *,
        created_at: datetime | None = None,
        on_create: Callable[[MemoryStorage], None] | None = None,
        on_delete: Callable[[str], None] | None = None,
        max_session_bytes: int | None = None,
    ) -> None:
        self._id = id or new_id()
        self.max_session_bytes = check_max_session_bytes(max_session_bytes)
        self._size: int | None = None
        """The entries' stored JSON in bytes, once a limited append needed it."""
        self._metadata = metadata or SessionMetadata()
        self.index = TreeIndex(session_id=self._id)
        self.created_at = created_at or datetime.now(UTC)
        self.modified_at = self.created_at
        self._on_create = on_create
        self._on_delete = on_delete
        self._deleted = False
        self.sync_position: dict[str, Any] | None = None
        """The newest sync position appended (:mod:`sessiontree.storage.sync_index`)."""
        self._draft: bytes | None = None
        self._lease: LeaseRecord | None = None
        """The writer lease record (:mod:`sessiontree.storage.lease`)."""

    @property
    def id(self) -> str:
        """The session id."""
        return self._id

    @property
    def metadata(self) -> SessionMetadata:
        """The session metadata."""
        return self._metadata

    def stored_bytes(self) -> int:
        """The session's size: the stored JSON of its entries, in bytes (memory keeps no
        JSON: every entry is serialised, once; appends under a limit keep it up to date)."""
        if self._size is None:
            self._size = sum(len(dump_entry_json(e)) for e in self.index.entries)
        return self._size

    def _grow(self, bodies: Sequence[bytes]) -> tuple[int, int]:
        """Check that ``bodies`` may be appended under the limit: the size before and after.

        Raises:
            SessionTooLargeError: over the limit; nothing changed.
        """
        before = self.stored_bytes()
        adding = sum(map(len, bodies))
        refuse_growth(self._id, before, adding, self.max_session_bytes)
        return before, before + adding

    def _alive(self) -> None:
        if self._deleted:
            raise SessionNotFoundError(self._id, "session was deleted")

    def _writing(self) -> None:
        """Before a write: the session exists and the lease the write is under, if any, is
        still current (no ``await`` follows before the write).

        Raises:
            SessionNotFoundError: deleted. LeaseLostError: the lease was taken over.
        """
        self._alive()
        lease = writing_under(self._id)
        if lease is not None:
            check_fence(lease, self._lease)

    async def acquire_lease(self, owner: str, ttl_ms: int) -> Lease:
        """See :class:`~sessiontree.storage.lease.LeaseSlot`."""
        self._alive()
        lease, self._lease = grant(self._id, self._lease, owner, now_ms(), ttl_ms)
        return lease

    async def renew_lease(self, lease: Lease, ttl_ms: int) -> Lease:
        """See :class:`~sessiontree.storage.lease.LeaseSlot`."""
        self._alive()
        renewed = renew(lease, self._lease, now_ms(), ttl_ms)
        self._lease = LeaseRecord(renewed.owner, renewed.fence, renewed.expires_ms)
        return renewed

    async def release_lease(self, lease: Lease) -> None:
        """See :class:`~sessiontree.storage.lease.LeaseSlot`."""
        record = release(lease, self._lease)
        if record is not None:
            self._lease = record

    async def get_lease(self) -> LeaseRecord | None:
        """See :class:`~sessiontree.storage.lease.LeaseSlot`."""
        return self._lease

    async def get_leaf_id(self) -> str | None:
        """See :meth:`SessionStorage.get_leaf_id`."""
        self._alive()
        return self.index.fold.leaf_id

    async def set_leaf_id(self, target_id: str | None) -> Entry:
        """See :meth:`SessionStorage.set_leaf_id`."""
        return await self.append_entry(LeafEntry(target_id=target_id), at_leaf=True)

    async def set_leaf_id_if(self, target_id: str | None, expected_id: str | None) -> Entry:
        """See :meth:`SessionStorage.set_leaf_id_if` (no ``await`` between check and append)."""
        return await self.append_entry_if(LeafEntry(target_id=target_id), expected_id, at_leaf=True)

    async def append_entry_if(
        self, entry: Entry | Prepared, expected_leaf: str | None, *, at_leaf: bool = False
    ) -> Entry:
        """See :meth:`SessionStorage.append_entry_if` (no ``await`` between check and append)."""
        self._writing()
        if self.index.fold.leaf_id != expected_leaf:
            raise LeafMovedError(self._id, expected_leaf, self.index.fold.leaf_id)
        return self._append(entry, at_leaf=at_leaf)

    async def get_entry(self, entry_id: str) -> Entry | None:
        """See :meth:`SessionStorage.get_entry`."""
        self._alive()
        return self.index.by_id.get(entry_id)

    async def get_entries(self, cursor: EntryCursor | None = None) -> list[Entry]:
        """See :meth:`SessionStorage.get_entries`."""
        self._alive()
        return select_entries(self.index.entries, self.index.seq.get, cursor, session_id=self._id)

    async def get_branch(
        self, leaf_id: str | None = None, *, include_bookkeeping: bool = False
    ) -> list[Entry]:
        """See :meth:`SessionStorage.get_branch`."""
        self._alive()
        chain = self.index.chain(self.index.fold.leaf_id if leaf_id is None else leaf_id)
        return chain if include_bookkeeping else branch_of(chain)

    async def get_context_branch(self, leaf_id: str | None = None) -> list[Entry]:
        """See :class:`~sessiontree.storage.base.ContextBranchReader`."""
        self._alive()
        chain = trace_chain(
            self.index.fold.leaf_id if leaf_id is None else leaf_id,
            self.index.by_id.get,
            session_id=self.index.session_id,
            stop=ContextStart(),
        )
        return branch_of(chain)

    async def append_entry(self, entry: Entry | Prepared, *, at_leaf: bool = False) -> Entry:
        """See :meth:`SessionStorage.append_entry`."""
        self._writing()
        return self._append(entry, at_leaf=at_leaf)

    def _append(self, entry: Entry | Prepared, *, at_leaf: bool) -> Entry:
        # the entry a persistent backend would read back (parity: refused alike, held alike)
        prepared = prepare_entry(entry)
        if at_leaf:
            prepared = prepared.under(self.index.fold.leaf_id)
        entry = prepared.entry
        self.index.check(entry)
        if self.max_session_bytes is None:
            self._size = None
            self.index.add(entry)
        else:
            before, after = self._grow([prepared.body()])
            self.index.add(entry)
            self._size = after
            warn_growth(self._id, before, after, self.max_session_bytes)
        self._note_position([entry])
        self.modified_at = datetime.now(UTC)
        return entry

    async def append_entries(self, entries: Sequence[Entry]) -> None:
        """See :meth:`SessionStorage.append_entries`."""
        self._writing()
        prepared = [prepare_entry(e) for e in entries]
        parsed = [p.entry for p in prepared]
        staged: dict[str, str] = {}  # id -> type of the batch's entries checked so far

        def type_of(entry_id: str) -> str | None:
            return staged.get(entry_id) or self.index.type_of(entry_id)

        for e in parsed:
            check_append(e, type_of, session_id=self._id)
            staged[e.id] = e.type
        limit = self.max_session_bytes
        before, after = (0, 0) if limit is None else self._grow([p.body() for p in prepared])
        for e in parsed:
            self.index.add(e)
        self._note_position(parsed)
        self._size = None if limit is None else after
        if parsed:
            self.modified_at = datetime.now(UTC)
        warn_growth(self._id, before, after, limit)

    def load(self, entries: Sequence[Entry | Prepared]) -> None:
        """Fill a new, empty storage with ``entries`` (checked as one append), before anyone
        can see it.

        Raises:
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: nothing is loaded.
            SessionTooLargeError: the entries take more than ``max_session_bytes``; nothing
                is loaded.
        """
        index = TreeIndex.checked((prepare_entry(e).entry for e in entries), session_id=self._id)
        limit = self.max_session_bytes
        size = 0 if limit is None else sum(len(dump_entry_json(e)) for e in index.entries)
        refuse_growth(self._id, 0, size, limit)
        self.index = index
        self._size = None if limit is None else size
        self._note_position(index.entries)
        warn_growth(self._id, 0, size, limit)

    def _note_position(self, entries: Sequence[Entry]) -> None:
        found = newest_position(entries)
        if found is not None:
            self.sync_position = found

    async def set_modified_at(self, modified_at: datetime) -> None:
        """See :meth:`SessionStorage.set_modified_at`."""
        when = session_time(modified_at, "modified_at")
        self._writing()
        self.modified_at = when

    async def get_label(self, entry_id: str) -> str | None:
        """See :meth:`SessionStorage.get_label`."""
        self._alive()
        return self.index.fold.labels.get(entry_id)

    async def get_name(self) -> str | None:
        """See :meth:`SessionStorage.get_name`."""
        self._alive()
        return self.index.fold.name

    async def fork(self, target_id: str, position: ForkPosition = "at") -> SessionStorage:
        """See :meth:`SessionStorage.fork`; the fork joins the same repository, if any."""
        self._alive()

        async def create(meta: SessionMetadata, entries: list[Entry]) -> SessionStorage:
            new = MemoryStorage(
                metadata=meta,
                on_create=self._on_create,
                on_delete=self._on_delete,
                max_session_bytes=self.max_session_bytes,
            )
            new.index = self._fork_index(entries, new.id)
            if self._on_create is not None:
                self._on_create(new)
            return new

        return await fork_storage(self, target_id, position, create)

    def _fork_index(self, entries: list[Entry], session_id: str) -> TreeIndex:
        """The index of a fork of this session holding ``entries`` (:func:`fork_plan`'s).

        Entries are immutable, so an entry this storage holds is shared, not copied, and not
        checked again: it was prepared and checked when it was appended, and the fork holds
        the source's chain root → target in order, so its parent comes before it with the
        same type. Any other entry (a new label, a copy whose reference the fork cleared) is
        prepared and checked as an append.

        Raises:
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: a new entry is refused.
        """
        held = self.index.by_id
        index = TreeIndex(session_id=session_id)
        for e in entries:
            if held.get(e.id) is not e:
                e = prepare_entry(e).entry
                check_append(e, index.type_of, session_id=session_id, keep_unknown=True)
            index.add(e)
        return index

    async def get_draft(self) -> bytes | None:
        """See :class:`~sessiontree.storage.base.DraftSlot`."""
        self._alive()
        return self._draft

    async def put_draft(self, body: bytes | None) -> None:
        """See :class:`~sessiontree.storage.base.DraftSlot`."""
        self._writing()
        self._draft = None if body is None else bytes(body)

    async def delete(self) -> None:
        """See :meth:`SessionStorage.delete`."""
        if not self._deleted:
            self._deleted = True
            self._draft = self._lease = None
            if self._on_delete is not None:
                self._on_delete(self._id)

    async def close(self) -> None:
        """Nothing to release."""
