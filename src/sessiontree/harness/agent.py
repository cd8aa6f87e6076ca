"""``AgentHarness``: runs an agent over a session — the model, its tools, the context window.

``await harness.prompt("Build a web app")`` appends the user message, then loops: build the
context (compacting when the window is nearly full), stream the model, persist its answer,
run the tools it called (persisting each result in call order), deliver steering messages,
and go on while the model asks for tools; then follow-up messages the same way. The session
is the only state: every message is persisted before listeners hear of its end, so a process
that dies mid-turn loses nothing acknowledged, and a new harness over the reopened session
continues from the leaf (the wire converters pair any tool call left without a result).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from sessiontree.compaction import (
    CompactionMode,
    CompactionSettings,
    TokenCounter,
    estimate_tokens,
)
from sessiontree.context import EntryProjector, SessionContext
from sessiontree.entries import ThinkingLevel
from sessiontree.errors import AgentHarnessError, ModelError
from sessiontree.harness.context import ContextHarness
from sessiontree.harness.events import AgentEvent, Listener, Listeners
from sessiontree.harness.retry import RetryPolicy
from sessiontree.harness.tools import Tool, ToolBatch
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    ImageContent,
    TextContent,
    ToolCall,
    Usage,
    UserMessage,
)
from sessiontree.models.base import (
    Accumulator,
    Done,
    Model,
    ModelRequest,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
)
from sessiontree.session import Session
from sessiontree.summarizers.base import Summarizer
from sessiontree.summarizers.model import ModelSummarizer

__all__ = ["DEFAULT_CONTEXT_WINDOW", "AgentHarness"]

DEFAULT_CONTEXT_WINDOW = 128_000
"""The window (tokens) assumed when neither the caller nor the model gives one."""

ToolExecution = Literal["parallel", "sequential"]


def _now_ms() -> int:
    return int(time.time() * 1000)


class AgentHarness(ContextHarness):
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
        self.tools: dict[str, Tool] = {}
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
        self.tool_execution: ToolExecution = tool_execution
        self.max_output_tokens = max_output_tokens
        self._thinking_level = thinking_level
        self._active: list[str] | None = None
        self._listeners = Listeners()
        self._steering: list[UserMessage] = []
        self._follow_ups: list[UserMessage] = []
        self._pending: list[Callable[[], Any]] = []
        self._task: asyncio.Task[AssistantMessage] | None = None
        self._aborting = False
        self._last_aborted: AssistantMessage | None = None
        self._offered: dict[str, Tool] = {}
        self._announced = False
        self._started = asyncio.Event()

    # ------------------------------------------------------------------ state

    @property
    def busy(self) -> bool:
        """Whether a run is in progress."""
        return self._task is not None and not self._task.done()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event)`` (sync or async) for every :class:`AgentEvent`; returns the
        function that unsubscribes. A listener that raises is logged and does not break the run."""
        return self._listeners.subscribe(listener)

    async def _write(self, op: Callable[[], Any]) -> None:
        """Run a session write now, or after the current turn when a run is active (so that
        nothing lands between a tool call and its result)."""
        if self.busy:
            self._pending.append(op)
        else:
            await op()

    async def _flush_pending(self) -> None:
        pending, self._pending = self._pending, []
        for op in pending:
            await op()

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
        ``stopReason: "error"`` and returned; after :meth:`abort` the partial answer comes
        back with ``stopReason: "aborted"``.

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
        self._started = asyncio.Event()
        self._task = asyncio.create_task(self._run(message))
        return await self._task

    def steer(self, content: str | Sequence[ContentBlock]) -> None:
        """Queue a user message delivered after the current tool batch, before the next
        model call.

        Raises:
            AgentHarnessError: ``invalid_state`` — no run is active (use :meth:`prompt`).
        """
        self._queue(self._steering, content, "steer")

    def follow_up(self, content: str | Sequence[ContentBlock]) -> None:
        """Queue a user message delivered when the agent would otherwise stop.

        Raises:
            AgentHarnessError: ``invalid_state`` — no run is active (use :meth:`prompt`).
        """
        self._queue(self._follow_ups, content, "follow_up")

    def _queue(self, queue: list[UserMessage], content: Any, what: str) -> None:
        if not self.busy:
            raise AgentHarnessError(
                "invalid_state",
                f"{what}() needs a running prompt; call prompt() instead",
                session_id=self.session.id,
            )
        queue.append(self._user_message(content, ()))

    async def abort(self) -> dict[str, list[UserMessage]]:
        """Cancel the model call and running tools; the partial answer is persisted with
        ``stopReason: "aborted"`` (and each interrupted tool call gets an ``isError`` result).

        Returns:
            ``{"steering": [...], "follow_up": [...]}`` — the queued messages, now cleared.
        """
        cleared = {"steering": self._steering, "follow_up": self._follow_ups}
        self._steering, self._follow_ups = [], []
        task = self._task
        if task is not None and not task.done():
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
            return UserMessage(content=content, timestamp=_now_ms())
        blocks: list[Any] = (
            [TextContent(text=content)] if isinstance(content, str) else list(content)
        )
        blocks.extend(images)
        return UserMessage(content=blocks, timestamp=_now_ms())

    # ------------------------------------------------------------------ the loop

    async def _emit(self, type: str, **fields: Any) -> None:
        await self._listeners.emit(AgentEvent(type, **fields))

    async def _persist(self, message: AgentMessage, *, announced: bool = False) -> AgentMessage:
        """Append ``message``, then tell listeners it ended (``message_start`` first unless
        the streamed answer already announced it)."""
        if not announced:
            await self._emit("message_start", message=message)
        # An abort never cuts a write short: the append finishes, then the cancellation goes
        # on (else a message could be lost, or land after the aborted reply that follows).
        write = asyncio.ensure_future(self.session.append_message(message))
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            await write
            raise
        await self._emit("message_end", message=message)
        return message

    async def _run(self, user: UserMessage) -> AssistantMessage:
        last: AssistantMessage | None = None
        self._started.set()
        try:
            await self._emit("agent_start")
            await self._persist(user)
            while True:
                await self._emit("turn_start")
                reply = await self._answer()
                last = reply
                if reply.stop_reason in ("error", "aborted"):
                    await self._emit("turn_end", message=reply)
                    break
                calls = reply.tool_calls()
                if calls:
                    await self._run_tools(reply, calls)
                await self._emit("turn_end", message=reply)
                await self._flush_pending()
                queued = self._steering or ([] if calls else self._follow_ups)
                if queued:
                    batch = list(queued)
                    queued.clear()
                    for msg in batch:
                        await self._persist(msg)
                    continue
                if not calls:
                    break
        except asyncio.CancelledError:
            if not self._aborting:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            if self._last_aborted is not None:
                last = self._last_aborted
            elif last is None or last.stop_reason != "aborted":
                last = await self._aborted_reply(Accumulator(), None)
        finally:
            self._last_aborted = None
            with contextlib.suppress(Exception):
                await self._flush_pending()
        await self._emit("agent_end", message=last)
        assert last is not None
        return last

    async def _request(self) -> ModelRequest:
        ctx: SessionContext = await self.prepare_context()
        level = self._thinking_level or ctx.thinking_level
        names = self._active if self._active is not None else ctx.active_tool_names
        offered = [t for n, t in self.tools.items() if names is None or n in names]
        return ModelRequest(
            system_prompt=ctx.system_prompt,
            messages=ctx.messages,
            tools=[t.schema() for t in offered],
            thinking_level=level,
            max_output_tokens=self.max_output_tokens,
        )

    def _active_tools(self, request: ModelRequest) -> dict[str, Tool]:
        names = {t.name for t in request.tools}
        return {n: t for n, t in self.tools.items() if n in names}

    async def _answer(self) -> AssistantMessage:
        """One model answer, persisted: retried on transient failures, compacted and retried
        once on overflow; a failure that stays is persisted as an ``error`` message."""
        overflow_retried = False
        attempt = 0
        while True:
            attempt += 1
            try:
                request = await self._request()
            except AgentHarnessError as exc:
                if exc.code not in ("context_too_large", "compaction"):
                    raise
                return await self._failed(str(exc))
            self._offered = self._active_tools(request)
            try:
                reply = await self._stream(request)
            except ModelError as exc:
                if exc.kind == "auth":
                    raise AgentHarnessError("auth", str(exc), session_id=self.session.id) from exc
                if exc.kind == "overflow" and not overflow_retried:
                    overflow_retried = True
                    if await self._compact_for_overflow():
                        attempt = 0
                        continue
                    return await self._failed(str(exc))
                if exc.transient and attempt < self.retry.max_attempts:
                    delay = self.retry.delay_s(attempt, exc.retry_after_s)
                    await self._emit(
                        "retry_scheduled",
                        data={"attempt": attempt, "delay_s": delay, "error": str(exc)},
                    )
                    await asyncio.sleep(delay)
                    continue
                return await self._failed(str(exc))
            await self._persist(reply, announced=self._announced)
            return reply

    async def _compact_for_overflow(self) -> bool:
        await self._emit("compaction_start", data={"reason": "overflow"})
        try:
            entry = await self._compact(None, keep_recent_tokens=0)
        except Exception as exc:
            await self._emit("compaction_end", data={"reason": "overflow", "error": str(exc)})
            return False
        self.last_compaction = entry
        await self._emit("compaction_end", data={"reason": "overflow", "entry_id": entry.id})
        return True

    async def _failed(self, error: str) -> AssistantMessage:
        model = self.model
        reply = AssistantMessage(
            content=[],
            provider=getattr(model, "provider", None),
            model=getattr(model, "model_id", None),
            usage=Usage(),
            stop_reason="error",
            error_message=error,
            timestamp=_now_ms(),
        )
        await self._persist(reply)
        return reply

    async def _stream(self, request: ModelRequest) -> AssistantMessage:
        """Stream one answer, emitting ``message_update`` per delta; when cancelled the
        partial answer is persisted (``aborted``) and the cancellation goes on."""
        assert self.model is not None
        acc = Accumulator()
        started = self._announced = False
        try:
            async for event in self.model.stream(request):
                if isinstance(event, Done):
                    return event.message.model_copy(update={"timestamp": _now_ms()})
                if not started:
                    started = self._announced = True
                    await self._emit("message_start", message=AssistantMessage())
                if isinstance(event, TextDelta):
                    acc.text(event.text)
                elif isinstance(event, ThinkingDelta):
                    acc.thinking(event.thinking)
                elif isinstance(event, ToolCallDelta):
                    acc.tool(event.index, event.id, event.name, event.arguments)
                await self._emit("message_update", delta=event)
        except asyncio.CancelledError:
            # abort(), or the caller's task cancelled (Ctrl-C): the partial answer is kept
            self._last_aborted = await self._aborted_reply(acc, self.model, announced=started)
            raise
        raise ModelError("connection", "the model's stream ended without a complete answer")

    async def _aborted_reply(
        self, acc: Accumulator, model: Model | None, *, announced: bool = False
    ) -> AssistantMessage:
        # Tool calls still being streamed cannot be run; only text and thinking are kept.
        content = [b for b in acc.content() if b["type"] != "toolCall"]
        reply = AssistantMessage(
            content=content,
            provider=getattr(model or self.model, "provider", None),
            model=getattr(model or self.model, "model_id", None),
            usage=Usage(),
            stop_reason="aborted",
            error_message="aborted",
            timestamp=_now_ms(),
        )
        await self._persist(reply, announced=announced)
        return reply

    async def _run_tools(self, reply: AssistantMessage, calls: list[ToolCall]) -> None:
        """Run a batch and persist one result per call, in call order (also on abort)."""
        tools = self._offered
        batch = ToolBatch(
            calls,
            tools,
            sequential=self.tool_execution == "sequential",
            truncated=reply.stop_reason == "length",
            emit=self._emit,
        )
        try:
            await batch.run()
        finally:
            for result in batch.results():
                await self._persist(result)
