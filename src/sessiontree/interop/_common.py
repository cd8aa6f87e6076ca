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
    InvalidEntryError,
    SessionExistsError,
    SessionTreeError,
)
from sessiontree.ids import is_session_id, iso_or, ms_from_iso, ms_or
from sessiontree.interop.report import CustomLine, DanglingParent, ImportReport, UnreadableLine
from sessiontree.metadata import SessionMetadata
from sessiontree.repos.base import SessionRepo
from sessiontree.session import Session
from sessiontree.stored import prepare_entry
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


class IdMaker:
    """Entry ids for records the source gives none: UUID v7 strings made from the record.

    The 48-bit time field is the record's own timestamp (Unix ms) and the random bits come from
    a SHA-256 of the file's bytes, the line and the position within the line, so importing the
    same file again gives the same ids (on every backend) and the ids still sort by time.
    """

    def __init__(self, data: bytes) -> None:
        self._seed = hashlib.sha256(data).digest()
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
    drafts: list[Draft], report: ImportReport, path: Path, *, lenient: bool
) -> list[Entry]:
    """Make drafts appendable in one batch; report every change (docs/interop.md).

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
    types: dict[str, str] = {}
    for d in drafts:
        try:
            # what the store will hold: an entry no store can write (nested past the JSON
            # limits) is refused here, per entry, not at append time for the whole import
            e = prepare_entry(d.entry).entry
        except InvalidEntryError as exc:
            unreadable(report, path, d.line, str(exc), _entry_preview(d.entry), lenient=lenient)
            continue
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

    ordered = _topological(usable, report)
    staged: dict[str, str] = {}
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


def _topological(drafts: list[Draft], report: ImportReport) -> list[Entry]:
    """Source order, except that an entry waits until everything it refers to is placed."""
    position = {id(d): i for i, d in enumerate(drafts)}
    done: set[str] = set()
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


async def store(
    repo: SessionRepo,
    converted: Converted,
    report: ImportReport,
    path: Path,
    *,
    lenient: bool,
    session_id: str | None = None,
) -> Session:
    """Finalize the drafts and create the session holding every entry, in one step.

    The session id is ``session_id`` when given, else ``converted.session_id`` when it is a
    valid id, else a new UUID v7. An id already in ``repo`` is refused: importing the same
    file twice never makes a second copy or merges two histories. The session appears whole
    or not at all (:meth:`SessionRepo.create` with ``entries``).

    Raises:
        CorruptSessionError: an unreadable entry and not ``lenient``.
        DuplicateEntryError: the session id is already in ``repo`` (``session_id`` set,
            ``entry_id`` ``None``); nothing was created.
        InvalidEntryError: ``session_id`` is not a valid session id.
    """
    entries = finalize(converted.drafts, report, path, lenient=lenient)
    leaf = leaf_of_log(entries)
    want = converted.leaf_id
    if want is not None and want != leaf and any(e.id == want for e in entries):
        # dated like the newest record and named after what it does, so a re-import matches
        last_ts = max(e.timestamp for e in entries)
        leaf_id = IdMaker(f"{leaf}>{want}".encode()).make(ms_or(last_ts, 0), "leaf")
        entries.append(LeafEntry(id=leaf_id, parent_id=leaf, target_id=want, timestamp=last_ts))
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
    try:
        # one step: the session appears with every entry or not at all, so an import cut
        # short (kill -9) leaves nothing that would refuse the next attempt
        session = await repo.create(
            id=wanted,
            metadata=metadata,
            entries=entries,
            created_at=None if times is None else _instant(times[0]),
        )
    except SessionExistsError as exc:
        report.entries_imported = len(entries)
        raise AlreadyImportedError(
            f"{path}: session {wanted!r} is already in the repository (imported before?); "
            "pass session_id= to import another copy",
            session_id=wanted,
            report=report,
        ) from exc
    if times is not None:
        # the session lists by its own dates: creating it set modified_at to now
        await session.storage.set_modified_at(_instant(times[1]))
    report.session_id = session.id
    report.entries_imported = len(entries)
    report.leaf_id = leaf
    return session
