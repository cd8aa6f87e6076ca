"""The tool-pair invariant: every tool result directly follows the call it answers.

Providers reject a request whose tool results do not follow their calls, so context building
ends with :func:`repair_tool_pairs` (docs/context.md step 5), and
:func:`find_tool_pair_problems` reports exactly what that repair would change. Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "LOST_RESULT_TEXT",
    "find_tool_pair_problems",
    "lost_result",
    "newest_turn_start",
    "repair_tool_pairs",
]

LOST_RESULT_TEXT = (
    "The result of this tool call was lost (the session was interrupted or its history "
    "was edited); the tool may or may not have run."
)


def newest_turn_start(messages: Sequence[AgentMessage]) -> int:
    """Index of the first message of the newest turn: just after the last ``user`` or
    ``custom`` message; ``0`` when there is none (docs/context.md step 5)."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], UserMessage | CustomMessage):
            return i + 1
    return 0


def _pair_results(
    messages: Sequence[AgentMessage],
) -> dict[tuple[int, int], ToolResultMessage]:
    """``(message index, call index) → result`` for every result that has a call to answer.

    A result belongs to the nearest earlier call with its id that has no result yet (agents
    reuse call ids across turns); within one assistant message the first such call comes
    first. A result with no such call belongs to nothing.
    """
    waiting: dict[str, list[tuple[int, int]]] = {}  # call id -> unanswered calls, oldest first
    paired: dict[tuple[int, int], ToolResultMessage] = {}
    for i, msg in enumerate(messages):
        if isinstance(msg, AssistantMessage):
            for j, call in enumerate(msg.tool_calls()):
                waiting.setdefault(call.id, []).append((i, j))
        elif isinstance(msg, ToolResultMessage):
            calls = waiting.get(msg.tool_call_id)
            if not calls:
                continue
            nearest = calls[-1][0]
            k = len(calls) - 1
            while k > 0 and calls[k - 1][0] == nearest:
                k -= 1
            paired[calls.pop(k)] = msg
    return paired


def repair_tool_pairs(messages: Sequence[AgentMessage]) -> list[AgentMessage]:
    """Pair every tool result with its call (docs/context.md step 5).

    Each ``toolResult`` moves to directly after the assistant message that issued its call, in
    call order. A result belongs to the nearest earlier call with its ``toolCallId`` that has
    no result yet, so a reused call id never moves or drops a genuine result; a result with no
    such call is dropped. A call with no result gets a synthetic error result, except in the
    newest turn, whose calls may still be running. Linear in the number of messages and calls.
    """
    if _already_paired(messages):
        return list(messages)
    return _repair(messages)


def _repair(messages: Sequence[AgentMessage]) -> list[AgentMessage]:
    """:func:`repair_tool_pairs` without its check for messages already paired."""
    turn_start = newest_turn_start(messages)
    paired = _pair_results(messages)
    out: list[AgentMessage] = []
    for i, msg in enumerate(messages):
        if isinstance(msg, ToolResultMessage):
            continue
        out.append(msg)
        if not isinstance(msg, AssistantMessage):
            continue
        for j, call in enumerate(msg.tool_calls()):
            result = paired.get((i, j))
            if result is not None:
                out.append(result)
            elif i < turn_start:
                out.append(lost_result(call, msg.timestamp))
    return out


def _already_paired(messages: Sequence[AgentMessage]) -> bool:
    """Whether :func:`repair_tool_pairs` would return ``messages`` as they are (one cheap pass).

    True when each ``toolResult`` answers the next unanswered call of the assistant message
    it follows (directly, or after the results of that message's earlier calls), and every
    call has its result before any other message comes. Then each result is the one the
    repair pairs with that call (its own message is the nearest with an unanswered call of
    that id, and in it the first unanswered one is this call), no result is dropped, and the
    only calls left without a result are those of the last assistant message with nothing
    but its results after it: no user or custom message follows them, so they are in the
    newest turn and get no synthetic result. The repair's output is then the input order.
    """
    calls: list[ToolCall] = []  # calls of the last assistant message
    answered = 0  # calls[:answered] have their result
    for msg in messages:
        if isinstance(msg, ToolResultMessage):
            if answered == len(calls) or calls[answered].id != msg.tool_call_id:
                return False
            answered += 1
            continue
        if answered != len(calls):
            return False
        calls = msg.tool_calls() if isinstance(msg, AssistantMessage) else []
        answered = 0
    return True


def lost_result(call: ToolCall, timestamp: int | float) -> ToolResultMessage:
    """The synthetic ``isError`` result that stands in for ``call``'s lost result."""
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=[TextContent(text=LOST_RESULT_TEXT)],
        is_error=True,
        timestamp=timestamp,
    )


def find_tool_pair_problems(messages: Sequence[AgentMessage]) -> list[str]:
    """Describe every breach of the tool-pair invariant (empty list = valid).

    The invariant: each ``toolResult`` directly follows (after the results of earlier calls of
    the same message) the assistant message that issued its call, in call order; a reused
    call id is answered by the results that follow each of its calls; every call outside the
    newest turn has a result. The list is empty exactly when :func:`repair_tool_pairs` would
    return the messages unchanged.
    """
    problems: list[str] = []
    turn_start = newest_turn_start(messages)
    if messages and isinstance(messages[0], ToolResultMessage):
        problems.append("the context starts with a toolResult")
    calls: list[str] = []  # call ids of the current assistant message, in call order
    next_call = 0  # calls[:next_call] are answered or passed over
    answered: set[int] = set()
    pending_index = -1

    def unanswered() -> list[str]:
        return [c for k, c in enumerate(calls) if k not in answered]

    for i, msg in enumerate(messages):
        if isinstance(msg, ToolResultMessage):
            k = next((k for k in range(next_call, len(calls)) if calls[k] == msg.tool_call_id), -1)
            if k >= 0 and (pending_index >= turn_start or k == next_call):
                answered.add(k)
                next_call = k + 1
            elif msg.tool_call_id in calls:
                problems.append(
                    f"message {i}: result for {msg.tool_call_id!r} is not in call order "
                    "or is a second result"
                )
            else:
                problems.append(
                    f"message {i}: result for {msg.tool_call_id!r} does not follow its call"
                )
            continue
        if unanswered() and pending_index < turn_start:
            problems.append(f"message {pending_index}: tool calls without result: {unanswered()}")
        calls, next_call, answered = [], 0, set()
        if isinstance(msg, AssistantMessage):
            calls = [c.id for c in msg.tool_calls()]
            pending_index = i
    if unanswered() and pending_index < turn_start:
        problems.append(f"message {pending_index}: tool calls without result: {unanswered()}")
    return problems
