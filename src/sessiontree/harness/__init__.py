"""The agent harness: :class:`AgentHarness` runs model, tools and context window over a session.

:class:`ContextHarness` is the part that only keeps the context inside the window, for agents
that call their model themselves.
"""

from __future__ import annotations

from sessiontree.harness.agent import DEFAULT_CONTEXT_WINDOW, AgentHarness
from sessiontree.harness.context import ContextHarness
from sessiontree.harness.events import EVENT_TYPES, AgentEvent
from sessiontree.harness.lease import LeasePolicy, hold_lease
from sessiontree.harness.retry import RetryPolicy
from sessiontree.harness.tools import Tool, UpdateCallback, tool

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "EVENT_TYPES",
    "AgentEvent",
    "AgentHarness",
    "ContextHarness",
    "LeasePolicy",
    "RetryPolicy",
    "Tool",
    "UpdateCallback",
    "hold_lease",
    "tool",
]
