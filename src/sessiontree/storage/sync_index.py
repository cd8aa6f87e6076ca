"""The sync-position index: which source file each session was synced from, and how far.

:func:`sessiontree.interop.syncing.sync_sources` stores a session's sync position as a
``leaf`` entry carrying a JSON object under :data:`POSITION_KEY` (written in the same append as
the entries read from the file; :mod:`sessiontree.interop.positions`). Finding it again means
opening the session; a repository that also keeps an index of the newest position of every
session implements :class:`SyncPositionIndex`, so an unchanged re-sync reads one table (SQL:
``sync_positions``, written in the append's transaction), a dict (memory) or one cache file
(JSONL: ``.index/sync-positions.jsonl``, trusted only while the session's log is unchanged)
instead of opening every session.

The index never decides alone: a session it does not hold is looked up in its entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from sessiontree.entries import Entry

__all__ = ["POSITION_KEY", "SyncPositionIndex", "newest_position"]

POSITION_KEY = "syncPosition"
"""The key of a ``leaf`` entry's extra data that holds a sync position (a JSON object)."""


def newest_position(entries: Sequence[Entry]) -> dict[str, Any] | None:
    """The JSON object of the last sync-position ``leaf`` entry among ``entries``; ``None``
    when there is none."""
    for entry in reversed(entries):
        if entry.type == "leaf":
            value = (entry.model_extra or {}).get(POSITION_KEY)
            if isinstance(value, dict):
                return value
    return None


@runtime_checkable
class SyncPositionIndex(Protocol):
    """A repository that indexes the newest sync position of its sessions."""

    async def sync_positions(self) -> dict[str, dict[str, Any]]:
        """Session id → the newest sync position stored in it (the JSON object under
        :data:`POSITION_KEY`), for every session the index is sure of; a session missing
        here may still hold one (read its ``leaf`` entries). Reads no session.

        Raises:
            StorageError: the store cannot be read.
        """
        ...
