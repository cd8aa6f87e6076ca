"""The context, diff, stats and entry views of a session, read through its public methods.

* :func:`context_view` — the context the next model call gets, its token estimate and where a
  compaction would cut (reads the branch, which is what it shows);
* :func:`diff_view` — two branches from their common ancestor;
* :func:`stats_view` — counts, tokens and cost (reads every entry).

Each reads what it needs through the session on the caller's event loop, then does the work
that grows with the session (building the context, planning a compaction, counting, making
the rows and message views) in a worker thread (:func:`off_loop`): on a session of 100,000
entries that work takes seconds, and the server's other pages must not wait behind it.

The tree page is :mod:`sessiontree.web.tree`.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sessiontree.compaction import estimate_context_tokens, estimate_tokens, prepare_compaction
from sessiontree.context import build_context_from_path
from sessiontree.entries import Entry, dump_entry
from sessiontree.errors import CompactionError
from sessiontree.messages import AgentMessage, AssistantMessage, ToolResultMessage
from sessiontree.session import Session, stats_of
from sessiontree.storage.base import ContextBranchReader
from sessiontree.tree import labels_of
from sessiontree.web.render import MessageView, message_views, pretty_json
from sessiontree.web.tree import Row, make_row, results_by_call

__all__ = [
    "CONTEXT_SHOWN",
    "ContextView",
    "DiffView",
    "context_view",
    "diff_view",
    "entry_json",
    "off_loop",
    "stats_view",
]

T = TypeVar("T")

CONTEXT_SHOWN = 400
"""Context messages shown before the rest is folded behind a link (newest are shown)."""


async def off_loop(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` run in a worker thread (the loop's default executor); the
    calling event loop serves other requests meanwhile. ``fn`` must not touch the session's
    storage (that belongs to the loop): only data already read."""
    return await asyncio.get_running_loop().run_in_executor(
        None, functools.partial(fn, *args, **kwargs)
    )


@dataclass
class ContextView:
    """The context the next model call gets, seen from ``leaf_id``."""

    leaf_id: str | None
    system_prompt: str
    model: str | None
    thinking_level: str
    active_tools: list[str] | None
    tokens: int
    message_count: int
    messages: list[MessageView]
    hidden: int
    cut_at: int | None
    """Index in ``messages`` before which a compaction would summarise, ``None`` for none."""
    cut_note: str
    path_length: int


async def context_view(
    session: Session, leaf_id: str | None = None, *, show_all: bool = False
) -> ContextView:
    """Build the context from ``leaf_id`` (the current leaf by default) and plan a compaction.

    Reads the branch once. Shows the newest :data:`CONTEXT_SHOWN` messages unless ``show_all``.

    Raises:
        EntryNotFoundError: ``leaf_id`` names no entry.
    """
    if leaf_id is None:
        leaf_id = await session.get_leaf_id()
    path = await session.get_branch(leaf_id)
    meta = await session.get_metadata()
    return await off_loop(
        _context_view, path, leaf_id, meta.system_prompt, show_all, session_id=session.id
    )


def _context_view(
    path: Sequence[Entry],
    leaf_id: str | None,
    system_prompt: str | None,
    show_all: bool,
    *,
    session_id: str,
) -> ContextView:
    """:func:`context_view` of a branch already read (pure; runs in a worker thread)."""
    ctx = build_context_from_path(path, metadata_system_prompt=system_prompt)
    cut_at: int | None = None
    try:
        prep = prepare_compaction(path, session_id=session_id)
    except CompactionError as exc:
        note = f"a compaction now would do nothing: {exc}"
    else:
        cut_at = max(0, len(ctx.messages) - len(prep.kept_messages))
        note = (
            f"a compaction now would summarise {len(prep.summarized_messages):,} messages and "
            f"keep {len(prep.kept_messages):,} (~{prep.kept_tokens:,} tokens) from entry "
            f"{prep.first_kept_entry_id}"
        )
    messages = list(ctx.messages)
    hidden = 0 if show_all else max(0, len(messages) - CONTEXT_SHOWN)
    views = message_views(messages[hidden:])
    for view, msg in zip(views, messages[hidden:], strict=False):
        view.tokens = estimate_tokens(msg)
    shown_cut = None
    if cut_at is not None and cut_at >= hidden:
        # the cut is counted in messages; results shown beside their call take no place
        shown_cut = _view_index(messages[hidden:], cut_at - hidden)
    model = f"{ctx.model.provider}/{ctx.model.model_id}" if ctx.model else None
    return ContextView(
        leaf_id,
        ctx.system_prompt,
        model,
        ctx.thinking_level,
        ctx.active_tool_names,
        estimate_context_tokens(ctx.messages),
        len(messages),
        views,
        hidden,
        shown_cut,
        note,
        len(path),
    )


