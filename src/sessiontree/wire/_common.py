"""What every wire converter does first: the messages a provider may be sent, pairs intact.

Providers reject a request whose tool calls and tool results do not pair up, on every later
turn, so the converters never trust the stored history to be tidy: :func:`request_messages`
drops failed and aborted replies (with their results), moves each result after its call
(:func:`~sessiontree.context.repair_tool_pairs`) and gives every call still without a result
a synthetic error result — also in the newest turn, whose calls the converters' callers send
only once they have run (a call without a result there was interrupted). Results are paired
with calls by position, never by id alone, and every call goes out under an id no other call
of the request has (a model may give two parallel calls one id, an agent may reuse ids across
turns), its result under the same id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

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
_MAX_ID = 64


def safe_tool_id(call_id: str) -> str:
    """``call_id`` with every character outside ``[A-Za-z0-9_-]`` replaced by ``_``, at most 64
    characters: the id pattern Anthropic requires (ids imported from other agents may hold
    ``.``, ``:`` or ``|``). The same id always maps to the same result."""
    safe = _UNSAFE_ID.sub("_", call_id)[:_MAX_ID]
    return safe or "call"


def _unique_ids(wire_id: Callable[[str], str] | None) -> Callable[[str], str]:
    """A function giving each call of one request its wire id: ``wire_id(call_id)`` (the id
    itself by default), or, when an earlier call of the request already has that id, the id
    with a ``_2``, ``_3``... suffix (kept within 64 characters)."""
    used: set[str] = set()

    def unique(call_id: str) -> str:
        base = wire_id(call_id) if wire_id is not None else call_id
        candidate, n = base, 1
        while candidate in used:
            n += 1
            suffix = f"_{n}"
            candidate = base[: _MAX_ID - len(suffix)] + suffix
        used.add(candidate)
        return candidate

    return unique


def request_messages(
    messages: Sequence[AgentMessage], *, wire_id: Callable[[str], str] | None = None
) -> list[AgentMessage]:
    """The messages of ``messages`` that go into a request, every tool call paired, every
    call id unique.

    * results are paired with calls by position (:func:`~sessiontree.context.repair_tool_pairs`:
      a result answers the nearest earlier call with its id that has no result yet) and
      move to directly after their call (a result with no call is left out);
    * an assistant message with ``stopReason`` ``error`` or ``aborted`` is left out, and so
      are the results paired with its tool calls;
    * a call with no result gets an ``isError`` result saying the result was lost;
    * every call gets an id no earlier call of the request has, and its result the same id:
      ``wire_id(id)`` (the id itself by default), with a ``_2``, ``_3``... suffix when that
      id is taken (a model that gave two parallel calls one id, an agent that reuses ids
      across turns, or two ids ``wire_id`` maps to one). Providers pair results with calls
      by id, so a repeated id would give one call's output to both.

    Args:
        messages: the context, oldest first.
        wire_id: maps a stored call id to one the provider accepts (e.g.
            :func:`safe_tool_id`); its results are made unique after mapping.

    Returns:
        New message objects where an id changed; the others as given.
    """
    repaired = repair_tool_pairs(messages)
    unique = _unique_ids(wire_id)
    out: list[AgentMessage] = []
    calls: list[ToolCall] = []  # the calls of the last assistant message, stored ids
    ids: list[str] = []  # their wire ids
    answered: list[bool] = []
    skipping = False  # the last assistant message failed: its results are left out
    issued_at: int | float = 0  # timestamp of the last assistant message

    def close_batch() -> None:
        for k, call in enumerate(calls):
            if not answered[k]:
                out.append(lost_result(call, issued_at).model_copy(update={"tool_call_id": ids[k]}))
        calls.clear()
        ids.clear()
        answered.clear()

    for msg in repaired:
        if isinstance(msg, ToolResultMessage):
            if skipping:
                continue
            k = next(
                (
                    k
                    for k, call in enumerate(calls)
                    if not answered[k] and call.id == msg.tool_call_id
                ),
                -1,
            )
            if k < 0:  # repair_tool_pairs leaves no such result; kept out all the same
                continue
            answered[k] = True
            out.append(
                msg
                if ids[k] == msg.tool_call_id
                else msg.model_copy(update={"tool_call_id": ids[k]})
            )
            continue
        close_batch()
        skipping = False
        if isinstance(msg, AssistantMessage):
            if msg.stop_reason in FAILED_STOP_REASONS:
                skipping = True
                continue
            if msg.tool_calls():
                msg = _with_wire_ids(msg, unique, calls, ids)
                answered.extend(False for _ in calls)
                issued_at = msg.timestamp
        out.append(msg)
    close_batch()
    return out


def _with_wire_ids(
    msg: AssistantMessage, unique: Callable[[str], str], calls: list[ToolCall], ids: list[str]
) -> AssistantMessage:
    """``msg`` with each tool call under its wire id; appends the stored calls to ``calls``
    and their wire ids to ``ids``."""
    content: list[Any] = []
    changed = False
    for block in msg.content:
        if isinstance(block, ToolCall):
            wire = unique(block.id)
            calls.append(block)
            ids.append(wire)
            if wire != block.id:
                changed = True
                block = block.model_copy(update={"id": wire})
        content.append(block)
    return msg.model_copy(update={"content": content}) if changed else msg


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
