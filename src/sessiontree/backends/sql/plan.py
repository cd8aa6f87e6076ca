"""What the SQLite and PostgreSQL engines share: the engine contract and the pure append planner.

An *engine* (:class:`SQLEngine`) owns the connection(s) to one database and runs every query of
the schema in :mod:`sessiontree.backends.sql.schema`. :class:`~sessiontree.backends.sql.SQLStorage`
and :class:`~sessiontree.backends.sql.repo.SQLRepo` are thin shells over one engine.

Appending is planned here, with no I/O, from the session row and the types of the referenced
ids (found by one query): :func:`plan_append` runs the core rules
(:func:`sessiontree.tree.check_append`, :class:`sessiontree.fold.LogFold`) and returns the
rows to insert and the new session counters, so both dialects validate identically.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import orjson

from sessiontree.entries import (
    Entry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    dump_entry_json,
    parse_entry_json,
)
from sessiontree.errors import InvalidEntryError, SessionExistsError
from sessiontree.fold import LogFold
from sessiontree.messages import message_text
from sessiontree.metadata import SearchHit, SessionInfo, SessionMetadata, metadata_pairs
from sessiontree.snippets import make_snippet
from sessiontree.storage.base import EntryCursor
from sessiontree.storage.lease import Lease, LeaseRecord
from sessiontree.storage.search import SEARCH_MAX_CHARS, text_for_search
from sessiontree.storage.sync_index import newest_position
from sessiontree.stored import reparent
from sessiontree.tree import check_append, entry_refs

if TYPE_CHECKING:
    from sessiontree.storage.encryption import Codec

__all__ = [
    "FTS_MAX_CHARS",
    "ChainRow",
    "ForkPlan",
    "AppendPlan",
    "EntryRow",
    "index_text",
    "row_index_text",
    "seal_rows",
    "SQLEngine",
    "LIST_COLUMNS",
    "SessionState",
    "info_from_row",
    "hit_from_row",
    "lookup_ids",
    "lease_upsert_sql",
    "meta_rows",
    "now_us",
    "us_from_datetime",
    "plan_append",
    "where_clause",
    "INSERT_TRASH_SQL",
    "LIST_TRASH_SQL",
    "TRASHED_BODIES_SQL",
    "TRASH_SOURCE_SQL",
    "trash_taken",
    "trash_values",
]

FTS_MAX_CHARS = SEARCH_MAX_CHARS
"""Message text beyond this many characters is not searched, on any backend
(:mod:`sessiontree.storage.search`)."""

_clock_lock = threading.Lock()
_last_us = 0


def now_us() -> int:
    """The current time in Unix microseconds, strictly increasing within this process.

    ``modified_us`` uses it so that two appends in the same microsecond still list in order.
    """
    global _last_us
    t = time.time_ns() // 1000
    with _clock_lock:
        if t <= _last_us:
            t = _last_us + 1
        _last_us = t
    return t


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def datetime_from_us(us: int) -> datetime:
    """An aware UTC datetime from Unix microseconds."""
    return _EPOCH + timedelta(0, 0, us)


def us_from_datetime(when: datetime) -> int:
    """Unix microseconds of an aware datetime (exact: no float on the way)."""
    return (when - _EPOCH) // timedelta(microseconds=1)


def index_text(text: str) -> str | None:
    """The text the search index holds for a message whose
    :func:`sessiontree.messages.message_text` is ``text``: its first :data:`FTS_MAX_CHARS`
    characters, lower-cased (:func:`sessiontree.storage.search.text_for_search`), or ``None``
    when it is blank (nothing to index). Every writer of the index goes through here, so the
    indexed text is the same whenever and by whichever path a row is indexed.
    """
    return text_for_search(text)


def row_index_text(body: str | bytes, codec: Codec | None = None) -> str | None:
    """:func:`index_text` of a stored ``entries`` row's JSON; ``None`` when there is nothing
    to index (blank text, not a message, or a damaged row: reading it names the entry).

    ``codec``: the store's cipher; a sealed row is indexed only when it says so
    (:attr:`Codec.index_text`), else (or without a codec) it has nothing to index.
    """
    if codec is not None:
        if not codec.index_text:
            return None
        body = codec.open_text(body)
    try:
        entry = parse_entry_json(body)
    except InvalidEntryError:
        return None
    return index_text(message_text(entry.message)) if isinstance(entry, MessageEntry) else None


@dataclass(frozen=True)
class SessionState:
    """The session row as the append planner needs it (read in the append's transaction)."""

    leaf_id: str | None
    entry_count: int
    message_count: int
    has_first_message: bool


@dataclass(frozen=True)
class EntryRow:
    """One ``entries`` row to insert. ``text`` is the message text to index, else ``None``."""

    seq: int
    id: str
    parent_id: str | None
    type: str
    timestamp: str
    target_id: str | None
    body: str
    text: str | None


class ChainRow(NamedTuple):
    """One row of the fork's chain query: the columns of an ``entries`` row, and its JSON only
    for the :data:`PARSED_TYPES` and the first :data:`FIRST_MESSAGES` messages (``None``
    otherwise: such a row is copied unparsed; :mod:`~sessiontree.backends.sql.fork`). A tuple:
    the query's rows are taken as they come."""

    id: str
    parent_id: str | None
    type: str
    body: str | None
    seq: int


@dataclass(frozen=True)
class ForkPlan:
    """What a fork writes: the rows copied in the database, the rows written from JSON, and
    the new session row's counters (as :class:`~sessiontree.backends.sql.plan.AppendPlan`).

    ``copies`` are ``(id, seq)``: the source row with that id becomes row ``seq`` of the fork,
    its JSON and search text unchanged. ``rows`` are the entries written from their JSON.
    ``copy_sources``: the source row's ``seq`` of each copy, in the order of ``copies``, as
    the plan read them (``None``: not known), so the database can copy runs of rows by their
    place instead of looking each one up by id (see :func:`copy_runs`).
    """

    copies: list[tuple[str, int]]
    rows: list[EntryRow]
    leaf_id: str | None
    entry_count: int
    message_count: int
    first_message: str | None
    name: str | None
    copy_sources: list[int] | None = None


@dataclass(frozen=True)
class AppendPlan:
    """The result of :func:`plan_append`: rows to insert and the session row afterwards.

    ``first_message`` / ``name`` are ``None`` when the append leaves them unchanged.
    """

    entries: list[Entry]
    rows: list[EntryRow]
    leaf_id: str | None
    entry_count: int
    message_count: int
    first_message: str | None
    name: str | None
    position: str | None = None
    """The newest sync position among the entries (JSON text,
    :func:`~sessiontree.storage.sync_index.newest_position`), written to ``sync_positions``
    in the append's transaction; ``None`` when there is none."""


def sync_position_sql(placeholder: str) -> str:
    """The statement that stores a session's newest sync position (``session_id``,
    ``position``), with the dialect's parameter ``placeholder`` (``?`` or ``%s``)."""
    p = placeholder
    return (
        f"INSERT INTO sync_positions (session_id, position) VALUES ({p}, {p})"
        " ON CONFLICT (session_id) DO UPDATE SET position = excluded.position"
    )


def lease_upsert_sql(placeholder: str) -> str:
    """The statement that stores a session's lease record (``session_id``, ``owner``,
    ``fence``, ``expires_ms``), with the dialect's parameter ``placeholder``."""
    p = placeholder
    return (
        f"INSERT INTO leases (session_id, owner, fence, expires_ms) VALUES ({p}, {p}, {p}, {p})"
        " ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner,"
        " fence = excluded.fence, expires_ms = excluded.expires_ms"
    )


def lookup_ids(entries: Sequence[Entry], leaf_id: str | None = None) -> list[str]:
    """Every id whose type the validation needs: the new ids and every id they refer to."""
    ids: dict[str, None] = {}
    if leaf_id is not None:
        ids[leaf_id] = None
    for e in entries:
        ids[e.id] = None
        for _, ref in entry_refs(e):
            ids[ref] = None
    return list(ids)


def plan_append(
    session_id: str,
    state: SessionState,
    entries: Sequence[Entry],
    known_types: dict[str, str],
    *,
    at_leaf: bool = False,
    bodies: Sequence[bytes] | None = None,
    keep_unknown: bool = False,
    codec: Codec | None = None,
) -> AppendPlan:
    """Validate ``entries`` in order against the stored session and plan the writes (no I/O).

    Args:
        session_id: named in errors.
        state: the session row, read in the same transaction as the writes.
        entries: parsed entries, appended in this order.
        known_types: ``id → type`` of the stored entries among :func:`lookup_ids`.
        at_leaf: re-parent the (single) entry under ``state.leaf_id`` first.
        bodies: the JSON of each entry (:meth:`~sessiontree.stored.PreparedEntry.body`), reused
            (re-parented by :func:`~sessiontree.stored.reparent`); ``None``: dumped here.
        keep_unknown: accept entries of unknown types (a new session made from copies).
        codec: the store's cipher: the rows' JSON and the first message are sealed, and
            the search text kept only when the store indexes plaintext (:func:`seal_rows`).

    Raises:
        DuplicateEntryError, EntryNotFoundError, InvalidEntryError: docs/tree.md (via
            :func:`sessiontree.tree.check_append`); nothing is planned.
    """
    staged = dict(known_types)
    fold = LogFold(
        state.leaf_id,
        entry_count=state.entry_count,
        message_count=state.message_count,
        first_seen=state.has_first_message,
    )
    out: list[Entry] = []
    rows: list[EntryRow] = []
    for i, entry in enumerate(entries):
        body = None if bodies is None else bodies[i]
        if at_leaf and entry.parent_id != fold.leaf_id:
            if body is None:
                entry = entry.model_copy(update={"parent_id": fold.leaf_id})
            else:
                entry, body = reparent(entry, body, fold.leaf_id)
        check_append(entry, staged.get, session_id=session_id, keep_unknown=keep_unknown)
        staged[entry.id] = entry.type
        text: str | None = None
        target: str | None = None
        if isinstance(entry, MessageEntry):
            text = index_text(message_text(entry.message))
        elif isinstance(entry, LabelEntry | LeafEntry):
            target = entry.target_id
        rows.append(
            EntryRow(
                fold.entry_count,
                entry.id,
                entry.parent_id,
                entry.type,
                entry.timestamp,
                target,
                (dump_entry_json(entry) if body is None else body).decode(),
                text,
            )
        )
        out.append(entry)
        fold.add_entry(entry)
    first = fold.first_message
    if codec is not None:
        rows, first = seal_rows(codec, rows, first)
    return AppendPlan(
        out,
        rows,
        fold.leaf_id,
        fold.entry_count,
        fold.message_count,
        first,
        fold.name,
        _position_text(out),
    )


def seal_rows(
    codec: Codec, rows: list[EntryRow], first_message: str | None
) -> tuple[list[EntryRow], str | None]:
    """``rows`` and a session's ``first_message`` as an encrypted store keeps them: the JSON
    and the first message sealed (:meth:`Codec.seal_text`), the search text dropped unless
    the store indexes plaintext (docs/storage.md "Encryption at rest"). Every row written
    to an encrypted store goes through here."""
    keep = codec.index_text
    seal = codec.seal_text
    return [
        replace(r, body=seal(r.body), text=r.text if keep else None) for r in rows
    ], None if first_message is None else seal(first_message)


def _position_text(entries: Sequence[Entry]) -> str | None:
    position = newest_position(entries)
    return None if position is None else orjson.dumps(position).decode()


_META_CACHE: dict[str, SessionMetadata] = {}


def metadata_from_json(text: str) -> SessionMetadata:
    """Parse stored metadata JSON; identical texts share one (immutable) model."""
    meta = _META_CACHE.get(text)
    if meta is None:
        meta = SessionMetadata.model_validate_json(text)
        if len(_META_CACHE) < 10_000:
            _META_CACHE[text] = meta
    return meta


TRASH_SOURCE_SQL = (
    "SELECT metadata, created_us, modified_us, name, entry_count FROM sessions WHERE id = {p}"
)
"""What the trash keeps of a session's row (``{p}``: the dialect's placeholder)."""

INSERT_TRASH_SQL = (
    "INSERT INTO trash (session_id, trashed_us, metadata, created_us, modified_us, name,"
    " entry_count, size_bytes, bodies) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})"
)
"""One trash row, from :func:`trash_values`."""

LIST_TRASH_SQL = (
    "SELECT session_id, trashed_us, metadata, created_us, modified_us, name, entry_count,"
    " size_bytes FROM trash ORDER BY trashed_us DESC, session_id DESC"
)
"""Every trash row, most recently trashed first."""

TRASHED_BODIES_SQL = (
    "SELECT metadata, created_us, modified_us, bodies FROM trash WHERE session_id = {p}"
)
"""What a restore needs of a trashed session."""


def trash_values(
    session_id: str,
    trashed_us: int,
    row: Sequence[Any],
    bodies: Sequence[str],
    payload_bytes: int = 0,
) -> tuple[Any, ...]:
    """The :data:`INSERT_TRASH_SQL` values of a session: its :data:`TRASH_SOURCE_SQL` row and
    its entries' stored JSON in append order (kept one per line; JSON text holds no raw
    newline). ``size_bytes`` is the entries' UTF-8 bytes plus ``payload_bytes`` (the payloads
    they refer to, once), as :meth:`SQLEngine.session_sizes` counts."""
    metadata, created_us, modified_us, name, entry_count = row
    size = payload_bytes + sum(len(b.encode("utf-8", "surrogatepass")) for b in bodies)
    return (
        session_id,
        trashed_us,
        metadata,
        created_us,
        modified_us,
        name,
        entry_count,
        size,
        "\n".join(bodies),
    )


def trash_taken(session_id: str) -> SessionExistsError:
    """The error for trashing a session whose id is in the trash already."""
    return SessionExistsError(
        "a session with this id is already in the trash; restore or purge it first",
        session_id=session_id,
    )


LIST_COLUMNS = (
    "id, metadata, created_us, modified_us, name, entry_count, message_count, first_message,"
    " parent_session_id"
)
"""The ``sessions`` columns :func:`info_from_row` reads, in its order."""


def meta_condition(
    where: Mapping[str, str], placeholder: str, column: str = "id"
) -> tuple[str, list[str]]:
    """The condition that session id ``column`` has every ``where`` key equal to its JSON
    text (``""`` when ``where`` is empty) and its parameters: one ``session_meta``
    primary-key lookup per key. What ``list(where=...)`` and ``search(where=...)`` share."""
    lookup = (
        f"{column} IN (SELECT session_id FROM session_meta WHERE key = {placeholder}"
        f" AND value = {placeholder})"
    )
    params: list[str] = []
    for key, value in where.items():
        params += [key, value]
    return " AND ".join([lookup] * len(where)), params


def where_clause(where: Mapping[str, str], placeholder: str) -> tuple[str, list[str]]:
    """The ``WHERE`` of a filtered listing (``""`` when unfiltered) and its parameters
    (:func:`meta_condition`)."""
    if not where:
        return "", []
    condition, params = meta_condition(where, placeholder)
    return " WHERE " + condition, params


def meta_rows(session_id: str, metadata: SessionMetadata) -> list[tuple[str, str, str]]:
    """The ``session_meta`` rows of a new session: (key, value JSON text, session id)."""
    return [(k, v, session_id) for k, v in metadata_pairs(metadata).items()]


def info_from_row(row: Sequence[Any]) -> SessionInfo:
    """A :class:`SessionInfo` from a ``sessions`` row selected as :data:`LIST_COLUMNS`.

    Positional construction (field order of :class:`SessionInfo`; ``timedelta(0, 0, us)``
    rather than ``microseconds=``, a fifth cheaper): three times cheaper than
    keywords, which matters when listing 10k sessions.
    """
    return SessionInfo(
        row[0],
        row[4],
        _EPOCH + timedelta(0, 0, row[2]),
        _EPOCH + timedelta(0, 0, row[3]),
        row[5],
        row[6],
        row[7],
        row[8],
        metadata_from_json(row[1]),
    )


def hit_from_row(
    session_id: str, entry_id: str, body: str | bytes, query: str, codec: Codec | None = None
) -> SearchHit:
    """A :class:`SearchHit` whose snippet is cut from the message text around the query
    (``codec``: the store's cipher, opening a sealed row)."""
    entry = parse_entry_json(body if codec is None else codec.open_text(body))
    text = message_text(entry.message) if isinstance(entry, MessageEntry) else ""
    return SearchHit(session_id, entry_id, make_snippet(text, query))


def entries_page_sql(
    session_id: str,
    cursor: EntryCursor,
    after_seq: int | None,
    *,
    mark: str,
    body: str,
    types_in: Callable[[list[str]], tuple[str, list[Any]]],
) -> tuple[str, list[Any]]:
    """The query of one page of a session's entries in ``seq`` order, and its parameters.

    ``mark`` is the dialect's placeholder (``?`` or ``%s``), ``body`` the selected body
    expression, ``types_in(types)`` the dialect's ``type`` filter for sorted ``types``
    (clause, parameters). Rows are ``(id, body)``; a negative limit reads nothing.
    """
    sql = [f"SELECT id, {body} FROM entries WHERE session_id = {mark}"]
    params: list[Any] = [session_id]
    if after_seq is not None:
        sql.append(f"AND seq < {mark}" if cursor.reverse else f"AND seq > {mark}")
        params.append(after_seq)
    if cursor.types is not None:
        clause, values = types_in(sorted(cursor.types))
        sql.append(clause)
        params.extend(values)
    sql.append("ORDER BY seq DESC" if cursor.reverse else "ORDER BY seq")
    if cursor.limit is not None:
        sql.append(f"LIMIT {mark}")
        params.append(max(cursor.limit, 0))
    return " ".join(sql), params


class SQLEngine(Protocol):
    """One database behind the SQL backends (SQLite or PostgreSQL). Every method is async.

    Engines return stored JSON text; :class:`~sessiontree.backends.sql.SQLStorage` parses it.
    They translate driver errors into :mod:`sessiontree.errors` (original as ``__cause__``).
    """

    url: str

    async def create_session(
        self,
        session_id: str,
        metadata: SessionMetadata,
        entries: Sequence[Entry] = (),
        bodies: Sequence[bytes] | None = None,
        *,
        created_us: int | None = None,
    ) -> None:
        """Insert a session holding ``entries`` (validated as an append), in one transaction:
        the session is never visible without all of them. ``created_us`` (Unix µs, default
        now) is its ``created_us`` and ``modified_us``.

        Raises:
            SessionExistsError: the id is taken.
            EntryNotFoundError, InvalidEntryError: an entry is refused; nothing is created.
        """
        ...

    async def fork_session(
        self, source_id: str, session_id: str, metadata: SessionMetadata, plan: ForkPlan
    ) -> None:
        """Create session ``session_id`` holding what ``plan`` says, in one transaction (a fork
        of ``source_id``; :mod:`sessiontree.backends.sql.fork`).

        The rows of ``plan.copies`` are copied from ``source_id`` in the database (same JSON,
        same search text), ``plan.rows`` written from their JSON, and the session row gets
        the plan's counters. On any error nothing is created.

        Raises:
            SessionExistsError: the id is taken. SessionNotFoundError: the source went away.
        """
        ...

    async def get_fork_rows(
        self, session_id: str, leaf_id: str, *, metadata: bool = False
    ) -> tuple[list[ChainRow], list[tuple[str, str]], str | None]:
        """What a fork of ``session_id`` at ``leaf_id`` is planned from, in one round trip where
        the database allows: the chain as :meth:`get_chain` walks it but root first, with
        the JSON of the :data:`~sessiontree.backends.sql.fork.PARSED_TYPES` rows and of the
        :data:`~sessiontree.backends.sql.fork.FIRST_MESSAGES` root-most messages only (``None``
        for the rest; the root-most messages may miss theirs when the session branched before
        the target: the planner asks :meth:`get_bodies` for what it lacks); and
        ``(id, JSON)`` of every ``label`` entry, in append order; with ``metadata``, the
        session's metadata JSON as :meth:`load_metadata` reads it (else ``None``)."""
        ...

    async def get_bodies(self, session_id: str, entry_ids: Sequence[str]) -> dict[str, str]:
        """``id → JSON`` of those of ``entry_ids`` that the session holds (one query)."""
        ...

    payload_threshold: int | None
    """Strings of entry JSON of this many bytes or more are stored once, as payloads
    (``None``: off; :mod:`sessiontree.backends.sql.payloads`)."""

    async def get_payloads(self, hashes: Sequence[str]) -> dict[str, str]:
        """``hash → JSON string literal`` of those of ``hashes`` that are stored (one query):
        what the stored bodies' references expand to
        (:func:`~sessiontree.backends.sql.payloads.expand`)."""
        ...

    async def payload_usage(self, limit: int) -> tuple[tuple[int, int, int], list[Any]]:
        """``((payloads, their bytes, references), largest)``: the payload store's totals
        and its ``limit`` largest payloads as ``(hash, bytes, references)`` rows."""
        ...

    async def set_modified(
        self, session_id: str, modified_us: int, lease: Lease | None = None
    ) -> bool:
        """Set the session row's ``modified_us``; ``False`` when there is no such session.
        ``lease``: as :meth:`append`.

        Raises:
            LeaseLostError: ``lease`` is no longer the session's; nothing written.
        """
        ...

    async def load_metadata(self, session_id: str) -> str | None:
        """The session's metadata JSON, ``None`` when there is no such session."""
        ...

    async def session_leaf(self, session_id: str) -> tuple[bool, str | None]:
        """``(the session exists, its stored leaf)``."""
        ...

    async def get_entry(self, session_id: str, entry_id: str) -> str | None:
        """One entry's JSON, ``None`` when absent."""
        ...

    async def entry_seq(self, session_id: str, entry_id: str) -> int | None:
        """An entry's sequence number, ``None`` when absent."""
        ...

    async def get_entries(
        self, session_id: str, cursor: EntryCursor, after_seq: int | None
    ) -> list[tuple[str, str]]:
        """``(id, JSON)`` in append order (``cursor.reverse``: newest first), after ``after_seq``."""
        ...

    async def get_chain(
        self, session_id: str, leaf_id: str | None
    ) -> list[tuple[str, str | None, str, str, int]]:
        """``(id, parent_id, type, JSON, depth)`` from ``leaf_id`` (stored leaf if ``None``) up,
        then the session row as ``(None, stored leaf_id, None, None, -1)``.

        One recursive query, bounded by the session's entry count (a cycle cannot loop), so
        the leaf and the rows are one snapshot; rows come in walk order, leaf (depth 0)
        first. Only the session row when the leaf names no entry; ``[]`` when there is no
        such session.
        """
        ...

    async def get_chain_until(
        self, session_id: str, leaf_id: str | None, stop_type: str | None, stop_id: str | None
    ) -> list[tuple[str, str | None, str, str, int, int]]:
        """:meth:`get_chain`, ending also after the first row of type ``stop_type`` or with id
        ``stop_id`` (``None``: no such end). The rows up to and including that one, each with
        the session row's ``created_us`` after its depth."""
        ...

    async def append(
        self,
        session_id: str,
        entries: Sequence[Entry],
        *,
        at_leaf: bool,
        bodies: Sequence[bytes] | None = None,
        lease: Lease | None = None,
    ) -> list[Entry]:
        """Validate (:func:`plan_append`) and insert entries and the new session row atomically.

        ``bodies``: each entry's JSON (:meth:`~sessiontree.stored.PreparedEntry.body`), if known.
        ``lease``: the writer lease the append is under, checked in its transaction
        (:mod:`sessiontree.storage.lease`).

        Raises:
            SessionNotFoundError, DuplicateEntryError, EntryNotFoundError, InvalidEntryError.
            LeaseLostError: ``lease`` is no longer the session's; nothing written.
        """
        ...

    async def append_if_leaf(
        self,
        session_id: str,
        entry: Entry,
        body: bytes,
        expected_id: str | None,
        *,
        at_leaf: bool = True,
        lease: Lease | None = None,
    ) -> Entry:
        """Append ``entry`` (JSON ``body``; under the stored leaf when ``at_leaf``), in one
        transaction that first checks the stored leaf is ``expected_id`` (and ``lease``, as
        :meth:`append`).

        Raises:
            LeafMovedError: the stored leaf is another; nothing written.
            LeaseLostError: ``lease`` is no longer the session's; nothing written.
            SessionNotFoundError, EntryNotFoundError, InvalidEntryError.
        """
        ...

    async def sync_positions(self) -> list[tuple[str, str]]:
        """Every ``sync_positions`` row: ``(session_id, position JSON text)``."""
        ...

    async def get_label_body(self, session_id: str, entry_id: str) -> str | None:
        """The JSON of the newest ``label`` entry targeting ``entry_id`` (an index lookup)."""
        ...

    async def get_name_body(self, session_id: str) -> str | None:
        """The JSON of the newest ``session_info`` entry (an index lookup)."""
        ...

    async def delete_session(self, session_id: str) -> bool:
        """Delete a session, its entries, its draft and their search index; ``False`` when
        there was none."""
        ...

    async def get_draft(self, session_id: str) -> str | None:
        """The session's ``drafts.body``, ``None`` when it has none (one indexed read)."""
        ...

    async def put_draft(
        self, session_id: str, body: str | None, updated_ms: int, lease: Lease | None = None
    ) -> bool:
        """Upsert the session's draft row (``None`` deletes it) in one statement that checks
        the session row exists; ``False`` when it does not (nothing written). ``lease``: as
        :meth:`append`.

        Raises:
            StorageError: read-only, or the database failed.
            LeaseLostError: ``lease`` is no longer the session's; nothing written.
        """
        ...

    async def acquire_lease(
        self, session_id: str, owner: str, now_ms: int, ttl_ms: int
    ) -> Lease | None:
        """Take the session's writer lease (:func:`~sessiontree.storage.lease.grant` over its
        ``leases`` row, in one transaction); ``None`` when there is no such session.

        Raises:
            SessionBusyError: another owner holds it; nothing changed.
        """
        ...

    async def renew_lease(self, lease: Lease, now_ms: int, ttl_ms: int) -> Lease:
        """Move the lease's expiry (:func:`~sessiontree.storage.lease.renew`, one transaction).

        Raises:
            LeaseLostError: it is no longer the session's; nothing changed.
        """
        ...

    async def release_lease(self, lease: Lease) -> None:
        """Release the lease if it is still the session's (one transaction)."""
        ...

    async def get_lease(self, session_id: str) -> LeaseRecord | None:
        """The session's ``leases`` row, ``None`` when it has none."""
        ...

    async def trash_session(self, session_id: str, trashed_us: int) -> tuple[Any, ...] | None:
        """Move a session to the ``trash`` table and delete its rows, in one transaction; the
        trash row as :data:`LIST_TRASH_SQL` selects it, ``None`` when there is no session.

        Raises:
            SessionExistsError: the id is in the trash already; nothing changed.
        """
        ...

    async def list_trash(self) -> list[tuple[Any, ...]]:
        """The trash rows (:data:`LIST_TRASH_SQL`), most recently trashed first."""
        ...

    async def trashed_bodies(self, session_id: str) -> tuple[Any, ...] | None:
        """``(metadata, created_us, modified_us, bodies)`` of a trashed session, or ``None``."""
        ...

    async def purge_trash(self, session_id: str) -> bool:
        """Delete a trashed session for good; ``False`` when it is not in the trash."""
        ...

    async def session_sizes(self) -> dict[str, int]:
        """UTF-8 bytes of every live session's stored entry JSON, by session id."""
        ...

    async def session_size(self, session_id: str) -> int:
        """UTF-8 bytes of one session's stored entry JSON (0: no entries, or no session)."""
        ...

    async def largest_entries(self, limit: int) -> list[tuple[Any, ...]]:
        """``(session_id, entry_id, type, bytes)`` of the ``limit`` largest entries."""
        ...

    async def list_sessions(
        self, limit: int | None, offset: int, where: Mapping[str, str]
    ) -> list[SessionInfo]:
        """Sessions, newest ``modified_us`` first, with every ``where`` key equal to its JSON
        text (:func:`~sessiontree.metadata.where_pairs`); reads ``sessions`` and ``session_meta``."""
        ...

    async def search(
        self, query: str, limit: int, where: Mapping[str, str] | None = None
    ) -> list[SearchHit]:
        """Full-text search over message text, best match first; only in sessions with every
        ``where`` key equal to its JSON text (:func:`meta_condition`) when given."""
        ...

    async def close(self) -> None:
        """Close connections. Idempotent."""
        ...
