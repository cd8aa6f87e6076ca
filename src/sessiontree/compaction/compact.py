"""Applying a compaction: run the summariser and append one ``compaction`` entry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

from sessiontree.compaction.plan import prepare_compaction
from sessiontree.compaction.tokens import (
    CompactionSettings,
    TokenCounter,
    coerce_settings,
    estimate_tokens,
)
from sessiontree.context import EntryProjector
from sessiontree.entries import CompactionDetails, CompactionEntry, Entry
from sessiontree.errors import CompactionError, LeafMovedError, SummaryError
from sessiontree.messages import AgentMessage, CompactionSummaryMessage, Usage
from sessiontree.summarizers.base import (
    TURN_PREFIX_SEPARATOR,
    Summarizer,
    SummaryResult,
    check_result,
)
from sessiontree.summarizers.extractive import ExtractiveSummarizer

__all__ = ["CompactableSession", "CompactionMode", "check_mode", "compact"]

CompactionMode = Literal["pointer", "retained_tail"]
"""``pointer`` stores ``firstKeptEntryId``; ``retained_tail`` stores the kept messages."""


class CompactableSession(Protocol):
    """What :func:`compact` uses of a :class:`~sessiontree.session.Session` (which has it all):
    compaction sits below the session layer, so it names the members, not the class."""

    @property
    def id(self) -> str:
        """The session id (errors name it)."""
        ...

    async def get_branch(self, leaf_id: str | None = None) -> list[Entry]:
        """The path root → leaf without bookkeeping entries."""
        ...

    async def append_entry_if(
        self, entry: Entry | Mapping[str, Any], expected_leaf: str | None
    ) -> str:
        """Append under ``expected_leaf`` only while it is still the leaf (else
        :class:`LeafMovedError`); the new entry's id."""
        ...


# --------------------------------------------------------------------------- applying


def check_mode(mode: object, *, session_id: str | None = None) -> CompactionMode:
    """``mode`` if it is ``"pointer"`` or ``"retained_tail"`` (docs/compaction.md).

    Raises:
        CompactionError: ``invalid_settings`` for anything else; names ``session_id``.
    """
    if mode == "pointer" or mode == "retained_tail":
        return mode
    raise CompactionError(
        "invalid_settings",
        f"mode must be 'pointer' or 'retained_tail', not {mode!r}",
        session_id=session_id,
    )


def _add_usage(a: Usage | None, b: Usage | None) -> Usage | None:
    if a is None or b is None:
        return a or b
    fields = ("input", "output", "cache_read", "cache_write", "total_tokens")
    merged: dict[str, Any] = {f: getattr(a, f) + getattr(b, f) for f in fields}
    if a.cost is not None or b.cost is not None:
        ca, cb = a.cost, b.cost
        costs = ("input", "output", "cache_read", "cache_write", "total")
        merged["cost"] = {
            f: (getattr(ca, f) if ca else 0.0) + (getattr(cb, f) if cb else 0.0) for f in costs
        }
    return Usage(**merged)


async def _summarize(
    summarizer: Summarizer,
    messages: Sequence[AgentMessage],
    *,
    previous_summary: str | None,
    instructions: str | None,
    purpose: Literal["compaction", "turn_prefix", "branch"],
    session_id: str | None,
) -> SummaryResult:
    try:
        result = await summarizer.summarize(
            messages, previous_summary=previous_summary, instructions=instructions, purpose=purpose
        )
    except Exception as exc:
        raise CompactionError(
            "summarization_failed",
            f"the summariser failed ({purpose}): {exc}",
            session_id=session_id,
        ) from exc
    try:
        return check_result(result, what=purpose, session_id=session_id)
    except SummaryError as exc:
        raise CompactionError("summarization_failed", exc.detail, session_id=session_id) from exc


