"""JSONL storage: one append-only pi v3 session file per session (SPEC §6 "jsonl").

Design:

* **Format** (:mod:`sessiontree.storage.jsonl.format`): a header line, then one entry per line,
  each written with a single ``os.write`` of the whole line and its newline. The file is a
  valid pi v3 session file, and ``JSONLStorage(path)`` opens any pi v3 file in place.
* **Index**: the file is read once; each line is orjson-parsed into a light
  :class:`~sessiontree.storage.jsonl.format.LineRecord` (id, parent, type, targets). Entries are
  validated into pydantic models lazily, only when returned, so building the context of a
  branch validates the branch and nothing else, and never re-reads the file.
* **Several processes**: appends are serialised by a :mod:`filelock` lock file beside the log
  (``<file>.lock``). Under the lock a writer first reads the bytes other processes appended
  since its last read (it tracks the byte offset it has consumed), so ``at_leaf`` appends hang
  under the true current leaf and ids are checked against the whole log. Reads pick up
  appended lines the same way (one ``fstat`` per call), without the lock.
* **Crashes**: a torn final line (no newline, or a final line that does not parse) is ignored
  and cut off (``ftruncate`` to the end of the last whole line) under the lock before the
  next append — except a final line that is one whole valid entry lacking only its newline
  (another tool wrote the file so): it is read, and the newline is added before the next
  append; a bad line anywhere else raises :class:`CorruptSessionError` naming file and
  line, unless ``skip_bad_lines=True`` (then every skipped line is listed in
  :attr:`JSONLStorage.skipped_lines` and logged). A file without a valid header is refused
  before anything is written, so it is never rewritten or truncated.
* **Durability** (``durability=``): ``none`` never fsyncs; ``flush`` (default) hands every
  line to the OS before the append returns (it survives a crash of the process), fsyncs a
  new file (and its directory) when it is created and fsyncs on :meth:`close`; ``fsync``
  also fsyncs after every append (each append then survives a power loss).
* Files are created 0600 and directories 0700.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Literal, cast

from filelock import FileLock, Timeout

from sessiontree.entries import Entry, dump_entry_json, stored_form
from sessiontree.errors import CorruptSessionError, SessionNotFoundError, StorageError
from sessiontree.ids import new_id, now_iso
from sessiontree.metadata import SessionMetadata
from sessiontree.storage.base import EntryCursor, SessionStorage, fork_storage, select_entries
from sessiontree.storage.jsonl.format import (
    LineRecord,
    SkippedLine,
    build_header,
    entries_of,
    gc_paused,
    is_whole_line,
    parse_header,
    scan_block,
)
from sessiontree.storage.jsonl.index import LineIndex
from sessiontree.storage.jsonl.stats import REFRESH_BYTES, STATS_NAME, Stats, write_stats
from sessiontree.tree import ForkPosition, TreeIndex, branch_of, check_append, trace_chain

__all__ = [
    "LOG_NAME",
    "Durability",
    "JSONLStorage",
    "check_session_log",
    "create_session_file",
    "entry_lines",
    "fsync_dir",
    "remove_session_files",
]

log = logging.getLogger("sessiontree.storage.jsonl.storage")

Durability = Literal["none", "flush", "fsync"]
"""When appended lines are forced to disk (see the module docstring)."""

LOG_NAME = "session.jsonl"
"""The log's file name inside a repository's session directory."""

LOCK_TIMEOUT_S = 60.0
"""Seconds a writer waits for the lock file before raising :class:`StorageError`."""

_SESSION_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,128}")


def fsync_dir(directory: Path) -> None:
    """fsync a directory, so that a file or directory just created in it survives a crash.

    Raises:
        OSError: the directory cannot be opened.
    """
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def entry_lines(entries: Sequence[Entry], session_id: str) -> list[bytes]:
    """The lines (with newlines) of ``entries`` as the first entries of a new session file,
    each checked as an append to an empty session.

    Raises:
        DuplicateEntryError, EntryNotFoundError, InvalidEntryError: an entry is refused.
    """
    stored = [stored_form(e) for e in entries]
    TreeIndex.checked((e for e, _ in stored), session_id=session_id)
    return [data + b"\n" for _, data in stored]


def create_session_file(
    path: Path,
    session_id: str,
    metadata: SessionMetadata,
    durability: Durability = "flush",
    lines: Sequence[bytes] = (),
) -> None:
    """Create a session file holding its header and ``lines``, atomically and exclusively
    (mode 0600).

    The content is written to a temporary file in the same directory and hard-linked into
    place, so the file never exists without its whole header and every line: a session made
    by an import or a fork appears whole or not at all, whenever the process dies.

    Raises:
        FileExistsError: ``path`` exists.
        OSError: the file cannot be written.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{new_id()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            _write_all(fd, b"".join([build_header(session_id, metadata, now_iso()), *lines]))
            if durability != "none":
                os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    if durability != "none":
        fsync_dir(path.parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(f"short write: {written} bytes")
        view = view[written:]


class JSONLStorage:
    """One session stored as an append-only pi v3 JSONL file (SPEC §6 "jsonl").

    ``JSONLStorage(path)`` opens an existing file in place: a repository's
    ``<root>/<id>/session.jsonl`` or any pi v3 session file. Nothing is written until an
    append. Every method is async but does plain, short, blocking file I/O.

    Attributes:
        path: the session file.
        skipped_lines: with ``skip_bad_lines=True``, every line left out (line number, reason).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: Durability = "flush",
        skip_bad_lines: bool = False,
        session_id: str | None = None,
        repo_root: str | os.PathLike[str] | None = None,
        read_only: bool = False,
    ) -> None:
        """Open a session file and index its entries (reads the whole file once).

        Args:
            path: the session file.
            durability: ``none``, ``flush`` or ``fsync``.
            skip_bad_lines: skip bad lines (listed in :attr:`skipped_lines`) instead of raising;
                every line is then validated at open.
            session_id: the session id (a repository passes the directory name); default the
                header's ``id``.
            repo_root: the repository root, where :meth:`fork` creates the new session;
                found from the ``<root>/<id>/session.jsonl`` layout when not given, else forks
                become sibling files ``<new id>.jsonl``.
            read_only: never write (appends, forks and ``delete`` raise
                :class:`StorageError`; no lock file or sidecar is made).

        Raises:
            SessionNotFoundError: no file at ``path``.
            CorruptSessionError: no valid header (the file is left untouched), or a bad line
                other than the last one.
            StorageError: the file cannot be read.
        """
        if durability not in ("none", "flush", "fsync"):
            raise ValueError(f"durability must be none, flush or fsync, not {durability!r}")
        self.path = Path(path).absolute()
        self.durability: Durability = durability
        self.skip_bad_lines = skip_bad_lines
        self.skipped_lines: list[SkippedLine] = []
        self.read_only = read_only
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        if (
            repo_root is None
            and self.path.name == LOG_NAME
            and _SESSION_ID_RE.fullmatch(self.path.parent.name)
        ):
            repo_root = self.path.parent.parent
        self._repo_root = None if repo_root is None else Path(repo_root).absolute()
        self._stats_path = self.path.parent / STATS_NAME if self._repo_root is not None else None
        self._rfd: int | None = None
        self._wfd: int | None = None
        self._lock: FileLock | None = None
        self._deleted = False
        self._index = LineIndex()
        self._offset = 0
        self._next_line = 2
        self._stats_offset = 0
        self._dirty = False
        self._torn_at = -1
        self._unterminated = False
        fd = self._open_read()
        try:
            data = self._read_from(fd, 0)
        except OSError as exc:
            raise StorageError(f"cannot read session file {self.path}: {exc}") from exc
        newline = data.find(b"\n")
        header = parse_header(data if newline < 0 else data[: newline + 1], self.path)
        # a whole header without its newline (a file with no entries that another tool
        # wrote so; listing showed it, opening refused it): read, finished before an append
        self._unterminated = newline < 0
        self._id = session_id or header.session_id
        self._metadata = header.metadata
        self.created_at = header.created_at
        self._offset = header.length
        self._stats_offset = self._offset
        with gc_paused():
            self._ingest(data[header.length :], cut=False)
        self._ino = os.fstat(fd).st_ino

    # ------------------------------------------------------------------ file plumbing

    def _open_read(self) -> int:
        if self._deleted:
            raise SessionNotFoundError(self._id, "session was deleted")
        if self._rfd is None:
            try:
                self._rfd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError as exc:
                sid = getattr(self, "_id", None) or self.path.stem
                raise SessionNotFoundError(sid, f"no session file at {self.path}") from exc
            except OSError as exc:
                raise StorageError(f"cannot open session file {self.path}: {exc}") from exc
        return self._rfd

    def _open_write(self) -> int:
        if self._wfd is None:
            try:
                self._wfd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
            except OSError as exc:
                raise StorageError(f"cannot write session file {self.path}: {exc}") from exc
        return self._wfd

    def _lock_file(self) -> FileLock:
        if self._lock is None:
            self._lock = FileLock(
                self._lock_path,
                timeout=LOCK_TIMEOUT_S,
                mode=0o600,
                poll_interval=0.001,
                preserve_lock_file=True,
            )
        return self._lock

    @staticmethod
    def _read_from(fd: int, offset: int) -> bytes:
        size = os.fstat(fd).st_size
        if size <= offset:
            return b""
        chunks = []
        while offset < size:
            chunk = os.pread(fd, size - offset, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)

    def _ingest(self, block: bytes, *, cut: bool) -> None:
        """Index the whole lines of ``block`` (bytes from ``self._offset``); maybe cut a torn tail."""
        if not block:
            return
        if self._unterminated and block.startswith(b"\n"):
            # another writer finished our last line: its newline ends a line already counted
            self._unterminated = False
            self._offset += 1
            block = block[1:]
            if not block:
                return
        result = scan_block(
            block,
            self._next_line,
            self.path,
            skip_bad=self.skip_bad_lines,
            validate=self.skip_bad_lines,
            session_id=getattr(self, "_id", None),
        )
        end = self._offset + len(block)
        self._add_all(result.records, result.skipped)
        for skipped in result.skipped:
            log.warning(
                "%s:%d: skipped bad line: %s", self.path, skipped.line_number, skipped.reason
            )
        self.skipped_lines.extend(result.skipped)
        self._offset += result.consumed
        self._next_line += result.lines
        if result.torn and self._take_unterminated(block[result.consumed :]):
            return
        if result.torn:
            if cut:
                log.warning(
                    "%s:%d: cutting off a torn final line before appending",
                    self.path,
                    self._next_line,
                )
                os.ftruncate(self._open_write(), self._offset)
                self._torn_at = -1
                return
            if self._torn_at != end:
                log.warning("%s:%d: ignoring a torn final line", self.path, self._next_line)
            # remember the file size that ends in this torn tail: no re-read until it changes
            self._torn_at = end

    def _take_unterminated(self, tail: bytes) -> bool:
        """Take a final line that is whole JSON but lacks its newline; True if so.

        Another tool may end a pi file without the last newline; a line that parses is then
        complete, not torn (a torn write cannot parse: the object only closes at its end).
        Found in review: such a line was ignored, and the next append cut it off the file.
        It is read exactly as the same line with its newline would be (a bad entry line is a
        :class:`CorruptSessionError`, or skipped with ``skip_bad_lines``), and the newline is
        written under the lock before the next append (:meth:`_write_lines`).
        """
        if b"\n" in tail or not is_whole_line(tail):
            return False  # torn
        result = scan_block(
            tail + b"\n",
            self._next_line,
            self.path,
            skip_bad=self.skip_bad_lines,
            validate=self.skip_bad_lines,
            session_id=getattr(self, "_id", None),
        )
        self._add_all(result.records, result.skipped)
        for skipped in result.skipped:
            log.warning(
                "%s:%d: skipped bad line: %s", self.path, skipped.line_number, skipped.reason
            )
        self.skipped_lines.extend(result.skipped)
        self._offset += len(tail)
        self._next_line += 1
        self._unterminated = True
        return True

    def _add_all(self, records: list[LineRecord], skipped: list[SkippedLine]) -> None:
        self._index.add_all(
            records,
            skipped,
            skip_duplicates=self.skip_bad_lines,
            path=self.path,
            session_id=self._id,
        )

    def _refresh(self) -> None:
        """Pick up whole lines other processes appended (no lock; a torn tail is left alone)."""
        fd = self._open_read()
        size = os.fstat(fd).st_size
        if size > self._offset and size != self._torn_at:
            self._ingest(self._read_from(fd, self._offset), cut=False)

    def _entry(self, entry_id: str) -> Entry | None:
        record = self._index.by_id.get(entry_id)
        return None if record is None else record.entry_of(self.path, self._id)

    def _write_lines(self, lines: list[bytes]) -> None:
        """Append whole lines under the lock: one ``os.write`` per entry line; undo on failure."""
        fd = self._open_write()
        start = self._offset
        unterminated = self._unterminated
        try:
            if self._unterminated:  # finish the last line first (see _take_unterminated)
                if os.pread(self._open_read(), 1, self._offset - 1) != b"\n":
                    if os.write(fd, b"\n") != 1:
                        raise OSError("short write of a newline")
                    self._offset += 1
                self._unterminated = False
            for line in lines:
                written = os.write(fd, line)
                if written != len(line):
                    raise OSError(f"short write: {written} of {len(line)} bytes")
            if self.durability == "fsync":
                os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            self._offset, self._unterminated = start, unterminated
            raise StorageError(f"cannot append to session file {self.path}: {exc}") from exc
        with contextlib.suppress(OSError):
            now = time.time_ns()
            os.utime(fd, ns=(now, now))  # exact mtime: listing sorts by it
        self._dirty = True

    def _locked(self) -> AbstractContextManager[object]:
        """Take the lock file; the returned context manager releases it once.

        Raises:
            SessionNotFoundError: the session file is gone (no lock file is created then).
            StorageError: the lock cannot be taken in time.
        """
        if not os.path.exists(self.path):
            self._deleted = True
            raise SessionNotFoundError(self._id, f"session file {self.path} was deleted")
        lock = self._lock_file()
        try:
            return lock.acquire()
        except Timeout as exc:
            raise StorageError(
                f"timed out after {LOCK_TIMEOUT_S:.0f} s waiting for the lock {self._lock_path}"
            ) from exc
        except OSError as exc:
            raise StorageError(f"cannot take the lock {self._lock_path}: {exc}") from exc

    def _catch_up_locked(self) -> None:
        fd = self._open_read()
        st = os.fstat(fd)
        try:
            on_disk = os.stat(self.path).st_ino
        except FileNotFoundError:
            on_disk = None
        if on_disk != st.st_ino:  # deleted (or replaced) since this storage opened it
            self._deleted = on_disk is None
            raise SessionNotFoundError(
                self._id,
                f"session file {self.path} was deleted"
                if on_disk is None
                else f"session file {self.path} was replaced; open the session again",
            )
        size = st.st_size
        if size < self._offset:
            raise CorruptSessionError(
                f"the file shrank to {size} bytes below the {self._offset} bytes already read",
                session_id=self._id,
                path=self.path,
            )
        if size > self._offset:
            self._ingest(self._read_from(fd, self._offset), cut=True)

    def _writable(self) -> None:
        """Raise if this storage was opened read-only."""
        if self.read_only:
            raise StorageError(
                f"{self.path}: the session was opened read-only; nothing written",
            )

    def _after_write(self, records: list[LineRecord], total: int) -> None:
        self._add_all(records, [])
        self._offset += total
        self._next_line += len(records)
        if self._offset - self._stats_offset >= REFRESH_BYTES:
            self._save_stats()

    def _save_stats(self) -> None:
        if self._stats_path is None or self._deleted:
            return
        write_stats(self._stats_path, self.stats())
        self._stats_offset = self._offset

    def stats(self) -> Stats:
        """The listing counts of what this storage has read (see :mod:`.stats`)."""
        return Stats(
            ino=self._ino,
            covered=self._offset,
            entry_count=len(self._index.records),
            message_count=self._index.message_count,
            first_message=self._index.first_message,
            name=self._index.name,
        )

    # ------------------------------------------------------------------ SessionStorage

    @property
    def id(self) -> str:
        """The session id."""
        return self._id

    @property
    def metadata(self) -> SessionMetadata:
        """The session metadata, from the header line."""
        return self._metadata

    async def get_leaf_id(self) -> str | None:
        """See :meth:`SessionStorage.get_leaf_id`."""
        self._refresh()
        return self._index.leaf_id

    async def set_leaf_id(self, target_id: str | None) -> Entry:
        """See :meth:`SessionStorage.set_leaf_id`."""
        from sessiontree.entries import LeafEntry

        return await self.append_entry(LeafEntry(target_id=target_id), at_leaf=True)

    async def get_entry(self, entry_id: str) -> Entry | None:
        """See :meth:`SessionStorage.get_entry`.

        Raises:
            CorruptSessionError: the entry's line is not a valid entry (names file and line).
        """
        self._refresh()
        return self._entry(entry_id)

    async def get_entries(self, cursor: EntryCursor | None = None) -> list[Entry]:
        """See :meth:`SessionStorage.get_entries`; validates only the entries returned."""
        self._refresh()
        by_id = self._index.by_id

        def seq_of(entry_id: str) -> int | None:
            record = by_id.get(entry_id)
            return None if record is None else record.seq

        # select_entries only reads ``.type`` of the items, which records have.
        chosen = select_entries(
            cast(Sequence[Entry], self._index.records), seq_of, cursor, session_id=self._id
        )
        return entries_of(cast(list[LineRecord], chosen), self.path, self._id)

    async def get_branch(
        self, leaf_id: str | None = None, *, include_bookkeeping: bool = False
    ) -> list[Entry]:
        """See :meth:`SessionStorage.get_branch`. Cost grows with the path, not the file."""
        self._refresh()
        records = trace_chain(
            self._index.leaf_id if leaf_id is None else leaf_id,
            cast(Callable[[str], Entry | None], self._index.by_id.get),  # records have id/parent_id
            session_id=self._id,
        )
        chain = entries_of(cast(list[LineRecord], records), self.path, self._id)
        return chain if include_bookkeeping else branch_of(chain)

    async def append_entry(self, entry: Entry, *, at_leaf: bool = False) -> Entry:
        """See :meth:`SessionStorage.append_entry`: one ``os.write`` of one line, under the lock.

        Raises:
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: SPEC §2; nothing written.
            StorageError: the file or its lock cannot be written, or the storage is read-only.
        """
        self._writable()
        self._open_read()
        entry, data = stored_form(entry)
        with self._locked():
            self._catch_up_locked()
            if at_leaf and entry.parent_id != self._index.leaf_id:
                entry = entry.model_copy(update={"parent_id": self._index.leaf_id})
                data = dump_entry_json(entry)
            check_append(entry, self._index.type_of, session_id=self._id)
            line = data + b"\n"
            self._write_lines([line])
            self._after_write([LineRecord.of_entry(entry, self._next_line)], len(line))
        return entry

    async def append_entries(self, entries: Sequence[Entry]) -> None:
        """See :meth:`SessionStorage.append_entries`: all checked first, then appended.

        Each entry is one ``os.write`` of its line; if a write fails the file is cut back to
        where the batch started.

        Raises:
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: nothing appended.
            StorageError: the file or its lock cannot be written (nothing appended), or the
                storage is read-only.
        """
        self._writable()
        self._open_read()
        stored = [stored_form(e) for e in entries]
        parsed = [e for e, _ in stored]
        if not parsed:
            return
        with self._locked():
            self._catch_up_locked()
            staged: dict[str, str] = {}

            def type_of(entry_id: str) -> str | None:
                return staged.get(entry_id) or self._index.type_of(entry_id)

            for e in parsed:
                check_append(e, type_of, session_id=self._id)
                staged[e.id] = e.type
            lines = [data + b"\n" for _, data in stored]
            self._write_lines(lines)
            records = [LineRecord.of_entry(e, self._next_line + i) for i, e in enumerate(parsed)]
            self._after_write(records, sum(len(line) for line in lines))

    async def get_label(self, entry_id: str) -> str | None:
        """See :meth:`SessionStorage.get_label`."""
        self._refresh()
        return self._index.labels.get(entry_id)

    async def get_name(self) -> str | None:
        """See :meth:`SessionStorage.get_name`."""
        self._refresh()
        return self._index.name

    async def fork(self, target_id: str, position: ForkPosition = "at") -> SessionStorage:
        """See :meth:`SessionStorage.fork`: the new session goes into the same repository.

        Outside a repository (a pi file opened in place) the fork is a sibling file
        ``<new id>.jsonl`` in the same directory.
        """
        self._writable()
        self._refresh()

        async def create(meta: SessionMetadata, entries: list[Entry]) -> SessionStorage:
            session_id = new_id()
            lines = entry_lines(entries, session_id)
            if self._repo_root is not None:
                directory = self._repo_root / session_id
                os.mkdir(directory, 0o700)
                path = directory / LOG_NAME
            else:
                path = self.path.parent / f"{session_id}.jsonl"
            create_session_file(path, session_id, meta, self.durability, lines)
            if self._repo_root is not None and self.durability != "none":
                fsync_dir(self._repo_root)
            return JSONLStorage(
                path, durability=self.durability, session_id=session_id, repo_root=self._repo_root
            )

        try:
            return await fork_storage(self, target_id, position, create)
        except OSError as exc:
            raise StorageError(f"cannot create the fork of {self._id}: {exc}") from exc

    async def delete(self) -> None:
        """Delete the session: its directory in a repository, else the file and its lock file.

        Raises:
            StorageError: the files cannot be removed.
        """
        if self._deleted:
            return
        self._writable()
        await self.close()
        self._deleted = True
        try:
            remove_session_files(self.path, in_repo=self._repo_root is not None)
        except OSError as exc:
            raise StorageError(f"cannot delete session {self._id}: {exc}") from exc

    async def close(self) -> None:
        """Write the listing sidecar, fsync (``flush``/``fsync``) and close the files. Idempotent.

        The storage reopens its files if used again.
        """
        if self._deleted:
            return
        if self._dirty:
            if self._wfd is not None and self.durability != "none":
                with contextlib.suppress(OSError):
                    os.fsync(self._wfd)
            self._save_stats()
            self._dirty = False
        for fd in (self._rfd, self._wfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._rfd = self._wfd = None

    def __del__(self) -> None:
        for fd in (getattr(self, "_rfd", None), getattr(self, "_wfd", None)):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


def check_session_log(path: Path) -> None:
    """Raise unless ``path`` starts with a session header (what :func:`remove_session_files`
    insists on before it removes anything).

    Raises:
        CorruptSessionError: not a session file.
        OSError: the file cannot be read (``FileNotFoundError`` when it is missing).
    """
    with open(path, "rb") as f:
        first = f.readline(1 << 20)
    parse_header(first, path)


def remove_session_files(path: Path, *, in_repo: bool) -> None:
    """Remove a session log and the files sessiontree keeps beside it — nothing else.

    In a repository the session directory is removed too, but only once it is empty: a file
    someone else put there survives (and so does the directory). Never ``rmtree``.

    Raises:
        OSError: a file cannot be removed.
    """
    lock = path.with_name(path.name + ".lock")
    path.unlink(missing_ok=True)
    lock.unlink(missing_ok=True)
    if in_repo and path.name == LOG_NAME:
        directory = path.parent
        (directory / STATS_NAME).unlink(missing_ok=True)
        for tmp in directory.glob(f".{STATS_NAME}.*.tmp"):
            tmp.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            directory.rmdir()  # only when empty
