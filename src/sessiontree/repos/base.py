"""The ``SessionRepo`` protocol: a store of many sessions (docs/storage.md)."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sessiontree import _json as exact_json
from sessiontree._args import check_count
from sessiontree.entries import Entry, _EntryBase
from sessiontree.errors import InvalidArgumentError, InvalidMetadataError
from sessiontree.metadata import SearchHit, SessionInfo, SessionMetadata
from sessiontree.session import Session
from sessiontree.snippets import make_snippet
from sessiontree.stored import PreparedEntry
from sessiontree.tree import ForkPosition

if TYPE_CHECKING:
    from sessiontree.storage.base import SessionStorage

__all__ = [
    "SessionRepo",
    "check_entries",
    "check_list_args",
    "coerce_metadata",
    "fork_session",
    "make_snippet",
    "session_of",
]


@runtime_checkable
class SessionRepo(Protocol):
    """A store of sessions. All methods async; usable as ``async with repo:``."""

    url: str
    """Where the store lives, as accepted by :func:`open_repo`."""

    async def create(
        self,
        id: str | None = None,
        metadata: SessionMetadata | Mapping[str, Any] | None = None,
        *,
        entries: Sequence[Entry | PreparedEntry] = (),
        created_at: datetime | None = None,
    ) -> Session:
        """Create a session (a new UUID v7 id unless given) holding ``entries``.

        ``entries`` are entry models, or entries already prepared for a store
        (:func:`~sessiontree.stored.prepare_entry`: an importer checks each entry that way
        first), whose JSON is then not written and read back again.

        The entries are validated as one append to an empty session. The session appears
        whole or not at all: a crash or an error part-way leaves no session, empty or partial,
        behind (what imports rely on).

        ``created_at`` (an aware datetime; default now) is the session's ``created_at`` in
        :meth:`list`, and its ``modified_at`` until the first append: an import gives the
        source's first entry time, then sets the newest with
        :meth:`~sessiontree.storage.base.SessionStorage.set_modified_at`.

        Raises:
            SessionExistsError: the id is taken. InvalidSessionIdError: a bad id.
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: an entry is refused
                (``entry_id`` names it); nothing is created.
            InvalidMetadataError: ``created_at`` is not an aware datetime.
        """
        ...

    async def open(self, id: str) -> Session:
        """Open an existing session.

        Raises:
            SessionNotFoundError: no session with this id.
            InvalidEntryError: ``id`` is not a session id (``[A-Za-z0-9_-]{1,128}``); the
                same on every backend.
        """
        ...

    async def list(
        self,
        *,
        limit: int | None = None,
        offset: int = 0,
        where: Mapping[str, str | int | bool | None] | None = None,
    ) -> builtins.list[SessionInfo]:
        """Sessions, newest ``modified_at`` first, paged with ``limit``/``offset``; reads no entries.

        ``where`` keeps only sessions whose metadata has every given top-level key (camelCase,
        e.g. ``{"userId": "u1", "appName": "support"}``) equal to the given value (a string,
        integer, boolean or ``None``; ``1`` and ``"1"`` differ). Paging applies after the
        filter. Indexed on SQL backends.

        Raises:
            InvalidArgumentError: ``limit`` not an int from 0 to 2**63 - 1 or ``None``,
                ``offset`` not an int from 0 to 2**63 - 1 (the same on every backend).
            InvalidMetadataError: a ``where`` value of another type.
        """
        ...

    async def delete(self, id: str) -> None:
        """Delete a session. Raises SessionNotFoundError."""
        ...

    async def fork(self, id: str, target_id: str, position: ForkPosition = "at") -> Session:
        """Fork session ``id`` at ``target_id`` (docs/branching.md). Raises SessionNotFoundError, EntryNotFoundError."""
        ...

    async def search(self, query: str, limit: int = 20) -> builtins.list[SearchHit]:
        """Messages whose text contains ``query``, case-insensitively: session id, entry id and
        a snippet; at most ``limit`` hits.

        One semantics on every backend (:mod:`sessiontree.storage.search`): the lower-cased
        query is a substring of the lower-cased message text (its first 100,000 characters),
        so a word inside a CJK run and a file name such as ``main.py`` are found; a blank
        query finds nothing. Which hits come first differs by backend.

        Raises:
            InvalidArgumentError: ``query`` is not a str, or ``limit`` not an int from 0 to
                2**63 - 1.
        """
        ...

    async def close(self) -> None:
        """Release connections and files. Idempotent."""
        ...

    async def __aenter__(self) -> SessionRepo: ...

    async def __aexit__(self, *exc: object) -> None: ...


def session_of(storage: SessionStorage) -> Session:
    """The :class:`Session` a repository hands out for one of its storages.

    Every repository's ``create``, ``open`` and ``fork`` return what this returns: the one
    place a storage becomes a session, so a setting every session of a store should share is
    given here once. A session's own :meth:`Session.fork` wraps the storage it forks in a
    session of the same kind.
    """
    return Session(storage)


async def fork_session(
    source: SessionStorage, target_id: str, position: ForkPosition = "at"
) -> Session:
    """Fork the session ``source`` stores at ``target_id`` (:meth:`SessionRepo.fork`): the
    target is checked and the path copied as :meth:`Session.fork` does, through
    :func:`session_of`.

    Raises:
        EntryNotFoundError: unknown target. InvalidEntryError: a bookkeeping target or a bad
            position. InvalidArgumentError: ``target_id`` is not an entry id.
    """
    return await session_of(source).fork(target_id, position)


def check_list_args(limit: object, offset: object) -> None:
    """``list``'s paging arguments, alike on every backend (every repository checks them
    here before it reads anything).

    Raises:
        InvalidArgumentError: ``limit`` not an int from 0 to
            :data:`~sessiontree._args.MAX_COUNT` or ``None``, ``offset`` not an int in that
            range.
    """
    check_count(limit, "limit", optional=True)
    check_count(offset, "offset")


def check_entries(entries: object) -> Sequence[Entry | PreparedEntry]:
    """The ``entries`` of :meth:`SessionRepo.create`: a sequence of entry models or
    :class:`~sessiontree.stored.PreparedEntry` values.

    Raises:
        InvalidArgumentError: anything else.
    """
    if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
        raise InvalidArgumentError(
            f"entries must be a sequence of entries, not {type(entries).__name__}"
        )
    for e in entries:
        if not isinstance(e, _EntryBase | PreparedEntry):
            raise InvalidArgumentError(
                f"entries must hold entry models (sessiontree.entries), not {type(e).__name__}"
            )
    return entries


def coerce_metadata(metadata: SessionMetadata | Mapping[str, Any] | None) -> SessionMetadata:
    """A :class:`SessionMetadata` from a model, a camelCase/snake_case dict or ``None``.

    Raises:
        InvalidMetadataError: not a mapping, not valid metadata, or holding a value JSON cannot
            carry (NaN/Infinity, lone surrogates, bytes that are not UTF-8) — refused before
            anything is written, on every backend alike (before, JSONL wrote NaN as null,
            SQLite as a bare ``NaN`` and PostgreSQL refused it).
    """
    if metadata is None:
        return SessionMetadata()
    if not isinstance(metadata, SessionMetadata):
        if not isinstance(metadata, Mapping):
            raise InvalidMetadataError(
                "session metadata must be a mapping or SessionMetadata, not "
                f"{type(metadata).__name__}"
            )
        try:
            metadata = SessionMetadata.model_validate(dict(metadata))
        except ValueError as exc:
            raise InvalidMetadataError(f"invalid session metadata: {exc}") from exc
    try:
        exact_json.model_json(metadata)
    except ValueError as exc:
        raise InvalidMetadataError(f"session metadata {exc}") from exc
    return metadata
