"""The provider-neutral model interface the harness talks to.

A :class:`Model` turns a :class:`ModelRequest` (system prompt, AgentMessages, tool schemas,
thinking level, output cap) into a stream of :data:`ModelEvent` s: text, thinking and
tool-call deltas as they arrive, then one :class:`Done` holding the complete
:class:`~sessiontree.messages.AssistantMessage` with ``usage``, ``stopReason``, ``provider``
and ``model``. A failed call raises :class:`~sessiontree.errors.ModelError`, whose ``kind``
says whether it is worth retrying; models do not retry themselves (the harness does, with
its :class:`~sessiontree.harness.retry.RetryPolicy`).
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from sessiontree.entries import ThinkingLevel
from sessiontree.errors import ModelError
from sessiontree.messages import AgentMessage, AssistantMessage, Cost, Usage

__all__ = [
    "Done",
    "Model",
    "ModelEvent",
    "ModelRequest",
    "Prices",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolSchema",
    "is_overflow_message",
    "model_error",
    "final_reply",
    "retry_after_seconds",
]


@dataclass(frozen=True)
class ToolSchema:
    """A tool as offered to a model: its name, what it does, its arguments' JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class ModelRequest:
    """One model call.

    Attributes:
        system_prompt: the system prompt (``""`` for none).
        messages: the context, oldest first (the wire converters make it a valid request).
        tools: the tools the model may call.
        thinking_level: how much the model may reason before answering (``off`` = none).
        max_output_tokens: the cap on the answer (tokens); ``None`` = the model's default.
    """

    system_prompt: str
    messages: Sequence[AgentMessage]
    tools: Sequence[ToolSchema] = ()
    thinking_level: ThinkingLevel = "off"
    max_output_tokens: int | None = None


@dataclass(frozen=True)
class TextDelta:
    """A piece of answer text."""

    text: str
    type: str = "text_delta"


@dataclass(frozen=True)
class ThinkingDelta:
    """A piece of reasoning text."""

    thinking: str
    type: str = "thinking_delta"


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of a tool call: ``index`` orders the calls; ``id``/``name`` come first."""

    index: int
    id: str | None
    name: str | None
    arguments: str
    type: str = "toolcall_delta"


@dataclass(frozen=True)
class Done:
    """The end of a stream: the complete assistant message."""

    message: AssistantMessage
    type: str = "done"


ModelEvent = TextDelta | ThinkingDelta | ToolCallDelta | Done
"""What :meth:`Model.stream` yields; the last event is always a :class:`Done`."""


@runtime_checkable
class Model(Protocol):
    """A model the harness can call.

    Attributes:
        provider: the provider name recorded on messages and ``model_change`` entries.
        model_id: the model name the provider knows.
        context_window: the model's context window (tokens), when known.
    """

    provider: str
    model_id: str
    context_window: int | None

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one answer to ``request``; the last event is :class:`Done`.

        Raises:
            ModelError: the call failed (``kind`` says how).
        """
        ...


