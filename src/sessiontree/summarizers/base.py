"""The ``Summarizer`` protocol (SPEC §4) and the structured layout every summary uses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from sessiontree.messages import AgentMessage, Usage

__all__ = ["SUMMARY_SECTIONS", "SummaryPurpose", "SummaryResult", "Summarizer"]

SummaryPurpose = Literal["compaction", "turn_prefix", "branch"]
"""Why a summary is asked for: compacting history, the early part of a split turn, or an
abandoned branch (SPEC §4, §5)."""

SUMMARY_SECTIONS = (
    "Goal",
    "Constraints",
    "Progress",
    "Key decisions",
    "Next steps",
    "Critical context",
    "Files",
)
"""The Markdown sections (``## <name>``) of every summary, in order (SPEC §4). ``Progress``
has the sub-lists *Done*, *In progress* and *Blocked*."""


@dataclass(frozen=True)
class SummaryResult:
    """A summary's text (Markdown) and the model usage it cost (``None`` for offline ones)."""

    text: str
    usage: Usage | None = None


@runtime_checkable
class Summarizer(Protocol):
    """Turns sessiontree's own messages into a summary.

    Implementations raise :class:`~sessiontree.errors.SummaryError` on any failure (model
    error, timeout, empty answer), never a vendor exception.
    """

    async def summarize(
        self,
        messages: Sequence[AgentMessage],
        *,
        previous_summary: str | None,
        instructions: str | None,
        purpose: SummaryPurpose,
    ) -> SummaryResult:
        """Summarise ``messages`` (oldest first), updating ``previous_summary`` when given.

        Raises:
            SummaryError: the summary could not be made.
        """
        ...
