"""What every backend that keeps files shares: private modes and the reason a file cannot be written.

Conversations are private: every directory a store creates is made ``0700`` and every file
``0600`` (the process umask can only narrow that), whatever the backend.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "create_private_file",
    "file_kind",
    "make_private_dirs",
    "on_read_only_file_system",
    "read_only_reason",
    "replace_private_file",
    "write_all",
]

DIR_MODE = 0o700
"""Mode of every directory a store creates."""
FILE_MODE = 0o600
"""Mode of every file a store creates."""


def make_private_dirs(directory: Path) -> None:
    """Create ``directory`` and any missing parents, each ``0700``; existing ones are left as
    they are.

    Raises:
        OSError: a directory cannot be created (``FileExistsError``: a parent is a file).
    """
    missing: list[Path] = []
    d = directory
    while not d.exists():
        missing.append(d)
        if d.parent == d:
            break
        d = d.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, DIR_MODE)
        except FileExistsError:
            if not d.is_dir():
                raise


def create_private_file(path: Path) -> bool:
    """Create an empty ``0600`` file at ``path`` unless something is there already.

    Returns:
        Whether the file was created.

    Raises:
        OSError: it cannot be created.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def on_read_only_file_system(path: Path) -> bool:
    """``path`` lies on a file system mounted read-only (nobody can write there, root neither)."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def read_only_reason(path: Path) -> str | None:
    """Why ``path`` (an existing file) must not be written, ``None`` when it may.

    A read-only file system is named as such; else a file this process may not write, or one
    marked read-only (no write permission bit: root could write it, but its owner said no).
    """
    if on_read_only_file_system(path):
        return "it is on a read-only file system"
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if not os.access(path, os.W_OK) or not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return "the file is read-only (no write permission)"
    return None


def file_kind(mode: int) -> str:
    """What kind of file ``mode`` (``st_mode``) describes, for messages."""
    for test, kind in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to the open file ``fd`` (``os.write`` may write less).

    Raises:
        OSError: a write fails or writes nothing.
    """
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(f"short write: {written} bytes")
        view = view[written:]


def replace_private_file(path: Path, data: bytes, *, fsync: bool = False) -> None:
    """Replace ``path`` by a ``0600`` file holding ``data``: written to a temporary file
    beside it (fsynced first with ``fsync``), then renamed over it, so a reader sees the old
    file or the new one whole. The temporary file is removed when anything fails.

    Raises:
        OSError: it cannot be written or renamed.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        try:
            write_all(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
