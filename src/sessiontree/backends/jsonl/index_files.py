"""The cache files of a JSONL repository's ``.index`` directory, read one way.

Both caches (the listing index, :mod:`~sessiontree.backends.jsonl.listing_index`, and the
sync positions, :mod:`~sessiontree.backends.jsonl.sync_index`) are files of one JSON value a
line, appended to by several processes and written anew whole. Neither is ever the truth:
a line torn by a killed writer, or a file that cannot be read, costs a lookup, never an
error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

__all__ = ["INDEX_DIR", "read_lines"]

INDEX_DIR = ".index"
"""The directory of the caches inside the repository root (no session id takes it)."""


def read_lines(path: Path) -> list[Any] | None:
    """The JSON value of every non-empty line of the cache file ``path``, in order; a line
    that is not JSON (torn) is ``None`` in its place (no cache line is ``null``). ``None``
    when the file cannot be read (missing included)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    loads = orjson.loads
    out: list[Any] = []
    for line in data.split(b"\n"):
        if line:
            try:
                out.append(loads(line))
            except orjson.JSONDecodeError:
                out.append(None)
    return out
