"""Session log files: creating one whole-headed file, removing one, fsyncing a directory.

Files are created 0600. Where logs live and what is kept beside them (a directory per
session, a listing sidecar) is a :class:`LogLayout` the storage is given — a repository's
(:mod:`sessiontree.backends.jsonl.layout`) or :data:`STANDALONE` for a log opened on its own.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Protocol

from sessiontree.backends.jsonl.format import build_header, parse_header
from sessiontree.backends.jsonl.stats import ListingFacts
from sessiontree.ids import iso_from_ms, new_id, now_iso
from sessiontree.metadata import SessionMetadata
from sessiontree.storage.private_files import replace_private_file, write_all

__all__ = [
    "STANDALONE",
    "Durability",
    "LogLayout",
    "check_session_log",
    "create_session_file",
    "draft_path",
    "fsync_dir",
    "lease_path",
    "lock_path",
    "read_draft",
    "read_lease",
    "remove_session_log",
    "set_mtime",
    "write_draft",
    "write_lease",
]

Durability = Literal["none", "flush", "fsync"]
"""When appended lines are forced to disk (see :mod:`sessiontree.backends.jsonl.storage`)."""


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


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def set_mtime(path: Path, when: datetime) -> None:
    """Set the file's modification time (what listing reads as ``modified_at``) to ``when``
    (aware), keeping its access time.

    Raises:
        OSError: the file cannot be changed.
    """
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, (when - _EPOCH) // timedelta(microseconds=1) * 1000))


def create_session_file(
    path: Path,
    session_id: str,
    metadata: SessionMetadata,
    durability: Durability = "flush",
    lines: Sequence[bytes] = (),
    *,
    created_at: datetime | None = None,
) -> bytes:
    """Create a session file holding its header and ``lines``, atomically and exclusively
    (mode 0600); returns the header line written (with its newline).

    The content is written to a temporary file in the same directory and hard-linked into
    place, so the file never exists without its whole header and every line: a session made
    by an import or a fork appears whole or not at all, whenever the process dies.
    ``created_at`` (aware; default now) is the header's ``timestamp`` (milliseconds) and the
    file's modification time.

    Raises:
        FileExistsError: ``path`` exists.
        OSError: the file cannot be written.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{new_id()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            stamp = now_iso() if created_at is None else iso_from_ms(_ms(created_at))
            header = build_header(session_id, metadata, stamp)
            write_all(fd, b"".join([header, *lines]))
            if durability != "none":
                os.fsync(fd)
        finally:
            os.close(fd)
        if created_at is not None:
            set_mtime(tmp, created_at)
        os.link(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    if durability != "none":
        fsync_dir(path.parent)
    return header


def _ms(when: datetime) -> int:
    return (when - _EPOCH) // timedelta(milliseconds=1)


def check_session_log(path: Path) -> None:
    """Raise unless ``path`` starts with a session header (what a repository insists on
    before it removes a session).

    Raises:
        CorruptSessionError: not a session file.
        OSError: the file cannot be read (``FileNotFoundError`` when it is missing).
    """
    with open(path, "rb") as f:
        first = f.readline(1 << 20)
    parse_header(first, path)


def draft_path(log: Path) -> Path:
    """The draft sidecar of ``log``: ``<log name>.draft`` beside it (``session.jsonl.draft``).

    It holds the JSON of the session's draft reply (:class:`sessiontree.drafts.Draft`) and
    is replaced whole by a rename, so a reader sees the old draft or the new one.
    """
    return log.with_name(f"{log.name}.draft")


def read_draft(log: Path) -> bytes | None:
    """The draft sidecar's bytes, ``None`` when there is none.

    Raises:
        OSError: it exists but cannot be read.
    """
    return _read_sidecar(draft_path(log))


def _read_sidecar(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def write_draft(log: Path, body: bytes | None, durability: Durability) -> None:
    """Replace the draft sidecar of ``log`` with ``body`` (mode 0600; ``None`` removes it):
    written to a temporary file, then renamed over it (fsynced first with ``fsync``).

    Raises:
        OSError: it cannot be written.
    """
    _replace(draft_path(log), body, durability)


def lease_path(log: Path) -> Path:
    """The writer lease file of ``log``: ``<log name>.lease`` beside it. It holds the JSON of
    the session's :class:`~sessiontree.storage.lease.LeaseRecord`, is read and replaced
    (whole, by a rename) only under the append lock, and is kept after a release (the fence
    must only grow)."""
    return log.with_name(f"{log.name}.lease")


def read_lease(log: Path) -> bytes | None:
    """The lease file's bytes, ``None`` when there is none.

    Raises:
        OSError: it exists but cannot be read.
    """
    return _read_sidecar(lease_path(log))


def write_lease(log: Path, body: bytes, durability: Durability) -> None:
    """Replace the lease file of ``log`` with ``body`` (as :func:`write_draft`).

    Raises:
        OSError: it cannot be written.
    """
    _replace(lease_path(log), body, durability)


def _replace(target: Path, body: bytes | None, durability: Durability) -> None:
    """Replace ``target`` with ``body`` (``None`` removes it) through a renamed temporary file."""
    if body is None:
        target.unlink(missing_ok=True)
        return
    replace_private_file(target, body, fsync=durability == "fsync")


def remove_session_log(path: Path) -> None:
    """Remove a session log, its lock file, its draft sidecar and its lease file — nothing else.

    Raises:
        OSError: a file cannot be removed.
    """
    lock = lock_path(path)
    path.unlink(missing_ok=True)
    lock.unlink(missing_ok=True)
    for side in (draft_path(path), lease_path(path)):
        side.unlink(missing_ok=True)
        for tmp in path.parent.glob(f".{side.name}.*.tmp"):
            tmp.unlink(missing_ok=True)


class LogLayout(Protocol):
    """Where session logs and the files kept beside them live.

    A repository decides this (:class:`sessiontree.backends.jsonl.layout.RepoLayout`: one
    directory per session, with a listing sidecar); the storage only asks. A log opened on
    its own uses :data:`STANDALONE`.
    """

    def stats_path(self, log: Path) -> Path | None:
        """The listing sidecar the storage keeps current for ``log``, or ``None`` for none."""
        ...

    def new_log(self, session_id: str, beside: Path) -> Path:
        """Make room for a new session's log (a fork of the log at ``beside``); its path.

        Raises:
            OSError: the room cannot be made.
        """
        ...

    def created(self, log: Path, durability: Durability) -> None:
        """After the new ``log`` was created: make it durable as ``durability`` asks.

        Raises:
            OSError: it cannot be made durable.
        """
        ...

    def remove(self, log: Path) -> None:
        """Remove the session whose log is ``log``: the log, its lock and what the layout keeps.

        Raises:
            OSError: a file cannot be removed.
        """
        ...

    def writing(self, log: Path, writer: str) -> None:
        """Before the first write of ``writer`` (one storage object in one process) to
        ``log``: from now until :meth:`settled` names it, the log may change at any time.
        Best effort; raises nothing."""
        ...

    def settled(self, log: Path, writer: str | None, facts: ListingFacts | None) -> None:
        """``writer`` is done with ``log`` (``None``: the log was just created), which then
        showed ``facts`` (``None``: not known). Best effort; raises nothing."""
        ...

    def positioned(self, log: Path, position: dict[str, Any]) -> None:
        """An append to ``log`` (under its lock, just written) stored the sync position
        ``position`` (:mod:`sessiontree.storage.sync_index`). Best effort; raises nothing."""
        ...


class _Standalone:
    """A log on its own: no sidecar; a fork is the sibling file ``<new id>.jsonl``."""

    def stats_path(self, log: Path) -> Path | None:
        return None

    def new_log(self, session_id: str, beside: Path) -> Path:
        return beside.parent / f"{session_id}.jsonl"

    def created(self, log: Path, durability: Durability) -> None:
        pass  # create_session_file has fsynced the directory that lists the file

    def remove(self, log: Path) -> None:
        remove_session_log(log)

    def writing(self, log: Path, writer: str) -> None:
        pass

    def settled(self, log: Path, writer: str | None, facts: ListingFacts | None) -> None:
        pass

    def positioned(self, log: Path, position: dict[str, Any]) -> None:
        pass


STANDALONE: LogLayout = _Standalone()
"""The layout of a log opened on its own (any pi v3 file)."""
