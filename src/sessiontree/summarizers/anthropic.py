"""``AnthropicSummarizer``: summaries from Anthropic's messages API (SPEC §4).

Built on the official ``anthropic`` SDK (``AsyncAnthropic``, ``POST {base_url}/v1/messages``).
The SDK is imported when a summariser is constructed, never when this module is imported;
without it, :class:`~sessiontree.errors.MissingExtraError` names
``pip install 'sessiontree[anthropic]'``.

Timeouts and retries are the SDK's own (``timeout``, ``max_retries``; it retries connection
errors, 408, 409, 429 and 5xx with exponential backoff and honours ``retry-after``). Every
failure reaches the caller as :class:`~sessiontree.errors.SummaryError` with the SDK's
exception as ``__cause__``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sessiontree.errors import MissingExtraError, SummaryError
from sessiontree.messages import AgentMessage, Usage
from sessiontree.summarizers._prompt import (
    adopt_client,
    build_prompt,
    check_positive,
    describe_failure,
    resolve_endpoint,
    timeout_seconds,
)
from sessiontree.summarizers.base import SummaryPurpose, SummaryResult

if TYPE_CHECKING:
    import anthropic

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TIMEOUT_S",
    "AnthropicSummarizer",
    "anthropic_usage",
]

DEFAULT_TIMEOUT_S = 120.0
"""Seconds allowed for each phase of a request (connect, send, wait for the answer) by default."""
DEFAULT_MAX_RETRIES = 2
"""Retries after the first attempt unless told otherwise (the SDK's default)."""
DEFAULT_MAX_TOKENS = 8192
"""Upper bound on the summary's length, in output tokens (the API's required ``max_tokens``)."""


def anthropic_usage(usage: Any) -> Usage | None:
    """The SDK's ``Usage`` as a :class:`~sessiontree.messages.Usage` (tokens).

    Anthropic reports uncached input, cache reads and cache writes separately, so they map
    one to one; ``total_tokens`` is their sum plus the output. ``None`` when there is no usage.
    """
    if usage is None:
        return None
    fields = (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    )
    n_in, n_out, n_read, n_write = (int(getattr(usage, f, None) or 0) for f in fields)
    return Usage(
        input=n_in,
        output=n_out,
        cache_read=n_read,
        cache_write=n_write,
        total_tokens=n_in + n_out + n_read + n_write,
    )


class AnthropicSummarizer:
    """A :class:`~sessiontree.summarizers.base.Summarizer` over Anthropic messages (SPEC §4).

    One ``summarize`` call sends one request: the system prompt as ``system`` and one user
    message holding the transcript, the purpose's instructions, the structured layout and,
    when given, the previous summary to update (see :mod:`sessiontree.summarizers._prompt`).
    The text blocks of the answer are the summary; its usage is returned with it.

    Use as ``async with`` (or call :meth:`aclose`) to close the HTTP connections of a client
    the summariser created; a client passed in is left open.

    Args:
        model: the model name (``claude-sonnet-4-5``, ...).
        base_url: the API root without ``/v1`` (``http://127.0.0.1:8080``); ``None`` →
            ``ANTHROPIC_BASE_URL`` or Anthropic's own.
        api_key: the key; ``None`` → ``ANTHROPIC_API_KEY``, else, when ``base_url`` is a
            local server (:func:`~sessiontree.summarizers._prompt.is_local_url`), a
            placeholder; else the SDK's other credential sources.
        timeout: seconds allowed for each phase of a request (connect, send, wait for the
            answer — a summary is not streamed, so it must arrive within it); ``None`` →
            :data:`DEFAULT_TIMEOUT_S`, or the passed ``client``'s own.
        max_retries: retries after a failed attempt (``0`` = none); ``None`` →
            :data:`DEFAULT_MAX_RETRIES`, or the passed ``client``'s own.
        max_input_tokens: the most tokens (estimated, 4 characters each) the request may
            take; a longer transcript is shortened to fit (tighter cuts, then messages left out
            of the middle). ``None``: no limit. Set it for models with a small window.
        max_tokens: the most tokens the summary may take; an answer cut there is a failure.
        client: a ready ``anthropic.AsyncAnthropic``; then ``base_url`` and ``api_key`` must be
            ``None``.

    Raises:
        MissingExtraError: the ``anthropic`` package is not installed.
        ValueError: ``client`` together with ``base_url`` or ``api_key``, or a non-positive
            ``max_tokens`` / ``max_input_tokens``.
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
        max_tokens: int = DEFAULT_MAX_TOKENS,
        client: anthropic.AsyncAnthropic | None = None,
    ) -> None:
        try:
            import anthropic
        except ImportError as exc:
            raise MissingExtraError("anthropic", "anthropic") from exc
        check_positive(max_tokens=max_tokens, max_input_tokens=max_input_tokens)
        self.model = model
        self.max_tokens = max_tokens
        self.max_input_tokens = max_input_tokens
        self._owns_client = client is None
        if client is not None:
            self._client = adopt_client(
                client,
                base_url=base_url,
                api_key=api_key,
                timeout=timeout,
                max_retries=max_retries,
            )
        else:
            effective_url, key = resolve_endpoint(
                base_url, api_key, url_env="ANTHROPIC_BASE_URL", key_env="ANTHROPIC_API_KEY"
            )
            try:
                self._client = anthropic.AsyncAnthropic(
                    api_key=key,
                    base_url=effective_url,
                    timeout=DEFAULT_TIMEOUT_S if timeout is None else timeout,
                    max_retries=DEFAULT_MAX_RETRIES if max_retries is None else max_retries,
                )
            except anthropic.AnthropicError as exc:
                raise SummaryError(f"Anthropic summariser for model {model!r}: {exc}") from exc
        self.base_url = str(self._client.base_url).rstrip("/")
        self._timeout_s = timeout_seconds(self._client.timeout)

    def __repr__(self) -> str:
        return f"AnthropicSummarizer(model={self.model!r}, base_url={self.base_url!r})"

    async def summarize(
        self,
        messages: Sequence[AgentMessage],
        *,
        previous_summary: str | None,
        instructions: str | None,
        purpose: SummaryPurpose,
    ) -> SummaryResult:
        """Summarise ``messages`` (oldest first) with one messages-API request (SPEC §4).

        With only ``previous_summary`` and no message to show, it is returned unchanged (no
        request, ``usage`` ``None``).

        Returns:
            the summary (Markdown) and the usage the server reported (tokens).

        Raises:
            SummaryError: nothing to summarise; an HTTP error status, a timeout, a refused
                connection or missing credentials (after the SDK's retries); an empty,
                refused or cut-off answer. The SDK's exception is the ``__cause__``.
        """
        prompt = build_prompt(
            messages,
            previous_summary=previous_summary,
            instructions=instructions,
            purpose=purpose,
            max_input_tokens=self.max_input_tokens,
        )
        if prompt is None:
            if previous_summary and previous_summary.strip():
                return SummaryResult(text=previous_summary, usage=None)
            raise SummaryError(f"{self._who()}: there is nothing to summarise")
        try:
            answer = await self._client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=prompt.system,
                messages=[{"role": "user", "content": prompt.user}],
            )
        except Exception as exc:  # vendor errors never escape (SPEC §4 Summarizer protocol)
            import anthropic

            reason = describe_failure(exc, anthropic, timeout_s=self._timeout_s)
            raise SummaryError(f"{self._who()} failed: {reason}") from exc
        return self._result(answer)

    def _result(self, answer: Any) -> SummaryResult:
        stop = getattr(answer, "stop_reason", None)
        if stop == "max_tokens":
            raise SummaryError(
                f"{self._who()}: the summary was cut off at max_tokens={self.max_tokens}; raise it"
            )
        if stop == "refusal":
            raise SummaryError(f"{self._who()}: the model refused to summarise")
        blocks = getattr(answer, "content", None) or []
        texts = [
            b.text
            for b in blocks
            if getattr(b, "type", None) == "text" and isinstance(getattr(b, "text", None), str)
        ]
        text = "\n".join(texts).strip()
        if not text:
            raise SummaryError(f"{self._who()}: the model returned an empty answer")
        return SummaryResult(text=text, usage=anthropic_usage(getattr(answer, "usage", None)))

    def _who(self) -> str:
        return f"Anthropic summariser (model {self.model!r} at {self.base_url})"

    async def aclose(self) -> None:
        """Close the HTTP connections of the client this summariser created (idempotent)."""
        if self._owns_client:
            await self._client.close()

    async def __aenter__(self) -> AnthropicSummarizer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
