"""Wire converters: AgentMessages ⇄ the exact request shapes of model providers.

Each converter leaves failed and aborted replies out, pairs every tool call with a result
and produces what the provider's own SDK types as a request (tested against those types).
"""

from __future__ import annotations

from sessiontree.wire.anthropic import from_anthropic, to_anthropic
from sessiontree.wire.openai_chat import from_openai_chat, to_openai_chat

__all__ = ["from_anthropic", "from_openai_chat", "to_anthropic", "to_openai_chat"]
