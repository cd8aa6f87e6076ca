"""``ModelSummarizer``: summaries written by a :class:`~sessiontree.models.base.Model`.

Every LLM summary goes through here: the harness's default summariser (the conversation's
own model) and the OpenAI and Anthropic summarisers (:mod:`sessiontree.summarizers.openai`,
:mod:`sessiontree.summarizers.anthropic`), which only build a model for it. The request is
the prompt every LLM summariser shares (:mod:`sessiontree.summarizers._prompt`); the provider
rules (token caps, usage, stop reasons, ``<think>`` blocks, error classification) are the
model's, so a summary's usage is recorded — and priced — as a model call's is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Self

from sessiontree.errors import ModelError, SummaryError
from sessiontree.messages import AgentMessage, AssistantMessage, TextContent, UserMessage
from sessiontree.models.base import CompletingModel, Done, Model, ModelRequest
from sessiontree.providers.endpoint import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    adopt_client,
    check_positive,
)
from sessiontree.summarizers._prompt import build_prompt, summary_from_text, unchanged_summary
from sessiontree.summarizers.base import SummaryPurpose, SummaryResult

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT_S",
    "ModelSummarizer",
    "own_model",
]


class ModelSummarizer:
    """A :class:`~sessiontree.summarizers.base.Summarizer` that asks ``model``.

    One ``summarize`` call is one model call: not streamed when the model offers
    :meth:`~sessiontree.models.base.CompletingModel.complete` (a summary is not shown as it arrives), else the
    model's stream read to its end. Use as ``async with`` (or call :meth:`aclose`) to close
    a model the summariser owns.

    Args:
        model: any :class:`~sessiontree.models.base.Model`.
        max_output_tokens: the most tokens a summary may take; an answer cut there fails.
        max_input_tokens: the most tokens (estimated, 4 characters each) the request may
            take; a longer transcript is shortened to fit. ``None`` → the model's context
            window less ``max_output_tokens``, when known, else no limit.
        owns_model: :meth:`aclose` closes the model's connections (the model was made for
            this summariser).

    Raises:
        ValueError: a limit that is not positive.
    """

    def __init__(
        self,
        model: Model,
        *,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        max_input_tokens: int | None = None,
        owns_model: bool = False,
    ) -> None:
        check_positive(max_output_tokens=max_output_tokens, max_input_tokens=max_input_tokens)
        self.model = model
        self.max_output_tokens = max_output_tokens
        window = getattr(model, "context_window", None)
        if max_input_tokens is None and isinstance(window, int):
            max_input_tokens = max(window - max_output_tokens, 1000)
        self.max_input_tokens = max_input_tokens
        self._owns_model = owns_model

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"

    @property
    def base_url(self) -> str | None:
        """The model's API root, when it has one."""
        url = getattr(self.model, "base_url", None)
        return url if isinstance(url, str) else None

    def _who(self) -> str:
        where = f" at {self.base_url}" if self.base_url else ""
        return f"summary by {self.model.provider}/{self.model.model_id}{where}"

    async def summarize(
        self,
        messages: Sequence[AgentMessage],
        *,
        previous_summary: str | None,
        instructions: str | None,
        purpose: SummaryPurpose,
    ) -> SummaryResult:
        """Summarise ``messages`` (oldest first) with one model call (docs/compaction.md).

        With only ``previous_summary`` and no message to show, it is returned unchanged (no
        request, ``usage`` ``None``).

        Returns:
            the summary (Markdown; text blocks joined by newlines, thinking left out) and the
            usage of the call (tokens, and cost when the model knows its prices; ``None``
            when the server reported none or malformed usage).

        Raises:
            SummaryError: nothing to summarise; the model call failed (an HTTP error status,
                a timeout, a refused connection, missing credentials — the SDK's exception
                is the ``__cause__`` when there is one, else the
                :class:`~sessiontree.errors.ModelError`); an empty, refused, filtered or
                cut-off answer.
        """
        prompt = build_prompt(
            messages,
            previous_summary=previous_summary,
            instructions=instructions,
            purpose=purpose,
            max_input_tokens=self.max_input_tokens,
        )
        who = self._who()
        if prompt is None:
            return unchanged_summary(previous_summary, who)
        request = ModelRequest(
            system_prompt=prompt.system,
            messages=[UserMessage(content=prompt.user)],
            max_output_tokens=self.max_output_tokens,
        )
        reply: AssistantMessage | None = None
        try:
            if isinstance(self.model, CompletingModel):
                reply = await self.model.complete(request)
            else:
                async for event in self.model.stream(request):
                    if isinstance(event, Done):
                        reply = event.message
        except ModelError as exc:
            cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
            raise SummaryError(f"{who} failed: {exc}") from cause
        if reply is None:
            raise SummaryError(f"{who}: the stream ended without an answer")
        if reply.stop_reason == "length":
            raise SummaryError(
                f"{who}: the summary was cut off at max_output_tokens={self.max_output_tokens}; "
                "raise it"
            )
        if reply.stop_reason == "error":
            raise SummaryError(f"{who} failed: {reply.error_message}")
        text = "\n".join(b.text for b in reply.content if isinstance(b, TextContent))
        return summary_from_text(text, reply.usage, who)

    async def aclose(self) -> None:
        """Close the model's connections when this summariser owns the model (idempotent)."""
        close = getattr(self.model, "aclose", None)
        if self._owns_model and close is not None:
            await close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


DEFAULT_TIMEOUT_S = 120.0
"""Seconds a summariser's own model allows for each phase of a request (connect, send, wait
for the whole answer) unless told otherwise."""
DEFAULT_MAX_RETRIES = 2
"""Retries (the SDK's, with exponential backoff honouring ``retry-after``) a summariser's own
model makes after a failed request unless told otherwise."""


def own_model(
    make: Callable[..., Model],
    *,
    vendor: str,
    model: str,
    base_url: str | None,
    api_key: str | None,
    timeout: float | None,
    max_retries: int | None,
    client: Any,
    **options: Any,
) -> tuple[Model, bool]:
    """The model a summariser factory summarises with, and whether the summariser owns it.

    Args:
        make: the model class (``OpenAIChatModel``, ``AnthropicModel``).
        vendor: the provider's name for messages (``"OpenAI"``).
        model: the model name the server knows.
        base_url / api_key: the endpoint and key; ``None`` → the SDK's environment variables
            (a local server needs no key).
        timeout: seconds per request phase; ``None`` → :data:`DEFAULT_TIMEOUT_S`, or the
            ``client``'s own.
        max_retries: the SDK's retries after a failed request; ``None`` →
            :data:`DEFAULT_MAX_RETRIES`, or the ``client``'s own.
        client: a ready SDK client (used through a copy carrying ``timeout``/``max_retries``;
            the summariser does not own it), or ``None``.
        **options: passed to ``make`` (``prices``, ``prompt_caching``, ...).

    Raises:
        MissingExtraError: the SDK is not installed.
        SummaryError: the model cannot be made (no API key for a non-local server, a base
            URL that is not an http(s) URL); the model's error is the ``__cause__``.
        ValueError: ``client`` together with ``base_url``/``api_key``.
    """
    if client is not None:
        copy = adopt_client(
            client, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )
        return make(model, client=copy, **options), False
    try:
        made = make(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=DEFAULT_TIMEOUT_S if timeout is None else timeout,
            max_retries=DEFAULT_MAX_RETRIES if max_retries is None else max_retries,
            **options,
        )
    except ModelError as exc:
        raise SummaryError(f"{vendor} summariser for model {model!r}: {exc}") from exc
    return made, True
