"""``ModelSummarizer``: summaries written by a :class:`~sessiontree.models.base.Model`.

The harness's default summariser when it has a model: compactions and branch summaries go
through the same provider and model as the conversation, with the prompt every LLM
summariser shares (:mod:`sessiontree.summarizers._prompt`).
"""

from __future__ import annotations

from collections.abc import Sequence

from sessiontree.errors import ModelError, SummaryError
from sessiontree.messages import AgentMessage, AssistantMessage, TextContent, UserMessage
from sessiontree.models.base import Done, Model, ModelRequest
from sessiontree.summarizers._prompt import build_prompt, summary_from_text, unchanged_summary
from sessiontree.summarizers.base import SummaryPurpose, SummaryResult

__all__ = ["ModelSummarizer"]

DEFAULT_MAX_OUTPUT_TOKENS = 8192
"""Upper bound on a summary's length, in output tokens."""


class ModelSummarizer:
    """A :class:`~sessiontree.summarizers.base.Summarizer` that asks ``model``.

    Args:
        model: any :class:`~sessiontree.models.base.Model`.
        max_output_tokens: the most tokens a summary may take.
        max_input_tokens: the most tokens (estimated) the request may take; ``None`` → the
            model's context window less ``max_output_tokens``, when known.
    """

    def __init__(
        self,
        model: Model,
        *,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        max_input_tokens: int | None = None,
    ) -> None:
        self.model = model
        self.max_output_tokens = max_output_tokens
        window = getattr(model, "context_window", None)
        if max_input_tokens is None and isinstance(window, int):
            max_input_tokens = max(window - max_output_tokens, 1000)
        self.max_input_tokens = max_input_tokens

    def __repr__(self) -> str:
        return f"ModelSummarizer({self.model!r})"

    async def summarize(
        self,
        messages: Sequence[AgentMessage],
        *,
        previous_summary: str | None,
        instructions: str | None,
        purpose: SummaryPurpose,
    ) -> SummaryResult:
        """Summarise ``messages`` with one model call (the layout of docs/compaction.md).

        Raises:
            SummaryError: nothing to summarise, the model call failed, was cut off or
                answered nothing.
        """
        prompt = build_prompt(
            messages,
            previous_summary=previous_summary,
            instructions=instructions,
            purpose=purpose,
            max_input_tokens=self.max_input_tokens,
        )
        who = f"summary by {self.model.provider}/{self.model.model_id}"
        if prompt is None:
            return unchanged_summary(previous_summary, who)
        request = ModelRequest(
            system_prompt=prompt.system,
            messages=[UserMessage(content=prompt.user)],
            max_output_tokens=self.max_output_tokens,
        )
        reply: AssistantMessage | None = None
        try:
            async for event in self.model.stream(request):
                if isinstance(event, Done):
                    reply = event.message
        except ModelError as exc:
            raise SummaryError(f"{who} failed: {exc}") from exc
        if reply is None:
            raise SummaryError(f"{who}: the stream ended without an answer")
        if reply.stop_reason == "length":
            raise SummaryError(
                f"{who}: the summary was cut off at {self.max_output_tokens} tokens; raise it"
            )
        if reply.stop_reason == "error":
            raise SummaryError(f"{who} failed: {reply.error_message}")
        text = "".join(b.text for b in reply.content if isinstance(b, TextContent))
        return summary_from_text(text, reply.usage, who)
