"""In-memory repository of :class:`MemoryStorage` sessions (``memory://``)."""

from __future__ import annotations

import builtins
import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sessiontree.backends.memory.storage import MemoryStorage
from sessiontree.entries import Entry, MessageEntry, dump_entry_json
from sessiontree.errors import SessionExistsError, SessionNotFoundError
from sessiontree.ids import check_session_id
from sessiontree.messages import message_text
from sessiontree.metadata import (
    SearchHit,
    SessionInfo,
    SessionMetadata,
    matches_where,
    session_time,
    where_pairs,
)
from sessiontree.repos.base import (
    check_entries,
    check_list_args,
    coerce_metadata,
    fork_session,
    session_of,
)
from sessiontree.repos.retention import EntrySize, TrashedSession
from sessiontree.snippets import make_snippet
from sessiontree.storage.growth import check_max_session_bytes
from sessiontree.storage.search import check_search_args, matches, search_needle
from sessiontree.stored import PreparedEntry
from sessiontree.tree import ForkPosition

if TYPE_CHECKING:
    from sessiontree.session import Session

__all__ = ["MemoryRepo", "check_session_id", "session_info_from_index"]


def session_info_from_index(storage: MemoryStorage) -> SessionInfo:
    """A :class:`SessionInfo` from an in-memory index (the counts its fold keeps)."""
    fold = storage.index.fold
    return SessionInfo(
        id=storage.id,
        name=fold.name,
        created_at=storage.created_at,
        modified_at=storage.modified_at,
        entry_count=fold.entry_count,
        message_count=fold.message_count,
        first_message=fold.first_message,
        parent_session_id=storage.metadata.parent_session_id,
        metadata=storage.metadata,
    )


@dataclass(frozen=True)
class _Trashed:
    """A trashed session: its row and the entries it held (immutable, so kept as they are)."""

    row: TrashedSession
    entries: tuple[Entry, ...]


