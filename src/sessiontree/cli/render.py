"""Rich renderings for the CLI: one-line entry summaries, the session tree, message lists.

Pure functions from entries/nodes to ``rich`` renderables (no I/O). The tree is walked with
an explicit stack, so a 100,000-entry linear session renders without recursion, and long
linear runs are collapsed to ``… N entries …`` unless ``full`` is asked for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text
from rich.tree import Tree

from sessiontree.describe import (
    describe_entry,
    describe_message,
    one_line,
    printable,
    tool_call_text,
)
from sessiontree.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    Entry,
)
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ToolResultMessage,
    message_text,
)
from sessiontree.tree import TreeNode

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "EntryLine",
    "describe_entry",
    "describe_message",
    "flatten_tree",
    "message_pieces",
    "one_line",
    "render_messages",
    "render_tree",
    "short",
    "write_pieces",
]

HEAD = 3
"""Entries shown at the start and end of a collapsed linear run."""
MIN_COLLAPSE = 5
"""A hidden stretch shorter than this is shown instead of collapsed."""

ROLE_STYLES = {
    "user": "green",
    "assistant": "blue",
    "toolResult": "yellow",
    "bashExecution": "yellow",
    "custom": "cyan",
    "compaction": "bold magenta",
    "branch_summary": "bold magenta",
    "branchSummary": "magenta",
    "compactionSummary": "magenta",
}


def short(entry_id: str | None, length: int) -> str:
    """The first ``length`` characters of an id (``-`` for ``None``)."""
    return "-" if entry_id is None else entry_id[:length]


@dataclass(frozen=True)
class EntryLine:
    """One path entry as shown by ``show``: where it hangs and what it says."""

    entry: Entry
    parent_id: str | None
    children: tuple[str, ...]
    label: str | None


def flatten_tree(roots: Sequence[TreeNode]) -> list[EntryLine]:
    """Every node of ``get_tree()`` as a flat list (depth-first, children in append order).

    ``parent_id`` is the nearest path ancestor (bookkeeping entries skipped). Iterative.
    """
    out: list[EntryLine] = []
    stack: list[tuple[TreeNode, str | None]] = [(r, None) for r in reversed(roots)]
    while stack:
        node, parent = stack.pop()
        kids = tuple(c.entry.id for c in node.children)
        out.append(EntryLine(node.entry, parent, kids, node.label))
        stack.extend((c, node.entry.id) for c in reversed(node.children))
    return out


def _entry_text(
    entry: Entry,
    label: str | None,
    *,
    leaf_id: str | None,
    on_path: bool,
    short_id: Callable[[str], str],
    twig: bool = False,
) -> Text:
    """One tree line; the label and the leaf marker come before the text, so cutting a long
    line at the terminal's width never hides them."""
    kind, gist = describe_entry(entry)
    text = Text(no_wrap=True, overflow="ellipsis")
    if twig:
        text.append("⎇ ", style="dim")
    text.append(short_id(entry.id), style="cyan" if on_path else "dim cyan")
    if entry.id == leaf_id:
        text.append(" ◀ leaf", style="bold red")
    if label:
        label = printable(label)
        text.append(" ")
        text.append(f"[{label}]", style="bold reverse")
    text.append(" ")
    text.append(kind, style=ROLE_STYLES.get(kind, "white") if on_path else "dim")
    if gist:
        text.append(": " + gist, style="" if on_path else "dim")
    return text


Spine = list[tuple[TreeNode, bool]]
"""A run shown at one level: nodes in order, ``True`` for a twig (a one-entry side branch)."""


def _spine(start: TreeNode, path_ids: set[str]) -> tuple[Spine, list[TreeNode]]:
    """Follow ``start`` down while there is one way on; returns the run and the fork after it.

    A fork whose children are all single entries off the current path but (at most) one is
    not a real fork: those single entries (e.g. Claude Code side records) are listed as twigs
    and the run goes on through the remaining child (the newest one when all are twigs).
    """
    spine: Spine = []
    node = start
    while True:
        spine.append((node, False))
        kids = node.children
        if not kids:
            return spine, []
        if len(kids) == 1:
            node = kids[0]
            continue
        main = [c for c in kids if c.children or c.entry.id in path_ids]
        if len(main) > 1:
            return spine, list(kids)
        if not main:
            main = [kids[-1]]
        spine.extend((c, True) for c in kids if c is not main[0])
        node = main[0]


Fold = tuple[int, int, bool]
"""``(start, count, side)``: a stretch of a run shown as one line; ``side``: all of it side
records (``custom`` entries such as Claude Code progress, hook and snapshot lines)."""


