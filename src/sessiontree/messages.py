"""AgentMessage: the messages an agent exchanges with its model (docs/entries.md).

A message is a union discriminated by ``role``; content blocks by ``type``. A role or block
type this library does not know is kept as an opaque object (:class:`OpaqueMessage`,
:class:`OpaqueBlock`) with every key preserved, so a newer writer's data survives a round
trip through an older reader. ``timestamp`` on a message is Unix milliseconds.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, SerializeAsAny, TypeAdapter

from sessiontree._model import DEFER_BUILD, WireModel

__all__ = [
    "MESSAGE_ADAPTER",
    "MESSAGE_ROLES",
    "AgentMessage",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "ContentBlock",
    "Cost",
    "CustomMessage",
    "ImageContent",
    "OpaqueBlock",
    "OpaqueMessage",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "message_text",
    "parse_message",
]


# --------------------------------------------------------------------------- content blocks


class _Block(WireModel):
    _always_dumped: ClassVar[frozenset[str]] = frozenset({"type"})


class _Message(WireModel):
    _always_dumped: ClassVar[frozenset[str]] = frozenset({"role"})


class TextContent(_Block):
    """A text block: ``{"type": "text", "text": ...}``."""

    type: Literal["text"] = "text"
    text: str


class ImageContent(_Block):
    """An image block: ``data`` is base64, ``mime_type`` e.g. ``image/png``."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ThinkingContent(_Block):
    """A reasoning block; ``thinking_signature`` is the provider's opaque signature, if any."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    thinking_signature: str | None = None


class ToolCall(_Block):
    """A tool call issued by the assistant; ``arguments`` is the decoded JSON object."""

    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class OpaqueBlock(_Block):
    """A content block of a type this library does not model; every key is preserved."""

    type: str


_BLOCK_TYPES = frozenset({"text", "image", "thinking", "toolCall"})


def _unknown_block_type(block: OpaqueBlock) -> OpaqueBlock:
    if block.type in _BLOCK_TYPES:
        raise ValueError(f"not a valid {block.type!r} block")
    return block


# A union tagged by the plain ``type`` string (pydantic-core picks the class without calling
# Python), then, only when the tag is unknown, the opaque fallback: twice as fast to validate
# as a callable discriminator, which makes pydantic hand every value to Python first. Each
# value is written by its own class's serialiser (``SerializeAsAny``): what the union's
# serialiser picks for every value of these classes, without trying the members in turn
# (about a third of writing a message).
ContentBlock = Annotated[
    Annotated[TextContent | ImageContent | ThinkingContent | ToolCall, Field(discriminator="type")]
    | Annotated[OpaqueBlock, AfterValidator(_unknown_block_type)],
    Field(union_mode="left_to_right"),
    SerializeAsAny(),
]
"""Any content block; unknown ``type`` values become :class:`OpaqueBlock`."""


# --------------------------------------------------------------------------- usage


class Cost(WireModel):
    """Cost of a model call in US dollars, split like :class:`Usage`."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


