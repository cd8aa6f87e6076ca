"""One line of text for an entry or a message: what ``show``, the viewer and other listings print.

Pure: no I/O, no terminal. The CLI (:mod:`sessiontree.cli.render`) and the web viewer
(:mod:`sessiontree.web.tree`) both describe entries through :func:`describe_entry`.
"""

from __future__ import annotations

from sessiontree import _json as exact_json
from sessiontree.entries import (
    ActiveToolsChangeEntry,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
)
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)

__all__ = [
    "LINE_WIDTH",
    "UNPRINTABLE",
    "describe_entry",
    "describe_message",
    "one_line",
    "printable",
    "tool_call_text",
]

LINE_WIDTH = 100
"""Characters of text shown per entry line."""


UNPRINTABLE = dict.fromkeys(
    [
        *range(0x00, 0x09),
        *range(0x0B, 0x20),
        0x7F,
        *range(0x80, 0xA0),
        *range(0x202A, 0x202F),  # bidirectional embeddings and overrides
        *range(0x2066, 0x206A),  # bidirectional isolates
    ],
    None,
)
"""Characters stored text must not carry to a terminal: control characters other than tab and
newline (escape sequences start with one) and the bidirectional overrides that make text read
in another order than it is stored. A :meth:`str.translate` table that drops them."""


def printable(text: str) -> str:
    """``text`` without :data:`UNPRINTABLE` characters: safe to print on a terminal."""
    return text.translate(UNPRINTABLE)


def one_line(text: str, width: int = LINE_WIDTH) -> str:
    """``text`` with whitespace runs folded to one space and unprintable characters dropped
    (:func:`printable`), cut to ``width`` characters (…)."""
    flat = " ".join(printable(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def tool_call_text(call: ToolCall) -> str:
    """A tool call as ``name({json arguments})``."""
    args = exact_json.dumps(call.arguments, default=str).decode() if call.arguments else ""
    return f"{call.name}({args})"


def describe_message(msg: AgentMessage, width: int = LINE_WIDTH) -> tuple[str, str]:
    """``(kind, text)`` for a message: its role and its first text or tool call, one line."""
    role = str(getattr(msg, "role", "?"))
    if isinstance(msg, AssistantMessage):
        text = message_text(msg)
        calls = msg.tool_calls()
        if calls:
            call_text = "→ " + tool_call_text(calls[0])
            if len(calls) > 1:
                call_text += f" (+{len(calls) - 1} more calls)"
            text = f"{one_line(text, width // 2)} {call_text}" if text.strip() else call_text
        elif not text.strip() and msg.error_message:
            text = f"[{msg.stop_reason}] {msg.error_message}"
        return role, one_line(text, width)
    if isinstance(msg, ToolResultMessage):
        prefix = f"{msg.tool_name} {'ERROR ' if msg.is_error else ''}"
        return role, one_line(prefix + message_text(msg), width)
    if isinstance(msg, BashExecutionMessage):
        code = "" if msg.exit_code is None else f" (exit {msg.exit_code})"
        return role, one_line(f"$ {msg.command}{code}", width)
    if isinstance(msg, CustomMessage):
        return f"custom[{msg.custom_type}]", one_line(message_text(msg), width)
    if isinstance(msg, UserMessage | BranchSummaryMessage | CompactionSummaryMessage):
        return role, one_line(message_text(msg), width)
    return role, one_line(message_text(msg), width)


def describe_entry(entry: Entry, width: int = LINE_WIDTH) -> tuple[str, str]:
    """``(kind, text)`` for an entry: a message's role and text, else the entry type and gist."""
    if isinstance(entry, MessageEntry):
        return describe_message(entry.message, width)
    if isinstance(entry, CompactionEntry):
        where = (
            f"kept from {entry.first_kept_entry_id}"
            if entry.first_kept_entry_id
            else f"retained tail of {len(entry.retained_tail or [])} messages"
        )
        head = f"{entry.tokens_before:,} tokens before, {where}: "
        return "compaction", one_line(head + entry.summary, width)
    if isinstance(entry, BranchSummaryEntry):
        return "branch_summary", one_line(f"from {entry.from_id}: {entry.summary}", width)
    if isinstance(entry, ModelChangeEntry):
        return "model_change", f"{entry.provider}/{entry.model_id}"
    if isinstance(entry, ThinkingLevelChangeEntry):
        return "thinking_level_change", entry.thinking_level
    if isinstance(entry, ActiveToolsChangeEntry):
        return "active_tools_change", one_line(", ".join(entry.active_tool_names), width)
    if isinstance(entry, CustomMessageEntry):
        content = entry.content
        text = (
            content
            if isinstance(content, str)
            else " ".join(getattr(b, "text", "") for b in content)
        )
        return f"custom_message[{entry.custom_type}]", one_line(text, width)
    if isinstance(entry, CustomEntry):
        data = exact_json.dumps(entry.data, default=str).decode() if entry.data is not None else ""
        return f"custom[{entry.custom_type}]", one_line(data, width)
    if isinstance(entry, LabelEntry):
        return "label", f"{entry.target_id} = {entry.label!r}"
    if isinstance(entry, LeafEntry):
        return "leaf", f"→ {entry.target_id}"
    if isinstance(entry, SessionInfoEntry):
        return "session_info", one_line(entry.name, width)
    return entry.type, ""
