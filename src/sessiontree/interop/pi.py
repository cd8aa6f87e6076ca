"""pi coding agent session files: import versions 1-3, export version 3 (docs/interop.md).

A pi file is JSONL: a ``{"type": "session", ...}`` header line, then one entry per line.

* **Version 1** (no ``version`` key): a linear log without ids. Ids are assigned in file
  order (UUID v7 strings made from each entry's timestamp and its line, so a re-import gives
  the same ids), each entry's parent is the previous entry, and a compaction's
  ``firstKeptEntryIndex`` — an index into the file's parsed lines where the header is 0 —
  becomes ``firstKeptEntryId`` (as pi's own ``migrateV1ToV2`` does).
* **Version 2**: the tree (``id``/``parentId``), imported as it is.
* **Version 3**: version 2 with the message role ``hookMessage`` renamed ``custom``; files of
  versions 1 and 2 get the rename on import.

The header maps to metadata as the JSONL backend maps it
(:func:`sessiontree.backends.jsonl.format.header_metadata`): ``cwd`` ↔ ``cwd``, ``parentSession``
↔ ``parentSessionId``, the ``metadata`` object (what sessiontree writes) as it is, and every
other non-empty header key (``branchedFrom``, ``provider``, ``modelId``, ``thinkingLevel``, ...)
kept as a metadata key.
``metadata.importedFrom`` records format, version, source session id, header timestamp and
path. Entry types sessiontree does not know become ``custom`` entries (``pi:<type>``) with the
same id and parent, so nothing hangs off a missing node.

Export writes version 3 — the header exactly as the JSONL backend writes it, then every entry
in append order — to a new file that is fsynced and renamed into place, so a reader never sees
half a file, and :class:`~sessiontree.backends.jsonl.JSONLStorage` can open the result in place.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sessiontree import _json as exact_json
from sessiontree.backends.jsonl.format import build_header, header_metadata
from sessiontree.entries import ENTRY_TYPES, Entry, dump_entry, parse_entry
from sessiontree.errors import CorruptSessionError, InvalidEntryError, StorageError
from sessiontree.ids import ms_or, new_id, now_iso
from sessiontree.interop._common import (
    Converted,
    Draft,
    IdMaker,
    Progress,
    custom_draft,
    finalize,
    unreadable,
)
from sessiontree.interop.detect import strip_bom
from sessiontree.interop.jsonl_lines import read_jsonl
from sessiontree.interop.report import ImportReport
from sessiontree.metadata import SessionMetadata
from sessiontree.session import Session
from sessiontree.storage.private_files import file_kind
from sessiontree.tree import leaf_of_log

__all__ = [
    "PI_VERSION",
    "convert_pi",
    "convert_pi_tail",
    "export_pi_session",
    "migrate_pi_file",
    "pi_file_bytes",
    "write_atomic",
]

PI_VERSION = 3
"""The pi session format version that :func:`export_pi_session` writes."""


def _metadata_from_header(header: dict[str, Any], version: int, path: Path) -> dict[str, Any]:
    meta = header_metadata(header)  # the JSONL backend's mapping
    imported: dict[str, Any] = {"format": "pi", "version": version, "path": str(path)}
    if isinstance(header.get("id"), str):
        imported["sessionId"] = header["id"]
    if isinstance(header.get("timestamp"), str):
        imported["timestamp"] = header["timestamp"]
    meta["importedFrom"] = imported
    return meta


def convert_pi(
    data: bytes,
    path: Path,
    report: ImportReport,
    *,
    lenient: bool,
    progress: Progress | None = None,
) -> Converted:
    """Parse a pi session file (any version) into drafts and metadata. Pure, no I/O.

    Raises:
        CorruptSessionError: no session header on the first line; an unreadable line or an
            invalid entry and not ``lenient`` (names the file and the line).
    """
    rows = list(read_jsonl(data, path, report, lenient=lenient, progress=progress))
    if not rows or rows[0][1].get("type") != "session":
        line = rows[0][0] if rows else 1
        raise CorruptSessionError(
            "not a pi session file: the first line is not a session header",
            path=path,
            line_number=line,
        )
    out, version = _from_header(rows[0][1], path, report)
    _add_drafts(out, rows[1:], version, IdMaker(data), path, report, lenient=lenient)
    return out


def convert_pi_tail(
    head: bytes, tail: bytes, first_line: int, path: Path, report: ImportReport, *, lenient: bool
) -> Converted | None:
    """The drafts of the lines a pi file gained: ``tail`` is the file from line
    ``first_line`` on, ``head`` its first line (the session header). The drafts, ids and line
    numbers are those :func:`convert_pi` gives these lines in the whole file (a version 2 or 3
    line depends on no other line). ``None`` for a version 1 file (its entries are chained
    by position: read it whole) or a ``head`` that is no session header. Pure, no I/O.

    Raises:
        CorruptSessionError: an unreadable line and not ``lenient`` (names the file and the
            line).
    """
    try:
        header = exact_json.loads(strip_bom(head))
    except exact_json.JSONDecodeError:
        return None
    if not isinstance(header, dict) or header.get("type") != "session":
        return None
    out, version = _from_header(header, path, report)
    if version < 2:
        return None
    rows = list(read_jsonl(tail, path, report, lenient=lenient, first_line=first_line))
    _add_drafts(out, rows, version, IdMaker(head), path, report, lenient=lenient)
    return out


def _from_header(header: dict[str, Any], path: Path, report: ImportReport) -> tuple[Converted, int]:
    """The session's metadata and id from its header line, and the version to read it as."""
    raw_version = header.get("version", 1)
    version = (
        raw_version if isinstance(raw_version, int) and not isinstance(raw_version, bool) else 1
    )
    if version != raw_version:
        report.warnings.append(f"header version {raw_version!r} is not a number; read as version 1")
    if version > PI_VERSION:
        report.warnings.append(
            f"pi version {version} is newer than {PI_VERSION}; read as version 3"
        )
    report.source_version = version
    if isinstance(header.get("id"), str):
        report.source_session_id = header["id"]
    out = Converted(metadata=_metadata_from_header(header, version, path))
    if isinstance(header.get("id"), str):
        out.session_id = header["id"]
    return out, version


