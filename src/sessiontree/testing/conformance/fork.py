"""Conformance: forking a session at or before an entry (capability ``fork``)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from sessiontree.entries import (
    BranchSummaryEntry,
    Entry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    OpaqueEntry,
    dump_entry,
    dump_entry_json,
)
from sessiontree.errors import (
    DuplicateEntryError,
    EntryNotFoundError,
    InvalidEntryError,
    SessionNotFoundError,
)
from sessiontree.messages import BranchSummaryMessage, parse_message
from sessiontree.repos.base import SessionRepo
from sessiontree.testing.builders import assistant, tool_call, user
from sessiontree.testing.conformance._base import (
    Conformance,
    Reopen,
    reopened,
    snapshot,
)

__all__ = ["ForkConformance"]


class ForkConformance(Conformance):
    """Forking a session at or before an entry."""

    capability: ClassVar[str] = "fork"

    async def test_fork_at(self, repo: SessionRepo, reopen: Reopen) -> None:
        s = await repo.create(metadata={"systemPrompt": "sp"})
        u = await s.append_message(user("q"))
        a = await s.append_message(assistant("a"))
        await s.append_label(u, "question")
        await s.append_label(a, "to be cleared")
        await s.append_label(a, None)
        later = await s.append_message(user("later"))
        original = await snapshot(s)
        fork = await s.fork(a)
        assert fork.id != s.id
        branch = await fork.get_branch()
        assert [dump_entry(e) for e in branch] == [dump_entry(e) for e in (await s.get_branch(a))]
        assert await fork.get_leaf_id() == a
        assert await fork.get_label(u) == "question"
        assert await fork.get_label(a) is None
        assert await fork.find_entry(later) is None
        meta = await fork.get_metadata()
        assert meta.parent_session_id == s.id and meta.forked_from_entry_id == a
        assert meta.system_prompt == "sp"
        new = await fork.append_message(user("only in the fork"))
        assert await s.find_entry(new) is None
        assert await snapshot(s) == original
        infos = {i.id: i for i in await repo.list()}
        assert infos[fork.id].parent_session_id == s.id
        async with reopened(reopen, fork) as again:
            assert await again.get_leaf_id() == new

    async def test_fork_before(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("q"))
        a = await s.append_message(assistant("a"))
        u2 = await s.append_message(user("ask again differently"))
        fork = await s.fork(u2, position="before")
        assert [e.id for e in await fork.get_branch()] == [u, a]
        assert await fork.get_leaf_id() == a
        empty = await s.fork(u, position="before")
        assert await empty.get_leaf_id() is None
        assert await empty.get_entries() == []
        assert (await empty.get_metadata()).parent_session_id == s.id

    async def test_fork_via_repo_and_rejections(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("q"))
        lab = await s.append_label(u, "l")
        before = await snapshot(s)
        count = len(await repo.list())
        fork = await repo.fork(s.id, u)
        assert [e.id for e in await fork.get_branch()] == [u]
        with pytest.raises(EntryNotFoundError):
            await s.fork("ghost")
        with pytest.raises(InvalidEntryError):
            await s.fork(lab)
        with pytest.raises(InvalidEntryError):
            await s.fork(u, position="sideways")  # type: ignore[arg-type]
        with pytest.raises(SessionNotFoundError):
            await repo.fork("no-such-session", u)
        assert await snapshot(s) == before
        assert len(await repo.list()) == count + 1

    async def test_fork_at_and_below_a_branch_summary(
        self, repo: SessionRepo, reopen: Reopen
    ) -> None:
        # a fork copies the path; the branch summary on it names the abandoned leaf, which
        # is not copied (this failed with "fromId names no entry" on every backend)
        s = await repo.create()
        u = await s.append_message(user("first question"))
        a = await s.append_message(assistant("first answer"))
        await s.append_message(user("a detour"))
        left = await s.append_message(assistant("the detour's answer"))
        summary_id = await s.navigate(a, summarize=True)
        assert summary_id is not None
        after = await s.append_message(user("back on track"))
        original = await snapshot(s)
        for target, position in ((summary_id, "at"), (after, "at"), (after, "before")):
            fork = await s.fork(target, position)  # type: ignore[arg-type]
            copy = await fork.get_entry(summary_id)
            assert isinstance(copy, BranchSummaryEntry)
            assert copy.from_id is None  # the branch that was left is not in the fork
            assert copy.summary and copy.parent_id == a
            assert await fork.find_entry(left) is None
            ctx = await fork.build_context()
            summaries = [m for m in ctx.messages if isinstance(m, BranchSummaryMessage)]
            assert [m.summary for m in summaries] == [copy.summary]
            async with reopened(reopen, fork) as again:
                stored = await again.get_entry(summary_id)
            assert isinstance(stored, BranchSummaryEntry) and stored.from_id is None
            assert dump_entry(stored)["fromId"] is None
            # the fork of a fork works too
            second = await fork.fork(summary_id)
            assert [e.id for e in await second.get_branch()] == [u, a, summary_id]
        source = await s.get_entry(summary_id)
        assert isinstance(source, BranchSummaryEntry) and source.from_id == left
        assert await snapshot(s) == original

    async def test_fork_through_a_label_entry_on_the_path(
        self, repo: SessionRepo, reopen: Reopen
    ) -> None:
        # files of other tools chain path entries under label entries, which may label an
        # entry of another branch; the fork copies the label entry without its target
        s = await repo.create()
        root = await s.append_message(user("root"))
        other = await s.append_message(assistant("on another branch"))
        await s.append_label(root, "start")
        u = MessageEntry(parent_id=root, message=parse_message(user("here")))
        passing = LabelEntry(parent_id=u.id, target_id=other, label="elsewhere")
        relabel = LabelEntry(parent_id=passing.id, target_id=u.id, label="old name")
        m = MessageEntry(parent_id=relabel.id, message=parse_message(assistant("below")))
        await s.storage.append_entries([u, passing, relabel, m])
        await s.append_label(u.id, None)  # cleared since: the fork must not bring it back
        fork = await s.fork(m.id)
        chain = await fork.storage.get_branch(include_bookkeeping=True)
        assert [e.id for e in chain] == [root, u.id, passing.id, relabel.id, m.id]
        copied = await fork.get_entry(passing.id)
        assert isinstance(copied, LabelEntry) and copied.target_id is None
        assert await fork.get_label(root) == "start"
        assert await fork.get_label(u.id) is None
        assert await fork.find_entry(other) is None
        async with reopened(reopen, fork) as again:
            assert await again.get_label(u.id) is None
            assert await again.get_label(root) == "start"
            assert [e.id for e in await again.get_branch()] == [root, u.id, m.id]

    async def test_fork_below_an_entry_of_unknown_type(
        self, repo: SessionRepo, reopen: Reopen
    ) -> None:
        # a newer writer's entry on the path is kept opaque; a fork copies it as read
        u = MessageEntry(message=parse_message(user("q")))
        future = OpaqueEntry(type="future_kind", parent_id=u.id, payload={"x": [1, 2]})
        below = MessageEntry(parent_id=future.id, message=parse_message(assistant("a")))
        s = await repo.create(entries=[u, future, below])
        fork = await s.fork(below.id)
        got = await fork.get_entry(future.id)
        assert got is not None and dump_entry(got) == dump_entry(future)
        assert [e.id for e in await fork.get_branch()] == [u.id, future.id, below.id]
        # appending one is still refused
        with pytest.raises(InvalidEntryError):
            await fork.append_entry(OpaqueEntry(type="future_kind", parent_id=below.id))

    async def test_deeply_nested_values_are_stored_and_copied(
        self, repo: SessionRepo, reopen: Reopen
    ) -> None:
        # a tool result's details ~200 levels deep failed to import on every backend, and a
        # JSONL file holding one opened but could not be forked: store and copy what was
        # read, at any depth the JSON reader goes (1024 levels)
        s = await repo.create()
        u = await s.append_message(user("q"))
        ids = []
        for depth in (200, 260, 1000):
            value: object = "bottom"
            for _ in range(depth):
                value = {"k": value}
            call = tool_call(f"c{depth}", "edit", deep=value)
            ids.append(await s.append_message(assistant("", call)))
            ids.append(
                await s.append_message(
                    {
                        "role": "toolResult",
                        "toolCallId": f"c{depth}",
                        "toolName": "edit",
                        "content": [{"type": "text", "text": "ok"}],
                        "details": value,
                    }
                )
            )
        fork = await s.fork(ids[-1])
        async with reopened(reopen, fork) as again:
            for entry_id in [u, *ids]:
                original = await s.get_entry(entry_id)
                copied = await again.get_entry(entry_id)
                assert original is not None and copied is not None
                # as JSON text: == on 1,000 nested dicts would recurse past Python's limit
                assert dump_entry_json(copied) == dump_entry_json(original), entry_id
        last = await fork.get_entry(ids[-1])
        assert last is not None and b'"bottom"' in dump_entry_json(last)

    async def test_create_with_entries_is_whole_or_nothing(
        self, repo: SessionRepo, reopen: Reopen
    ) -> None:
        u = MessageEntry(message=parse_message(user("q")))
        a = MessageEntry(parent_id=u.id, message=parse_message(assistant("a")))
        s = await repo.create(id="whole", metadata={"systemPrompt": "sp"}, entries=[u, a])
        assert [e.id for e in await s.get_branch()] == [u.id, a.id]
        async with reopened(reopen, s) as again:
            assert await again.get_leaf_id() == a.id
        infos = await repo.list()
        assert [(i.id, i.entry_count, i.message_count) for i in infos] == [("whole", 2, 2)]
        dangling = MessageEntry(parent_id="ghost", message=parse_message(user("x")))
        lab = LabelEntry(parent_id=u.id, target_id=u.id, label="x")
        cases: list[tuple[list[Entry], type[Exception]]] = [
            ([u, dangling], EntryNotFoundError),
            ([u, u], DuplicateEntryError),
            ([u, lab, LeafEntry(parent_id=u.id, target_id=lab.id)], InvalidEntryError),
        ]
        for bad, error in cases:
            with pytest.raises(error):
                await repo.create(id="partial", entries=bad)
            assert [i.id for i in await repo.list()] == ["whole"]
        with pytest.raises(DuplicateEntryError) as err:
            await repo.create(id="whole", entries=[u])
        assert err.value.entry_id is None
        assert [e.id for e in await s.get_entries()] == [u.id, a.id]
