"""Anthropic Messages: the rules sessiontree applies.

The environment variables of the endpoint and key, the thinking budget per level, the
stop-reason map, the usage map and the prompt-cache breakpoints (:func:`cache_breakpoints`).
The ``anthropic`` SDK is not imported here.
"""

from __future__ import annotations

from typing import Any

from sessiontree.messages import Usage
from sessiontree.providers.endpoint import read_tokens

__all__ = [
    "API",
    "AUTH_TOKEN_ENV",
    "CACHE",
    "KEY_ENV",
    "STOP_REASONS",
    "THINKING_BUDGETS",
    "URL_ENV",
    "anthropic_usage",
    "cache_breakpoints",
    "stop_reason",
]

API = "anthropic-messages"
"""The ``api`` written on the messages of this wire protocol."""
URL_ENV = "ANTHROPIC_BASE_URL"
"""The environment variable holding the base URL (the ``anthropic`` SDK's own)."""
KEY_ENV = "ANTHROPIC_API_KEY"
"""The environment variable holding the API key (the ``anthropic`` SDK's own)."""
AUTH_TOKEN_ENV = "ANTHROPIC_AUTH_TOKEN"
"""The SDK's other credential: a bearer token, used when there is no API key."""

THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32000}
"""Thinking tokens allowed per level (``budget_tokens``); ``max_tokens`` is raised above it."""

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
    "refusal": "error",
}
"""sessiontree's stop reason by Anthropic's ``stop_reason`` (``None`` counts as ``end_turn``)."""


def stop_reason(stop: str | None) -> tuple[str, str]:
    """``(stop_reason, vendor_reason)`` of an answer that ended with ``stop``;
    ``vendor_reason`` is ``"stop_reason '<value>'"``, led by "the model refused to answer"
    for a refusal."""
    reason = f"stop_reason {stop!r}"
    if stop == "refusal":
        reason = f"the model refused to answer ({reason})"
    return STOP_REASONS.get(stop or "end_turn", "stop"), reason


def anthropic_usage(usage: Any) -> Usage | None:
    """The SDK's ``Usage`` as a :class:`~sessiontree.messages.Usage` (tokens).

    Anthropic reports uncached input, cache reads and cache writes separately, so they map
    one to one; ``total_tokens`` is their sum plus the output. ``None`` when there is no
    usage, or when it is malformed (a count that is not a whole number ``>= 0``: the usage
    is unknown).
    """
    if usage is None:
        return None
    fields = (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    )
    counts = read_tokens(usage, fields)
    if counts is None:
        return None
    n_in, n_out, n_read, n_write = counts
    return Usage(
        input=n_in,
        output=n_out,
        cache_read=n_read,
        cache_write=n_write,
        total_tokens=n_in + n_out + n_read + n_write,
    )


CACHE = {"type": "ephemeral"}
"""An Anthropic ``cache_control``: the prompt up to this block is cached (5 minutes)."""


def _cacheable(block: dict[str, Any]) -> bool:
    """A block a breakpoint may sit on: not thinking, and not an empty text."""
    kind = block.get("type")
    return kind not in ("thinking", "redacted_thinking") and not (
        kind == "text" and not block.get("text")
    )


def _mark_last(blocks: list[dict[str, Any]]) -> bool:
    for block in reversed(blocks):
        if _cacheable(block):
            block["cache_control"] = dict(CACHE)
            return True
    return False


def cache_breakpoints(body: dict[str, Any]) -> None:
    """Mark at most four prompt-cache breakpoints on a Messages request body, in place.

    Anthropic caches the prompt up to each marked block: the tools (the last tool), the
    system prompt (written as one text block), the newest message and the user message
    before it, so each turn reads the conversation so far from the cache and writes only what
    is new (docs/harness.md). A thinking block or an empty text is never marked.
    """
    tools = body.get("tools")
    if tools:
        tools[-1]["cache_control"] = dict(CACHE)
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": dict(CACHE)}]
    messages = body.get("messages") or []
    marked = 0
    for message in reversed(messages):
        if marked == 2:
            break
        if marked == 1 and message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            if not content:
                continue
            message["content"] = content = [{"type": "text", "text": content}]
        if isinstance(content, list) and _mark_last(content):
            marked += 1
