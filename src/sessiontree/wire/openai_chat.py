"""AgentMessages ⇄ OpenAI chat-completions messages (``POST /v1/chat/completions``).

:func:`to_openai_chat` produces the ``messages`` array of a request, exactly as the
``openai`` SDK types it (``ChatCompletionMessageParam``): the system prompt first, user turns
with text and ``image_url`` parts, assistant turns with ``tool_calls`` whose ``arguments`` are
JSON strings, one ``role: "tool"`` message per result right after its call, and the images
of tool results in one user message after the batch (the tool role carries text only).
:func:`from_openai_chat` reads such an array back into AgentMessages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from sessiontree.context import user_content
from sessiontree.errors import InvalidEntryError
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    ImageContent,
    OpaqueMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from sessiontree.wire._common import request_messages

__all__ = ["from_openai_chat", "to_openai_chat"]

NO_OUTPUT_TEXT = "(no tool output)"
"""The text of a tool message whose result had no text (OpenAI requires content)."""
SEE_IMAGE_TEXT = "(see the attached image)"
"""The text of a tool message whose result was only images (sent in the next user message)."""


def _image_part(block: ImageContent) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"},
    }


def _user_parts(content: str | Sequence[Any]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            if block.text:
                parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append(_image_part(block))
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _assistant(msg: AssistantMessage, thinking_field: str | None) -> dict[str, Any] | None:
    text = "".join(b.text for b in msg.content if isinstance(b, TextContent))
    calls = [
        {
            "id": b.id,
            "type": "function",
            "function": {
                "name": b.name,
                "arguments": orjson.dumps(b.arguments).decode(),
            },
        }
        for b in msg.content
        if isinstance(b, ToolCall)
    ]
    if not text and not calls:
        return None  # an empty assistant message is refused by OpenAI
    item: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        item["tool_calls"] = calls
    if thinking_field:
        thinking = "".join(b.thinking for b in msg.content if isinstance(b, ThinkingContent))
        if thinking:
            item[thinking_field] = thinking
    return item


def to_openai_chat(
    messages: Sequence[AgentMessage],
    *,
    system_prompt: str | None = None,
    thinking_field: str | None = None,
) -> list[dict[str, Any]]:
    """AgentMessages → the ``messages`` of a chat-completions request.

    Args:
        messages: the context, oldest first (e.g. ``SessionContext.messages``). Failed and
            aborted replies are left out with their results; every tool call is paired and sent under an id unique in the request (see
            :func:`sessiontree.wire._common.request_messages`); summaries, custom messages
            and bash executions become user messages; unknown roles are left out.
        system_prompt: sent as a first ``{"role": "system"}`` message when non-empty.
        thinking_field: when given, each assistant message's thinking text is sent under
            this key (``"reasoning_content"`` for vLLM and DeepSeek); by default thinking
            is left out (OpenAI itself accepts none).

    Returns:
        A list of ``ChatCompletionMessageParam`` dicts.
    """
    out: list[dict[str, Any]] = []
    if system_prompt:
        out.append({"role": "system", "content": system_prompt})
    images: list[dict[str, Any]] = []

    def flush_images() -> None:
        if images:
            out.append({"role": "user", "content": list(images)})
            images.clear()

    for msg in request_messages(messages):
        if isinstance(msg, ToolResultMessage):
            text = "\n".join(b.text for b in msg.content if isinstance(b, TextContent))
            pictures = [_image_part(b) for b in msg.content if isinstance(b, ImageContent)]
            images.extend(pictures)
            if not text:
                text = SEE_IMAGE_TEXT if pictures else NO_OUTPUT_TEXT
            out.append({"role": "tool", "tool_call_id": msg.tool_call_id, "content": text})
            continue
        flush_images()
        if isinstance(msg, AssistantMessage):
            item = _assistant(msg, thinking_field)
            if item is not None:
                out.append(item)
        elif isinstance(msg, OpaqueMessage):
            continue
        else:
            content = user_content(msg)
            if content is not None:
                parts = _user_parts(content)
                if parts:
                    out.append({"role": "user", "content": parts})
    flush_images()
    return out


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(
        str(p.get("text", ""))
        for p in content
        if isinstance(p, Mapping) and p.get("type") == "text"
    )


def _blocks_of(content: Any) -> str | list[ContentBlock]:
    if content is None or isinstance(content, str):
        return content or ""
    blocks: list[ContentBlock] = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            blocks.append(TextContent(text=part["text"]))
        elif kind == "image_url":
            url = part["image_url"]["url"]
            head, _, data = url.partition(",")
            if head.startswith("data:") and head.endswith(";base64"):
                blocks.append(ImageContent(data=data, mime_type=head[5:-7]))
            else:
                blocks.append(TextContent(text=url))
    return blocks


def from_openai_chat(
    messages: Iterable[Mapping[str, Any]],
) -> tuple[str | None, list[AgentMessage]]:
    """Chat-completions messages → ``(system_prompt, AgentMessages)``.

    ``system`` and ``developer`` messages are not conversation messages: their texts, joined
    by blank lines, are the returned system prompt (``None`` when there is none). A ``tool``
    message becomes a ``toolResult`` named after the call it answers.

    Raises:
        InvalidEntryError: a message with an unknown role, or a tool call whose arguments are
            not a JSON object.
    """
    system: list[str] = []
    out: list[AgentMessage] = []
    names: dict[str, str] = {}
    for i, m in enumerate(messages):
        role = m.get("role")
        if role in ("system", "developer"):
            system.append(_text_of(m.get("content")))
        elif role == "user":
            out.append(UserMessage(content=_blocks_of(m.get("content"))))
        elif role == "assistant":
            content: list[ContentBlock] = []
            for key in ("reasoning_content", "reasoning"):
                if isinstance(m.get(key), str) and m[key]:
                    content.append(ThinkingContent(thinking=m[key]))
            text = _text_of(m.get("content"))
            if text:
                content.append(TextContent(text=text))
            for call in m.get("tool_calls") or ():
                fn = call["function"]
                try:
                    args = orjson.loads(fn.get("arguments") or "{}")
                except orjson.JSONDecodeError as exc:
                    raise InvalidEntryError(
                        f"OpenAI message {i}: tool call {call['id']!r} has arguments that are "
                        f"not JSON: {exc}"
                    ) from exc
                if not isinstance(args, dict):
                    raise InvalidEntryError(
                        f"OpenAI message {i}: tool call {call['id']!r} arguments are not an object"
                    )
                names[call["id"]] = fn["name"]
                content.append(ToolCall(id=call["id"], name=fn["name"], arguments=args))
            has_calls = any(isinstance(b, ToolCall) for b in content)
            out.append(
                AssistantMessage(content=content, stop_reason="toolUse" if has_calls else "stop")
            )
        elif role == "tool":
            call_id = str(m["tool_call_id"])
            out.append(
                ToolResultMessage(
                    tool_call_id=call_id,
                    tool_name=names.get(call_id, ""),
                    content=[TextContent(text=_text_of(m.get("content")))],
                )
            )
        else:
            raise InvalidEntryError(f"OpenAI message {i} has an unknown role {role!r}")
    return ("\n\n".join(system) if system else None), out
