"""Argument checks every public method shares, so each backend refuses the same inputs alike.

Each check raises :class:`~sessiontree.errors.InvalidArgumentError` naming the argument and
what it got, before anything is read or written (``limit="5"`` used to be a raw
``TypeError`` on one backend and an empty list on another).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sessiontree.errors import InvalidArgumentError
from sessiontree.ids import entry_id_problem

__all__ = [
    "MAX_COUNT",
    "MAX_ENTRY_ID_CHARS",
    "check_bool",
    "check_count",
    "check_entry_id",
    "check_text",
    "check_types",
]

MAX_COUNT = 2**63 - 1
"""The largest count argument (``limit``, ``offset``, ...) any backend takes: the largest
SQLite ``INTEGER`` and PostgreSQL ``bigint``. Larger ones are refused on every backend, not
passed on for the driver to fail on."""

MAX_ENTRY_ID_CHARS = 512
"""The longest entry id any backend stores (PostgreSQL's unique index holds at most ~2.7 kB
per row, and an id may be 4 bytes a character): longer ids are refused on every backend."""


def _got(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_entry_id(value: object, what: str, *, optional: bool = False) -> None:
    """An entry id argument: a non-empty ``str`` (or ``None`` when ``optional``) that
    :func:`~sessiontree.ids.entry_id_problem` accepts (no NUL, no lone surrogate).

    Raises:
        InvalidArgumentError: anything else.
    """
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        kind = "an entry id (non-empty str)" + (" or None" if optional else "")
        raise InvalidArgumentError(f"{what} must be {kind}, not {_got(value)}")
    problem = entry_id_problem(value)
    if problem is not None:
        raise InvalidArgumentError(f"{what} {value!r} is no entry id: it {problem}")


def check_count(value: object, what: str, *, optional: bool = False) -> None:
    """A count argument (``limit``, ``offset``, ``tokens_before``): an ``int`` from 0 to
    :data:`MAX_COUNT`, not a ``bool`` (or ``None`` when ``optional``).

    Raises:
        InvalidArgumentError: anything else.
    """
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        kind = f"an int from 0 to {MAX_COUNT}" + (" or None" if optional else "")
        raise InvalidArgumentError(f"{what} must be {kind}, not {_got(value)}")


def check_bool(value: object, what: str) -> None:
    """A flag argument: ``True`` or ``False``.

    Raises:
        InvalidArgumentError: anything else (a truthy string is not a flag).
    """
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{what} must be True or False, not {_got(value)}")


def check_text(value: object, what: str, *, optional: bool = False) -> None:
    """A text argument: a ``str`` (or ``None`` when ``optional``).

    Raises:
        InvalidArgumentError: anything else.
    """
    if value is None and optional:
        return
    if not isinstance(value, str):
        kind = "a str" + (" or None" if optional else "")
        raise InvalidArgumentError(f"{what} must be {kind}, not {_got(value)}")


def check_types(value: object, what: str = "types") -> frozenset[str] | None:
    """An entry-type filter: ``None`` or a collection (set, list, tuple) of ``str``.

    A bare ``str`` is refused: ``types="message"`` would otherwise filter by its letters.

    Returns:
        The filter as a frozenset, or ``None``.

    Raises:
        InvalidArgumentError: anything else.
    """
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidArgumentError(
            f"{what} must be a set of entry type names (e.g. {{'message'}}) or None, "
            f"not {_got(value)}"
        )
    items: list[Any] = list(value)
    bad = [v for v in items if not isinstance(v, str)]
    if bad:
        raise InvalidArgumentError(f"{what} must hold entry type names (str), not {_got(bad[0])}")
    return frozenset(items)
