"""Saving a streaming reply as it arrives, so a crash loses at most one interval of it.

A :class:`DraftWriter` belongs to one model answer. The stream tells it each time something
arrived (:meth:`DraftWriter.changed`); a background task then saves the reply so far as the
session's draft (:meth:`sessiontree.Session.put_draft`) once ``interval_s`` has passed since
the previous save, so what arrived is saved within ``interval_s`` plus one write, whether or
not more arrives after it, and the slot is written at most once per interval. The draft is
one slot, overwritten: the log gains no entry per chunk (docs/harness.md "Durable streaming").

:func:`unanswered_calls` finds the tool calls a run left without results when its process
died (docs/harness.md "Tool calls across a crash").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from sessiontree.drafts import Draft
from sessiontree.entries import MessageEntry
from sessiontree.ids import new_id, now_ms
from sessiontree.messages import AssistantMessage, ToolCall, ToolResultMessage
from sessiontree.session import Session

__all__ = ["DEFAULT_DRAFT_INTERVAL_S", "DraftWriter", "unanswered_calls"]

DEFAULT_DRAFT_INTERVAL_S = 0.1
"""How often a streaming reply is saved, at most (seconds): what a crash may lose."""

log = logging.getLogger(__name__)


class DraftWriter:
    """Saves one streaming answer as the session's draft, at most every ``interval_s``.

    Args:
        session: where the draft goes.
        parent_id: the entry the answer hangs under (the leaf when it started).
        interval_s: seconds between two saves, at least.
        snapshot: the answer so far (called on the event loop at each save).
    """

    def __init__(
        self,
        session: Session,
        parent_id: str | None,
        interval_s: float,
        snapshot: Callable[[], AssistantMessage],
    ) -> None:
        self.session = session
        self.parent_id = parent_id
        self.interval_s = interval_s
        self.entry_id = new_id()
        """The id the answer's message entry gets, complete or interrupted."""
        self._snapshot = snapshot
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._writing = False
        self._stopped = False
        self.saved = False
        """Whether a draft was written (so the slot must be cleared once the answer is stored)."""

    def changed(self) -> None:
        """Something arrived: it is saved within ``interval_s`` (plus one write)."""
        if self._stopped:
            return
        self._dirty.set()
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time() - self.interval_s
        while not self._stopped:
            await self._dirty.wait()
            wait = last + self.interval_s - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if self._stopped:
                return
            self._dirty.clear()
            draft = Draft(self.entry_id, self.parent_id, self._snapshot(), now_ms())
            self._writing = True
            try:
                if not await self.session.put_draft(draft):
                    self._stopped = True  # the storage has no draft slot
                    return
                self.saved = True
            except Exception:
                # a failed save loses durability, not the answer: the stream goes on
                log.warning(
                    "cannot save the draft reply of session %s", self.session.id, exc_info=True
                )
            finally:
                self._writing = False
            last = loop.time()

    async def stop(self) -> None:
        """Stop saving; a save under way finishes first (so none lands after the draft is
        cleared)."""
        self._stopped = True
        task = self._task
        if task is None or task.done():
            return
        if self._writing:
            self._dirty.set()
            await asyncio.shield(task)
        else:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def clear(self) -> None:
        """Stop saving and clear the draft (after the answer's entry is stored)."""
        await self.stop()
        if self.saved:
            await self.session.put_draft(None)


async def unanswered_calls(session: Session) -> tuple[str, list[ToolCall]] | None:
    """The tool calls at the session's leaf still waiting for a result: the id of the
    assistant message entry holding them and those calls, in call order; ``None`` when every
    call there has one (or the leaf is no such message).

    It reads back from the leaf over the tool results stored so far to the assistant message
    they answer (one entry read each). An answer that failed or was aborted is never sent to
    a model, so its calls wait for nothing.
    """
    leaf = await session.get_leaf_id()
    entry = None if leaf is None else await session.get_entry(leaf)
    answered: set[str] = set()
    while isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage):
        answered.add(entry.message.tool_call_id)
        entry = None if entry.parent_id is None else await session.get_entry(entry.parent_id)
    if not (isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage)):
        return None
    if entry.message.stop_reason in ("error", "aborted"):
        return None
    waiting = [c for c in entry.message.tool_calls() if c.id not in answered]
    return (entry.id, waiting) if waiting else None
