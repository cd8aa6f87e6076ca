"""The transcript page: the leaf's branch as chat turns, one page at a time.

A session's entries are read once into a :class:`SessionIndex` (``get_entries`` in append
order) and then only what was appended since (``get_entries(after=last)``), so paging, the
fork switcher, the live update and the context chart of a big session cost one read of the
new entries each, not one of the whole session.

From the index, :func:`transcript_page` lays out the branch to a leaf:

* **turns** — a turn starts at each user message; a page holds the newest turns up to
  :data:`PAGE_ENTRIES` entries (opening at the leaf), and earlier ones are asked for with
  ``before`` (or the page holding an entry with ``at``);
* **tool calls by kind** (:func:`call_kind`) — edits and writes as unified diffs, shell
  commands with their output folded, reads collapsed to their path, sub-agent calls with the
  sub-agent's transcript nested under them;
* **sub-agents** — Claude Code writes a sub-agent's lines (``isSidechain``) into the parent's
  file as a conversation of its own (a root of the session); the importer keeps the line on
  the entry (``source.record``). A sidechain is nested under the call whose ``prompt`` is its
  first user message (else whose result is its last reply);
* **compactions and branch summaries** in place, with a link to what they replaced: the
  entries a compaction summarised (on this branch, before its first kept entry), the branch a
  summary left (its ``from_id``);
* **forks** — at every entry of the branch with more than one child, the other branches
  (each to its newest leaf) and a link comparing them with this one.

:func:`compare_view` lays two branches (of one session or two) side by side from the point
where they part; :func:`context_series` is the context size after each model call, with the
compactions marked. Everything here needs only the base install; HTML is made by the
templates.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontree.compaction import estimate_tokens
from sessiontree.entries import (
    BOOKKEEPING_TYPES,
    BranchSummaryEntry,
    CompactionEntry,
    Entry,
    LabelEntry,
    MessageEntry,
)
from sessiontree.errors import EntryNotFoundError
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from sessiontree.session import Session
from sessiontree.tree import labels_of
from sessiontree.web.render import (
    MessageView,
    clip_view,
    entry_message,
    message_view,
    pretty_json,
)

__all__ = [
    "CLIP",
    "PAGE_ENTRIES",
    "CallView",
    "CompareView",
    "ContextPoint",
    "DiffLine",
    "ForkChoice",
    "Item",
    "SessionIndex",
    "SidechainView",
    "TranscriptPage",
    "Turn",
    "call_kind",
    "compare_view",
    "context_series",
    "edit_diff",
    "transcript_page",
]

PAGE_ENTRIES = 120
"""Entries of the branch a transcript page holds at least (whole turns, newest first, unless
one turn alone is longer than :data:`PAGE_MAX`)."""
PAGE_MAX = 400
"""Entries a page never exceeds: a longer turn is cut inside."""
CLIP = 20_000
"""Characters of each text a transcript shows (the entry page shows all)."""
SIDECHAIN_MAX = 300
"""Entries of one nested sub-agent transcript shown (the rest behind a link)."""
DIFF_MAX_LINES = 400
"""Lines of one edit's diff shown."""
CHART_POINTS = 1500
"""Points the context chart draws at most (a longer branch shows each run's largest)."""
BRANCHES_KEPT = 4
"""Branches of one session whose layout the index keeps."""

EDIT_TOOLS = frozenset({"edit", "multiedit", "str_replace", "replace", "edit_file", "apply_patch"})
WRITE_TOOLS = frozenset({"write", "create", "write_file", "create_file"})
SHELL_TOOLS = frozenset(
    {"bash", "shell", "exec_command", "run_shell_command", "execute_command", "local_shell", "sh"}
)
READ_TOOLS = frozenset({"read", "read_file", "view", "cat", "notebookread"})
AGENT_TOOLS = frozenset({"task", "agent", "subagent", "spawn_agent"})


