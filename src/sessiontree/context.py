"""Context building: what the model sees next (docs/context.md). Pure, no I/O.

``path → transform → project → derive state → repair tool pairs``:

1. the path root → leaf (from storage, bookkeeping entries removed);
2. :func:`default_transform` applies the newest compaction (summary first, kept entries,
   then what came after);
3. :func:`project_entries` turns entries into :data:`AgentMessage` objects;
4. :func:`derive_state` reads model, thinking level and active tools from the whole path;
5. :func:`repair_tool_pairs` makes every tool result follow its call, so a provider never
   rejects the context whatever the history (compactions, crashes, imports).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontree.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    ThinkingLevel,
)
from sessiontree.ids import ms_from_iso
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    OpaqueMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
    parse_message,
)
from sessiontree.tool_pairs import (
    LOST_RESULT_TEXT,
    find_tool_pair_problems,
    lost_result,
    newest_turn_start,
    repair_tool_pairs,
)

__all__ = [
    "LOST_RESULT_TEXT",
    "EntryProjector",
    "ModelRef",
    "SessionContext",
    "Transform",
    "build_context_from_path",
    "default_transform",
    "derive_state",
    "find_tool_pair_problems",
    "lost_result",
    "newest_turn_start",
    "project_entries",
    "repair_tool_pairs",
    "to_llm_messages",
    "user_content",
]

log = logging.getLogger("sessiontree.context")

EntryProjector = Callable[
    [CustomEntry, int, Sequence[Entry]], Sequence[AgentMessage | dict[str, Any]]
]
"""``projector(entry, index, entries)`` → messages for a ``custom`` entry; ``index`` is the
entry's position in the transformed ``entries``."""

Transform = Callable[[Sequence[Entry]], Sequence[Entry]]
"""Maps the root → leaf path to the entries that are projected into the context."""


@dataclass(frozen=True)
class ModelRef:
    """A model by ``provider`` (e.g. ``anthropic``) and ``model_id`` (e.g. ``claude-opus-4-5``)."""

    provider: str
    """The provider's name as entries record it (``anthropic``, ``openai``, ...)."""
    model_id: str
    """The provider's model id (``claude-opus-4-5``)."""


@dataclass
class SessionContext:
    """What the next model call needs (docs/context.md)."""

    system_prompt: str
    """The ``system_prompt`` argument, else metadata ``systemPrompt``, else ``""``."""
    messages: list[AgentMessage] = field(default_factory=list)
    """The context messages, oldest first."""
    thinking_level: ThinkingLevel = "off"
    """The newest ``thinking_level_change`` on the path, else ``"off"``."""
    model: ModelRef | None = None
    """The newest model change or assistant model on the path; ``None`` when the path names
    none."""
    active_tool_names: list[str] | None = None
    """The newest ``active_tools_change`` on the path; ``None`` when there is none (no
    restriction: every tool is active)."""


def default_transform(path: Sequence[Entry]) -> list[Entry]:
    """Apply the newest compaction on the path (docs/context.md step 2).

    * none → the whole path;
    * ``retained_tail`` set (even ``[]``) → ``[c] + path[k+1:]``;
    * ``first_kept_entry_id`` at ``j < k`` → ``[c] + path[j:k] (older compactions dropped) +
      path[k+1:]``;
    * otherwise → ``[c] + path[k+1:]`` and a warning.
    """
    k = -1
    for i in range(len(path) - 1, -1, -1):
        if path[i].type == "compaction":
            k = i
            break
    if k < 0:
        return list(path)
    c = path[k]
    assert isinstance(c, CompactionEntry)
    after = list(path[k + 1 :])
    if c.retained_tail is not None:
        return [c, *after]
    if c.first_kept_entry_id is not None:
        for j in range(k):
            if path[j].id == c.first_kept_entry_id:
                kept = [e for e in path[j:k] if e.type != "compaction"]
                return [c, *kept, *after]
    log.warning(
        "compaction %s: firstKeptEntryId %r is not on the path before it; keeping nothing older",
        c.id,
        c.first_kept_entry_id,
    )
    return [c, *after]


_THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")


def state_snapshot(entry: Entry) -> dict[str, Any] | None:
    """The derived-state snapshot a ``compaction`` carries in ``details.state``, if any."""
    details = getattr(entry, "details", None) if entry.type == "compaction" else None
    state = (details.model_extra or {}).get("state") if details is not None else None
    return state if isinstance(state, dict) else None


