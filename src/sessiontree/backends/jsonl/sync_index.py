"""The sync-position cache of a JSONL repository (:mod:`sessiontree.storage.sync_index`).

``<root>/.index/sync-positions.jsonl`` (0600): one line per append that stored a sync
position, ``[session_id, ino, size, position]``: the log of the session had inode ``ino`` and
was ``size`` bytes long once that append was written, and its newest sync position was
``position``. The log stays the truth (the position is its ``leaf`` entry): a line is
trusted only while the log still has that inode and size (an append-only log of the same
inode and size holds the same entries; its modification time is set by imports, so it is not
compared). A session whose line is missing or does not match is looked up in its log by the
caller; a kill between the log's append and the note, a lost note, a deleted or broken cache
file cost only that.

Notes are appended with one ``write`` each (``O_APPEND``); a read that finds many more lines
than sessions writes the file anew with the lines still true (temporary file + rename; a
note appended meanwhile may be lost, which again costs only a lookup).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from sessiontree.backends.jsonl.index_files import INDEX_DIR, read_lines
from sessiontree.storage.private_files import DIR_MODE, replace_private_file, write_all

__all__ = ["SyncPositionCache"]

log = logging.getLogger(__name__)

_COMPACT_SLACK = 64
"""Lines beyond twice the sessions a read tolerates before it writes the file anew."""


class SyncPositionCache:
    """The cache file of one repository root (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.directory = root / INDEX_DIR
        self.path = self.directory / "sync-positions.jsonl"

    def note(self, session_id: str, ino: int, size: int, position: dict[str, Any]) -> None:
        """Append that the session's log, at inode ``ino`` and ``size`` bytes, has
        ``position`` as its newest sync position. Best effort; raises nothing."""
        line = orjson.dumps([session_id, ino, size, position]) + b"\n"
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.directory, DIR_MODE)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                write_all(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:
            log.debug("cannot note a sync position in %s: %s", self.path, exc)

    def read(self, log_path: Callable[[str], Path]) -> dict[str, dict[str, Any]]:
        """Session id → newest sync position, for the sessions whose log (``log_path(id)``)
        still has the inode and size noted (one ``stat`` each); reads no log."""
        lines = read_lines(self.path) or []
        newest: dict[str, tuple[int, int, dict[str, Any]]] = {}
        for item in lines:
            if type(item) is list and len(item) == 4:  # else a torn line of a killed writer
                sid, ino, size, position = item
                if isinstance(sid, str) and isinstance(position, dict):
                    newest[sid] = (ino, size, position)
        out: dict[str, dict[str, Any]] = {}
        for sid, (ino, size, position) in newest.items():
            try:
                st = os.stat(log_path(sid))
            except (OSError, ValueError):
                continue
            if (st.st_ino, st.st_size) == (ino, size):
                out[sid] = position
        if len(lines) > 2 * len(out) + _COMPACT_SLACK:
            self._rewrite({sid: newest[sid] for sid in out})
        return out

    def _rewrite(self, kept: dict[str, tuple[int, int, dict[str, Any]]]) -> None:
        data = b"".join(orjson.dumps([sid, *row]) + b"\n" for sid, row in kept.items())
        try:
            replace_private_file(self.path, data)
        except OSError as exc:
            log.debug("cannot rewrite %s: %s", self.path, exc)