@dataclass(frozen=True)
class Prices:
    """What a model costs, US dollars per million tokens of each kind."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    def cost(self, usage: Usage) -> Cost:
        """The cost of ``usage`` (dollars)."""
        parts = {
            "input": usage.input * self.input / 1e6,
            "output": usage.output * self.output / 1e6,
            "cache_read": usage.cache_read * self.cache_read / 1e6,
            "cache_write": usage.cache_write * self.cache_write / 1e6,
        }
        return Cost(**parts, total=sum(parts.values()))


def priced(usage: Usage, prices: Prices | None) -> Usage:
    """``usage`` with its ``cost`` filled in when ``prices`` are known."""
    if prices is None:
        return usage
    return usage.model_copy(update={"cost": prices.cost(usage)})


@dataclass
class Accumulator:
    """Builds the assistant message of a stream as deltas arrive (also when it is cut off).

    ``blocks`` holds content in arrival order; each entry is ``["text", str]``,
    ``["thinking", str, signature]`` or ``["toolCall", id, name, json_text]``.
    """

    blocks: list[list[Any]] = field(default_factory=list)
    tool_index: dict[int, int] = field(default_factory=dict)

    def text(self, delta: str) -> None:
        if self.blocks and self.blocks[-1][0] == "text":
            self.blocks[-1][1] += delta
        else:
            self.blocks.append(["text", delta])

    def thinking(self, delta: str, signature: str | None = None) -> None:
        if self.blocks and self.blocks[-1][0] == "thinking":
            self.blocks[-1][1] += delta
            if signature:
                self.blocks[-1][2] = (self.blocks[-1][2] or "") + signature
        else:
            self.blocks.append(["thinking", delta, signature])

    def tool(self, index: int, call_id: str | None, name: str | None, args: str) -> None:
        at = self.tool_index.get(index)
        if at is None:
            self.tool_index[index] = len(self.blocks)
            self.blocks.append(["toolCall", call_id or f"call_{index}", name or "", args])
            return
        block = self.blocks[at]
        if call_id:
            block[1] = call_id
        if name:
            block[2] = name
        block[3] += args

    def content(self) -> list[Any]:
        """The content blocks (wire dicts); a tool call's arguments decoded from JSON, or
        kept as ``rawArguments`` text when they are not a JSON object."""
        import orjson

        out: list[Any] = []
        for block in self.blocks:
            if block[0] == "text":
                if block[1]:
                    out.append({"type": "text", "text": block[1]})
            elif block[0] == "thinking":
                item = {"type": "thinking", "thinking": block[1]}
                if block[2]:
                    item["thinkingSignature"] = block[2]
                out.append(item)
            else:
                call: dict[str, Any] = {"type": "toolCall", "id": block[1], "name": block[2]}
                raw = block[3].strip()
                try:
                    args = orjson.loads(raw) if raw else {}
                except orjson.JSONDecodeError:
                    args = None
                if isinstance(args, dict):
                    call["arguments"] = args
                else:
                    call["arguments"] = {}
                    call["rawArguments"] = block[3]
                out.append(call)
        return out


def final_reply(
    acc: Accumulator,
    *,
    api: str,
    provider: str,
    model: str,
    usage: Usage,
    stop_reason: str,
    vendor_reason: str,
) -> Done:
    """The :class:`Done` event that ends a complete stream.

    Args:
        acc: the content streamed.
        api: the wire protocol (``anthropic-messages``, ``openai-completions``).
        provider: the provider name written on the message.
        model: the model the server says answered.
        usage: the answer's usage, priced.
        stop_reason: sessiontree's stop reason (``stop``, ``length``, ``toolUse``, ``error``).
        vendor_reason: the server's own reason, as ``"<field> <value>"``
            (``stop_reason 'refusal'``); it is the ``error_message`` when ``stop_reason``
            is ``error``.
    """
    failure = {"error_message": vendor_reason} if stop_reason == "error" else {}
    return Done(
        AssistantMessage(
            content=acc.content(),
            api=api,
            provider=provider,
            model=model,
            usage=usage,
            stop_reason=stop_reason,
            **failure,
        )
    )


_OVERFLOW = re.compile(
    r"context[ _-]?(length|window)|maximum context|prompt is too long|too many tokens|"
    r"request_too_large|input is too long|token limit|exceeds the (maximum|limit)|"
    r"input tokens exceed|reduce the length",
    re.IGNORECASE,
)
_NOT_OVERFLOW = re.compile(r"rate limit|too many requests|throttl", re.IGNORECASE)


def is_overflow_message(text: str) -> bool:
    """Whether a provider's error text says the request exceeded the context window."""
    return bool(_OVERFLOW.search(text)) and not _NOT_OVERFLOW.search(text)


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The delay asked for by ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def model_error(exc: BaseException, sdk: Any, who: str) -> ModelError:
    """``exc`` raised by the ``openai`` or ``anthropic`` SDK (or ``httpx`` under it) as a
    classified :class:`ModelError`; ``who`` names the model in the message."""
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    message = str(getattr(exc, "message", None) or exc) or type(exc).__name__
    text = f"{who}: {message}"
    # The SDKs' HTTP layer (httpx, or its successor httpx2) raises its own errors while a
    # stream is read; they are recognised by module so that neither package is imported here.
    transport = type(exc).__module__.split(".")[0] in ("httpx", "httpx2")
    if isinstance(exc, sdk.APITimeoutError) or (transport and "Timeout" in type(exc).__name__):
        return ModelError("timeout", f"{who}: the request timed out")
    if isinstance(exc, sdk.APIConnectionError) or transport:
        return ModelError("connection", f"{who}: connection failed: {message}")
    if isinstance(status, int) and status >= 400:
        if status in (401, 403):
            return ModelError("auth", text, status=status)
        if is_overflow_message(message) or status == 413:
            return ModelError("overflow", text, status=status)
        if status == 429:
            return ModelError(
                "rate_limit", text, status=status, retry_after_s=retry_after_seconds(headers)
            )
        if status >= 500 or status in (408, 409):
            return ModelError(
                "server", text, status=status, retry_after_s=retry_after_seconds(headers)
            )
        return ModelError("bad_request", text, status=status)
    if is_overflow_message(message):
        return ModelError("overflow", text)
    # An error event inside a stream (overloaded, api_error) has no status: transient.
    return ModelError("server", text)