def _source_record(entry: Entry) -> dict[str, Any] | None:
    """The agent's own record an importer kept on the entry (``source.record``), if any."""
    source = (entry.model_extra or {}).get("source")
    if isinstance(source, dict):
        record = source.get("record")
        if isinstance(record, dict):
            return record
    return None


def is_sidechain(entry: Entry) -> bool:
    """Whether the entry is a line of a Claude Code sub-agent (``isSidechain``)."""
    record = _source_record(entry)
    return record is not None and record.get("isSidechain") is True


class SessionIndex:
    """A session's entries in memory, kept up to date by reading only what was appended.

    ``entries`` maps id → entry; ``order`` is append order; ``children`` maps a parent id
    (``None`` for roots) to the ids of its path entries (bookkeeping entries are no one's
    children); ``labels`` maps entry id → label.
    """

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        self.order: list[str] = []
        self.position: dict[str, int] = {}
        self.children: dict[str | None, list[str]] = {}
        self.labels: dict[str, str] = {}
        self._label_entries: list[Entry] = []
        self.branches: dict[str | None, Branch] = {}
        """The branches pages were laid out for, by leaf id (see :func:`_branch`)."""

    @property
    def last_id(self) -> str | None:
        """The newest entry read, ``None`` before the first."""
        return self.order[-1] if self.order else None

    async def refresh(self, session: Session) -> int:
        """Read the entries appended since the last call; returns how many were new."""
        new = await session.get_entries(after=self.last_id)
        self.add(new)
        return len(new)

    def add(self, entries: Iterable[Entry]) -> None:
        """Take in entries read in append order."""
        labels_changed = False
        for e in entries:
            if e.id in self.entries:
                continue
            self.entries[e.id] = e
            self.position[e.id] = len(self.order)
            self.order.append(e.id)
            if isinstance(e, LabelEntry):
                self._label_entries.append(e)
                labels_changed = True
            elif e.type not in BOOKKEEPING_TYPES:
                self.children.setdefault(e.parent_id, []).append(e.id)
        if labels_changed:
            self.labels = labels_of(self._label_entries)

    def branch(self, leaf_id: str | None) -> list[Entry]:
        """The path root → ``leaf_id`` (path entries only).

        Raises:
            EntryNotFoundError: ``leaf_id`` is not in the index.
        """
        if leaf_id is None:
            return []
        if leaf_id not in self.entries:
            raise EntryNotFoundError(f"entry {leaf_id!r} is not in this session")
        out: list[Entry] = []
        seen: set[str] = set()
        at: str | None = leaf_id
        while at is not None and at not in seen:
            seen.add(at)
            entry = self.entries.get(at)
            if entry is None:
                break
            if entry.type not in BOOKKEEPING_TYPES:
                out.append(entry)
            at = entry.parent_id
        out.reverse()
        return out

    def newest_leaf(self, entry_id: str) -> str:
        """The newest leaf under ``entry_id``: following the most recently appended child."""
        at = entry_id
        while self.children.get(at):
            at = self.children[at][-1]
        return at


class Branch:
    """What the pages of one branch need, kept by the index and extended when the branch
    grows at its leaf: the path, each entry's place on it, the turn starts, the chart."""

    def __init__(self, leaf_id: str | None) -> None:
        self.leaf_id = leaf_id
        self.path: list[Entry] = []
        self.where: dict[str, int] = {}
        self.starts: set[int] = {0}
        self.turns = 0
        self.series = ContextSeries()

    def extend(self, entries: Iterable[Entry], leaf_id: str | None) -> None:
        """Add the entries after the current leaf, in path order; ``leaf_id`` is the new leaf."""
        for e in entries:
            i = len(self.path)
            self.path.append(e)
            self.where[e.id] = i
            if _is_turn_start(e):
                self.starts.add(i)
                self.turns += 1
            self.series.add(e)
        self.leaf_id = leaf_id


