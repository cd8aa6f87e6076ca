"""Builders shared by the compaction, branching and harness tests (not a test module)."""

from __future__ import annotations

from typing import Any

from sessiontree import Session
from sessiontree.messages import AgentMessage, CompactionSummaryMessage, parse_message
from sessiontree.repos import MemoryRepo

_clock = [1_700_000_000_000]


def tick() -> int:
    """A strictly increasing Unix-ms timestamp, so message order is time order."""
    _clock[0] += 1000
    return _clock[0]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": tick()}


def assistant(
    text: str = "",
    calls: list[tuple[str, str, dict[str, Any]]] | None = None,
    *,
    usage: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    for call_id, name, args in calls or []:
        content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": args})
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "provider": "anthropic",
        "model": "claude-test",
        "stopReason": "toolUse" if calls else "stop",
        "timestamp": tick(),
        **extra,
    }
    if usage is not None:
        msg["usage"] = {"input": usage, "totalTokens": usage}
    return msg


def result(call_id: str, text: str, *, name: str = "bash", error: bool = False) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": error,
        "timestamp": tick(),
    }


def words(n_tokens: int, tag: str = "w") -> str:
    """Text of about ``n_tokens`` estimated tokens (4 characters each)."""
    return (f"{tag} " * (n_tokens * 2))[: n_tokens * 4]


async def new_session() -> Session:
    return await MemoryRepo().create()


async def tool_rounds(session: Session, rounds: int, *, size: int = 200, prefix: str = "r") -> None:
    """``rounds`` turns of: user request, assistant tool call, tool result, assistant answer."""
    for i in range(rounds):
        await session.append_message(user(f"{prefix}{i}: please do step {i}. {words(size, 'u')}"))
        await session.append_message(
            assistant("I'll run it.", [(f"{prefix}c{i}", "bash", {"command": f"step {i}"})])
        )
        await session.append_message(result(f"{prefix}c{i}", words(size, "out")))
        await session.append_message(assistant(f"Step {i} done. {words(size // 2, 'a')}"))


def real(messages: list[AgentMessage]) -> list[AgentMessage]:
    """Context messages that stand for stored data (no synthetic results, no summaries)."""
    from sessiontree.context import LOST_RESULT_TEXT
    from sessiontree.messages import ToolResultMessage, message_text

    out: list[AgentMessage] = []
    for m in messages:
        if isinstance(m, CompactionSummaryMessage):
            continue
        if isinstance(m, ToolResultMessage) and message_text(m) == LOST_RESULT_TEXT:
            continue
        out.append(m)
    return out


def left_context(before: list[AgentMessage], after: list[AgentMessage]) -> list[AgentMessage]:
    """The messages of ``before`` that are not in ``after`` (same object, else equal value)."""
    same = {id(m) for m in after}
    before_ids = {id(b) for b in before}
    rest = [m for m in after if id(m) not in before_ids]
    gone = []
    for m in before:
        if id(m) in same:
            continue
        if m in rest:
            rest.remove(m)
        else:
            gone.append(m)
    return gone


def contains(haystack: list[AgentMessage], needle: AgentMessage) -> bool:
    """``needle in haystack``, checking identity for every element before equality."""
    return any(m is needle for m in haystack) or needle in haystack


def as_message(obj: Any) -> AgentMessage:
    return parse_message(obj)
