"""Exact JSON reading for session files and imported records.

orjson, which writes our JSON, reads an integer beyond 64 bits as a float: a tool argument
``{"n": 1180591620717411303424}`` came back from a JSONL session as ``1.1805916207174113e21``,
silently changed. Every line read from a file goes through :func:`loads` instead
(pydantic-core's parser: integers of any size stay ``int``). pydantic-core stops at ~200 levels of nesting, orjson at
1024: a deeper document is read by orjson, so a deeply nested tool argument never makes a
whole line look torn (and cut off by the next append).

A lone UTF-16 surrogate escape (``"\\ud83d"``, what JavaScript writes when it cuts a string
inside an emoji) is not strict JSON: every reader of a session file that meets a line the
strict parser refuses tries it again with :func:`without_lone_surrogates` (the character
reads as U+FFFD, as import reads it), so such a line reads the same everywhere.

Known difference left: a float literal beyond the double range (``1e400``) reads as infinity
here (orjson refused the line); such a value is refused when written back.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from pydantic_core import PydanticSerializationError, from_json, to_json

__all__ = [
    "MAX_DEPTH",
    "JSONDecodeError",
    "deep_dumps",
    "dumps",
    "loads",
    "may_be_non_finite",
    "model_json",
    "without_lone_surrogates",
]

JSONDecodeError = ValueError
"""What :func:`loads` raises for text that is not strict JSON."""


_ESCAPE = re.compile(
    rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    rb"|u[dD][89a-fA-F][0-9a-fA-F]{2}|[\s\S])"
)
"""A backslash escape of JSON text: a surrogate pair (12 bytes), a lone surrogate (6 bytes)
or any other escape (its first 2 bytes). Matching from each backslash in turn reads escaped
backslashes (``\\\\ud83d`` is a backslash and the text ``ud83d``) as what they are."""


def _replace_lone(match: re.Match[bytes]) -> bytes:
    escape = match.group()
    return b"\\ufffd" if len(escape) == 6 else escape


def without_lone_surrogates(data: bytes) -> bytes:
    """JSON text with every lone UTF-16 surrogate escape (``\\ud800``-``\\udfff`` not in a
    high-low pair) written ``\\ufffd`` (U+FFFD, the replacement character), else ``data``
    itself (the same object: ``is`` tells whether anything was replaced).

    The text keeps its length, so byte offsets into a file stay right. Import reads such a
    string the same way (:mod:`sessiontree.interop.lenient_json`).
    """
    if b"\\u" not in data:
        return data
    fixed = _ESCAPE.sub(_replace_lone, data)
    return data if fixed == data else fixed


def may_be_non_finite(data: bytes) -> bool:
    """Whether JSON text may hold a ``NaN`` or ``Infinity`` constant (``-Infinity`` too; the
    text inside a string counts as well). When it does not, pydantic-core's ``validate_json``
    (which reads those constants) and the strict :func:`loads` accept the same text.

    A capital ``N`` is rare in JSON, so the ``NaN`` test looks at each one (a one-byte search,
    a memchr): searching for the three letters walks every byte of text full of ``a``.
    ``Infinity`` is searched for from the first capital ``I`` (a memchr again), so JSON
    without one is not walked twice."""
    at = data.find(b"N")
    while at >= 0:
        if data.startswith(b"aN", at + 1):
            return True
        at = data.find(b"N", at + 1)
    first_i = data.find(b"I")
    return first_i >= 0 and data.find(b"Infinity", first_i) >= 0


def loads(data: bytes | bytearray | str) -> Any:
    """Parse one JSON document exactly (integers of any size, strings, nested containers).

    ``NaN``/``Infinity`` are refused (strict JSON, as orjson does); a duplicate key keeps its
    last value.

    Raises:
        ValueError: the text is not a JSON document.
    """
    try:
        return from_json(data, allow_inf_nan=False, cache_strings="keys")
    except ValueError as exc:
        if "recursion limit" not in str(exc):
            raise
    return orjson.loads(data)  # nested deeper than pydantic-core reads (orjson: 1024 levels)


def dumps(
    obj: Any, *, default: Any = None, indent: bool = False, non_str_keys: bool = False
) -> bytes:
    """orjson's ``dumps``, falling back to pydantic-core for what orjson cannot write.

    orjson raises ``TypeError`` for an integer beyond 64 bits (which :func:`loads` reads back
    exactly, so ``show``, ``export`` and token counting must write it) and for nesting past
    254 levels; pydantic-core writes the first and may write the second. ``default`` converts other unknown types (as in orjson); ``indent`` is 2 spaces.

    Raises:
        TypeError: a value neither library can write (and no ``default``).
    """
    option = (orjson.OPT_INDENT_2 if indent else 0) | (
        orjson.OPT_NON_STR_KEYS if non_str_keys else 0
    )
    try:
        return orjson.dumps(obj, default=default, option=option or None)
    except TypeError:
        pass  # an integer beyond 64 bits, nesting past 254 levels: pydantic-core may write it
    try:
        return to_json(obj, indent=2 if indent else None, fallback=default)
    except Exception as exc:  # pydantic-core's PydanticSerializationError and friends
        if "depth" not in str(exc):
            raise TypeError(f"cannot write as JSON: {exc}") from exc
    try:
        return deep_dumps(obj, indent=indent, default=default)
    except ValueError as exc:
        raise TypeError(f"cannot write as JSON: {exc}") from exc


MAX_DEPTH = 1024
"""Levels of nesting :func:`loads` reads (orjson's limit) and :func:`model_json` writes."""


def deep_dumps(obj: Any, *, indent: bool = False, default: Any = None) -> bytes:
    """JSON of data nested deeper than orjson (254 levels) and pydantic-core (~255) write:
    the standard library's encoder, given room for :data:`MAX_DEPTH` levels (it recurses
    once per level).

    Raises:
        ValueError: a value JSON cannot carry (NaN, a lone surrogate, an unknown type without
            ``default``), or nesting past :data:`MAX_DEPTH`.
    """
    import json
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * MAX_DEPTH + 1000))
    try:
        text = json.dumps(
            obj,
            ensure_ascii=False,
            allow_nan=False,
            indent=2 if indent else None,
            separators=None if indent else (",", ":"),
            default=default,
        )
        return text.encode()
    except (RecursionError, TypeError, ValueError, UnicodeError) as exc:
        raise ValueError(f"holds a value JSON cannot carry: {exc}") from exc
    finally:
        sys.setrecursionlimit(limit)


