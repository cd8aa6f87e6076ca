"""The tree page: a session's entries as runs and branches, one page at a time.

:func:`tree_page` reads at most :data:`PAGE_SIZE` entries in append order (``get_entries``
with ``after``/``limit``/``reverse``) and lays them out with :func:`layout_tree`. A session
that fits one page is drawn whole; a bigger one is paged, and each page reads only its own
entries plus the session's ``label`` entries (``types={"label"}``), so a 100,000-entry
session's page costs what a small one's does. :func:`whole_tree` lays out every entry (the
exports).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sessiontree.describe import describe_entry
from sessiontree.entries import (
    BOOKKEEPING_TYPES,
    BranchSummaryEntry,
    CompactionEntry,
    Entry,
    MessageEntry,
)
from sessiontree.errors import EntryNotFoundError
from sessiontree.lookup import short_id_length as unique_prefix
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    ToolResultMessage,
    message_text,
)
from sessiontree.session import Session
from sessiontree.tree import TreeNode, branch_of, build_tree, labels_of, trace_chain
from sessiontree.web.render import MessageView, clip_view, entry_message, message_view, redact

__all__ = [
    "CLIP",
    "FOLD_MIN",
    "PAGE_SIZE",
    "Fold",
    "Row",
    "Run",
    "TreePage",
    "describe",
    "layout_tree",
    "make_row",
    "results_by_call",
    "short_id_length",
    "tree_page",
    "whole_tree",
]

PAGE_SIZE = 300
"""Entries per tree page."""
CLIP = 4000
"""Characters of each text a tree page shows per block (the entry page and exports show all)."""
FOLD_MIN = 2
"""A run of this many consecutive bookkeeping / state entries is folded into one line."""
STATE_TYPES = frozenset({"model_change", "thinking_level_change", "active_tools_change", "custom"})
"""Path entries that change derived state or carry extension data, not conversation."""
GIST_WIDTH = 160


def short_id_length(ids: Iterable[str]) -> int:
    """The shortest id prefix (at least 8 characters) that tells ``ids`` apart."""
    return unique_prefix(ids)


def describe(entry: Entry) -> tuple[str, str]:
    """``(kind, one-line gist)`` of an entry, as the terminal tree shows it."""
    return describe_entry(entry, GIST_WIDTH)


@dataclass
class Row:
    """One entry in the tree: what it is and how it is marked."""

    entry: Entry
    kind: str
    gist: str
    label: str | None = None
    is_leaf: bool = False
    on_path: bool = False
    message: MessageView | None = None

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def css(self) -> str:
        """The CSS class of the row's kind (role or entry type)."""
        if isinstance(self.entry, CompactionEntry):
            return "compaction"
        if isinstance(self.entry, BranchSummaryEntry):
            return "branch-summary"
        if self.entry.type in BOOKKEEPING_TYPES or self.entry.type in STATE_TYPES:
            return "bookkeeping"
        return self.kind.split("[")[0]


@dataclass
class Fold:
    """Consecutive bookkeeping / state entries shown as one collapsible line."""

    rows: list[Row]

    @property
    def summary(self) -> str:
        kinds: dict[str, int] = {}
        for r in self.rows:
            kinds[r.entry.type] = kinds.get(r.entry.type, 0) + 1
        return ", ".join(f"{n} {k}" for k, n in kinds.items())


@dataclass
class Run:
    """A stretch of the tree with one way on: ``head`` says where it hangs."""

    head: str
    parent_id: str | None
    depth: int
    items: list[Row | Fold] = field(default_factory=list)
    current: bool = False
    open: bool = True
    parent_on_page: bool = True

    @property
    def size(self) -> int:
        return sum(len(i.rows) if isinstance(i, Fold) else 1 for i in self.items)


@dataclass
class TreePage:
    """One page of a session's tree (the whole tree when ``whole``)."""

    runs: list[Run]
    leaf_id: str | None
    first_id: str | None
    last_id: str | None
    has_before: bool
    has_after: bool
    path_known: bool
    count: int
    id_len: int = 8

    @property
    def whole(self) -> bool:
        return not self.has_before and not self.has_after


