"""Reading the lines of a JSONL session file, including the damage real writers leave.

A line the strict reader refuses is read by :func:`~sessiontree.interop.lenient_json.recover`
when it can be (a lone surrogate escape, several JSON values on one line), with a warning
naming the line; anything else is unreadable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from sessiontree import _json as exact_json
from sessiontree.interop._common import Progress, unreadable
from sessiontree.interop.detect import strip_bom
from sessiontree.interop.lenient_json import recover
from sessiontree.interop.report import ImportReport

__all__ = ["line_objects", "lines_backward", "read_jsonl"]


PROGRESS_STEP = 256 * 1024
"""Bytes read between two calls of a :func:`read_jsonl` ``progress`` callback."""


def read_jsonl(
    data: bytes,
    path: Path,
    report: ImportReport,
    *,
    lenient: bool,
    progress: Progress | None = None,
    first_line: int = 1,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line_number, object)`` for every JSON-object line (1-based); blank lines are ignored.

    ``first_line``: the number of ``data``'s first line in its file (``data`` is the part of
    a file after ``first_line - 1`` whole lines, read from a sync's stored offset).

    ``progress`` is called with the number of bytes of ``data`` read so far: about every
    :data:`PROGRESS_STEP` bytes, and with ``len(data)`` once every line is read.

    A leading UTF-8 byte-order mark is skipped. A line that is not a JSON object is unreadable (see :func:`unreadable`); a last line
    without a newline that does not parse is reported as a torn final line.

    Raises:
        CorruptSessionError: an unreadable line and not ``lenient``.
    """
    size = len(data)
    data = strip_bom(data)
    offset = size - len(data)  # the byte-order mark
    reported = offset
    lines = data.split(b"\n")
    last = len(lines) + first_line - 1
    torn_possible = not data.endswith(b"\n")
    for number, raw in enumerate(lines, first_line):
        offset += len(raw) + 1
        if progress is not None and offset - reported >= PROGRESS_STEP:
            reported = offset
            progress(min(offset, size))
        if not raw.strip():
            continue
        report.lines_read += 1
        try:
            objs = [exact_json.loads(raw)]
        except exact_json.JSONDecodeError as exc:
            recovered = recover(raw)
            if recovered is None:
                torn = torn_possible and number == last
                reason = (
                    "torn final line (no newline, not valid JSON)" if torn else f"bad JSON: {exc}"
                )
                unreadable(report, path, number, reason, raw, lenient=lenient)
                continue
            objs, what = recovered
            report.warnings.append(f"line {number}: {what}")
        for obj in objs:
            if not isinstance(obj, dict):
                kind = type(obj).__name__
                unreadable(
                    report, path, number, f"not a JSON object ({kind})", raw, lenient=lenient
                )
                continue
            yield number, obj
    if progress is not None:
        progress(size)


def line_objects(data: bytes, start: int = 0) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``(start, end, object)`` of every line of ``data`` from byte ``start`` on that is a
    JSON object (``end`` after its newline); other lines are skipped."""
    pos = start
    size = len(data)
    while pos < size:
        nl = data.find(b"\n", pos)
        end = size if nl < 0 else nl + 1
        raw = data[pos:end].strip()
        if raw:
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                obj = None
            if isinstance(obj, dict):
                yield pos, end, obj
        pos = end


def lines_backward(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``(start, line)`` of the lines of ``data``, last first (without their newlines)."""
    end = len(data)
    if data.endswith(b"\n"):
        end -= 1
    while end > 0:
        start = data.rfind(b"\n", 0, end) + 1
        yield start, data[start:end]
        end = start - 1
