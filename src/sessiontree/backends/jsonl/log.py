"""The file side of one session log: reading what was appended, torn tails, whole-line appends.

:class:`SessionLog` holds the descriptors, the lock file and the byte offset consumed so far;
:class:`~sessiontree.backends.jsonl.storage.JSONLStorage` builds the session storage on it.
Under the lock a writer first reads the bytes other processes appended since its last read,
then writes each entry line with one ``os.write``; reads pick up appended lines without the
lock (one ``fstat`` per call). A torn final line is ignored, and cut off under the lock before
the next append; a final whole entry lacking only its newline is read and finished instead.
A reader that finds the file ending inside a line while a writer holds the lock (or while the
file is still growing) is looking at an append in progress, not a torn line: it waits for
the rest without a warning.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import weakref
from contextlib import AbstractContextManager
from pathlib import Path

from sessiontree.backends.jsonl.files import Durability, lock_path
from sessiontree.backends.jsonl.format import LineRecord, SkippedLine, is_whole_line, scan_block
from sessiontree.backends.jsonl.line_index import LineIndex
from sessiontree.backends.jsonl.lockfile import LogLock, no_append_running
from sessiontree.entries import Entry
from sessiontree.errors import CorruptSessionError, SessionNotFoundError, StorageError

__all__ = ["LOCK_TIMEOUT_S", "SessionLog", "writer_in_process"]

log = logging.getLogger("sessiontree.backends.jsonl.log")

LOCK_TIMEOUT_S = 60.0
"""Seconds a writer waits for the lock file before raising :class:`StorageError`."""

_WRITERS: weakref.WeakValueDictionary[str, SessionLog] = weakref.WeakValueDictionary()
"""The storages of this process that have announced writes and not settled, by writer name
(a storage dropped without ``close`` leaves it by being collected)."""


def writer_in_process(writer: str) -> bool:
    """Whether a storage of this process still goes by the writer name ``writer``."""
    return writer in _WRITERS


class SessionLog:
    """The descriptors, lock and read position of one session log file.

    Attributes:
        path: the session file (absolute).
        durability: ``none``, ``flush`` or ``fsync``.
        skip_bad_lines: skip bad lines instead of raising.
        skipped_lines: with ``skip_bad_lines=True``, every line left out (line number, reason).
    """

    _id: str  # set by the subclass once the header is read

    def __init__(self, path: Path, durability: Durability, skip_bad_lines: bool) -> None:
        """Remember the file; nothing is opened yet.

        Raises:
            ValueError: an unknown ``durability``.
        """
        if durability not in ("none", "flush", "fsync"):
            raise ValueError(f"durability must be none, flush or fsync, not {durability!r}")
        self.path = path
        self.durability: Durability = durability
        self.skip_bad_lines = skip_bad_lines
        self.skipped_lines: list[SkippedLine] = []
        self._name = os.fspath(path)
        self._lock_path = lock_path(self.path)
        self._rfd: int | None = None
        self._rino = -1  # inode of the file open as _rfd
        self._wfd: int | None = None
        self._lock = LogLock(self._lock_path, LOCK_TIMEOUT_S)
        self._deleted = False
        self._index = LineIndex()
        self._offset = 0
        self._next_line = 2
        self._dirty = False
        self._torn_at = -1
        self._unterminated = False

    def _open_read(self) -> int:
        if self._deleted:
            raise SessionNotFoundError(self._id, "session was deleted")
        if self._rfd is None:
            try:
                self._rfd = os.open(self._name, os.O_RDONLY)
                self._rino = os.fstat(self._rfd).st_ino
            except FileNotFoundError as exc:
                sid = getattr(self, "_id", None) or self.path.stem
                raise SessionNotFoundError(sid, f"no session file at {self.path}") from exc
            except OSError as exc:
                raise StorageError(f"cannot open session file {self.path}: {exc}") from exc
        return self._rfd

    def _open_write(self) -> int:
        if self._wfd is None:
            try:
                self._wfd = os.open(self._name, os.O_WRONLY | os.O_APPEND)
            except OSError as exc:
                raise StorageError(f"cannot write session file {self.path}: {exc}") from exc
        return self._wfd

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
            base=self._offset,
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
            if self._torn_at == end or self._append_running(end):
                return
            log.warning("%s:%d: ignoring a torn final line", self.path, self._next_line)
            # remember the file size that ends in this torn tail: no re-read until it changes
            self._torn_at = end

    def _append_running(self, end: int) -> bool:
        """Whether the unfinished line ending at file offset ``end`` (the size read) may be an
        append still being written: a writer holds the lock, or the file is no longer ``end``
        bytes long. Otherwise no append is running while the lock is checked, and the line
        is torn. Used by readers only (a writer holds the lock itself)."""
        with no_append_running(self._lock_path) as quiet:
            if not quiet:
                return True
            try:
                return os.fstat(self._open_read()).st_size != end
            except OSError:
                return False

    def _take_unterminated(self, tail: bytes) -> bool:
        """Take a final line that is whole JSON but lacks its newline; True if so.

        Another tool may end a pi file without the last newline; a line that parses is then
        complete, not torn (a torn write cannot parse: the object only closes at its end).
        Ignoring it would let the next append cut it off the file.
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
            base=self._offset,
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

    def is_current(self) -> bool:
        """Whether this log is open (not deleted) on the file its path names now (one ``stat``)."""
        if self._deleted or self._rfd is None:
            return False
        try:
            return os.stat(self._name).st_ino == self._rino
        except OSError:
            return False

    def _entry(self, entry_id: str) -> Entry | None:
        record = self._index.by_id.get(entry_id)
        return None if record is None else record.entry_of(self.path, self._id)

    def _write_line(self, line: bytes) -> None:
        """:meth:`_write_lines` of one line (the common append, with fewer steps)."""
        fd = self._wfd
        if fd is None or self._unterminated or self.durability == "fsync":
            self._write_lines([line])
            return
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(f"short write: {written} of {len(line)} bytes")
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, self._offset)
            raise StorageError(f"cannot append to session file {self.path}: {exc}") from exc
        with contextlib.suppress(OSError):
            now = time.time_ns()
            os.utime(fd, ns=(now, now))  # exact mtime: listing sorts by it
        self._dirty = True

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

    def _acquire(self) -> None:
        """Take the lock file (kept open between appends); :meth:`_release` gives it back.

        Raises:
            SessionNotFoundError: the session file is gone (no lock file is created then).
            StorageError: the lock cannot be taken in time.
        """
        if self._lock._fd is None and not os.path.exists(self._name):
            # with the lock file open, a deleted log is found under the lock instead
            self._deleted = True
            raise SessionNotFoundError(self._id, f"session file {self.path} was deleted")
        self._lock.acquire()

    def _release(self) -> None:
        self._lock.release()

    def _locked(self) -> AbstractContextManager[object]:
        """The lock held for a ``with`` block (:meth:`_acquire`, then :meth:`_release`).

        Raises:
            SessionNotFoundError: the session file is gone (no lock file is created then).
            StorageError: the lock cannot be taken in time.
        """
        if not os.path.exists(self._name):
            self._deleted = True
            raise SessionNotFoundError(self._id, f"session file {self.path} was deleted")
        return self._lock.held()

    def _catch_up_locked(self) -> None:
        """Under the lock: refuse a log deleted or replaced since it was opened, and read what
        other writers appended.

        One ``stat`` of the log's name tells both: the file there must be the one open (same
        inode), and its size says what others appended.

        Raises:
            SessionNotFoundError: the log was deleted or replaced.
            CorruptSessionError: the log shrank below what was read.
        """
        fd = self._open_read()
        try:
            st = os.stat(self._name)
        except FileNotFoundError:
            st = None
        if st is None or st.st_ino != self._rino:  # deleted (or replaced) since it was opened
            self._deleted = st is None
            raise SessionNotFoundError(
                self._id,
                f"session file {self.path} was deleted"
                if st is None
                else f"session file {self.path} was replaced; open the session again",
            )
        size = st.st_size
        if size != self._offset:
            if size < self._offset:
                raise CorruptSessionError(
                    f"the file shrank to {size} bytes below the {self._offset} bytes already read",
                    session_id=self._id,
                    path=self.path,
                )
            self._ingest(self._read_from(fd, self._offset), cut=True)
