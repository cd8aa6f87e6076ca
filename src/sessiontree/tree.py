"""The session tree as pure functions over entries (docs/tree.md). No I/O.

Every backend reuses these rules so they cannot drift apart:

* :func:`check_append` — the rejection rules of ``append_entry``;
* :func:`leaf_after` — the leaf rule: the leaf is a pure function of the append log;
* :func:`trace_chain` / :func:`branch_of` — root → leaf paths with cycle detection;
* :func:`find_cycles` — every ``parentId`` cycle among entries (what ``verify`` reports);
* :func:`build_tree` — the nodes of ``get_tree()``, children in append order;
* :func:`labels_of`, :func:`name_of`, :func:`fork_chain`.

All walks are iterative: a 100,000-entry chain never touches the recursion limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from sessiontree.entries import (
    BOOKKEEPING_TYPES,
    ENTRY_TYPES,
    BranchSummaryEntry,
    Entry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
)
from sessiontree.errors import (
    CorruptSessionError,
    DuplicateEntryError,
    EntryNotFoundError,
    InvalidEntryError,
)
from sessiontree.fold import LogFold
from sessiontree.ids import check_id

__all__ = [
    "ForkPosition",
    "TreeIndex",
    "TreeNode",
    "branch_of",
    "build_tree",
    "check_append",
    "entry_refs",
    "find_cycles",
    "fork_chain",
    "labels_of",
    "leaf_after",
    "leaf_of_log",
    "name_of",
    "trace_chain",
]

ForkPosition = Literal["at", "before"]


@dataclass(eq=False)
class TreeNode:
    """One path entry in :meth:`Session.get_tree`: the entry, its children (append order), its label."""

    entry: Entry
    children: list[TreeNode] = field(default_factory=list)
    label: str | None = None
    draft: bool = False
    """Whether the node is the session's draft reply (:mod:`sessiontree.drafts`), shown as
    an interrupted message: streaming now, or left by a process that died while it
    streamed. Not a stored entry (``get_entry`` does not find it)."""


def entry_refs(entry: Entry) -> list[tuple[str, str]]:
    """The ids an entry refers to, as ``(field, id)`` pairs, that must exist in the session.

    ``parentId``, a label/leaf ``targetId`` and a branch summary's ``fromId`` (docs/tree.md).
    """
    refs: list[tuple[str, str]] = []
    if entry.parent_id is not None:
        refs.append(("parentId", entry.parent_id))
    if isinstance(entry, (LabelEntry, LeafEntry)) and entry.target_id is not None:
        refs.append(("targetId", entry.target_id))
    if isinstance(entry, BranchSummaryEntry) and entry.from_id is not None:
        refs.append(("fromId", entry.from_id))
    return refs


def check_append(
    entry: Entry,
    type_of: Callable[[str], str | None],
    *,
    session_id: str | None = None,
    keep_unknown: bool = False,
) -> None:
    """Raise if ``entry`` may not be appended to a session (docs/tree.md). Changes nothing.

    Args:
        entry: the candidate entry.
        type_of: the ``type`` of an existing entry of the session by id, ``None`` if absent.
        session_id: named in the error messages.
        keep_unknown: accept an entry of a ``type`` this library does not know (kept opaque):
            what a new session copied from stored entries (a fork of a file a newer writer
            wrote) holds. Appends to a session never set it.

    Raises:
        InvalidEntryError: an unknown ``type``; a ``parentId`` naming a ``leaf`` entry; a
            ``leaf`` entry whose target is a bookkeeping entry; an id or reference that
            :func:`~sessiontree.ids.entry_id_problem` refuses (a NUL, a lone surrogate).
        DuplicateEntryError: the id is already used in this session.
        EntryNotFoundError: a ``parentId``, ``targetId`` or ``fromId`` names no entry.
    """
    check_id(entry.id, "id", entry.id, session_id)
    if entry.parent_id is not None:
        check_id(entry.parent_id, "parentId", entry.id, session_id)
    if type(entry) is MessageEntry and type_of(entry.id) is None:
        # the common append: a message entry refers to its parent only (entry_refs), so a
        # new id under no parent, or under one that exists and is not a leaf entry, is all
        # there is to check; anything else meets the full rule below, which names the fault
        parent = entry.parent_id
        if parent is None or type_of(parent) not in (None, "leaf"):
            return
    if entry.type not in ENTRY_TYPES and not keep_unknown:
        raise InvalidEntryError(
            f"unknown entry type {entry.type!r}", session_id=session_id, entry_id=entry.id
        )
    if type_of(entry.id) is not None:
        raise DuplicateEntryError(
            "an entry with this id already exists", session_id=session_id, entry_id=entry.id
        )
    for what, ref in entry_refs(entry):
        check_id(ref, what, entry.id, session_id)
        ref_type = type_of(ref)
        if ref_type is None:
            raise EntryNotFoundError(
                f"{what} {ref!r} names no entry of this session",
                session_id=session_id,
                entry_id=entry.id,
            )
        if what == "parentId" and ref_type == "leaf":
            raise InvalidEntryError(
                f"parentId {ref!r} names a leaf entry, which can never be a parent",
                session_id=session_id,
                entry_id=entry.id,
            )
        if what == "targetId" and entry.type == "leaf" and ref_type in BOOKKEEPING_TYPES:
            raise InvalidEntryError(
                f"leaf target {ref!r} is a {ref_type} entry, not a path entry",
                session_id=session_id,
                entry_id=entry.id,
            )


def leaf_after(old_leaf: str | None, entry: Entry) -> str | None:
    """The leaf after appending ``entry`` (the rule of :class:`~sessiontree.fold.LogFold`).

    A ``leaf`` entry gives its ``targetId``; a path entry its own id; ``label`` and
    ``session_info`` leave the leaf where it was.
    """
    fold = LogFold(old_leaf, first_seen=True)  # the leaf only: no first message asked for
    fold.add_entry(entry)
    return fold.leaf_id


def _fold(entries: Iterable[Entry]) -> LogFold:
    """The fold of ``entries`` for its leaf and labels (the first message is not looked for)."""
    fold = LogFold(first_seen=True)
    for entry in entries:
        fold.add_entry(entry)
    return fold


def leaf_of_log(entries: Iterable[Entry]) -> str | None:
    """The leaf of a whole append log (``None`` for an empty one)."""
    return _fold(entries).leaf_id


def trace_chain(
    leaf_id: str | None,
    get: Callable[[str], Entry | None],
    *,
    session_id: str | None = None,
    stop: Callable[[Entry], bool] | None = None,
) -> list[Entry]:
    """Every entry on the ``parentId`` chain from the root to ``leaf_id``, bookkeeping included.

    ``stop``: called on each entry walking up from the leaf; the walk ends at the first entry
    for which it is true, and the chain starts there instead of at the root (see
    :class:`sessiontree.context.ContextStart`).

    Raises:
        EntryNotFoundError: ``leaf_id`` names no entry.
        CorruptSessionError: a cycle, or a ``parentId`` that names no entry.
    """
    if leaf_id is None:
        return []
    chain: list[Entry] = []
    seen: set[str] = set()
    current: str | None = leaf_id
    while current is not None:
        if current in seen:
            raise CorruptSessionError(
                "cycle in parentId links", session_id=session_id, entry_id=current
            )
        seen.add(current)
        entry = get(current)
        if entry is None:
            if not chain:
                raise EntryNotFoundError("no such entry", session_id=session_id, entry_id=current)
            raise CorruptSessionError(
                f"entry {chain[-1].id!r} has parentId {current!r}, which names no entry",
                session_id=session_id,
                entry_id=chain[-1].id,
            )
        chain.append(entry)
        if stop is not None and stop(entry):
            break
        current = entry.parent_id
    chain.reverse()
    return chain


def find_cycles(entries: Sequence[Entry]) -> list[list[str]]:
    """Every ``parentId`` cycle among ``entries``, each as the list of ids on it.

    Iterative colouring walk, linear in the number of entries; a parent that names no entry
    ends a walk (that is a dangling parent, reported separately).
    """
    parent = {e.id: e.parent_id for e in entries}
    state: dict[str, int] = {}  # 1 = on the current walk, 2 = done
    cycles: list[list[str]] = []
    for start in parent:
        if state.get(start):
            continue
        walk: list[str] = []
        node: str | None = start
        while node is not None and node in parent and not state.get(node):
            state[node] = 1
            walk.append(node)
            node = parent[node]
        if node is not None and state.get(node) == 1:
            cycles.append(walk[walk.index(node) :])
        for n in walk:
            state[n] = 2
    return cycles


def branch_of(chain: Sequence[Entry]) -> list[Entry]:
    """The path entries of a chain (bookkeeping entries that it runs through removed)."""
    return [e for e in chain if e.type not in BOOKKEEPING_TYPES]


def labels_of(entries: Iterable[Entry]) -> dict[str, str]:
    """Entry id → label, from ``label`` entries in append order (``None``/empty clears)."""
    return _fold(entries).labels


def name_of(entries: Iterable[Entry]) -> str | None:
    """The session name: ``name`` of the newest ``session_info`` entry, else ``None``."""
    return _fold(entries).name


def build_tree(
    entries: Sequence[Entry],
    labels: dict[str, str] | None = None,
    *,
    session_id: str | None = None,
    draft_id: str | None = None,
) -> list[TreeNode]:
    """The root nodes of every path entry, children in append order (docs/tree.md).

    ``draft_id``: the id of an entry that stands for the session's draft reply (its node
    gets ``draft=True``).

    A path entry whose parent is a bookkeeping entry hangs under its nearest path ancestor.
    Iterative; linear in the number of entries.

    Raises:
        CorruptSessionError: a cycle (entries that reach no root).
    """
    labels = labels_of(entries) if labels is None else labels
    by_id = {e.id: e for e in entries}
    nodes: dict[str, TreeNode] = {}
    for e in entries:
        if e.type not in BOOKKEEPING_TYPES:
            nodes[e.id] = TreeNode(e, [], labels.get(e.id), e.id == draft_id)
    # nearest path ancestor, memoised through bookkeeping runs
    anchor: dict[str, str | None] = {}

    def path_parent(entry: Entry) -> str | None:
        pid = entry.parent_id
        run: list[str] = []
        result: str | None = None
        steps = 0
        while pid is not None:
            if pid in nodes:
                result = pid
                break
            if pid in anchor:
                result = anchor[pid]
                break
            parent = by_id.get(pid)
            if parent is None:
                result = None
                break
            run.append(pid)
            pid = parent.parent_id
            steps += 1
            if steps > len(by_id):
                raise CorruptSessionError(
                    "cycle in parentId links", session_id=session_id, entry_id=entry.id
                )
        for r in run:
            anchor[r] = result
        return result

    roots: list[TreeNode] = []
    for node in nodes.values():
        parent = path_parent(node.entry)
        if parent is None:
            roots.append(node)
        else:
            nodes[parent].children.append(node)
    # everything must hang under a root; otherwise there is a cycle
    reached = 0
    stack = list(roots)
    while stack:
        node = stack.pop()
        reached += 1
        stack.extend(node.children)
    if reached != len(nodes):
        raise CorruptSessionError(
            f"{len(nodes) - reached} entries are on a parentId cycle", session_id=session_id
        )
    return roots


def fork_chain(chain: Sequence[Entry], position: ForkPosition) -> list[Entry]:
    """The entries a fork copies, given the chain root → target (docs/branching.md).

    ``at`` copies the whole chain; ``before`` stops at the target's parent (so a user message
    can be asked again differently) and drops bookkeeping entries left dangling at the end.

    Ids and content are kept, except a reference to an entry the fork does not copy: a
    ``branch_summary``'s ``fromId`` (the abandoned branch it summarises is never on the path)
    and the ``targetId`` of a ``label`` entry the path runs through become ``null``. Every
    reference of a copied entry thus names a copied entry, at or below any entry kind.
    """
    if position == "at":
        copied = list(chain)
    elif position == "before":
        copied = list(chain[:-1])
        while copied and copied[-1].type in BOOKKEEPING_TYPES:
            copied.pop()
    else:
        raise InvalidEntryError(f"fork position must be 'at' or 'before', not {position!r}")
    seen: set[str] = set()
    out: list[Entry] = []
    for e in copied:
        if isinstance(e, BranchSummaryEntry) and e.from_id is not None and e.from_id not in seen:
            e = _cleared(e, "from_id")
        elif isinstance(e, LabelEntry) and e.target_id is not None and e.target_id not in seen:
            e = _cleared(e, "target_id")
        seen.add(e.id)
        out.append(e)
    return out


def _cleared(entry: Entry, field_name: str) -> Entry:
    """A copy of ``entry`` with ``field_name`` set to ``None`` (and written as ``null``)."""
    new = entry.model_copy(update={field_name: None})
    new.__pydantic_fields_set__.add(field_name)
    return new


class TreeIndex:
    """An in-memory index of one session's entries in append order.

    Used by the memory backend (and by importers); O(1) lookups, appends that validate with
    :func:`check_append` and keep the :class:`~sessiontree.fold.LogFold` (leaf, labels, name,
    listing counts) current.
    """

    def __init__(self, entries: Iterable[Entry] = (), *, session_id: str | None = None) -> None:
        self.session_id = session_id
        self.entries: list[Entry] = []
        self.by_id: dict[str, Entry] = {}
        self.seq: dict[str, int] = {}
        self.fold = LogFold()
        for e in entries:
            self.add(e)

    @classmethod
    def checked(cls, entries: Iterable[Entry], *, session_id: str | None = None) -> TreeIndex:
        """An index of ``entries`` appended in order to an empty session, each checked with
        :func:`check_append` against those before it (what creating a session holding them
        validates; entries of unknown types are kept, as read).

        Raises:
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: the first refused
                entry.
        """
        index = cls(session_id=session_id)
        for e in entries:
            check_append(e, index.type_of, session_id=session_id, keep_unknown=True)
            index.add(e)
        return index

    def type_of(self, entry_id: str) -> str | None:
        """The type of an entry, ``None`` when absent."""
        e = self.by_id.get(entry_id)
        return None if e is None else e.type

    def check(self, entry: Entry) -> None:
        """:func:`check_append` against this index."""
        check_append(entry, self.type_of, session_id=self.session_id)

    def add(self, entry: Entry) -> None:
        """Index an entry already known to be valid (no checks; see :meth:`check`)."""
        self.seq[entry.id] = len(self.entries)
        self.entries.append(entry)
        self.by_id[entry.id] = entry
        self.fold.add_entry(entry)

    def chain(self, leaf_id: str | None) -> list[Entry]:
        """:func:`trace_chain` over this index."""
        return trace_chain(leaf_id, self.by_id.get, session_id=self.session_id)

    def branch(self, leaf_id: str | None) -> list[Entry]:
        """The path root → ``leaf_id`` without bookkeeping entries."""
        return branch_of(self.chain(leaf_id))

    def tree(self) -> list[TreeNode]:
        """:func:`build_tree` over this index."""
        return build_tree(self.entries, self.fold.labels, session_id=self.session_id)
