"""The turn loop of :class:`~sessiontree.harness.agent.AgentHarness`: what one run does.

A run (``harness.prompt(...)``) appends the user message, then loops: build the context
(compacting when the window is nearly full), stream the model, persist its answer, run the
tools it called (persisting each result in call order), deliver steering messages, and go on
while the model asks for tools; then follow-up messages the same way. A model answer is
retried on transient failures (the harness's :class:`~sessiontree.harness.retry.RetryPolicy`)
and compacted and retried once on a context overflow; a failure that stays, or an abort, is
persisted as an assistant message (``stopReason`` ``error`` or ``aborted``).

The session is the only state: every message is persisted before listeners hear of its end,
so a process that dies mid-turn loses nothing acknowledged, and a new harness over the
reopened session continues from the leaf (the wire converters pair any tool call left
without a result). Session writes asked for while a run is active (a model, thinking-level or
active-tools change) wait until the current turn ends, so nothing lands between a tool call
and its result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from sessiontree.context import SessionContext
from sessiontree.entries import ThinkingLevel
from sessiontree.errors import AgentHarnessError, ModelError
from sessiontree.harness.context import ContextHarness
from sessiontree.harness.events import AgentEvent, Listeners
from sessiontree.harness.retry import RetryPolicy
from sessiontree.harness.tools import Tool, ToolBatch
from sessiontree.ids import now_ms
from sessiontree.messages import AgentMessage, AssistantMessage, ToolCall, Usage, UserMessage
from sessiontree.models.base import (
    Accumulator,
    Done,
    Model,
    ModelRequest,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
)

__all__ = ["AgentLoop", "ToolExecution"]

ToolExecution = Literal["parallel", "sequential"]
"""How a batch of tool calls runs: concurrently (results persisted in call order) or one by one."""


class AgentLoop(ContextHarness):
    """The run of an agent over its session: the turn loop, model answers, tool batches.

    The base of :class:`~sessiontree.harness.agent.AgentHarness`, whose constructor sets the
    attributes below and whose ``prompt`` starts :meth:`_run` as :attr:`_task`.
    """

    model: Model | None
    """The model called for every answer; ``None`` until one is given."""
    tools: dict[str, Tool]
    """Every tool the harness knows, by name."""
    retry: RetryPolicy
    """How transient model failures are retried."""
    tool_execution: ToolExecution
    """How each tool batch runs (:data:`ToolExecution`)."""
    max_output_tokens: int | None
    """The answer cap sent with every request (tokens)."""
    _thinking_level: ThinkingLevel | None
    """The thinking level set on the harness; ``None`` = the session's derived one."""
    _active: list[str] | None
    """The tools set active on the harness; ``None`` = the session's active tools."""
    _listeners: Listeners
    """Who hears the run's :class:`~sessiontree.harness.events.AgentEvent` s."""
    _steering: list[UserMessage]
    """Delivered after the current tool batch, before the next model call."""
    _follow_ups: list[UserMessage]
    """Delivered when the agent would otherwise stop."""
    _pending: list[Callable[[], Any]]
    """Session writes held until the current turn ends (:meth:`_write`)."""
    _task: asyncio.Task[AssistantMessage] | None
    """The running (or last) run."""
    _aborting: bool
    """Whether the run's cancellation is an abort (which the run absorbs) or the caller's."""
    _last_aborted: AssistantMessage | None
    """The partial answer :meth:`_stream` persisted when it was cancelled."""
    _offered: dict[str, Tool]
    """The tools offered in the current model request (a call to another gets an error result)."""
    _announced: bool
    """Whether the answer being streamed has had its ``message_start``."""
    _started: asyncio.Event
    """Set once the run's body runs: cancelling before that would persist nothing."""
    _accepting: bool
    """Whether :meth:`steer` / :meth:`follow_up` may queue: from the start of a run until it
    has decided to stop (a message queued later would wait for the next run)."""
    _prompt_phase: Literal["new", "announcing", "writing", "ending", "done"]
    """How far the run's prompt got: before its ``message_start``, in it, being written,
    in its ``message_end``, done."""
    _prompt_write: asyncio.Future[str] | None
    """The write of the run's prompt, once started."""
    _last_reply: AssistantMessage | None
    """The run's newest stored answer."""

    # ------------------------------------------------------------------ writes during a run

    @property
    def busy(self) -> bool:
        """Whether a run is in progress."""
        return self._task is not None and not self._task.done()

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
        """One run, from ``agent_start`` to ``agent_end``; see :meth:`AgentHarness.prompt`.

        An abort (:meth:`AgentHarness.abort`) anywhere in the run is absorbed here: the
        prompt is stored if it was not yet (also when the abort came while an
        ``agent_start`` or ``message_start`` listener ran), then the partial answer with
        ``stopReason: "aborted"`` (an empty one when no answer was streaming), and that
        message is returned. An abort while ``agent_end`` listeners run cancels them and
        returns the run's last message unchanged. Only a cancellation that is not an abort
        (the caller's task cancelled) propagates.
        """
        self._prompt_phase = "new"
        self._prompt_write = None
        self._last_reply = None
        self._started.set()
        try:
            last = await self._turns(user)
        except asyncio.CancelledError:
            if not self._aborting:
                raise
            self._absorb_abort()
            last = await self._after_abort(user)
        finally:
            self._accepting = False
            self._last_aborted = None
            await self._closing_step(self._flush_pending, suppress_errors=True)
        await self._closing_step(lambda: self._emit("agent_end", message=last))
        return last

    def _absorb_abort(self) -> None:
        """Take back the cancellation :meth:`AgentHarness.abort` sent, so the run can store
        what it must and return."""
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()

    async def _closing_step(
        self, step: Callable[[], Awaitable[Any]], *, suppress_errors: bool = False
    ) -> None:
        """Run ``step`` after the run's messages are all stored: an abort cancels it and is
        absorbed (nothing is left to abort); with ``suppress_errors`` its exceptions too."""
        try:
            await step()
        except asyncio.CancelledError:
            if not self._aborting:
                raise
            self._absorb_abort()
        except Exception:
            if not suppress_errors:
                raise

    async def _turns(self, user: UserMessage) -> AssistantMessage:
        """The run's turns: the prompt stored, then model answers and tool batches until the
        model stops asking for tools and no steering or follow-up message is queued."""
        await self._emit("agent_start")
        await self._store_prompt(user)
        while True:
            await self._emit("turn_start")
            reply = await self._answer()
            self._last_reply = reply
            if reply.stop_reason in ("error", "aborted"):
                await self._emit("turn_end", message=reply)
                await self._store_queued()
                return reply
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
                # Nothing is queued and the model is done: from here on, until the run has
                # ended, steer() and follow_up() refuse (a message queued now would only be
                # delivered after the next prompt had been answered).
                self._accepting = False
                return reply

    async def _store_queued(self) -> None:
        """Store the steering and follow-up messages still queued when the run stops on a
        failed answer (the model is not called again), so none waits for a later run."""
        self._accepting = False
        batch = self._steering + self._follow_ups
        self._steering, self._follow_ups = [], []
        for msg in batch:
            await self._persist(msg)

    async def _store_prompt(self, user: UserMessage) -> None:
        """:meth:`_persist` of the prompt, recording how far it got (see :meth:`_after_abort`)."""
        self._prompt_phase = "announcing"
        await self._emit("message_start", message=user)
        self._prompt_phase = "writing"
        self._prompt_write = asyncio.ensure_future(self.session.append_message(user))
        await asyncio.shield(self._prompt_write)
        self._prompt_phase = "ending"
        await self._emit("message_end", message=user)
        self._prompt_phase = "done"

    async def _after_abort(self, user: UserMessage) -> AssistantMessage:
        """What an abort leaves: the prompt stored (finishing what :meth:`_store_prompt` had
        not done), then the aborted answer; returns that answer."""
        self._accepting = False
        if self._last_aborted is not None:  # the partial answer _stream stored
            return self._last_aborted
        phase = self._prompt_phase
        if phase == "new":
            await self._persist(user)
        elif phase == "announcing":
            await self._persist(user, announced=True)
        elif phase == "writing":
            assert self._prompt_write is not None
            await self._prompt_write
            await self._emit("message_end", message=user)
        last = self._last_reply
        if last is not None and last.stop_reason == "aborted":
            return last
        return await self._aborted_reply(Accumulator(), None)

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

    async def _compaction_event(self, type: str, data: dict[str, Any]) -> None:
        await self._emit(type, data=data)

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
            timestamp=now_ms(),
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
                    return event.message.model_copy(update={"timestamp": now_ms()})
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
            timestamp=now_ms(),
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