def _branch(index: SessionIndex, leaf_id: str | None) -> Branch:
    """The index's :class:`Branch` to ``leaf_id``: the one kept, extended when the leaf is
    a descendant of its leaf, else built anew (and kept).

    Raises:
        EntryNotFoundError: ``leaf_id`` is not in the index.
    """
    kept = index.branches.get(leaf_id)
    if kept is not None:
        return kept
    if leaf_id is not None and leaf_id not in index.entries:
        raise EntryNotFoundError(f"entry {leaf_id!r} is not in this session")
    for old in list(index.branches.values()):
        # a leaf that moved on: walk back from the new leaf to the old one
        new: list[Entry] = []
        at: str | None = leaf_id
        while at is not None and at != old.leaf_id and at not in old.where:
            entry = index.entries.get(at)
            if entry is None:
                break
            if entry.type not in BOOKKEEPING_TYPES:
                new.append(entry)
            at = entry.parent_id
        if at is not None and at == old.leaf_id:
            del index.branches[old.leaf_id]
            new.reverse()
            old.extend(new, leaf_id)
            index.branches[leaf_id] = old
            return old
    branch = Branch(None)
    branch.extend(index.branch(leaf_id), leaf_id)
    index.branches[leaf_id] = branch
    while len(index.branches) > BRANCHES_KEPT:
        index.branches.pop(next(iter(index.branches)))
    return branch


# ----------------------------------------------------------------------------- tool calls


@dataclass
class DiffLine:
    """One line of a unified diff: ``kind`` is add, del, ctx or hunk."""

    kind: str
    text: str


@dataclass
class CallView:
    """A tool call as the transcript shows it, beside its result.

    ``kind`` is edit, write, shell, read, agent or other; ``path`` the file an edit, write or
    read names; ``command`` a shell command; ``diff`` an edit's or write's lines; ``output``
    the result's text; ``result`` the result as a message view (images, errors);
    ``sidechain`` the sub-agent transcript it started; ``agent_session`` the id of a
    sub-agent's own session in the store.
    """

    call: ToolCall
    kind: str
    path: str | None = None
    command: str | None = None
    diff: list[DiffLine] = field(default_factory=list)
    diff_clipped: int = 0
    output: str = ""
    result: MessageView | None = None
    result_id: str | None = None
    is_error: bool = False
    sidechain: SidechainView | None = None
    agent_session: str | None = None
    description: str = ""

    @property
    def arguments(self) -> str:
        """The call's arguments as indented JSON."""
        return pretty_json(self.call.arguments)

    @property
    def output_lines(self) -> int:
        return self.output.count("\n") + 1 if self.output else 0


def _first_str(args: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def call_kind(call: ToolCall) -> str:
    """What a tool call does, from its name and arguments: edit, write, shell, read, agent or
    other."""
    name = call.name.lower().rsplit("__", 1)[-1].rsplit(".", 1)[-1]
    args = call.arguments
    if name in AGENT_TOOLS and isinstance(args.get("prompt"), str):
        return "agent"
    if name == "str_replace_based_edit_tool" or name == "str_replace_editor":
        command = args.get("command")
        if command == "view":
            return "read"
        if command == "create":
            return "write"
        return "edit"
    if name in EDIT_TOOLS or "old_string" in args or "oldText" in args:
        return "edit"
    if name in WRITE_TOOLS:
        return "write"
    if name in SHELL_TOOLS or (name.endswith("shell") and ("command" in args or "cmd" in args)):
        return "shell"
    if name in READ_TOOLS:
        return "read"
    return "other"


def _command(args: dict[str, Any]) -> str:
    value = args.get("command", args.get("cmd"))
    if isinstance(value, list):
        parts = [str(v) for v in value]
        if len(parts) == 3 and parts[1] in ("-lc", "-c"):
            return parts[2]  # Codex's ["bash", "-lc", script]
        return " ".join(parts)
    return str(value) if value is not None else ""


def edit_diff(old: str, new: str, *, context: int = 3) -> list[DiffLine]:
    """The unified diff of ``old`` → ``new`` as lines (``@@`` hunks, ``+``/``-``/context),
    without the file header."""
    out: list[DiffLine] = []
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=context)
    for line in itertools.islice(lines, 2, None):  # skip the ---/+++ header
        if line.startswith("@@"):
            out.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            out.append(DiffLine("add", line))
        elif line.startswith("-"):
            out.append(DiffLine("del", line))
        else:
            out.append(DiffLine("ctx", line))
    return out


