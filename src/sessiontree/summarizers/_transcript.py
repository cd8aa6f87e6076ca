"""The transcript the LLM summarisers send: messages written out as plain text (docs/compaction.md).

The model never sees the messages as a chat to continue. They are written out as one
transcript, a line prefix per message, inside ``<conversation>`` tags::

    [User]: fix the failing test in tests/test_io.py
    [Assistant thinking]: the fixture probably …
    [Assistant]: Let me look at the test.
    [Assistant tool call]: read {"path":"tests/test_io.py"}
    [Tool result: read]: import pytest …
    [Tool result: bash (error)]: FAILED tests/test_io.py::test_roundtrip …
    [User bash]: $ git status (exit code 0)
    [Branch summary]: …
    [Compaction summary]: …
    [Custom message: note]: …

Long parts are cut in the middle, keeping the head and the tail (tool results to
:data:`TOOL_RESULT_CHARS` characters, bash output to :data:`BASH_OUTPUT_CHARS`, thinking to
:data:`THINKING_CHARS`, each string argument of a tool call to :data:`TOOL_ARGUMENT_CHARS`,
user and assistant text to :data:`MESSAGE_CHARS`). Messages of a role this library does not
model, and bash executions excluded from the context, are left out. Given an input budget
(``max_input_tokens`` of the summarisers, for models with a small window), a transcript that
does not fit is rebuilt with tighter limits, and then loses whole messages from its middle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sessiontree import _json as exact_json
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ContentBlock,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "BASH_OUTPUT_CHARS",
    "DEFAULT_LIMITS",
    "MESSAGE_CHARS",
    "THINKING_CHARS",
    "TIGHT_LIMITS",
    "TOOL_ARGUMENT_CHARS",
    "TOOL_RESULT_CHARS",
    "TranscriptLimits",
    "serialize_messages",
    "truncate_middle",
]

TOOL_RESULT_CHARS = 2000
"""Characters kept of one tool result's text."""
BASH_OUTPUT_CHARS = 2000
"""Characters kept of one user bash execution's output."""
THINKING_CHARS = 1000
"""Characters kept of one thinking block."""
TOOL_ARGUMENT_CHARS = 500
"""Characters kept of each string value inside a tool call's arguments (file contents, edits)."""
MESSAGE_CHARS = 20_000
"""Characters kept of one user, assistant or custom message's text."""


@dataclass(frozen=True)
class TranscriptLimits:
    """Characters kept of each part of a message in the transcript (``0`` drops thinking)."""

    tool_result_chars: int = TOOL_RESULT_CHARS
    bash_output_chars: int = BASH_OUTPUT_CHARS
    thinking_chars: int = THINKING_CHARS
    tool_argument_chars: int = TOOL_ARGUMENT_CHARS
    message_chars: int = MESSAGE_CHARS


DEFAULT_LIMITS = TranscriptLimits()
"""The limits used unless the transcript must fit a budget."""
TIGHT_LIMITS = TranscriptLimits(
    tool_result_chars=300,
    bash_output_chars=300,
    thinking_chars=0,
    tool_argument_chars=120,
    message_chars=4000,
)
"""The limits tried when the transcript with :data:`DEFAULT_LIMITS` exceeds its budget."""