def _sets_all_state(state: dict[str, Any]) -> bool:
    """Whether :func:`derive_state` takes all three values from this snapshot (nothing older)."""
    m = state.get("model", ...)
    model_set = m is None or (isinstance(m, dict) and bool(m.get("provider") and m.get("modelId")))
    return (
        model_set and state.get("thinkingLevel") in _THINKING_LEVELS and "activeToolNames" in state
    )


def context_start(compaction: Entry) -> str | None:
    """The oldest entry the default context needs when ``compaction`` is the newest on the path.

    :func:`default_transform` keeps nothing older than the compaction's first kept entry (or
    than the compaction itself, in retained-tail mode), and :func:`derive_state` nothing older
    than a snapshot that sets all three values. So when the compaction carries such a snapshot,
    the context is built alike from the path starting at the returned id as from the whole
    path. ``None``: the whole path is needed.
    """
    state = state_snapshot(compaction)
    if state is None or not _sets_all_state(state) or not isinstance(compaction, CompactionEntry):
        return None
    if compaction.retained_tail is not None:
        return compaction.id
    return compaction.first_kept_entry_id


class ContextStart:
    """The ``stop`` rule of :func:`~sessiontree.tree.trace_chain` for the default context.

    Walking up from the leaf, the first ``compaction`` met is the newest on the path; the walk
    then ends at its :func:`context_start` (never, when that is ``None``: the whole path is
    read). Items need ``id`` and ``type``; ``resolve`` turns a compaction item into its entry
    (identity for entries; a storage's light records pass their parser).
    """

    def __init__(self, resolve: Callable[[Any], Entry] | None = None) -> None:
        self._resolve = resolve
        self._target: str | None = None
        self._decided = False

    def __call__(self, item: Any) -> bool:
        if not self._decided:
            if item.type != "compaction":
                return False
            self._decided = True
            entry = item if self._resolve is None else self._resolve(item)
            self._target = context_start(entry)
        return self._target is not None and item.id == self._target

    @property
    def target(self) -> str | None:
        """After a walk: the entry the context starts at (``None``: whole path)."""
        return self._target


def _ms(entry: Entry) -> int:
    try:
        return ms_from_iso(entry.timestamp)
    except ValueError:
        return 0


def project_entries(
    entries: Sequence[Entry], entry_projectors: Mapping[str, EntryProjector] | None = None
) -> list[AgentMessage]:
    """Entries → messages (docs/context.md step 3); entries that carry no message give nothing."""
    projectors = entry_projectors or {}
    out: list[AgentMessage] = []
    for index, entry in enumerate(entries):
        if isinstance(entry, MessageEntry):
            out.append(entry.message)
        elif isinstance(entry, CustomMessageEntry):
            fields: dict[str, Any] = {
                "custom_type": entry.custom_type,
                "content": entry.content,
                "display": entry.display,
                "timestamp": _ms(entry),
            }
            if entry.details is not None:
                fields["details"] = entry.details
            out.append(CustomMessage(**fields))
        elif isinstance(entry, CompactionEntry):
            out.append(
                CompactionSummaryMessage(
                    summary=entry.summary, tokens_before=entry.tokens_before, timestamp=_ms(entry)
                )
            )
            if entry.retained_tail:
                out.extend(entry.retained_tail)
        elif isinstance(entry, BranchSummaryEntry):
            if entry.summary:
                out.append(
                    BranchSummaryMessage(
                        summary=entry.summary, from_id=entry.from_id, timestamp=_ms(entry)
                    )
                )
        elif isinstance(entry, CustomEntry):
            projector = projectors.get(entry.custom_type)
            if projector is not None:
                out.extend(parse_message(m) for m in projector(entry, index, entries))
    return out


def derive_state(
    path: Sequence[Entry],
) -> tuple[ModelRef | None, ThinkingLevel, list[str] | None]:
    """``(model, thinking_level, active_tool_names)`` from the whole path (docs/context.md step 4).

    A ``compaction`` whose ``details.state`` holds a snapshot (retained-tail checkpoints)
    counts as setting all three at its position.
    """
    model: ModelRef | None = None
    thinking: ThinkingLevel = "off"
    tools: list[str] | None = None
    for entry in path:
        t = entry.type
        if t == "message":
            msg = entry.message  # type: ignore[union-attr]
            if isinstance(msg, AssistantMessage) and msg.provider and msg.model:
                model = ModelRef(msg.provider, msg.model)
        elif t == "model_change":
            model = ModelRef(entry.provider, entry.model_id)  # type: ignore[union-attr]
        elif t == "thinking_level_change":
            thinking = entry.thinking_level  # type: ignore[union-attr]
        elif t == "active_tools_change":
            tools = list(entry.active_tool_names)  # type: ignore[union-attr]
        elif t == "compaction":
            state = state_snapshot(entry)
            if state is not None:
                m = state.get("model")
                if isinstance(m, dict) and m.get("provider") and m.get("modelId"):
                    model = ModelRef(m["provider"], m["modelId"])
                elif m is None and "model" in state:
                    model = None
                if state.get("thinkingLevel") in _THINKING_LEVELS:
                    thinking = state["thinkingLevel"]
                if "activeToolNames" in state:
                    names = state["activeToolNames"]
                    tools = list(names) if isinstance(names, list) else None
    return model, thinking, tools


