"""Session log files: creating one whole-headed file, removing one, fsyncing a directory.

Files are created 0600. What a *repository* keeps beside a log (its directory, the listing
sidecar) is the repository's layout, not this module's: :mod:`sessiontree.repos.jsonl`.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Literal

from sessiontree.ids import new_id, now_iso
from sessiontree.metadata import SessionMetadata
from sessiontree.storage.jsonl.format import build_header, parse_header
from sessiontree.storage.jsonl.stats import STATS_NAME

__all__ = [
    "LOG_NAME",
    "Durability",
    "check_session_log",
    "create_session_file",
    "fsync_dir",
    "lock_path",
    "remove_session_files",
]

Durability = Literal["none", "flush", "fsync"]
"""When appended lines are forced to disk (see :mod:`sessiontree.storage.jsonl.storage`)."""

LOG_NAME = "session.jsonl"
"""The log's file name inside a repository's session directory."""


def lock_path(path: Path) -> Path:
    """The lock file that serialises appends to the log at ``path``: ``<file>.lock`` beside it."""
    return path.with_name(path.name + ".lock")


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


def create_session_file(
    path: Path, session_id: str, metadata: SessionMetadata, durability: Durability = "flush"
) -> None:
    """Create a session file holding only its header, atomically and exclusively (mode 0600).

    The header is written to a temporary file in the same directory and hard-linked into
    place, so the file never exists without a whole header.

    Raises:
        FileExistsError: ``path`` exists.
        OSError: the file cannot be written.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{new_id()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.write(fd, build_header(session_id, metadata, now_iso()))
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
    lock = lock_path(path)
    path.unlink(missing_ok=True)
    lock.unlink(missing_ok=True)
    if in_repo and path.name == LOG_NAME:
        directory = path.parent
        (directory / STATS_NAME).unlink(missing_ok=True)
        for tmp in directory.glob(f".{STATS_NAME}.*.tmp"):
            tmp.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            directory.rmdir()  # only when empty