def _add_drafts(
    out: Converted,
    rows: list[tuple[int, dict[str, Any]]],
    version: int,
    ids: IdMaker,
    path: Path,
    report: ImportReport,
    *,
    lenient: bool,
) -> None:
    """Append to ``out`` the draft of every entry line of ``rows`` (``(line, object)``)."""
    index_ids: dict[int, str] = {}  # v1: position among parsed lines (header = 0) -> entry id
    prev_id: str | None = None
    for position, (line, obj) in enumerate(rows, 1):
        kind = obj.get("type")  # a damaged line can hold any JSON value here
        etype = kind if isinstance(kind, str) else f"<{type(kind).__name__}>"
        if version < 2:
            obj = dict(obj)
            obj["id"] = ids.make(ms_or(obj.get("timestamp"), 0), line)
            obj["parentId"] = prev_id
            if etype == "compaction" and "firstKeptEntryIndex" in obj:
                index = obj.pop("firstKeptEntryIndex")
                target = index_ids.get(index) if isinstance(index, int) else None
                if target is not None:
                    obj["firstKeptEntryId"] = target
                else:
                    report.warnings.append(
                        f"line {line}: firstKeptEntryIndex {index!r} names no earlier entry; "
                        "the compaction keeps nothing older than itself"
                    )
        elif "id" not in obj:
            report.warnings.append(f"line {line}: entry without an id; a new id was given")
            obj = {**obj, "id": ids.make(ms_or(obj.get("timestamp"), 0), line)}
        if version < 3:
            obj = _rename_hook_message(obj)
        timestamp = obj.get("timestamp")
        if etype not in ENTRY_TYPES:
            entry_id = obj.get("id")
            if not isinstance(entry_id, str) or not entry_id:
                entry_id = ids.make(ms_or(timestamp, 0), line)
            parent = obj.get("parentId") if isinstance(obj.get("parentId"), str) else None
            draft = custom_draft(
                report,
                f"pi:{etype}",
                obj,
                line=line,
                entry_id=entry_id,
                parent_id=parent,
                timestamp=timestamp if isinstance(timestamp, str) else None,
            )
        else:
            try:
                draft = Draft(parse_entry(obj), line)
            except InvalidEntryError as exc:
                unreadable(report, path, line, str(exc), _raw_of(obj), lenient=lenient)
                continue
        out.drafts.append(draft)
        index_ids[position] = draft.entry.id
        prev_id = draft.entry.id


def _raw_of(obj: Any) -> bytes:
    """The JSON of a refused record for the report's preview; its repr if no JSON writer can
    (a line nested past orjson's limit must not crash the import, ``--lenient`` or not)."""
    try:
        return exact_json.dumps(obj)
    except TypeError:
        return repr(obj)[:1000].encode()


def _rename_hook_message(obj: dict[str, Any]) -> dict[str, Any]:
    msg = obj.get("message")
    if obj.get("type") == "message" and isinstance(msg, dict) and msg.get("role") == "hookMessage":
        obj = dict(obj)
        obj["message"] = {**msg, "role": "custom"}
    return obj


async def export_pi_session(session: Session, path: str | Path, *, overwrite: bool = False) -> int:
    """Write a session as a pi version 3 file; returns the number of entries written.

    Every entry is written in append order as its camelCase wire dict, so importing the file
    again gives the same entries. The file is written beside ``path`` under a temporary name,
    fsynced and renamed into place (mode 0600), so a crash never leaves half a file.
    Reads every entry of the session.

    Args:
        session: the session to export.
        path: the file to write.
        overwrite: replace an existing file; without it an existing ``path`` is refused.

    Raises:
        StorageError: ``path`` exists and ``overwrite`` is false; ``path`` is anything but a
            regular file (a symlink, FIFO, device node or directory is never replaced, with
            ``overwrite`` too); or the file cannot be written (the ``OSError`` is the
            ``__cause__``).
    """
    target = Path(path)
    payload, count = await pi_file_bytes(session)
    await asyncio.to_thread(write_atomic, target, payload, overwrite)
    return count


