"""``AgentHarness``: the context-window loop an agent runs around a session (docs/api.md).

An agent asks the harness for the context before every model call;
:meth:`AgentHarness.prepare_context` builds it, estimates its size
(:func:`~sessiontree.compaction.estimate_context_tokens`) and, when
:func:`~sessiontree.compaction.should_compact` says the window is nearly full, compacts first
and builds again. :meth:`AgentHarness.navigate_tree` moves through the tree, optionally
summarising the branch left. Typical use::

    harness = AgentHarness(session, context_window=200_000)
    ctx = await harness.prepare_context()
    reply = await call_model(ctx.system_prompt, to_llm_messages(ctx.messages))
    await harness.append_message(reply)

Failures surface as :class:`~sessiontree.errors.AgentHarnessError` with a ``code``
(``compaction``, ``branch_summary``); the session is unchanged when one is raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessiontree.compaction import (
    CompactionMode,
    CompactionSettings,
    TokenCounter,
    check_mode,
    coerce_settings,
    compact,
    estimate_context_tokens,
    estimate_tokens,
    should_compact,
)
from sessiontree.context import EntryProjector, SessionContext
from sessiontree.entries import CompactionEntry
from sessiontree.errors import AgentHarnessError, CompactionError, SummaryError
from sessiontree.messages import AgentMessage
from sessiontree.session import Session
from sessiontree.summarizers.base import Summarizer

__all__ = ["AgentHarness"]


class AgentHarness:
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
        self.last_compaction: CompactionEntry | None = None
        self.last_context_tokens = 0

    def __repr__(self) -> str:
        return f"AgentHarness({self.session!r}, context_window={self.context_window})"

    async def _build(self) -> SessionContext:
        return await self.session.build_context(
            system_prompt=self.system_prompt, entry_projectors=self.entry_projectors
        )

    async def prepare_context(self, *, instructions: str | None = None) -> SessionContext:
        """The context for the next model call, compacted first when the window is nearly full.

        When the built context exceeds ``context_window - reserve_tokens`` (and compaction is
        enabled), one compaction is appended and the context is built again. When nothing can
        be compacted (everything fits ``keep_recent_tokens``), the context is returned as is;
        a summary that would not shrink the context is an error (swallowed, it would leave the
        context over the window and re-run the summariser on every turn).

        Args:
            instructions: passed to the summariser if a compaction runs.

        Returns:
            The :class:`SessionContext`; :attr:`last_context_tokens` holds its size.

        Raises:
            AgentHarnessError: ``compaction`` — the summariser failed, its summary would not
                shrink the context, or the leaf moved; the session is unchanged and the
                original error is ``__cause__``.
        """
        ctx = await self._build()
        tokens = estimate_context_tokens(ctx.messages, counter=self.token_counter)
        if should_compact(tokens, self.context_window, self.settings):
            try:
                self.last_compaction = await self._compact(instructions)
            except CompactionError as exc:
                if exc.code != "nothing_to_compact":
                    raise AgentHarnessError(
                        "compaction", f"compaction failed: {exc.detail}", session_id=self.session.id
                    ) from exc
            else:
                ctx = await self._build()
                tokens = estimate_context_tokens(ctx.messages, counter=self.token_counter)
        self.last_context_tokens = tokens
        return ctx

    async def _compact(self, instructions: str | None) -> CompactionEntry:
        """:func:`compact` with this harness's settings, summariser, mode and counters."""
        return await compact(
            self.session,
            settings=self.settings,
            summarizer=self.summarizer,
            mode=self.compaction_mode,
            instructions=instructions,
            entry_projectors=self.entry_projectors,
            token_counter=self.token_counter,
        )

    async def append_message(self, message: AgentMessage | Mapping[str, Any]) -> str:
        """Append a message under the leaf (see :meth:`Session.append_message`); returns its id."""
        return await self.session.append_message(message)

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
    ) -> str | None:
        """Move the leaf to ``target_id``; with ``summarize``, summarise the branch left (docs/branching.md).

        Returns:
            The id of the ``branch_summary`` appended, else ``None``.

        Raises:
            AgentHarnessError: ``branch_summary`` — the summariser failed; nothing changed, so
                the caller may retry with ``summarize=False``.
            EntryNotFoundError / InvalidEntryError: a bad target.
        """
        try:
            return await self.session.navigate(
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
