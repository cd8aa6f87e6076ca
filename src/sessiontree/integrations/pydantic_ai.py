"""pydantic-ai message history ⇄ sessiontree messages.

Store an agent run and continue it later::

    from sessiontree.integrations.pydantic_ai import from_model_messages, to_model_messages

    history = to_model_messages((await session.build_context()).messages)
    result = await agent.run("and now?", message_history=history)
    for message in from_model_messages(result.new_messages()):
        await session.append_message(message)

:func:`from_model_messages` turns each ``ModelResponse`` into one :class:`AssistantMessage`
(text, thinking with its signature, tool calls; other parts as opaque blocks) and each part of
a ``ModelRequest`` into one message: a user prompt into a :class:`UserMessage` (images as
image blocks), a tool return into a :class:`ToolResultMessage` (``is_error`` unless its
outcome is ``success``), a system prompt or retry feedback into a :class:`CustomMessage`
(``pydantic_ai.<part kind>``, reaching the model again as text), and bookkeeping parts
(instruction and tool-availability deltas, …) into an :class:`OpaqueMessage`. Every message
also carries, under the key ``pydanticAi``, pydantic-ai's own JSON of its part(s) and of the
enclosing message, so :func:`to_model_messages` rebuilds the original ``ModelMessage`` objects
exactly; messages without it (written by other code, or summaries after a compaction) are
converted, consecutive request-side ones into one ``ModelRequest``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

import orjson

from sessiontree.context import to_llm_messages
from sessiontree.errors import InvalidEntryError
from sessiontree.ids import new_id
from sessiontree.integrations._common import holds_non_finite, import_extra
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    CustomMessage,
    ImageContent,
    OpaqueBlock,
    OpaqueMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    parse_message,
)

import_extra("pydantic_ai", "pydantic-ai")

from pydantic_ai import messages as pa  # noqa: E402

__all__ = ["ORIGINAL_KEY", "OPAQUE_ROLE", "from_model_messages", "to_model_messages"]

ORIGINAL_KEY = "pydanticAi"
"""Message key: ``{"group", "message", "parts"}`` — an id shared by the messages of one
``ModelMessage``, its JSON without ``parts``, and the JSON of the parts this message holds."""

OPAQUE_ROLE = "pydanticAiPart"
"""Role of the :class:`OpaqueMessage` a request part with nothing for the model becomes."""


def _dump(message: pa.ModelMessage) -> dict[str, Any]:
    """pydantic-ai's JSON form of one message (bytes as base64), as a plain dict.

    pydantic writes ``inf``/``nan`` as ``null``; a message holding one is refused instead
    of being stored changed.

    Raises:
        ValueError: a value JSON cannot carry (a lone surrogate, a non-finite number).
    """
    if holds_non_finite(pa.ModelMessagesTypeAdapter.dump_python([message])):
        raise ValueError("it holds a non-finite number (inf or nan), which JSON cannot carry")
    data: Any = orjson.loads(pa.ModelMessagesTypeAdapter.dump_json([message]))
    return data[0]  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- reading


def from_model_messages(model_messages: Sequence[pa.ModelMessage]) -> list[AgentMessage]:
    """pydantic-ai ``ModelMessage`` objects (e.g. ``result.all_messages()``) → AgentMessages.

    Raises:
        InvalidEntryError: an object that is not a ``ModelRequest`` or ``ModelResponse``, or
            one JSON cannot carry (a string with a lone surrogate, a float ``inf`` or
            ``nan``), named by its index.
    """
    out: list[AgentMessage] = []
    for index, model_message in enumerate(model_messages):
        if not isinstance(model_message, pa.ModelRequest | pa.ModelResponse):
            raise InvalidEntryError(
                f"pydantic-ai message {index} is a {type(model_message).__name__}, "
                "not a ModelRequest or ModelResponse"
            )
        try:
            data = _dump(model_message)
        except (
            ValueError
        ) as exc:  # a non-finite number; PydanticSerializationError: a lone surrogate
            raise InvalidEntryError(
                f"pydantic-ai message {index} cannot be written as JSON: {exc}"
            ) from exc
        part_json = data.pop("parts")
        group = new_id()

        def keep(
            message: AgentMessage, parts: list[Any], data: dict[str, Any] = data, group: str = group
        ) -> AgentMessage:
            wire = message.to_wire()
            wire[ORIGINAL_KEY] = {"group": group, "message": data, "parts": parts}
            return parse_message(wire)

        if isinstance(model_message, pa.ModelResponse):
            out.append(keep(_assistant(model_message), part_json))
        else:
            for part, raw in zip(model_message.parts, part_json, strict=True):
                out.append(keep(_request_part(part), [raw]))
    return out


def _assistant(response: pa.ModelResponse) -> AssistantMessage:
    blocks: list[ContentBlock] = []
    for part in response.parts:
        if isinstance(part, pa.TextPart):
            blocks.append(TextContent(text=part.content))
        elif isinstance(part, pa.ThinkingPart):
            blocks.append(ThinkingContent(thinking=part.content, thinking_signature=part.signature))
        elif isinstance(part, pa.ToolCallPart):
            blocks.append(
                ToolCall(id=part.tool_call_id, name=part.tool_name, arguments=part.args_as_dict())
            )
        else:
            blocks.append(OpaqueBlock(type=f"pydantic_ai.{part.part_kind}"))
    usage = response.usage
    return AssistantMessage(
        content=blocks,
        provider=response.provider_name,
        model=response.model_name,
        usage=Usage(
            input=usage.input_tokens,
            output=usage.output_tokens,
            cache_read=usage.cache_read_tokens,
            cache_write=usage.cache_write_tokens,
        ),
        stop_reason="toolUse" if any(isinstance(b, ToolCall) for b in blocks) else "stop",
    )


def _user_blocks(content: str | Sequence[Any]) -> str | list[ContentBlock]:
    if isinstance(content, str):
        return content
    blocks: list[ContentBlock] = []
    for item in content:
        if isinstance(item, str):
            blocks.append(TextContent(text=item))
        elif isinstance(item, pa.BinaryContent) and item.is_image:
            blocks.append(
                ImageContent(data=base64.b64encode(item.data).decode(), mime_type=item.media_type)
            )
        else:
            blocks.append(OpaqueBlock(type=f"pydantic_ai.{getattr(item, 'kind', 'content')}"))
    return blocks


def _request_part(part: Any) -> AgentMessage:
    kind = getattr(part, "part_kind", type(part).__name__)
    if isinstance(part, pa.UserPromptPart):
        return UserMessage(content=_user_blocks(part.content))
    if isinstance(part, pa.ToolReturnPart):
        return ToolResultMessage(
            tool_call_id=part.tool_call_id,
            tool_name=part.tool_name,
            content=[TextContent(text=part.model_response_str())],
            is_error=part.outcome != "success",
        )
    if isinstance(part, pa.SystemPromptPart):
        return CustomMessage(custom_type=f"pydantic_ai.{kind}", content=part.content, display=False)
    if isinstance(part, pa.RetryFeedbackPart):
        text = (
            part.content
            if isinstance(part.content, str)
            else orjson.dumps(part.content, default=str).decode()
        )
        return CustomMessage(custom_type=f"pydantic_ai.{kind}", content=text, display=False)
    return OpaqueMessage(role=OPAQUE_ROLE, part_kind=kind)


# --------------------------------------------------------------------------- writing


def to_model_messages(messages: Sequence[AgentMessage]) -> list[pa.ModelMessage]:
    """AgentMessages → pydantic-ai ``ModelMessage`` objects for ``agent.run(message_history=...)``.

    Consecutive messages of one original ``ModelMessage`` become that message again, exactly;
    other messages are converted (user, custom, summary and tool-result messages into
    ``ModelRequest`` parts, assistant messages into a ``ModelResponse``).

    Raises:
        InvalidEntryError: a kept original that pydantic-ai no longer reads.
    """
    out: list[pa.ModelMessage] = []
    originals: list[dict[str, Any]] = []  # the JSON messages being rebuilt, in order
    open_group: str | None = None
    pending: list[Any] = []  # converted request parts not yet in a ModelRequest

    def flush_originals() -> None:
        nonlocal open_group
        if originals:
            try:
                out.extend(pa.ModelMessagesTypeAdapter.validate_json(orjson.dumps(originals)))
            except ValueError as exc:
                raise InvalidEntryError(
                    f"a stored pydantic-ai message does not load: {exc}"
                ) from exc
            originals.clear()
        open_group = None

    def flush_pending() -> None:
        if pending:
            out.append(pa.ModelRequest(parts=list(pending)))
            pending.clear()

    for message in messages:
        kept = (message.model_extra or {}).get(ORIGINAL_KEY)
        if isinstance(kept, dict) and isinstance(kept.get("message"), dict):
            flush_pending()
            if kept.get("group") != open_group:
                flush_originals()
                originals.append({**kept["message"], "parts": []})
                open_group = kept.get("group")
            originals[-1]["parts"].extend(kept.get("parts") or [])
            continue
        flush_originals()
        if isinstance(message, AssistantMessage):
            flush_pending()
            out.append(_response(message))
        else:
            pending.extend(_request_parts(message))
    flush_originals()
    flush_pending()
    return out


def _response(message: AssistantMessage) -> pa.ModelResponse:
    parts: list[Any] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append(pa.TextPart(content=block.text))
        elif isinstance(block, ThinkingContent):
            parts.append(
                pa.ThinkingPart(content=block.thinking, signature=block.thinking_signature)
            )
        elif isinstance(block, ToolCall):
            parts.append(
                pa.ToolCallPart(tool_name=block.name, args=block.arguments, tool_call_id=block.id)
            )
    return pa.ModelResponse(parts=parts, model_name=message.model)


def _image(block: ImageContent) -> Any:
    try:
        data = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        return f"[image {block.mime_type}: not valid base64]"
    return pa.BinaryContent(data=data, media_type=block.mime_type)


def _request_parts(message: AgentMessage) -> list[Any]:
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return [pa.UserPromptPart(content=message.content)]
        content: list[Any] = []
        for block in message.content:
            if isinstance(block, TextContent):
                content.append(block.text)
            elif isinstance(block, ImageContent):
                content.append(_image(block))
        return [pa.UserPromptPart(content=content)]
    if isinstance(message, ToolResultMessage):
        text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
        return [
            pa.ToolReturnPart(
                tool_name=message.tool_name,
                content=text,
                tool_call_id=message.tool_call_id,
                outcome="failed" if message.is_error else "success",
            )
        ]
    if isinstance(message, CustomMessage) and message.custom_type == "pydantic_ai.system-prompt":
        text = message.content if isinstance(message.content, str) else ""
        return [pa.SystemPromptPart(content=text)]
    return [
        pa.UserPromptPart(
            content=plain["content"] if isinstance(plain["content"], str) else str(plain["content"])
        )
        for plain in to_llm_messages([message])
    ]
