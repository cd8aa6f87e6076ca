"""A SQL fork planned from the rows' columns: which rows the database copies, which are written.

A fork (docs/branching.md, :func:`sessiontree.storage.base.fork_plan`) copies the chain root →
target. On SQL nearly every copied row is the stored row as it is, so the database copies it
(``INSERT … SELECT``) and Python never parses or re-serialises it. :func:`plan_fork` works out
the fork from the chain's ``id``/``parent_id``/``type`` columns: only the rows whose JSON the
fork rules read are parsed — ``label``, ``branch_summary`` and ``session_info`` entries (the
references :func:`~sessiontree.tree.fork_chain` may clear, the labels and the name) and the
first user message (the listing's first message). The same rules run on them as on any other
backend: :func:`~sessiontree.tree.fork_chain`, :func:`~sessiontree.tree.check_append`,
:class:`~sessiontree.fold.LogFold`; a copied row stands in as its :class:`ChainRow` (its id,
parent and type), which they pass through unchanged (they only rewrite labels and branch
summaries).

A chain the rules would refuse or report (a bookkeeping target, a ``leaf`` entry on it, no
rows, a root that still has a parent) gets no plan here: the caller takes the generic path,
which raises the same errors as every backend. :func:`plan_from_entries` turns the generic
path's entries into the same :class:`ForkPlan`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sessiontree.backends.sql.plan import (
    ChainRow,
    EntryRow,
    ForkPlan,
    SessionState,
    index_text,
    plan_append,
)
from sessiontree.entries import BOOKKEEPING_TYPES, Entry, LabelEntry, LeafEntry, MessageEntry
from sessiontree.fold import LogFold, first_message_text
from sessiontree.messages import message_text
from sessiontree.stored import stored_form
from sessiontree.tree import ForkPosition, check_append, fork_chain, labels_of

__all__ = [
    "FIRST_MESSAGES",
    "PARSED_TYPES",
    "WINDOW_ROWS",
    "ChainRow",
    "ForkPlan",
    "chain_in_window",
    "copy_runs",
    "plan_fork",
    "plan_from_entries",
]

PARSED_TYPES = ("label", "branch_summary", "session_info")
"""Chain rows whose JSON :func:`plan_fork` reads (the fork query returns their bodies)."""

FIRST_MESSAGES = 3
"""Root-most message rows of the chain whose JSON the fork query returns too: the first user
message is nearly always among them (the rest are fetched :data:`FIRST_MESSAGES` at a time
when it is not)."""

WINDOW_ROWS = 4096
"""A fork whose target is among the first this many rows of its session is planned from one
range read of the rows up to the target (the index's ``seq`` order, walked by
:func:`chain_in_window`) instead of the recursive walk, one index lookup per chain row (several
times the time per row): on a session that never branched the range *is* the chain. A walk that
leaves the range (a branch point before it, a parent appended after its child) takes the
recursive walk; the range read costs at most this many rows more."""


def chain_in_window(
    rows: Sequence[tuple[str, str | None, str, str | None, int]], target_id: str
) -> list[ChainRow] | None:
    """The chain root → ``target_id`` among ``rows`` (``(id, parent_id, type, body, seq)`` of
    the session's rows up to the target, any order), walked by ``parent_id`` as the recursive
    query walks it; ``None`` when it does not end at a row without a parent inside ``rows``
    (the recursive walk decides then) or visits a row twice (a cycle: the same)."""
    by_id = {r[0]: r for r in rows}
    chain: list[Any] = []
    row = by_id.pop(target_id, None)
    while row is not None:
        chain.append(row)
        if row[1] is None:
            chain.reverse()
            return [ChainRow._make(r) for r in chain]
        row = by_id.pop(row[1], None)  # popped: a cycle ends the walk here
    return None


def _row(seq: int, entry: Entry, body: bytes) -> EntryRow:
    text = index_text(message_text(entry.message)) if isinstance(entry, MessageEntry) else None
    target = entry.target_id if isinstance(entry, LabelEntry | LeafEntry) else None
    return EntryRow(
        seq, entry.id, entry.parent_id, entry.type, entry.timestamp, target, body.decode(), text
    )


def plan_fork(
    session_id: str,
    chain: Sequence[ChainRow],
    parse: Callable[[str, str], Entry],
    labels: Sequence[Entry],
    message_bodies: Callable[[list[str]], Mapping[str, str]],
    position: ForkPosition,
) -> ForkPlan | None:
    """Plan the fork of ``chain`` (root → target) from its columns; ``None``: take the
    generic path (see the module).

    Args:
        session_id: the source session (named in errors).
        chain: the chain rows, root first.
        parse: the entry of a row from its id and JSON (the storage's cached parse).
        labels: the source session's ``label`` entries, in append order.
        message_bodies: the JSON of the given message rows, by id.
        position: ``"at"`` or ``"before"`` (anything else: ``None``).

    Raises:
        InvalidEntryError: a new label entry or a changed copy cannot be written.
    """
    if (
        position not in ("at", "before")
        or not chain
        or chain[0].parent_id is not None
        or chain[-1].type in BOOKKEEPING_TYPES
        or any(r.type == "leaf" for r in chain)
    ):
        return None
    # a row without JSON stands in for its entry as it is: the fork rules only read its id,
    # parent and type (it is no label, leaf or branch summary) and pass it through unchanged
    as_read: dict[str, Entry] = {}
    read_seq: dict[str, int] = {}
    items: list[Any] = []
    for r in chain:
        if r.body is not None:
            entry = parse(r.id, r.body)
            as_read[r.id] = entry
            read_seq[r.id] = r.seq
            items.append(entry)
        else:
            items.append(r)
    copied: list[Any] = fork_chain(items, position)
    leaf = next((e.id for e in reversed(copied) if e.type not in BOOKKEEPING_TYPES), None)
    current = labels_of(labels)
    # only parsed rows are labels (PARSED_TYPES), and fork_chain keeps each one a label
    labelled = any(e.type == "label" for e in as_read.values())
    inherited = labels_of([e for e in copied if isinstance(e, LabelEntry)]) if labelled else {}
    new_labels: list[Any] = (
        [
            LabelEntry(target_id=e.id, label=current.get(e.id), parent_id=leaf)
            for e in copied
            if current.get(e.id) != inherited.get(e.id)
        ]
        if current or inherited
        else []  # no label anywhere: every entry's None equals None
    )
    first_user = _FirstUser(copied, parse, message_bodies)
    staged: dict[str, str] = {}
    fold = LogFold()
    copies: list[tuple[str, int]] = []
    sources: list[int] = []
    rows: list[EntryRow] = []
    everything: list[Any] = [*copied, *new_labels]
    for seq, item in enumerate(everything):
        if type(item) is ChainRow:
            # what check_append asks of an entry whose only reference is its parent (no leaf
            # rows here); a chain that fails it goes the generic way, which says why
            item_id, kind = item.id, item.type
            if item_id in staged or (item.parent_id is not None and item.parent_id not in staged):
                return None
            copies.append((item_id, seq))
            sources.append(item.seq)
            staged[item_id] = kind
            # the fold reads a message's text only until it has seen the first user message
            needs_text = kind == "message" and not fold.first_seen
            fold.add(
                kind, item_id, _no_field, first_user.reader(item_id) if needs_text else _no_text
            )
            continue
        written: Any = item
        unchanged = as_read.get(item.id) is item
        if unchanged:
            copies.append((item.id, seq))
            sources.append(read_seq[item.id])
        else:
            written, body = stored_form(item)
            rows.append(_row(seq, written, body))
        check_append(written, staged.get, session_id=session_id, keep_unknown=True)
        staged[written.id] = written.type
        fold.add_entry(written)
    return ForkPlan(
        copies,
        rows,
        fold.leaf_id,
        fold.entry_count,
        fold.message_count,
        fold.first_message,
        fold.name,
        sources,
    )


def copy_runs(
    copies: Sequence[tuple[str, int]], sources: Sequence[int]
) -> list[tuple[int, int, int]]:
    """The copies as runs ``(first, last, shift)``: the source rows with ``seq`` from
    ``first`` to ``last`` become the fork's rows ``seq + shift``, in order; consecutive
    copies whose source and fork ``seq`` both go up by one share a run (a fork of a chain
    that never branched is one run).

    Args:
        copies: :attr:`ForkPlan.copies` (``(id, fork seq)``).
        sources: :attr:`ForkPlan.copy_sources`, aligned with ``copies``.
    """
    runs: list[tuple[int, int, int]] = []
    first = last = shift = 0
    for (_, seq), source in zip(copies, sources, strict=True):
        if runs and source == last + 1 and seq - source == shift:
            last = source
            runs[-1] = (first, last, shift)
        else:
            first = last = source
            shift = seq - source
            runs.append((first, last, shift))
    return runs


def _no_field(_key: str) -> None:
    """The fold asks a copied row for no field: it only does for labels, names and leaves."""
    return None


def _no_text() -> None:
    """Never called: the fold reads no text of a row after the first user message."""
    return None


class _FirstUser:
    """The listing text of copied message rows whose JSON the chain query did not return, read
    while the fold looks for the first user message (past the first :data:`FIRST_MESSAGES`
    messages): their bodies are asked for :data:`FIRST_MESSAGES` at a time."""

    def __init__(
        self,
        copied: Sequence[Any],
        parse: Callable[[str, str], Entry],
        message_bodies: Callable[[list[str]], Mapping[str, str]],
    ) -> None:
        self._copied = copied
        self._messages: list[str] | None = None
        self._parse = parse
        self._fetch = message_bodies
        self._bodies: dict[str, str] = {}

    def reader(self, entry_id: str) -> Callable[[], str | None]:
        """The fold's ``first_text`` of one copied row."""
        return lambda: self.text(entry_id)

    def text(self, entry_id: str) -> str | None:
        """:func:`~sessiontree.fold.first_message_text` of the copied message ``entry_id``
        (``None`` when its row is gone)."""
        body = self._bodies.get(entry_id)
        if body is None:
            if self._messages is None:
                self._messages = [
                    e.id for e in self._copied if type(e) is ChainRow and e.type == "message"
                ]
            at = self._messages.index(entry_id)
            self._bodies.update(self._fetch(self._messages[at : at + FIRST_MESSAGES]))
            body = self._bodies.get(entry_id)
            if body is None:  # deleted meanwhile: the fork's copy finds the rows gone
                return None
        entry = self._parse(entry_id, body)
        return first_message_text(entry.message) if isinstance(entry, MessageEntry) else None


def plan_from_entries(
    session_id: str, entries: Sequence[Entry], copied: Callable[[Entry], bool]
) -> ForkPlan:
    """The :class:`ForkPlan` of the generic path's entries (:func:`~sessiontree.storage.base.fork_plan`):
    an entry for which ``copied`` is true is copied in the database, the rest written from
    their JSON; all validated as an append to an empty session.

    Raises:
        DuplicateEntryError, EntryNotFoundError, InvalidEntryError: as an append.
    """
    stored: list[Entry] = []
    bodies: list[bytes] = []
    kept: list[bool] = []
    for entry in entries:
        if copied(entry):
            stored.append(entry)
            bodies.append(b"")
            kept.append(True)
        else:
            checked, body = stored_form(entry)
            stored.append(checked)
            bodies.append(body)
            kept.append(False)
    plan = plan_append(
        session_id, SessionState(None, 0, 0, False), stored, {}, bodies=bodies, keep_unknown=True
    )
    return ForkPlan(
        [(r.id, r.seq) for r, k in zip(plan.rows, kept, strict=True) if k],
        [r for r, k in zip(plan.rows, kept, strict=True) if not k],
        plan.leaf_id,
        plan.entry_count,
        plan.message_count,
        plan.first_message,
        plan.name,
    )
