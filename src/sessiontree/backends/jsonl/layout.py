"""The layout of a JSONL repository: ``<root>/<session_id>/session.jsonl`` and what lies beside it.

Each session directory (mode 0700, named by the session id) holds the log (a pi v3 file, see
:mod:`sessiontree.backends.jsonl.storage`), its lock file ``session.jsonl.lock`` and the
listing sidecar ``stats.json`` (:mod:`sessiontree.backends.jsonl.stats`); ``<root>/.index``
holds the listing index (:mod:`sessiontree.backends.jsonl.listing_index`). The storage is given a
:class:`RepoLayout` and asks it where a fork's log goes and what to remove, and tells it when
it starts and stops writing a session (which the layout notes in the listing index).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from sessiontree.backends.jsonl.files import Durability, fsync_dir, remove_session_log
from sessiontree.backends.jsonl.listing_index import ListingIndex
from sessiontree.backends.jsonl.stats import ListingFacts
from sessiontree.backends.jsonl.sync_index import SyncPositionCache
from sessiontree.ids import check_session_id

__all__ = ["LOG_NAME", "STATS_NAME", "TRASH_NAME", "RepoLayout"]

LOG_NAME = "session.jsonl"
"""The log's file name inside a session directory."""

STATS_NAME = "stats.json"
"""The listing sidecar's file name inside a session directory."""

TRASH_NAME = ".trash"
"""The trash directory under the root: a trashed session's directory moves there whole,
renamed ``<session id>.<Unix microseconds it was trashed>``; a name no session id can have
(``.`` is not in ``[A-Za-z0-9_-]``), so listing never shows it."""


class RepoLayout:
    """One directory per session under ``root``; the :class:`~sessiontree.backends.jsonl.files.LogLayout`
    of :class:`~sessiontree.backends.jsonl.repo.JSONLRepo`.

    Attributes:
        root: the repository directory (absolute).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.index = ListingIndex(root)
        self.sync_positions = SyncPositionCache(root)

    def log_path(self, session_id: str) -> Path:
        """``<root>/<session_id>/session.jsonl``.

        Raises:
            InvalidSessionIdError: an id that is not safe as a directory name.
        """
        return self.root / check_session_id(session_id) / LOG_NAME

    def stats_path(self, log: Path) -> Path | None:
        """The sidecar beside ``log``."""
        return log.parent / STATS_NAME

    def new_log(self, session_id: str, beside: Path) -> Path:
        """Create the session directory (0700) of a new session; its log's path.

        Raises:
            OSError: the directory exists or cannot be made.
        """
        directory = self.root / session_id
        os.mkdir(directory, 0o700)
        return directory / LOG_NAME

    def created(self, log: Path, durability: Durability) -> None:
        """fsync the root, which now lists the new session directory (unless ``none``)."""
        if durability != "none":
            fsync_dir(self.root)

    def remove(self, log: Path) -> None:
        """Remove a session's log and the files sessiontree keeps beside it — nothing else.

        The session directory is removed too, but only once it is empty: a file someone else
        put there survives (and so does the directory). Never ``rmtree``.

        Raises:
            OSError: a file cannot be removed.
        """
        remove_session_log(log)
        if log.name == LOG_NAME:
            directory = log.parent
            (directory / STATS_NAME).unlink(missing_ok=True)
            for tmp in directory.glob(f".{STATS_NAME}.*.tmp"):
                tmp.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                directory.rmdir()  # only when empty
            self.index.removed(directory.name)

    def writing(self, log: Path, writer: str) -> None:
        """Note in the listing index that ``writer`` is about to change the session."""
        if log.name == LOG_NAME:
            self.index.writing(log.parent.name, writer)

    def settled(self, log: Path, writer: str | None, facts: ListingFacts | None) -> None:
        """Note in the listing index what the session shows and that ``writer`` is done."""
        if log.name == LOG_NAME:
            self.index.settled(log.parent.name, writer, facts)

    def positioned(self, log: Path, position: dict[str, Any]) -> None:
        """Note the session's newest sync position in the cache, with the log's inode and
        size now (one ``stat``)."""
        if log.name == LOG_NAME:
            try:
                st = os.stat(log)
            except OSError:
                return
            self.sync_positions.note(log.parent.name, st.st_ino, st.st_size, position)
