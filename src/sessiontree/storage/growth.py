"""The size limit per session (docs/storage.md "Size limit"): one rule for every backend.

A store opened with ``max_session_bytes`` refuses an append that would take a session over
that many bytes (:class:`~sessiontree.errors.SessionTooLargeError`, before anything is
written) and warns once, on the append that takes it past :data:`WARN_FRACTION` of the limit
(:class:`~sessiontree.errors.SessionSizeWarning`). Off by default. A session's size is what
:meth:`~sessiontree.repos.retention.TrashRepo.session_sizes` reports: the log file on JSONL,
the stored JSON of its entries on SQL and memory. Each backend calls :func:`refuse_growth`
in its append path (so imports and integrations that call the storage directly are held to
it too) and :func:`warn_growth` once the append is written.
"""

from __future__ import annotations

import warnings

from sessiontree.errors import InvalidArgumentError, SessionSizeWarning, SessionTooLargeError

__all__ = ["WARN_FRACTION", "check_max_session_bytes", "refuse_growth", "warn_growth"]

WARN_FRACTION = 0.8
"""The share of the limit whose crossing issues :class:`SessionSizeWarning`."""


def check_max_session_bytes(value: object) -> int | None:
    """``value`` as a size limit: ``None`` (no limit) or a whole number of bytes ≥ 1.

    Raises:
        InvalidArgumentError: anything else (a bool, a float, 0, a negative number).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(
            f"max_session_bytes must be a whole number of bytes ≥ 1 or None, not {value!r}"
        )
    return value


def refuse_growth(session_id: str, size: int, adding: int, limit: int | None) -> None:
    """Raise if a session of ``size`` bytes may not grow by ``adding`` bytes under ``limit``.

    Raises:
        SessionTooLargeError: ``size + adding`` exceeds ``limit`` (never when it is ``None``).
    """
    if limit is not None and size + adding > limit:
        raise SessionTooLargeError(
            session_id, size_bytes=size, adding_bytes=adding, limit_bytes=limit
        )


def warn_growth(session_id: str, before: int, after: int, limit: int | None) -> None:
    """Issue :class:`SessionSizeWarning` when a written append took a session from below
    :data:`WARN_FRACTION` of ``limit`` to at or above it (sizes in bytes)."""
    if limit is not None and before < WARN_FRACTION * limit <= after:
        warnings.warn(
            SessionSizeWarning(session_id, size_bytes=after, limit_bytes=limit), stacklevel=3
        )