def truncate_middle(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: the first two thirds and the last third kept.

    The cut is marked ``[… N characters omitted …]``. Text within the limit is returned as is.
    """
    if limit <= 0 or len(text) <= limit:
        return text
    head = (limit * 2) // 3
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[… {omitted:,} characters omitted …]\n{text[len(text) - tail :]}"


def _shorten_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return truncate_middle(value, limit)
    if isinstance(value, dict):
        return {k: _shorten_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten_strings(v, limit) for v in value]
    return value


def _arguments_json(arguments: dict[str, Any], limit: int) -> str:
    shortened = _shorten_strings(arguments, limit)
    try:
        return exact_json.dumps(shortened, non_str_keys=True).decode()
    except TypeError:  # a value orjson cannot encode (kept from a foreign writer)
        return repr(shortened)


def _block_text(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        return f"[image {block.mime_type}]"
    if isinstance(block, ThinkingContent | ToolCall):
        return ""
    return f"[{block.type} block]"


def _content_text(content: str | Sequence[ContentBlock]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(t for t in (_block_text(b) for b in content) if t)


def _assistant_lines(msg: AssistantMessage, limits: TranscriptLimits) -> list[str]:
    lines: list[str] = []
    text_parts: list[str] = []

    def flush() -> None:
        if text_parts:
            text = truncate_middle("\n".join(text_parts), limits.message_chars)
            lines.append(f"[Assistant]: {text}")
            text_parts.clear()

    for block in msg.content:
        if isinstance(block, ThinkingContent):
            if block.thinking.strip() and limits.thinking_chars > 0:
                thinking = truncate_middle(block.thinking, limits.thinking_chars)
                lines.append(f"[Assistant thinking]: {thinking}")
        elif isinstance(block, ToolCall):
            flush()
            arguments = _arguments_json(block.arguments, limits.tool_argument_chars)
            lines.append(f"[Assistant tool call]: {block.name} {arguments}")
        else:
            text = _block_text(block)
            if text:
                text_parts.append(text)
    flush()
    if msg.stop_reason in ("error", "aborted"):
        reason = msg.error_message or msg.stop_reason
        lines.append(f"[Assistant {msg.stop_reason}]: {reason}")
    return lines


def _message_lines(msg: AgentMessage, limits: TranscriptLimits) -> list[str]:
    if isinstance(msg, UserMessage):
        return [f"[User]: {truncate_middle(_content_text(msg.content), limits.message_chars)}"]
    if isinstance(msg, AssistantMessage):
        return _assistant_lines(msg, limits)
    if isinstance(msg, ToolResultMessage):
        name = msg.tool_name or "tool"
        flag = " (error)" if msg.is_error else ""
        text = truncate_middle(_content_text(msg.content), limits.tool_result_chars)
        return [f"[Tool result: {name}{flag}]: {text}"]
    if isinstance(msg, BashExecutionMessage):
        if msg.exclude_from_context:
            return []
        if msg.cancelled:
            status = "cancelled"
        elif msg.exit_code is None:
            status = "no exit code"
        else:
            status = f"exit code {msg.exit_code}"
        output = truncate_middle(msg.output, limits.bash_output_chars)
        return [f"[User bash]: $ {msg.command} ({status})\n{output}".rstrip()]
    if isinstance(msg, CustomMessage):
        text = truncate_middle(_content_text(msg.content), limits.message_chars)
        return [f"[Custom message: {msg.custom_type}]: {text}"]
    if isinstance(msg, BranchSummaryMessage):
        return [f"[Branch summary]: {msg.summary}"]
    if isinstance(msg, CompactionSummaryMessage):
        return [f"[Compaction summary]: {msg.summary}"]
    return []  # OpaqueMessage: never shown to a model (docs/entries.md)


def _blocks(messages: Sequence[AgentMessage], limits: TranscriptLimits) -> list[str]:
    return ["\n".join(lines) for m in messages if (lines := _message_lines(m, limits))]


def _fit(blocks: list[str], max_chars: int) -> list[str]:
    """Keep whole blocks from the start (a quarter of the budget) and from the end (the rest)."""
    sep = 2  # the blank line between blocks
    max_chars -= 100  # room for the marker that says how many messages were left out
    head: list[str] = []
    used = 0
    for block in blocks:
        if used + len(block) + sep > max_chars // 4:
            break
        head.append(block)
        used += len(block) + sep
    tail: list[str] = []
    for block in reversed(blocks[len(head) :]):
        if used + len(block) + sep > max_chars:
            break
        tail.append(block)
        used += len(block) + sep
    if not tail and len(head) < len(blocks):  # the newest message alone is too long: cut it
        tail.append(truncate_middle(blocks[-1], max(max_chars - used - sep - 60, 200)))
    tail.reverse()
    omitted = len(blocks) - len(head) - len(tail)
    if omitted == 0:
        return blocks
    marker = f"[… {omitted:,} messages omitted to fit the summariser's input budget …]"
    return [*head, marker, *tail]


def serialize_messages(messages: Sequence[AgentMessage], *, max_chars: int | None = None) -> str:
    """The transcript of ``messages`` (oldest first), one block per message, blank-line separated.

    See the module docstring for the line prefixes and :data:`DEFAULT_LIMITS` for how much of
    each part is kept (characters). With ``max_chars``, a transcript that is too long is
    rebuilt with :data:`TIGHT_LIMITS`; if still too long, whole messages are left out of the
    middle (the earliest ones, which carry the goal, and the most recent ones are kept) and a
    marker says how many. Returns ``""`` when no message has anything to show.
    """
    blocks = _blocks(messages, DEFAULT_LIMITS)
    if max_chars is None or _length(blocks) <= max_chars:
        return "\n\n".join(blocks)
    blocks = _blocks(messages, TIGHT_LIMITS)
    if _length(blocks) > max_chars:
        blocks = _fit(blocks, max_chars)
    return "\n\n".join(blocks)


def _length(blocks: list[str]) -> int:
    return sum(len(b) for b in blocks) + 2 * max(len(blocks) - 1, 0)
