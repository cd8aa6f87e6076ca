"""The provider-neutral model interface the harness talks to.

A :class:`Model` turns a :class:`ModelRequest` (system prompt, AgentMessages, tool schemas,
thinking level, output cap) into a stream of :data:`ModelEvent` s: text, thinking and
tool-call deltas as they arrive, then one :class:`Done` holding the complete
:class:`~sessiontree.messages.AssistantMessage` with ``usage``, ``stopReason``, ``provider``
and ``model``. A failed call raises :class:`~sessiontree.errors.ModelError`, whose ``kind``
says whether it is worth retrying; the harness's models do not retry themselves (the harness
does, with its :class:`~sessiontree.harness.retry.RetryPolicy`). A :class:`CompletingModel`
also answers in one request that is not streamed.
"""

from __future__ import annotations

import datetime
import email.utils
import math
import re
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from sessiontree.entries import ThinkingLevel
from sessiontree.errors import ModelAuthError, ModelConfigError, ModelError, ModelRateLimitError
from sessiontree.messages import AgentMessage, AssistantMessage, Cost, Usage
from sessiontree.providers.endpoint import check_base_url

__all__ = [
    "CHECK_TIMEOUT_S",
    "CompletingModel",
    "Done",
    "Model",
    "ModelEvent",
    "ModelRequest",
    "Prices",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallDelta",
    "UsageDelta",
    "ToolSchema",
    "api_error_fields",
    "check_base_url",
    "check_model",
    "final_reply",
    "is_overflow_message",
    "model_error",
    "raw_usage",
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
class UsageDelta:
    """The usage the provider has reported so far for this answer (cumulative, priced), sent
    as soon as it is known (Anthropic: input tokens when the stream starts; OpenAI: the last
    chunk's usage), so an answer that fails or is aborted afterwards still records what it
    cost. The :class:`Done` message's ``usage`` supersedes it."""

    usage: Usage
    type: str = "usage_delta"


@dataclass(frozen=True)
class Done:
    """The end of a stream: the complete assistant message."""

    message: AssistantMessage
    type: str = "done"


ModelEvent = TextDelta | ThinkingDelta | ToolCallDelta | UsageDelta | Done
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


@runtime_checkable
class CompletingModel(Model, Protocol):
    """A :class:`~sessiontree.models.base.Model` that can also answer in one request that
    is not streamed (both SDK-backed models can; summaries use it)."""

    async def complete(self, request: ModelRequest) -> AssistantMessage:
        """The whole answer to ``request`` (what a stream's ``Done`` would hold).

        Raises:
            ModelError: the call failed.
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

    def text_block(self, text: str) -> None:
        """Add ``text`` as a block of its own (a non-streamed answer's separate text blocks
        stay separate)."""
        self.blocks.append(["text", text])

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


def raw_usage(usage: Any) -> Any:
    """The fields of an SDK usage object as the server sent them (for a warning)."""
    try:
        return dict(vars(usage))
    except TypeError:
        return usage


def final_reply(
    acc: Accumulator,
    *,
    api: str,
    provider: str,
    model: str,
    usage: Usage | None,
    stop_reason: str,
    vendor_reason: str,
) -> Done:
    """The :class:`Done` event that ends a complete stream.

    Args:
        acc: the content streamed.
        api: the wire protocol (``anthropic-messages``, ``openai-completions``).
        provider: the provider name written on the message.
        model: the model the server says answered.
        usage: the answer's usage, priced; ``None`` when it is unknown (the server sent
            malformed usage).
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