def _patch_lines(patch: str) -> list[DiffLine]:
    """A patch given as text (Codex's ``apply_patch``) coloured line by line."""
    out = []
    for line in patch.splitlines():
        if line.startswith("@@") or line.startswith("***"):
            out.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            out.append(DiffLine("add", line))
        elif line.startswith("-"):
            out.append(DiffLine("del", line))
        else:
            out.append(DiffLine("ctx", line))
    return out


def _call_diff(call: ToolCall, kind: str) -> list[DiffLine]:
    args = call.arguments
    if kind == "write":
        content = _first_str(args, "content", "file_text", "text") or ""
        return edit_diff("", content)
    patch = _first_str(args, "patch", "input")
    if patch is not None and "old_string" not in args:
        return _patch_lines(patch)
    edits = args.get("edits")
    pairs: list[tuple[str, str]] = []
    if isinstance(edits, list):
        for e in edits:
            if isinstance(e, dict):
                old = _first_str(e, "old_string", "oldText", "old_str") or ""
                new = _first_str(e, "new_string", "newText", "new_str") or ""
                pairs.append((old, new))
    else:
        old = _first_str(args, "old_string", "oldText", "old_str") or ""
        new = _first_str(args, "new_string", "newText", "new_str") or ""
        pairs.append((old, new))
    out: list[DiffLine] = []
    for old, new in pairs:
        out.extend(edit_diff(old, new) or [DiffLine("ctx", "(no change)")])
    return out


def make_call_view(call: ToolCall) -> CallView:
    """A call's :class:`CallView` without its result."""
    kind = call_kind(call)
    args = call.arguments
    view = CallView(call, kind)
    view.path = _first_str(args, "file_path", "path", "filePath", "notebook_path", "file")
    view.description = _first_str(args, "description") or ""
    if kind == "shell":
        view.command = _command(args)
    elif kind in ("edit", "write"):
        diff = _call_diff(call, kind)
        if len(diff) > DIFF_MAX_LINES:
            view.diff_clipped = len(diff) - DIFF_MAX_LINES
            diff = diff[:DIFF_MAX_LINES]
        view.diff = diff
    return view


def _attach_result(view: CallView, entry: MessageEntry, msg: ToolResultMessage) -> None:
    view.result = clip_view(message_view(msg), CLIP)
    view.result_id = entry.id
    view.is_error = msg.is_error
    view.output = message_text(msg)[:CLIP]
    details = msg.details
    if isinstance(details, dict) and isinstance(details.get("agentId"), str):
        view.agent_session = details["agentId"]


# ----------------------------------------------------------------------------- items, turns


@dataclass
class ForkChoice:
    """Another branch at a fork point: its first entry, newest leaf and a gist."""

    child_id: str
    leaf_id: str
    gist: str
    entries: int


@dataclass
class Item:
    """One thing shown in a turn.

    ``kind`` is message (``message`` with ``calls``), compaction, branch_summary or note;
    ``forks`` the other branches when the entry is a fork point.
    """

    entry: Entry
    kind: str
    message: MessageView | None = None
    role: str = ""
    calls: list[CallView] = field(default_factory=list)
    text: str = ""
    replaced_id: str | None = None
    """Compaction: the first entry it summarised; branch summary: the leaf it left."""
    replaced_count: int = 0
    replaced_on_page: bool = False
    retained: list[str] = field(default_factory=list)
    """Compaction: gists of the messages it kept in place of the history (``retained_tail``)."""
    forks: list[ForkChoice] = field(default_factory=list)
    label: str | None = None
    is_leaf: bool = False

    @property
    def id(self) -> str:
        return self.entry.id


@dataclass
class Turn:
    """A user message and everything after it up to the next one."""

    start_id: str
    items: list[Item] = field(default_factory=list)
    number: int = 0