def _is_side(node: TreeNode, leaf_id: str | None) -> bool:
    return isinstance(node.entry, CustomEntry) and not node.label and node.entry.id != leaf_id


def _fold_side_records(
    spine: Spine, items: list[int | Fold], leaf_id: str | None
) -> list[int | Fold]:
    """``items`` with every run of two or more shown side records folded to one line."""
    out: list[int | Fold] = []
    run: list[int] = []

    def flush() -> None:
        if len(run) >= 2:
            out.append((run[0], len(run), True))
        else:
            out.extend(run)
        run.clear()

    for item in items:
        if isinstance(item, int) and _is_side(spine[item][0], leaf_id) and not spine[item][1]:
            if run and run[-1] != item - 1:
                flush()
            run.append(item)
            continue
        flush()
        out.append(item)
    flush()
    return out


def _visible(spine: Spine, leaf_id: str | None, full: bool) -> list[int | Fold]:
    """Indices of ``spine`` to show, with a :data:`Fold` for each stretch shown as one line:
    runs of side records always (unless ``full``), long stretches of a run when it is long."""
    if full:
        return list(range(len(spine)))
    return _fold_side_records(spine, _collapsed(spine, leaf_id), leaf_id)


def _collapsed(spine: Spine, leaf_id: str | None) -> list[int | Fold]:
    """Indices of ``spine`` to show, with ``(start, count, False)`` for a collapsed stretch."""
    n = len(spine)
    if n <= 2 * HEAD + MIN_COLLAPSE:
        return list(range(n))
    keep = set(range(HEAD)) | set(range(n - HEAD, n))
    for i, (node, _) in enumerate(spine):
        e = node.entry
        if node.label or e.id == leaf_id or isinstance(e, CompactionEntry | BranchSummaryEntry):
            keep.add(i)
    out: list[int | Fold] = []
    i = 0
    while i < n:
        if i in keep:
            out.append(i)
            i += 1
            continue
        j = i
        while j < n and j not in keep:
            j += 1
        if j - i >= MIN_COLLAPSE:
            out.append((i, j - i, False))
        else:
            out.extend(range(i, j))
        i = j
    return out


def _side_text(nodes: Spine) -> str:
    """``… 4 side records: claude-code:progress ×3, claude-code:system …``"""
    kinds: dict[str, int] = {}
    for node, _ in nodes:
        kind = describe_entry(node.entry)[0].removeprefix("custom[").removesuffix("]")
        kinds[kind] = kinds.get(kind, 0) + 1
    what = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in kinds.items())
    return f"… {len(nodes)} side records: {what} …"


def render_tree(
    title: Text,
    roots: Sequence[TreeNode],
    *,
    leaf_id: str | None,
    path_ids: set[str],
    id_len: int = 8,
    full: bool = False,
    short_id: Callable[[str], str] | None = None,
) -> Tree:
    """The session tree: linear runs listed at one level, each fork as ``⎇ branch k/n``.

    Single-entry side branches are listed in the run as ``⎇ <entry>`` twigs. The branch
    holding the leaf is marked ``(current)``; entries off the current path are dim. Unless
    ``full``: runs longer than ``2 * HEAD + MIN_COLLAPSE`` are collapsed (the leaf, labelled
    entries, compactions and branch summaries are never hidden) and consecutive side records
    (``custom`` entries) are folded to one line that counts them by kind. Every line is cut
    at the console's width. Iterative (explicit stack).

    Each entry shows as ``short_id(entry.id)`` (e.g. a :class:`~sessiontree.cli._common.ShortIds`),
    by default its first ``id_len`` characters.
    """
    if short_id is None:
        short_id = functools.partial(short, length=id_len)
    top = Tree(title, guide_style="dim")
    stack: list[tuple[Tree, TreeNode]] = []

    def push_branches(container: Tree, nodes: Sequence[TreeNode], what: str) -> None:
        heads: list[tuple[Tree, TreeNode]] = []
        for k, child in enumerate(nodes, 1):
            current = child.entry.id in path_ids
            label = Text(f"⎇ {what} {k}/{len(nodes)}", style="bold" if current else "dim")
            if current:
                label.append(" (current)", style="bold red")
            heads.append((container.add(label), child))
        stack.extend(reversed(heads))

    if len(roots) == 1:
        stack.append((top, roots[0]))
    elif roots:
        push_branches(top, roots, "root")
    while stack:
        container, start = stack.pop()
        spine, fork = _spine(start, path_ids)
        for item in _visible(spine, leaf_id, full):
            if isinstance(item, tuple):
                first, count, side = item
                on_path = spine[first][0].entry.id in path_ids
                container.add(
                    Text(
                        _side_text(spine[first : first + count])
                        if side
                        else f"… {count} entries …",
                        style="italic" if on_path else "dim italic",
                        no_wrap=True,
                        overflow="ellipsis",
                    )
                )
                continue
            node, twig = spine[item]
            e = node.entry
            container.add(
                _entry_text(
                    e,
                    node.label,
                    leaf_id=leaf_id,
                    on_path=e.id in path_ids,
                    short_id=short_id,
                    twig=twig,
                )
            )
        if fork:
            push_branches(container, fork, "branch")
    return top