def _view_index(messages: Sequence[AgentMessage], index: int) -> int:
    """The position among paired views of message ``index`` (results beside calls drop out)."""
    paired = 0
    open_ids: dict[str, int] = {}
    for m in messages[:index]:
        if isinstance(m, ToolResultMessage) and open_ids.get(m.tool_call_id, 0) > 0:
            open_ids[m.tool_call_id] -= 1
            paired += 1
        elif isinstance(m, AssistantMessage):
            for c in m.tool_calls():
                open_ids[c.id] = open_ids.get(c.id, 0) + 1
    return index - paired


@dataclass
class DiffView:
    """Two branches from their common ancestor: the shared part's length and both tails."""

    a: str
    b: str
    ancestor: Row | None
    shared: int
    left: list[Row]
    right: list[Row]


async def diff_view(session: Session, a: str, b: str) -> DiffView:
    """The branches to ``a`` and ``b`` side by side, after their common ancestor.

    Raises:
        EntryNotFoundError: ``a`` or ``b`` names no entry.
    """
    path_a = await session.get_branch(a)
    path_b = await session.get_branch(b)
    label_entries = await session.get_entries(types={"label"})
    return await off_loop(_diff_view, a, b, path_a, path_b, label_entries)


def _diff_view(
    a: str, b: str, path_a: list[Entry], path_b: list[Entry], label_entries: list[Entry]
) -> DiffView:
    """:func:`diff_view` of branches already read (pure; runs in a worker thread)."""
    shared = 0
    for x, y in zip(path_a, path_b, strict=False):
        if x.id != y.id:
            break
        shared += 1
    labels = labels_of(label_entries)

    def rows(part: Sequence[Entry], leaf: str) -> list[Row]:
        results = results_by_call(part)
        ids = {e.id for e in part}
        return [
            make_row(e, label=labels.get(e.id), leaf_id=leaf, path_ids=ids, results=results)
            for e in part
        ]

    ancestor = None
    if shared:
        top = path_a[shared - 1]
        ancestor = make_row(top, label=labels.get(top.id), leaf_id=None, path_ids={top.id})
    return DiffView(a, b, ancestor, shared, rows(path_a[shared:], a), rows(path_b[shared:], b))


async def stats_view(session: Session) -> dict[str, Any]:
    """Counts, tokens and cost (``Session.get_stats``) and the current context's size."""
    entries = await session.get_entries()
    storage = session.storage
    if isinstance(storage, ContextBranchReader):
        path = await storage.get_context_branch(None)  # what build_context reads
    else:
        path = await session.get_branch()
    meta = await session.get_metadata()
    return await off_loop(_stats_view, entries, path, meta.system_prompt)


def _stats_view(
    entries: list[Entry], path: list[Entry], system_prompt: str | None
) -> dict[str, Any]:
    """:func:`stats_view` of entries and a branch already read (pure; runs in a worker
    thread)."""
    stats = stats_of(entries)
    ctx = build_context_from_path(path, metadata_system_prompt=system_prompt)
    return {
        "entries": stats.entry_count,
        "entries by type": stats.entries_by_type,
        "messages by role": stats.messages_by_role,
        "tool calls": stats.tool_calls,
        "roots": stats.roots,
        "compactions": stats.compactions,
        "branch summaries": stats.branch_summaries,
        "input tokens": stats.input_tokens,
        "output tokens": stats.output_tokens,
        "cache read tokens": stats.cache_read_tokens,
        "cache write tokens": stats.cache_write_tokens,
        "cost (USD)": round(stats.cost, 6),
        "context messages": len(ctx.messages),
        "context tokens (estimate)": estimate_context_tokens(ctx.messages),
    }


def entry_json(entry: Entry) -> str:
    """The stored (camelCase) JSON of an entry, indented."""
    return pretty_json(dump_entry(entry))