async def pi_file_bytes(
    session: Session,
    *,
    session_id: str | None = None,
    timestamp: str | None = None,
    cwd: str | None = None,
    entries: Sequence[Entry] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> tuple[bytes, int]:
    """The pi version 3 file of a session (what :func:`export_pi_session` writes) and the
    number of entries in it. Reads every entry of the session.

    ``session_id``, ``timestamp`` (ISO 8601) and ``cwd`` replace the header's (a session
    handed to pi gets a new id); by default they are the session's own. ``entries`` are
    written instead of the session's own (in that order). ``extra`` keys are added to (or
    replace those of) the header's ``metadata`` object.
    """
    if entries is None:
        entries = await session.get_entries()
    metadata = await session.get_metadata()
    if cwd is not None:
        metadata = metadata.model_copy(update={"cwd": cwd})
    if extra:
        metadata = SessionMetadata.model_validate({**metadata.to_wire(), **extra})
    imported = (metadata.model_extra or {}).get("importedFrom")
    if timestamp is None and isinstance(imported, dict) and imported.get("format") == "pi":
        ts = imported.get("timestamp")
        timestamp = ts if isinstance(ts, str) else None
    if timestamp is None:
        timestamp = entries[0].timestamp if entries else now_iso()
    lines = [build_header(session_id or session.id, metadata, timestamp)]
    lines.extend(exact_json.dumps(dump_entry(e)) + b"\n" for e in entries)
    return b"".join(lines), len(entries)


async def migrate_pi_file(path: str | Path, *, lenient: bool = False) -> ImportReport:
    """Rewrite a pi version 1 or 2 file as version 3, in place and atomically (docs/interop.md).

    The file is converted exactly as :func:`sessiontree.interop.import_session` would import it (ids
    for v1, ``firstKeptEntryIndex`` → ``firstKeptEntryId``, ``hookMessage`` → ``custom``), the
    new content is written to a temporary file beside it, fsynced and renamed over it, so the
    file is at every moment either the old one or the whole new one. The session id, the
    header timestamp and the file mode are kept. A version 3 file is left untouched.
    Reads the whole file.

    Returns:
        The report (``session_id`` = the file's id; ``warnings`` says when nothing was done).

    Raises:
        CorruptSessionError: not a pi session file, a header without an id, or (without
            ``lenient``) an unreadable line — the file is left as it was.
        StorageError: the file cannot be read or replaced.
    """
    target = Path(path)
    try:
        data, mode = await asyncio.to_thread(_read_with_mode, target)
    except OSError as exc:
        raise StorageError(f"{target}: cannot read the file: {exc}") from exc
    report = ImportReport(source_path=target, format="pi")
    converted = convert_pi(data, target, report, lenient=lenient)
    session_id = report.source_session_id
    if not session_id:
        raise CorruptSessionError("the session header has no id", path=target, line_number=1)
    report.session_id = session_id
    if report.source_version is not None and report.source_version >= PI_VERSION:
        report.warnings.append(f"already version {report.source_version}; the file was not changed")
        return report
    entries = finalize(converted.drafts, report, target, lenient=lenient)
    meta = dict(converted.metadata)
    imported = meta.pop("importedFrom", {})
    timestamp = imported.get("timestamp") if isinstance(imported, dict) else None
    if not isinstance(timestamp, str):
        timestamp = entries[0].timestamp if entries else now_iso()
    try:
        metadata = SessionMetadata.model_validate(meta)
    except ValueError as exc:
        raise CorruptSessionError(f"header metadata does not validate: {exc}", path=target) from exc
    lines = [build_header(session_id, metadata, timestamp)]
    lines.extend(exact_json.dumps(dump_entry(e)) + b"\n" for e in entries)
    await asyncio.to_thread(write_atomic, target, b"".join(lines), True, mode)
    report.entries_imported = len(entries)
    report.leaf_id = leaf_of_log(entries)
    return report


def _read_with_mode(path: Path) -> tuple[bytes, int]:
    with path.open("rb") as f:
        return f.read(), stat.S_IMODE(os.fstat(f.fileno()).st_mode)


def write_atomic(target: Path, payload: bytes, overwrite: bool, mode: int = 0o600) -> None:
    """Write ``payload`` to ``target`` under a temporary name, fsync it and rename it into place
    (and fsync the directory): a crash leaves the old file or the whole new one.

    Raises:
        StorageError: ``target`` is not a regular file, exists and not ``overwrite``, or
            cannot be written.
    """
    try:
        st = os.lstat(target)  # the link itself: a symlink is never followed or replaced
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise StorageError(f"{target}: cannot check the path: {exc}") from exc
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise StorageError(
            f"{target}: is {file_kind(st.st_mode)}, not a regular file; refusing to replace it"
        )
    if st is not None and not overwrite:
        raise StorageError(f"{target}: file exists (pass overwrite=True to replace it)")
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{new_id()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            os.fchmod(fd, mode)
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StorageError(f"{target}: cannot write the file: {exc}") from exc


def _fsync_dir(directory: Path) -> None:
    """Make a rename durable (POSIX); a platform without directory fds skips it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
