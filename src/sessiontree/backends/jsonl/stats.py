"""The listing sidecar of a JSONL session: what :class:`SessionInfo` needs, without the log.

The sidecar (a repository's layout names it: :mod:`sessiontree.backends.jsonl.layout`) records,
for the first ``covered`` bytes of the log, the entry count, message count, first user message
and name. Listing reads the header line and
the sidecar, then scans only the bytes appended after ``covered`` (docs/storage.md: "listing reads only
each file's header and what it needs"). The sidecar is a cache: it is written atomically
(temporary file + rename) by the storage (on create, every :data:`REFRESH_BYTES` appended, on
close) and by listing after a catch-up; a missing, stale or foreign one (different inode, or
``covered`` beyond the end of the file) is ignored and rebuilt from the log.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from sessiontree import _json as exact_json
from sessiontree.backends.jsonl.format import first_user_text, is_whole_line
from sessiontree.fold import LogFold

__all__ = [
    "REFRESH_BYTES",
    "ListingFacts",
    "Stats",
    "count_lines",
    "read_stats",
    "write_stats",
]

REFRESH_BYTES = 256 * 1024
"""A storage rewrites its sidecar after this many bytes (of log) appended since the last write."""


@dataclass
class Stats:
    """Counts over the first ``covered`` bytes (whole lines) of a session file.

    Attributes:
        ino: inode of the log the counts belong to.
        covered: bytes of the log covered, header included; always a line boundary.
        entry_count: entry lines (every type).
        message_count: ``message`` entries.
        first_message: text of the first user message, ≤ 200 characters.
        name: ``name`` of the newest ``session_info`` entry.
    """

    ino: int
    covered: int
    entry_count: int = 0
    message_count: int = 0
    first_message: str | None = None
    name: str | None = None


@dataclass
class ListingFacts:
    """What listing shows of a log, as of one state of the file: its counts and its header.

    Attributes:
        stats: the counts; ``stats.covered`` is the file's whole size.
        mtime_ns: the file's modification time with those bytes.
        created_ms: the header's time (:attr:`~sessiontree.backends.jsonl.format.Header.created_ms`).
        wire_metadata: the header's metadata as validated
            (:attr:`~sessiontree.backends.jsonl.format.Header.wire_metadata`).
    """

    stats: Stats
    mtime_ns: int
    created_ms: int
    wire_metadata: Mapping[str, Any]


def read_stats(path: Path, ino: int, size: int) -> Stats | None:
    """The sidecar at ``path`` if it belongs to the log with this inode and size, else ``None``."""
    try:
        raw = orjson.loads(path.read_bytes())
        stats = Stats(**raw)
    except (OSError, orjson.JSONDecodeError, TypeError):
        return None
    if stats.ino != ino or stats.covered > size:
        return None
    return stats


def write_stats(path: Path, stats: Stats) -> None:
    """Write the sidecar atomically (mode 0600). Best effort: an ``OSError`` is ignored."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, orjson.dumps(asdict(stats)))
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def count_lines(stats: Stats, block: bytes) -> None:
    """Add the whole lines of ``block`` (the log bytes after ``stats.covered``) to ``stats``.

    Counting stops before a line that does not parse and before a final line without a
    newline that does not parse (a whole one counts, see
    :func:`~sessiontree.backends.jsonl.format.is_whole_line`): the storage cuts such a torn
    tail before its next append, so ``covered`` must
    never move past it (listing must not fail because of it either). Lines are only
    orjson-parsed, never validated, except the first user message.
    """
    loads = orjson.loads
    fold = LogFold(
        entry_count=stats.entry_count,
        message_count=stats.message_count,
        first_message=stats.first_message,
        name=stats.name,
    )
    pos = 0
    while True:
        end = block.find(b"\n", pos)
        if end < 0:
            break
        line = block[pos:end]
        if line.strip():
            try:
                obj: Any = loads(line)
            except orjson.JSONDecodeError:
                fixed = exact_json.without_lone_surrogates(line)
                if fixed is line:
                    break
                try:  # read as storage reads it (its lone surrogates as U+FFFD)
                    obj = loads(fixed)
                except orjson.JSONDecodeError:
                    break
            if type(obj) is dict and type(obj.get("id")) is str:
                _count(fold, obj)
        pos = end + 1
    tail = block[pos:]
    if tail and is_whole_line(tail):  # a whole last line without its newline: a line
        obj = orjson.loads(exact_json.without_lone_surrogates(tail))
        if type(obj) is dict and type(obj.get("id")) is str:
            _count(fold, obj)
        pos = len(block)
    stats.covered += pos
    stats.entry_count, stats.message_count = fold.entry_count, fold.message_count
    stats.first_message, stats.name = fold.first_message, fold.name


def _count(fold: LogFold, obj: dict[str, Any]) -> None:
    kind = obj.get("type")
    fold.add(
        kind if isinstance(kind, str) else "", obj["id"], obj.get, lambda: first_user_text(obj)
    )
