"""``AgentHarness``: runs an agent over a session — the model, its tools, the context window.

``await harness.prompt("Build a web app")`` runs the agent on a new user message until it
stops (the turn loop is :class:`~sessiontree.harness.loop.AgentLoop`); :meth:`steer`,
:meth:`follow_up` and :meth:`abort` act on a run, and the setters change the model, the
thinking level or the active tools from the next model call on. The session is the only
state: a new harness over the reopened session continues from the leaf.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sessiontree.compaction import (
    CompactionMode,
    CompactionSettings,
    TokenCounter,
    estimate_tokens,
)
from sessiontree.context import EntryProjector
from sessiontree.entries import ThinkingLevel
from sessiontree.errors import AgentHarnessError
from sessiontree.harness.events import Listener, Listeners
from sessiontree.harness.loop import AgentLoop, ToolExecution
from sessiontree.harness.retry import RetryPolicy
from sessiontree.harness.tools import Tool
from sessiontree.ids import now_ms
from sessiontree.messages import (
    AssistantMessage,
    ContentBlock,
    ImageContent,
    TextContent,
    UserMessage,
)
from sessiontree.models.base import Model
from sessiontree.session import Session
from sessiontree.summarizers.base import Summarizer
from sessiontree.summarizers.model import ModelSummarizer

__all__ = ["DEFAULT_CONTEXT_WINDOW", "AgentHarness"]

DEFAULT_CONTEXT_WINDOW = 128_000
"""The window (tokens) assumed when neither the caller nor the model gives one."""


class AgentHarness(AgentLoop):
    """An agent loop over a :class:`Session`: model, tools, retries, compaction, steering.

    Args:
        session: the session to run in (the only state; reopen it to resume).
        model: the :class:`~sessiontree.models.base.Model` to call (e.g.
            ``resolve_model("openai/gpt-4.1")``); without one only the context methods work.
        tools: the tools the model may call (all active unless the session or
            :meth:`set_active_tools` says otherwise).
        system_prompt: else the session metadata's ``systemPrompt``.
        context_window: tokens; default the model's, else :data:`DEFAULT_CONTEXT_WINDOW`.
        settings: compaction settings.
        summarizer: for compactions and branch summaries; default a
            :class:`~sessiontree.summarizers.model.ModelSummarizer` over ``model`` (the
            offline extractive one when there is no model).
        compaction_mode: ``pointer`` or ``retained_tail``.
        retry: a :class:`RetryPolicy` for transient model failures.
        tool_execution: ``parallel`` (a batch runs concurrently, results persisted in call
            order) or ``sequential``.
        thinking_level: else the session's derived thinking level.
        entry_projectors: projectors for ``custom`` entries.
        token_counter: per-message token estimate.
        max_output_tokens: the answer cap sent with every request.

    Raises:
        AgentHarnessError: ``invalid_settings`` (see :class:`ContextHarness`) or
            ``invalid_argument`` — two tools with one name, an unknown ``tool_execution``.
    """

    def __init__(
        self,
        session: Session,
        *,
        model: Model | None = None,
        tools: Iterable[Tool] = (),
        system_prompt: str | None = None,
        context_window: int | None = None,
        settings: CompactionSettings | Mapping[str, Any] | None = None,
        summarizer: Summarizer | None = None,
        compaction_mode: CompactionMode = "pointer",
        retry: RetryPolicy | None = None,
        tool_execution: ToolExecution = "parallel",
        thinking_level: ThinkingLevel | None = None,
        entry_projectors: Mapping[str, EntryProjector] | None = None,
        token_counter: TokenCounter = estimate_tokens,
        max_output_tokens: int | None = None,
    ) -> None:
        window = context_window
        if window is None:
            window = getattr(model, "context_window", None) or DEFAULT_CONTEXT_WINDOW
        self._own_summarizer = summarizer is None and model is not None
        if self._own_summarizer:
            summarizer = ModelSummarizer(model)  # type: ignore[arg-type]
        super().__init__(
            session,
            context_window=window,
            settings=settings,
            summarizer=summarizer,
            compaction_mode=compaction_mode,
            system_prompt=system_prompt,
            entry_projectors=entry_projectors,
            token_counter=token_counter,
        )
        self.tools = {}
        for t in tools:
            if t.name in self.tools:
                raise AgentHarnessError(
                    "invalid_argument", f"two tools are named {t.name!r}", session_id=session.id
                )
            self.tools[t.name] = t
        if tool_execution not in ("parallel", "sequential"):
            raise AgentHarnessError(
                "invalid_argument",
                f"tool_execution must be 'parallel' or 'sequential', not {tool_execution!r}",
                session_id=session.id,
            )
        self.model = model
        self.retry = retry or RetryPolicy()
        self.tool_execution = tool_execution
        self.max_output_tokens = max_output_tokens
        self._thinking_level = thinking_level
        self._active = None
        self._listeners = Listeners()
        self._steering = []
        self._follow_ups = []
        self._pending = []
        self._task = None
        self._aborting = False
        self._last_aborted = None
        self._offered = {}
        self._announced = False
        self._started = asyncio.Event()
        self._accepting = False
        self._prompt_phase = "new"
        self._prompt_write = None
        self._last_reply = None

    # ------------------------------------------------------------------ settings

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` (sync or async) for every :class:`AgentEvent`; returns the
        function that unsubscribes. A listener that raises is logged and does not break the run."""
        return self._listeners.subscribe(listener)

    async def set_model(self, model: Model) -> None:
        """Use ``model`` from the next model call on; appends a ``model_change`` entry."""
        self.model = model
        if self._own_summarizer:
            self.summarizer = ModelSummarizer(model)
        await self._write(lambda: self.session.append_model_change(model.provider, model.model_id))

    async def set_thinking_level(self, level: ThinkingLevel) -> None:
        """Use thinking ``level`` from the next model call on; appends a
        ``thinking_level_change`` entry.

        Raises:
            InvalidEntryError: not one of off/minimal/low/medium/high/xhigh.
        """
        await self._write(lambda: self.session.append_thinking_level_change(level))
        self._thinking_level = level

    async def set_active_tools(self, names: Sequence[str]) -> None:
        """Offer only the tools ``names`` to the model; appends an ``active_tools_change``.

        Raises:
            AgentHarnessError: ``invalid_argument`` — a name that is not one of the tools.
        """
        unknown = [n for n in names if n not in self.tools]
        if unknown:
            raise AgentHarnessError(
                "invalid_argument",
                f"unknown tool(s) {', '.join(map(repr, unknown))}; known: "
                f"{', '.join(sorted(self.tools)) or 'none'}",
                session_id=self.session.id,
            )
        chosen = list(names)
        await self._write(lambda: self.session.append_active_tools_change(chosen))
        self._active = chosen

    # ------------------------------------------------------------------ control

    async def prompt(
        self,
        content: str | Sequence[ContentBlock],
        *,
        images: Sequence[ImageContent] | None = None,
    ) -> AssistantMessage:
        """Run the agent on a new user message until it stops; returns its last answer.

        Model failures do not raise: when retries are exhausted, a second context overflow
        or the context cannot fit, the failure is persisted as an assistant message with
        ``stopReason: "error"`` and returned (steering and follow-up messages still queued
        are stored after it, for the next prompt's model call to see).

        After :meth:`abort` the partial answer comes back with ``stopReason: "aborted"``,
        stored after the prompt wherever the abort came: one that came before the prompt
        was stored (while an ``agent_start`` or the prompt's ``message_start`` listener
        ran) stores the prompt, then an empty aborted answer. An abort while ``agent_end``
        listeners run cancels them and the run's last answer is returned as it was.
        ``abort()`` never makes ``prompt`` raise ``CancelledError``; cancelling the task
        that awaits ``prompt`` does (the partial answer is stored first).

        Raises:
            AgentHarnessError: ``busy`` — a run is active; ``invalid_state`` — no model;
                ``auth`` — the provider refused the credentials (the user message stays).
        """
        if self.busy:
            raise AgentHarnessError(
                "busy",
                "a prompt is already running; use steer() or follow_up(), or await wait_for_idle()",
                session_id=self.session.id,
            )
        if self.model is None:
            raise AgentHarnessError(
                "invalid_state",
                "the harness has no model (pass model=...)",
                session_id=self.session.id,
            )
        message = self._user_message(content, images or ())
        self._aborting = False
        self._accepting = True
        self._steering, self._follow_ups = [], []
        self._started = asyncio.Event()
        self._task = asyncio.create_task(self._run(message))
        return await self._task

    def steer(self, content: str | Sequence[ContentBlock]) -> None:
        """Queue a user message delivered after the current tool batch, before the next
        model call (always within the current run).

        Raises:
            AgentHarnessError: ``invalid_state`` — no run is active (use :meth:`prompt`),
                or the run is finishing: the model is done and no message is queued (e.g.
                from an ``agent_end`` listener), or it was aborted or failed.
        """
        self._queue(self._steering, content, "steer")

    def follow_up(self, content: str | Sequence[ContentBlock]) -> None:
        """Queue a user message delivered when the agent would otherwise stop (always within
        the current run).

        Raises:
            AgentHarnessError: ``invalid_state`` — no run is active, or it is finishing
                (see :meth:`steer`).
        """
        self._queue(self._follow_ups, content, "follow_up")

    def _queue(self, queue: list[UserMessage], content: Any, what: str) -> None:
        if not self.busy:
            raise AgentHarnessError(
                "invalid_state",
                f"{what}() needs a running prompt; call prompt() instead",
                session_id=self.session.id,
            )
        if not self._accepting:
            raise AgentHarnessError(
                "invalid_state",
                f"{what}() came while the run is finishing, too late to be delivered in it; "
                "await wait_for_idle(), then call prompt()",
                session_id=self.session.id,
            )
        queue.append(self._user_message(content, ()))

    async def abort(self) -> dict[str, list[UserMessage]]:
        """Cancel the model call and running tools; the partial answer is persisted with
        ``stopReason: "aborted"`` (and each interrupted tool call gets an ``isError`` result).
        Returns once the run has ended; its :meth:`prompt` returns the aborted answer (see
        there for an abort before the prompt was stored or during ``agent_end``).

        Returns:
            ``{"steering": [...], "follow_up": [...]}`` — the queued messages, now cleared.
        """
        cleared = {"steering": self._steering, "follow_up": self._follow_ups}
        self._steering, self._follow_ups = [], []
        task = self._task
        if task is not None and not task.done():
            self._accepting = False
            if self._aborting:  # a second abort() of one run waits for the first
                await asyncio.wait({task})
                return cleared
            self._aborting = True
            # A task cancelled before its first step never runs its body, which persists
            # what was interrupted; so the run is let start first.
            await self._started.wait()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task})
        return cleared

    async def wait_for_idle(self) -> None:
        """Return once no run is active."""
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait({task})

    def _user_message(self, content: Any, images: Sequence[ImageContent]) -> UserMessage:
        if isinstance(content, str) and not images:
            return UserMessage(content=content, timestamp=now_ms())
        blocks: list[Any] = (
            [TextContent(text=content)] if isinstance(content, str) else list(content)
        )
        blocks.extend(images)
        return UserMessage(content=blocks, timestamp=now_ms())
