"""Bring the sessions agents wrote into a store, and keep them up to date (docs/interop.md, "sync").

:func:`sync_sources` walks each :class:`~sessiontree.interop.locations.Source`, and for each
session file:

* a file whose ``os.stat`` (size, modification time, inode, device) is what the stored sync
  position of its session says is **unchanged**: nothing is read. The positions come from
  the repository's index when it keeps one
  (:class:`~sessiontree.storage.sync_index.SyncPositionIndex`: every backend does), so such
  a re-sync opens no session; a session the index does not hold is opened to find it;
* a file not in the store yet is imported (**new**); a file that grew by appends is read on
  from its stored position when its format allows (:mod:`~sessiontree.interop.resume`:
  only the bytes it gained, :attr:`SourceRow.read_from`); any other file that grew or was
  rewritten is imported again, which appends only the entries its session lacks
  (**updated**, see :func:`sessiontree.interop._common.extend`); a file read again that adds nothing is
  **unchanged** (its new position is stored, so the next sync skips it by ``stat``);
* a file that cannot be read or converted is **failed**, with the error; the others go on;
* a session imported from a file under a source that no longer exists stays in the store
  and is reported **gone**.

The position is written in the same append as the entries (:mod:`~sessiontree.interop.positions`),
so a sync killed at any moment, then run again, stores what one clean sync stores; two syncs
at once store nothing twice (the second one's append is refused as a duplicate and compared
again).

A JSONL file that ends in a line the agent is still writing (not yet valid JSON) is read up
to the line before; the rest is read by the next sync.

A file modified less than ``quiet_s`` seconds ago may be in the middle of a turn: only its
settled part is stored (:func:`~sessiontree.interop.settling.settled`: the records no
later line can change), with a position of that size, so the held-back lines are read again
by the next sync; once the file has been left alone for ``quiet_s`` it is stored whole. So
syncing a file at any moment of its writing, then once finished, stores what one import of
the finished file stores.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import orjson

from sessiontree.errors import (
    AlreadyImportedError,
    SessionTreeError,
    StorageError,
    UnknownFormatError,
)
from sessiontree.interop import database_sessions, import_data
from sessiontree.interop._common import extend_from_tail
from sessiontree.interop.detect import SQLITE_HEADER, Format, detect_format_bytes
from sessiontree.interop.locations import Source, session_files
from sessiontree.interop.positions import SyncPosition, position_of
from sessiontree.interop.report import ImportReport
from sessiontree.interop.resume import TAIL_CONVERTERS, read_tail
from sessiontree.interop.settling import settled
from sessiontree.repos.base import SessionRepo
from sessiontree.storage.base import EntryCursor
from sessiontree.storage.sync_index import SyncPositionIndex

__all__ = ["SourceRow", "Status", "SyncReport", "sync_sources"]

Status = Literal["new", "updated", "unchanged", "gone", "failed"]
"""What a sync did with one source file (or one session of a database file)."""

DEFAULT_QUIET_S = 10.0
"""How long a file must be left alone before its open turn is stored (seconds)."""

_MARKS_READ = 64
"""How many of a session's newest ``leaf`` entries are searched for its sync position."""


@dataclass
class SourceRow:
    """One source file (one session of a database holding several) in a :class:`SyncReport`."""

    path: Path
    """The file, an absolute path."""
    status: Status
    """``new``, ``updated``, ``unchanged``, ``gone`` or ``failed``."""
    session_id: str | None = None
    """The session it is stored as; ``None`` when it failed before one was known."""
    format: str | None = None
    """The format it was read as; ``None`` when not read (unchanged by ``stat``, gone, failed)."""
    entries_added: int = 0
    """Entries appended to the store for it (sync positions not counted)."""
    error: str | None = None
    """For ``failed``: what went wrong, naming the file (and the line when there is one)."""
    source_session: str | None = None
    """For a database holding several sessions: the one this row is about."""
    held: int = 0
    """Bytes at the end of the file not stored yet: the turn the agent is still writing,
    read again by the next sync (stored whole once the file is left alone)."""
    read_from: int = 0
    """The byte offset the file was read from: its stored position's size when only what
    it gained was read (:mod:`~sessiontree.interop.resume`), else 0 (read whole, or not
    read)."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``path`` as a string)."""
        return {
            "path": str(self.path),
            "status": self.status,
            "session_id": self.session_id,
            "format": self.format,
            "entries_added": self.entries_added,
            "error": self.error,
            "source_session": self.source_session,
            "held": self.held,
            "read_from": self.read_from,
        }