def _delay(text: str, scale: float) -> float | None:
    """``text`` as a finite number of seconds ``>= 0`` (after multiplying by ``scale``), else
    ``None``: ``nan``, ``inf``, negative and unreadable values ask for nothing."""
    try:
        value = float(text.strip()) * scale
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The delay asked for by ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date).

    Returns a finite number of seconds ``>= 0``, or ``None`` when neither header holds a
    readable one (``nan``, ``inf``, negative numbers and garbage are ignored; a date in the
    past is ``0``). The caller still bounds the wait (``RetryPolicy.max_delay_s``).
    """
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        delay = _delay(ms, 1 / 1000)
        if delay is not None:
            return delay
    value = headers.get("retry-after")
    if not value:
        return None
    delay = _delay(value, 1.0)
    if delay is not None:
        return delay
    try:
        when = email.utils.parsedate_to_datetime(value)
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.UTC)
        seconds = when.timestamp() - time.time()
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    return max(seconds, 0.0) if math.isfinite(seconds) else None


_ERROR_TYPES = {
    "authentication_error": "auth",
    "permission_error": "auth",
    "invalid_api_key": "auth",
    "invalid_authentication": "auth",
    "rate_limit_error": "rate_limit",
    "rate_limit_exceeded": "rate_limit",
    "overloaded_error": "server",
    "api_error": "server",
    "server_error": "server",
    "internal_server_error": "server",
    "service_unavailable": "server",
    "timeout_error": "timeout",
    "request_too_large": "overflow",
    "context_length_exceeded": "overflow",
    "model_not_found": "config",
    "not_found_error": "config",
    "invalid_request_error": "bad_request",
}
"""The kind of an error by the ``type`` or ``code`` the API gives it (Anthropic's error
types, OpenAI's error types and codes); used for errors without an HTTP error status, such
as an error event in the middle of a stream."""


def api_error_fields(exc: BaseException) -> tuple[str, str]:
    """The ``(type, code)`` of the API error body an SDK exception carries (``""`` when
    absent): Anthropic's ``{"type": "error", "error": {"type": ...}}`` and OpenAI's
    ``{"error": {"type": ..., "code": ...}}`` (or the inner object alone, as a streamed
    error event gives it)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if not isinstance(body, dict):
        return "", ""
    kind, code = body.get("type"), body.get("code")
    return (
        kind.lower() if isinstance(kind, str) else "",
        code.lower() if isinstance(code, str) else "",
    )


def _network_kind(exc: BaseException) -> tuple[str, str] | None:
    """``(kind, reason)`` when a transport failure (anywhere in ``exc``'s cause chain) is
    really a configuration error: a URL without ``http(s)://`` or with a bad host, or a host
    name that does not resolve. ``None`` for a network failure (refused, reset, ...)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        name = type(current).__name__
        if name in ("UnsupportedProtocol", "InvalidURL"):
            return "config", f"the base URL is not usable: {current}"
        if isinstance(current, socket.gaierror) and current.errno in _NO_SUCH_HOST:
            return "config", f"the base URL's host does not resolve: {current}"
        current = current.__cause__ or current.__context__
    return None


_NO_SUCH_HOST = frozenset(
    getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, name)
)


def model_error(
    exc: BaseException, sdk: Any, who: str, *, timeout_s: float | None = None
) -> ModelError:
    """``exc`` raised by the ``openai`` or ``anthropic`` SDK (or ``httpx`` under it) as a
    classified :class:`ModelError` (see its kinds); ``who`` names the model in the message,
    ``timeout_s`` (the client's timeout, seconds) is named when the request timed out, and an
    HTTP error status is named as ``HTTP <status>``.

    An HTTP error status decides first; an error the API reports without one (an error event
    mid-stream) is classified by its ``type``/``code``; a transport failure is ``timeout``,
    ``connection``, or ``config`` when the URL or host name is wrong. An exception that is
    none of these (the SDK could not read the answer) is ``invalid_response``, not retried.
    """
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    message = str(getattr(exc, "message", None) or exc) or type(exc).__name__
    text = f"{who}: {message}"
    status_text = f"{who}: HTTP {status}: {message}"
    # The SDKs' HTTP layer (httpx, or its successor httpx2) raises its own errors while a
    # stream is read; they are recognised by module so that neither package is imported here.
    transport = type(exc).__module__.split(".")[0] in ("httpx", "httpx2")
    if isinstance(exc, sdk.APITimeoutError) or (transport and "Timeout" in type(exc).__name__):
        after = f" after {timeout_s:g} s" if timeout_s is not None else ""
        return ModelError("timeout", f"{who}: the request timed out{after}")
    if isinstance(exc, sdk.APIConnectionError) or transport:
        configured = _network_kind(exc)
        if configured is not None:
            return ModelConfigError(f"{who}: {configured[1]}")
        cause = exc.__cause__ or exc.__context__
        reason = str(cause) if cause is not None and str(cause) else message
        return ModelError("connection", f"{who}: cannot connect: {reason}")
    error_type, code = api_error_fields(exc)
    by_type = _ERROR_TYPES.get(code) or _ERROR_TYPES.get(error_type)
    if isinstance(status, int) and status >= 400:
        if status in (401, 403):
            return ModelAuthError(status_text, status=status)
        if is_overflow_message(message) or status == 413:
            return ModelError("overflow", status_text, status=status)
        if status == 429:
            return ModelRateLimitError(
                status_text, status=status, retry_after_s=retry_after_seconds(headers)
            )
        if status >= 500 or status in (408, 409):
            return ModelError(
                "server", status_text, status=status, retry_after_s=retry_after_seconds(headers)
            )
        if status == 404 or by_type == "config":
            return ModelConfigError(
                f"{status_text} (is the model name right, and does the base URL serve the API?)",
                status=status,
            )
        return ModelError("bad_request", status_text, status=status)
    if isinstance(exc, TypeError) and "authentication" in message.lower():
        # the anthropic SDK's client without an api_key or auth_token
        return ModelAuthError(text)
    if is_overflow_message(message):
        return ModelError("overflow", text)
    if isinstance(exc, sdk.APIError):
        if isinstance(exc, sdk.APIResponseValidationError):
            return ModelError("invalid_response", text)
        # an error the API reported without an HTTP error status: an error event mid-stream
        kind = by_type or "server"
        if kind == "auth":
            return ModelAuthError(text)
        if kind == "config":
            return ModelConfigError(text)
        if kind == "rate_limit":
            return ModelRateLimitError(text, retry_after_s=retry_after_seconds(headers))
        return ModelError(kind, text, retry_after_s=retry_after_seconds(headers))
    return ModelError(
        "invalid_response", f"{who}: cannot read the answer: {type(exc).__name__}: {exc}"
    )


CHECK_TIMEOUT_S = 30.0
"""Seconds :func:`check_model` waits for the server before it gives up asking (and lets the
first real call find out)."""


async def check_model(
    retrieve: Callable[[], Awaitable[Any]],
    list_models: Callable[[], Awaitable[Any]] | None,
    *,
    sdk: Any,
    who: str,
    model_id: str,
    base_url: str,
) -> None:
    """Ask the server about a model before anything depends on it, so that what can never
    work fails at once: ``GET {base_url}/models/{model_id}`` (``retrieve``), and, when that
    answers 404 without naming the model, ``GET {base_url}/models`` (``list_models``).

    It raises only for what the answers prove; when the server cannot tell (no models
    endpoint, 5xx, 429, a timeout) it returns and the first real call decides.

    Raises:
        ModelAuthError: the server rejects the API key (401/403).
        ModelConfigError: the model is unknown (a 404 naming it), the base URL is unusable or
            its host does not resolve, or nothing at the base URL serves the API (both
            requests 404).
        ModelError: ``connection`` — nothing answers at the base URL (refused, reset).
    """
    try:
        await retrieve()
        return
    except Exception as exc:
        error = model_error(exc, sdk, who)
        if error.kind in ("auth", "config") and error.status != 404:
            raise error from exc
        if error.kind == "connection":
            raise ModelError(
                "connection",
                f"{error.detail} (is the server running, and is the base URL {base_url} right?)",
            ) from exc
        if error.status != 404:
            return
        _, code = api_error_fields(exc)
        if code == "model_not_found" or model_id in str(getattr(exc, "message", "")):
            raise ModelConfigError(
                f"{who}: the server does not know this model: {getattr(exc, 'message', exc)}",
                status=404,
            ) from exc
    if list_models is None:
        return
    try:
        await list_models()
    except Exception as exc:
        error = model_error(exc, sdk, who)
        if error.kind == "auth":
            raise error from exc
        if error.status == 404:
            raise ModelConfigError(
                f"{who}: nothing at the base URL {base_url} serves the API "
                "(GET models answered 404; an OpenAI-compatible root usually ends in /v1)",
                status=404,
            ) from exc
