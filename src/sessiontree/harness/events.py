"""Harness events and the listeners that receive them.

Every event is an :class:`AgentEvent` whose ``type`` is one of :data:`EVENT_TYPES`. A
listener is a callable (sync or async) taking the event; listeners run in subscription
order, and one that raises is logged and does not break the run.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sessiontree.messages import AgentMessage, ToolCall, ToolResultMessage
from sessiontree.models.base import ModelEvent

__all__ = ["EVENT_TYPES", "AgentEvent", "Listener", "Listeners"]

log = logging.getLogger("sessiontree.harness")

EVENT_TYPES = frozenset(
    {
        "agent_start",
        "turn_start",
        "message_start",
        "message_update",
        "message_end",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
        "compaction_start",
        "compaction_end",
        "retry_scheduled",
        "turn_end",
        "agent_end",
    }
)
"""Every ``AgentEvent.type``."""


@dataclass(frozen=True)
class AgentEvent:
    """Something the harness did.

    Attributes:
        type: one of :data:`EVENT_TYPES`.
        message: the message of ``message_*`` events (``message_end``: as persisted), the
            last assistant message of ``turn_end``/``agent_end``.
        delta: the model's delta of a ``message_update`` (text, thinking or tool call).
        tool_call: the call of ``tool_execution_*`` events.
        result: the result of ``tool_execution_end``; for ``tool_execution_update`` the
            partial content the tool reported through ``on_update`` (a result message with
            the call's id and tool name, ``content`` the partial blocks, never persisted).
        data: more facts: ``retry_scheduled`` has ``attempt``, ``delay_s``, ``error``;
            ``compaction_*`` have ``reason``: ``threshold`` (the context was nearly full
            before a model call: ``prepare_context`` compacts) or ``overflow`` (the
            provider refused the context); ``compaction_end`` has the ``entry_id`` of the
            compaction made and/or the ``error`` that left the context unprepared.
    """

    type: str
    message: AgentMessage | None = None
    delta: ModelEvent | None = None
    tool_call: ToolCall | None = None
    result: ToolResultMessage | None = None
    data: dict[str, Any] = field(default_factory=dict)


Listener = Callable[[AgentEvent], Any]
"""``listener(event)``; may be async."""


class Listeners:
    """The subscribed listeners of one harness."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add ``listener``; returns a function that removes it again (idempotent)."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    async def emit(self, event: AgentEvent) -> None:
        """Call every listener with ``event``; a listener's exception is logged, not raised."""
        for listener in list(self._listeners):
            try:
                result = listener(event)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("harness listener %r failed on %s", listener, event.type)