def _deep_json(model: Any) -> bytes:
    """A model nested deeper than pydantic-core serialises: its data as Python objects
    (python mode: the json mode has the serialiser's depth limit too), by :func:`deep_dumps`.

    Raises:
        ValueError: a value JSON cannot carry, or nesting past :data:`MAX_DEPTH`.
    """
    try:
        obj = model.model_dump(mode="python", by_alias=True, exclude_unset=True, warnings=False)
    except (PydanticSerializationError, ValueError) as exc:
        raise ValueError(f"holds a value JSON cannot carry: {exc}") from exc
    return deep_dumps(obj)


def model_json(model: Any) -> bytes:
    """A wire model's camelCase JSON (fields that were set), refusing what JSON cannot carry.

    The one check entries (:func:`sessiontree.entries.dump_entry_json`) and session metadata
    (:func:`sessiontree.repos.base.coerce_metadata`) share: non-finite numbers (NaN,
    Infinity), strings with lone surrogates, values the serialiser cannot write.

    Raises:
        ValueError: such a value; the message says which ("holds ...").
    """
    try:
        # no serializer warnings: a value of the wrong type is refused by the read-back
        # the serialiser's bytes directly (model_dump_json would decode them to str)
        data: bytes = model.__pydantic_serializer__.to_json(
            model, by_alias=True, exclude_unset=True, warnings=False
        )
    except (PydanticSerializationError, UnicodeError, ValueError) as exc:
        if "depth" not in str(exc):
            raise ValueError(f"holds a value JSON cannot carry: {exc}") from exc
        data = _deep_json(model)
    if b"NaN" in data or b"Infinity" in data:
        try:
            orjson.loads(data)  # strict JSON: a bare NaN/Infinity token fails here
        except orjson.JSONDecodeError as exc:
            raise ValueError(
                "holds a non-finite number (NaN or Infinity), which JSON cannot carry"
            ) from exc
    return data
