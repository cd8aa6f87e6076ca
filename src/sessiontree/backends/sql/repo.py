"""The SQL repository: many sessions in one SQLite file or PostgreSQL database (docs/storage.md "sql").

``SQLRepo("sqlite:///path/sessions.db")`` (the embedded default of :func:`open_repo`) or
``SQLRepo("postgresql://user@host:port/db")``. The repository holds one engine (one SQLite
connection, or one psycopg connection pool) shared by every session it opens; it connects on
first use, creating or migrating the schema (:mod:`sessiontree.backends.sql.schema`).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

from sessiontree._args import check_count
from sessiontree.backends.sql.parse_cache import ParseCache
from sessiontree.backends.sql.payloads import PAYLOAD_THRESHOLD, check_threshold, expand_all_async
from sessiontree.backends.sql.plan import (
    datetime_from_us,
    metadata_from_json,
    now_us,
    us_from_datetime,
)
from sessiontree.backends.sql.rekey import Progress, rekey_store
from sessiontree.backends.sql.sealed import SealedEngine
from sessiontree.backends.sql.storage import SQLStorage, make_engine
from sessiontree.entries import Entry, parse_entry_json
from sessiontree.errors import SessionNotFoundError, StorageError
from sessiontree.ids import check_session_id, new_id
from sessiontree.metadata import (
    SearchHit,
    SessionInfo,
    SessionMetadata,
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
from sessiontree.repos.retention import (
    EntrySize,
    PayloadSize,
    PayloadUsage,
    TrashedSession,
)
from sessiontree.storage.encryption import Codec, KeyRing
from sessiontree.storage.growth import check_max_session_bytes, refuse_growth, warn_growth
from sessiontree.storage.search import check_search_args
from sessiontree.stored import PreparedEntry, prepare_entry
from sessiontree.tree import ForkPosition

if TYPE_CHECKING:
    from sessiontree.session import Session

__all__ = ["SQLRepo"]


class SQLRepo:
    """Sessions in SQLite or PostgreSQL. Usable as ``async with SQLRepo(url) as repo:``.

    Attributes:
        url: the database URL (``sqlite:///…`` or ``postgresql://…``).
        max_session_bytes: the size limit of every session (``None``: none).
        keys: the key ring it was opened with (``None``: none).

    ``read_only``: the store is opened for reading only (SQLite ``mode=ro``): a store that
    does not exist is a :class:`StorageError` instead of a new one, and every write raises
    :class:`StorageError`. What read-only commands use.

    ``parse_cache_mb`` > 0: the sessions it opens share a
    :class:`~sessiontree.backends.sql.ParseCache` of that much stored JSON, so opening a
    session again (a server handling each request with ``open`` + ``build_context``) reuses
    the entries parsed before instead of validating the branch again (bench/README.md has
    the figures). The entries are then shared: treat them as read-only. Off by default.

    ``max_session_bytes``: refuse an append (or a ``create`` with entries) that would take a
    session's stored JSON over this many bytes
    (:class:`~sessiontree.errors.SessionTooLargeError`) and warn at 80%
    (:mod:`sessiontree.storage.growth`; how the size is counted: :class:`SQLStorage`).
    ``None`` (default): no limit.

    ``keys``: the store is encrypted at rest under this key ring (docs/storage.md
    "Encryption at rest"): entry bodies, drafts and first messages are sealed with
    AES-256-GCM under its current key, and the store records that it is encrypted (an open
    without its keys then raises :class:`~sessiontree.errors.EncryptionKeyError`).
    ``index_plaintext``: on an encrypted store, put messages' text into the search index in
    clear (``True``), or index nothing (``False``); ``None`` keeps the store's setting
    (nothing, until a writer opts in).

    ``payload_threshold``: every string of entry JSON of this many bytes or more (images,
    tool outputs) is stored once for the whole store, by SHA-256
    (:mod:`sessiontree.backends.sql.payloads`); reads give back the entries appended.
    ``None``: new entries are stored whole. Default :data:`PAYLOAD_THRESHOLD` (4096). An
    encrypted store (``keys``) stores every payload inline, sealed with its entry.

    Raises (constructor):
        ValueError: ``parse_cache_mb`` is not a finite number ≥ 0.
        InvalidArgumentError: ``max_session_bytes`` is not ``None`` or a whole number ≥ 1.
        StorageError: an unknown URL scheme, or ``payload_threshold`` not ``None`` or ≥ 64.
        MissingExtraError: a PostgreSQL URL without ``pip install 'sessiontree[postgres]'``,
            or ``keys`` without ``pip install 'sessiontree[encryption]'``.
    """

    def __init__(
        self,
        url: str,
        *,
        parse_cache_mb: float = 0,
        read_only: bool = False,
        max_session_bytes: int | None = None,
        keys: KeyRing | None = None,
        index_plaintext: bool | None = None,
        payload_threshold: int | None = PAYLOAD_THRESHOLD,
    ) -> None:
        self.max_session_bytes = check_max_session_bytes(max_session_bytes)
        threshold = check_threshold(payload_threshold)
        self._sizes: dict[str, int] = {}
        """Stored bytes by session id, counted by this repository's storages (see
        :class:`SQLStorage`)."""
        if (
            isinstance(parse_cache_mb, bool)
            or not isinstance(parse_cache_mb, int | float)
            or not 0 <= parse_cache_mb < 2**40
        ):
            raise ValueError(
                f"parse_cache_mb must be a number of MiB from 0 (off), not {parse_cache_mb!r}"
            )
        self.url = url
        self.read_only = read_only
        self.keys = keys
        """The key ring of an encrypted store (``None``: opened without one)."""
        codec = None if keys is None else Codec(keys, index_text=index_plaintext)
        self._engine = make_engine(url, read_only=read_only, codec=codec)
        if codec is None:  # an encrypted store keeps payloads inline (SealedEngine)
            self._engine.payload_threshold = threshold
        self._parse_cache = ParseCache(int(parse_cache_mb * 2**20))

    def __repr__(self) -> str:
        return f"SQLRepo({self.url!r})"

    def _storage(self, session_id: str, meta: SessionMetadata) -> SQLStorage:
        """A storage of session ``session_id`` sharing this repository's connections, parse
        cache, limit and sizes."""
        return SQLStorage(
            self._engine,
            session_id,
            meta,
            parse_cache=self._parse_cache,
            max_session_bytes=self.max_session_bytes,
            sizes=self._sizes,
        )

    async def __aenter__(self) -> SQLRepo:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def create(
        self,
        id: str | None = None,
        metadata: SessionMetadata | Mapping[str, Any] | None = None,
        *,
        entries: Sequence[Entry | PreparedEntry] = (),
        created_at: datetime | None = None,
    ) -> Session:
        """See :meth:`SessionRepo.create`: the session row and its entries in one transaction.

        Raises:
            InvalidSessionIdError: an id outside ``[A-Za-z0-9_-]{1,128}``.
            SessionExistsError: the id is taken.
            SessionTooLargeError: the entries take more than ``max_session_bytes``.
            StorageError: the database cannot be reached or written.
        """
        session_id = new_id() if id is None else check_session_id(id)
        meta = coerce_metadata(metadata)
        created_us = (
            None if created_at is None else us_from_datetime(session_time(created_at, "created_at"))
        )
        stored = [prepare_entry(e) for e in check_entries(entries)]
        bodies = [p.body() for p in stored]
        size = sum(map(len, bodies))
        refuse_growth(session_id, 0, size, self.max_session_bytes)
        await self._engine.create_session(
            session_id, meta, [p.entry for p in stored], bodies, created_us=created_us
        )
        self._sizes[session_id] = size
        warn_growth(session_id, 0, size, self.max_session_bytes)
        return session_of(self._storage(session_id, meta))

    async def open(self, id: str) -> Session:
        """See :meth:`SessionRepo.open`: reads the session row only.

        Raises:
            SessionNotFoundError: no session with this id.
            InvalidEntryError: not a session id.
        """
        meta = await self._engine.load_metadata(check_session_id(id))
        if meta is None:
            raise SessionNotFoundError(id)
        return session_of(self._storage(id, metadata_from_json(meta)))

    async def list(
        self,
        *,
        limit: int | None = None,
        offset: int = 0,
        where: Mapping[str, str | int | bool | None] | None = None,
    ) -> list[SessionInfo]:
        """See :meth:`SessionRepo.list`: one query on the ``sessions`` table (``where``: one
        ``session_meta`` primary-key lookup per key); no entry is read.
        """
        check_list_args(limit, offset)
        return await self._engine.list_sessions(limit, offset, where_pairs(where))

    async def sync_positions(self) -> dict[str, dict[str, Any]]:
        """See :class:`~sessiontree.storage.sync_index.SyncPositionIndex`: one query on the
        ``sync_positions`` table, written in the transaction of each append that stores a
        sync position (so it always agrees with the entries)."""
        out: dict[str, dict[str, Any]] = {}
        for session_id, text in await self._engine.sync_positions():
            value = orjson.loads(text)
            if isinstance(value, dict):
                out[session_id] = value
        return out

    async def delete(self, id: str) -> None:
        """See :meth:`SessionRepo.delete`.

        Raises:
            SessionNotFoundError: no session with this id.
        """
        self._sizes.pop(id, None)
        if not await self._engine.delete_session(check_session_id(id)):
            raise SessionNotFoundError(id)

    async def trash(self, id: str) -> TrashedSession:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.trash`: the ``trash`` row is
        written and the session's rows deleted in one transaction.

        Raises:
            SessionNotFoundError, SessionExistsError (already in the trash), StorageError.
        """
        session_id = check_session_id(id)
        self._sizes.pop(session_id, None)
        row = await self._engine.trash_session(session_id, now_us())
        if row is None:
            raise SessionNotFoundError(id)
        self._parse_cache.clear()
        return _trashed(row)

    async def list_trash(self) -> builtins.list[TrashedSession]:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.list_trash`."""
        return [_trashed(r) for r in await self._engine.list_trash()]

    async def restore(self, id: str) -> Session:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.restore`: the stored JSON of
        every entry is written back as it was (one transaction), its times set, then the
        trash row removed. A crash between the two leaves the session live *and* in the
        trash, never in neither.

        Raises:
            SessionNotFoundError: not in the trash. SessionExistsError: a live session has
                this id; nothing changed.
        """
        session_id = check_session_id(id)
        found = await self._engine.trashed_bodies(session_id)
        if found is None:
            raise SessionNotFoundError(id, "no such session in the trash")
        meta_text, created_us, modified_us, text = found
        stored = [line for line in text.split("\n") if line]
        whole = await expand_all_async(stored, self._engine.get_payloads)
        bodies = [b.encode("utf-8", "surrogatepass") for b in whole]
        entries = [parse_entry_json(b) for b in bodies]
        meta = metadata_from_json(meta_text)
        await self._engine.create_session(
            session_id, meta, entries, bodies, created_us=int(created_us)
        )
        await self._engine.set_modified(session_id, int(modified_us))
        await self._engine.purge_trash(session_id)
        # what it held, even over a limit set since; its size is read by the next append
        self._sizes.pop(session_id, None)
        return session_of(self._storage(session_id, meta))

    @property
    def encrypted(self) -> bool:
        """Opened with a key ring (the store is encrypted at rest)."""
        return isinstance(self._engine, SealedEngine)

    async def rekey(self, *, batch: int = 500, progress: Progress | None = None) -> int:
        """Seal every sealed value of the store again under the key ring's current key, in
        transactions of ``batch`` rows (:func:`~sessiontree.backends.sql.rekey.rekey_store`);
        the number sealed again. ``progress(table, done, total)`` after each batch. Killed
        at any moment, every value is still readable with the ring, and a second run ends
        the job. Values still in clear are sealed too.

        Raises:
            StorageError: the store was opened without keys, or read-only.
            EncryptionKeyError: a value is sealed under a key the ring lacks.
        """
        engine = self._engine
        if not isinstance(engine, SealedEngine):
            raise StorageError(f"{self.url}: rekey needs the store's keys (open it with keys)")
        if self.read_only:
            raise StorageError(f"{self.url}: the store was opened read-only; nothing written")
        check_count(batch, "batch")
        batch = max(batch, 1)
        return await rekey_store(engine.inner, engine.codec, batch=batch, progress=progress)

    async def purge(self, id: str) -> None:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.purge`.

        Raises:
            SessionNotFoundError: not in the trash.
        """
        if not await self._engine.purge_trash(check_session_id(id)):
            raise SessionNotFoundError(id, "no such session in the trash")

    async def session_sizes(self) -> dict[str, int]:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.session_sizes`: one grouped
        query over ``entries`` (the UTF-8 bytes of each body)."""
        return await self._engine.session_sizes()

    async def largest_entries(self, limit: int) -> builtins.list[EntrySize]:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.largest_entries`: one query
        (a scan of ``entries``)."""
        check_count(limit, "limit")
        rows = await self._engine.largest_entries(limit)
        return [EntrySize(r[0], r[1], r[2], int(r[3])) for r in rows]

    async def payload_usage(self, limit: int) -> PayloadUsage:
        """See :class:`~sessiontree.repos.retention.PayloadStore`: the ``payloads`` and
        ``payload_refs`` tables' totals, and the ``limit`` largest payloads."""
        check_count(limit, "limit")
        (count, size, refs), largest = await self._engine.payload_usage(limit)
        return PayloadUsage(
            payloads=count,
            unique_bytes=size,
            references=refs,
            largest=[PayloadSize(r[0], int(r[1]), int(r[2])) for r in largest],
        )

    async def fork(self, id: str, target_id: str, position: ForkPosition = "at") -> Session:
        """See :meth:`SessionRepo.fork`: the session's metadata is read with the fork's rows
        (one round trip fewer than opening it first).

        Raises:
            SessionNotFoundError, EntryNotFoundError, InvalidEntryError.
        """
        session_id = check_session_id(id)
        if not isinstance(target_id, str) or not target_id:
            # the errors of open() then Session.fork(), in that order
            return await (await self.open(session_id)).fork(target_id, position)
        source = SQLStorage.for_fork(
            self._engine,
            session_id,
            parse_cache=self._parse_cache,
            max_session_bytes=self.max_session_bytes,
            sizes=self._sizes,
        )
        return await fork_session(source, target_id, position)

    async def search(
        self,
        query: str,
        limit: int = 20,
        *,
        where: Mapping[str, str | int | bool | None] | None = None,
    ) -> builtins.list[SearchHit]:
        """See :meth:`SessionRepo.search`, through a trigram index (SQLite FTS5 ``trigram``,
        PostgreSQL ``pg_trgm``); newest first. The snippet is cut from the message text around
        the first hit. ``where`` (as in :meth:`list`) searches only the sessions it keeps, in
        the same query (``session_meta`` lookups).

        Raises:
            InvalidMetadataError: a bad ``where`` (as :meth:`list`).
        """
        check_search_args(query, limit)
        return await self._engine.search(query, limit, where_pairs(where))

    async def close(self) -> None:
        """Close the connection (pool). Sessions opened from this repository stop working."""
        self._parse_cache.clear()
        await self._engine.close()


def _trashed(row: Sequence[Any]) -> TrashedSession:
    """A :class:`TrashedSession` from a trash row (:data:`~sessiontree.backends.sql.plan.LIST_TRASH_SQL`)."""
    session_id, trashed_us, meta, created_us, modified_us, name, entry_count, size = row
    return TrashedSession(
        id=session_id,
        name=name,
        trashed_at=datetime_from_us(int(trashed_us)),
        created_at=datetime_from_us(int(created_us)),
        modified_at=datetime_from_us(int(modified_us)),
        entry_count=int(entry_count),
        size_bytes=int(size),
        metadata=metadata_from_json(meta),
    )
