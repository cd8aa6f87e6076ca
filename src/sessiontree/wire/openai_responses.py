"""AgentMessages ⇄ OpenAI Responses API input items.

:func:`to_openai_responses` writes the ``input`` list of ``client.responses.create``;
:func:`from_openai_responses` reads such a list (or a response's ``output``) back. The
shapes are the official SDK's ``ResponseInputItemParam`` typed dicts:

* a user message → ``{"role": "user", "content": str | [input_text | input_image, ...]}``;
* an assistant message → in block order: one ``reasoning`` item per thinking block that
  came from the Responses API (its id and encrypted content ride in ``thinking_signature``),
  one ``{"role": "assistant", "content": str}`` per text block, one
  ``function_call`` per tool call (``arguments`` a JSON string);
* a tool result → ``function_call_output`` (``output`` a string, or input parts when it
  holds images);
* summaries, custom and bash-execution messages → user messages, worded as in
  :func:`sessiontree.context.to_llm_messages`;
* an item of a kind this module does not model (web search, computer and shell calls,
  item references, …) is kept whole in an :class:`OpaqueMessage` of role
  :data:`OPAQUE_ROLE` and written back unchanged.

Reading groups consecutive assistant items (reasoning, assistant message, function call)
into one :class:`AssistantMessage`, as the model produced them in one response.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from sessiontree.context import to_llm_messages
from sessiontree.errors import InvalidEntryError
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
    UserMessage,
    parse_message,
)

__all__ = [
    "OPAQUE_ROLE",
    "SYSTEM_CUSTOM_TYPE",
    "from_openai_responses",
    "read_items",
    "thinking_from_reasoning",
    "to_openai_responses",
]

OPAQUE_ROLE = "openaiResponsesItem"
"""Role of the :class:`OpaqueMessage` that carries an item kind not modelled here (key ``item``)."""

SYSTEM_CUSTOM_TYPE = "openai_responses.instructions"
"""``custom_type`` of the :class:`CustomMessage` a ``system``/``developer`` item becomes
(``details`` holds the role), so the instruction reaches the model again as text."""

_REASONING_TAG = "openai-responses-reasoning"
"""Marks a ``thinking_signature`` that holds a Responses reasoning item's id and
encrypted content (a JSON object), so only such blocks are written back as reasoning."""

_RAW_ARGUMENTS = "_raw_arguments"
"""Key under which a function call's ``arguments`` are kept when they are not a JSON object."""


# --------------------------------------------------------------------------- writing


def to_openai_responses(
    messages: Sequence[AgentMessage | Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """AgentMessages → Responses API input items, oldest first.

    Args:
        messages: the context messages (models or plain dicts), e.g.
            ``(await session.build_context()).messages``.

    Returns:
        Plain dicts, each valid as ``openai.types.responses.ResponseInputItemParam``.

    Raises:
        InvalidEntryError: a dict that is not a message.
    """
    items: list[dict[str, Any]] = []
    for raw in messages:
        try:
            msg = parse_message(raw)
        except ValueError as exc:
            raise InvalidEntryError(f"not a message: {exc}") from exc
        if isinstance(msg, UserMessage):
            items.append({"role": "user", "content": _input_content(msg.content)})
        elif isinstance(msg, AssistantMessage):
            items.extend(_assistant_items(msg))
        elif isinstance(msg, ToolResultMessage):
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": msg.tool_call_id,
                    "output": _tool_output(msg.content),
                }
            )
        elif isinstance(msg, OpaqueMessage):
            item = (msg.model_extra or {}).get("item")
            if msg.role == OPAQUE_ROLE and isinstance(item, Mapping):
                items.append(copy.deepcopy(dict(item)))
        elif isinstance(msg, CustomMessage) and msg.custom_type == SYSTEM_CUSTOM_TYPE:
            role = msg.details if msg.details in ("system", "developer") else "developer"
            items.append({"role": role, "content": _input_content(msg.content)})
        else:
            for plain in to_llm_messages([msg]):
                items.append({"role": "user", "content": _plain_content(plain["content"])})
    return items


def _input_content(content: str | Sequence[ContentBlock]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, ImageContent):
            parts.append(_input_image(block))
        elif isinstance(block, OpaqueBlock) and block.type in _INPUT_PART_TYPES:
            parts.append(block.to_wire())
    return parts


_INPUT_PART_TYPES = frozenset({"input_text", "input_image", "input_file", "input_audio"})


def _input_image(block: ImageContent) -> dict[str, Any]:
    return {
        "type": "input_image",
        "image_url": f"data:{block.mime_type};base64,{block.data}",
        "detail": "auto",
    }