Piece = tuple[str, str]
"""``(text, style)``: a run of text and the rich style it is shown in (``""``: plain)."""


def message_pieces(messages: Sequence[AgentMessage], *, full: bool = False) -> list[list[Piece]]:
    """One block per context message: ``[i] role`` then its text (cut unless ``full``), as
    styled pieces for :func:`write_pieces`."""
    out: list[list[Piece]] = []
    limit = None if full else 400
    for i, msg in enumerate(messages):
        role = str(getattr(msg, "role", "?"))
        block: list[Piece] = [(f"[{i}] ", "dim"), (role, "bold " + ROLE_STYLES.get(role, "white"))]
        if isinstance(msg, ToolResultMessage):
            block.append((f" {msg.tool_name} ({msg.tool_call_id})", "dim"))
            if msg.is_error:
                block.append((" ERROR", "bold red"))
        body = message_text(msg)
        if limit is not None and len(body) > limit:
            body = body[:limit] + f"… ({len(body) - limit} more characters)"
        if body.strip():
            block.append(("\n" + body, ""))
        if isinstance(msg, AssistantMessage):
            for call in msg.tool_calls():
                call_text = tool_call_text(call)
                if limit is not None:
                    call_text = one_line(call_text, 200)
                block.append((f"\n→ {call_text} ", "blue"))
                block.append((f"({call.id})", "dim"))
        out.append(block)
    return out


def render_messages(messages: Sequence[AgentMessage], *, full: bool = False) -> list[Text]:
    """:func:`message_pieces` as one rich :class:`~rich.text.Text` per message."""
    return [Text.assemble(*block) for block in message_pieces(messages, full=full)]


def write_pieces(console: Console, blocks: Iterable[Sequence[Piece]]) -> None:
    """Write ``blocks`` to the console's file, one line break after each block.

    Straight to the file, not through rich's layout: no wrapping or cutting (a terminal
    wraps long lines itself, a pipe gets them whole), so tens of thousands of messages print
    about as fast as their JSON. Styles become ANSI codes only when the console uses colour
    (a terminal without ``NO_COLOR``); control characters other than tab and newline are
    dropped from the text.
    """
    codes: dict[str, tuple[str, str]] = {}

    def wrap(style: str) -> tuple[str, str]:
        found = codes.get(style)
        if found is None:
            with console.capture() as captured:
                console.print(Text("\0", style=style), end="", soft_wrap=True)
            before, _, after = captured.get().partition("\0")
            found = codes[style] = (before, after)
        return found

    chunk: list[str] = []
    file = console.file
    for block in blocks:
        for text, style in block:
            text = printable(text)
            before, after = wrap(style) if style else ("", "")
            if before or after:
                # codes per line, so a style never runs on past a line break of the terminal
                text = "\n".join(
                    f"{before}{line}{after}" if line else "" for line in text.split("\n")
                )
            chunk.append(text)
        chunk.append("\n")
        if len(chunk) >= 4096:
            file.write("".join(chunk))
            chunk.clear()
    file.write("".join(chunk))
    file.flush()


def entry_json(
    line: EntryLine, *, leaf_id: str | None, path_ids: set[str], full: bool
) -> dict[str, Any]:
    """The JSON form of one tree node for ``show --json`` (camelCase keys)."""
    from sessiontree.entries import dump_entry

    kind, gist = describe_entry(line.entry, width=200)
    item: dict[str, Any] = {
        "id": line.entry.id,
        "parentId": line.parent_id,
        "type": line.entry.type,
        "kind": kind,
        "text": gist,
        "label": line.label,
        "children": list(line.children),
        "onCurrentBranch": line.entry.id in path_ids,
        "isLeaf": line.entry.id == leaf_id,
    }
    if full:
        item["entry"] = dump_entry(line.entry)
    return item
