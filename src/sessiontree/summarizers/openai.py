"""``OpenAISummarizer``: summaries from any OpenAI-compatible chat-completions endpoint (docs/compaction.md).

A :class:`~sessiontree.summarizers.model.ModelSummarizer` over an
:class:`~sessiontree.models.openai_chat.OpenAIChatModel` it builds, so besides OpenAI itself
any compatible server works — llama.cpp's ``llama-server``, vLLM, Ollama
(``http://localhost:11434/v1``), LM Studio. The ``openai`` SDK is imported when a summariser
is constructed, never when this module is imported; without it,
:class:`~sessiontree.errors.MissingExtraError` names ``pip install 'sessiontree[openai]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sessiontree.models.openai_chat import OpenAIChatModel
from sessiontree.providers.endpoint import DEFAULT_MAX_OUTPUT_TOKENS, check_positive
from sessiontree.summarizers.model import ModelSummarizer, own_model

if TYPE_CHECKING:
    import openai

    from sessiontree.models.base import Prices

__all__ = ["OpenAISummarizer"]


class OpenAISummarizer(ModelSummarizer):
    """A :class:`~sessiontree.summarizers.model.ModelSummarizer` over OpenAI chat completions.

    One ``summarize`` call is one request, not streamed: the system prompt and one user
    message. The answer's text is the summary (a leading ``<think>`` block left out). The
    output cap is sent as ``max_completion_tokens`` to OpenAI itself and as ``max_tokens`` to
    any other ``base_url`` (:func:`~sessiontree.providers.openai.cap_field`).

    Args:
        model: the model name the server knows (``gpt-4.1-mini``, ``qwen2.5:7b``).
        base_url: the API root including ``/v1`` (``http://127.0.0.1:8080/v1``); ``None`` →
            ``OPENAI_BASE_URL`` or OpenAI's own.
        api_key: ``None`` → ``OPENAI_API_KEY``; a local server needs none.
        timeout: seconds per request phase; ``None`` →
            :data:`~sessiontree.summarizers.model.DEFAULT_TIMEOUT_S`, or the ``client``'s own.
        max_retries: the SDK's retries after a failed request (``0`` = none); ``None`` →
            :data:`~sessiontree.summarizers.model.DEFAULT_MAX_RETRIES`, or the ``client``'s.
        max_input_tokens: the most tokens (estimated) the request may take; ``None``: no limit.
        max_output_tokens: the most tokens the summary may take; an answer cut there fails.
        client: a ready ``openai.AsyncOpenAI`` (custom HTTP client, proxy, Azure, ...), used
            through a copy and left open; then ``base_url`` and ``api_key`` stay ``None``.
        prices: dollars per million tokens, to record the summary's ``usage.cost``.

    Raises:
        MissingExtraError: the ``openai`` package is not installed.
        SummaryError: no API key for a non-local server, or an unusable base URL.
        ValueError: ``client`` together with ``base_url``/``api_key``, or a non-positive
            token limit.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        max_input_tokens: int | None = None,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        client: openai.AsyncOpenAI | None = None,
        prices: Prices | None = None,
    ) -> None:
        check_positive(max_output_tokens=max_output_tokens, max_input_tokens=max_input_tokens)
        chat, owned = own_model(
            OpenAIChatModel,
            vendor="OpenAI",
            model=model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            client=client,
            prices=prices,
        )
        super().__init__(
            chat,
            max_output_tokens=max_output_tokens,
            max_input_tokens=max_input_tokens,
            owns_model=owned,
        )