@dataclass
class SidechainView:
    """A sub-agent's transcript nested under the call that started it."""

    root_id: str
    label: str
    items: list[Item]
    total: int
    leaf_id: str
    more: int = 0
    """Entries past :data:`SIDECHAIN_MAX` not shown here (the sub-agent's branch shows all)."""


@dataclass
class TranscriptPage:
    """One page of the transcript of the branch to ``leaf_id``."""

    leaf_id: str | None
    current_leaf: str | None
    turns: list[Turn]
    first_turn: int
    turn_count: int
    path_length: int
    has_before: bool
    has_after: bool
    first_id: str | None
    last_id: str | None
    chart: list[ContextPoint]
    compactions: list[tuple[int, str]]
    sidechains: int = 0


def _gist(entry: Entry, width: int = 90) -> str:
    msg = entry_message(entry)
    text = message_text(msg) if msg is not None else entry.type
    text = " ".join(text.split())
    if isinstance(msg, AssistantMessage) and not text:
        names = [c.name for c in msg.tool_calls()]
        text = "calls " + ", ".join(names) if names else "(empty reply)"
    role = getattr(msg, "role", entry.type)
    text = f"{role}: {text}"
    return text if len(text) <= width else text[: width - 1] + "…"


def _message_gist(msg: AgentMessage, width: int = 90) -> str:
    text = f"{getattr(msg, 'role', '?')}: {' '.join(message_text(msg).split())}"
    return text if len(text) <= width else text[: width - 1] + "…"


def _is_turn_start(entry: Entry) -> bool:
    return isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage)


def _shown(entry: Entry) -> bool:
    """Whether the transcript shows the entry (messages, summaries, visible custom
    messages); model and tool changes and extension data are not conversation."""
    if isinstance(entry, MessageEntry | CompactionEntry | BranchSummaryEntry):
        return True
    return entry.type == "custom_message" and bool(getattr(entry, "display", True))


def _forks(index: SessionIndex, entry: Entry, on_path: set[str]) -> list[ForkChoice]:
    kids = [k for k in index.children.get(entry.id, []) if not is_sidechain(index.entries[k])]
    if len(kids) < 2:
        return []
    out = []
    for kid in kids:
        if kid in on_path:
            continue
        leaf = index.newest_leaf(kid)
        depth = index.position[leaf] - index.position[kid]
        out.append(ForkChoice(kid, leaf, _gist(index.entries[kid]), max(1, depth + 1)))
    return out


class _Builder:
    """Makes :class:`Item` rows of a run of entries, pairing results with their calls."""

    def __init__(
        self, index: SessionIndex, path_ids: set[str], leaf_id: str | None, nested: bool
    ) -> None:
        self.index = index
        self.path_ids = path_ids
        self.leaf_id = leaf_id
        self.open: dict[str, list[CallView]] = {}
        self.nested = nested
        self.calls: list[CallView] = []

    def items(self, entries: Sequence[Entry]) -> list[Item]:
        out: list[Item] = []
        for e in entries:
            item = self.item(e)
            if item is not None:
                out.append(item)
        return out

    def item(self, e: Entry) -> Item | None:
        forks = [] if self.nested else _forks(self.index, e, self.path_ids)
        if not _shown(e):
            if forks:  # a fork point must stay visible even when it is not conversation
                return Item(e, "note", text=_gist(e), forks=forks)
            return None
        base = Item(
            e,
            "message",
            forks=forks,
            label=self.index.labels.get(e.id),
            is_leaf=e.id == self.leaf_id,
        )
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage):
            waiting = self.open.get(e.message.tool_call_id)
            if waiting:
                _attach_result(waiting.pop(0), e, e.message)
                if not forks and not base.label and not base.is_leaf:
                    return None
                base.kind = "note"
                base.text = (
                    f"result of {e.message.tool_name or 'a tool call'} (shown with the call)"
                )
                return base
        if isinstance(e, CompactionEntry):
            base.kind = "compaction"
            base.text = e.summary
            base.replaced_id = e.first_kept_entry_id
            base.retained = [_message_gist(m) for m in e.retained_tail or []]
            return base
        if isinstance(e, BranchSummaryEntry):
            base.kind = "branch_summary"
            base.text = e.summary
            base.replaced_id = e.from_id
            return base
        msg = entry_message(e)
        if msg is None:
            return None
        view = clip_view(message_view(msg), CLIP)
        view.blocks = [b for b in view.blocks if b.kind != "call"]
        base.message = view
        base.role = str(getattr(msg, "role", ""))
        if isinstance(msg, AssistantMessage):
            for call in msg.tool_calls():
                cv = make_call_view(call)
                self.open.setdefault(call.id, []).append(cv)
                base.calls.append(cv)
                self.calls.append(cv)
        return base


