"""The lock file that serialises appends to one session log, held open between appends.

Opening, locking, unlocking and closing a lock file on every append (what a per-call lock
object does) took half of a JSONL append. :class:`LogLock` opens ``<log>.lock`` once and then
takes an exclusive ``flock`` on that descriptor for each append, released right after it.
``flock`` belongs to the open file description, so every other :class:`LogLock` — in this
process or another — excludes it, and a ``threading.Lock`` excludes threads sharing this one.

It stays correct when the descriptor goes stale: a forked child (which shares the parent's
open file description, hence its lock) opens its own, and when the lock file on disk is no
longer the one held open (removed, or replaced by a session written again under the same
id: a ``stat`` of the name shows another inode or none), the lock is taken again on the
file that is there now. An uncontended acquire and release is three system calls
(``flock``, ``stat``, ``flock``).
Where ``fcntl`` does not exist (Windows), :mod:`filelock` does the same job per append.

Readers never wait for the lock, but one that sees a log end inside a line asks
:func:`no_append_running` whether that line is an append still being copied in (a writer
holds the lock) or a torn line left by a writer that died (nobody holds it).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from sessiontree.errors import StorageError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LogLock", "no_append_running"]

_POLL_S = 0.001


@contextlib.contextmanager
def no_append_running(path: Path) -> Iterator[bool]:
    """For the ``with`` block, hold off appends to a log whose lock file is ``path``, if none
    is running now; yields whether it could.

    Takes a shared ``flock`` on the lock file without waiting (writers take it exclusively
    around each append, so while it is held no append is half written). Yields ``False``
    when a writer holds the lock: an append may be in progress. A missing lock file means no
    writer has taken it yet; nothing is locked or created then (a reader must not create
    files) and ``True`` is yielded — the caller compares the file's size to tell an append
    that started meanwhile. Where ``fcntl`` does not exist (Windows) nothing is locked and
    ``True`` is yielded.

    Raises:
        nothing: a lock file that cannot be opened counts as missing.
    """
    if fcntl is None:  # pragma: no cover - Windows
        yield True
        return
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY)
    except OSError:
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        except OSError:
            yield True
            return
        yield True  # closing the descriptor releases the lock
    finally:
        os.close(fd)


class LogLock:
    """An exclusive lock on ``path`` (created 0600 on first use), kept open until :meth:`close`."""

    def __init__(self, path: Path, timeout_s: float) -> None:
        self.path = path
        self._name = os.fspath(path)
        self.timeout_s = timeout_s
        self._fd: int | None = None
        self._ino = -1  # inode of the file open as _fd
        self._pid = os.getpid()
        self._threads = threading.Lock()
        self._filelock: object | None = None

    def _after_fork(self) -> None:
        """In a forked child: the descriptor is the parent's open file description (and so
        shares its lock), and the thread lock may have been held by the parent; start anew."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)  # the child's copy only: the parent's lock stays held
        self._threads = threading.Lock()
        self._pid = os.getpid()

    def _flock(self, fd: int) -> None:
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StorageError(
                        f"timed out after {self.timeout_s:.0f} s waiting for the lock {self.path}"
                    ) from None
                time.sleep(_POLL_S)

    def _current(self) -> bool:
        """Whether the descriptor locked is the file named ``path`` now (one ``stat``)."""
        try:
            return os.stat(self._name).st_ino == self._ino
        except FileNotFoundError:
            return False

    def acquire(self) -> None:
        """Take the lock; :meth:`release` gives it back (every ``acquire`` needs one).

        Raises:
            StorageError: the lock cannot be taken in time, or the lock file cannot be opened.
        """
        if fcntl is None:  # pragma: no cover - Windows
            self._acquire_filelock()
            return
        if self._pid != os.getpid():
            self._after_fork()
        self._threads.acquire()
        try:
            while True:
                fd = self._fd
                if fd is None:
                    fd = self._fd = os.open(self._name, os.O_RDWR | os.O_CREAT, 0o600)
                    self._ino = os.fstat(fd).st_ino
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    self._flock(fd)
                if self._current():
                    return
                # the file held open is not the lock file there now: lock that one instead
                self.close()
        except OSError as exc:
            self._threads.release()
            raise StorageError(f"cannot take the lock {self.path}: {exc}") from exc
        except BaseException:
            self._threads.release()
            raise

    def release(self) -> None:
        """Release the lock taken by :meth:`acquire` (the descriptor stays open)."""
        if fcntl is None:  # pragma: no cover - Windows
            self._release_filelock()
            return
        fd = self._fd
        if fd is not None:
            try:  # noqa: SIM105 - plain try: suppress() adds a context manager per append
                fcntl.flock(fd, fcntl.LOCK_UN)
            except OSError:
                pass  # closing the descriptor releases it at the latest
        self._threads.release()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the ``with`` block (:meth:`acquire`, then :meth:`release`).

        Raises:
            StorageError: the lock cannot be taken in time, or the lock file cannot be opened.
        """
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def _acquire_filelock(self) -> None:  # pragma: no cover - Windows
        from filelock import FileLock, Timeout

        lock = FileLock(self.path, timeout=self.timeout_s, mode=0o600, preserve_lock_file=True)
        try:
            lock.acquire()
        except Timeout as exc:
            raise StorageError(
                f"timed out after {self.timeout_s:.0f} s waiting for the lock {self.path}"
            ) from exc
        except OSError as exc:
            raise StorageError(f"cannot take the lock {self.path}: {exc}") from exc
        self._filelock = lock

    def _release_filelock(self) -> None:  # pragma: no cover - Windows
        lock, self._filelock = self._filelock, None
        if lock is not None:
            lock.release()  # type: ignore[attr-defined]

    def close(self) -> None:
        """Close the descriptor (releasing nothing held: the lock is released after each use)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
