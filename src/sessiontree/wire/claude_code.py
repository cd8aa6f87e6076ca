"""Claude Code lines → messages: content blocks, tool results, one reply over several lines.

Assistant ``text`` / ``thinking`` / ``tool_use`` blocks become text / thinking / toolCall
blocks (``signature`` → ``thinkingSignature``, ``input`` → ``arguments``); other block types
stay opaque with every key. A user line whose content holds ``tool_result`` blocks becomes one
``toolResult`` message per block (the tool name looked up from the call, ``toolUseResult`` as
``details``), then a user message for any other blocks. What a line carries besides its
message (``cwd``, ``gitBranch``, ``isMeta``, ``requestId``, the raw ``message`` fields, ...)
is kept on the entry under ``source = {"format": "claude-code", "line": n, "record": {...}}``.
"""

from __future__ import annotations

from typing import Any

from sessiontree.entries import Entry, MessageEntry
from sessiontree.messages import (
    AssistantMessage,
    ContentBlock,
    ImageContent,
    OpaqueBlock,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = [
    "SYNTHETIC_MODEL",
    "assistant_entry",
    "block",
    "line_record",
    "result_content",
    "user_entries",
]

SYNTHETIC_MODEL = "<synthetic>"
"""The ``model`` Claude Code writes on replies it made up itself (API errors, interruptions)."""

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
    "pause_turn": "stop",
    "refusal": "error",
}


def _image(block: dict[str, Any]) -> ContentBlock:
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        extra = {k: v for k, v in block.items() if k not in ("type", "source")}
        return ImageContent(
            data=str(source.get("data", "")),
            mime_type=str(source.get("media_type", "")),
            **extra,
        )
    return OpaqueBlock(**block)


def block(raw: Any) -> ContentBlock:
    """One Claude content block as ours; unknown kinds stay opaque with every key."""
    if not isinstance(raw, dict):
        return TextContent(text=str(raw))
    kind = raw.get("type")
    rest = {k: v for k, v in raw.items() if k != "type"}
    if kind == "text":
        return TextContent(**rest)
    if kind == "thinking":
        signature = rest.pop("signature", None)
        if signature:
            rest["thinking_signature"] = signature
        return ThinkingContent(**rest)
    if kind == "tool_use":
        args = rest.pop("input", None)
        return ToolCall(arguments=args if isinstance(args, dict) else {"input": args}, **rest)
    if kind == "image":
        return _image(raw)
    return OpaqueBlock(**raw)


def result_content(content: Any) -> list[ContentBlock]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextContent(text=content)]
    if isinstance(content, list):
        return [block(b) for b in content]
    return [TextContent(text=str(content))]


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    counts = {
        "input": raw.get("input_tokens"),
        "output": raw.get("output_tokens"),
        "cache_read": raw.get("cache_read_input_tokens"),
        "cache_write": raw.get("cache_creation_input_tokens"),
    }
    ints = {
        k: v if isinstance(v, int) and not isinstance(v, bool) else 0 for k, v in counts.items()
    }
    # what prices the call besides the counts: the speed it ran at, and how much of the cache
    # write was to the 1-hour cache (priced above the 5-minute one)
    extra: dict[str, Any] = {}
    if isinstance(raw.get("speed"), str):
        extra["speed"] = raw["speed"]
    creation = raw.get("cache_creation")
    one_hour = creation.get("ephemeral_1h_input_tokens") if isinstance(creation, dict) else None
    if isinstance(one_hour, int) and not isinstance(one_hour, bool) and one_hour > 0:
        extra["cacheWrite1h"] = one_hour
    return Usage(**ints, total_tokens=sum(ints.values()), **extra)


def line_record(obj: dict[str, Any], line: int, *, drop: tuple[str, ...]) -> dict[str, Any]:
    record = {k: v for k, v in obj.items() if k not in ("message", *drop)}
    msg = obj.get("message")
    if isinstance(msg, dict):
        record["message"] = {k: v for k, v in msg.items() if k != "content"}
    return {"format": "claude-code", "line": line, "record": record}


