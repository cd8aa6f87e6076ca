"""What every importer shares: ids for records without one, staging entries, storing them in one batch.

An importer is a pure function ``convert(data, path, report, lenient) -> Converted`` that turns
the bytes of a file into :class:`Draft` entries (each remembering its source line) plus
session metadata. :func:`finalize` then makes the drafts appendable: duplicate ids and
entries that cannot be stored are unreadable lines, a parent that names no entry makes its
entry a root (reported), and children that come before their parents in the file are moved
after them. :func:`store` creates the session and appends everything in one
``append_entries`` call, so a failed import leaves nothing in the repository (docs/interop.md).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sessiontree import _json as exact_json
from sessiontree.entries import BOOKKEEPING_TYPES, CustomEntry, Entry, LeafEntry, with_parent
from sessiontree.errors import (
    AlreadyImportedError,
    CorruptSessionError,
    DuplicateEntryError,
    InvalidEntryError,
    SessionExistsError,
    SessionNotFoundError,
    SessionTreeError,
    StorageError,
)
from sessiontree.fold import LogFold
from sessiontree.ids import is_session_id, iso_or, ms_from_iso, ms_or
from sessiontree.interop.links import POINTER_KEY, added_entries, pointer_of, record_of
from sessiontree.interop.positions import POSITION_KEY, SyncPosition, position_entry
from sessiontree.interop.report import CustomLine, DanglingParent, ImportReport, UnreadableLine
from sessiontree.metadata import SessionMetadata
from sessiontree.repos.base import SessionRepo
from sessiontree.session import Session
from sessiontree.storage.base import fork_plan
from sessiontree.stored import PreparedEntry, prepare_entry
from sessiontree.tree import check_append, entry_refs, leaf_of_log

Progress = Callable[[int], None]
"""An import's progress callback: called with the number of bytes of the file read so far."""

__all__ = [
    "AlreadyImportedError",
    "Converted",
    "Draft",
    "IdMaker",
    "Progress",
    "custom_draft",
    "extend",
    "extend_from_tail",
    "imported_format",
    "first_record",
    "finalize",
    "iso_or",
    "ms_or",
    "store",
    "unreadable",
]


@dataclass
class Draft:
    """One entry to import and where it came from.

    Attributes:
        entry: the entry, already validated as a model.
        line: 1-based source line (``None`` for single-document formats).
    """

    entry: Entry
    line: int | None = None


@dataclass
class Converted:
    """The result of a pure converter, before anything is stored.

    Attributes:
        drafts: entries in source order.
        metadata: camelCase session metadata (unknown keys kept).
        session_id: the id the new session should get (the file's own session id, or one
            derived from it); ``None`` or an id not of the form ``[A-Za-z0-9_-]{1,128}``
            gives a new UUID v7.
        leaf_id: the leaf the session must end on; a trailing ``leaf`` entry is added when
            the append log alone would give another one. ``None``: the log decides.
    """

    drafts: list[Draft] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    leaf_id: str | None = None


FIRST_RECORD_BYTES = 4096
"""At most this many bytes of a file seed the ids of its records (:func:`first_record`)."""


def first_record(data: bytes) -> bytes:
    """The bytes of a file that stay the same as the agent appends to it: its first non-blank
    line (a JSONL file's first record; an Aider history's first header), at most
    :data:`FIRST_RECORD_BYTES` (the start of a JSON document an agent rewrites whole)."""
    start = len(data) - len(data.lstrip())
    head = data[start : start + FIRST_RECORD_BYTES]
    end = head.find(b"\n")
    return head if end < 0 else head[:end]


