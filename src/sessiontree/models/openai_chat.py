"""``OpenAIChatModel``: any OpenAI-compatible chat-completions endpoint, streamed.

Built on the official ``openai`` SDK (``AsyncOpenAI``), imported when a model is constructed;
without it :class:`~sessiontree.errors.MissingExtraError` names the extra to install. With
``base_url`` it talks to any compatible server (vLLM, Ollama, llama.cpp, LiteLLM proxy).
The SDK's own retries are off: the harness retries, honouring ``retry-after``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

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
from sessiontree.summarizers.openai import openai_usage
from sessiontree.wire.openai_chat import to_openai_chat

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIChatModel"]

_STOP_REASONS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}
_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
_OPENAI_HOST = "api.openai.com"

log = logging.getLogger(__name__)


def _usage(raw: Any, prices: Prices | None, who: str) -> Usage | None:
    """The answer's usage, priced: zeros when the server sent none, ``None`` (unknown, with
    a warning logged) when what it sent is malformed."""
    usage = openai_usage(raw)
    if usage is None and raw is not None:
        log.warning(
            "%s: the server reported malformed usage %r; the answer's usage is recorded as unknown",
            who,
            raw_usage(raw),
        )
        return None
    return priced(usage or Usage(), prices)


class OpenAIChatModel:
    """A :class:`~sessiontree.models.base.Model` over chat completions, streamed.

    Args:
        model_id: the model name the server knows (``gpt-4.1``, ``qwen2.5:7b``, ...).
        base_url: the API root including ``/v1``; ``None`` → ``OPENAI_BASE_URL`` or OpenAI's.
        api_key: ``None`` → ``OPENAI_API_KEY``, else a placeholder for a local server.
        client: a ready ``openai.AsyncOpenAI`` (then ``base_url``/``api_key`` stay ``None``).
        context_window: the window (tokens) the harness keeps the context inside.
        max_output_tokens: the answer cap sent with every request (``None`` = the server's).
        prices: dollars per million tokens, to record ``usage.cost``.
        provider: the provider name written on messages (``openai``; e.g. ``vllm``).
        thinking_field: the assistant-message key under which a compatible server expects
            earlier reasoning back (``reasoning_content`` for vLLM/DeepSeek); ``None`` = not sent.
        timeout: seconds per request phase.

    Raises:
        MissingExtraError: the ``openai`` package is not installed.
        ModelAuthError: no API key is available for a non-local server.
        ModelConfigError: ``base_url`` is not an ``http(s)`` URL with a host.
    """

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: openai.AsyncOpenAI | None = None,
        context_window: int | None = None,
        max_output_tokens: int | None = None,
        prices: Prices | None = None,
        provider: str = "openai",
        thinking_field: str | None = None,
        timeout: float = 600.0,
    ) -> None:
        try:
            import openai
        except ImportError as exc:
            raise MissingExtraError("openai", "openai") from exc
        self.provider = provider
        self.model_id = model_id
        self.context_window = context_window
        self.max_output_tokens = max_output_tokens
        self.prices = prices
        self.thinking_field = thinking_field
        if client is None:
            url, key = resolve_endpoint(
                base_url, api_key, url_env="OPENAI_BASE_URL", key_env="OPENAI_API_KEY"
            )
            check_base_url(url, self._who())
            if key is None:
                raise ModelAuthError(
                    f"{self._who()}: no API key: pass api_key=... or set OPENAI_API_KEY"
                )
            client = openai.AsyncOpenAI(api_key=key, base_url=url, max_retries=0, timeout=timeout)
        self.client = client
        self.base_url = str(client.base_url).rstrip("/")
        self._is_openai = urlsplit(self.base_url).hostname == _OPENAI_HOST

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self.model_id!r}, base_url={self.base_url!r})"

    def _who(self) -> str:
        return f"OpenAI model {self.model_id!r}"

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request``."""
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": to_openai_chat(
                request.messages,
                system_prompt=request.system_prompt,
                thinking_field=self.thinking_field,
            ),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.parameters),
                    },
                }
                for t in request.tools
            ]
        cap = request.max_output_tokens or self.max_output_tokens
        if cap:
            body["max_completion_tokens" if self._is_openai else "max_tokens"] = cap
        if request.thinking_level != "off":
            body["reasoning_effort"] = _EFFORT[request.thinking_level]
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one answer (see :class:`~sessiontree.models.base.Model`).

        Raises:
            ModelError: the call failed, or the stream ended before the server said it was
                complete (``connection``).
        """
        import openai

        acc = Accumulator()
        finish: str | None = None
        usage: Any = None
        model_name = self.model_id
        try:
            stream = await self.client.chat.completions.create(**self.request_body(request))
            async for chunk in stream:
                model_name = chunk.model or model_name
                if chunk.usage is not None:
                    usage = chunk.usage
                for choice in chunk.choices[:1]:
                    delta = choice.delta
                    extra = delta.model_extra or {}
                    reasoning = extra.get("reasoning_content") or extra.get("reasoning")
                    if isinstance(reasoning, str) and reasoning:
                        acc.thinking(reasoning)
                        yield ThinkingDelta(reasoning)
                    if delta.content:
                        acc.text(delta.content)
                        yield TextDelta(delta.content)
                    for call in delta.tool_calls or ():
                        fn = call.function
                        name = fn.name if fn else None
                        args = (fn.arguments if fn else None) or ""
                        acc.tool(call.index, call.id, name, args)
                        yield ToolCallDelta(call.index, call.id, name, args)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except Exception as exc:
            raise model_error(exc, openai, self._who()) from exc
        if finish is None:
            raise ModelError("connection", f"{self._who()}: the stream ended without a finish")
        yield final_reply(
            acc,
            api="openai-completions",
            provider=self.provider,
            model=model_name,
            usage=_usage(usage, self.prices, self._who()),
            stop_reason=_STOP_REASONS.get(finish, "error"),
            vendor_reason=f"finish_reason {finish!r}",
        )

    async def check(self) -> None:
        """Ask the server whether the key and the model work, without a model call (two
        ``GET`` requests at most; see :func:`~sessiontree.models.base.check_model`).

        Raises:
            ModelAuthError: the key is rejected.
            ModelConfigError: unknown model, or no API at the base URL.
            ModelError: ``connection`` — nothing answers at the base URL.
        """
        import openai

        client = self.client.with_options(timeout=CHECK_TIMEOUT_S, max_retries=0)
        await check_model(
            lambda: client.models.retrieve(self.model_id),
            lambda: client.models.list(),
            sdk=openai,
            who=self._who(),
            model_id=self.model_id,
            base_url=self.base_url,
        )

    async def aclose(self) -> None:
        """Close the HTTP connections of the client."""
        await self.client.close()
