"""``ContextHarness``: the context-window keeping an agent runs around a session.

:class:`~sessiontree.harness.agent.AgentHarness` owns one and also calls the model. An
agent that calls its model itself asks the harness for the context before every model call;
:meth:`AgentHarness.prepare_context` builds it, estimates its size
(:func:`~sessiontree.compaction.estimate_context_tokens`) and, when
:func:`~sessiontree.compaction.should_compact` says the window is nearly full, compacts first
and builds again. :meth:`AgentHarness.navigate_tree` moves through the tree, optionally
summarising the branch left. Typical use::

    harness = ContextHarness(session, context_window=200_000)
    ctx = await harness.prepare_context()
    reply = await call_model(ctx.system_prompt, to_llm_messages(ctx.messages))
    await harness.append_message(reply)

Failures surface as :class:`~sessiontree.errors.AgentHarnessError` with a ``code``
(``compaction``, ``context_too_large``, ``branch_summary``); the session is unchanged when
one is raised, except that a compaction that was made stays.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NoReturn

from sessiontree.compaction import (
    CompactionMode,
    CompactionSettings,
    TokenCounter,
    check_mode,
    coerce_settings,
    compact,
    estimate_context_tokens,
    estimate_tokens,
    prepare_compaction,
)
from sessiontree.context import EntryProjector, SessionContext
from sessiontree.entries import CompactionEntry
from sessiontree.errors import AgentHarnessError, CompactionError, SummaryError
from sessiontree.messages import AgentMessage
from sessiontree.session import Session
from sessiontree.summarizers.base import Summarizer
from sessiontree.tree import ForkPosition

__all__ = ["ContextHarness"]


class ContextHarness:
    """Keeps a :class:`Session` inside a model's context window.

    Args:
        session: the session the agent appends to.
        context_window: the model's context window (tokens).
        settings: when to compact and how much to keep; defaults to
            :class:`~sessiontree.compaction.CompactionSettings`.
        summarizer: for compactions and branch summaries; ``None`` = the offline
            :class:`~sessiontree.summarizers.extractive.ExtractiveSummarizer`.
        compaction_mode: ``"pointer"`` (pi-compatible) or ``"retained_tail"``.
        system_prompt: passed to context building (else the session metadata's).
        entry_projectors: projectors for ``custom`` entries.
        token_counter: per-message estimate (tokens).
        on_compaction: awaited with ``("compaction_start", data)`` before
            :meth:`prepare_context` compacts because the window is nearly full and
            ``("compaction_end", data)`` after (``data``: ``reason`` ``"threshold"``, the
            ``entry_id`` of the newest compaction made, ``error`` when the context still
            could not be prepared); the agent harness tells its listeners.

    Attributes:
        last_compaction: the compaction entry the harness appended most recently, if any.
        last_context_tokens: the size of the context :meth:`prepare_context` returned (tokens).

    Raises:
        AgentHarnessError: ``invalid_settings`` for a ``context_window`` that is not a positive
            int, a bad ``settings`` (a mapping is validated into
            :class:`~sessiontree.compaction.CompactionSettings`) or ``compaction_mode``, a
            ``token_counter`` that is not callable, or settings whose kept tokens plus reserve
            do not fit in the window (compaction would then fire on every turn).
    """

    def __init__(
        self,
        session: Session,
        *,
        context_window: int,
        settings: CompactionSettings | Mapping[str, Any] | None = None,
        summarizer: Summarizer | None = None,
        compaction_mode: CompactionMode = "pointer",
        system_prompt: str | None = None,
        entry_projectors: Mapping[str, EntryProjector] | None = None,
        token_counter: TokenCounter = estimate_tokens,
        on_compaction: Callable[[str, dict[str, Any]], Awaitable[None]] | None = None,
    ) -> None:
        if isinstance(context_window, bool) or not isinstance(context_window, int):
            raise AgentHarnessError(
                "invalid_settings",
                f"context_window must be an int (tokens), not {context_window!r}",
                session_id=session.id,
            )
        if context_window <= 0:
            raise AgentHarnessError(
                "invalid_settings", "context_window must be > 0 tokens", session_id=session.id
            )
        if not callable(token_counter):
            raise AgentHarnessError(
                "invalid_settings", "token_counter must be callable", session_id=session.id
            )
        try:
            self.settings: CompactionSettings = coerce_settings(settings)
            self.compaction_mode: CompactionMode = check_mode(compaction_mode)
        except CompactionError as exc:
            raise AgentHarnessError("invalid_settings", exc.detail, session_id=session.id) from exc
        self.session = session
        self.context_window = context_window
        if self.settings.keep_recent_tokens + self.settings.reserve_tokens >= context_window:
            # What is kept would already fill the window: compaction would fire every turn.
            raise AgentHarnessError(
                "invalid_settings",
                f"keep_recent_tokens ({self.settings.keep_recent_tokens}) + reserve_tokens "
                f"({self.settings.reserve_tokens}) must be below context_window "
                f"({context_window} tokens)",
                session_id=session.id,
            )
        self.summarizer = summarizer
        self.system_prompt = system_prompt
        self.entry_projectors = entry_projectors
        self.token_counter = token_counter
        self._on_compaction = on_compaction
        self.last_compaction: CompactionEntry | None = None
        self.last_context_tokens = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.session!r}, context_window={self.context_window})"

    async def _build(self) -> SessionContext:
        return await self.session.build_context(
            system_prompt=self.system_prompt, entry_projectors=self.entry_projectors
        )

    async def prepare_context(self, *, instructions: str | None = None) -> SessionContext:
        """The context for the next model call, compacted first when the window is nearly full.

        The context returned always fits ``context_window - reserve_tokens`` (estimated with
        the token counter). When the built context does not (and compaction is enabled), one
        compaction is appended and the context built again; when that still does not fit
        (the tail ``keep_recent_tokens`` keeps holds a large tool batch), a second compaction
        keeps only what cannot be cut (the newest turn from its nearest cut point).

        Args:
            instructions: passed to the summariser if a compaction runs.

        Returns:
            The :class:`SessionContext`; :attr:`last_context_tokens` holds its size.

        Raises:
            AgentHarnessError: ``compaction`` — the summariser failed, its summary would not
                shrink the context, or the leaf moved (the original error is ``__cause__``);
                ``context_too_large`` — even after compacting, what cannot be summarised (the
                newest messages from the last cut point: a user message or an assistant
                message with its tool results) exceeds the window, or compaction is disabled.
        """
        ctx = await self._build()
        tokens = estimate_context_tokens(ctx.messages, counter=self.token_counter)
        limit = self.context_window - self.settings.reserve_tokens
        if tokens <= limit:
            self.last_context_tokens = tokens
            return ctx
        floor = await self._uncuttable_tokens(tokens)
        if not self.settings.enabled or floor > limit:
            self._too_large(tokens, floor, limit)
        await self._compaction_event("compaction_start", {"reason": "threshold"})
        made: CompactionEntry | None = None
        try:
            # The keep budget first; when what it keeps still does not fit (a large tool
            # batch in the kept tail), keep only what no compaction can cut.
            budgets = (self.settings.keep_recent_tokens, 0)
            for attempt, keep in enumerate(budgets):
                if tokens <= limit:
                    break
                try:
                    made = await self._compact(instructions, keep_recent_tokens=keep)
                except CompactionError as exc:
                    tighter_left = attempt < len(budgets) - 1
                    if exc.code == "nothing_to_compact" or (
                        exc.code == "summary_not_smaller" and tighter_left
                    ):
                        continue
                    raise AgentHarnessError(
                        "compaction",
                        f"compaction failed: {exc.detail}",
                        session_id=self.session.id,
                    ) from exc
                self.last_compaction = made
                ctx = await self._build()
                tokens = estimate_context_tokens(ctx.messages, counter=self.token_counter)
            if tokens > limit:
                self._too_large(tokens, floor, limit)
        except BaseException as exc:  # also an abort: a compaction_start always gets its end
            await self._compaction_event(
                "compaction_end", self._compaction_end_data(made, str(exc) or type(exc).__name__)
            )
            raise
        await self._compaction_event("compaction_end", self._compaction_end_data(made, None))
        self.last_context_tokens = tokens
        return ctx

    @staticmethod
    def _compaction_end_data(made: CompactionEntry | None, error: str | None) -> dict[str, Any]:
        data: dict[str, Any] = {"reason": "threshold"}
        if made is not None:
            data["entry_id"] = made.id
        if error is not None:
            data["error"] = error
        return data

    async def _compaction_event(self, type: str, data: dict[str, Any]) -> None:
        """Tell ``on_compaction`` (if given) of a compaction :meth:`prepare_context` makes."""
        if self._on_compaction is not None:
            await self._on_compaction(type, data)

    async def _uncuttable_tokens(self, tokens: int) -> int:
        """Tokens of what no compaction can take out of the context: the messages from the
        newest valid cut point to the leaf (a tool batch stays whole with its call);
        ``tokens`` when there is no cut point at all."""
        settings = dataclasses.replace(self.settings, keep_recent_tokens=0)
        try:
            plan = prepare_compaction(
                await self.session.get_branch(),
                settings,
                token_counter=self.token_counter,
                entry_projectors=self.entry_projectors,
                session_id=self.session.id,
            )
        except CompactionError:
            return tokens
        return plan.kept_tokens

    def _too_large(self, tokens: int, floor: int, limit: int) -> NoReturn:
        if not self.settings.enabled:
            why = "compaction is disabled"
        else:
            why = (
                f"the newest messages, which no compaction can cut (a user message, or an "
                f"assistant message with its tool results, and what follows), take {floor} "
                "tokens alone; shorten the tool output or use a model with a larger window"
            )
        raise AgentHarnessError(
            "context_too_large",
            f"the context takes {tokens} tokens, over the {limit} that fit (context_window "
            f"{self.context_window} - reserve_tokens {self.settings.reserve_tokens}): {why}",
            session_id=self.session.id,
        )

    async def _compact(
        self, instructions: str | None, *, keep_recent_tokens: int | None = None
    ) -> CompactionEntry:
        """:func:`compact` with this harness's settings (``keep_recent_tokens`` overriding the
        kept budget), summariser, mode and counters."""
        settings = self.settings
        if keep_recent_tokens is not None and keep_recent_tokens != settings.keep_recent_tokens:
            settings = dataclasses.replace(settings, keep_recent_tokens=keep_recent_tokens)
        return await compact(
            self.session,
            settings=settings,
            summarizer=self.summarizer,
            mode=self.compaction_mode,
            instructions=instructions,
            entry_projectors=self.entry_projectors,
            token_counter=self.token_counter,
        )

    @property
    def busy(self) -> bool:
        """Whether an agent run owns the leaf: never, for a harness that runs no model (an
        :class:`~sessiontree.harness.agent.AgentHarness` refuses writes during its runs)."""
        return False

    async def append_message(self, message: AgentMessage | Mapping[str, Any]) -> str:
        """Append a message under the leaf (see :meth:`Session.append_message`); returns its id.

        Raises:
            InvalidEntryError: the message does not validate or is provider-shaped.
        """
        return await self.session.append_message(message)

    async def append_label(self, target_id: str, label: str | None) -> str:
        """Label an entry (see :meth:`Session.append_label`); returns the label entry's id."""
        return await self.session.append_label(target_id, label)

    async def append_custom_entry(self, custom_type: str, data: Any) -> str:
        """Store application state the model never sees; returns the entry's id."""
        return await self.session.append_custom_entry(custom_type, data)

    async def fork(self, target_id: str, position: ForkPosition = "at") -> Session:
        """A new session holding the path to ``target_id`` (see :meth:`Session.fork`); run it
        with ``AgentHarness(forked, model=...)``."""
        return await self.session.fork(target_id, position)

    async def compact(self, *, instructions: str | None = None) -> CompactionEntry:
        """Compact now, whatever the context size (a user's ``/compact``).

        Raises:
            AgentHarnessError: ``nothing_to_compact`` or ``compaction`` (cause attached).
        """
        try:
            entry = await self._compact(instructions)
        except CompactionError as exc:
            code = "nothing_to_compact" if exc.code == "nothing_to_compact" else "compaction"
            raise AgentHarnessError(code, exc.detail, session_id=self.session.id) from exc
        self.last_compaction = entry
        return entry

    async def navigate_tree(
        self,
        target_id: str | None,
        *,
        summarize: bool = False,
        instructions: str | None = None,
        label: str | None = None,
    ) -> str | None:
        """Move the leaf to ``target_id``; with ``summarize``, summarise the branch left (docs/branching.md);
        with ``label``, label the target.

        Returns:
            The id of the ``branch_summary`` appended, else ``None``.

        Raises:
            AgentHarnessError: ``branch_summary`` — the summariser failed; nothing
                changed, so the caller may retry with ``summarize=False``.
            EntryNotFoundError / InvalidEntryError: a bad target.
        """
        try:
            summary_id = await self.session.navigate(
                target_id,
                summarize=summarize,
                summarizer=self.summarizer,
                instructions=instructions,
            )
        except SummaryError as exc:
            raise AgentHarnessError(
                "branch_summary",
                f"summarising the branch left failed: {exc.detail}",
                session_id=self.session.id,
                entry_id=target_id,
            ) from exc
        if label is not None and target_id is not None:
            await self.session.append_label(target_id, label)
        return summary_id
