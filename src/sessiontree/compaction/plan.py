"""Compaction planning (docs/compaction.md): cut points, split turns, file lists. Pure, no I/O.

:func:`prepare_compaction` works on the *transformed* path (what the model sees now,
docs/context.md step 2): the entries the previous compaction kept, its ``retainedTail`` and
what came after are all candidates, so nothing the previous compaction kept can vanish from
both the summary input and the context; only the root → leaf path is read, so abandoned
branches never reach the summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontree.compaction.tokens import (
    CompactionSettings,
    TokenCounter,
    coerce_settings,
    estimate_context_tokens,
    estimate_tokens,
)
from sessiontree.context import (
    EntryProjector,
    build_context_from_path,
    default_transform,
    derive_state,
    project_entries,
)
from sessiontree.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
)
from sessiontree.errors import CompactionError
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    ToolResultMessage,
    UserMessage,
    parse_message,
)
from sessiontree.summarizers.base import file_operations

__all__ = ["CompactionPreparation", "prepare_compaction"]


# --------------------------------------------------------------------------- planning


@dataclass
class _Unit:
    """One element of the transformed path after the previous summary: an entry, or the
    previous ``retainedTail`` (``entry=None``, never a cut point)."""

    entry: Entry | None
    messages: list[AgentMessage]


@dataclass
class CompactionPreparation:
    """What :func:`compact` needs, computed without I/O by :func:`prepare_compaction`.

    Attributes:
        first_kept_entry_id: the cut entry (the first entry kept verbatim).
        messages_to_summarize: history messages leaving the context (oldest first).
        turn_prefix_messages: the early part of a split turn (empty unless ``is_split_turn``).
        is_split_turn: the cut lies inside a turn.
        kept_messages: the context messages from the cut to the leaf (what a retained tail
            stores); results whose call was summarised are left out.
        previous_summary: the newest compaction's summary, to be updated.
        previous_compaction_id: that compaction's entry id.
        read_files / modified_files: cumulative, sorted.
        tokens_before: the context size before compaction (tokens).
        kept_tokens: estimated tokens of ``kept_messages``.
        leaf_id: the leaf the plan was made for.
    """

    first_kept_entry_id: str
    messages_to_summarize: list[AgentMessage]
    turn_prefix_messages: list[AgentMessage]
    is_split_turn: bool
    kept_messages: list[AgentMessage]
    previous_summary: str | None
    previous_compaction_id: str | None
    read_files: list[str]
    modified_files: list[str]
    tokens_before: int
    kept_tokens: int
    leaf_id: str
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def summarized_messages(self) -> list[AgentMessage]:
        """Every message that leaves the context: history then turn prefix."""
        return [*self.messages_to_summarize, *self.turn_prefix_messages]


def _is_cut_point(entry: Entry | None) -> bool:
    """docs/compaction.md valid cut points: user/assistant/bashExecution/custom message entries,
    ``custom_message`` and ``branch_summary`` entries; never a ``toolResult``."""
    if entry is None:
        return False
    if isinstance(entry, MessageEntry):
        return entry.message.role in ("user", "assistant", "bashExecution", "custom")
    return isinstance(entry, CustomMessageEntry | BranchSummaryEntry)


def _project_one(
    entry: Entry,
    index: int,
    entries: Sequence[Entry],
    projectors: Mapping[str, EntryProjector],
) -> list[AgentMessage]:
    if isinstance(entry, CustomEntry):
        projector = projectors.get(entry.custom_type)
        if projector is None:
            return []
        return [parse_message(m) for m in projector(entry, index, entries)]
    return project_entries([entry])


def _state_snapshot(path: Sequence[Entry]) -> dict[str, Any]:
    model, thinking, tools = derive_state(path)
    return {
        "model": None if model is None else {"provider": model.provider, "modelId": model.model_id},
        "thinkingLevel": thinking,
        "activeToolNames": tools,
    }


def _starts_turn(msg: AgentMessage) -> bool:
    return isinstance(msg, UserMessage | CustomMessage)


def prepare_compaction(
    path: Sequence[Entry],
    settings: CompactionSettings | Mapping[str, Any] | None = None,
    *,
    token_counter: TokenCounter = estimate_tokens,
    entry_projectors: Mapping[str, EntryProjector] | None = None,
    session_id: str | None = None,
) -> CompactionPreparation:
    """Plan a compaction of the branch ``path`` (root → leaf). Pure: no I/O (docs/compaction.md).

    Works on the transformed path (what the model sees now): the entries the previous
    compaction kept, its ``retainedTail`` and what came after are all candidates; only the
    root → leaf path is read, never abandoned branches.

    Args:
        path: the branch, root → leaf, bookkeeping entries excluded (``Session.get_branch``).
        settings: ``keep_recent_tokens`` is the budget kept verbatim (tokens); a mapping is
            validated into :class:`CompactionSettings` (:func:`coerce_settings`).
        token_counter: per-message estimate (tokens).
        entry_projectors: projectors for ``custom`` entries, as for context building.
        session_id: named in errors.

    Raises:
        CompactionError: ``invalid_settings`` (bad ``settings``); ``nothing_to_compact`` when
            the path is empty or nothing would leave
            the context (everything fits the keep budget, or no valid cut point precedes it).
    """
    s = coerce_settings(settings, session_id=session_id)
    projectors = entry_projectors or {}
    if not path:
        raise CompactionError("nothing_to_compact", "the branch is empty", session_id=session_id)
    leaf_id = path[-1].id
    transformed = default_transform(path)
    previous: CompactionEntry | None = None
    units: list[_Unit] = []
    for index, entry in enumerate(transformed):
        if index == 0 and isinstance(entry, CompactionEntry):
            previous = entry
            if entry.retained_tail:
                units.append(_Unit(None, list(entry.retained_tail)))
            continue
        units.append(_Unit(entry, _project_one(entry, index, transformed, projectors)))

    # Walk back from the leaf over message-carrying units until the keep budget is reached.
    kept_tokens = 0
    spot: int | None = None
    for i in range(len(units) - 1, -1, -1):
        if not units[i].messages:
            continue
        kept_tokens += sum(token_counter(m) for m in units[i].messages)
        if kept_tokens >= s.keep_recent_tokens:
            spot = i
            break
    cut: int | None = None
    if spot is not None:
        cut = next((j for j in range(spot, -1, -1) if _is_cut_point(units[j].entry)), None)
    if cut is None:
        raise CompactionError(
            "nothing_to_compact",
            f"the context fits in keep_recent_tokens={s.keep_recent_tokens} or has no valid "
            "cut point before it",
            session_id=session_id,
            entry_id=leaf_id,
        )
    before = [m for u in units[:cut] for m in u.messages]
    if not before:
        raise CompactionError(
            "nothing_to_compact",
            "no message before the cut point would leave the context",
            session_id=session_id,
            entry_id=leaf_id,
        )
    kept_raw = [m for u in units[cut:] for m in u.messages]

    # Results kept after the cut whose call leaves with the summary would be dropped by the
    # tool-pair repair: they leave the context too, so the summariser gets them.
    summarized_calls = {
        c.id for m in before if isinstance(m, AssistantMessage) for c in m.tool_calls()
    }
    kept_calls = {c.id for m in kept_raw if isinstance(m, AssistantMessage) for c in m.tool_calls()}
    stranded = [
        m
        for m in kept_raw
        if isinstance(m, ToolResultMessage)
        and m.tool_call_id in summarized_calls
        and m.tool_call_id not in kept_calls
    ]
    stranded_ids = {id(m) for m in stranded}  # a set: ``any(m is x ...)`` was quadratic
    kept = [m for m in kept_raw if id(m) not in stranded_ids]

    # Split turn: the cut is not at the start of a turn and a turn starts earlier.
    first_kept = units[cut].messages[0] if units[cut].messages else None
    history, prefix = before, []
    split = False
    if first_kept is None or not _starts_turn(first_kept):
        t = next((i for i in range(len(before) - 1, -1, -1) if _starts_turn(before[i])), None)
        if t is not None:
            history, prefix = before[:t], before[t:]
            split = True
    if split:
        prefix = [*prefix, *stranded]
    else:
        history = [*history, *stranded]

    prev_read: list[str] = []
    prev_mod: list[str] = []
    if previous is not None and previous.details is not None:
        prev_read, prev_mod = previous.details.read_files, previous.details.modified_files
    read_files, modified_files = file_operations([*history, *prefix], prev_read, prev_mod)
    context = build_context_from_path(path, entry_projectors=projectors)
    cut_entry = units[cut].entry
    assert cut_entry is not None
    return CompactionPreparation(
        first_kept_entry_id=cut_entry.id,
        messages_to_summarize=history,
        turn_prefix_messages=prefix,
        is_split_turn=split,
        kept_messages=kept,
        previous_summary=previous.summary if previous is not None else None,
        previous_compaction_id=previous.id if previous is not None else None,
        read_files=read_files,
        modified_files=modified_files,
        tokens_before=estimate_context_tokens(context.messages, counter=token_counter),
        kept_tokens=sum(token_counter(m) for m in kept),
        leaf_id=leaf_id,
        state=_state_snapshot(path),
    )