def _fold(rows: list[Row]) -> list[Row | Fold]:
    out: list[Row | Fold] = []
    pending: list[Row] = []

    def flush() -> None:
        if len(pending) >= FOLD_MIN:
            out.append(Fold(list(pending)))
        else:
            out.extend(pending)
        pending.clear()

    for r in rows:
        if r.css == "bookkeeping" and not r.label and not r.is_leaf:
            pending.append(r)
            continue
        flush()
        out.append(r)
    flush()
    return out


def results_by_call(entries: Sequence[Entry]) -> dict[str, AgentMessage]:
    """Tool results of ``entries`` by ``toolCallId`` (the first one of each id)."""
    found: dict[str, AgentMessage] = {}
    for e in entries:
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage):
            found.setdefault(e.message.tool_call_id, e.message)
    return found


def make_row(
    entry: Entry,
    *,
    label: str | None,
    leaf_id: str | None,
    path_ids: set[str],
    results: dict[str, AgentMessage] | None = None,
    redacted: bool = False,
    clip: int | None = None,
) -> Row:
    """The :class:`Row` of one entry, its message rendered (tool results beside calls),
    each text cut to ``clip`` characters when given."""
    kind, gist = describe(entry)
    msg = entry_message(entry)
    view = None
    if msg is not None:
        view = message_view(msg, redacted=redacted)
        if redacted and isinstance(msg, ToolResultMessage | BashExecutionMessage):
            gist = f"{view.title}: {redact(message_text(msg))}"
        if results and isinstance(msg, AssistantMessage):
            for block in view.blocks:
                if block.call is not None and block.call.id in results:
                    block.result = message_view(results[block.call.id], redacted=redacted)
        if clip is not None:
            clip_view(view, clip)
    return Row(
        entry,
        kind,
        gist,
        label=label,
        is_leaf=entry.id == leaf_id,
        on_path=entry.id in path_ids,
        message=view,
    )


def layout_tree(
    entries: Sequence[Entry],
    *,
    labels: dict[str, str],
    leaf_id: str | None,
    path_ids: set[str],
    session_id: str,
    redacted: bool = False,
    clip: int | None = None,
) -> list[Run]:
    """``entries`` (append order) as runs: each fork's children become branches one level down.

    Bookkeeping entries are listed after the entry that was the leaf when they were written
    (their ``parentId``); consecutive bookkeeping and state entries are folded. A run is open
    when it holds the current branch (or when the branch is not known on this page).
    Iterative, linear in ``len(entries)``.
    """
    by_id = {e.id: e for e in entries}
    after: dict[str | None, list[Entry]] = {}
    for e in entries:
        if e.type in BOOKKEEPING_TYPES:
            anchor = e.parent_id
            while (
                anchor is not None and anchor in by_id and by_id[anchor].type in BOOKKEEPING_TYPES
            ):
                anchor = by_id[anchor].parent_id
            after.setdefault(anchor if anchor in by_id else None, []).append(e)
    roots = build_tree(entries, labels, session_id=session_id)

    def rows_of(e: Entry) -> list[Row]:
        out = [
            make_row(
                e,
                label=labels.get(e.id),
                leaf_id=leaf_id,
                path_ids=path_ids,
                redacted=redacted,
                clip=clip,
            )
        ]
        for b in after.get(e.id, ()):
            out.append(
                make_row(b, label=None, leaf_id=None, path_ids=set(), redacted=redacted, clip=clip)
            )
        return out

    runs: list[Run] = []
    loose = after.get(None, [])
    if loose:
        runs.append(Run("bookkeeping entries written under entries not on this page", None, 0))
        runs[-1].items = _fold(
            [make_row(b, label=None, leaf_id=None, path_ids=set()) for b in loose]
        )
    stack: list[tuple[TreeNode, int, str]] = []
    for k, root in enumerate(reversed(roots)):
        pid = root.entry.parent_id
        if pid is None:
            head = "root" if len(roots) == 1 else f"root {len(roots) - k}/{len(roots)}"
        else:
            head = "continues from"
        stack.append((root, 0, head))
    while stack:
        node, depth, head = stack.pop()
        run = Run(head, node.entry.parent_id, depth)
        run.parent_on_page = node.entry.parent_id in by_id or node.entry.parent_id is None
        rows: list[Row] = []
        while True:
            rows.extend(rows_of(node.entry))
            if len(node.children) != 1:
                break
            node = node.children[0]
        run.items = _fold(rows)
        run.current = any(r.on_path for r in rows)
        run.open = run.current or (not path_ids and depth == 0)
        runs.append(run)
        kids = node.children
        for k, child in reversed(list(enumerate(kids, 1))):
            stack.append((child, depth + 1, f"branch {k}/{len(kids)} from"))
    return runs