class IdMaker:
    """Entry ids for records the source gives none: UUID v7 strings made from the record.

    The 48-bit time field is the record's own timestamp (Unix ms) and the random bits come from
    a SHA-256 of the file's first record (:func:`first_record`), the line and the position
    within the line, so importing the same file again gives the same ids (on every backend),
    the ids still sort by time, and a file that grew keeps the ids of the records it already
    had (an incremental re-import finds them stored).
    """

    def __init__(self, data: bytes) -> None:
        self._seed = hashlib.sha256(first_record(data)).digest()
        self._used: set[tuple[int | str | None, int]] = set()

    def make(self, ms: int, line: int | str | None, part: int = 0) -> str:
        """The id of record ``part`` of ``line`` written at ``ms`` (Unix ms).

        Asking twice for the same ``(line, part)`` (two JSON objects on one line) gives the
        next unused part, so ids never collide; the sequence is the same on every import.
        """
        while (line, part) in self._used:
            part += 1
        self._used.add((line, part))
        digest = hashlib.sha256(self._seed + f"{line}\x1f{part}".encode()).digest()
        ms = min(max(int(ms), 0), (1 << 48) - 1)
        rand_a = int.from_bytes(digest[:2], "big") & 0xFFF
        rand_b = int.from_bytes(digest[2:10], "big") & ((1 << 62) - 1)
        value = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
        return str(uuid.UUID(int=value))


def _preview(raw: bytes | str) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return text[:200]


def unreadable(
    report: ImportReport,
    path: Path,
    line: int | None,
    reason: str,
    raw: bytes | str,
    *,
    lenient: bool,
) -> None:
    """Record a line that cannot be imported; without ``lenient`` fail the import on it.

    Raises:
        CorruptSessionError: not ``lenient`` (names the file and the line).
    """
    if not lenient:
        raise CorruptSessionError(reason, path=path, line_number=line)
    report.unreadable_lines.append(UnreadableLine(line, reason, _preview(raw)))


def custom_draft(
    report: ImportReport,
    custom_type: str,
    data: Any,
    *,
    line: int | None,
    entry_id: str,
    parent_id: str | None = None,
    timestamp: str | None = None,
    where: str | None = None,
) -> Draft:
    """A ``custom`` entry holding a record we do not model, listed in ``report.custom_lines``."""
    fields: dict[str, Any] = {
        "id": entry_id,
        "custom_type": custom_type,
        "data": data,
        "parent_id": parent_id,
    }
    if timestamp is not None:
        fields["timestamp"] = timestamp
    entry = CustomEntry(**fields)
    report.custom_lines.append(CustomLine(line, custom_type, entry.id, where))
    return Draft(entry, line)


def finalize(
    drafts: list[Draft],
    report: ImportReport,
    path: Path,
    *,
    lenient: bool,
    known: Mapping[str, str] | None = None,
    prepared: dict[str, PreparedEntry] | None = None,
) -> list[Entry]:
    """Make drafts appendable in one batch; report every change (docs/interop.md).

    ``known``: id → type of entries already stored that the drafts may refer to (the drafts
    are the lines a file gained since a sync, appended after them); empty by default.
    ``prepared``: filled with id → the entry as :func:`~sessiontree.stored.prepare_entry`
    prepared it, with its JSON, for each entry returned as it was checked (a store takes it
    as it is instead of writing and reading it back again).

    * an entry no store can write (:func:`~sessiontree.stored.prepare_entry`), a second entry
      with an id already used, or a ``label``/``leaf`` target or ``fromId`` that names no
      usable entry: unreadable (fails unless ``lenient``);
    * a ``parentId`` that names no entry, names a ``leaf`` entry, or closes a cycle: the
      entry becomes a root and is listed in ``report.dangling_parents``;
    * an entry that comes before its parent (or target) in the file moves after it; otherwise
      source order is kept.

    Raises:
        CorruptSessionError: an unreadable entry and not ``lenient``.
    """
    kept: list[Draft] = []
    types: dict[str, str] = dict(known or {})
    for d in drafts:
        try:
            # what the store will hold: an entry no store can write (nested past the JSON
            # limits) is refused here, per entry, not at append time for the whole import
            ready = prepare_entry(d.entry)
        except InvalidEntryError as exc:
            unreadable(report, path, d.line, str(exc), _entry_preview(d.entry), lenient=lenient)
            continue
        e = ready.entry
        d = Draft(e, d.line)
        if e.id in types:
            unreadable(
                report,
                path,
                d.line,
                f"duplicate entry id {e.id!r}",
                _entry_preview(e),
                lenient=lenient,
            )
            continue
        types[e.id] = e.type
        kept.append(d)
        if prepared is not None and isinstance(ready, PreparedEntry):
            prepared[e.id] = ready

    # references other than parentId must name a usable entry
    usable: list[Draft] = []
    dropped: set[str] = set()
    for d in kept:
        e = d.entry
        problem = None
        for what, ref in entry_refs(e):
            if what == "parentId":
                continue
            ref_type = types.get(ref)
            if ref_type is None:
                problem = f"{what} {ref!r} names no entry"
            elif e.type == "leaf" and ref_type in BOOKKEEPING_TYPES:
                problem = f"leaf target {ref!r} is a {ref_type} entry"
        if problem is not None:
            unreadable(report, path, d.line, problem, _entry_preview(e), lenient=lenient)
            dropped.add(e.id)
            continue
        usable.append(d)
    for entry_id in dropped:
        types.pop(entry_id, None)

    # parents that cannot be used: the entry becomes a root
    for i, d in enumerate(usable):
        pid = d.entry.parent_id
        if pid is None:
            continue
        reason = None
        if pid not in types:
            reason = "names no entry"
        elif types[pid] == "leaf":
            reason = "is a leaf entry"
        if reason is not None:
            report.dangling_parents.append(DanglingParent(d.line, d.entry.id, pid, reason))
            usable[i] = Draft(with_parent(d.entry, None), d.line)

    ordered = _topological(usable, report, set(known or ()))
    staged: dict[str, str] = dict(known or {})
    for e in ordered:
        try:
            check_append(e, staged.get)
        except SessionTreeError as exc:  # pragma: no cover - finalize's own checks forbid it
            raise CorruptSessionError(f"cannot import entry: {exc}", path=path) from exc
        staged[e.id] = e.type
    return ordered


