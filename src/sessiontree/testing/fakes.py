"""Test doubles for the :class:`~sessiontree.summarizers.base.Summarizer` protocol.

Shipped so applications can test their compaction and navigation paths without a model:

* :class:`ScriptedSummarizer` answers from a script (texts or exceptions) and records every
  call (:class:`SummaryCall`), so a test can assert exactly which messages were summarised;
* :class:`FailingSummarizer` always raises :class:`~sessiontree.errors.SummaryError`;
* :class:`RecordingSummarizer` wraps a real summariser and records its calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from sessiontree.errors import SummaryError
from sessiontree.messages import AgentMessage, Usage
from sessiontree.summarizers.base import Summarizer, SummaryPurpose, SummaryResult

__all__ = ["FailingSummarizer", "RecordingSummarizer", "ScriptedSummarizer", "SummaryCall"]


@dataclass(frozen=True)
class SummaryCall:
    """One recorded ``summarize`` call (its arguments, messages copied into a list)."""

    messages: list[AgentMessage]
    previous_summary: str | None
    instructions: str | None
    purpose: SummaryPurpose


ScriptStep = str | BaseException | Callable[[SummaryCall], str]
"""A scripted answer: a text, an exception to raise, or a function of the call."""


@dataclass
class _Recorder:
    calls: list[SummaryCall] = field(default_factory=list)

    @property
    def summarized_messages(self) -> list[AgentMessage]:
        """Every message handed to the summariser so far, in call order."""
        return [m for c in self.calls for m in c.messages]


class ScriptedSummarizer(_Recorder):
    """Answers from ``script`` in order, then ``default`` (a text naming the purpose and the
    number of messages when ``None``). Records every call in :attr:`calls`.

    Args:
        script: answers, consumed one per call; an exception instance is raised.
        default: the answer once the script is used up.
        usage: reported with every answer (tokens).
    """

    def __init__(
        self,
        script: Iterable[ScriptStep] = (),
        *,
        default: str | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__()
        self.script = list(script)
        self.default = default
        self.usage = usage

    async def summarize(
        self,
        messages: Sequence[AgentMessage],
        *,
        previous_summary: str | None,
        instructions: str | None,
        purpose: SummaryPurpose,
    ) -> SummaryResult:
        """Record the call and answer the next scripted step.

        Raises:
            BaseException: whatever the script holds at this step.
        """
        call = SummaryCall(list(messages), previous_summary, instructions, purpose)
        self.calls.append(call)
        step: ScriptStep
        if self.script:
            step = self.script.pop(0)
        elif self.default is not None:
            step = self.default
        else:
            step = f"summary #{len(self.calls)} ({purpose}) of {len(call.messages)} message(s)"
        if isinstance(step, BaseException):
            raise step
        text = step(call) if callable(step) else step
        return SummaryResult(text, self.usage)


class FailingSummarizer(_Recorder):
    """Always raises ``error`` (by default :class:`SummaryError`); records the attempts."""

    def __init__(self, error: BaseException | None = None) -> None:
        super().__init__()
        self.error = error

    async def summarize(
        self,
        messages: Sequence[AgentMessage],
        *,
        previous_summary: str | None,
        instructions: str | None,
        purpose: SummaryPurpose,
    ) -> SummaryResult:
        """Record the call and raise.

        Raises:
            SummaryError: unless another ``error`` was given.
        """
        self.calls.append(SummaryCall(list(messages), previous_summary, instructions, purpose))
        raise self.error if self.error is not None else SummaryError("scripted failure")


class RecordingSummarizer(_Recorder):
    """Delegates to ``inner`` and records every call in :attr:`calls`."""

    def __init__(self, inner: Summarizer) -> None:
        super().__init__()
        self.inner = inner

    async def summarize(
        self,
        messages: Sequence[AgentMessage],
        *,
        previous_summary: str | None,
        instructions: str | None,
        purpose: SummaryPurpose,
    ) -> SummaryResult:
        """Record the call and return what ``inner`` returns."""
        self.calls.append(SummaryCall(list(messages), previous_summary, instructions, purpose))
        return await self.inner.summarize(
            messages, previous_summary=previous_summary, instructions=instructions, purpose=purpose
        )