async def tree_page(
    session: Session,
    *,
    after: str | None = None,
    before: str | None = None,
    start: str | None = None,
    last: bool = False,
    page_size: int = PAGE_SIZE,
) -> TreePage:
    """One page of the tree: the first one, or the page after / before an entry id, the page
    starting at an entry, or the last page.

    Reads at most ``page_size + 1`` entries, the ``label`` entries and the leaf id.

    Raises:
        EntryNotFoundError: ``after``, ``before`` or ``start`` names no entry.
    """
    has_before = has_after = False
    if start is not None:
        first = await session.find_entry(start)
        if first is None:
            raise EntryNotFoundError("no such entry", session_id=session.id, entry_id=start)
        rest = await session.get_entries(after=start, limit=page_size)
        entries = [first, *rest]
        has_after = len(entries) > page_size
        has_before = bool(await session.get_entries(after=start, reverse=True, limit=1))
    elif before is not None or last:
        back = await session.get_entries(after=before, reverse=True, limit=page_size + 1)
        has_before = len(back) > page_size
        entries = list(reversed(back[:page_size]))
        has_after = before is not None
    else:
        entries = await session.get_entries(after=after, limit=page_size + 1)
        has_after = len(entries) > page_size
        has_before = after is not None
    entries = entries[:page_size]
    leaf_id = await session.get_leaf_id()
    labels = labels_of(await session.get_entries(types={"label"}))
    by_id = {e.id: e for e in entries}
    path_ids: set[str] = set()
    node = by_id.get(leaf_id) if leaf_id is not None else None
    while node is not None and node.id not in path_ids:
        path_ids.add(node.id)
        node = by_id.get(node.parent_id) if node.parent_id is not None else None
    path_ids = {i for i in path_ids if by_id[i].type not in BOOKKEEPING_TYPES}
    runs = layout_tree(
        entries,
        labels=labels,
        leaf_id=leaf_id,
        path_ids=path_ids,
        session_id=session.id,
        clip=CLIP,
    )
    return TreePage(
        runs,
        leaf_id,
        entries[0].id if entries else None,
        entries[-1].id if entries else None,
        has_before,
        has_after,
        leaf_id is None or leaf_id in by_id,
        len(entries),
        short_id_length(by_id),
    )


async def whole_tree(session: Session, *, redacted: bool = False) -> tuple[list[Run], int, int]:
    """Every entry of the session as runs (for exports), with the current branch marked;
    also the entry count and the id prefix length that tells every entry apart."""
    entries = await session.get_entries()
    leaf_id = await session.get_leaf_id()
    by_id = {e.id: e for e in entries}
    path_ids = {e.id for e in branch_of(trace_chain(leaf_id, by_id.get, session_id=session.id))}
    runs = layout_tree(
        entries,
        labels=labels_of(entries),
        leaf_id=leaf_id,
        path_ids=path_ids,
        session_id=session.id,
        redacted=redacted,
    )
    return runs, len(entries), short_id_length(by_id)