def _entry_preview(entry: Entry) -> str:
    try:
        return _preview(exact_json.dumps(entry.to_wire()))
    except (TypeError, ValueError):  # nested past what the JSON writers go to
        return _preview(repr(entry)[:1000])


def _topological(drafts: list[Draft], report: ImportReport, done: set[str]) -> list[Entry]:
    """Source order, except that an entry waits until everything it refers to is placed
    (``done``: the ids already placed, stored before the drafts)."""
    position = {id(d): i for i, d in enumerate(drafts)}
    waiting: dict[str, list[Draft]] = {}
    out: list[Entry] = []

    def place(first: Draft) -> None:
        stack = [first]
        while stack:
            d = stack.pop()
            missing = next((ref for _, ref in entry_refs(d.entry) if ref not in done), None)
            if missing is not None:
                waiting.setdefault(missing, []).append(d)
                continue
            out.append(d.entry)
            done.add(d.entry.id)
            stack.extend(reversed(waiting.pop(d.entry.id, [])))

    for d in drafts:
        place(d)
    # whatever still waits is on a parentId cycle: cut it at its first entry in source order
    rounds = 0
    while waiting:
        rounds += 1
        if rounds > len(drafts):  # pragma: no cover - every round places at least one entry
            raise CorruptSessionError("entries refer to each other in a cycle")
        rest = sorted(
            (d for ds in waiting.values() for d in ds),
            key=lambda d: position.get(id(d), len(drafts)),
        )
        waiting.clear()
        head = rest[0]
        assert head.entry.parent_id is not None
        report.dangling_parents.append(
            DanglingParent(head.line, head.entry.id, head.entry.parent_id, "cycle")
        )
        place(Draft(with_parent(head.entry, None), head.line))
        for d in rest[1:]:
            place(d)
    return out


def _metadata(meta: Mapping[str, Any], path: Path) -> SessionMetadata:
    try:
        return SessionMetadata.model_validate(dict(meta))
    except ValueError as exc:
        raise CorruptSessionError(f"session metadata does not validate: {exc}", path=path) from exc


def _source_times(entries: list[Entry]) -> tuple[str, str] | None:
    """The first and newest entry timestamps of the source (by the instant they name; a
    timestamp that is not ISO 8601 is left out), ``None`` when there is none."""
    dated: list[tuple[int, str]] = []
    for e in entries:
        try:
            dated.append((ms_from_iso(e.timestamp), e.timestamp))
        except ValueError:
            continue
    if not dated:
        return None
    return min(dated)[1], max(dated)[1]


