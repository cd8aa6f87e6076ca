"""SQL storage: one session in SQLite or PostgreSQL (docs/storage.md "sql").

The schema and its migrations are in :mod:`sessiontree.backends.sql.schema`; the two engines in
:mod:`sessiontree.backends.sql.sqlite` (the embedded default) and
:mod:`sessiontree.backends.sql.postgres` (psycopg 3 through a connection pool). This module is
the thin :class:`SessionStorage` shell over an engine:

* ``append_entry`` validates with the core rules and writes the entry and the new leaf in one
  transaction (``at_leaf`` takes the parent from the stored leaf inside that transaction);
* ``get_branch`` is one recursive query, whatever the depth;
* ``get_entries`` pages by the per-session sequence number;
* labels and the name are index lookups of the newest ``label`` / ``session_info`` entry.

Entries are immutable, so each storage keeps the entries it has parsed (at most
:data:`ENTRY_CACHE_SIZE` entries and :data:`ENTRY_CACHE_BYTES` of their JSON) and the last
context branch it read: rebuilding the context each turn fetches and parses only what is new
(:meth:`SQLStorage.get_context_branch`).
Large strings of entry JSON are stored once, as payloads (:mod:`~sessiontree.backends.sql.payloads`):
the engine cuts them out as it writes; :meth:`SQLStorage._parse` puts them back (read by
:meth:`SQLStorage._load` for the entries not parsed yet), so every entry this storage returns
equals the entry appended.
Drivers load lazily: ``import sessiontree`` imports neither ``sqlite3`` users nor ``psycopg``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from sessiontree.backends.sql.fork import (
    ForkPlan,
    plan_fork,
    plan_from_entries,
)
from sessiontree.backends.sql.parse_cache import ParseCache
from sessiontree.backends.sql.payloads import HEAD, expand, payload_hashes
from sessiontree.backends.sql.plan import SQLEngine, metadata_from_json, us_from_datetime
from sessiontree.context import context_start
from sessiontree.entries import (
    BOOKKEEPING_TYPES,
    Entry,
    LabelEntry,
    LeafEntry,
    SessionInfoEntry,
    parse_entry_json,
)
from sessiontree.errors import (
    CorruptSessionError,
    EntryNotFoundError,
    InvalidEntryError,
    SessionNotFoundError,
    StorageError,
)
from sessiontree.fold import LogFold
from sessiontree.ids import check_session_id, new_id, now_ms
from sessiontree.metadata import SessionMetadata, session_time
from sessiontree.storage.base import EntryCursor, SessionStorage, fork_plan
from sessiontree.storage.growth import check_max_session_bytes, refuse_growth, warn_growth
from sessiontree.storage.lease import Lease, LeaseRecord, writing_under
from sessiontree.stored import Prepared, PreparedEntry, prepare_entry
from sessiontree.tree import ForkPosition

if TYPE_CHECKING:
    from sessiontree.storage.encryption import Codec

__all__ = ["ENTRY_CACHE_BYTES", "ENTRY_CACHE_SIZE", "SQLStorage", "make_engine"]

ENTRY_CACHE_SIZE = 20_000
"""Parsed entries a :class:`SQLStorage` keeps (oldest parsed dropped first)."""
PAYLOAD_TEXTS_CHARS = 16 * 2**20
"""Payload text a :class:`SQLStorage` keeps between reads (characters); beyond it, the next
read drops what it holds first."""
ENTRY_CACHE_BYTES = 64 * 2**20
"""...and at most this much stored JSON behind them (bytes; the parsed objects take more): a count
alone lets 20,000 entries with large tool outputs hold GBs per open session."""


def make_engine(url: str, *, read_only: bool = False, codec: Codec | None = None) -> SQLEngine:
    """The engine for a ``sqlite:`` or ``postgresql:``/``postgres:`` URL (connects lazily).

    ``read_only``: never create or write the store (see the engines). ``codec``: the store
    is encrypted at rest under it (a :class:`~sessiontree.backends.sql.sealed.SealedEngine`;
    docs/storage.md "Encryption at rest"); without one, an encrypted store refuses to open
    (:class:`~sessiontree.errors.EncryptionKeyError` on first use).

    Raises:
        StorageError: another scheme, or a malformed URL.
        MissingExtraError: ``psycopg``/``psycopg_pool`` are not installed (PostgreSQL).
    """
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    engine: Any
    if scheme == "sqlite":
        from sessiontree.backends.sql.sqlite import SQLiteEngine

        engine = SQLiteEngine(url, read_only=read_only)
        where = engine.path
    elif scheme in ("postgresql", "postgres"):
        from sessiontree.backends.sql.postgres import PostgresEngine

        engine = PostgresEngine(url, read_only=read_only)
        where = engine.connection.where
    else:
        raise StorageError(
            f"unknown SQL URL scheme {scheme!r} in {url!r}: use sqlite:///file.db or "
            "postgresql://user@host:port/db"
        )
    if codec is None:
        return cast("SQLEngine", engine)
    from sessiontree.backends.sql.sealed import SealedEngine

    codec.where = where
    return cast("SQLEngine", SealedEngine(engine, codec))


def _in_walk_order(rows: list[Any]) -> list[Any]:
    """Rows of a recursive walk (depth at index 4), leaf (depth 0) first (they come so; sorted
    if not)."""
    if any(r[4] != i for i, r in enumerate(rows)):
        return sorted(rows, key=lambda r: r[4])
    return rows


_NOT_KNOWN = object()
"""The leaf this storage would build an entry under is not known."""


class SQLStorage:
    """One session stored in SQLite or PostgreSQL. See :class:`SessionStorage` for each method.

    Made by :class:`~sessiontree.backends.sql.repo.SQLRepo` (sharing its connections), or on its own
    with :meth:`open` / :meth:`create` (owning them; :meth:`close` releases them).

    ``max_session_bytes``: refuse an append that would take the session's stored JSON over
    this many bytes and warn at 80% (:mod:`sessiontree.storage.growth`); ``None``: no limit.
    The size is read from the store (one query) by the first append under a limit and then
    counted on by every append made through ``sizes``, the dict of known sizes by session id
    that the storages of one repository share; appends by other processes to the same session
    are counted when this process reads the size again (a session opened by another
    repository object). A fork keeps the limit.
    """

    def __init__(
        self,
        engine: SQLEngine,
        session_id: str,
        metadata: SessionMetadata,
        *,
        owns_engine: bool = False,
        parse_cache: ParseCache | None = None,
        max_session_bytes: int | None = None,
        sizes: dict[str, int] | None = None,
    ) -> None:
        self.max_session_bytes = check_max_session_bytes(max_session_bytes)
        self._sizes: dict[str, int] = {} if sizes is None else sizes
        """Stored bytes by session id, as far as this process counted them (see above)."""
        self._engine = engine
        self._id = session_id
        self._metadata = metadata
        self._metadata_unread = False
        self._owns_engine = owns_engine
        self._cache: dict[str, Entry] = {}
        """Entries parsed, by id (bounded, see :meth:`_remember`)."""
        self._cache_bytes = 0
        self._parse_cache = parse_cache if parse_cache is not None else ParseCache()
        self._cache_full = False
        self._context: tuple[str, str, list[Entry]] | None = None
        """The last context branch read: its leaf's id and stored JSON, and its entries; see
        :meth:`get_context_branch`."""
        self._created_us: int | None = None
        """The session row's ``created_us`` when this storage last read a context: another
        value means the session was deleted and made again under this id since."""
        self._texts: dict[str, str] = {}
        """Payloads read for the stored bodies being parsed (hash → JSON literal), so
        :meth:`_parse` expands them (:mod:`sessiontree.backends.sql.payloads`)."""
        self._texts_chars = 0
        self._leaf_fold: LogFold | None = None
        """The leaf after this storage's last ``at_leaf`` append (``None``: not known): the
        parent a new entry is built under before the transaction, which moves it only when
        another writer appended since."""

    @classmethod
    async def open(cls, url: str, session_id: str) -> SQLStorage:
        """Open a stored session by URL; the storage owns its connection.

        Raises:
            SessionNotFoundError: no such session. StorageError: the store cannot be opened.
        """
        engine = make_engine(url)
        try:
            meta = await engine.load_metadata(session_id)
            if meta is None:
                raise SessionNotFoundError(session_id)
        except BaseException:
            await engine.close()
            raise
        return cls(engine, session_id, metadata_from_json(meta), owns_engine=True)

    @classmethod
    def for_fork(
        cls,
        engine: SQLEngine,
        session_id: str,
        *,
        parse_cache: ParseCache | None = None,
        max_session_bytes: int | None = None,
        sizes: dict[str, int] | None = None,
    ) -> SQLStorage:
        """Session ``session_id`` not opened yet, to fork it: :meth:`fork` reads its metadata
        with the fork's rows (one round trip fewer than opening first) and raises
        :class:`SessionNotFoundError` when there is no such session. For nothing but one
        :meth:`fork`: until then its :attr:`metadata` is empty. The fork gets
        ``max_session_bytes`` and ``sizes`` (see the class)."""
        storage = cls(
            engine,
            session_id,
            SessionMetadata(),
            parse_cache=parse_cache,
            max_session_bytes=max_session_bytes,
            sizes=sizes,
        )
        storage._metadata_unread = True
        return storage

    @classmethod
    async def create(
        cls, url: str, session_id: str | None = None, metadata: SessionMetadata | None = None
    ) -> SQLStorage:
        """Create an empty session by URL; the storage owns its connection.

        Raises:
            SessionExistsError: the id is taken. StorageError: the store cannot be opened.
        """
        session_id = new_id() if session_id is None else check_session_id(session_id)
        metadata = metadata or SessionMetadata()
        engine = make_engine(url)
        try:
            await engine.create_session(session_id, metadata)
        except BaseException:
            await engine.close()
            raise
        return cls(engine, session_id, metadata, owns_engine=True)

    def __repr__(self) -> str:
        return f"SQLStorage({self._id!r}, url={self._engine.url!r})"

    @property
    def id(self) -> str:
        """The session id."""
        return self._id

    @property
    def metadata(self) -> SessionMetadata:
        """The session metadata (immutable after creation)."""
        return self._metadata

    # ------------------------------------------------------------------ parsing

    def _cached(self, entry_id: str) -> Entry | None:
        return self._cache.get(entry_id)

    def _parse(self, entry_id: str, body: str | bytes) -> Entry:
        """The entry of a stored body (its payloads read by :meth:`_load` before)."""
        entry = self._cached(entry_id)
        if entry is None:
            size = len(body)
            entry = self._parse_cache.get(self._id, entry_id, body)
            if entry is None:
                whole = self._expanded(entry_id, body)
                size = len(whole)
                try:
                    entry = parse_entry_json(whole)
                except InvalidEntryError as exc:
                    raise CorruptSessionError(
                        f"stored entry cannot be read: {exc}",
                        session_id=self._id,
                        entry_id=entry_id,
                    ) from exc
                self._parse_cache.put(self._id, entry_id, body, entry, size)
            self._remember(entry, size)
        return entry

    def _expanded(self, entry_id: str, body: str | bytes) -> str | bytes:
        """``body`` with its payloads put back (itself when it refers to none).

        Raises:
            CorruptSessionError: it names a payload that is not stored.
        """
        if isinstance(body, str):
            if not body.startswith(HEAD):
                return body
            text = body
        else:
            if bytes(body[: len(HEAD)]) != HEAD.encode():
                return body
            text = bytes(body).decode("utf-8", "surrogatepass")
        try:
            return expand(text, self._texts, session_id=self._id)
        except CorruptSessionError as exc:
            raise CorruptSessionError(
                str(exc.args[0]) if exc.args else "dangling payload reference",
                session_id=self._id,
                entry_id=entry_id,
            ) from exc

    async def _load(self, rows: Sequence[tuple[str, str | bytes | None]]) -> None:
        """Read the payloads that the stored bodies of ``rows`` (``(entry id, body)``) refer
        to, for the entries not parsed yet, so :meth:`_parse` can expand them."""
        wanted: dict[str, None] = {}
        for entry_id, body in rows:
            if body is None or entry_id in self._cache:
                continue
            for h in payload_hashes(body):
                if h not in self._texts:
                    wanted[h] = None
        if not wanted:
            return
        if self._texts_chars > PAYLOAD_TEXTS_CHARS:
            self._texts.clear()
            self._texts_chars = 0
        got = await self._engine.get_payloads(list(wanted))
        self._texts.update(got)
        self._texts_chars += sum(map(len, got.values()))

    def _remember(self, entry: Entry, size: int) -> None:
        """Keep ``entry`` (``size``: bytes of its stored JSON) if both cache bounds allow.

        A full cache keeps what it holds (dropping the oldest would make a branch larger than
        the budget, read root to leaf each turn, evict everything before reuse, so no read
        would ever hit); the entries beyond the budget are parsed on each read.
        """
        cache = self._cache
        if entry.id in cache:
            return
        if len(cache) >= ENTRY_CACHE_SIZE or self._cache_bytes + size > ENTRY_CACHE_BYTES:
            self._cache_full = True
            return
        cache[entry.id] = entry
        self._cache_bytes += size

    def _forget_all(self) -> None:
        self._cache.clear()
        self._cache_bytes = 0
        self._cache_full = False
        self._context = None

    async def _missing_session_check(self) -> str | None:
        exists, leaf = await self._engine.session_leaf(self._id)
        if not exists:
            raise SessionNotFoundError(self._id)
        return leaf

    # ------------------------------------------------------------------ reading

    async def get_leaf_id(self) -> str | None:
        """See :meth:`SessionStorage.get_leaf_id`. Raises SessionNotFoundError once deleted."""
        return await self._missing_session_check()

    async def get_entry(self, entry_id: str) -> Entry | None:
        """See :meth:`SessionStorage.get_entry`."""
        cached = self._cached(entry_id)
        if cached is not None:
            return cached
        body = await self._engine.get_entry(self._id, entry_id)
        if body is None:
            await self._missing_session_check()
            return None
        await self._load([(entry_id, body)])
        return self._parse(entry_id, body)

    async def get_entries(self, cursor: EntryCursor | None = None) -> list[Entry]:
        """See :meth:`SessionStorage.get_entries`: one query, paged by sequence number."""
        cursor = cursor or EntryCursor()
        after_seq: int | None = None
        if cursor.after is not None:
            after_seq = await self._engine.entry_seq(self._id, cursor.after)
            if after_seq is None:
                await self._missing_session_check()
                raise EntryNotFoundError(
                    "cursor names no entry", session_id=self._id, entry_id=cursor.after
                )
        if cursor.limit is not None and cursor.limit <= 0:
            return []
        rows = await self._engine.get_entries(self._id, cursor, after_seq)
        if not rows and after_seq is None:
            await self._missing_session_check()
        await self._load(rows)
        parse = self._parse
        return [parse(i, b) for i, b in rows]

    async def get_branch(
        self, leaf_id: str | None = None, *, include_bookkeeping: bool = False
    ) -> list[Entry]:
        """See :meth:`SessionStorage.get_branch`: one recursive query, root → leaf.

        The query reads the session row (its leaf) and the rows of the walk in one statement,
        so the branch is one snapshot of the session: an append or a leaf move committed
        meanwhile is either wholly in it or not at all.
        """
        rows = await self._engine.get_chain(self._id, leaf_id)
        if rows and rows[-1][4] == -1:
            session = rows.pop()
        else:  # the session row not last (never seen): sort, it comes first
            rows = sorted(rows, key=lambda r: r[4])
            if not rows or rows[0][4] != -1:
                raise SessionNotFoundError(self._id)
            session = rows.pop(0)
        if not rows:
            if leaf_id is not None:
                raise EntryNotFoundError("no such entry", session_id=self._id, entry_id=leaf_id)
            if session[1] is None:
                return []
            raise CorruptSessionError(
                "the stored leaf names no entry", session_id=self._id, entry_id=session[1]
            )
        if any(r[4] != i for i, r in enumerate(rows)):  # not in walk order (never seen): sort
            rows = sorted(rows, key=lambda r: r[4])
        rows.reverse()  # root first
        if rows[0][1] is not None:
            self._raise_broken_chain(rows)
        await self._load([(r[0], r[3]) for r in rows])
        return self._parse_rows(rows, include_bookkeeping=include_bookkeeping)

    async def get_context_branch(self, leaf_id: str | None = None) -> list[Entry]:
        """See :class:`~sessiontree.storage.base.ContextBranchReader`: at most two recursive
        queries, leaf → newest compaction, then on to its
        :func:`~sessiontree.context.context_start` (or to the root when that is ``None``).
        The first walk also stops at the leaf of the last context this storage read: reaching
        it, the context is that one plus the rows walked (the next turn fetches only its new
        rows).

        Anything unexpected on the way (no rows, a walk that ends on a missing parent or in a
        cycle) is left to :meth:`get_branch`, which reads the whole branch and raises what it
        finds.
        """
        known = self._context
        rows = _in_walk_order(
            await self._engine.get_chain_until(
                self._id, leaf_id, "compaction", None if known is None else known[0]
            )
        )
        if not rows:
            return await self.get_branch(leaf_id)
        leaf, created = rows[0], rows[0][5]
        if created != self._created_us:
            if self._created_us is not None:
                # the session was deleted and made again under this id since: what this
                # storage parsed may be another session's entries under the same ids
                self._forget_all()
                known = None
            self._created_us = created
        if known is not None and rows[-1][0] == known[0] and rows[-1][3] == known[1]:
            # The walk reached the last context's leaf, the same row (its JSON holds its
            # parent), so that leaf is an ancestor of this one (or it) with no compaction
            # after it: the context starts where that one did and is that one plus the rows
            # walked (a chain never changes: entries are immutable and append-only). One query
            # of only the new rows.
            rows.pop()
            rows.reverse()
            await self._load([(r[0], r[3]) for r in rows])
            return self._kept(leaf, known[2] + self._parse_rows(rows, include_bookkeeping=False))
        last = rows[-1]
        start: str | None = None
        if last[2] == "compaction":
            await self._load([(last[0], last[3])])
            start = context_start(self._parse(last[0], last[3]))
            if start != last[0] and last[1] is not None:  # on to the start (None: the root)
                more = _in_walk_order(
                    await self._engine.get_chain_until(self._id, last[1], None, start)
                )
                if more and more[0][5] != created:
                    # the session was deleted and made again between the two walks: the
                    # second read another session's rows; one read of the whole branch
                    return await self.get_branch(leaf_id)
                rows = rows + more
        end = rows[-1]
        if end[1] is not None and (start is None or end[0] != start):
            return await self.get_branch(leaf_id)  # neither the root nor the start reached
        rows.reverse()
        del last, end
        await self._load([(r[0], r[3]) for r in rows])
        return self._kept(leaf, self._parse_rows(rows, include_bookkeeping=False))

    def _kept(self, leaf: tuple[Any, ...], entries: list[Entry]) -> list[Entry]:
        """``entries`` (the context branch of the chain row ``leaf``), kept as the last context
        read while the entry cache holds every entry parsed (the entries are then kept anyway,
        so keeping the list adds one reference each); the caller gets its own list."""
        self._context = None if self._cache_full else (leaf[0], leaf[3], entries)
        return list(entries)

    def _parse_rows(self, rows: list[Any], *, include_bookkeeping: bool) -> list[Entry]:
        """The entries of chain rows (root first), each row let go once parsed: the fetched
        JSON of a long branch is freed while the entries are built, so the two are never
        held whole at once (the peak is about the entries, not the entries plus their JSON).
        ``rows`` is emptied."""
        parse = self._parse
        entries: list[Entry] = []
        for i, row in enumerate(rows):
            rows[i] = None
            if include_bookkeeping or row[2] not in BOOKKEEPING_TYPES:
                entries.append(parse(row[0], row[3]))
        rows.clear()
        return entries

    def _raise_broken_chain(self, rows: Sequence[tuple[str, str | None, str, Any, int]]) -> None:
        """The root row still has a parent: a cycle (the walk hit its bound) or a missing parent.

        Raises:
            CorruptSessionError: always.
        """
        ids = [r[0] for r in rows]
        if len(set(ids)) < len(ids):
            raise CorruptSessionError(
                "cycle in parentId links", session_id=self._id, entry_id=rows[-1][0]
            )
        raise CorruptSessionError(
            f"entry {rows[0][0]!r} has parentId {rows[0][1]!r}, which names no entry",
            session_id=self._id,
            entry_id=rows[0][0],
        )

    async def _parse_once(self, body: str) -> Entry:
        """The entry of a stored body, its payloads read now, kept in no cache."""
        hashes = payload_hashes(body)
        if not hashes:
            return parse_entry_json(body)
        texts = await self._engine.get_payloads(hashes)
        return parse_entry_json(expand(body, texts, session_id=self._id))

    async def get_label(self, entry_id: str) -> str | None:
        """See :meth:`SessionStorage.get_label`: the newest ``label`` entry, by index."""
        body = await self._engine.get_label_body(self._id, entry_id)
        if body is None:
            return None
        entry = await self._parse_once(body)
        return entry.label or None if isinstance(entry, LabelEntry) else None

    async def get_name(self) -> str | None:
        """See :meth:`SessionStorage.get_name`: the newest ``session_info`` entry, by index."""
        body = await self._engine.get_name_body(self._id)
        if body is None:
            return None
        entry = await self._parse_once(body)
        return entry.name if isinstance(entry, SessionInfoEntry) else None

    # ------------------------------------------------------------------ writing

    async def append_entry(self, entry: Entry | Prepared, *, at_leaf: bool = False) -> Entry:
        """See :meth:`SessionStorage.append_entry`: one transaction for entry, leaf and counters."""
        prepared = self._placed(prepare_entry(entry), at_leaf, self._leaf_guess())
        body = prepared.body()
        before = await self._size_before(len(body))
        (stored,) = await self._engine.append(
            self._id, [prepared.entry], at_leaf=at_leaf, bodies=[body], lease=self._lease()
        )
        self._grown(before, len(body))
        self._remember(stored, len(body))
        self._learn_leaf(stored, at_leaf)
        return stored

    async def _size_before(self, adding: int) -> int:
        """The session's size before an append of ``adding`` bytes that the limit allows
        (0 without a limit: nothing is read).

        Raises:
            SessionTooLargeError: the append would take the session over the limit.
        """
        if self.max_session_bytes is None:
            return 0
        size = self._sizes.get(self._id)
        if size is None:
            size = self._sizes[self._id] = await self._engine.session_size(self._id)
        refuse_growth(self._id, size, adding, self.max_session_bytes)
        return size

    def _grown(self, before: int, added: int) -> None:
        """Count ``added`` bytes just appended to a session of ``before`` bytes (added to
        the shared count as it is now: another task may have appended meanwhile)."""
        if self.max_session_bytes is not None:
            after = self._sizes.get(self._id, before) + added
            self._sizes[self._id] = after
            warn_growth(self._id, after - added, after, self.max_session_bytes)

    def _leaf_guess(self) -> str | object | None:
        """The leaf after this storage's last ``at_leaf`` append, or ``_NOT_KNOWN``."""
        fold = self._leaf_fold
        return _NOT_KNOWN if fold is None else fold.leaf_id

    @staticmethod
    def _placed(prepared: Prepared, at_leaf: bool, leaf: str | object | None) -> PreparedEntry:
        """``prepared`` with its JSON, built under ``leaf`` (the leaf the append most likely
        finds, or ``_NOT_KNOWN``) when it goes at the leaf: the engine moves it again only if
        the stored leaf differs (:func:`~sessiontree.backends.sql.plan.plan_append`)."""
        if at_leaf and leaf is not _NOT_KNOWN:
            return prepared.under(cast("str | None", leaf)).serialised()
        return prepared.serialised()

    def _learn_leaf(self, stored: Entry, at_leaf: bool) -> None:
        """Fold ``stored`` (just appended) into the leaf this storage expects next; an append
        not at the leaf forgets it (the leaf it started from is not known)."""
        if not at_leaf:
            self._leaf_fold = None
            return
        fold = self._leaf_fold
        if fold is None or fold.leaf_id != stored.parent_id:
            fold = self._leaf_fold = LogFold(stored.parent_id, first_seen=True)
        fold.add_entry(stored)

    async def append_entries(self, entries: Sequence[Entry]) -> None:
        """See :meth:`SessionStorage.append_entries`: one transaction, all or nothing."""
        stored = [prepare_entry(e).serialised() for e in entries]
        self._leaf_fold = None
        if stored:
            bodies = [p.body() for p in stored]
            added = sum(map(len, bodies))
            before = await self._size_before(added)
            await self._engine.append(
                self._id,
                [p.entry for p in stored],
                at_leaf=False,
                bodies=bodies,
                lease=self._lease(),
            )
            self._grown(before, added)

    async def set_leaf_id(self, target_id: str | None) -> Entry:
        """See :meth:`SessionStorage.set_leaf_id`."""
        return await self.append_entry(LeafEntry(target_id=target_id), at_leaf=True)

    async def set_leaf_id_if(self, target_id: str | None, expected_id: str | None) -> Entry:
        """See :meth:`SessionStorage.set_leaf_id_if`: the leaf check and the append in one
        transaction."""
        return await self.append_entry_if(LeafEntry(target_id=target_id), expected_id, at_leaf=True)

    async def append_entry_if(
        self, entry: Entry | Prepared, expected_leaf: str | None, *, at_leaf: bool = False
    ) -> Entry:
        """See :meth:`SessionStorage.append_entry_if`: the leaf check and the append in one
        transaction."""
        prepared = self._placed(prepare_entry(entry), at_leaf, expected_leaf)
        body = prepared.body()
        before = await self._size_before(len(body))
        stored = await self._engine.append_if_leaf(
            self._id, prepared.entry, body, expected_leaf, at_leaf=at_leaf, lease=self._lease()
        )
        self._grown(before, len(body))
        self._remember(stored, len(body))
        self._learn_leaf(stored, at_leaf)
        return stored

    async def set_modified_at(self, modified_at: datetime) -> None:
        """See :meth:`SessionStorage.set_modified_at`: the session row's ``modified_us``."""
        us = us_from_datetime(session_time(modified_at, "modified_at"))
        if not await self._engine.set_modified(self._id, us, self._lease()):
            raise SessionNotFoundError(self._id)

    async def fork(self, target_id: str, position: ForkPosition = "at") -> SessionStorage:
        """See :meth:`SessionStorage.fork`: one transaction in the same database.

        Planned from the chain's columns (:func:`~sessiontree.backends.sql.fork.plan_fork`):
        the rows copied unchanged are copied inside the database and never parsed; the rest
        (new labels, copies whose references :func:`~sessiontree.tree.fork_chain` changed) are
        written from their JSON. A chain that plan cannot take (a target that is not a path
        entry, a broken chain, an unknown target) goes the generic way
        (:func:`~sessiontree.storage.base.fork_plan`), which raises what every backend raises.
        """
        plan = await self._fork_plan(target_id, position)
        if self._metadata_unread:  # not read with the rows: the planner declined first
            self._read_metadata(await self._engine.load_metadata(self._id))
        meta = self._metadata.model_copy(
            update={"parent_session_id": self._id, "forked_from_entry_id": target_id}
        )
        meta.__pydantic_fields_set__.update({"parent_session_id", "forked_from_entry_id"})
        if plan is None:
            await self._missing_session_check()
            meta, entries = await fork_plan(self, target_id, position)
            plan = plan_from_entries(self._id, entries, lambda e: self._cached(e.id) is e)
        new = new_id()
        await self._engine.fork_session(self._id, new, meta, plan)
        return SQLStorage(
            self._engine,
            new,
            meta,
            parse_cache=self._parse_cache,
            max_session_bytes=self.max_session_bytes,
            sizes=self._sizes,
        )

    async def _fork_plan(self, target_id: str, position: ForkPosition) -> ForkPlan | None:
        """:func:`~sessiontree.backends.sql.fork.plan_fork` over this session's rows; ``None``
        when the generic path must run."""
        if position not in ("at", "before"):
            return None
        chain, label_rows, meta = await self._engine.get_fork_rows(
            self._id, target_id, metadata=self._metadata_unread
        )
        if self._metadata_unread:
            self._read_metadata(meta)
        if not chain:
            return None
        await self._load([(r.id, r.body) for r in chain])
        await self._load(label_rows)
        labels = [self._parse(i, b) for i, b in label_rows]
        bodies: dict[str, str] = {}
        missing: list[str] = []

        def fetch(ids: list[str]) -> dict[str, str]:
            # the fold asks synchronously: what is not fetched yet is fetched after, then
            # the plan made again
            got = {i: bodies[i] for i in ids if i in bodies}
            missing.extend(i for i in ids if i not in bodies)
            return got

        plan = plan_fork(self._id, chain, self._parse, labels, fetch, position)
        while missing:  # no user message among the first ones: fetch the next and plan again
            known = len(bodies)
            got = await self._engine.get_bodies(self._id, list(dict.fromkeys(missing)))
            await self._load(list(got.items()))
            bodies.update(got)
            missing.clear()
            if len(bodies) == known:  # deleted meanwhile: the copy will find the rows gone
                break
            plan = plan_fork(self._id, chain, self._parse, labels, fetch, position)
        return plan

    def _read_metadata(self, meta: str | None) -> None:
        """Take the metadata JSON a :meth:`for_fork` storage read (``None``: no session)."""
        if meta is None:
            raise SessionNotFoundError(self._id)
        self._metadata = metadata_from_json(meta)
        self._metadata_unread = False

    async def get_draft(self) -> bytes | None:
        """See :class:`~sessiontree.storage.base.DraftSlot`: one read of the ``drafts`` row."""
        body = await self._engine.get_draft(self._id)
        return None if body is None else body.encode()

    async def put_draft(self, body: bytes | None) -> None:
        """See :class:`~sessiontree.storage.base.DraftSlot`: one upsert (or delete) of the
        ``drafts`` row, which checks the session row exists.

        Raises:
            SessionNotFoundError: the session was deleted; nothing written.
            StorageError: read-only, or the database failed.
        """
        text = None if body is None else bytes(body).decode()
        if not await self._engine.put_draft(self._id, text, now_ms(), self._lease()):
            raise SessionNotFoundError(self._id)

    # ------------------------------------------------------------------ the writer lease

    def _lease(self) -> Lease | None:
        """The lease a write made now is under (checked in its transaction), if any."""
        return writing_under(self._id)

    async def acquire_lease(self, owner: str, ttl_ms: int) -> Lease:
        """See :class:`~sessiontree.storage.lease.LeaseSlot`: the ``leases`` row read and
        written in one transaction.

        Raises:
            SessionBusyError: another owner holds it. SessionNotFoundError: no such session.
        """
        lease = await self._engine.acquire_lease(self._id, owner, now_ms(), ttl_ms)
        if lease is None:
            raise SessionNotFoundError(self._id)
        return lease

    async def renew_lease(self, lease: Lease, ttl_ms: int) -> Lease:
        """See :class:`~sessiontree.storage.lease.LeaseSlot`."""
        return await self._engine.renew_lease(lease, now_ms(), ttl_ms)

    async def release_lease(self, lease: Lease) -> None:
        """See :class:`~sessiontree.storage.lease.LeaseSlot`."""
        await self._engine.release_lease(lease)

    async def get_lease(self) -> LeaseRecord | None:
        """See :class:`~sessiontree.storage.lease.LeaseSlot`."""
        return await self._engine.get_lease(self._id)

    async def delete(self) -> None:
        """See :meth:`SessionStorage.delete`: entries, draft, search index and session row, in one transaction."""
        await self._engine.delete_session(self._id)
        self._sizes.pop(self._id, None)
        self._forget_all()

    async def close(self) -> None:
        """Drop the parsed-entry cache; close the connection if this storage owns it. Idempotent."""
        self._forget_all()
        if self._owns_engine:
            await self._engine.close()
