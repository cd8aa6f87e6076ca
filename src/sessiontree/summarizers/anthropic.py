"""``AnthropicSummarizer``: summaries from Anthropic's messages API (docs/compaction.md).

A :class:`~sessiontree.summarizers.model.ModelSummarizer` over an
:class:`~sessiontree.models.anthropic.AnthropicModel` it builds. The ``anthropic`` SDK is
imported when a summariser is constructed, never when this module is imported; without it,
:class:`~sessiontree.errors.MissingExtraError` names ``pip install 'sessiontree[anthropic]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sessiontree.models.anthropic import AnthropicModel
from sessiontree.providers.endpoint import DEFAULT_MAX_OUTPUT_TOKENS, check_positive
from sessiontree.summarizers.model import ModelSummarizer, own_model

if TYPE_CHECKING:
    import anthropic

    from sessiontree.models.base import Prices

__all__ = ["AnthropicSummarizer"]


class AnthropicSummarizer(ModelSummarizer):
    """A :class:`~sessiontree.summarizers.model.ModelSummarizer` over Anthropic messages.

    One ``summarize`` call is one request, not streamed: the system prompt as ``system`` and
    one user message; the answer's text blocks, joined by newlines, are the summary. No
    prompt-cache breakpoint is marked: a summary request is sent once, so a cache write
    (which costs more than plain input) would never be read. Arguments as for
    :class:`~sessiontree.summarizers.openai.OpenAISummarizer`, besides:

    Args:
        model: e.g. ``claude-sonnet-4-5``.
        base_url: the API root without ``/v1`` (``http://127.0.0.1:8080``); ``None`` →
            ``ANTHROPIC_BASE_URL`` or Anthropic's own. ``api_key`` ``None`` →
            ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``); a local server needs none.
        max_output_tokens: sent as the API's ``max_tokens``.
        max_tokens: the same as ``max_output_tokens``; pass one of the two (else ValueError).
        client: a ready ``anthropic.AsyncAnthropic``.
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
        max_output_tokens: int | None = None,
        max_tokens: int | None = None,
        client: anthropic.AsyncAnthropic | None = None,
        prices: Prices | None = None,
    ) -> None:
        if max_output_tokens is not None and max_tokens is not None:
            raise ValueError("pass max_output_tokens or max_tokens, not both")
        limit = max_output_tokens if max_output_tokens is not None else max_tokens
        cap = DEFAULT_MAX_OUTPUT_TOKENS if limit is None else limit
        check_positive(max_output_tokens=cap, max_input_tokens=max_input_tokens)
        claude, owned = own_model(
            AnthropicModel,
            vendor="Anthropic",
            model=model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            client=client,
            prices=prices,
            prompt_caching=False,
        )
        super().__init__(
            claude, max_output_tokens=cap, max_input_tokens=max_input_tokens, owns_model=owned
        )

    @property
    def max_tokens(self) -> int:
        """:attr:`max_output_tokens` under the API's own name."""
        return self.max_output_tokens