def _with_source_times(meta: dict[str, Any], times: tuple[str, str] | None) -> dict[str, Any]:
    """``meta`` with the source's first and newest entry times (ISO 8601) in ``importedFrom``
    (``createdAt``, ``modifiedAt``), so the session's own dates survive the import."""
    if times is None:
        return meta
    imported = meta.get("importedFrom")
    imported = dict(imported) if isinstance(imported, dict) else {}
    imported.update(createdAt=times[0], modifiedAt=times[1])
    return {**meta, "importedFrom": imported}


def _instant(timestamp: str) -> datetime:
    return datetime.fromtimestamp(ms_from_iso(timestamp) / 1000, UTC)


def imported_format(metadata: SessionMetadata) -> str | None:
    """The format a stored session was imported from (its metadata's ``importedFrom.format``),
    ``None`` for a session that was not imported."""
    imported = (metadata.model_extra or {}).get("importedFrom")
    fmt = imported.get("format") if isinstance(imported, dict) else None
    return fmt if isinstance(fmt, str) else None


async def store(
    repo: SessionRepo,
    converted: Converted,
    report: ImportReport,
    path: Path,
    *,
    lenient: bool,
    session_id: str | None = None,
    position: SyncPosition | None = None,
) -> Session:
    """Finalize the drafts and store them: a new session holding every entry, in one step,
    or, when the session is already stored, only the entries it lacks, in one append.

    The session id is ``session_id`` when given, else ``converted.session_id`` when it is a
    valid id, else a new UUID v7. A new session appears whole or not at all
    (:meth:`SessionRepo.create` with ``entries``). A session already in ``repo`` that was
    imported from the same format is extended (:func:`extend`): the result is what a fresh
    import of the whole file gives — the same entries, ids and leaf — never a second copy.
    ``position`` (a sync's record of how far the file was read) is written in the same
    append as the entries (:func:`~sessiontree.interop.positions.position_entry`).

    Raises:
        CorruptSessionError: an unreadable entry and not ``lenient``.
        AlreadyImportedError: (a :class:`DuplicateEntryError`) the session is already stored
            and the file adds nothing to it, or it was imported from another format
            (``session_id`` set, ``entry_id`` ``None``); nothing was written.
        InvalidEntryError: ``session_id`` is not a valid session id.
    """
    ready: dict[str, PreparedEntry] = {}
    entries = finalize(converted.drafts, report, path, lenient=lenient, prepared=ready)
    leaf = leaf_of_log(entries)
    want = converted.leaf_id
    if want is not None and want != leaf and any(e.id == want for e in entries):
        # dated like the newest record and named after what it does, so a re-import matches
        entries.append(_leaf_move(entries, leaf, want))
        report.warnings.append(
            f"the last record in the file is not the newest message of the main conversation; "
            f"a leaf entry moves the leaf to {want!r}"
        )
        leaf = want
    times = _source_times(entries)
    metadata = _metadata(_with_source_times(converted.metadata, times), path)

    wanted = session_id
    if wanted is None and converted.session_id:
        if is_session_id(converted.session_id):
            wanted = converted.session_id
        else:
            # the same file gives the same id, so importing it again is recognised
            digest = hashlib.sha256(converted.session_id.encode("utf-8", "surrogatepass"))
            wanted = f"import-{digest.hexdigest()[:32]}"
            report.warnings.append(
                f"the file's session id {converted.session_id!r} is not a safe id "
                f"([A-Za-z0-9_-]{{1,128}}); the session's id is {wanted} (made from it)"
            )
    report.leaf_id = leaf
    link = pointer_of(converted.metadata)
    if link is not None and session_id is None and wanted is not None:
        linked = await _continue_handoff(
            repo, link[0], wanted, entries, leaf, report, path, metadata, position
        )
        if linked is not None:
            return linked
    for _ in range(_RACE_RETRIES):
        try:
            # one step: the session appears with every entry or not at all, so an import cut
            # short (kill -9) leaves nothing that would refuse the next attempt
            tail = [] if position is None else [position_entry(position, leaf)]
            session = await repo.create(
                id=wanted,
                metadata=metadata,
                entries=[*_as_prepared(entries, ready), *tail],
                created_at=None if times is None else _instant(times[0]),
            )
        except SessionExistsError:
            assert wanted is not None  # a new UUID v7 is never taken
            try:
                return await extend(repo, wanted, entries, leaf, report, path, position, times)
            except SessionNotFoundError:
                continue  # deleted since: create it again
        if times is not None:
            # the session lists by its own dates: creating it set modified_at to now
            await session.storage.set_modified_at(_instant(times[1]))
        report.session_id = session.id
        report.entries_imported = len(entries)
        return session
    raise StorageError(f"{path}: session {wanted!r} kept appearing and disappearing; not imported")


