"""``AnthropicSummarizer``: summaries from Anthropic's messages API (docs/compaction.md).

Built on the official ``anthropic`` SDK (``AsyncAnthropic``, ``POST {base_url}/v1/messages``).
The SDK is imported when a summariser is constructed, never when this module is imported;
without it, :class:`~sessiontree.errors.MissingExtraError` names
``pip install 'sessiontree[anthropic]'``.

Timeouts, retries and errors are as for every :class:`~sessiontree.summarizers.llm.LLMSummarizer`.
"""

from __future__ import annotations

import logging
from types import ModuleType
from typing import TYPE_CHECKING, Any

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
    import anthropic

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TIMEOUT_S",
    "AnthropicSummarizer",
    "anthropic_usage",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = DEFAULT_MAX_OUTPUT_TOKENS
"""Upper bound on the summary's length, in output tokens (sent as the API's ``max_tokens``)."""


def anthropic_usage(usage: Any) -> Usage | None:
    """The SDK's ``Usage`` as a :class:`~sessiontree.messages.Usage` (tokens).

    Anthropic reports uncached input, cache reads and cache writes separately, so they map
    one to one; ``total_tokens`` is their sum plus the output. ``None`` when there is no
    usage, or when it is malformed (a count that is not a whole number ``>= 0``: the usage
    is unknown).
    """
    if usage is None:
        return None
    fields = (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    )
    counts = read_tokens(usage, fields)
    if counts is None:
        return None
    n_in, n_out, n_read, n_write = counts
    return Usage(
        input=n_in,
        output=n_out,
        cache_read=n_read,
        cache_write=n_write,
        total_tokens=n_in + n_out + n_read + n_write,
    )


class AnthropicSummarizer(LLMSummarizer):
    """An :class:`~sessiontree.summarizers.llm.LLMSummarizer` over Anthropic messages.

    The system prompt goes as ``system``; the answer's text blocks are the summary. Arguments
    as for :class:`~sessiontree.summarizers.llm.LLMSummarizer`, besides:

    Args:
        model: e.g. ``claude-sonnet-4-5``.
        base_url: the API root without ``/v1`` (``http://127.0.0.1:8080``); ``None`` →
            ``ANTHROPIC_BASE_URL`` or Anthropic's own. ``api_key`` ``None`` →
            ``ANTHROPIC_API_KEY``, else the SDK's other credential sources.
        max_output_tokens: sent as the API's ``max_tokens``.
        max_tokens: the same as ``max_output_tokens``; pass one of the two (else ValueError).
        client: a ready ``anthropic.AsyncAnthropic``.
    """

    _VENDOR = "Anthropic"
    _CLIENT_CLASS = "AsyncAnthropic"
    _SDK_ERROR = "AnthropicError"
    _URL_ENV = "ANTHROPIC_BASE_URL"
    _KEY_ENV = "ANTHROPIC_API_KEY"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        max_input_tokens: int | None = None,
        max_output_tokens: int | None = None,
        max_tokens: int | None = None,
        client: anthropic.AsyncAnthropic | None = None,
    ) -> None:
        if max_output_tokens is not None and max_tokens is not None:
            raise ValueError("pass max_output_tokens or max_tokens, not both")
        limit = max_output_tokens if max_output_tokens is not None else max_tokens
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            max_input_tokens=max_input_tokens,
            max_output_tokens=DEFAULT_MAX_TOKENS if limit is None else limit,
            client=client,
        )

    @property
    def max_tokens(self) -> int:
        """:attr:`max_output_tokens` under the API's own name."""
        return self.max_output_tokens

    @staticmethod
    def _import_sdk() -> ModuleType:
        try:
            import anthropic
        except ImportError as exc:
            raise MissingExtraError("anthropic", "anthropic") from exc
        return anthropic

    async def _request(self, prompt: SummaryPrompt) -> Any:
        return await self._client.messages.create(
            model=self.model,
            max_tokens=self.max_output_tokens,
            system=prompt.system,
            messages=[{"role": "user", "content": prompt.user}],
        )

    def _result(self, answer: Any) -> SummaryResult:
        stop = getattr(answer, "stop_reason", None)
        if stop == "max_tokens":
            raise self._cut_off()
        if stop == "refusal":
            raise SummaryError(f"{self._who()}: the model refused to summarise")
        blocks = getattr(answer, "content", None) or []
        texts = [
            b.text
            for b in blocks
            if getattr(b, "type", None) == "text" and isinstance(getattr(b, "text", None), str)
        ]
        raw = getattr(answer, "usage", None)
        usage = anthropic_usage(raw)
        if usage is None and raw is not None:
            log.warning(
                "%s: the server reported malformed usage; the summary's usage is recorded as "
                "unknown",
                self._who(),
            )
        return summary_from_text("\n".join(texts), usage, self._who())
