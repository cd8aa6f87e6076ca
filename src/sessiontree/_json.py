"""Exact JSON reading for session files and imported records.

orjson, which writes our JSON, reads an integer beyond 64 bits as a float: a tool argument
``{"n": 1180591620717411303424}`` came back from a JSONL session as ``1.1805916207174113e21``,
silently changed. Every line read from a file goes through :func:`loads` instead
(pydantic-core's parser: integers of any size stay ``int``; ~1.35x orjson's time on the real
pi session, under 1 ms for 2.4 MB).
"""

from __future__ import annotations

from typing import Any

from pydantic_core import from_json

__all__ = ["JSONDecodeError", "loads"]

JSONDecodeError = ValueError
"""What :func:`loads` raises for text that is not strict JSON."""


def loads(data: bytes | bytearray | str) -> Any:
    """Parse one JSON document exactly (integers of any size, strings, nested containers).

    ``NaN``/``Infinity`` are refused (strict JSON, as orjson does); a duplicate key keeps its
    last value.

    Raises:
        ValueError: the text is not a JSON document.
    """
    return from_json(data, allow_inf_nan=False)
