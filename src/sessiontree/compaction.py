"""Compaction: token estimates, cut points, planning (pure) and applying (SPEC §4).

A long session is kept inside its model's context window by replacing older messages with a
summary. Two halves:

* :func:`prepare_compaction` is **pure**: from the root → leaf path it computes what the
  model currently sees (the *transformed* path, SPEC §3 step 2), walks back from the leaf
  summing token estimates until ``keep_recent_tokens`` are kept, moves the cut to the nearest
  valid cut point toward the root (never a ``toolResult``), and lists what goes to the
  summariser: everything that leaves the context, including the entries the previous
  compaction kept and a previous ``retainedTail`` (LESSONS 7). A cut inside a turn is a
  *split turn*: the turn's early part is summarised separately (``purpose="turn_prefix"``).
* :func:`compact` runs the summariser and appends **one** ``compaction`` entry under the
  current leaf. A summariser failure raises :class:`CompactionError` and changes nothing
  (LESSONS 9).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import orjson

from sessiontree.context import (
    EntryProjector,
    build_context_from_path,
    default_transform,
    derive_state,
    project_entries,
)
from sessiontree.entries import (
    BranchSummaryEntry,
    CompactionDetails,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
)
from sessiontree.errors import CompactionError, SummaryError
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    parse_message,
)
from sessiontree.summarizers.base import Summarizer, SummaryResult

if TYPE_CHECKING:
    from sessiontree.session import Session

__all__ = [
    "IMAGE_TOKENS",
    "TURN_PREFIX_SEPARATOR",
    "CompactionMode",
    "CompactionPreparation",
    "CompactionSettings",
    "TokenCounter",
    "compact",
    "estimate_context_tokens",
    "estimate_tokens",
    "file_operations",
    "prepare_compaction",
    "should_compact",
]

IMAGE_TOKENS = 1200
"""Tokens counted for one image block (SPEC §4)."""

TURN_PREFIX_SEPARATOR = "\n\n---\n\n<!-- split turn: the early part of the current turn -->\n\n"
"""Put between the history summary and the turn-prefix summary of a split turn (SPEC §4)."""

TokenCounter = Callable[[AgentMessage], int]
"""``counter(message) -> tokens``; replaces :func:`estimate_tokens` where accepted."""

CompactionMode = Literal["pointer", "retained_tail"]
"""``pointer`` stores ``firstKeptEntryId``; ``retained_tail`` stores the kept messages."""

_READ_TOOLS = frozenset({"read"})
_MODIFY_TOOLS = frozenset({"write", "edit"})


# --------------------------------------------------------------------------- token estimates


def _content_chars(content: str | Sequence[Any]) -> tuple[int, int]:
    if isinstance(content, str):
        return len(content), 0
    chars = images = 0
    for block in content:
        if isinstance(block, TextContent):
            chars += len(block.text)
        elif isinstance(block, ThinkingContent):
            chars += len(block.thinking)
        elif isinstance(block, ToolCall):
            chars += len(block.name) + len(orjson.dumps(block.arguments, default=str))
        elif isinstance(block, ImageContent):
            images += 1
    return chars, images


def estimate_tokens(message: AgentMessage) -> int:
    """Estimated tokens of one message: characters / 4 rounded up, images 1,200 each (SPEC §4).

    Counts text, thinking, tool-call names and their JSON arguments, bash command and output
    (none when ``excludeFromContext``), summaries. An opaque message (unknown role) is never
    sent to a model and counts 0.
    """
    images = 0
    if isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
        chars = len(message.summary)
    elif isinstance(message, BashExecutionMessage):
        chars = 0 if message.exclude_from_context else len(message.command) + len(message.output)
    elif isinstance(message, UserMessage | AssistantMessage | ToolResultMessage | CustomMessage):
        chars, images = _content_chars(message.content)
    else:
        return 0
    return math.ceil(chars / 4) + images * IMAGE_TOKENS


def estimate_context_tokens(
    messages: Sequence[AgentMessage], *, counter: TokenCounter = estimate_tokens
) -> int:
    """Tokens of a context: the newest trustworthy usage plus estimates of what follows it.

    The anchor is the newest assistant message with non-zero ``usage`` whose ``timestamp`` is
    later than that of every ``compactionSummary``/``branchSummary`` message in the list; usage
    recorded before the newest summary describes a context that no longer exists (SPEC §4).
    Without such an anchor, the sum of the estimates.

    Args:
        messages: the context messages, oldest first.
        counter: per-message estimate (tokens).

    Returns:
        Tokens.
    """
    newest_summary: float = -math.inf
    for msg in messages:
        if isinstance(msg, CompactionSummaryMessage | BranchSummaryMessage):
            newest_summary = max(newest_summary, msg.timestamp)
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if (
            isinstance(msg, AssistantMessage)
            and msg.usage is not None
            and msg.usage.context_tokens() > 0
            and msg.timestamp > newest_summary
        ):
            return msg.usage.context_tokens() + sum(counter(m) for m in messages[i + 1 :])
    return sum(counter(m) for m in messages)


@dataclass(frozen=True)
class CompactionSettings:
    """When to compact and how much to keep (SPEC §4).

    Attributes:
        enabled: whether :func:`should_compact` may say yes (``compact`` itself always runs).
        reserve_tokens: tokens left free in the window for the next answer.
        keep_recent_tokens: at least this many tokens of recent messages stay verbatim.

    Raises:
        CompactionError: ``invalid_settings`` for a negative token count.
    """

    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000

    def __post_init__(self) -> None:
        if self.reserve_tokens < 0 or self.keep_recent_tokens < 0:
            raise CompactionError(
                "invalid_settings", "reserve_tokens and keep_recent_tokens must be >= 0"
            )


def should_compact(
    context_tokens: int, context_window: int, settings: CompactionSettings | None = None
) -> bool:
    """``settings.enabled and context_tokens > context_window - reserve_tokens`` (SPEC §4).

    Args:
        context_tokens: the context size (:func:`estimate_context_tokens`), tokens.
        context_window: the model's window, tokens.
        settings: defaults to :class:`CompactionSettings`.
    """
    s = settings or CompactionSettings()
    return s.enabled and context_tokens > context_window - s.reserve_tokens


# --------------------------------------------------------------------------- file tracking


def file_operations(
    messages: Sequence[AgentMessage],
    read: Sequence[str] = (),
    modified: Sequence[str] = (),
) -> tuple[list[str], list[str]]:
    """Cumulative ``(read_files, modified_files)``, both sorted (SPEC §4).

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
    """SPEC §4 valid cut points: user/assistant/bashExecution/custom message entries,
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
    settings: CompactionSettings | None = None,
    *,
    token_counter: TokenCounter = estimate_tokens,
    entry_projectors: Mapping[str, EntryProjector] | None = None,
    session_id: str | None = None,
) -> CompactionPreparation:
    """Plan a compaction of the branch ``path`` (root → leaf). Pure: no I/O (SPEC §4).

    Works on the transformed path (what the model sees now): the entries the previous
    compaction kept, its ``retainedTail`` and what came after are all candidates; only the
    root → leaf path is read, never abandoned branches (LESSONS 7, 8).

    Args:
        path: the branch, root → leaf, bookkeeping entries excluded (``Session.get_branch``).
        settings: ``keep_recent_tokens`` is the budget kept verbatim (tokens).
        token_counter: per-message estimate (tokens).
        entry_projectors: projectors for ``custom`` entries, as for context building.
        session_id: named in errors.

    Raises:
        CompactionError: ``nothing_to_compact`` when the path is empty or nothing would leave
            the context (everything fits the keep budget, or no valid cut point precedes it).
    """
    s = settings or CompactionSettings()
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
    kept = [m for m in kept_raw if not any(m is x for x in stranded)]

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


# --------------------------------------------------------------------------- applying


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
    if not isinstance(result, SummaryResult) or not result.text.strip():
        raise CompactionError(
            "summarization_failed",
            f"the summariser returned no text ({purpose})",
            session_id=session_id,
        ) from SummaryError("empty summary", session_id=session_id)
    return result


async def compact(
    session: Session,
    *,
    settings: CompactionSettings | None = None,
    summarizer: Summarizer | None = None,
    mode: CompactionMode = "pointer",
    instructions: str | None = None,
    entry_projectors: Mapping[str, EntryProjector] | None = None,
    token_counter: TokenCounter = estimate_tokens,
) -> CompactionEntry:
    """Summarise older context and append one ``compaction`` entry under the leaf (SPEC §4).

    The entry becomes the leaf. ``tokensBefore`` = the context size before (tokens). In
    ``pointer`` mode (pi-compatible) ``firstKeptEntryId`` names the cut entry; in
    ``retained_tail`` mode ``retainedTail`` holds the context messages from the cut to the leaf
    and ``details.state`` the derived state (``model``, ``thinkingLevel``,
    ``activeToolNames``), so the entry is a self-contained checkpoint. ``details`` always
    carries the cumulative, sorted ``readFiles``/``modifiedFiles``. A split turn is stored as
    history summary + :data:`TURN_PREFIX_SEPARATOR` + turn-prefix summary. Reads the branch
    once; one append.

    Args:
        session: the session to compact (its current leaf).
        settings: keep budget; defaults to :class:`CompactionSettings`.
        summarizer: defaults to :class:`~sessiontree.summarizers.extractive.ExtractiveSummarizer`.
        mode: ``"pointer"`` or ``"retained_tail"``.
        instructions: passed to the summariser (what to focus on).
        entry_projectors: projectors for ``custom`` entries (context building and tail).
        token_counter: per-message estimate (tokens).

    Returns:
        The appended :class:`CompactionEntry`.

    Raises:
        CompactionError: ``invalid_settings`` (bad mode), ``nothing_to_compact``,
            ``summarization_failed`` (the summariser raised or returned no text; the original
            error is ``__cause__``), ``leaf_moved`` (another writer appended meanwhile). In
            every case the session is unchanged.
    """
    if mode not in ("pointer", "retained_tail"):
        raise CompactionError(
            "invalid_settings",
            f"mode must be 'pointer' or 'retained_tail', not {mode!r}",
            session_id=session.id,
        )
    if summarizer is None:
        from sessiontree.summarizers.extractive import ExtractiveSummarizer

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
        details["state"] = prep.state
    fields["details"] = CompactionDetails(**details)
    if usage is not None:
        fields["usage"] = usage
    entry = CompactionEntry(**fields)
    if await session.get_leaf_id() != prep.leaf_id:
        raise CompactionError(
            "leaf_moved",
            "the leaf moved while the summary was being made; compact again",
            session_id=session.id,
            entry_id=prep.leaf_id,
        )
    await session.append_entry(entry)
    return entry