_RACE_RETRIES = 8
"""How often an import starts over when another writer changed the session under it."""


def _leaf_move(entries: list[Entry], leaf: str | None, want: str) -> LeafEntry:
    """The ``leaf`` entry an import adds to move the leaf from ``leaf`` to ``want``: its id is
    made from the move and its time is the newest record's, so every import makes the same one."""
    last_ts = max(e.timestamp for e in entries)
    leaf_id = IdMaker(f"{leaf}>{want}".encode()).make(ms_or(last_ts, 0), "leaf")
    return LeafEntry(id=leaf_id, parent_id=leaf, target_id=want, timestamp=last_ts)


async def extend(
    repo: SessionRepo,
    session_id: str,
    entries: list[Entry],
    leaf: str | None,
    report: ImportReport,
    path: Path,
    position: SyncPosition | None = None,
    times: tuple[str, str] | None = None,
    *,
    linked: bool = False,
) -> Session:
    """Append to a stored session the finalized ``entries`` of its file that it lacks.

    Entries are matched by id (the record's own id, or the one :class:`IdMaker` makes from
    the file's first record and the record's line), so a file that grew adds only its new
    records, and a file rewritten in place adds only the records it did not hold before.
    Stored entries the file no longer holds stay; stored entries the file holds differently
    stay as stored (listed in ``report.entries_changed``). When the leaf the stored log
    then ends on is not ``leaf`` (what a fresh import gives), a ``leaf`` entry moves it there.
    Everything (and ``position``) is one :meth:`append_entries` call: all or nothing. When
    another writer appends the same entries first, the append is refused as a duplicate and
    the comparison starts over, so nothing is ever stored twice.

    ``linked``: the session is the one the file was handed off from (:mod:`~sessiontree.interop.links`,
    ``entries`` then only what the agent added): it is extended whatever it was imported
    from, and its leaf is moved only by new entries (never back onto the file's leaf).

    Raises:
        AlreadyImportedError: the file adds nothing, or the session was imported from
            another format (not ``linked``); nothing was written.
        SessionNotFoundError: the session is not in ``repo`` (deleted meanwhile).
        DuplicateEntryError, EntryNotFoundError, InvalidEntryError: a new entry is refused
            by the store; nothing was written.
    """
    fmt = report.format
    for _ in range(_RACE_RETRIES):
        session = await repo.open(session_id)
        stored_from = imported_format(session.storage.metadata)
        if stored_from != fmt and not linked:
            await session.close()
            report.entries_imported = len(entries)
            where = f"imported from {stored_from}" if stored_from else "not an import"
            raise AlreadyImportedError(
                f"{path}: session {session_id!r} is already in the repository ({where}); "
                "pass session_id= to import a copy",
                session_id=session_id,
                report=report,
            )
        stored = await session.storage.get_entries()
        by_id = {e.id: e for e in stored}
        new = [e for e in entries if e.id not in by_id]
        report.entries_changed = [
            e.id for e in entries if e.id in by_id and not _same_entry(by_id[e.id], e)
        ]
        batch = list(new)
        stored_leaf = await session.get_leaf_id()
        ends_on = leaf_of_log([*stored, *new]) if new else stored_leaf
        if (
            ends_on != leaf
            and leaf is not None
            and (leaf in by_id or any(e.id == leaf for e in new))
            and (new or not linked)
        ):
            move = _leaf_move(entries, ends_on, leaf)
            if move.id not in by_id:
                batch.append(move)
            ends_on = leaf
        if position is not None:
            mark = position_entry(position, ends_on)
            if mark.id not in by_id:
                batch.append(mark)
        if not new:
            if batch:  # only bookkeeping: the leaf put back, or how far the file was read
                try:
                    await session.storage.append_entries(batch)
                except DuplicateEntryError:
                    await session.close()
                    continue
            await session.close()
            report.session_id = session_id
            report.entries_imported = 0
            report.up_to_date = True
            raise AlreadyImportedError(
                f"{path}: session {session_id!r} is already in the repository and the file "
                "holds nothing it lacks",
                session_id=session_id,
                report=report,
            )
        try:
            await session.storage.append_entries(batch)
        except DuplicateEntryError:
            # another import appended some of them first: compare again
            await session.close()
            continue
        if times is not None:
            await session.storage.set_modified_at(_instant(times[1]))
        report.session_id = session_id
        report.entries_imported = sum(1 for e in batch if not _is_mark(e))
        report.extended = True
        report.leaf_id = ends_on
        return session
    raise StorageError(f"{path}: session {session_id!r} kept changing under the import; try again")