def _plain_content(content: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """The content of a :func:`to_llm_messages` user message as Responses input content."""
    if isinstance(content, str):
        return content
    return [
        {"type": "input_text", "text": p["text"]}
        if p["type"] == "text"
        else _input_image(ImageContent(data=p["data"], mime_type=p["mime_type"]))
        for p in content
    ]


def _tool_output(content: Sequence[ContentBlock]) -> str | list[dict[str, Any]]:
    if all(isinstance(b, TextContent) for b in content):
        return "\n".join(b.text for b in content if isinstance(b, TextContent))
    parts = _input_content(content)
    assert isinstance(parts, list)
    return parts


def _assistant_items(msg: AssistantMessage) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for block in msg.content:
        if isinstance(block, TextContent):
            items.append({"role": "assistant", "content": block.text})
        elif isinstance(block, ToolCall):
            raw = block.arguments.get(_RAW_ARGUMENTS)
            arguments = (
                raw
                if len(block.arguments) == 1 and isinstance(raw, str)
                else orjson.dumps(block.arguments).decode()
            )
            items.append(
                {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": arguments,
                }
            )
        elif isinstance(block, ThinkingContent):
            reasoning = _reasoning_item(block)
            if reasoning is not None:
                items.append(reasoning)
    return items


def _reasoning_item(block: ThinkingContent) -> dict[str, Any] | None:
    """The Responses reasoning item a thinking block came from; ``None`` for other providers'
    thinking (their signatures mean nothing to OpenAI, so it is left out)."""
    if not block.thinking_signature:
        return None
    try:
        meta = orjson.loads(block.thinking_signature)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(meta, dict) or meta.get("tag") != _REASONING_TAG:
        return None
    item: dict[str, Any] = {"type": "reasoning", "id": meta["id"], "summary": []}
    if block.thinking:
        item["summary"] = [{"type": "summary_text", "text": block.thinking}]
    if meta.get("encrypted_content") is not None:
        item["encrypted_content"] = meta["encrypted_content"]
    return item


# --------------------------------------------------------------------------- reading


def from_openai_responses(items: Iterable[Mapping[str, Any] | Any]) -> list[AgentMessage]:
    """Responses API items (input items or a response's output) → AgentMessages.

    Args:
        items: dicts, or the SDK's pydantic item objects (dumped first).

    Returns:
        Messages in order; consecutive assistant items form one :class:`AssistantMessage`.
        Kinds not modelled here become :class:`OpaqueMessage` (role :data:`OPAQUE_ROLE`,
        the item under ``item``), which :func:`to_openai_responses` writes back unchanged.

    Raises:
        InvalidEntryError: an item that is not a mapping, or a known kind missing its keys.
    """
    return read_items(items, first_index=0)


def read_items(items: Iterable[Mapping[str, Any] | Any], *, first_index: int) -> list[AgentMessage]:
    """:func:`from_openai_responses`, numbering the items in errors from ``first_index`` (for
    callers converting one item of a longer list at a time)."""
    out: list[AgentMessage] = []
    group: list[ContentBlock] = []
    call_names: dict[str, str] = {}

    def flush() -> None:
        if group:
            out.append(AssistantMessage(content=list(group), stop_reason=_stop_reason(group)))
            group.clear()

    for index, raw in enumerate(items, start=first_index):
        item = _as_dict(raw, index)
        kind = item.get("type", "message" if "role" in item else None)
        try:
            if kind == "message" and item.get("role") == "assistant":
                group.extend(_output_blocks(item["content"]))
                continue
            if kind == "reasoning":
                group.append(_thinking_block(item))
                continue
            if kind == "function_call":
                call_names[item["call_id"]] = item["name"]
                group.append(
                    ToolCall(
                        id=item["call_id"],
                        name=item["name"],
                        arguments=_arguments(item.get("arguments", "")),
                    )
                )
                continue
            flush()
            if kind == "message" and item.get("role") == "user":
                out.append(UserMessage(content=_input_blocks(item["content"])))
            elif kind == "message" and item.get("role") in ("system", "developer"):
                out.append(
                    CustomMessage(
                        custom_type=SYSTEM_CUSTOM_TYPE,
                        content=_input_blocks(item["content"]),
                        display=False,
                        details=item["role"],
                    )
                )
            elif kind == "function_call_output":
                output = item["output"]
                content: list[ContentBlock] = (
                    [TextContent(text=output)]
                    if isinstance(output, str)
                    else _as_list(_input_blocks(output))
                )
                out.append(
                    ToolResultMessage(
                        tool_call_id=item["call_id"],
                        tool_name=call_names.get(item["call_id"], ""),
                        content=content,
                    )
                )
            else:
                out.append(OpaqueMessage(role=OPAQUE_ROLE, item=copy.deepcopy(item)))
        except KeyError as exc:
            raise InvalidEntryError(f"Responses item {index} ({kind!r}) lacks {exc}") from exc
        except TypeError as exc:  # e.g. "content": None or a number
            shown = {k: type(v).__name__ for k, v in item.items()}
            raise InvalidEntryError(
                f"Responses item {index} ({kind!r}) has a value of the wrong type ({exc}); "
                f"its keys and value types: {shown}"
            ) from exc
    flush()
    return out


def _as_dict(raw: Any, index: int) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    dump = getattr(raw, "model_dump", None)
    if callable(dump):
        dumped = dump(mode="json", exclude_unset=True)
        if isinstance(dumped, dict):
            return dumped
    raise InvalidEntryError(f"Responses item {index} is a {type(raw).__name__}, not a mapping")


def _as_list(content: str | list[ContentBlock]) -> list[ContentBlock]:
    return [TextContent(text=content)] if isinstance(content, str) else content


def _stop_reason(blocks: Sequence[ContentBlock]) -> str:
    return "toolUse" if any(isinstance(b, ToolCall) for b in blocks) else "stop"


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        value = orjson.loads(raw) if raw else {}
    except (orjson.JSONDecodeError, TypeError):
        value = None
    if isinstance(value, dict):
        return value
    return {_RAW_ARGUMENTS: raw}


def _input_blocks(content: Any) -> str | list[ContentBlock]:
    if isinstance(content, str):
        return content
    blocks: list[ContentBlock] = []
    for part in content:
        part = dict(part)
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
            blocks.append(TextContent(text=part["text"]))
            continue
        if kind == "input_image":
            image = _data_url_image(part)
            if image is not None:
                blocks.append(image)
                continue
        blocks.append(OpaqueBlock.model_validate(part))
    return blocks


def _data_url_image(part: Mapping[str, Any]) -> ImageContent | None:
    """An inline image (``data:<mime>;base64,<data>``, detail ``auto``); others stay opaque."""
    url = part.get("image_url")
    if (
        not isinstance(url, str)
        or not url.startswith("data:")
        or part.get("detail", "auto") != "auto"
    ):
        return None
    head, sep, data = url[5:].partition(",")
    mime, _, encoding = head.partition(";")
    if not sep or encoding != "base64" or not mime:
        return None
    return ImageContent(data=data, mime_type=mime)


def _output_blocks(content: Any) -> list[ContentBlock]:
    if isinstance(content, str):
        return [TextContent(text=content)]
    blocks: list[ContentBlock] = []
    for part in content:
        part = dict(part)
        if part.get("type") in ("output_text", "input_text") and isinstance(part.get("text"), str):
            blocks.append(TextContent(text=part["text"]))
        else:
            blocks.append(OpaqueBlock.model_validate(part))
    return blocks


def thinking_from_reasoning(item: Mapping[str, Any]) -> ThinkingContent | None:
    """A ``reasoning`` item as a thinking block: its ``summary`` and ``content`` texts; when it
    has an ``id`` and ``encrypted_content``, those ride in ``thinking_signature`` so the item
    can be sent back to the Responses API. ``None`` for an item with neither text nor
    encrypted content (Codex writes ``{"type": "reasoning", "summary": []}`` for hidden
    reasoning)."""
    texts = [
        str(part.get("text", ""))
        for key in ("summary", "content")
        for part in item.get(key) or ()
        if isinstance(part, Mapping)
    ]
    signature = None
    if isinstance(item.get("id"), str) and item.get("encrypted_content") is not None:
        meta = {
            "tag": _REASONING_TAG,
            "id": item["id"],
            "encrypted_content": item["encrypted_content"],
        }
        signature = orjson.dumps(meta).decode()
    if not any(texts) and signature is None:
        return None
    return ThinkingContent(thinking="\n".join(texts), thinking_signature=signature)


def _thinking_block(item: Mapping[str, Any]) -> ThinkingContent:
    texts = [s["text"] for s in item.get("summary") or ()]
    texts += [c["text"] for c in item.get("content") or ()]
    meta: dict[str, Any] = {"tag": _REASONING_TAG, "id": item["id"]}
    if item.get("encrypted_content") is not None:
        meta["encrypted_content"] = item["encrypted_content"]
    return ThinkingContent(
        thinking="\n".join(texts), thinking_signature=orjson.dumps(meta).decode()
    )
