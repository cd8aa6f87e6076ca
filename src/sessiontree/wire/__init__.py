"""Wire converters: AgentMessages ⇄ the exact request shapes of model providers.

Each converter pair is pure (no I/O, no SDK import): the output is plain dicts that the
official SDKs accept as their typed request parameters (tested against those types). The
chat-completions and Anthropic converters also leave failed and aborted replies out and pair
every tool call with a result.

:mod:`sessiontree.wire.claude_code` reads Claude Code's transcript lines (Anthropic content
blocks in Claude Code's envelope) into messages: the Claude Code importer and the Claude
Agent SDK adapter share it.
"""

from __future__ import annotations

from sessiontree.wire._common import (
    FAILED_STOP_REASONS,
    provider_shape,
    request_messages,
    safe_tool_id,
)
from sessiontree.wire.anthropic import from_anthropic, to_anthropic
from sessiontree.wire.openai_chat import from_openai_chat, to_openai_chat
from sessiontree.wire.openai_responses import from_openai_responses, to_openai_responses

__all__ = [
    "FAILED_STOP_REASONS",
    "from_anthropic",
    "from_openai_chat",
    "from_openai_responses",
    "provider_shape",
    "request_messages",
    "safe_tool_id",
    "to_anthropic",
    "to_openai_chat",
    "to_openai_responses",
]