def _sidechains(index: SessionIndex) -> list[tuple[str, list[Entry]]]:
    """Each sub-agent conversation of the session: its root id and its entries (root to the
    newest leaf)."""
    out = []
    for root in index.children.get(None, []):
        entry = index.entries[root]
        if is_sidechain(entry):
            out.append((root, index.branch(index.newest_leaf(root))))
    return out


def _attach_sidechains(index: SessionIndex, calls: Sequence[CallView]) -> int:
    """Nest each sidechain under the agent call that started it; returns how many were."""
    agent_calls = [c for c in calls if c.kind == "agent"]
    if not agent_calls:
        return 0
    by_prompt: dict[str, list[CallView]] = {}
    for c in agent_calls:
        prompt = c.call.arguments.get("prompt")
        if isinstance(prompt, str):
            by_prompt.setdefault(prompt.strip(), []).append(c)
    attached = 0
    for root, entries in _sidechains(index):
        first = entries[0] if entries else None
        msg = entry_message(first) if first is not None else None
        prompt = message_text(msg).strip() if msg is not None else ""
        found = next((c for c in by_prompt.get(prompt, []) if c.sidechain is None), None)
        if found is None:
            last_reply = next(
                (
                    message_text(m.message).strip()
                    for m in reversed(entries)
                    if isinstance(m, MessageEntry) and isinstance(m.message, AssistantMessage)
                ),
                "",
            )
            found = next(
                (
                    c
                    for c in agent_calls
                    if c.sidechain is None and last_reply and c.output.strip() == last_reply
                ),
                None,
            )
        if found is None:
            continue
        builder = _Builder(index, set(), None, nested=True)
        shown = entries[:SIDECHAIN_MAX]
        label = found.call.arguments.get("subagent_type") or "sub-agent"
        desc = found.description or prompt[:60]
        found.sidechain = SidechainView(
            root,
            f"{label}: {desc}",
            builder.items(shown),
            len(entries),
            entries[-1].id,
            max(0, len(entries) - SIDECHAIN_MAX),
        )
        attached += 1
    return attached


# ----------------------------------------------------------------------------- the page


def _page_bounds(
    path: Sequence[Entry], starts: set[int], *, before: int | None, at: int | None
) -> tuple[int, int]:
    """``(lo, hi)``: the slice of ``path`` a page shows."""
    if at is not None:
        lo = max((s for s in starts if s <= at), default=0)
        hi = lo
        while hi < len(path) and (hi - lo < PAGE_ENTRIES or hi not in starts):
            hi += 1
            if hi - lo >= PAGE_MAX:
                break
        return lo, max(hi, at + 1)
    hi = len(path) if before is None else before
    lo = hi
    while lo > 0 and (hi - lo < PAGE_ENTRIES or lo not in starts):
        lo -= 1
        if hi - lo >= PAGE_MAX:
            break
    return lo, hi


