"""``AgentHarness``: runs an agent over a session — the model, its tools, the context window.

``await harness.prompt("Build a web app")`` runs the agent on a new user message until it
stops; :meth:`~AgentHarness.steer`, :meth:`~AgentHarness.follow_up` and
:meth:`~AgentHarness.abort` act on a run, and the setters change the model, the thinking level
or the active tools from the next model call on. Keeping the context inside the window is the
harness's :class:`~sessiontree.harness.context.ContextHarness` part, which it owns and asks
for every context; the turn loop is here.

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
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from sessiontree.compaction import (
    CompactionMode,
    CompactionSettings,
    TokenCounter,
    estimate_tokens,
)
from sessiontree.context import EntryProjector, SessionContext
from sessiontree.drafts import TOOL_INTERRUPTED, TOOL_NOT_STARTED, ToolRun
from sessiontree.entries import CompactionEntry, ThinkingLevel
from sessiontree.errors import AgentHarnessError, ModelError
from sessiontree.harness.context import ContextHarness
from sessiontree.harness.drafts import DEFAULT_DRAFT_INTERVAL_S, DraftWriter, unanswered_calls
from sessiontree.harness.events import AgentEvent, Listener, Listeners
from sessiontree.harness.lease import LeaseMode, LeasePolicy, acquire, keep_lease, new_owner
from sessiontree.harness.retry import RetryPolicy
from sessiontree.harness.tools import Tool, ToolBatch, error_result
from sessiontree.ids import now_ms
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    Cost,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
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
    UsageDelta,
)
from sessiontree.session import Session
from sessiontree.storage.lease import Lease
from sessiontree.summarizers.base import Summarizer
from sessiontree.summarizers.model import ModelSummarizer
from sessiontree.tree import ForkPosition

__all__ = ["DEFAULT_CONTEXT_WINDOW", "RETRIED_PREFIX", "AgentHarness", "ToolExecution"]

RETRIED_PREFIX = "retried:"
"""How the ``errorMessage`` of the ``error`` answer that records the usage of an answer's
failed attempts begins, when a later attempt succeeded (docs/harness.md "What failed and
aborted calls cost")."""

ToolExecution = Literal["parallel", "sequential"]
"""How a batch of tool calls runs: concurrently (results persisted in call order) or one by one."""

DEFAULT_CONTEXT_WINDOW = 128_000
"""The window (tokens) assumed when neither the caller nor the model gives one."""


class AgentHarness:
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
        draft_interval_s: a streaming answer is saved as the session's draft at most this
            often (seconds), so a crash loses at most this much of it (docs/harness.md
            "Durable streaming"); ``None``: not saved until complete.
        lease: hold the session's writer lease for each run (docs/harness.md "One writer
            per session"): ``"fail"`` — a prompt while another writer holds it raises
            :class:`~sessiontree.errors.SessionBusyError`; ``"wait"`` — it waits for the
            lease (up to :data:`~sessiontree.harness.lease.DEFAULT_LEASE_WAIT_S`); or a
            :class:`~sessiontree.harness.lease.LeasePolicy` for other times. Every write
            of the run is then checked against the lease, and one made after another
            writer took the session over raises
            :class:`~sessiontree.errors.LeaseLostError` and changes nothing. ``None``
            (default): no lease, writes are not checked.

    Raises:
        AgentHarnessError: ``invalid_settings`` (see :class:`ContextHarness`) or
            ``invalid_argument`` — two tools with one name, an unknown ``tool_execution``
            or ``lease``.
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
        draft_interval_s: float | None = DEFAULT_DRAFT_INTERVAL_S,
        lease: LeaseMode | LeasePolicy | None = None,
    ) -> None:
        window = context_window
        if window is None:
            window = getattr(model, "context_window", None) or DEFAULT_CONTEXT_WINDOW
        self._own_summarizer = summarizer is None and model is not None
        if self._own_summarizer:
            summarizer = ModelSummarizer(model)  # type: ignore[arg-type]
        self.session = session
        """The session the agent runs in (its context part's session)."""
        self._context = ContextHarness(
            session,
            context_window=window,
            settings=settings,
            summarizer=summarizer,
            compaction_mode=compaction_mode,
            system_prompt=system_prompt,
            entry_projectors=entry_projectors,
            token_counter=token_counter,
            on_compaction=self._compaction_event,
        )
        self.tools: dict[str, Tool] = {}
        """Every tool the harness knows, by name."""
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
        self.model: Model | None = model
        """The model called for every answer; ``None`` until one is given."""
        self.retry = retry or RetryPolicy()
        """How transient model failures are retried."""
        self.tool_execution: ToolExecution = tool_execution
        """How each tool batch runs (:data:`ToolExecution`)."""
        self.max_output_tokens = max_output_tokens
        """The answer cap sent with every request (tokens)."""
        if draft_interval_s is not None and not (
            isinstance(draft_interval_s, (int, float)) and draft_interval_s > 0
        ):
            raise AgentHarnessError(
                "invalid_argument",
                f"draft_interval_s must be a positive number of seconds or None, not "
                f"{draft_interval_s!r}",
                session_id=session.id,
            )
        self.draft_interval_s = draft_interval_s
        """How often a streaming answer is saved as the session's draft, at most (seconds);
        ``None``: never."""
        if isinstance(lease, str):
            if lease not in ("fail", "wait"):
                raise AgentHarnessError(
                    "invalid_argument",
                    f"lease must be 'fail', 'wait', a LeasePolicy or None, not {lease!r}",
                    session_id=session.id,
                )
            lease = LeasePolicy(mode=lease)
        elif lease is not None and not isinstance(lease, LeasePolicy):
            raise AgentHarnessError(
                "invalid_argument",
                f"lease must be 'fail', 'wait', a LeasePolicy or None, not {lease!r}",
                session_id=session.id,
            )
        self.lease: LeasePolicy | None = lease
        """How each run holds the session's writer lease; ``None``: it holds none."""
        self.lease_owner = new_owner()
        """The owner token this harness's leases carry."""
        self._leasing = False
        """Whether a prompt is taking the lease (the run has not started yet)."""
        self._draft: DraftWriter | None = None
        """The draft writer of the answer streamed last (its entry id is the answer's)."""
        self._attempt_usage: Usage | None = None
        """The usage the provider reported so far for the answer streaming (or last
        streamed); ``None`` when it reported none."""
        self._answer_id: str | None = None
        """The entry id of the answer stored last (whose tool calls run next)."""
        self._thinking_level: ThinkingLevel | None = thinking_level
        """The thinking level set on the harness; ``None`` = the session's derived one."""
        self._active: list[str] | None = None
        """The tools set active on the harness; ``None`` = the session's active tools."""
        self._listeners = Listeners()
        """Who hears the run's :class:`~sessiontree.harness.events.AgentEvent` s."""
        self._steering: list[UserMessage] = []
        """Delivered after the current tool batch, before the next model call."""
        self._follow_ups: list[UserMessage] = []
        """Delivered when the agent would otherwise stop."""
        self._pending: list[Callable[[], Any]] = []
        """Session writes held until the current turn ends (:meth:`_write`)."""
        self._task: asyncio.Task[AssistantMessage] | None = None
        """The running (or last) run."""
        self._aborting = False
        """Whether the run's cancellation is an abort (which the run absorbs) or the caller's."""
        self._last_aborted: AssistantMessage | None = None
        """The partial answer :meth:`_stream` persisted when it was cancelled."""
        self._offered: dict[str, Tool] = {}
        """The tools offered in the current model request (a call to another gets an error
        result)."""
        self._announced = False
        """Whether the answer being streamed has had its ``message_start``."""
        self._started = asyncio.Event()
        """Set once the run's body runs: cancelling before that would persist nothing."""
        self._accepting = False
        """Whether :meth:`steer` / :meth:`follow_up` may queue: from the start of a run until
        it has decided to stop (a message queued later would wait for the next run)."""
        self._prompt_phase: Literal["new", "announcing", "writing", "ending", "done"] = "new"
        """How far the run's prompt got: before its ``message_start``, in it, being written,
        in its ``message_end``, done."""
        self._prompt_write: asyncio.Future[str] | None = None
        """The write of the run's prompt, once started."""
        self._last_reply: AssistantMessage | None = None
        """The run's newest stored answer."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.session!r}, context_window={self.context_window})"

    # ------------------------------------------------------------------ the context part

    @property
    def context_window(self) -> int:
        """The model's context window (tokens)."""
        return self._context.context_window

    @property
    def settings(self) -> CompactionSettings:
        """When to compact and how much to keep."""
        return self._context.settings

    @property
    def compaction_mode(self) -> CompactionMode:
        """``pointer`` or ``retained_tail``."""
        return self._context.compaction_mode

    @property
    def system_prompt(self) -> str | None:
        """Passed to context building (``None``: the session metadata's)."""
        return self._context.system_prompt

    @property
    def entry_projectors(self) -> Mapping[str, EntryProjector] | None:
        """Projectors for ``custom`` entries."""
        return self._context.entry_projectors

    @property
    def token_counter(self) -> TokenCounter:
        """The per-message token estimate."""
        return self._context.token_counter

    @property
    def summarizer(self) -> Summarizer | None:
        """For compactions and branch summaries (``None``: the offline extractive one)."""
        return self._context.summarizer

    @summarizer.setter
    def summarizer(self, summarizer: Summarizer | None) -> None:
        self._context.summarizer = summarizer

    @property
    def last_compaction(self) -> CompactionEntry | None:
        """The compaction entry the harness appended most recently, if any."""
        return self._context.last_compaction

    @last_compaction.setter
    def last_compaction(self, entry: CompactionEntry | None) -> None:
        self._context.last_compaction = entry

    @property
    def last_context_tokens(self) -> int:
        """The size of the context :meth:`prepare_context` returned (tokens)."""
        return self._context.last_context_tokens

    @last_context_tokens.setter
    def last_context_tokens(self, tokens: int) -> None:
        self._context.last_context_tokens = tokens

    async def prepare_context(self, *, instructions: str | None = None) -> SessionContext:
        """The context for the next model call, compacted first when the window is nearly
        full (:meth:`ContextHarness.prepare_context`; a compaction it makes is told to
        listeners as ``compaction_start`` / ``compaction_end``).

        Raises:
            AgentHarnessError: ``compaction`` or ``context_too_large``.
        """
        return await self._context.prepare_context(instructions=instructions)

    @property
    def busy(self) -> bool:
        """Whether a run is in progress."""
        return self._task is not None and not self._task.done()

    def _check_idle(self, what: str) -> None:
        if self.busy:
            raise AgentHarnessError(
                "busy",
                f"{what} while the agent is running; await wait_for_idle() first",
                session_id=self.session.id,
            )

    async def append_message(self, message: AgentMessage | Mapping[str, Any]) -> str:
        """Append a message under the leaf (see :meth:`Session.append_message`); returns its id.

        Raises:
            AgentHarnessError: ``busy`` — a run is active (its messages own the leaf).
            InvalidEntryError: the message does not validate or is provider-shaped.
        """
        self._check_idle("append_message")
        return await self._context.append_message(message)

    async def append_label(self, target_id: str, label: str | None) -> str:
        """Label an entry (see :meth:`Session.append_label`); returns the label entry's id."""
        return await self._context.append_label(target_id, label)

    async def append_custom_entry(self, custom_type: str, data: Any) -> str:
        """Store application state the model never sees; returns the entry's id.

        Raises:
            AgentHarnessError: ``busy`` — a run is active.
        """
        self._check_idle("append_custom_entry")
        return await self._context.append_custom_entry(custom_type, data)

    async def fork(self, target_id: str, position: ForkPosition = "at") -> Session:
        """A new session holding the path to ``target_id`` (see :meth:`Session.fork`); run it
        with ``AgentHarness(forked, model=...)``."""
        return await self._context.fork(target_id, position)

    async def compact(self, *, instructions: str | None = None) -> CompactionEntry:
        """Compact now, whatever the context size (a user's ``/compact``).

        Raises:
            AgentHarnessError: ``busy``, ``nothing_to_compact`` or ``compaction`` (cause
                attached).
        """
        self._check_idle("compact")
        return await self._context.compact(instructions=instructions)

    async def navigate_tree(
        self,
        target_id: str | None,
        *,
        summarize: bool = False,
        instructions: str | None = None,
        label: str | None = None,
    ) -> str | None:
        """Move the leaf to ``target_id`` (see :meth:`ContextHarness.navigate_tree`).

        Raises:
            AgentHarnessError: ``busy``; ``branch_summary`` — the summariser failed; nothing
                changed, so the caller may retry with ``summarize=False``.
            EntryNotFoundError / InvalidEntryError: a bad target.
        """
        self._check_idle("navigate_tree")
        return await self._context.navigate_tree(
            target_id, summarize=summarize, instructions=instructions, label=label
        )

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
            SessionBusyError: with ``lease``, another writer holds the session's lease
                (``wait``: still, when the wait ran out); nothing was written.
            LeaseLostError: with ``lease``, another writer took the session over during the
                run (the lease expired unrenewed); the write that found it changed nothing.
        """
        if self.busy or self._leasing:
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
        lease: Lease | None = None
        if self.lease is not None:
            self._leasing = True
            try:
                lease = await acquire(self.session, self.lease_owner, self.lease)
            finally:
                self._leasing = False
        self._aborting = False
        self._accepting = True
        self._steering, self._follow_ups = [], []
        self._started = asyncio.Event()
        self._task = asyncio.create_task(self._leased_run(message, lease))
        return await self._task

    async def _leased_run(self, user: UserMessage, lease: Lease | None) -> AssistantMessage:
        """:meth:`_run`, under ``lease`` (renewed while it runs, released when it ends) when
        there is one."""
        if lease is None or self.lease is None:
            return await self._run(user)
        async with keep_lease(self.session, lease, self.lease):
            return await self._run(user)

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

    # ------------------------------------------------------------------ writes during a run

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

    async def _persist(
        self,
        message: AgentMessage,
        *,
        announced: bool = False,
        draft: DraftWriter | None = None,
        before: AssistantMessage | None = None,
    ) -> AgentMessage:
        """Append ``message``, then tell listeners it ended (``message_start`` first unless
        the streamed answer already announced it). An answer saved as a draft is stored
        under the draft's entry id, then the draft is cleared. ``before``: a record stored
        just before it, in the same shielded write, that listeners do not hear of (the
        usage of the failed attempts of ``message``, whose ``retry_scheduled`` they heard)."""
        if not announced:
            await self._emit("message_start", message=message)
        # An abort never cuts a write short: the append finishes, then the cancellation goes
        # on (else a message could be lost, or land after the aborted reply that follows).
        write = asyncio.ensure_future(self._store_answer(message, draft, before))
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            await write
            raise
        await self._emit("message_end", message=message)
        return message

    async def _store_answer(
        self,
        message: AgentMessage,
        draft: DraftWriter | None,
        before: AssistantMessage | None = None,
    ) -> None:
        if draft is not None:
            await draft.stop()
        if before is not None:
            await self.session.append_message(before)
        if draft is None:
            self._answer_id = await self.session.append_message(message)
            return
        self._answer_id = await self.session.append_message(message, entry_id=draft.entry_id)
        await draft.clear()

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
        # the partial answer of a run whose process died becomes an interrupted message,
        # and the tool calls it left without results get them
        await self.session.settle_draft()
        await self._settle_tools()
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
        spent: Usage | None = None  # what the failed attempts of this answer cost
        failed, last_error = 0, ""
        while True:
            attempt += 1
            try:
                request = await self._request()
            except AgentHarnessError as exc:
                if exc.code not in ("context_too_large", "compaction"):
                    raise
                return await self._failed(str(exc), spent)
            self._offered = self._active_tools(request)
            try:
                reply = await self._stream(request)
            except ModelError as exc:
                spent = _add_usage(spent, self._attempt_usage)
                failed, last_error = failed + 1, str(exc)
                if exc.kind == "auth":
                    raise AgentHarnessError("auth", str(exc), session_id=self.session.id) from exc
                if exc.kind == "overflow" and not overflow_retried:
                    overflow_retried = True
                    if await self._compact_for_overflow():
                        attempt = 0
                        continue
                    return await self._failed(str(exc), spent)
                if exc.transient and attempt < self.retry.max_attempts:
                    delay = self.retry.delay_s(attempt, exc.retry_after_s)
                    await self._emit(
                        "retry_scheduled",
                        data={"attempt": attempt, "delay_s": delay, "error": str(exc)},
                    )
                    await asyncio.sleep(delay)
                    continue
                return await self._failed(str(exc), spent)
            # what failed attempts cost is kept as an `error` answer of its own just before
            # this one (added to this answer's usage, it would misstate its context size)
            record = (
                None
                if spent is None
                else self._error_reply(
                    f"{RETRIED_PREFIX} {failed} failed attempt(s) before the next answer; the "
                    f"last: {last_error}",
                    spent,
                )
            )
            await self._persist(reply, announced=self._announced, draft=self._draft, before=record)
            return reply

    async def _compaction_event(self, type: str, data: dict[str, Any]) -> None:
        """The context part's compaction events (``compaction_start`` / ``compaction_end``
        when :meth:`prepare_context` compacts), heard as :class:`AgentEvent` s."""
        await self._emit(type, data=data)

    async def _compact_for_overflow(self) -> bool:
        await self._emit("compaction_start", data={"reason": "overflow"})
        try:
            entry = await self._context._compact(None, keep_recent_tokens=0)
        except Exception as exc:
            await self._emit("compaction_end", data={"reason": "overflow", "error": str(exc)})
            return False
        self._context.last_compaction = entry
        await self._emit("compaction_end", data={"reason": "overflow", "entry_id": entry.id})
        return True

    async def _failed(self, error: str, usage: Usage | None = None) -> AssistantMessage:
        """Store the ``error`` answer saying ``error``, with the ``usage`` its failed
        attempts reported (what they cost: ``sessiontree usage`` counts it)."""
        reply = self._error_reply(error, usage)
        await self._persist(reply)
        return reply

    def _error_reply(self, error: str, usage: Usage | None) -> AssistantMessage:
        """An ``error`` answer saying ``error``, with ``usage``."""
        model = self.model
        return AssistantMessage(
            content=[],
            provider=getattr(model, "provider", None),
            model=getattr(model, "model_id", None),
            usage=usage or Usage(),
            stop_reason="error",
            error_message=error,
            timestamp=now_ms(),
        )

    async def _stream(self, request: ModelRequest) -> AssistantMessage:
        """Stream one answer, emitting ``message_update`` per delta; when cancelled the
        partial answer is persisted (``aborted``) and the cancellation goes on."""
        assert self.model is not None
        acc = Accumulator()
        started = self._announced = False
        self._attempt_usage = None
        draft = self._draft = await self._draft_writer(acc)
        try:
            async for event in self.model.stream(request):
                if isinstance(event, Done):
                    return event.message.model_copy(update={"timestamp": now_ms()})
                if isinstance(event, UsageDelta):  # bookkeeping, not part of the answer
                    self._attempt_usage = event.usage
                    continue
                if not started:
                    started = self._announced = True
                    await self._emit("message_start", message=AssistantMessage())
                if isinstance(event, TextDelta):
                    acc.text(event.text)
                elif isinstance(event, ThinkingDelta):
                    acc.thinking(event.thinking)
                elif isinstance(event, ToolCallDelta):
                    acc.tool(event.index, event.id, event.name, event.arguments)
                if draft is not None:
                    draft.changed()
                await self._emit("message_update", delta=event)
        except asyncio.CancelledError:
            # abort(), or the caller's task cancelled (Ctrl-C): the partial answer is kept
            self._last_aborted = await self._aborted_reply(
                acc, self.model, announced=started, draft=draft
            )
            raise
        except BaseException:
            # a failed attempt's partial answer is dropped (retried, or stored as an error)
            if draft is not None:
                await draft.clear()
            raise
        if draft is not None:
            await draft.clear()
        raise ModelError("connection", "the model's stream ended without a complete answer")

    async def _draft_writer(self, acc: Accumulator) -> DraftWriter | None:
        """The writer that saves the answer streaming into ``acc`` as the session's draft;
        ``None`` when drafts are off."""
        if self.draft_interval_s is None:
            return None
        model = self.model

        def snapshot() -> AssistantMessage:
            return AssistantMessage(
                content=acc.content(),
                provider=getattr(model, "provider", None),
                model=getattr(model, "model_id", None),
                usage=self._attempt_usage,
                timestamp=now_ms(),
            )

        leaf = await self.session.get_leaf_id()
        return DraftWriter(self.session, leaf, self.draft_interval_s, snapshot)

    async def _aborted_reply(
        self,
        acc: Accumulator,
        model: Model | None,
        *,
        announced: bool = False,
        draft: DraftWriter | None = None,
    ) -> AssistantMessage:
        # Tool calls still being streamed cannot be run; only text and thinking are kept.
        content = [b for b in acc.content() if b["type"] != "toolCall"]
        reply = AssistantMessage(
            content=content,
            provider=getattr(model or self.model, "provider", None),
            model=getattr(model or self.model, "model_id", None),
            usage=(self._attempt_usage or Usage()) if model is not None else Usage(),
            stop_reason="aborted",
            error_message="aborted",
            timestamp=now_ms(),
        )
        await self._persist(reply, announced=announced, draft=draft)
        return reply

    def _recorder(
        self, entry_id: str | None, before: Iterable[str] = ()
    ) -> Callable[[Sequence[ToolCall]], Awaitable[None]] | None:
        """The ``record`` of a :class:`ToolBatch` answering the calls of entry ``entry_id``:
        it saves the ids of the calls started (after ``before``, recorded earlier) as the
        session's :class:`~sessiontree.drafts.ToolRun`."""
        if entry_id is None:
            return None
        earlier = tuple(before)

        async def record(started: Sequence[ToolCall]) -> None:
            ids = earlier + tuple(c.id for c in started if c.id not in earlier)
            await self.session.put_tool_run(ToolRun(entry_id, ids, now_ms()))

        return record

    async def _run_tools(self, reply: AssistantMessage, calls: list[ToolCall]) -> None:
        """Run a batch and persist one result per call, in call order (also on abort). The
        calls are recorded as started before they run, and the record cleared once every
        result is stored (docs/harness.md "Tool calls across a crash")."""
        tools = self._offered
        batch = ToolBatch(
            calls,
            tools,
            sequential=self.tool_execution == "sequential",
            truncated=reply.stop_reason == "length",
            emit=self._emit,
            record=self._recorder(self._answer_id),
        )
        try:
            await batch.run()
        finally:
            for result in batch.results():
                await self._persist(result)
            await self.session.put_tool_run(None)

    async def _settle_tools(self) -> None:
        """Answer the tool calls a run whose process died left without results: a call of a
        tool declared ``replay="safe"`` runs again; any other gets an ``isError`` result
        saying it was interrupted (:data:`~sessiontree.drafts.TOOL_INTERRUPTED`) or, when
        the record shows it never started, not run
        (:data:`~sessiontree.drafts.TOOL_NOT_STARTED`). Results are stored in call order,
        then the record is cleared. A call without a record counts as interrupted (it may
        have run)."""
        run = await self.session.get_tool_run()
        found = await unanswered_calls(self.session)
        if found is None:
            if run is not None:
                await self.session.put_tool_run(None)
            return
        entry_id, waiting = found
        known = run is not None and run.entry_id == entry_id
        started = set(run.started) if run is not None and known else {c.id for c in waiting}
        positions = [
            k
            for k, c in enumerate(waiting)
            if (t := self.tools.get(c.name)) is not None and t.replay == "safe"
        ]
        batch = ToolBatch(
            [waiting[k] for k in positions],
            self.tools,
            sequential=self.tool_execution == "sequential",
            truncated=False,
            emit=self._emit,
            record=self._recorder(entry_id, sorted(started)),
        )
        try:
            await batch.run()
        finally:
            replayed = dict(zip(positions, batch.results(), strict=True))
            for k, call in enumerate(waiting):
                result: ToolResultMessage | None = replayed.get(k)
                if result is None:
                    text = TOOL_INTERRUPTED if call.id in started else TOOL_NOT_STARTED
                    result = error_result(call, text)
                await self._persist(result)
            await self.session.put_tool_run(None)


def _add_usage(total: Usage | None, more: Usage | None) -> Usage | None:
    """``total`` plus ``more`` (counts and costs added); ``None`` when both are."""
    if more is None or total is None:
        return more or total
    cost = None
    if total.cost is not None or more.cost is not None:
        a, b = total.cost or Cost(), more.cost or Cost()
        cost = Cost(
            input=a.input + b.input,
            output=a.output + b.output,
            cache_read=a.cache_read + b.cache_read,
            cache_write=a.cache_write + b.cache_write,
            total=a.total + b.total,
        )
    return Usage(
        input=total.input + more.input,
        output=total.output + more.output,
        cache_read=total.cache_read + more.cache_read,
        cache_write=total.cache_write + more.cache_write,
        total_tokens=total.total_tokens + more.total_tokens,
        cost=cost,
    )
