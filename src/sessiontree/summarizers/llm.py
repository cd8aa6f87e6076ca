"""``LLMSummarizer``: what the OpenAI and Anthropic summarisers share (docs/compaction.md).

A subclass names its SDK (the module, its async client class and base error, the
environment variables for the URL and key) and implements two steps: :meth:`_request` sends
one request for a :class:`~sessiontree.summarizers._prompt.SummaryPrompt`, :meth:`_result`
turns the answer into a :class:`~sessiontree.summarizers.base.SummaryResult` or raises
:class:`~sessiontree.errors.SummaryError`. The constructor (SDK import, client, timeouts,
retries, limits), building the prompt, the no-messages case, turning every SDK exception into
a ``SummaryError`` and closing the client live here once.

Timeouts and retries are the SDK's own (``timeout``, ``max_retries``; both SDKs retry
connection errors, 408, 409, 429 and 5xx with exponential backoff and honour
``retry-after``). Every failure reaches the caller as
:class:`~sessiontree.errors.SummaryError` with the SDK's exception as ``__cause__``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any, ClassVar, Self

from sessiontree.errors import SummaryError
from sessiontree.messages import AgentMessage
from sessiontree.summarizers._prompt import SummaryPrompt, build_prompt, unchanged_summary
from sessiontree.summarizers._sdk import (
    adopt_client,
    check_positive,
    describe_failure,
    resolve_endpoint,
    timeout_seconds,
)
from sessiontree.summarizers.base import SummaryPurpose, SummaryResult

__all__ = ["DEFAULT_MAX_OUTPUT_TOKENS", "DEFAULT_MAX_RETRIES", "DEFAULT_TIMEOUT_S", "LLMSummarizer"]

DEFAULT_TIMEOUT_S = 120.0
"""Seconds allowed for each phase of a request (connect, send, wait for the answer) by default."""
DEFAULT_MAX_RETRIES = 2
"""Retries after the first attempt unless told otherwise (the SDKs' default)."""
DEFAULT_MAX_OUTPUT_TOKENS = 8192
"""Upper bound on the summary's length, in output tokens."""


class LLMSummarizer:
    """A :class:`~sessiontree.summarizers.base.Summarizer` that asks a model over an SDK.

    One ``summarize`` call sends one request, not streamed: the system prompt and one user
    message holding the transcript, the purpose's instructions, the structured layout and,
    when given, the previous summary to update (:mod:`sessiontree.summarizers._prompt`). Use
    as ``async with`` (or call :meth:`aclose`) to close the HTTP connections of a client the
    summariser created; a client passed in is left open.

    Args:
        model: the model name the server knows.
        base_url / api_key: the endpoint and key (see the subclass); ``None`` → the SDK's
            environment variables; a local server (:func:`~._sdk.is_local_url`) needs no key.
        timeout: seconds allowed for each phase of a request (connect, send, wait for the
            whole answer); ``None`` → :data:`DEFAULT_TIMEOUT_S`, or the ``client``'s own.
        max_retries: retries after a failed attempt (``0`` = none); ``None`` →
            :data:`DEFAULT_MAX_RETRIES`, or the ``client``'s own.
        max_input_tokens: the most tokens (estimated, 4 characters each) the request may
            take; a longer transcript is shortened to fit. ``None``: no limit.
        max_output_tokens: the most tokens the summary may take; an answer cut there fails.
        client: a ready SDK client; then ``base_url`` and ``api_key`` must be ``None``.

    Raises:
        MissingExtraError: the SDK is not installed. SummaryError: the client cannot be made
            (e.g. no API key for a non-local server). ValueError: ``client`` together with
            ``base_url``/``api_key``, or a non-positive token limit.
    """

    _VENDOR: ClassVar[str]
    """The provider's name in messages (``"OpenAI"``)."""
    _CLIENT_CLASS: ClassVar[str]
    """The SDK's async client class (``"AsyncOpenAI"``)."""
    _SDK_ERROR: ClassVar[str]
    """The SDK's base exception, raised by the client constructor (``"OpenAIError"``)."""
    _URL_ENV: ClassVar[str]
    _KEY_ENV: ClassVar[str]
    _KEY_HINT: ClassVar[str] = ""
    """Appended to a failure to make the client (how to give a key), with a leading space."""

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
        client: Any = None,
    ) -> None:
        sdk = self._import_sdk()
        check_positive(max_output_tokens=max_output_tokens, max_input_tokens=max_input_tokens)
        self.model = model
        self.max_output_tokens = max_output_tokens
        self.max_input_tokens = max_input_tokens
        self._sdk = sdk
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
                base_url, api_key, url_env=self._URL_ENV, key_env=self._KEY_ENV
            )
            try:
                self._client = getattr(sdk, self._CLIENT_CLASS)(
                    api_key=key,
                    base_url=effective_url,
                    timeout=DEFAULT_TIMEOUT_S if timeout is None else timeout,
                    max_retries=DEFAULT_MAX_RETRIES if max_retries is None else max_retries,
                )
            except getattr(sdk, self._SDK_ERROR) as exc:
                raise SummaryError(
                    f"{self._VENDOR} summariser for model {model!r}: {exc}{self._KEY_HINT}"
                ) from exc
        self.base_url = str(self._client.base_url).rstrip("/")
        self._timeout_s = timeout_seconds(self._client.timeout)

    @staticmethod
    def _import_sdk() -> ModuleType:
        """The vendor SDK, imported now (never at module import).

        Raises:
            MissingExtraError: the SDK is not installed.
        """
        raise NotImplementedError

    async def _request(self, prompt: SummaryPrompt) -> Any:
        """Send one request for ``prompt``; the SDK's answer. SDK exceptions pass through."""
        raise NotImplementedError

    def _result(self, answer: Any) -> SummaryResult:
        """The summary in ``answer``.

        Raises:
            SummaryError: an empty, refused, filtered or cut-off answer.
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    async def summarize(
        self,
        messages: Sequence[AgentMessage],
        *,
        previous_summary: str | None,
        instructions: str | None,
        purpose: SummaryPurpose,
    ) -> SummaryResult:
        """Summarise ``messages`` (oldest first) with one request (docs/compaction.md).

        With only ``previous_summary`` and no message to show, it is returned unchanged (no
        request, ``usage`` ``None``).

        Returns:
            the summary (Markdown) and the usage the server reported (tokens; ``None`` when it
            reported none).

        Raises:
            SummaryError: nothing to summarise; an HTTP error status, a timeout, a refused
                connection or missing credentials (after the SDK's retries); an empty,
                refused, filtered or cut-off answer. The SDK's exception is the ``__cause__``.
        """
        prompt = build_prompt(
            messages,
            previous_summary=previous_summary,
            instructions=instructions,
            purpose=purpose,
            max_input_tokens=self.max_input_tokens,
        )
        if prompt is None:
            return unchanged_summary(previous_summary, self._who())
        try:
            answer = await self._request(prompt)
        except Exception as exc:  # vendor errors never escape (the Summarizer protocol)
            reason = describe_failure(exc, self._sdk, timeout_s=self._timeout_s)
            raise SummaryError(f"{self._who()} failed: {reason}") from exc
        return self._result(answer)

    def _who(self) -> str:
        return f"{self._VENDOR} summariser (model {self.model!r} at {self.base_url})"

    def _cut_off(self) -> SummaryError:
        """The error for an answer the server stopped at :attr:`max_output_tokens`."""
        return SummaryError(
            f"{self._who()}: the summary was cut off at max_output_tokens="
            f"{self.max_output_tokens}; raise it"
        )

    async def aclose(self) -> None:
        """Close the HTTP connections of the client this summariser created (idempotent)."""
        if self._owns_client:
            await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