def transcript_page(
    index: SessionIndex,
    leaf_id: str | None,
    current_leaf: str | None,
    *,
    before: str | None = None,
    at: str | None = None,
    after_turn: str | None = None,
) -> TranscriptPage:
    """The page of the transcript of the branch to ``leaf_id`` (pure: reads only ``index``).

    By default the newest turns (opening at the leaf); ``before``: the turns before that
    entry; ``at``: the page whose turn holds that entry; ``after_turn``: from that turn's
    start to the leaf (what a live update redraws).

    Raises:
        EntryNotFoundError: ``leaf_id``, ``before``, ``at`` or ``after_turn`` is not an
            entry of the branch.
    """
    branch = _branch(index, leaf_id)
    path, where, start_set = branch.path, branch.where, branch.starts
    for name, value in (("before", before), ("at", at), ("after_turn", after_turn)):
        if value is not None and value not in where:
            raise EntryNotFoundError(f"{name}: entry {value!r} is not on this branch")
    if after_turn is not None:
        lo, hi = where[after_turn], len(path)
    else:
        lo, hi = _page_bounds(
            path,
            start_set,
            before=where[before] if before is not None else None,
            at=where[at] if at is not None else None,
        )
    ids = set(where)
    builder = _Builder(index, ids, current_leaf, nested=False)
    turns: list[Turn] = []
    turn_number = sum(1 for i in start_set if i < lo and _is_turn_start(path[i]))
    for i in range(lo, hi):
        e = path[i]
        if _is_turn_start(e):
            turn_number += 1
            turns.append(Turn(e.id, number=turn_number))
        elif not turns:
            turns.append(Turn(e.id, number=turn_number))
        item = builder.item(e)
        if item is not None:
            turns[-1].items.append(item)
    shown_ids = {e.id for e in path[lo:hi]}
    for turn in turns:
        for item in turn.items:
            if item.kind == "compaction":
                first_kept = where.get(item.replaced_id or "", where[item.id])
                prev = max(
                    (
                        where[mark]
                        for _, mark in branch.series.marks
                        if where[mark] < first_kept and mark != item.id
                    ),
                    default=-1,
                )
                first = next(
                    (j for j in range(prev + 1, first_kept) if _shown(path[j])), first_kept
                )
                item.replaced_count = sum(
                    1 for e in path[prev + 1 : first_kept] if _shown(e) and e.type == "message"
                )
                item.replaced_id = path[first].id if first < first_kept else None
                item.replaced_on_page = item.replaced_id in shown_ids
            elif item.kind == "branch_summary" and item.replaced_id not in index.entries:
                item.replaced_id = None  # the branch left is not in this session
    sidechains = _attach_sidechains(index, builder.calls)
    return TranscriptPage(
        leaf_id=leaf_id,
        current_leaf=current_leaf,
        turns=[t for t in turns if t.items],
        first_turn=turns[0].number if turns else 0,
        turn_count=branch.turns,
        path_length=len(path),
        has_before=lo > 0,
        has_after=hi < len(path),
        first_id=path[lo].id if lo < len(path) else None,
        last_id=path[hi - 1].id if hi > 0 and path else None,
        chart=branch.series.shown(),
        compactions=list(branch.series.marks),
        sidechains=sidechains,
    )


# ----------------------------------------------------------------------------- the chart


@dataclass
class ContextPoint:
    """The context after one model call: ``call`` is its 1-based number on the branch,
    ``tokens`` what the provider reported it read (input + cache) or, where no report,
    the estimated size of the messages since the last compaction; ``reported`` says which."""

    call: int
    tokens: int
    reported: bool


