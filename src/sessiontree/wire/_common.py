"""What every wire converter does first: the messages a provider may be sent, pairs intact.

Providers reject a request whose tool calls and tool results do not pair up, on every later
turn, so the converters never trust the stored history to be tidy: :func:`request_messages`
drops failed and aborted replies (with their results), moves each result after its call
(:func:`~sessiontree.context.repair_tool_pairs`) and gives every call still without a result
a synthetic error result — also in the newest turn, whose calls the converters' callers send
only once they have run (a call without a result there was interrupted).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sessiontree.context import lost_result, repair_tool_pairs
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    OpaqueBlock,
    OpaqueMessage,
    ToolCall,
    ToolResultMessage,
)

__all__ = ["FAILED_STOP_REASONS", "request_messages", "safe_tool_id"]

FAILED_STOP_REASONS = frozenset({"error", "aborted"})
"""Assistant stop reasons whose message is persisted but never sent back to a model."""

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")


def safe_tool_id(call_id: str) -> str:
    """``call_id`` with every character outside ``[A-Za-z0-9_-]`` replaced by ``_``, at most 64
    characters: the id pattern Anthropic requires (ids imported from other agents may hold
    ``.``, ``:`` or ``|``). The same id always maps to the same result."""
    safe = _UNSAFE_ID.sub("_", call_id)[:64]
    return safe or "call"


def _results_follow_calls(messages: Sequence[AgentMessage]) -> bool:
    """Whether every result already follows the assistant message that issued its call, in
    call order and once (what context building produces): then only the calls left without
    a result at the end of a batch need one."""
    expected: list[str] = []
    at = 0
    for msg in messages:
        if isinstance(msg, ToolResultMessage):
            if at >= len(expected) or msg.tool_call_id != expected[at]:
                return False
            at += 1
        else:
            expected = (
                [c.id for c in msg.content if isinstance(c, ToolCall)]
                if isinstance(msg, AssistantMessage)
                else []
            )
            at = 0
    return True


def request_messages(messages: Sequence[AgentMessage]) -> list[AgentMessage]:
    """The messages of ``messages`` that go into a request, every tool call paired.

    * an assistant message with ``stopReason`` ``error`` or ``aborted`` is left out, and so
      are the results of its tool calls;
    * results move to directly after their call (a result with no call is left out);
    * a call with no result gets an ``isError`` result saying the result was lost.
    """
    dropped: set[str] = set()
    kept: list[AgentMessage] = []
    for msg in messages:
        if isinstance(msg, AssistantMessage) and msg.stop_reason in FAILED_STOP_REASONS:
            dropped.update(call.id for call in msg.tool_calls())
            continue
        if isinstance(msg, ToolResultMessage) and msg.tool_call_id in dropped:
            continue
        kept.append(msg)
    repaired = kept if _results_follow_calls(kept) else repair_tool_pairs(kept)
    out: list[AgentMessage] = []
    pending: list[AssistantMessage] = []
    answered: set[str] = set()

    def close_batch() -> None:
        for assistant in pending:
            for call in assistant.tool_calls():
                if call.id not in answered:
                    answered.add(call.id)
                    out.append(lost_result(call, assistant.timestamp))
        pending.clear()
        answered.clear()

    for msg in repaired:
        if isinstance(msg, ToolResultMessage):
            answered.add(msg.tool_call_id)
            out.append(msg)
            continue
        close_batch()
        out.append(msg)
        if isinstance(msg, AssistantMessage) and msg.tool_calls():
            pending.append(msg)
    close_batch()
    return out


_OPENAI_ROLES = frozenset({"tool", "system", "developer", "function"})
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "server_tool_use"})
_OPENAI_BLOCKS = frozenset({"image_url", "input_audio", "refusal"})
_RESPONSES_BLOCKS = frozenset({"input_text", "output_text", "input_image"})


def provider_shape(message: AgentMessage) -> str | None:
    """The converter to use when ``message`` is shaped like a provider's wire message rather
    than an AgentMessage (``role: "tool"``/``"system"``, ``tool_calls``, ``tool_use`` or
    ``tool_result`` blocks), else ``None``. Such a message would be stored and then dropped
    from every context, so it must be converted first."""
    if isinstance(message, OpaqueMessage):
        return "from_openai_chat" if message.role in _OPENAI_ROLES else None
    extra = message.__pydantic_extra__  # model_extra without the property call
    if (
        isinstance(message, AssistantMessage)
        and extra
        and ("tool_calls" in extra or "function_call" in extra)
    ):
        return "from_openai_chat"
    content = getattr(message, "content", None)
    if isinstance(content, list):
        for block in content:
            if isinstance(block, OpaqueBlock):
                if block.type in _ANTHROPIC_BLOCKS:
                    return "from_anthropic"
                if block.type in _OPENAI_BLOCKS:
                    return "from_openai_chat"
                if block.type in _RESPONSES_BLOCKS:
                    return "from_openai_responses"
    return None