class Usage(WireModel):
    """Token usage of one model call (tokens) and its cost (dollars)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost | None = None

    def context_tokens(self) -> int:
        """``total_tokens`` when non-zero, else ``input + output + cache_read + cache_write`` (docs/compaction.md)."""
        if self.total_tokens:
            return self.total_tokens
        return self.input + self.output + self.cache_read + self.cache_write


# --------------------------------------------------------------------------- messages


class UserMessage(_Message):
    """A user turn. ``content`` is a string or a list of text/image blocks."""

    role: Literal["user"] = "user"
    content: str | list[ContentBlock]
    timestamp: int | float = 0


class AssistantMessage(_Message):
    """A model answer: text, thinking and tool-call blocks plus what produced them.

    ``stop_reason`` is one of ``stop|length|toolUse|error|aborted`` (other strings from newer
    writers are kept). ``usage`` is the provider's token report for the call.
    """

    role: Literal["assistant"] = "assistant"
    content: list[ContentBlock] = Field(default_factory=list)
    api: str | None = None
    provider: str | None = None
    model: str | None = None
    usage: Usage | None = None
    stop_reason: str | None = None
    error_message: str | None = None
    timestamp: int | float = 0

    def tool_calls(self) -> list[ToolCall]:
        """The tool-call blocks, in call order."""
        return [b for b in self.content if isinstance(b, ToolCall)]


class ToolResultMessage(_Message):
    """The result of one tool call, matched to it by ``tool_call_id``."""

    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str = ""
    content: list[ContentBlock] = Field(default_factory=list)
    details: Any = None
    is_error: bool = False
    timestamp: int | float = 0


class BashExecutionMessage(_Message):
    """A shell command the user ran through the agent, with its output (pi's ``!cmd``)."""

    role: Literal["bashExecution"] = "bashExecution"
    command: str
    output: str = ""
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    exclude_from_context: bool | None = None
    timestamp: int | float = 0


class CustomMessage(_Message):
    """An extension's message (``hookMessage`` in pi v2). ``display`` says whether UIs show it."""

    role: Literal["custom"] = "custom"
    custom_type: str
    content: str | list[ContentBlock]
    display: bool = True
    details: Any = None
    timestamp: int | float = 0


class BranchSummaryMessage(_Message):
    """The summary of an abandoned branch; ``from_id`` is the leaf that was left."""

    role: Literal["branchSummary"] = "branchSummary"
    summary: str
    from_id: str | None = None
    timestamp: int | float = 0


class CompactionSummaryMessage(_Message):
    """The summary a compaction put in place of older messages; ``tokens_before`` in tokens."""

    role: Literal["compactionSummary"] = "compactionSummary"
    summary: str
    tokens_before: int = 0
    timestamp: int | float = 0


class OpaqueMessage(_Message):
    """A message with a ``role`` this library does not model; kept whole, never sent to a model."""

    role: str


MESSAGE_ROLES = frozenset(
    {
        "user",
        "assistant",
        "toolResult",
        "bashExecution",
        "custom",
        "branchSummary",
        "compactionSummary",
    }
)
"""The roles of the message classes this library models (each has a ``timestamp``)."""


def _unknown_role(message: OpaqueMessage) -> OpaqueMessage:
    if message.role in MESSAGE_ROLES:
        raise ValueError(f"not a valid {message.role!r} message")
    return message


AgentMessage = Annotated[
    Annotated[
        UserMessage
        | AssistantMessage
        | ToolResultMessage
        | BashExecutionMessage
        | CustomMessage
        | BranchSummaryMessage
        | CompactionSummaryMessage,
        Field(discriminator="role"),
    ]
    | Annotated[OpaqueMessage, AfterValidator(_unknown_role)],
    Field(union_mode="left_to_right"),
    SerializeAsAny(),  # written by the message's own class, as ContentBlock
]
"""Any message; discriminated by ``role``, unknown roles become :class:`OpaqueMessage`."""

MESSAGE_ADAPTER: TypeAdapter[AgentMessage] = TypeAdapter(AgentMessage, config=DEFER_BUILD)


def parse_message(obj: Any) -> AgentMessage:
    """Validate a dict (camelCase or snake_case keys) or model into an :data:`AgentMessage`.

    Raises:
        pydantic.ValidationError: the object is not a message.
    """
    if isinstance(obj, _Message):
        return obj  # type: ignore[return-value]
    return MESSAGE_ADAPTER.validate_python(obj)


def message_text(message: AgentMessage, *, include_thinking: bool = False) -> str:
    """The plain text of a message (text blocks joined by newlines; summaries; bash output).

    Tool-call blocks contribute ``name(arguments)``; thinking only when asked.
    """
    content: Any
    if isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
        return message.summary
    if isinstance(message, BashExecutionMessage):
        return f"$ {message.command}\n{message.output}"
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""  # none, or an unknown role's content of another shape (e.g. ``5``)
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ThinkingContent) and include_thinking:
            parts.append(block.thinking)
    return "\n".join(parts)
