"""Small message builders for tests and examples (plain camelCase dicts, as a user would pass)."""

from __future__ import annotations

from typing import Any

__all__ = ["assistant", "bash", "tool_call", "tool_result", "user"]

_TS = [1_700_000_000_000]


def _ts() -> int:
    _TS[0] += 1000
    return _TS[0]


def user(text: str) -> dict[str, Any]:
    """A user message ``{"role": "user", "content": [text block]}``."""
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": _ts()}


def tool_call(call_id: str, name: str = "read", **arguments: Any) -> dict[str, Any]:
    """A ``toolCall`` content block."""
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def assistant(
    text: str = "",
    *calls: dict[str, Any],
    provider: str = "test",
    model: str = "test-model",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An assistant message with optional text and tool-call blocks (see :func:`tool_call`)."""
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    content.extend(calls)
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": "test-api",
        "provider": provider,
        "model": model,
        "stopReason": "toolUse" if calls else "stop",
        "timestamp": _ts(),
    }
    if usage is not None:
        msg["usage"] = usage
    return msg


def tool_result(
    call_id: str, text: str = "ok", *, name: str = "read", is_error: bool = False
) -> dict[str, Any]:
    """A ``toolResult`` message answering ``call_id``."""
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
        "timestamp": _ts(),
    }


def bash(command: str, output: str = "", exit_code: int = 0) -> dict[str, Any]:
    """A ``bashExecution`` message."""
    return {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": exit_code,
        "cancelled": False,
        "truncated": False,
        "timestamp": _ts(),
    }
