"""JSON that the strict reader refuses but real agent files contain (docs/interop.md).

Two faults are read rather than refused: a lone UTF-16 surrogate escape (``\\ud83d``, what
JavaScript writes when it cuts a string inside an emoji; the character becomes U+FFFD) and
several complete JSON values one after the other (a writer that died before its newline).
"""

from __future__ import annotations

import json
import re
from typing import Any

from sessiontree import _json as exact_json

__all__ = ["load_document", "recover"]


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


def recover(raw: bytes) -> tuple[list[Any], str] | None:
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
    pos = len(text) - len(text.lstrip())
    try:
        while pos < len(text):
            value, pos = decoder.raw_decode(text, pos)
            values.append(value)
            while pos < len(text) and text[pos] in " \t\r\n":
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


def load_document(data: bytes) -> tuple[Any, str | None]:
    """One JSON document: the strict reading, else one with lone surrogates as U+FFFD.

    Returns ``(value, what was done or None)``.

    Raises:
        exact_json.JSONDecodeError: the bytes are not one JSON document.
    """
    try:
        return exact_json.loads(data), None
    except exact_json.JSONDecodeError:
        recovered = recover(data)
        if recovered is None or len(recovered[0]) != 1:
            raise
        return recovered[0][0], recovered[1]
