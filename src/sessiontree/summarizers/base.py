"""The ``Summarizer`` protocol (docs/compaction.md) and the structured layout every summary uses.

Besides the protocol this module holds what every producer and consumer of summaries shares:
the sections (:data:`SUMMARY_SECTIONS`), how a split turn's two summaries are joined
(:data:`TURN_PREFIX_SEPARATOR`), the files a summary lists (:func:`file_operations`) and the
one check of what a summariser returned (:func:`check_result`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from sessiontree.errors import SummaryError
from sessiontree.messages import AgentMessage, AssistantMessage, Usage

__all__ = [
    "SUMMARY_SECTIONS",
    "TURN_PREFIX_SEPARATOR",
    "SummaryPurpose",
    "SummaryResult",
    "Summarizer",
    "check_result",
    "file_operations",
]

SummaryPurpose = Literal["compaction", "turn_prefix", "branch"]
"""Why a summary is asked for: compacting history, the early part of a split turn, or an
abandoned branch (docs/compaction.md, docs/branching.md)."""

SUMMARY_SECTIONS = (
    "Goal",
    "Constraints",
    "Progress",
    "Key decisions",
    "Next steps",
    "Critical context",
    "Files",
)
"""The Markdown sections (``## <name>``) of every summary, in order (docs/compaction.md). ``Progress``
has the sub-lists *Done*, *In progress* and *Blocked*."""

TURN_PREFIX_SEPARATOR = "\n\n---\n\n<!-- split turn: the early part of the current turn -->\n\n"
"""Put between the history summary and the turn-prefix summary of a split turn (docs/compaction.md)."""

_READ_TOOLS = frozenset({"read"})
_MODIFY_TOOLS = frozenset({"write", "edit"})


def file_operations(
    messages: Sequence[AgentMessage],
    read: Sequence[str] = (),
    modified: Sequence[str] = (),
) -> tuple[list[str], list[str]]:
    """Cumulative ``(read_files, modified_files)``, both sorted (docs/compaction.md).

    Tool calls named ``read`` mark ``arguments.path`` read; ``write`` and ``edit`` mark it
    modified; a modified file is not also listed as read. ``read``/``modified`` are the lists
    carried over from the previous compaction's ``details``.
    """
    read_set = set(read)
    mod_set = set(modified)
    for msg in messages:
        if not isinstance(msg, AssistantMessage):
            continue
        for call in msg.tool_calls():
            path = call.arguments.get("path")
            if not isinstance(path, str) or not path:
                continue
            if call.name in _READ_TOOLS:
                read_set.add(path)
            elif call.name in _MODIFY_TOOLS:
                mod_set.add(path)
    return sorted(read_set - mod_set), sorted(mod_set)


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


def check_result(
    result: object, *, what: str, session_id: str | None = None, entry_id: str | None = None
) -> SummaryResult:
    """``result`` if it is what :meth:`Summarizer.summarize` promises, else a clear error.

    A summariser is user code, so its answer is checked before anything is written: a
    :class:`SummaryResult` whose ``text`` is a ``str`` with something besides whitespace and
    whose ``usage`` is ``None`` or a :class:`~sessiontree.messages.Usage`.

    Args:
        result: what the summariser returned.
        what: what was summarised, for the message (e.g. ``"compaction"``).
        session_id: the session concerned, named in the error.
        entry_id: the entry concerned, named in the error.

    Returns:
        ``result``, unchanged.

    Raises:
        SummaryError: the text is missing, not a ``str`` or blank, or the usage is not a
            ``Usage``.
    """
    if not isinstance(result, SummaryResult) or not isinstance(result.text, str):
        got = type(result.text if isinstance(result, SummaryResult) else result).__name__
        raise SummaryError(
            f"the summariser returned no text ({what}): got {got}, not a str",
            session_id=session_id,
            entry_id=entry_id,
        )
    if not result.text.strip():
        raise SummaryError(
            f"the summariser returned no text ({what})", session_id=session_id, entry_id=entry_id
        )
    if result.usage is not None and not isinstance(result.usage, Usage):
        raise SummaryError(
            f"the summariser returned usage of type {type(result.usage).__name__}, not Usage "
            f"({what})",
            session_id=session_id,
            entry_id=entry_id,
        )
    return result
