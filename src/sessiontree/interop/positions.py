"""How far a sync has read each source file, stored with the entries it produced (docs/interop.md).

A sync position is a ``leaf`` entry that moves the leaf to where it already is (so it changes
nothing in the tree) and carries, under the key ``syncPosition``, the file's identity and
size as read. It is written in the same :meth:`append_entries` call (or the same
:meth:`SessionRepo.create`) as the entries read from the file, so on every backend the
position and the entries are stored together or not at all: a sync killed at any moment
leaves either both or neither, and the next sync starts from what is stored.

Its id is made from the session, the file's identity and its size, so two syncs that read
the same file state make the same entry, and the second one's append is refused as a
duplicate instead of storing a copy.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sessiontree.entries import Entry, LeafEntry
from sessiontree.ids import iso_from_ms
from sessiontree.storage.sync_index import POSITION_KEY

__all__ = [
    "POSITION_KEY",
    "TAIL_BYTES",
    "SyncPosition",
    "position_entry",
    "position_of",
    "tail_hash",
]


TAIL_BYTES = 4096
"""How many bytes before a position's ``size`` its ``tail_sha256`` covers."""


@dataclass(frozen=True)
class SyncPosition:
    """A source file as a sync last read it.

    The file is unchanged when ``(size, mtime_ns, inode, device)`` are what ``os.stat``
    says now (read nothing). It grew by appends when it is longer and its bytes
    ``[size - TAIL_BYTES, size)`` still hash to ``tail_sha256``.
    """

    path: str
    """The file, an absolute path."""
    size: int
    """Its size in bytes when read."""
    mtime_ns: int
    """Its modification time when read, ns since the Unix epoch."""
    inode: int
    """Its inode number (``st_ino``); a file replaced by another (rename over it) has another."""
    device: int
    """The device it is on (``st_dev``)."""
    tail_sha256: str
    """SHA-256 (hex) of its last :data:`TAIL_BYTES` bytes (all of them when shorter)."""
    source_session: str | None = None
    """For a database holding several sessions, the one this position is of."""
    lines: int | None = None
    """How many newlines its first ``size`` bytes hold (the number of the line after them,
    minus one), so a sync reading on from ``size`` numbers lines as a whole read does;
    ``None`` in a position stored before it was kept (such a file is read whole)."""

    @classmethod
    def of(
        cls, path: Path, st: os.stat_result, data: bytes, source_session: str | None = None
    ) -> SyncPosition:
        """The position of ``path`` read whole as ``data`` when ``os.stat`` gave ``st``."""
        return cls(
            path=str(path),
            size=len(data),
            mtime_ns=st.st_mtime_ns,
            inode=st.st_ino,
            device=st.st_dev,
            tail_sha256=tail_hash(data, len(data)),
            source_session=source_session,
            lines=data.count(b"\n"),
        )

    def unchanged(self, st: os.stat_result) -> bool:
        """Whether ``st`` (``os.stat`` of the file now) is the file as read: same size,
        modification time, inode and device. No content is read."""
        return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev) == (
            self.size,
            self.mtime_ns,
            self.inode,
            self.device,
        )

    def grown(self, st: os.stat_result) -> bool:
        """Whether ``st`` may be the file as read with lines appended: the same inode and
        device, and longer. The bytes before :attr:`size` must still be checked
        (:attr:`tail_sha256`)."""
        return st.st_ino == self.inode and st.st_dev == self.device and st.st_size > self.size

    def to_json(self) -> dict[str, Any]:
        """The camelCase JSON object stored under :data:`POSITION_KEY`."""
        d = asdict(self)
        return {
            "path": d["path"],
            "size": d["size"],
            "mtimeNs": d["mtime_ns"],
            "inode": d["inode"],
            "device": d["device"],
            "tailSha256": d["tail_sha256"],
            "sourceSession": d["source_session"],
            "lines": d["lines"],
        }

    @classmethod
    def from_json(cls, value: object) -> SyncPosition | None:
        """The position a stored JSON object holds; ``None`` when it is not one."""
        if not isinstance(value, dict):
            return None
        try:
            source = value.get("sourceSession")
            lines = value.get("lines")
            return cls(
                path=str(value["path"]),
                size=int(value["size"]),
                mtime_ns=int(value["mtimeNs"]),
                inode=int(value["inode"]),
                device=int(value["device"]),
                tail_sha256=str(value["tailSha256"]),
                source_session=source if isinstance(source, str) else None,
                lines=lines if type(lines) is int and lines >= 0 else None,
            )
        except (KeyError, TypeError, ValueError):
            return None


def tail_hash(data: bytes, end: int) -> str:
    """SHA-256 (hex) of ``data[end - TAIL_BYTES:end]`` (from 0 when ``end`` is smaller)."""
    return hashlib.sha256(data[max(0, end - TAIL_BYTES) : end]).hexdigest()


def position_entry(position: SyncPosition, leaf: str | None) -> LeafEntry:
    """The ``leaf`` entry that stores ``position``: it moves the leaf to ``leaf`` (where it
    is), so the tree is unchanged. Dated by the file's modification time; its id is made from
    the position and ``leaf``, the same in every process."""
    key = f"{position.to_json()}>{leaf}".encode()
    digest = hashlib.sha256(key).digest()
    ms = min(max(position.mtime_ns // 1_000_000, 0), (1 << 48) - 1)
    rand_a = int.from_bytes(digest[:2], "big") & 0xFFF
    rand_b = int.from_bytes(digest[2:10], "big") & ((1 << 62) - 1)
    value = (ms << 80) | (0x7 << 76) | (rand_a << 64) | (0b10 << 62) | rand_b
    return LeafEntry.model_validate(
        {
            "type": "leaf",
            "id": str(uuid.UUID(int=value)),
            "parentId": leaf,
            "targetId": leaf,
            "timestamp": iso_from_ms(ms),
            POSITION_KEY: position.to_json(),
        }
    )


def position_of(entry: Entry) -> SyncPosition | None:
    """The sync position an entry stores; ``None`` for any other entry."""
    if entry.type != "leaf":
        return None
    return SyncPosition.from_json((entry.model_extra or {}).get(POSITION_KEY))
