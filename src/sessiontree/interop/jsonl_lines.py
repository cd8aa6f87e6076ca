"""Reading the lines of a JSONL session file, including the damage real writers leave.

A line the strict reader refuses is not given up at once: a lone UTF-16 surrogate escape
(``\\ud83d``, JavaScript cutting a string inside an emoji) is read with U+FFFD in its place,
and several complete JSON values on one line (a writer that died before its newline) are read
in order. Both are reported as warnings naming the line; anything else is unreadable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sessiontree import _json as exact_json
from sessiontree.interop._common import unreadable
from sessiontree.interop.detect import strip_bom
from sessiontree.interop.report import ImportReport

__all__ = ["read_jsonl"]


def read_jsonl(
    data: bytes, path: Path, report: ImportReport, *, lenient: bool
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line_number, object)`` for every JSON-object line (1-based); blank lines are ignored.

    A leading UTF-8 byte-order mark is skipped. A line that is not a JSON object is unreadable (see :func:`unreadable`); a last line
    without a newline that does not parse is reported as a torn final line.

    Raises:
        CorruptSessionError: an unreadable line and not ``lenient``.
    """
    data = strip_bom(data)
    lines = data.split(b"\n")
    last = len(lines)
    torn_possible = not data.endswith(b"\n")
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        report.lines_read += 1
        try:
            objs = [exact_json.loads(raw)]
        except exact_json.JSONDecodeError as exc:
            recovered = _recover(raw)
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


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_lone_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` with every lone UTF-16 surrogate in its strings (keys too) replaced by U+FFFD,
    and how many were replaced."""
    if isinstance(value, str):
        return _LONE_SURROGATE.subn("\ufffd", value)
    if isinstance(value, list):
        items = [_no_lone_surrogates(v) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        count = 0
        for k, v in value.items():
            k2, n1 = _no_lone_surrogates(k)
            v2, n2 = _no_lone_surrogates(v)
            out[k2] = v2
            count += n1 + n2
        return out, count
    return value, 0


def _recover(raw: bytes) -> tuple[list[Any], str] | None:
    """The JSON values of a line the strict reader refused, and what was done; ``None`` when
    it is not JSON.

    Two faults real writers leave are read: a lone surrogate escape (``\\ud83d``, JavaScript
    cutting a string inside an emoji; the character becomes U+FFFD) and several complete
    values on one line (a writer that died before its newline; read in order).
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    decoder = json.JSONDecoder()
    values: list[Any] = []
    pos = 0
    try:
        while pos < len(text):
            value, pos = decoder.raw_decode(text, pos)
            values.append(value)
            while pos < len(text) and text[pos] in " \t\r":
                pos += 1
    except ValueError:
        return None
    fixed = [_no_lone_surrogates(v) for v in values]
    replaced = sum(n for _, n in fixed)
    what = []
    if len(values) > 1:
        what.append(f"{len(values)} JSON values on one line, read in order")
    if replaced:
        what.append(f"{replaced} lone surrogate escape(s) read as U+FFFD")
    if not what:
        return None  # the strict reader refused it for another reason (e.g. NaN, a BOM)
    return [v for v, _ in fixed], "; ".join(what)
