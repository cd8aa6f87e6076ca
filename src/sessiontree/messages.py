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
    """Always ``"text"``."""
    text: str
    """The text, as the model or user wrote it."""


class ImageContent(_Block):
    """An image block: ``data`` is base64, ``mime_type`` e.g. ``image/png``."""

    type: Literal["image"] = "image"
    """Always ``"image"``."""
    data: str
    """The image bytes, base64-encoded (no ``data:`` URL prefix)."""
    mime_type: str
    """The image's media type, e.g. ``image/png`` (``mimeType`` on the wire)."""


class ThinkingContent(_Block):
    """A reasoning block; ``thinking_signature`` is the provider's opaque signature, if any."""

    type: Literal["thinking"] = "thinking"
    """Always ``"thinking"``."""
    thinking: str
    """The model's reasoning text (may be a redacted or summarised form)."""
    thinking_signature: str | None = None
    """The provider's opaque signature of the reasoning, sent back unchanged on the next call;
    ``None`` when the provider gave none."""


class ToolCall(_Block):
    """A tool call issued by the assistant; ``arguments`` is the decoded JSON object."""

    type: Literal["toolCall"] = "toolCall"
    """Always ``"toolCall"``."""
    id: str
    """The provider's id of this call; the matching :class:`ToolResultMessage` has it as
    ``tool_call_id``."""
    name: str
    """The name of the tool called."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The call's arguments, decoded from the model's JSON; ``{}`` for none."""


class OpaqueBlock(_Block):
    """A content block of a type this library does not model; every key is preserved."""

    type: str
    """The unknown block type; every other key is kept in ``model_extra``."""


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
    """Dollars for the uncached input tokens."""
    output: float = 0.0
    """Dollars for the output tokens (reasoning included)."""
    cache_read: float = 0.0
    """Dollars for the input tokens read from the provider's prompt cache."""
    cache_write: float = 0.0
    """Dollars for the input tokens written to the provider's prompt cache."""
    total: float = 0.0
    """Dollars for the whole call: the sum of the other four as the writer computed it."""


class Usage(WireModel):
    """Token usage of one model call (tokens) and its cost (dollars)."""

    input: int = 0
    """Input tokens billed at the full rate (cache reads and writes not included); ``0`` when
    unknown."""
    output: int = 0
    """Output tokens, reasoning tokens included; ``0`` when unknown."""
    cache_read: int = 0
    """Input tokens served from the provider's prompt cache."""
    cache_write: int = 0
    """Input tokens written to the provider's prompt cache."""
    total_tokens: int = 0
    """All tokens of the call as the provider reported them; ``0`` when it did not (then
    :meth:`context_tokens` adds the four counts)."""
    cost: Cost | None = None
    """What the call cost, in US dollars; ``None`` when no price was known to the writer."""

    def context_tokens(self) -> int:
        """``total_tokens`` when non-zero, else ``input + output + cache_read + cache_write`` (docs/compaction.md)."""
        if self.total_tokens:
            return self.total_tokens
        return self.input + self.output + self.cache_read + self.cache_write


# --------------------------------------------------------------------------- messages


class UserMessage(_Message):
    """A user turn. ``content`` is a string or a list of text/image blocks."""

    role: Literal["user"] = "user"
    """Always ``"user"``."""
    content: str | list[ContentBlock]
    """The user's text, or a list of text and image blocks."""
    timestamp: int | float = 0
    """When the message was made, in Unix milliseconds (UTC); ``0`` when the writer recorded no
    time."""


class AssistantMessage(_Message):
    """A model answer: text, thinking and tool-call blocks plus what produced them.

    ``stop_reason`` is one of ``stop|length|toolUse|error|aborted`` (other strings from newer
    writers are kept). ``usage`` is the provider's token report for the call.
    """

    role: Literal["assistant"] = "assistant"
    """Always ``"assistant"``."""
    content: list[ContentBlock] = Field(default_factory=list)
    """Text, thinking and tool-call blocks in the order the model produced them."""
    api: str | None = None
    """The wire API that produced the answer (e.g. ``anthropic-messages``, ``openai-completions``);
    ``None`` when unknown."""
    provider: str | None = None
    """The provider that served the model (e.g. ``anthropic``, ``openai``); ``None`` when unknown.
    """
    model: str | None = None
    """The model id as the provider names it (e.g. ``claude-sonnet-4-5``); ``None`` when unknown."""
    usage: Usage | None = None
    """The provider's token report for this call; ``None`` when it gave none."""
    stop_reason: str | None = None
    """Why the answer ended: ``stop``, ``length``, ``toolUse``, ``error`` or ``aborted`` (other
    writers' strings are kept); ``None`` when unknown."""
    error_message: str | None = None
    """What went wrong when ``stop_reason`` is ``error`` or ``aborted``; ``None`` otherwise."""
    timestamp: int | float = 0
    """When the message was made, in Unix milliseconds (UTC); ``0`` when the writer recorded no
    time."""

    def tool_calls(self) -> list[ToolCall]:
        """The tool-call blocks, in call order."""
        return [b for b in self.content if isinstance(b, ToolCall)]


