"""``OpenAIChatModel``: any OpenAI-compatible chat-completions endpoint, streamed or in one
answer.

Built on the official ``openai`` SDK (``AsyncOpenAI``), imported when a model is constructed;
without it :class:`~sessiontree.errors.MissingExtraError` names the extra to install. With
``base_url`` it talks to any compatible server (vLLM, Ollama, llama.cpp, LiteLLM proxy).
The provider's rules (endpoint, key, output-cap field, usage and stop reasons, the leading
``<think>`` block) are :mod:`sessiontree.providers.openai`'s. The SDK's own retries are off
unless ``max_retries`` is given: the harness retries, honouring ``retry-after``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

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
from sessiontree.providers import openai as rules
from sessiontree.providers.endpoint import (
    DEFAULT_TIMEOUT_S,
    check_base_url,
    resolve_endpoint,
    timeout_seconds,
)
from sessiontree.wire.openai_chat import to_openai_chat

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIChatModel"]

log = logging.getLogger(__name__)


def _usage(raw: Any, prices: Prices | None, who: str, *, streamed: bool) -> Usage | None:
    """The answer's usage, priced; ``None`` (unknown, with a warning logged) when what the
    server sent is malformed. When it sent none: zeros for a stream (a compatible server
    that ignores ``stream_options``), ``None`` for a whole answer (the usage is unknown)."""
    usage = rules.openai_usage(raw)
    if raw is None and not streamed:
        return None
    if usage is None and raw is not None:
        log.warning(
            "%s: the server reported malformed usage %r; the answer's usage is recorded as unknown",
            who,
            raw_usage(raw),
        )
        return None
    return priced(usage or Usage(), prices)


def _answer(acc: Accumulator, pieces: list[tuple[str, str]]) -> list[ModelEvent]:
    """Add the thinking and text ``pieces`` of the answer (from a
    :class:`~sessiontree.providers.openai.ThinkSplitter`) to ``acc``; the deltas to stream."""
    events: list[ModelEvent] = []
    for kind, piece in pieces:
        if kind == "thinking":
            acc.thinking(piece)
            events.append(ThinkingDelta(piece))
        else:
            acc.text(piece)
            events.append(TextDelta(piece))
    return events


class OpenAIChatModel:
    """A :class:`~sessiontree.models.base.Model` over chat completions, streamed or whole.

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
        max_retries: the SDK's own retries of a failed request (``0``: none, the harness
            retries); ignored with ``client`` (the client's own apply).

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
        timeout: float = DEFAULT_TIMEOUT_S,
        max_retries: int = 0,
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
                base_url, api_key, url_env=rules.URL_ENV, key_env=rules.KEY_ENV
            )
            check_base_url(url, self._who())
            if key is None:
                raise ModelAuthError(
                    f"{self._who()}: no API key: pass api_key=... or set {rules.KEY_ENV}"
                )
            client = openai.AsyncOpenAI(
                api_key=key, base_url=url, max_retries=max_retries, timeout=timeout
            )
        self.client = client
        self.base_url = str(client.base_url).rstrip("/")
        self._cap_field = rules.cap_field(self.base_url)
        self._timeout_s = timeout_seconds(client.timeout)

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self.model_id!r}, base_url={self.base_url!r})"

    def _who(self) -> str:
        return f"OpenAI model {self.model_id!r}"

    def request_body(self, request: ModelRequest, *, stream: bool = True) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request``, streamed
        (with usage in the last chunk) or not."""
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": to_openai_chat(
                request.messages,
                system_prompt=request.system_prompt,
                thinking_field=self.thinking_field,
            ),
        }
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
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
            body[self._cap_field] = cap
        if request.thinking_level != "off":
            body["reasoning_effort"] = rules.EFFORT[request.thinking_level]
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Stream one answer (see :class:`~sessiontree.models.base.Model`).

        Raises:
            ModelError: the call failed, or the stream ended before the server said it was
                complete (``connection``).
        """
        import openai

        acc = Accumulator()
        splitter = rules.ThinkSplitter()
        finish: str | None = None
        refusal = ""
        usage: Any = None
        model_name = self.model_id
        try:
            stream = await self.client.chat.completions.create(**self.request_body(request))
            async for chunk in stream:
                model_name = chunk.model or model_name
                if chunk.usage is not None:
                    usage = chunk.usage
                    known = rules.openai_usage(usage)
                    if known is not None:
                        yield UsageDelta(priced(known, self.prices))
                for choice in chunk.choices[:1]:
                    delta = choice.delta
                    extra = delta.model_extra or {}
                    reasoning = extra.get("reasoning_content") or extra.get("reasoning")
                    if isinstance(reasoning, str) and reasoning:
                        acc.thinking(reasoning)
                        yield ThinkingDelta(reasoning)
                    if delta.content:
                        for event in _answer(acc, splitter.feed(delta.content)):
                            yield event
                    if isinstance(delta.refusal, str):
                        refusal += delta.refusal
                    for call in delta.tool_calls or ():
                        fn = call.function
                        name = fn.name if fn else None
                        args = (fn.arguments if fn else None) or ""
                        acc.tool(call.index, call.id, name, args)
                        yield ToolCallDelta(call.index, call.id, name, args)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except Exception as exc:
            raise model_error(exc, openai, self._who(), timeout_s=self._timeout_s) from exc
        if finish is None:
            raise ModelError("connection", f"{self._who()}: the stream ended without a finish")
        for event in _answer(acc, splitter.flush()):
            yield event
        yield self._reply(acc, splitter, model_name, usage, finish, refusal, streamed=True)

    async def complete(self, request: ModelRequest) -> AssistantMessage:
        """The whole answer to ``request`` from one request that is not streamed (the SDK
        retries it ``max_retries`` times): the message a stream's :class:`Done` would hold.

        Raises:
            ModelError: the call failed, or the answer is not a chat completion with a
                choice (``invalid_response``).
        """
        import openai

        try:
            completion = await self.client.chat.completions.create(
                **self.request_body(request, stream=False)
            )
        except Exception as exc:
            raise model_error(exc, openai, self._who(), timeout_s=self._timeout_s) from exc
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise ModelError("invalid_response", f"{self._who()}: the answer has no choices")
        choice = choices[0]
        message = getattr(choice, "message", None)
        acc = Accumulator()
        extra = getattr(message, "model_extra", None) or {}
        reasoning = extra.get("reasoning_content") or extra.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            acc.thinking(reasoning)
        splitter = rules.ThinkSplitter()
        content = getattr(message, "content", None)
        if isinstance(content, str) and content:
            _answer(acc, splitter.feed(content) + splitter.flush())
        for index, call in enumerate(getattr(message, "tool_calls", None) or ()):
            fn = getattr(call, "function", None)
            acc.tool(index, call.id, getattr(fn, "name", None), getattr(fn, "arguments", "") or "")
        refusal = getattr(message, "refusal", None)
        done = self._reply(
            acc,
            splitter,
            getattr(completion, "model", None) or self.model_id,
            getattr(completion, "usage", None),
            getattr(choice, "finish_reason", None) or "stop",
            refusal if isinstance(refusal, str) else "",
            streamed=False,
        )
        return done.message

    def _reply(
        self,
        acc: Accumulator,
        splitter: rules.ThinkSplitter,
        model: str,
        usage: Any,
        finish: str,
        refusal: str,
        *,
        streamed: bool,
    ) -> Done:
        """The :class:`Done` of a complete answer: the thinking of a leading ``<think>``
        block without the whitespace before ``</think>``, the usage priced, the stop reason
        mapped."""
        if splitter.found:
            first = next((block for block in acc.blocks if block[0] == "thinking"), None)
            if first is not None:
                first[1] = first[1].rstrip()
        stop, vendor_reason = rules.stop_reason(finish, refusal)
        return final_reply(
            acc,
            api=rules.API,
            provider=self.provider,
            model=model,
            usage=_usage(usage, self.prices, self._who(), streamed=streamed),
            stop_reason=stop,
            vendor_reason=vendor_reason,
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