class MemoryRepo:
    """Sessions in a dict; gone when the process ends. ``open_repo("memory://")``.

    Attributes:
        max_session_bytes: the size limit of every session (``None``: none); see
            :mod:`sessiontree.storage.growth`.
    """

    url = "memory://"

    def __init__(self, *, max_session_bytes: int | None = None) -> None:
        """An empty store.

        Args:
            max_session_bytes: refuse an append that would take a session's stored JSON
                over this many bytes (:class:`~sessiontree.errors.SessionTooLargeError`)
                and warn at 80%; ``None`` (default): no limit.

        Raises:
            InvalidArgumentError: ``max_session_bytes`` is not ``None`` or a whole number ≥ 1.
        """
        self.max_session_bytes = check_max_session_bytes(max_session_bytes)
        self._sessions: dict[str, MemoryStorage] = {}
        self._trash: dict[str, _Trashed] = {}

    async def __aenter__(self) -> MemoryRepo:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _register(self, storage: MemoryStorage) -> None:
        self._sessions[storage.id] = storage

    def _forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    async def create(
        self,
        id: str | None = None,
        metadata: SessionMetadata | Mapping[str, Any] | None = None,
        *,
        entries: Sequence[Entry | PreparedEntry] = (),
        created_at: datetime | None = None,
    ) -> Session:
        """See :meth:`SessionRepo.create`."""
        check_entries(entries)
        when = None if created_at is None else session_time(created_at, "created_at")
        if id is not None:
            check_session_id(id)
            if id in self._sessions:
                raise SessionExistsError("a session with this id already exists", session_id=id)
        storage = MemoryStorage(
            id,
            coerce_metadata(metadata),
            created_at=when,
            on_create=self._register,
            on_delete=self._forget,
            max_session_bytes=self.max_session_bytes,
        )
        storage.load(entries)
        self._register(storage)
        return session_of(storage)

    async def open(self, id: str) -> Session:
        """See :meth:`SessionRepo.open`."""
        storage = self._sessions.get(check_session_id(id))
        if storage is None:
            raise SessionNotFoundError(id)
        return session_of(storage)

    async def list(
        self,
        *,
        limit: int | None = None,
        offset: int = 0,
        where: Mapping[str, str | int | bool | None] | None = None,
    ) -> builtins.list[SessionInfo]:
        """See :meth:`SessionRepo.list` (``where``: a scan of the metadata)."""
        check_list_args(limit, offset)
        pairs = where_pairs(where)
        rows = sorted(
            (s for s in self._sessions.values() if matches_where(s.metadata, pairs)),
            key=lambda s: s.modified_at,
            reverse=True,
        )
        rows = rows[offset:] if limit is None else rows[offset : offset + limit]
        return [session_info_from_index(s) for s in rows]

    async def sync_positions(self) -> dict[str, dict[str, Any]]:
        """See :class:`~sessiontree.storage.sync_index.SyncPositionIndex`: each session's
        newest sync position, kept as it is appended."""
        return {sid: s.sync_position for sid, s in self._sessions.items() if s.sync_position}

    async def delete(self, id: str) -> None:
        """See :meth:`SessionRepo.delete`."""
        storage = self._sessions.get(check_session_id(id))
        if storage is None:
            raise SessionNotFoundError(id)
        await storage.delete()

    async def trash(self, id: str) -> TrashedSession:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.trash`: the session's entries
        move to the trash dict; storages of it still held raise SessionNotFoundError."""
        storage = self._sessions.get(check_session_id(id))
        if storage is None:
            raise SessionNotFoundError(id)
        if id in self._trash:
            raise SessionExistsError(
                "a session with this id is already in the trash", session_id=id
            )
        fold = storage.index.fold
        row = TrashedSession(
            id=id,
            name=fold.name,
            trashed_at=datetime.now(UTC),
            created_at=storage.created_at,
            modified_at=storage.modified_at,
            entry_count=fold.entry_count,
            size_bytes=storage.stored_bytes(),
            metadata=storage.metadata,
        )
        self._trash[id] = _Trashed(row, tuple(storage.index.entries))
        await storage.delete()
        return row

    async def list_trash(self) -> builtins.list[TrashedSession]:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.list_trash`."""
        rows = [t.row for t in self._trash.values()]
        return sorted(rows, key=lambda r: (r.trashed_at, r.id), reverse=True)

    async def restore(self, id: str) -> Session:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.restore`."""
        held = self._trash.get(check_session_id(id))
        if held is None:
            raise SessionNotFoundError(id, "no such session in the trash")
        if id in self._sessions:
            raise SessionExistsError("a session with this id already exists", session_id=id)
        storage = MemoryStorage(
            id,
            held.row.metadata,
            created_at=held.row.created_at,
            on_create=self._register,
            on_delete=self._forget,
        )
        storage.load(held.entries)  # what it held, even over a limit set since
        storage.max_session_bytes = self.max_session_bytes
        storage.modified_at = held.row.modified_at
        self._register(storage)
        del self._trash[id]
        return session_of(storage)

    async def purge(self, id: str) -> None:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.purge`."""
        if self._trash.pop(check_session_id(id), None) is None:
            raise SessionNotFoundError(id, "no such session in the trash")

    async def session_sizes(self) -> dict[str, int]:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.session_sizes` (every entry is
        serialised: memory keeps no JSON)."""
        return {sid: s.stored_bytes() for sid, s in self._sessions.items()}

    async def largest_entries(self, limit: int) -> builtins.list[EntrySize]:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.largest_entries`."""
        sized = (
            EntrySize(sid, e.id, e.type, len(dump_entry_json(e)))
            for sid, s in self._sessions.items()
            for e in s.index.entries
        )
        return heapq.nlargest(limit, sized, key=lambda x: x.size_bytes)

    async def fork(self, id: str, target_id: str, position: ForkPosition = "at") -> Session:
        """See :meth:`SessionRepo.fork`."""
        storage = self._sessions.get(check_session_id(id))
        if storage is None:
            raise SessionNotFoundError(id)
        return await fork_session(storage, target_id, position)

    async def search(
        self,
        query: str,
        limit: int = 20,
        *,
        where: Mapping[str, str | int | bool | None] | None = None,
    ) -> builtins.list[SearchHit]:
        """See :meth:`SessionRepo.search` (a linear scan; sessions in creation order).
        ``where`` (as in :meth:`list`) searches only the sessions it keeps.

        Raises:
            InvalidMetadataError: a bad ``where`` (as :meth:`list`).
        """
        check_search_args(query, limit)
        pairs = where_pairs(where)
        needle = search_needle(query)
        hits: list[SearchHit] = []
        if needle is None or limit == 0:
            return hits
        for storage in self._sessions.values():
            if pairs and not matches_where(storage.metadata, pairs):
                continue
            for e in storage.index.entries:
                if isinstance(e, MessageEntry):
                    text = message_text(e.message)
                    if matches(needle, text):
                        hits.append(SearchHit(storage.id, e.id, make_snippet(text, query)))
                        if len(hits) >= limit:
                            return hits
        return hits

    async def close(self) -> None:
        """Nothing to release; the sessions stay until the object is dropped."""
