"""``OpenAISummarizer``: summaries from any OpenAI-compatible chat-completions endpoint (docs/compaction.md).

Built on the official ``openai`` SDK (``AsyncOpenAI``, ``POST {base_url}/chat/completions``),
so besides OpenAI itself any compatible server works — llama.cpp's ``llama-server``, vLLM,
Ollama (``http://localhost:11434/v1``), LM Studio. The SDK is imported when a summariser is
constructed, never when this module is imported; without it,
:class:`~sessiontree.errors.MissingExtraError` names ``pip install 'sessiontree[openai]'``.

Timeouts, retries and errors are as for every :class:`~sessiontree.summarizers.llm.LLMSummarizer`.
"""

from __future__ import annotations

import logging
import re
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sessiontree.errors import MissingExtraError, SummaryError
from sessiontree.messages import Usage
from sessiontree.summarizers._prompt import SummaryPrompt, summary_from_text
from sessiontree.summarizers._sdk import read_tokens
from sessiontree.summarizers.base import SummaryResult
from sessiontree.summarizers.llm import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    LLMSummarizer,
)

if TYPE_CHECKING:
    from openai.types import CompletionUsage

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT_S",
    "OpenAISummarizer",
    "openai_usage",
]

log = logging.getLogger(__name__)

_OPENAI_HOST = "api.openai.com"
_THINK_BLOCK = re.compile(r"\A\s*<think>.*?</think>\s*", re.DOTALL)


def openai_usage(usage: CompletionUsage | None) -> Usage | None:
    """The SDK's ``CompletionUsage`` as a :class:`~sessiontree.messages.Usage` (tokens).

    OpenAI counts cached prompt tokens inside ``prompt_tokens``; they are moved to
    ``cache_read`` so that ``input`` is the uncached part. ``cache_write`` is ``0`` (OpenAI
    does not report it). Returns ``None`` when the server reported no usage, or usage that
    is malformed (a count that is not a whole number ``>= 0``: the usage is unknown).
    """
    if usage is None:
        return None
    counts = read_tokens(usage, ("prompt_tokens", "completion_tokens", "total_tokens"))
    details = getattr(usage, "prompt_tokens_details", None)
    cached = read_tokens(details, ("cached_tokens",))
    if counts is None or cached is None:
        return None
    prompt, output, total = counts
    return Usage(
        input=max(prompt - cached[0], 0),
        output=output,
        cache_read=cached[0],
        cache_write=0,
        total_tokens=total or prompt + output,
    )


class OpenAISummarizer(LLMSummarizer):
    """An :class:`~sessiontree.summarizers.llm.LLMSummarizer` over OpenAI chat completions.

    The answer's text is the summary (a leading ``<think>`` block removed). The output-token
    cap is sent as ``max_completion_tokens`` to OpenAI itself and as ``max_tokens`` to any
    other ``base_url`` (the field every compatible server knows). Arguments as for
    :class:`~sessiontree.summarizers.llm.LLMSummarizer`, besides:

    Args:
        model: e.g. ``gpt-4.1-mini``, ``qwen2.5:7b``.
        base_url: the API root including ``/v1`` (``http://127.0.0.1:8080/v1``); ``None`` →
            ``OPENAI_BASE_URL`` or OpenAI's own. ``api_key`` ``None`` → ``OPENAI_API_KEY``.
        client: a ready ``openai.AsyncOpenAI`` (custom HTTP client, proxy, Azure, ...).
    """

    _VENDOR = "OpenAI"
    _CLIENT_CLASS = "AsyncOpenAI"
    _SDK_ERROR = "OpenAIError"
    _URL_ENV = "OPENAI_BASE_URL"
    _KEY_ENV = "OPENAI_API_KEY"
    _KEY_HINT = " (pass api_key=... or set OPENAI_API_KEY)"

    @property
    def _use_max_completion_tokens(self) -> bool:
        """OpenAI itself takes ``max_completion_tokens``; compatible servers ``max_tokens``."""
        return urlsplit(self.base_url).hostname == _OPENAI_HOST

    @staticmethod
    def _import_sdk() -> ModuleType:
        try:
            import openai
        except ImportError as exc:
            raise MissingExtraError("openai", "openai") from exc
        return openai

    async def _request(self, prompt: SummaryPrompt) -> Any:
        chat: list[Any] = [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": prompt.user},
        ]
        if self._use_max_completion_tokens:
            return await self._client.chat.completions.create(
                model=self.model, messages=chat, max_completion_tokens=self.max_output_tokens
            )
        return await self._client.chat.completions.create(
            model=self.model, messages=chat, max_tokens=self.max_output_tokens
        )

    def _result(self, completion: Any) -> SummaryResult:
        choices = getattr(completion, "choices", None) or []
        if not choices:
            raise SummaryError(f"{self._who()}: the answer has no choices")
        choice = choices[0]
        message = getattr(choice, "message", None)
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise SummaryError(f"{self._who()}: the model refused: {refusal}")
        finish = getattr(choice, "finish_reason", None)
        if finish == "length":
            raise self._cut_off()
        if finish == "content_filter":
            raise SummaryError(f"{self._who()}: the answer was withheld by a content filter")
        content = getattr(message, "content", None)
        text = _THINK_BLOCK.sub("", content) if isinstance(content, str) else ""
        raw = getattr(completion, "usage", None)
        usage = openai_usage(raw)
        if usage is None and raw is not None:
            log.warning(
                "%s: the server reported malformed usage; the summary's usage is recorded as "
                "unknown",
                self._who(),
            )
        return summary_from_text(text, usage, self._who())
