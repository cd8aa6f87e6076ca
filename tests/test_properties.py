"""Property-based tests (hypothesis) of the tree and context invariants (docs/tree.md, docs/context.md, docs/branching.md).

Random sequences of operations run against the memory backend and, side by side, against a
deliberately simple reference model written here (dicts and lists, no shared code with the
library's tree or context modules). After every sequence:

* the branch is a root → leaf chain of path entries;
* the leaf is the pure function of the log in docs/tree.md;
* the context's messages equal the reference context, tool results aside;
* the tool-pair invariant of docs/context.md step 5 holds whatever the history;
* a fork equals a copy of the path.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree import Session
from sessiontree.context import find_tool_pair_problems
from sessiontree.entries import (
    CompactionEntry,
    LabelEntry,
    LeafEntry,
    SessionInfoEntry,
    dump_entry,
)
from sessiontree.messages import (
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from sessiontree.repos import MemoryRepo
from sessiontree.testing.builders import assistant, tool_call, tool_result, user

BOOKKEEPING = {"label", "session_info", "leaf"}

# ----------------------------------------------------------------------------- operations

op = st.one_of(
    st.tuples(st.just("user"), st.text("abcxyz ", max_size=8)),
    st.tuples(st.just("assistant"), st.lists(st.integers(0, 6), max_size=3)),
    st.tuples(st.just("result"), st.integers(0, 6)),
    st.tuples(st.just("model"), st.sampled_from(["m1", "m2"])),
    st.tuples(st.just("thinking"), st.sampled_from(["off", "low", "high"])),
    st.tuples(st.just("tools"), st.lists(st.sampled_from(["read", "bash"]), max_size=2)),
    st.tuples(st.just("leaf"), st.integers(0, 10_000)),
    st.tuples(st.just("leaf_none"), st.none()),
    st.tuples(
        st.just("label"), st.tuples(st.integers(0, 10_000), st.sampled_from(["x", "y", None]))
    ),
    st.tuples(st.just("name"), st.sampled_from(["a", "b"])),
    st.tuples(st.just("stale_name"), st.integers(-1, 10_000)),
    st.tuples(st.just("compact_pointer"), st.integers(0, 10_000)),
    st.tuples(st.just("compact_tail"), st.lists(st.integers(0, 6), max_size=3)),
    st.tuples(st.just("custom"), st.sampled_from(["proj", "plain"])),
    st.tuples(st.just("custom_message"), st.text("pq", max_size=3)),
    st.tuples(st.just("branch_summary"), st.sampled_from(["", "left"])),
)


def projector(entry: Any, index: int, entries: Any) -> list[dict[str, Any]]:
    return [user(f"projected {entry.data}")]


# ----------------------------------------------------------------------------- reference model


class Reference:
    """The simplest model of docs/tree.md/§3 that could possibly work."""

    def __init__(self) -> None:
        self.log: list[dict[str, Any]] = []
        self.by_id: dict[str, dict[str, Any]] = {}

    def add(self, wire: dict[str, Any]) -> None:
        self.log.append(wire)
        self.by_id[wire["id"]] = wire

    def leaf(self) -> str | None:
        for e in reversed(self.log):
            if e["type"] == "leaf":
                return e["targetId"]  # type: ignore[no-any-return]
            if e["type"] not in BOOKKEEPING:
                return e["id"]  # type: ignore[no-any-return]
        return None

    def chain(self, leaf: str | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while leaf is not None:
            e = self.by_id[leaf]
            out.insert(0, e)
            leaf = e["parentId"]
        return out

    def path(self, leaf: str | None) -> list[dict[str, Any]]:
        return [e for e in self.chain(leaf) if e["type"] not in BOOKKEEPING]

    def context_signature(self) -> list[tuple[Any, ...]]:
        path = self.path(self.leaf())
        ks = [i for i, e in enumerate(path) if e["type"] == "compaction"]
        if ks:
            k = ks[-1]
            c = path[k]
            if "retainedTail" in c:
                items = [c, *path[k + 1 :]]
            else:
                ids = [e["id"] for e in path[:k]]
                if c.get("firstKeptEntryId") in ids:
                    j = ids.index(c["firstKeptEntryId"])
                    kept = [e for e in path[j:k] if e["type"] != "compaction"]
                    items = [c, *kept, *path[k + 1 :]]
                else:
                    items = [c, *path[k + 1 :]]
        else:
            items = path
        sig: list[tuple[Any, ...]] = []
        for e in items:
            t = e["type"]
            if t == "message":
                m = e["message"]
                if m["role"] != "toolResult":
                    sig.append(wire_sig(m))
            elif t == "custom_message":
                sig.append(("custom", e["content"]))
            elif t == "compaction":
                sig.append(("compactionSummary", e["summary"]))
                sig.extend(
                    wire_sig(m) for m in e.get("retainedTail", []) if m["role"] != "toolResult"
                )
            elif t == "branch_summary" and e["summary"]:
                sig.append(("branchSummary", e["summary"]))
            elif t == "custom" and e["customType"] == "proj":
                sig.append(("user", f"projected {e['data']}"))
        return sig


def wire_sig(m: dict[str, Any]) -> tuple[Any, ...]:
    if m["role"] == "user":
        c = m["content"]
        return ("user", c if isinstance(c, str) else "\n".join(b["text"] for b in c))
    if m["role"] == "assistant":
        return ("assistant", tuple(b["id"] for b in m["content"] if b["type"] == "toolCall"))
    raise AssertionError(m)


def model_sig(m: Any) -> tuple[Any, ...]:
    if isinstance(m, UserMessage):
        return ("user", message_text(m))
    if isinstance(m, AssistantMessage):
        return ("assistant", tuple(c.id for c in m.tool_calls()))
    if isinstance(m, CustomMessage):
        return ("custom", m.content)
    if isinstance(m, CompactionSummaryMessage | BranchSummaryMessage):
        return (m.role, m.summary)
    raise AssertionError(m)


# ----------------------------------------------------------------------------- the run


async def apply(ops: list[tuple[str, Any]]) -> None:
    repo = MemoryRepo()
    s = await repo.create()
    ref = Reference()
    call_seq = [0]

    async def added(entry_id: str) -> None:
        entry = await s.get_entry(entry_id)
        assert entry is not None
        ref.add(dump_entry(entry))

    def pick(n: int, *, path_only: bool) -> str | None:
        pool = [e["id"] for e in ref.log if not path_only or e["type"] not in BOOKKEEPING]
        return pool[n % len(pool)] if pool else None

    for kind, arg in ops:
        if kind == "user":
            await added(await s.append_message(user(arg)))
        elif kind == "assistant":
            calls = []
            for _ in arg:
                call_seq[0] += 1
                calls.append(tool_call(f"c{call_seq[0]}"))
            await added(await s.append_message(assistant("", *calls)))
        elif kind == "result":
            call_id = f"c{max(1, call_seq[0] - arg)}"
            await added(await s.append_message(tool_result(call_id)))
        elif kind == "model":
            await added(await s.append_model_change("prov", arg))
        elif kind == "thinking":
            await added(await s.append_thinking_level_change(arg))
        elif kind == "tools":
            await added(await s.append_active_tools_change(arg))
        elif kind == "leaf":
            target = pick(arg, path_only=True)
            if target is not None:
                await s.set_leaf_id(target)
                (leaf_entry,) = await s.get_entries(reverse=True, limit=1)
                ref.add(dump_entry(leaf_entry))
        elif kind == "leaf_none":
            await s.set_leaf_id(None)
            (leaf_entry,) = await s.get_entries(reverse=True, limit=1)
            ref.add(dump_entry(leaf_entry))
        elif kind == "label":
            target = pick(arg[0], path_only=False)
            if target is not None:
                await added(await s.append_label(target, arg[1]))
        elif kind == "name":
            await added(await s.append_session_name(arg))
        elif kind == "stale_name":
            # a name line written by a client with a stale view (or parentId null)
            parent = pick(arg, path_only=True) if arg >= 0 else None
            await added(await s.append_entry(SessionInfoEntry(name="stale", parent_id=parent)))
        elif kind == "compact_pointer":
            kept = pick(arg, path_only=True)
            await added(await s.append_compaction("sum", 1, first_kept_entry_id=kept))
        elif kind == "compact_tail":
            tail: list[dict[str, Any]] = [user(f"tail {i}") for i in arg]
            await added(await s.append_compaction("tail", 1, retained_tail=tail))
        elif kind == "custom":
            await added(await s.append_custom_entry(arg, arg))
        elif kind == "custom_message":
            await added(await s.append_custom_message_entry("cm", arg))
        elif kind == "branch_summary":
            leaf = await s.get_leaf_id()
            if leaf is not None:
                await added(await s.append_branch_summary(arg, leaf))
        await check(s, ref)
    await check_fork(s, ref)


async def check(s: Session, ref: Reference) -> None:
    leaf = await s.get_leaf_id()
    assert leaf == ref.leaf()
    branch = await s.get_branch()
    assert [e.id for e in branch] == [e["id"] for e in ref.path(leaf)]
    for parent, child in itertools.pairwise(branch):
        # a chain: each entry's nearest path ancestor is the previous one
        anc = child.parent_id
        while anc is not None and anc != parent.id:
            e = await s.get_entry(anc)
            assert e is not None and e.type in BOOKKEEPING
            anc = e.parent_id
        assert anc == parent.id
    if branch:
        assert branch[-1].id == leaf
        assert all(not isinstance(e, LabelEntry | LeafEntry | SessionInfoEntry) for e in branch)
    ctx = await s.build_context(entry_projectors={"proj": projector})
    assert find_tool_pair_problems(ctx.messages) == []
    got = [model_sig(m) for m in ctx.messages if not isinstance(m, ToolResultMessage)]
    assert got == ref.context_signature()
    # every result in the context is the first stored result for its call, or a synthetic one
    stored: dict[str, Any] = {}
    for wire in ref.path(leaf):
        m = wire.get("message") if wire["type"] == "message" else None
        if m and m["role"] == "toolResult":
            stored.setdefault(m["toolCallId"], wire["message"])
    for m in ctx.messages:
        if isinstance(m, ToolResultMessage) and not m.is_error:
            assert m.tool_call_id in stored or any(isinstance(e, CompactionEntry) for e in branch)


async def check_fork(s: Session, ref: Reference) -> None:
    branch = await s.get_branch()
    if not branch:
        return
    target = branch[len(branch) // 2]
    fork = await s.fork(target.id)
    chain = ref.chain(target.id)
    fork_entries = await fork.get_entries()
    copied = [dump_entry(e) for e in fork_entries if e.type != "label" or e.id in ref.by_id]
    assert copied == chain
    assert await fork.get_leaf_id() == target.id
    for e in chain:
        assert await fork.get_label(e["id"]) == await s.get_label(e["id"])
    assert (await fork.get_metadata()).parent_session_id == s.id


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=40))
def test_tree_and_context_invariants(ops: list[tuple[str, Any]]) -> None:
    asyncio.run(apply(ops))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.booleans()), max_size=30))
def test_tool_pair_invariant_whatever_the_history(steps: list[tuple[int, int, bool]]) -> None:
    """Results before calls, duplicates, crashes mid-batch: repair always yields a valid context."""

    async def run() -> None:
        repo = MemoryRepo()
        s = await repo.create()
        n = 0
        for kind, k, flag in steps:
            if kind == 0:
                await s.append_message(user("u"))
            elif kind == 1:
                calls = [tool_call(f"k{n + i}") for i in range(k % 3 + 1)]
                n += len(calls)
                await s.append_message(assistant("", *calls))
            elif kind == 2:
                await s.append_message(tool_result(f"k{max(0, n - 1 - k)}" if flag else f"zz{k}"))
            else:
                branch = await s.get_branch()
                kept = branch[-1].id if flag and branch else None
                await s.append_compaction("s", 1, first_kept_entry_id=kept)
            ctx = await s.build_context()
            assert find_tool_pair_problems(ctx.messages) == []

    asyncio.run(run())