@dataclass
class SyncReport:
    """What :func:`sync_sources` did: one row per source file (per session of a database)."""

    rows: list[SourceRow] = field(default_factory=list)
    """Every source file looked at, in the order they were synced."""

    def _count(self, status: Status) -> int:
        return sum(1 for r in self.rows if r.status == status)

    @property
    def new(self) -> int:
        """Files imported for the first time."""
        return self._count("new")

    @property
    def updated(self) -> int:
        """Files whose sessions got new entries."""
        return self._count("updated")

    @property
    def unchanged(self) -> int:
        """Files with nothing new (most skipped by ``stat`` alone)."""
        return self._count("unchanged")

    @property
    def gone(self) -> int:
        """Files the agent deleted whose sessions stay in the store."""
        return self._count("gone")

    @property
    def failed(self) -> int:
        """Files that could not be read or converted."""
        return self._count("failed")

    @property
    def entries_added(self) -> int:
        """Entries appended to the store, all files together."""
        return sum(r.entries_added for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` object: the counts and ``sources`` (one dict per row)."""
        return {
            "new": self.new,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "gone": self.gone,
            "failed": self.failed,
            "entries_added": self.entries_added,
            "sources": [r.to_dict() for r in self.rows],
        }


@dataclass
class _Stored:
    """A session in the store imported from a file, and its newest sync position."""

    session_id: str
    position: SyncPosition | None


def _imported_path(metadata: Any) -> str | None:
    imported = (metadata.model_extra or {}).get("importedFrom")
    path = imported.get("path") if isinstance(imported, dict) else None
    return path if isinstance(path, str) and os.path.isabs(path) else None


async def _stored_sessions(repo: SessionRepo) -> dict[str, list[str]]:
    """Absolute source path → ids of the sessions imported from it (one ``list`` call)."""
    out: dict[str, list[str]] = {}
    for info in await repo.list():
        path = _imported_path(info.metadata)
        if path is not None:
            out.setdefault(path, []).append(info.id)
    return out


async def _position(repo: SessionRepo, session_id: str, path: str) -> SyncPosition | None:
    """The newest sync position of ``path`` stored in the session, ``None`` when none."""
    session = await repo.open(session_id)
    try:
        cursor = EntryCursor(types=frozenset({"leaf"}), reverse=True, limit=_MARKS_READ)
        for entry in await session.storage.get_entries(cursor):
            found = position_of(entry)
            if found is not None and found.path == path:
                return found
    finally:
        await session.close()
    return None


def _read_sync(path: Path) -> tuple[bytes, os.stat_result]:
    """The file's bytes and its ``os.fstat`` taken before reading (a regular file only)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError("not a regular file")
        return f.read(), st


def _whole_lines(data: bytes, path: Path) -> bytes:
    """``data`` without a last line the agent is still writing: for a ``.jsonl`` file whose
    last line has no newline and is not valid JSON yet (and whose first line is: a JSONL file,
    not a JSON document), the bytes up to the line before."""
    if path.suffix != ".jsonl" or not data or data.endswith(b"\n"):
        return data
    cut = data.rfind(b"\n") + 1
    if cut == 0 or not _is_json(data[: data.find(b"\n")]):
        return data  # one line, or a JSON document named .jsonl: read whole
    return data if _is_json(data[cut:]) else data[:cut]


def _is_json(line: bytes) -> bool:
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def _walk(source: Source) -> list[tuple[Path, os.stat_result]]:
    return list(session_files(source))


def _absolute(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute against the working directory (no file system access)."""
    return Path(os.path.abspath(path))


def _under(path: str, roots: Sequence[Path]) -> bool:
    p = Path(path)
    return any(p == root or root in p.parents for root in roots)


async def sync_sources(
    repo: SessionRepo,
    sources: Sequence[Source],
    *,
    only: Collection[Path] | None = None,
    progress: Callable[[SourceRow], None] | None = None,
    quiet_s: float = DEFAULT_QUIET_S,
) -> SyncReport:
    """Import what is new in ``sources`` into ``repo``; see the module docstring.

    Args:
        repo: the store.
        sources: files and directories (directories are searched recursively for session
            files, :func:`~sessiontree.interop.locations.session_files`).
        only: sync only these files (absolute or relative paths; for a watcher that knows
            what changed); ``None``: every file of every source, and sessions whose file is
            gone are reported.
        progress: called with each row as soon as it is known.
        quiet_s: a file modified less than this many seconds ago has its open turn held
            back (:attr:`SourceRow.held`); ``0`` stores every file whole.

    Returns:
        The :class:`SyncReport`. Failed files are rows, not exceptions.

    Raises:
        StorageError: the store cannot be read or written.
    """
    report = SyncReport()
    wanted = None if only is None else {_absolute(p) for p in only}
    stored = await _stored_sessions(repo)
    indexed = await repo.sync_positions() if isinstance(repo, SyncPositionIndex) else {}
    seen: set[str] = set()

    def emit(row: SourceRow) -> None:
        report.rows.append(row)
        if progress is not None:
            progress(row)

    for source in sources:
        files = await asyncio.to_thread(_walk, source)
        for path, st in files:
            if wanted is not None and path not in wanted:
                continue
            key = str(path)
            if key in seen:
                continue
            seen.add(key)
            rows = await _sync_file(repo, source, path, st, stored.get(key, []), indexed, quiet_s)
            for row in rows:
                emit(row)

    if wanted is None:
        roots = [_absolute(s.path) for s in sources]
        candidates = [k for k in sorted(stored) if k not in seen and _under(k, roots)]
        exists = await asyncio.to_thread(lambda: {k for k in candidates if os.path.lexists(k)})
        for key in candidates:
            if key in exists:
                continue
            for session_id in stored[key]:
                emit(SourceRow(Path(key), "gone", session_id=session_id))
    return report


def _format(data: bytes, path: Path, source: Source) -> Format | None:
    """The source's format, else the one ``data`` shows (``None`` when it shows none)."""
    if source.format is not None:
        return source.format
    try:
        return detect_format_bytes(data, path)
    except (SessionTreeError, UnknownFormatError):
        return None


async def _sync_file(
    repo: SessionRepo,
    source: Source,
    path: Path,
    st: os.stat_result,
    known: list[str],
    indexed: dict[str, dict[str, Any]],
    quiet_s: float,
) -> list[SourceRow]:
    """Sync one file; one row per session it holds (``indexed``: the repository's
    :meth:`~sessiontree.storage.sync_index.SyncPositionIndex.sync_positions`, looked at
    before a session is opened to find its position)."""
    positions: list[tuple[str, SyncPosition | None]] = []
    try:
        for session_id in known:
            found = SyncPosition.from_json(indexed.get(session_id))
            if found is None or found.path != str(path):
                found = await _position(repo, session_id, str(path))
            positions.append((session_id, found))
    except SessionTreeError:
        positions = []  # deleted meanwhile: read the file
    if positions and all(p is not None and p.unchanged(st) for _, p in positions):
        return [
            SourceRow(path, "unchanged", session_id=sid, source_session=p.source_session)
            for sid, p in positions
            if p is not None
        ]
    if len(positions) == 1:
        try:
            sid, found = positions[0]
            resumed = (
                None if found is None else await _sync_tail(repo, source, path, sid, found, quiet_s)
            )
        except OSError as exc:
            return [SourceRow(path, "failed", error=f"{path}: cannot read the file: {exc}")]
        if resumed is not None:
            return [resumed]
    try:
        data, read_st = await asyncio.to_thread(_read_sync, path)
    except OSError as exc:
        return [SourceRow(path, "failed", error=f"{path}: cannot read the file: {exc}")]
    data = _whole_lines(data, path)
    fmt = source.format
    held = 0
    jobs: list[str | None] = [None]
    if data.startswith(SQLITE_HEADER):
        jobs = [*(database_sessions(data) or ())] or [None]
    elif time.time() - read_st.st_mtime_ns / 1e9 < quiet_s:
        fmt = _format(data, path, source)
        settled_data = settled(data, fmt)
        held, data = len(data) - len(settled_data), settled_data
        if not data:  # only an open turn so far
            return [
                SourceRow(path, "unchanged", session_id=sid, format=fmt, held=held)
                for sid in known or [None]  # type: ignore[list-item]
            ]
    rows: list[SourceRow] = []
    for source_session in jobs:
        position = SyncPosition.of(path, read_st, data, source_session)
        before = set(known)
        try:
            session, report = await import_data(
                path,
                data,
                repo,
                mtime_ms=read_st.st_mtime_ns // 1_000_000,
                format=fmt,
                source_session=source_session,
                position=position,
            )
        except AlreadyImportedError as exc:
            if not getattr(exc.report, "up_to_date", False):  # a session of another source
                rows.append(_failed(path, exc, source_session))
                continue
            rows.append(
                SourceRow(
                    path,
                    "unchanged",
                    session_id=exc.session_id,
                    format=getattr(exc.report, "format", None),
                    source_session=source_session,
                    held=held,
                )
            )
            continue
        except (SessionTreeError, ValueError) as exc:
            if isinstance(exc, StorageError) and not str(exc).startswith(str(path)):
                raise  # the store, not the file
            rows.append(_failed(path, exc, source_session))
            continue
        await session.close()
        status: Status = "updated" if report.extended or session.id in before else "new"
        rows.append(
            SourceRow(
                path,
                status,
                session_id=session.id,
                format=report.format,
                entries_added=report.entries_imported,
                source_session=source_session,
                held=held,
            )
        )
    return rows


async def _sync_tail(
    repo: SessionRepo,
    source: Source,
    path: Path,
    session_id: str,
    position: SyncPosition,
    quiet_s: float,
) -> SourceRow | None:
    """Sync a file that grew by appends from its stored ``position`` on, reading only what it
    gained (:mod:`~sessiontree.interop.resume`); ``None`` when that cannot be done and the
    file must be read whole.

    Raises:
        OSError: the file cannot be read.
    """
    tail = await asyncio.to_thread(read_tail, path, position)
    if tail is None:
        return None
    fmt = source.format if source.format is not None else _format(tail.head + b"\n", path, source)
    convert = TAIL_CONVERTERS.get(fmt or "")
    if fmt is None or convert is None:
        return None
    fresh = time.time() - tail.st.st_mtime_ns / 1e9 < quiet_s
    if fresh and len(settled(tail.data, fmt)) != len(tail.data):  # pragma: no cover - none yet
        return None  # a format with an open-turn rule is read whole
    report = ImportReport(source_path=path, format=fmt)
    try:
        converted = convert(tail.head, tail.data, tail.first_line, path, report)
        if converted is None:
            return None
        after = replace(
            position,
            size=position.size + len(tail.data),
            mtime_ns=tail.st.st_mtime_ns,
            tail_sha256=tail.end_sha256,
            lines=tail.first_line - 1 + tail.data.count(b"\n"),
        )
        session = await extend_from_tail(repo, session_id, converted, report, path, after)
    except AlreadyImportedError as exc:
        return SourceRow(
            path, "unchanged", session_id=exc.session_id, format=fmt, read_from=position.size
        )
    except (SessionTreeError, ValueError) as exc:
        if isinstance(exc, StorageError) and not str(exc).startswith(str(path)):
            raise  # the store, not the file
        return _failed(path, exc, None)
    if session is None:
        return None
    await session.close()
    return SourceRow(
        path,
        "updated",
        session_id=session.id,
        format=fmt,
        entries_added=report.entries_imported,
        read_from=position.size,
    )


def _failed(path: Path, exc: Exception, source_session: str | None) -> SourceRow:
    text = str(exc)
    if str(path) not in text:
        text = f"{path}: {text}"
    return SourceRow(path, "failed", error=text, source_session=source_session)
