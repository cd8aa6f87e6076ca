"""Token estimates and the "is it time?" test of compaction (docs/compaction.md). Pure, no I/O."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessiontree import _json as exact_json
from sessiontree.errors import CompactionError
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
    UserMessage,
)

__all__ = [
    "IMAGE_TOKENS",
    "CompactionSettings",
    "TokenCounter",
    "coerce_settings",
    "estimate_context_tokens",
    "estimate_tokens",
    "should_compact",
]

IMAGE_TOKENS = 1200
"""Tokens counted for one image block (docs/compaction.md)."""

TokenCounter = Callable[[AgentMessage], int]
"""``counter(message) -> tokens``; replaces :func:`estimate_tokens` where accepted."""


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
            chars += len(block.name) + len(exact_json.dumps(block.arguments, default=str))
        elif isinstance(block, ImageContent):
            images += 1
    return chars, images


def estimate_tokens(message: AgentMessage) -> int:
    """Estimated tokens of one message: characters / 4 rounded up, images 1,200 each (docs/compaction.md).

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

    The anchor is the newest assistant message that is neither ``error`` nor ``aborted`` (their
    usage is what a failed call cost, summed over its attempts, not the size of a context they
    completed) with non-zero ``usage`` whose ``timestamp`` is
    later than that of every ``compactionSummary``/``branchSummary`` message in the list; usage
    recorded before the newest summary describes a context that no longer exists (docs/compaction.md).
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
            and msg.stop_reason not in ("error", "aborted")
            and msg.usage is not None
            and msg.usage.context_tokens() > 0
            and msg.timestamp > newest_summary
        ):
            return msg.usage.context_tokens() + sum(counter(m) for m in messages[i + 1 :])
    return sum(counter(m) for m in messages)


@dataclass(frozen=True)
class CompactionSettings:
    """When to compact and how much to keep (docs/compaction.md).

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
        if not isinstance(self.enabled, bool):
            raise CompactionError(
                "invalid_settings", f"enabled must be a bool, not {self.enabled!r}"
            )
        for name in ("reserve_tokens", "keep_recent_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise CompactionError(
                    "invalid_settings", f"{name} must be an int (tokens), not {value!r}"
                )
        if self.reserve_tokens < 0 or self.keep_recent_tokens < 0:
            raise CompactionError(
                "invalid_settings", "reserve_tokens and keep_recent_tokens must be >= 0"
            )


_SETTING_NAMES = {
    "enabled": "enabled",
    "reserve_tokens": "reserve_tokens",
    "reserveTokens": "reserve_tokens",
    "keep_recent_tokens": "keep_recent_tokens",
    "keepRecentTokens": "keep_recent_tokens",
}


def coerce_settings(value: object, *, session_id: str | None = None) -> CompactionSettings:
    """``value`` as :class:`CompactionSettings`: ``None`` → the defaults, a settings object as
    is, a mapping validated into one (keys ``enabled``, ``reserve_tokens``/``reserveTokens``,
    ``keep_recent_tokens``/``keepRecentTokens``; pi's ``settings.json`` spelling is accepted).

    Raises:
        CompactionError: ``invalid_settings`` — another type, an unknown key, a wrong value
            type or a negative token count; names ``session_id``.
    """
    if value is None:
        return CompactionSettings()
    if isinstance(value, CompactionSettings):
        return value
    if not isinstance(value, Mapping):
        raise CompactionError(
            "invalid_settings",
            f"settings must be CompactionSettings or a mapping, not {type(value).__name__}",
            session_id=session_id,
        )
    fields: dict[str, Any] = {}
    for key, item in value.items():
        name = _SETTING_NAMES.get(key) if isinstance(key, str) else None
        if name is None:
            raise CompactionError(
                "invalid_settings",
                f"unknown compaction setting {key!r} (known: enabled, reserve_tokens, "
                "keep_recent_tokens)",
                session_id=session_id,
            )
        fields[name] = item
    try:
        return CompactionSettings(**fields)
    except CompactionError as exc:
        raise CompactionError(
            "invalid_settings", str(exc).removeprefix("[invalid_settings] "), session_id=session_id
        ) from exc


def should_compact(
    context_tokens: int,
    context_window: int,
    settings: CompactionSettings | Mapping[str, Any] | None = None,
) -> bool:
    """``settings.enabled and context_tokens > context_window - reserve_tokens`` (docs/compaction.md).

    Args:
        context_tokens: the context size (:func:`estimate_context_tokens`), tokens.
        context_window: the model's window, tokens.
        settings: defaults to :class:`CompactionSettings`.
    """
    s = coerce_settings(settings)
    return s.enabled and context_tokens > context_window - s.reserve_tokens
