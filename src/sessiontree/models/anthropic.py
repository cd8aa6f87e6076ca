"""``AnthropicModel``: Anthropic Messages, streamed, with extended thinking.

Built on the official ``anthropic`` SDK (``AsyncAnthropic``), imported when a model is
constructed. The raw server-sent events are read (``message_start``, ``content_block_*``,
``message_delta``, ``message_stop``), so text, thinking (with its signature) and tool-call
input arrive as deltas. The SDK's own retries are off: the harness retries.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from sessiontree.errors import MissingExtraError, ModelAuthError, ModelError
from sessiontree.messages import Usage
from sessiontree.models.base import (
    CHECK_TIMEOUT_S,
    Accumulator,
    ModelEvent,
    ModelRequest,
    Prices,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    check_base_url,
    check_model,
    final_reply,
    model_error,
    priced,
    raw_usage,
)
from sessiontree.summarizers._sdk import resolve_endpoint
from sessiontree.summarizers.anthropic import anthropic_usage
from sessiontree.wire.anthropic import to_anthropic

if TYPE_CHECKING:
    import anthropic

__all__ = ["THINKING_BUDGETS", "AnthropicModel"]

log = logging.getLogger(__name__)

DEFAULT_MAX_OUTPUT_TOKENS = 8192
"""``max_tokens`` sent when neither the request nor the model sets one (the API needs one)."""
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32000}
"""Thinking tokens allowed per level (``budget_tokens``); ``max_tokens`` is raised above it."""
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
    "refusal": "error",
}


CACHE = {"type": "ephemeral"}
"""An Anthropic ``cache_control``: the prompt up to this block is cached (5 minutes)."""


def _cacheable(block: dict[str, Any]) -> bool:
    """A block a breakpoint may sit on: not thinking, and not an empty text."""
    kind = block.get("type")
    return kind not in ("thinking", "redacted_thinking") and not (
        kind == "text" and not block.get("text")
    )


def _mark_last(blocks: list[dict[str, Any]]) -> bool:
    for block in reversed(blocks):
        if _cacheable(block):
            block["cache_control"] = dict(CACHE)
            return True
    return False


def cache_breakpoints(body: dict[str, Any]) -> None:
    """Mark at most four prompt-cache breakpoints on a Messages request body, in place.

    Anthropic caches the prompt up to each marked block: the tools (the last tool), the
    system prompt (written as one text block), the newest message and the user message
    before it, so each turn reads the conversation so far from the cache and writes only what
    is new (docs/harness.md). A thinking block or an empty text is never marked.
    """
    tools = body.get("tools")
    if tools:
        tools[-1]["cache_control"] = dict(CACHE)
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": dict(CACHE)}]
    messages = body.get("messages") or []
    marked = 0
    for message in reversed(messages):
        if marked == 2:
            break
        if marked == 1 and message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            if not content:
                continue
            message["content"] = content = [{"type": "text", "text": content}]
        if isinstance(content, list) and _mark_last(content):
            marked += 1


class AnthropicModel:
    """A :class:`~sessiontree.models.base.Model` over Anthropic Messages, streamed.

    Args:
        model_id: ``claude-sonnet-4-5``, ...
        base_url: the API root without ``/v1``; ``None`` → ``ANTHROPIC_BASE_URL`` or Anthropic's.
        api_key: ``None`` → ``ANTHROPIC_API_KEY``, else a placeholder for a local server.
        client: a ready ``anthropic.AsyncAnthropic``.
        context_window: the window (tokens) the harness keeps the context inside.
        max_output_tokens: ``max_tokens`` of every request (default 8192).
        prices: dollars per million tokens, to record ``usage.cost``.
        timeout: seconds per request phase.
        prompt_caching: mark cache breakpoints (:func:`cache_breakpoints`), so a long
            session's prefix is read from Anthropic's prompt cache at its cache-read price.

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
        timeout: float = 600.0,
        prompt_caching: bool = True,
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
                base_url, api_key, url_env="ANTHROPIC_BASE_URL", key_env="ANTHROPIC_API_KEY"
            )
            check_base_url(url, self._who())
            if key is None and not os.environ.get("ANTHROPIC_AUTH_TOKEN"):
                raise ModelAuthError(
                    f"{self._who()}: no API key: pass api_key=... or set ANTHROPIC_API_KEY"
                )
            client = anthropic.AsyncAnthropic(
                api_key=key, base_url=url, max_retries=0, timeout=timeout
            )
        self.client = client
        self.base_url = str(client.base_url).rstrip("/")

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model_id!r}, base_url={self.base_url!r})"

    def _who(self) -> str:
        return f"Anthropic model {self.model_id!r}"

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request``."""
        system, messages = to_anthropic(
            request.messages, system_prompt=request.system_prompt, model=self.model_id
        )
        cap = request.max_output_tokens or self.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS
        body: dict[str, Any] = {"model": self.model_id, "messages": messages, "stream": True}
        if system:
            body["system"] = system
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                for t in request.tools
            ]
        if request.thinking_level != "off":
            budget = THINKING_BUDGETS[request.thinking_level]
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            cap = max(cap, budget + 1024)
        body["max_tokens"] = cap
        if self.prompt_caching:
            cache_breakpoints(body)
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
                elif kind == "message_stop":
                    finished = True
        except Exception as exc:
            raise model_error(exc, anthropic, self._who()) from exc
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
            usage = priced(Usage(**counts, total_tokens=sum(counts.values())), self.prices)
        yield final_reply(
            acc,
            api="anthropic-messages",
            provider=self.provider,
            model=model_name,
            usage=usage,
            stop_reason=_STOP_REASONS.get(stop or "end_turn", "stop"),
            vendor_reason=f"stop_reason {stop!r}",
        )

    @staticmethod
    def _count(counts: dict[str, int], usage: Any, malformed: list[Any]) -> None:
        """Take the usage numbers an event reports (``message_delta`` repeats them cumulatively).

        A number the event leaves out or reports as ``0`` keeps the one taken before; usage
        that is malformed (:func:`anthropic_usage` cannot read it) is added to ``malformed``.
        """
        reported = anthropic_usage(usage)
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
