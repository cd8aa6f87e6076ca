"""AgentMessages ⇄ Anthropic Messages (``POST /v1/messages``).

:func:`to_anthropic` produces the ``system`` and ``messages`` of a request exactly as the
``anthropic`` SDK types them (``MessageParam``): roles only ``user``/``assistant`` and
strictly alternating, the first one ``user``; ``tool_use`` blocks in the assistant turn and
all the results of a batch as ``tool_result`` blocks at the start of the next user turn;
images as base64 sources; thinking blocks sent back only with their signature, and only for
the model that wrote them. :func:`from_anthropic` reads such messages back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sessiontree.context import user_content
from sessiontree.errors import InvalidEntryError
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    ImageContent,
    OpaqueBlock,
    OpaqueMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from sessiontree.wire._common import request_messages, safe_tool_id

__all__ = [
    "CONTINUE_TEXT",
    "assistant_blocks",
    "from_anthropic",
    "to_anthropic",
    "tool_result_block",
    "user_blocks",
]

CONTINUE_TEXT = "(continued)"
"""The user turn put first when a context starts with an assistant message."""
NO_OUTPUT_TEXT = "(no tool output)"
"""The text of a tool result that had no content."""


def _image(block: ImageContent) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": block.mime_type, "data": block.data},
    }


def user_blocks(content: str | Sequence[Any]) -> list[dict[str, Any]]:
    """User content as Anthropic blocks: non-empty text and base64 images (others left out)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent) and block.text:
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            blocks.append(_image(block))
    return blocks


def assistant_blocks(msg: AssistantMessage, model: str | None) -> list[dict[str, Any]]:
    """An assistant message's blocks as Anthropic sends them back: text, ``tool_use``, and
    thinking only with its signature and only when ``model`` wrote it (``None``: any)."""
    same_model = model is None or msg.model is None or msg.model == model
    blocks: list[dict[str, Any]] = []
    for block in msg.content:
        if isinstance(block, TextContent):
            if block.text:
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if same_model and block.thinking_signature:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": block.thinking,
                        "signature": block.thinking_signature,
                    }
                )
        elif isinstance(block, ToolCall):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": block.id,
                    "name": block.name,
                    "input": block.arguments,
                }
            )
        elif isinstance(block, OpaqueBlock) and block.type == "redacted_thinking" and same_model:
            data = (block.model_extra or {}).get("data")
            if isinstance(data, str):
                blocks.append({"type": "redacted_thinking", "data": data})
    return blocks


def tool_result_block(msg: ToolResultMessage) -> dict[str, Any]:
    """A tool result as a ``tool_result`` block (text and images; a placeholder when empty)."""
    content: list[dict[str, Any]] = []
    for block in msg.content:
        if isinstance(block, TextContent) and block.text:
            content.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            content.append(_image(block))
    if not content:
        content = [{"type": "text", "text": NO_OUTPUT_TEXT}]
    return {
        "type": "tool_result",
        "tool_use_id": msg.tool_call_id,
        "content": content,
        "is_error": msg.is_error,
    }


def to_anthropic(
    messages: Sequence[AgentMessage],
    *,
    system_prompt: str | None = None,
    model: str | None = None,
) -> tuple[str | None, list[dict[str, Any]]]:
    """AgentMessages → ``(system, messages)`` of a Messages request.

    Args:
        messages: the context, oldest first. Failed and aborted replies are left out with
            their results and every tool call is paired (see
            :func:`sessiontree.wire._common.request_messages`); summaries, custom messages and
            bash executions become user turns; unknown roles are left out; tool ids are
            mapped to the characters Anthropic allows, and made unique in the request.
        system_prompt: returned as ``system`` (``None`` when empty).
        model: the model the request goes to: signed thinking of other models is left out
            (its signature would be refused). ``None`` keeps all signed thinking.

    Returns:
        ``(system, messages)``: ``messages`` is a list of ``MessageParam`` dicts whose roles
        alternate, starting with ``user``.
    """
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for msg in request_messages(messages, wire_id=safe_tool_id):
        if isinstance(msg, AssistantMessage):
            add("assistant", assistant_blocks(msg, model))
        elif isinstance(msg, ToolResultMessage):
            add("user", [tool_result_block(msg)])
        elif isinstance(msg, OpaqueMessage):
            continue
        else:
            content = user_content(msg)
            if content is not None:
                add("user", user_blocks(content))
    if turns and turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": CONTINUE_TEXT}]})
    return (system_prompt or None), turns


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        str(b.get("text", ""))
        for b in content or ()
        if isinstance(b, Mapping) and b.get("type") == "text"
    )


def _content_block(block: Mapping[str, Any]) -> ContentBlock:
    kind = block.get("type")
    if kind == "text":
        return TextContent(text=block["text"])
    if kind == "image" and block.get("source", {}).get("type") == "base64":
        src = block["source"]
        return ImageContent(data=src["data"], mime_type=src["media_type"])
    if kind == "thinking":
        return ThinkingContent(
            thinking=block["thinking"], thinking_signature=block.get("signature")
        )
    if kind == "tool_use":
        return ToolCall(
            id=block["id"], name=block["name"], arguments=dict(block.get("input") or {})
        )
    return OpaqueBlock.model_validate(dict(block))


def from_anthropic(messages: Iterable[Mapping[str, Any]]) -> list[AgentMessage]:
    """Messages-API messages → AgentMessages.

    A user turn's ``tool_result`` blocks become ``toolResult`` messages (named after the
    call they answer), its other blocks one user message after them; an assistant turn's
    ``text``, ``thinking`` and ``tool_use`` blocks become text, thinking and tool-call
    blocks, other block types are kept as they are. The ``system`` prompt is not a message:
    the caller keeps it.

    Raises:
        InvalidEntryError: a role other than ``user`` or ``assistant``.
    """
    out: list[AgentMessage] = []
    names: dict[str, str] = {}
    for i, m in enumerate(messages):
        role = m.get("role")
        content = m.get("content")
        if role == "assistant":
            blocks = (
                [TextContent(text=content)]
                if isinstance(content, str)
                else [_content_block(b) for b in content or ()]
            )
            for b in blocks:
                if isinstance(b, ToolCall):
                    names[b.id] = b.name
            has_calls = any(isinstance(b, ToolCall) for b in blocks)
            out.append(
                AssistantMessage(content=blocks, stop_reason="toolUse" if has_calls else "stop")
            )
        elif role == "user":
            if isinstance(content, str):
                out.append(UserMessage(content=content))
                continue
            rest: list[ContentBlock] = []
            for b in content or ():
                if b.get("type") == "tool_result":
                    inner = b.get("content")
                    result_blocks: list[ContentBlock] = (
                        [TextContent(text=inner)]
                        if isinstance(inner, str)
                        else [_content_block(x) for x in inner or ()]
                    )
                    call_id = str(b["tool_use_id"])
                    out.append(
                        ToolResultMessage(
                            tool_call_id=call_id,
                            tool_name=names.get(call_id, ""),
                            content=result_blocks,
                            is_error=bool(b.get("is_error", False)),
                        )
                    )
                else:
                    rest.append(_content_block(b))
            if rest:
                out.append(UserMessage(content=rest))
        else:
            raise InvalidEntryError(
                f"Anthropic message {i} has role {role!r}; only 'user' and 'assistant' exist "
                "(the system prompt is a separate request field)"
            )
    return out