async def compact(
    session: CompactableSession,
    *,
    settings: CompactionSettings | Mapping[str, Any] | None = None,
    summarizer: Summarizer | None = None,
    mode: CompactionMode = "pointer",
    instructions: str | None = None,
    entry_projectors: Mapping[str, EntryProjector] | None = None,
    token_counter: TokenCounter = estimate_tokens,
) -> CompactionEntry:
    """Summarise older context and append one ``compaction`` entry under the leaf (docs/compaction.md).

    The entry becomes the leaf. ``tokensBefore`` = the context size before (tokens). In
    ``pointer`` mode (pi-compatible) ``firstKeptEntryId`` names the cut entry; in
    ``retained_tail`` mode ``retainedTail`` holds the context messages from the cut to the leaf,
    so the entry is a self-contained checkpoint. ``details`` carries the cumulative, sorted
    ``readFiles``/``modifiedFiles`` and, in both modes, ``state``: the derived state
    (``model``, ``thinkingLevel``, ``activeToolNames``), so building the context reads
    nothing older than the first kept entry. A split turn is stored as
    history summary + :data:`TURN_PREFIX_SEPARATOR` + turn-prefix summary. Reads the branch
    once; one append.

    Args:
        session: the session to compact (its current leaf).
        settings: keep budget; defaults to :class:`CompactionSettings`; a mapping is validated
            into one (:func:`coerce_settings`).
        summarizer: defaults to :class:`~sessiontree.summarizers.extractive.ExtractiveSummarizer`.
        mode: ``"pointer"`` or ``"retained_tail"``.
        instructions: passed to the summariser (what to focus on).
        entry_projectors: projectors for ``custom`` entries (context building and tail).
        token_counter: per-message estimate (tokens).

    Returns:
        The appended :class:`CompactionEntry`.

    Raises:
        CompactionError: ``invalid_settings`` (bad mode or settings), ``nothing_to_compact``,
            ``summary_not_smaller`` (summary + kept messages would not be fewer tokens than
            the context before, both counted by ``token_counter``: recorded usage never
            decides this),
            ``summarization_failed`` (the summariser raised or returned no or non-str text; the original
            error is ``__cause__``), ``leaf_moved`` (another writer appended meanwhile). In
            every case the session is unchanged.
    """
    check_mode(mode, session_id=session.id)
    settings = coerce_settings(settings, session_id=session.id)
    if summarizer is None:
        summarizer = ExtractiveSummarizer()
    path = await session.get_branch()
    prep = prepare_compaction(
        path,
        settings,
        token_counter=token_counter,
        entry_projectors=entry_projectors,
        session_id=session.id,
    )
    usage: Usage | None = None
    history_text = prep.previous_summary or ""
    if prep.messages_to_summarize or not prep.is_split_turn:
        history = await _summarize(
            summarizer,
            prep.messages_to_summarize,
            previous_summary=prep.previous_summary,
            instructions=instructions,
            purpose="compaction",
            session_id=session.id,
        )
        history_text, usage = history.text.strip(), history.usage
    summary = history_text
    if prep.is_split_turn:
        turn = await _summarize(
            summarizer,
            prep.turn_prefix_messages,
            previous_summary=None,
            instructions=instructions,
            purpose="turn_prefix",
            session_id=session.id,
        )
        usage = _add_usage(usage, turn.usage)
        summary = (
            f"{history_text}{TURN_PREFIX_SEPARATOR}{turn.text.strip()}"
            if history_text
            else turn.text.strip()
        )
    details: dict[str, Any] = {
        "read_files": prep.read_files,
        "modified_files": prep.modified_files,
    }
    fields: dict[str, Any] = {
        "parent_id": prep.leaf_id,
        "summary": summary,
        "tokens_before": prep.tokens_before,
    }
    if mode == "pointer":
        fields["first_kept_entry_id"] = prep.first_kept_entry_id
    else:
        fields["retained_tail"] = prep.kept_messages
    # the derived state here, in both modes: context building then reads nothing older than
    # the first kept entry (sessiontree.context.context_start)
    details["state"] = prep.state
    fields["details"] = CompactionDetails(**details)
    if usage is not None:
        fields["usage"] = usage
    entry = CompactionEntry(**fields)
    tokens_after = prep.kept_tokens + token_counter(
        CompactionSummaryMessage(summary=summary, tokens_before=prep.tokens_before)
    )
    if tokens_after >= prep.estimated_tokens_before:
        # estimate against estimate: the recorded usage behind ``tokens_before`` may be
        # absent, stale or wrong and must not decide whether the summary shrinks anything
        raise CompactionError(
            "summary_not_smaller",
            f"the summary would not make the context smaller ({prep.estimated_tokens_before:,}"
            f" → {tokens_after:,} estimated tokens); nothing appended",
            session_id=session.id,
            entry_id=prep.leaf_id,
        )
    try:
        # one atomic step: appended only while the leaf is still the one the plan was made on
        await session.append_entry_if(entry, prep.leaf_id)
    except LeafMovedError as exc:
        raise CompactionError(
            "leaf_moved",
            "the leaf moved while the summary was being made; compact again",
            session_id=session.id,
            entry_id=prep.leaf_id,
        ) from exc
    return entry
