"""Reading a grown session file on from where the last sync stopped (docs/interop.md, "sync").

An agent appends to its session file. A sync that finds the file longer than its stored
:class:`~sessiontree.interop.positions.SyncPosition`, on the same inode and device, with the
:data:`~sessiontree.interop.positions.TAIL_BYTES` bytes before the stored size unchanged
(their SHA-256 is in the position) and a newline at the stored size, reads only the file's
first line (the header the converter needs) and the bytes from the stored size on
(:func:`read_tail`). The format's tail converter turns those lines into the drafts a read of
the whole file gives them (the same ids and line numbers), and
:func:`~sessiontree.interop._common.extend_from_tail` appends them with the new position. So
syncing ten new lines costs about what syncing a ten-line file costs, whatever the file's
size. A file rewritten in place (the check fails), a format without a tail converter, or a
tail that cannot be stored alone is read whole and reconciled by record identity, as before.

Formats read on from an offset: pi (versions 2 and 3: every line is an entry with its own
id). Claude Code and Codex records join and amend earlier lines (``open_tail`` in their
modules), so their files are read whole.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import orjson

from sessiontree.interop._common import Converted
from sessiontree.interop.pi import convert_pi_tail
from sessiontree.interop.positions import TAIL_BYTES, SyncPosition, tail_hash
from sessiontree.interop.report import ImportReport

__all__ = ["TAIL_CONVERTERS", "Tail", "read_tail"]

TailConverter = Callable[[bytes, bytes, int, Path, ImportReport], "Converted | None"]
"""``(head, tail, first_line, path, report) -> Converted | None``: the drafts of ``tail`` (the
file from line ``first_line`` on; ``head`` its first line), as a whole read gives them;
``None`` when the tail alone cannot say (read the whole file)."""


def _pi(
    head: bytes, tail: bytes, first_line: int, path: Path, report: ImportReport
) -> Converted | None:
    return convert_pi_tail(head, tail, first_line, path, report, lenient=False)


TAIL_CONVERTERS: dict[str, TailConverter] = {"pi": _pi}
"""The formats a sync reads on from a stored offset, and their tail converters. A format
listed here must have no open-turn rule (:mod:`~sessiontree.interop.settling`)."""

HEAD_LIMIT = 1 << 20
"""A first line longer than this many bytes is not looked for: the file is read whole."""


@dataclass(frozen=True)
class Tail:
    """What a sync reads of a grown file: its first line and the whole lines it gained."""

    head: bytes
    """The file's first non-blank line (without its newline)."""
    data: bytes
    """The file's bytes from the position's ``size`` on, up to its last whole line."""
    first_line: int
    """The number of ``data``'s first line in the file (1-based)."""
    st: os.stat_result
    """``os.fstat`` of the file, taken before reading."""
    end_sha256: str
    """SHA-256 (hex) of the :data:`TAIL_BYTES` bytes before the end of :attr:`data` (the
    ``tail_sha256`` of the position after it)."""


def read_tail(path: Path, position: SyncPosition) -> Tail | None:
    """The part of ``path`` a sync has not read: ``None`` when the file is not ``position``'s
    file grown by appends (another inode, not longer, the bytes before ``position.size``
    changed, no newline there, or a position without a line count), or its first line is
    longer than :data:`HEAD_LIMIT`. Reads at most :data:`TAIL_BYTES` bytes before the stored
    size and the first line besides what was appended.

    Raises:
        OSError: the file cannot be read, or is not a regular file.
    """
    if position.lines is None or position.size <= 0 or position.source_session is not None:
        return None
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError("not a regular file")
        if not position.grown(st):
            return None
        start = max(0, position.size - TAIL_BYTES)
        f.seek(start)
        before = f.read(position.size - start)
        if not before.endswith(b"\n") or tail_hash(before, len(before)) != position.tail_sha256:
            return None
        head = _first_line(f)
        if head is None:
            return None
        f.seek(position.size)
        data = _whole_lines(f.read())
    last = (before[-TAIL_BYTES:] + data[-TAIL_BYTES:])[-TAIL_BYTES:]
    return Tail(head, data, position.lines + 1, st, tail_hash(last, len(last)))


def _first_line(f: BinaryIO) -> bytes | None:
    """The first non-blank line of the open file ``f`` (read from its start), ``None`` when
    longer than :data:`HEAD_LIMIT`."""
    f.seek(0)
    chunk = f.read(min(HEAD_LIMIT, 64 * 1024))
    while True:
        text = chunk.lstrip()
        end = text.find(b"\n")
        if end >= 0:
            return text[:end]
        if len(chunk) >= HEAD_LIMIT:
            return None
        more = f.read(64 * 1024)
        if not more:
            return text
        chunk += more


def _whole_lines(data: bytes) -> bytes:
    """``data`` without a last line the agent is still writing (no newline, not valid JSON
    yet), as a whole read of a JSONL file leaves it."""
    if not data or data.endswith(b"\n"):
        return data
    cut = data.rfind(b"\n") + 1
    try:
        orjson.loads(data[cut:])
    except orjson.JSONDecodeError:
        return data[:cut]
    return data
