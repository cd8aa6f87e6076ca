"""``AnthropicModel``: Anthropic Messages, streamed or in one answer, with extended thinking.

Built on the official ``anthropic`` SDK (``AsyncAnthropic``), imported when a model is
constructed. The raw server-sent events are read (``message_start``, ``content_block_*``,
``message_delta``, ``message_stop``), so text, thinking (with its signature) and tool-call
input arrive as deltas. The provider's rules (endpoint, key, thinking budgets, usage and stop
reasons, prompt-cache breakpoints) are :mod:`sessiontree.providers.anthropic`'s. The SDK's
own retries are off unless ``max_retries`` is given: the harness retries.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import orjson

from sessiontree.errors import MissingExtraError, ModelAuthError, ModelError
from sessiontree.messages import AssistantMessage, Usage
from sessiontree.models.base import (
    CHECK_TIMEOUT_S,
    Accumulator,
    Done,
    ModelEvent,
    ModelRequest,
    Prices,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageDelta,
    check_model,
    final_reply,
    model_error,
    priced,
    raw_usage,
)
from sessiontree.providers import anthropic as rules
from sessiontree.providers.endpoint import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_TIMEOUT_S,
    check_base_url,
    resolve_endpoint,
    timeout_seconds,
)
from sessiontree.wire.anthropic import to_anthropic

if TYPE_CHECKING:
    import anthropic

__all__ = ["AnthropicModel"]

log = logging.getLogger(__name__)


class AnthropicModel:
    """A :class:`~sessiontree.models.base.Model` over Anthropic Messages, streamed or whole.

    Args:
        model_id: ``claude-sonnet-4-5``, ...
        base_url: the API root without ``/v1``; ``None`` → ``ANTHROPIC_BASE_URL`` or Anthropic's.
        api_key: ``None`` → ``ANTHROPIC_API_KEY``, else a placeholder for a local server.
        client: a ready ``anthropic.AsyncAnthropic``.
        context_window: the window (tokens) the harness keeps the context inside.
        max_output_tokens: ``max_tokens`` of every request (default
            :data:`~sessiontree.providers.endpoint.DEFAULT_MAX_OUTPUT_TOKENS`).
        prices: dollars per million tokens, to record ``usage.cost``.
        timeout: seconds per request phase.
        prompt_caching: mark cache breakpoints
            (:func:`~sessiontree.providers.anthropic.cache_breakpoints`), so a long session's
            prefix is read from Anthropic's prompt cache at its cache-read price.
        max_retries: the SDK's own retries of a failed request (``0``: none, the harness
            retries); ignored with ``client`` (the client's own apply).

    Raises:
        MissingExtraError: the ``anthropic`` package is not installed.
        ModelAuthError: no API key (nor ``ANTHROPIC_AUTH_TOKEN``) for a non-local server.
        ModelConfigError: ``base_url`` is not an ``http(s)`` URL with a host.
    """

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: anthropic.AsyncAnthropic | None = None,
        context_window: int | None = None,
        max_output_tokens: int | None = None,
        prices: Prices | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        prompt_caching: bool = True,
        max_retries: int = 0,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise MissingExtraError("anthropic", "anthropic") from exc
        self.provider = "anthropic"
        self.model_id = model_id
        self.context_window = context_window
        self.max_output_tokens = max_output_tokens
        self.prices = prices
        self.prompt_caching = prompt_caching
        if client is None:
            url, key = resolve_endpoint(
                base_url, api_key, url_env=rules.URL_ENV, key_env=rules.KEY_ENV
            )
            check_base_url(url, self._who())
            if key is None and not os.environ.get(rules.AUTH_TOKEN_ENV):
                raise ModelAuthError(
                    f"{self._who()}: no API key: pass api_key=... or set {rules.KEY_ENV}"
                )
            client = anthropic.AsyncAnthropic(
                api_key=key, base_url=url, max_retries=max_retries, timeout=timeout
            )
        self.client = client
        self.base_url = str(client.base_url).rstrip("/")
        self._timeout_s = timeout_seconds(client.timeout)

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model_id!r}, base_url={self.base_url!r})"

    def _who(self) -> str:
        return f"Anthropic model {self.model_id!r}"

    def request_body(self, request: ModelRequest, *, stream: bool = True) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request``, streamed or not."""
        system, messages = to_anthropic(
            request.messages, system_prompt=request.system_prompt, model=self.model_id
        )
        cap = request.max_output_tokens or self.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS
        body: dict[str, Any] = {"model": self.model_id, "messages": messages}
        if stream:
            body["stream"] = True
        if system:
            body["system"] = system
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                for t in request.tools
            ]
        if request.thinking_level != "off":
            budget = rules.THINKING_BUDGETS[request.thinking_level]
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            cap = max(cap, budget + 1024)
        body["max_tokens"] = cap
        if self.prompt_caching:
            rules.cache_breakpoints(body)
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one answer (see :class:`~sessiontree.models.base.Model`).

        Raises:
            ModelError: the call failed, an ``error`` event arrived, or the stream ended
                before ``message_stop`` (``connection``).
        """
        import anthropic

        acc = Accumulator()
        counts = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
        stop: str | None = None
        finished = False
        model_name = self.model_id
        kinds: dict[int, str] = {}
        malformed: list[Any] = []
        try:
            stream = await self.client.messages.create(**self.request_body(request))
            async for event in stream:
                kind = event.type
                if kind == "message_start":
                    model_name = event.message.model or model_name
                    self._count(counts, event.message.usage, malformed)
                    if not malformed:
                        yield UsageDelta(self._so_far(counts))
                elif kind == "content_block_start":
                    block = event.content_block
                    kinds[event.index] = block.type
                    if block.type == "tool_use":
                        acc.tool(event.index, block.id, block.name, "")
                        yield ToolCallDelta(event.index, block.id, block.name, "")
                    elif block.type == "text" and block.text:
                        acc.text(block.text)
                        yield TextDelta(block.text)
                    elif block.type == "thinking":
                        acc.thinking(block.thinking or "", block.signature or None)
                elif kind == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        acc.text(delta.text)
                        yield TextDelta(delta.text)
                    elif delta.type == "thinking_delta":
                        acc.thinking(delta.thinking)
                        yield ThinkingDelta(delta.thinking)
                    elif delta.type == "signature_delta":
                        acc.thinking("", delta.signature)
                    elif delta.type == "input_json_delta":
                        acc.tool(event.index, None, None, delta.partial_json)
                        yield ToolCallDelta(event.index, None, None, delta.partial_json)
                elif kind == "message_delta":
                    stop = event.delta.stop_reason or stop
                    self._count(counts, event.usage, malformed)
                    if not malformed:
                        yield UsageDelta(self._so_far(counts))
                elif kind == "message_stop":
                    finished = True
        except Exception as exc:
            raise model_error(exc, anthropic, self._who(), timeout_s=self._timeout_s) from exc
        if not finished:
            raise ModelError("connection", f"{self._who()}: the stream ended before message_stop")
        usage: Usage | None = None
        if malformed:
            log.warning(
                "%s: the server reported malformed usage %r; the answer's usage is recorded "
                "as unknown",
                self._who(),
                malformed[0],
            )
        else:
            usage = self._so_far(counts)
        stop_reason, vendor_reason = rules.stop_reason(stop)
        yield final_reply(
            acc,
            api=rules.API,
            provider=self.provider,
            model=model_name,
            usage=usage,
            stop_reason=stop_reason,
            vendor_reason=vendor_reason,
        )

    async def complete(self, request: ModelRequest) -> AssistantMessage:
        """The whole answer to ``request`` from one request that is not streamed (the SDK
        retries it ``max_retries`` times): the message a stream's :class:`Done` would hold.
        Each text block of the answer stays a block of its own.

        Raises:
            ModelError: the call failed, or the answer is not a message.
        """
        import anthropic

        try:
            answer = await self.client.messages.create(**self.request_body(request, stream=False))
        except Exception as exc:
            raise model_error(exc, anthropic, self._who(), timeout_s=self._timeout_s) from exc
        blocks = getattr(answer, "content", None)
        if not isinstance(blocks, list):
            raise ModelError("invalid_response", f"{self._who()}: the answer is not a message")
        acc = Accumulator()
        for index, block in enumerate(blocks):
            kind = getattr(block, "type", None)
            if kind == "text" and isinstance(getattr(block, "text", None), str):
                acc.text_block(block.text)
            elif kind == "thinking":
                acc.thinking(block.thinking or "", block.signature or None)
            elif kind == "tool_use":
                acc.tool(index, block.id, block.name, orjson.dumps(block.input).decode())
        raw = getattr(answer, "usage", None)
        usage = rules.anthropic_usage(raw)
        if usage is None and raw is not None:
            log.warning(
                "%s: the server reported malformed usage %r; the answer's usage is recorded "
                "as unknown",
                self._who(),
                raw_usage(raw),
            )
        stop_reason, vendor_reason = rules.stop_reason(getattr(answer, "stop_reason", None))
        done: Done = final_reply(
            acc,
            api=rules.API,
            provider=self.provider,
            model=getattr(answer, "model", None) or self.model_id,
            usage=priced(usage, self.prices) if usage is not None else None,
            stop_reason=stop_reason,
            vendor_reason=vendor_reason,
        )
        return done.message

    def _so_far(self, counts: dict[str, int]) -> Usage:
        """The usage ``counts`` hold, priced."""
        return priced(Usage(**counts, total_tokens=sum(counts.values())), self.prices)

    @staticmethod
    def _count(counts: dict[str, int], usage: Any, malformed: list[Any]) -> None:
        """Take the usage numbers an event reports (``message_delta`` repeats them cumulatively).

        A number the event leaves out or reports as ``0`` keeps the one taken before; usage
        that is malformed (:func:`~sessiontree.providers.anthropic.anthropic_usage` cannot read
        it) is added to ``malformed``.
        """
        reported = rules.anthropic_usage(usage)
        if reported is None:
            if usage is not None:
                malformed.append(raw_usage(usage))
            return
        for ours in counts:
            value = getattr(reported, ours)
            if value:
                counts[ours] = value

    async def check(self) -> None:
        """Ask the server whether the key and the model work, without a model call (one
        ``GET /v1/models/{model_id}``; see :func:`~sessiontree.models.base.check_model`).

        Raises:
            ModelAuthError: the key is rejected.
            ModelConfigError: unknown model, or an unusable base URL.
            ModelError: ``connection`` — nothing answers at the base URL.
        """
        import anthropic

        client = self.client.with_options(timeout=CHECK_TIMEOUT_S, max_retries=0)
        await check_model(
            lambda: client.models.retrieve(self.model_id),
            None,
            sdk=anthropic,
            who=self._who(),
            model_id=self.model_id,
            base_url=self.base_url,
        )

    async def aclose(self) -> None:
        """Close the HTTP connections of the client."""
        await self.client.close()
