"""``RetryPolicy``: how often and how patiently the harness retries a failed model call."""

from __future__ import annotations

from dataclasses import dataclass

from sessiontree.errors import AgentHarnessError

__all__ = ["RetryPolicy"]


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff for transient model failures (429, 5xx, timeouts, resets).

    Attributes:
        max_attempts: calls made in all, the first included (``1`` = no retry).
        base_delay_s: the wait before the first retry; it doubles for each further one.
        max_delay_s: the longest wait; a ``retry-after`` the provider asks for is honoured
            up to this.

    Raises:
        AgentHarnessError: ``invalid_argument`` — ``max_attempts < 1`` or a negative delay.
    """

    max_attempts: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0

    def __post_init__(self) -> None:
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise AgentHarnessError("invalid_argument", "max_attempts must be an int >= 1")
        if self.base_delay_s < 0 or self.max_delay_s < 0:
            raise AgentHarnessError("invalid_argument", "retry delays must be >= 0 seconds")

    def delay_s(self, attempt: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based): the provider's
        ``retry-after`` when it gave one, else ``base_delay_s * 2**(attempt-1)``; at most
        ``max_delay_s``."""
        if retry_after_s is not None:
            return min(retry_after_s, self.max_delay_s)
        return min(self.base_delay_s * 2.0 ** (attempt - 1), self.max_delay_s)