class ContextSeries:
    """The context size over the model calls of a branch, built entry by entry (so a branch
    that grows at its leaf is extended, not recounted): ``points`` one per model call,
    ``marks`` the compactions as ``(call number before which it happened, entry id)``.

    Messages are estimated (:func:`~sessiontree.compaction.estimate_tokens`) only when a
    call has no usage report to show, so a branch whose calls all report costs no estimate.
    """

    def __init__(self) -> None:
        self.points: list[ContextPoint] = []
        self.marks: list[tuple[int, str]] = []
        self._estimate = 0
        self._pending: list[AgentMessage] = []

    def add(self, e: Entry) -> None:
        """Take in the next entry of the branch."""
        if isinstance(e, CompactionEntry):
            self.marks.append((len(self.points) + 1, e.id))
            self._estimate = len(e.summary) // 4
            self._pending = list(e.retained_tail or [])
            return
        if not isinstance(e, MessageEntry):
            return
        msg = e.message
        self._pending.append(msg)
        if isinstance(msg, AssistantMessage):
            u = msg.usage
            read = (u.input + u.cache_read + u.cache_write) if u is not None else 0
            if u is not None and read:
                self.points.append(ContextPoint(len(self.points) + 1, read + u.output, True))
            else:
                self._estimate += sum(estimate_tokens(m) for m in self._pending)
                self._pending = []
                self.points.append(ContextPoint(len(self.points) + 1, self._estimate, False))

    def shown(self, most: int = CHART_POINTS) -> list[ContextPoint]:
        """The points, at most ``most``: past that, the largest of each run of calls."""
        if len(self.points) <= most:
            return list(self.points)
        size = -(-len(self.points) // most)
        out = []
        for start in range(0, len(self.points), size):
            run = self.points[start : start + size]
            top = max(run, key=lambda p: p.tokens)
            out.append(ContextPoint(run[-1].call, top.tokens, top.reported))
        return out


def context_series(path: Sequence[Entry]) -> tuple[list[ContextPoint], list[tuple[int, str]]]:
    """The context size after each model call of a branch, and its compactions (see
    :class:`ContextSeries`)."""
    series = ContextSeries()
    for e in path:
        series.add(e)
    return series.points, series.marks


# ----------------------------------------------------------------------------- compare


@dataclass
class CompareView:
    """Two branches side by side from the point where they part.

    ``shared`` counts the messages both have before they differ; ``rows`` pairs the
    messages after it (``None`` where one side has fewer); ``same`` marks rows whose two
    messages say the same.
    """

    left_title: str
    right_title: str
    shared: int
    fork_gist: str | None
    rows: list[tuple[Item | None, Item | None, bool]]
    left_more: int = 0
    right_more: int = 0


COMPARE_MAX = 300
"""Message pairs a comparison shows after the fork point."""


def _message_key(entry: Entry) -> tuple[str, str]:
    msg = entry_message(entry)
    return (str(getattr(msg, "role", entry.type)), message_text(msg) if msg is not None else "")


def compare_view(
    left: tuple[SessionIndex, str | None, str],
    right: tuple[SessionIndex, str | None, str],
) -> CompareView:
    """Compare the branches ``(index, leaf id, title)`` of ``left`` and ``right`` (one session
    or two): entries with the same id, or messages with the same role and text, are shared
    until the first that differs; the rest are paired in order.

    Raises:
        EntryNotFoundError: a leaf is not in its index.
    """
    li, ll, lt = left
    ri, rl, rt = right
    lp = [e for e in li.branch(ll) if _shown(e)]
    rp = [e for e in ri.branch(rl) if _shown(e)]
    shared = 0
    for a, b in zip(lp, rp, strict=False):
        if a.id != b.id and _message_key(a) != _message_key(b):
            break
        shared += 1
    fork_gist = _gist(lp[shared - 1]) if shared else None
    lb = _Builder(li, set(), None, nested=True)
    rb = _Builder(ri, set(), None, nested=True)
    litems = lb.items(lp[shared : shared + COMPARE_MAX])
    ritems = rb.items(rp[shared : shared + COMPARE_MAX])
    rows: list[tuple[Item | None, Item | None, bool]] = []
    for left_item, right_item in itertools.zip_longest(litems, ritems):
        same = (
            left_item is not None
            and right_item is not None
            and _message_key(left_item.entry) == _message_key(right_item.entry)
        )
        rows.append((left_item, right_item, same))
    return CompareView(
        lt,
        rt,
        shared,
        fork_gist,
        rows,
        max(0, len(lp) - shared - COMPARE_MAX),
        max(0, len(rp) - shared - COMPARE_MAX),
    )