async def extend_from_tail(
    repo: SessionRepo,
    session_id: str,
    converted: Converted,
    report: ImportReport,
    path: Path,
    position: SyncPosition,
) -> Session | None:
    """Append to a stored session the entries of the lines its file gained since the sync
    that stored it (``converted``: those lines only, :mod:`~sessiontree.interop.resume`), and
    ``position``, in one append; what :func:`extend` stores for the whole file, without
    reading the session's entries: only those the new lines refer to are looked up.

    The leaf after the append is where a fresh import of the whole file puts it: the stored
    leaf (the file's, as of the last sync) moved by the new entries. Returns ``None``, having
    written nothing, when the tail alone cannot say what to store: the session is gone or
    was imported from another format, the converter sets the leaf itself
    (:attr:`Converted.leaf_id`), the file was handed off from a stored session (its lines
    are matched to that session's entries, :mod:`~sessiontree.interop.links`), or the store
    refuses an entry as a duplicate (another sync
    appended it first, or the file repeats an id it held before). The caller then reads the
    whole file (:func:`store`).

    Raises:
        AlreadyImportedError: the new lines hold no entry (a position was stored).
        CorruptSessionError: an unreadable new line (names the file and the line).
        StorageError: the store cannot be read or written.
    """
    if converted.leaf_id is not None or pointer_of(converted.metadata) is not None:
        return None  # a hand-off's lines map onto its source's entries (_continue_handoff)
    try:
        session = await repo.open(session_id)
    except SessionNotFoundError:
        return None
    done = False
    try:
        if imported_format(session.storage.metadata) != report.format:
            return None
        own = {d.entry.id for d in converted.drafts}
        refs = {ref for d in converted.drafts for _, ref in entry_refs(d.entry)} - own
        known: dict[str, str] = {}
        for ref in sorted(refs):
            found = await session.storage.get_entry(ref)
            if found is not None:
                known[ref] = found.type
        entries = finalize(converted.drafts, report, path, lenient=False, known=known)
        fold = LogFold(await session.get_leaf_id(), first_seen=True)
        for e in entries:
            fold.add_entry(e)
        batch: list[Entry] = list(entries)
        mark = position_entry(position, fold.leaf_id)
        if entries or await session.storage.get_entry(mark.id) is None:
            batch.append(mark)
        if batch:
            try:
                await session.storage.append_entries(batch)
            except DuplicateEntryError:
                return None
        report.session_id = session_id
        report.leaf_id = fold.leaf_id
        if not entries:
            report.up_to_date = True
            raise AlreadyImportedError(
                f"{path}: session {session_id!r} is already in the repository and the lines "
                "the file gained hold nothing it lacks",
                session_id=session_id,
                report=report,
            )
        times = _source_times(entries)
        if times is not None:
            await session.storage.set_modified_at(_instant(times[1]))
        report.entries_imported = len(entries)
        report.extended = True
        done = True
    finally:
        if not done:
            await session.close()
    return session


