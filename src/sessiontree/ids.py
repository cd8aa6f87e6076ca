"""Entry ids (UUID v7, time-ordered), session ids and timestamps.

Session ids double as file and directory names, so one rule (:data:`SESSION_ID_PATTERN`)
decides which are allowed, for every backend and importer alike.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

import uuid_utils

from sessiontree.errors import InvalidEntryError, InvalidSessionIdError

__all__ = [
    "SESSION_ID_PATTERN",
    "check_id",
    "check_session_id",
    "entry_id_problem",
    "MAX_MS",
    "MIN_MS",
    "is_ms",
    "is_session_id",
    "iso_from_ms",
    "iso_or",
    "ms_from_iso",
    "ms_or",
    "new_id",
    "now_iso",
    "now_ms",
]

SESSION_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,128}")
"""What a session id may be (whole-string match): safe as a file name on every platform."""


def is_session_id(value: object) -> bool:
    """Whether ``value`` is a string :data:`SESSION_ID_PATTERN` allows."""
    return isinstance(value, str) and SESSION_ID_PATTERN.fullmatch(value) is not None


def check_session_id(session_id: str) -> str:
    """``session_id`` itself, if :data:`SESSION_ID_PATTERN` allows it.

    Raises:
        InvalidSessionIdError: the id is not 1-128 of ``[A-Za-z0-9_-]`` (or not a string).
    """
    if not is_session_id(session_id):
        raise InvalidSessionIdError(
            f"session id {session_id!r} is not allowed: use 1-128 of [A-Za-z0-9_-]"
        )
    return session_id


def entry_id_problem(entry_id: str) -> str | None:
    """Why ``entry_id`` cannot be an entry id on every backend, ``None`` when it can.

    Entry ids may be any non-empty string (imports keep their source's ids), except one
    holding a NUL character (PostgreSQL text cannot hold it) or a lone surrogate (not
    UTF-8, which every backend writes): each backend refuses those alike. ~50 ns for an
    ASCII id.
    """
    if "\x00" in entry_id:
        return "holds a NUL character"
    if not entry_id.isascii():
        try:
            entry_id.encode("utf-8")
        except UnicodeEncodeError:
            return "holds a lone surrogate (not UTF-8)"
    return None


def check_id(value: str, what: str, entry_id: str, session_id: str | None = None) -> None:
    """Refuse ``value`` (the entry's ``id``, or the id its field ``what`` refers to) when
    :func:`entry_id_problem` does.

    Raises:
        InvalidEntryError: names the field and the id (and ``entry_id``, the entry holding
            the reference, when ``what`` is not ``"id"``).
    """
    problem = entry_id_problem(value)
    if problem is not None:
        raise InvalidEntryError(
            f"{what} {value!r} cannot be an entry id: it {problem}",
            session_id=session_id,
            entry_id=None if what == "id" else entry_id,
        )


def new_id() -> str:
    """A new UUID v7 string (time-ordered, 36 characters), from the ``uuid-utils`` package."""
    return str(uuid_utils.uuid7())


def now_ms() -> int:
    """The current time as Unix milliseconds (the unit of message ``timestamp``)."""
    return time.time_ns() // 1_000_000


_second: tuple[int, str] = (0, "1970-01-01T00:00:00.")
"""The last second formatted by :func:`iso_from_ms` and its text up to the milliseconds: entries
written in the same second share it, which makes the timestamp of an append ~10x cheaper
than formatting a datetime. One tuple, replaced whole, so threads never see a torn pair."""


_MILLIS = tuple(f"{milli:03d}Z" for milli in range(1000))
"""The end of a timestamp for each millisecond (``"007Z"``): an index instead of a format."""


def iso_from_ms(ms: int | float) -> str:
    """ISO 8601 UTC with milliseconds and a ``Z`` suffix, e.g. ``2026-01-02T03:04:05.678Z``."""
    global _second
    second, milli = divmod(int(ms), 1000)
    cached, prefix = _second
    if second != cached:
        prefix = datetime.fromtimestamp(second, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.")
        _second = (second, prefix)
    return prefix + _MILLIS[milli]


def now_iso() -> str:
    """The current time as an entry timestamp (ISO 8601 UTC, milliseconds, ``Z``)."""
    return iso_from_ms(now_ms())


def ms_from_iso(value: str) -> int:
    """Unix milliseconds from an ISO 8601 timestamp; a naive one is taken as UTC.

    Raises:
        ValueError: the string is not ISO 8601.
    """
    dt = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


MIN_MS = -62_135_596_800_000
"""0001-01-01T00:00:00Z in Unix ms: the earliest time an entry timestamp can show."""
MAX_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z in Unix ms: the latest time an entry timestamp can show."""


def is_ms(value: Any) -> bool:
    """Whether ``value`` is a number of Unix ms a timestamp can show (not a bool, NaN, or a
    number beyond years 1-9999, which a damaged file can hold and ``datetime`` refuses)."""
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and MIN_MS <= value <= MAX_MS
    )


def ms_or(value: Any, default: int) -> int:
    """Unix ms from an ISO 8601 string or a number of ms (:func:`is_ms`); ``default`` when
    neither."""
    if isinstance(value, int | float):
        return int(value) if is_ms(value) else default
    if isinstance(value, str):
        try:
            return ms_from_iso(value)
        except ValueError:
            return default
    return default


def iso_or(value: Any, default_ms: int) -> str:
    """An entry timestamp (ISO 8601 UTC, ms, ``Z``) from an ISO string or ms; else ``default_ms``."""
    return iso_from_ms(ms_or(value, default_ms))
