"""``RetryPolicy``: how often and how patiently the harness retries a failed model call."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sessiontree.errors import AgentHarnessError

__all__ = ["RetryPolicy"]

_MAX_DOUBLINGS = 63
"""Doublings of ``base_delay_s`` counted at most: beyond them every wait is ``max_delay_s``
anyway, and ``2.0 ** n`` would overflow for a very high attempt number."""


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff for transient model failures (429, 5xx, timeouts, resets).

    Attributes:
        max_attempts: calls made in all, the first included (``1`` = no retry).
        base_delay_s: the wait before the first retry; it doubles for each further one.
        max_delay_s: the longest wait, whatever the provider asks for: a ``retry-after``
            is honoured up to this.

    Raises:
        AgentHarnessError: ``invalid_argument`` — ``max_attempts < 1``, or a delay that is not
            a finite number of seconds ``>= 0``.
    """

    max_attempts: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0

    def __post_init__(self) -> None:
        if (
            not isinstance(self.max_attempts, int)
            or isinstance(self.max_attempts, bool)
            or self.max_attempts < 1
        ):
            raise AgentHarnessError("invalid_argument", "max_attempts must be an int >= 1")
        for name in ("base_delay_s", "max_delay_s"):
            value = getattr(self, name)
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not math.isfinite(value)
                or value < 0
            ):
                raise AgentHarnessError(
                    "invalid_argument",
                    f"{name} must be a finite number of seconds >= 0, got {value!r}",
                )

    def delay_s(self, attempt: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based).

        The provider's ``retry-after`` when it gave a finite delay ``>= 0``, else
        ``base_delay_s * 2**(attempt-1)``; always finite, ``>= 0`` and at most
        ``max_delay_s`` (a ``nan``, infinite, negative or huge ``retry_after_s`` cannot
        make a wait longer).
        """
        if retry_after_s is not None and math.isfinite(retry_after_s) and retry_after_s >= 0:
            wanted = float(retry_after_s)
        else:
            wanted = self.base_delay_s * 2.0 ** min(max(attempt - 1, 0), _MAX_DOUBLINGS)
        return min(wanted, float(self.max_delay_s))