async def _continue_handoff(
    repo: SessionRepo,
    source_id: str,
    wanted: str,
    entries: list[Entry],
    leaf: str | None,
    report: ImportReport,
    path: Path,
    metadata: SessionMetadata,
    position: SyncPosition | None,
) -> Session | None:
    """Store a handed-off file's new turns with the session it came from (docs/interop.md,
    "Hand a session to another agent"); ``None`` when the file is no hand-off of a session in
    ``repo`` (the source is gone, or holds no :class:`~sessiontree.interop.links.HandoffRecord`
    of this file's session ``wanted``): it is then imported as any other file.

    What the agent added (:func:`~sessiontree.interop.links.added_entries`) goes to, in this
    order: the fork an earlier import made (session ``wanted``); the source session, when an
    earlier import continued it there or its leaf is still the hand-off entry; else a new fork
    of the source at the hand-off entry, named ``wanted``, linked to the source
    (``parentSessionId``, ``forkedFromEntryId``) and imported from the file (``importedFrom``),
    created in one step with the turns and ``position``.

    Raises:
        AlreadyImportedError: the file adds nothing; nothing was written but a position.
        What :func:`extend` and :meth:`SessionRepo.create` raise.
    """
    try:
        source = await repo.open(source_id)
    except SessionNotFoundError:
        return None
    try:
        stored = await source.storage.get_entries()
        found = next(
            (
                (n, r)
                for n, e in enumerate(stored)
                if (r := record_of(e)) is not None
                and r.session_id == wanted
                and r.agent == report.format
            ),
            None,
        )
        source_leaf = await source.get_leaf_id()
    finally:
        await source.close()
    if found is None:
        return None
    at, record = found
    known = {e.id for e in stored}
    added = added_entries(entries, record, known)
    end = record.ids.get(leaf, leaf) if leaf is not None else None
    report.warnings.append(
        f"handed off from session {source_id!r} at entry {record.entry_id!r}: only what the "
        "agent added is stored"
    )
    if wanted != source_id:
        try:
            return await extend(repo, wanted, added, end, report, path, position)
        except SessionNotFoundError:
            pass  # no fork yet
    in_file = {e.id for e in entries}
    continued = any(e.id in in_file and e.id not in record.ids for e in stored[at + 1 :])
    if continued or source_leaf == record.entry_id:
        return await extend(repo, source_id, added, end, report, path, position, linked=True)
    if not added:
        report.session_id, report.entries_imported, report.up_to_date = source_id, 0, True
        raise AlreadyImportedError(
            f"{path}: handed off from session {source_id!r}, which has moved on; the agent "
            "added nothing yet to fork it with",
            session_id=source_id,
            report=report,
        )
    source = await repo.open(source_id)
    try:
        fork_meta, copied = await fork_plan(source.storage, record.entry_id, "at")
    finally:
        await source.close()
    extra = {k: v for k, v in (metadata.model_extra or {}).items() if k in _FILE_KEYS}
    fork_metadata = SessionMetadata.model_validate({**fork_meta.to_wire(), **extra})
    batch = [*copied, *added]
    fork_leaf = leaf_of_log(batch)
    tail = [] if position is None else [position_entry(position, fork_leaf)]
    try:
        session = await repo.create(id=wanted, metadata=fork_metadata, entries=[*batch, *tail])
    except SessionExistsError:  # another import made the fork first
        return await extend(repo, wanted, added, end, report, path, position)
    report.session_id = session.id
    report.entries_imported = len(added)
    report.leaf_id = fork_leaf
    return session


_FILE_KEYS = ("importedFrom", POINTER_KEY)
"""The metadata a fork continuing a handed-off file takes from the file (the rest is the
source session's)."""


def _as_prepared(
    entries: list[Entry], ready: Mapping[str, PreparedEntry]
) -> list[Entry | PreparedEntry]:
    """``entries``, each as :func:`finalize` prepared it when it is that very entry (one
    moved to another parent since is prepared again by the store)."""
    out: list[Entry | PreparedEntry] = []
    for e in entries:
        p = ready.get(e.id)
        out.append(p if p is not None and p.entry is e else e)
    return out


def _is_mark(entry: Entry) -> bool:
    return entry.type == "leaf" and POSITION_KEY in (entry.model_extra or {})


def _same_entry(a: Entry, b: Entry) -> bool:
    """Whether two entries with one id are the same record (as stored: wire form)."""
    return a.to_wire() == b.to_wire()