class ToolResultMessage(_Message):
    """The result of one tool call, matched to it by ``tool_call_id``."""

    role: Literal["toolResult"] = "toolResult"
    """Always ``"toolResult"``."""
    tool_call_id: str
    """The ``id`` of the :class:`ToolCall` this answers."""
    tool_name: str = ""
    """The name of the tool that ran; ``""`` when the writer did not record it."""
    content: list[ContentBlock] = Field(default_factory=list)
    """What the tool returned, as text and image blocks sent to the model."""
    details: Any = None
    """Structured data for UIs and extensions (any JSON), never sent to the model; ``None`` for
    none."""
    is_error: bool = False
    """Whether the tool failed; the content then describes the failure."""
    timestamp: int | float = 0
    """When the message was made, in Unix milliseconds (UTC); ``0`` when the writer recorded no
    time."""


class BashExecutionMessage(_Message):
    """A shell command the user ran through the agent, with its output (pi's ``!cmd``)."""

    role: Literal["bashExecution"] = "bashExecution"
    """Always ``"bashExecution"``."""
    command: str
    """The shell command line the user ran."""
    output: str = ""
    """Its combined output (possibly truncated, see ``truncated``)."""
    exit_code: int | None = None
    """The command's exit status; ``None`` when it did not finish (cancelled) or was not recorded.
    """
    cancelled: bool = False
    """Whether the user stopped the command before it ended."""
    truncated: bool = False
    """Whether ``output`` was cut; the whole output is at ``full_output_path`` when set."""
    full_output_path: str | None = None
    """A file holding the whole output when ``output`` was cut; ``None`` otherwise."""
    exclude_from_context: bool | None = None
    """``True`` to keep the command out of the model's context (shown to the user only); ``None`` or
    ``False``: sent."""
    timestamp: int | float = 0
    """When the message was made, in Unix milliseconds (UTC); ``0`` when the writer recorded no
    time."""


class CustomMessage(_Message):
    """An extension's message (``hookMessage`` in pi v2). ``display`` says whether UIs show it."""

    role: Literal["custom"] = "custom"
    """Always ``"custom"``."""
    custom_type: str
    """The extension's name for this kind of message."""
    content: str | list[ContentBlock]
    """What the model is sent: a string, or text and image blocks."""
    display: bool = True
    """Whether UIs show the message to the user (it is sent to the model either way)."""
    details: Any = None
    """The extension's own data (any JSON), never sent to the model; ``None`` for none."""
    timestamp: int | float = 0
    """When the message was made, in Unix milliseconds (UTC); ``0`` when the writer recorded no
    time."""


class BranchSummaryMessage(_Message):
    """The summary of an abandoned branch; ``from_id`` is the leaf that was left."""

    role: Literal["branchSummary"] = "branchSummary"
    """Always ``"branchSummary"``."""
    summary: str
    """The summary of the branch that was left, sent to the model."""
    from_id: str | None = None
    """The leaf of the branch that was left; ``None`` when that branch is not in this session (a
    fork)."""
    timestamp: int | float = 0
    """When the message was made, in Unix milliseconds (UTC); ``0`` when the writer recorded no
    time."""


class CompactionSummaryMessage(_Message):
    """The summary a compaction put in place of older messages; ``tokens_before`` in tokens."""

    role: Literal["compactionSummary"] = "compactionSummary"
    """Always ``"compactionSummary"``."""
    summary: str
    """The summary that stands for the compacted messages, sent to the model."""
    tokens_before: int = 0
    """The context's size in tokens before the compaction; ``0`` when unknown."""
    timestamp: int | float = 0
    """When the message was made, in Unix milliseconds (UTC); ``0`` when the writer recorded no
    time."""


class OpaqueMessage(_Message):
    """A message with a ``role`` this library does not model; kept whole, never sent to a model."""

    role: str
    """The unknown role; every other key is kept in ``model_extra``."""


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