def user_entries(
    obj: dict[str, Any], line: int, uuid: str, ts: str, ms: int, tool_names: dict[str, str]
) -> list[Entry]:
    content = obj["message"].get("content")
    source = line_record(obj, line, drop=("toolUseResult",))
    if not isinstance(content, list):
        text = content if isinstance(content, str) else ("" if content is None else str(content))
        message = UserMessage(content=text, timestamp=ms)
        return [MessageEntry(id=uuid, timestamp=ts, message=message, source=source)]
    messages: list[Any] = []
    other: list[ContentBlock] = []
    details = obj.get("toolUseResult")
    for raw in content:
        if isinstance(raw, dict) and raw.get("type") == "tool_result":
            call_id = str(raw.get("tool_use_id", ""))
            extra = {
                k: v
                for k, v in raw.items()
                if k not in ("type", "tool_use_id", "content", "is_error")
            }
            fields: dict[str, Any] = {
                "tool_call_id": call_id,
                "tool_name": tool_names.get(call_id, ""),
                "content": result_content(raw.get("content")),
                "is_error": bool(raw.get("is_error", False)),
                "timestamp": ms,
                **extra,
            }
            if details is not None and not any(isinstance(m, ToolResultMessage) for m in messages):
                fields["details"] = details
            messages.append(ToolResultMessage(**fields))
        else:
            other.append(block(raw))
    if other or not messages:
        messages.append(UserMessage(content=other, timestamp=ms))
    if details is not None and not any(isinstance(m, ToolResultMessage) for m in messages):
        source["record"]["toolUseResult"] = details
    entries: list[Entry] = []
    for i, msg in enumerate(messages):
        if i == 0:
            entries.append(MessageEntry(id=uuid, timestamp=ts, message=msg, source=source))
        else:
            entries.append(MessageEntry(id=f"{uuid}:{i + 1}", timestamp=ts, message=msg))
    return entries


def assistant_entry(lines: list[tuple[int, dict[str, Any]]], uuid: str, ts: str, ms: int) -> Entry:
    """One assistant message from the lines of one reply (same ``message.id``), in file order.

    The blocks of every line, in order; the model of the first line that names one; the stop
    reason of the last line that has one; the ``usage`` of the last line (Claude Code writes
    the reply's usage on each of its lines, so one copy is kept). A line flagged
    ``isApiErrorMessage`` (rate limit, overload) is an error reply (``stopReason: "error"``,
    ``errorMessage`` its text); a reply made up by Claude Code (model ``<synthetic>``) names
    no model, so it never sets the context's model. The other lines' records are kept in
    ``source.merged``.

    Raises:
        ValidationError, ValueError, TypeError: a line's message cannot be read.
    """
    blocks: list[ContentBlock] = []
    model: str | None = None
    stop: str | None = None
    is_error = False
    for _, obj in lines:
        msg = obj["message"]
        content = msg.get("content")
        if isinstance(content, list):
            blocks.extend(block(b) for b in content)
        elif isinstance(content, str) and content:
            blocks.append(TextContent(text=content))
        elif not (content is None or isinstance(content, str)):
            blocks.append(TextContent(text=str(content)))  # as user lines and results keep it
        if model is None and isinstance(msg.get("model"), str):
            model = msg["model"]
        if isinstance(msg.get("stop_reason"), str):
            stop = _STOP_REASONS.get(msg["stop_reason"], msg["stop_reason"])
        is_error = is_error or obj.get("isApiErrorMessage") is True
    fields: dict[str, Any] = {
        "content": blocks,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "timestamp": ms,
    }
    if model is not None and model != SYNTHETIC_MODEL:
        fields["model"] = model
    if is_error:
        fields["stop_reason"] = "error"
        text = " ".join(b.text for b in blocks if isinstance(b, TextContent)).strip()
        fields["error_message"] = text or "API error"
    elif stop is not None:
        fields["stop_reason"] = stop
    elif any(isinstance(b, ToolCall) for b in blocks):
        fields["stop_reason"] = "toolUse"
    usage = _usage(lines[-1][1]["message"].get("usage"))
    if usage is not None:
        fields["usage"] = usage
    first_line, first = lines[0]
    source = line_record(first, first_line, drop=())
    if len(lines) > 1:
        source["merged"] = [line_record(o, n, drop=()) for n, o in lines[1:]]
    return MessageEntry(id=uuid, timestamp=ts, message=AssistantMessage(**fields), source=source)