def build_context_from_path(
    path: Sequence[Entry],
    *,
    system_prompt: str | None = None,
    metadata_system_prompt: str | None = None,
    transform: Transform = default_transform,
    entry_projectors: Mapping[str, EntryProjector] | None = None,
    repair: bool = True,
) -> SessionContext:
    """Run steps 2-5 of docs/context.md over a root → leaf path (step 1 is the storage's)."""
    messages = project_entries(transform(path), entry_projectors)
    if repair:
        messages = repair_tool_pairs(messages)
    model, thinking, tools = derive_state(path)
    prompt = system_prompt if system_prompt is not None else (metadata_system_prompt or "")
    return SessionContext(prompt, messages, thinking, model, tools)


def _content_text(content: str | Sequence[Any]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append({"type": "image", "data": block.data, "mime_type": block.mime_type})
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
)
"""The line that introduces a compaction summary to the model."""
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:"
)
"""The line that introduces a branch summary to the model."""


def user_content(
    msg: UserMessage
    | CustomMessage
    | CompactionSummaryMessage
    | BranchSummaryMessage
    | BashExecutionMessage,
) -> str | list[Any] | None:
    """What a model sees of a non-assistant, non-tool message: a user turn's content.

    Summaries are wrapped so the model knows they are summaries; a bash execution shows its
    command and output; ``None`` for a bash execution marked ``excludeFromContext``.
    """
    if isinstance(msg, UserMessage | CustomMessage):
        return msg.content
    if isinstance(msg, CompactionSummaryMessage):
        return f"{COMPACTION_SUMMARY_PREFIX}\n<summary>\n{msg.summary}\n</summary>"
    if isinstance(msg, BranchSummaryMessage):
        return f"{BRANCH_SUMMARY_PREFIX}\n<summary>\n{msg.summary}\n</summary>"
    if msg.exclude_from_context:
        return None
    return f"Ran `{msg.command}`\n{msg.output}"


def to_llm_messages(
    messages: Sequence[AgentMessage], *, include_thinking: bool = False
) -> list[dict[str, Any]]:
    """AgentMessages → provider-neutral chat messages (docs/context.md).

    Shapes (``content`` is a string, or a list of ``{"type": "text"|"image", ...}`` parts
    when images are present):

    * ``{"role": "user", "content": ...}`` — user, custom, summaries (prefixed so the model
      knows they are summaries), bash executions (command and output) unless
      ``excludeFromContext``;
    * ``{"role": "assistant", "content": str, "tool_calls": [{"id", "name", "arguments"}],
      "thinking": [str, ...]}`` — ``thinking`` only with ``include_thinking``;
    * ``{"role": "tool", "tool_call_id", "name", "content", "is_error"}``.

    Opaque messages (unknown roles) are left out.
    """
    out: list[dict[str, Any]] = []
    for msg in messages:
        if isinstance(
            msg,
            UserMessage
            | CustomMessage
            | CompactionSummaryMessage
            | BranchSummaryMessage
            | BashExecutionMessage,
        ):
            content = user_content(msg)
            if content is not None:
                out.append({"role": "user", "content": _content_text(content)})
        elif isinstance(msg, AssistantMessage):
            item: dict[str, Any] = {
                "role": "assistant",
                "content": "\n".join(b.text for b in msg.content if isinstance(b, TextContent)),
            }
            calls = [
                {"id": b.id, "name": b.name, "arguments": b.arguments}
                for b in msg.content
                if isinstance(b, ToolCall)
            ]
            if calls:
                item["tool_calls"] = calls
            if include_thinking:
                thinking = [b.thinking for b in msg.content if isinstance(b, ThinkingContent)]
                if thinking:
                    item["thinking"] = thinking
            out.append(item)
        elif isinstance(msg, ToolResultMessage):
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": msg.tool_call_id,
                    "name": msg.tool_name,
                    "content": _content_text(msg.content),
                    "is_error": msg.is_error,
                }
            )
        elif isinstance(msg, OpaqueMessage):
            continue
        else:  # pragma: no cover - every known role is handled above
            out.append({"role": "user", "content": message_text(msg)})
    return out
