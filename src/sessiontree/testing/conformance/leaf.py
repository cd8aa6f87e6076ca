"""Conformance: the leaf: which appends move it, set_leaf_id, navigation, rejections that change nothing (capability ``leaf``)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from sessiontree.entries import (
    BranchSummaryEntry,
    Entry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    SessionInfoEntry,
)
from sessiontree.errors import (
    DuplicateEntryError,
    EntryNotFoundError,
    InvalidEntryError,
    LeafMovedError,
)
from sessiontree.messages import (
    UserMessage,
)
from sessiontree.repos.base import SessionRepo
from sessiontree.testing.builders import assistant, user
from sessiontree.testing.conformance._base import (
    Conformance,
    Reopen,
    reopened,
    snapshot,
)
from sessiontree.tree import leaf_of_log

__all__ = ["LeafConformance"]


class LeafConformance(Conformance):
    """The leaf: which appends move it, set_leaf_id, navigation, rejections that change nothing."""

    capability: ClassVar[str] = "leaf"

    async def test_path_entries_move_leaf_bookkeeping_does_not(self, repo: SessionRepo) -> None:
        s = await repo.create()
        assert await s.get_leaf_id() is None
        assert await s.get_branch() == []
        u = await s.append_message(user("q"))
        assert await s.get_leaf_id() == u
        lab = await s.append_label(u, "start")
        name = await s.append_session_name("named")
        assert await s.get_leaf_id() == u
        lab_entry = await s.get_entry(lab)
        name_entry = await s.get_entry(name)
        assert isinstance(lab_entry, LabelEntry) and lab_entry.parent_id == u
        assert isinstance(name_entry, SessionInfoEntry) and name_entry.parent_id == u
        a = await s.append_message(assistant("answer"))
        a_entry = await s.get_entry(a)
        assert a_entry is not None and a_entry.parent_id == u  # never under a bookkeeping entry
        for append in (
            s.append_model_change("p", "m"),
            s.append_thinking_level_change("high"),
            s.append_active_tools_change(["read"]),
            s.append_custom_entry("ext", {"k": 1}),
            s.append_custom_message_entry("ext", "hello"),
            s.append_branch_summary("", a),
        ):
            new = await append
            assert await s.get_leaf_id() == new
        branch = await s.get_branch()
        assert [e.type for e in branch] == [
            "message",
            "message",
            "model_change",
            "thinking_level_change",
            "active_tools_change",
            "custom",
            "custom_message",
            "branch_summary",
        ]

    async def test_set_leaf_id_appends_a_leaf_entry(
        self, repo: SessionRepo, reopen: Reopen
    ) -> None:
        s = await repo.create()
        u1 = await s.append_message(user("one"))
        a1 = await s.append_message(assistant("two"))
        await s.set_leaf_id(u1)
        assert await s.get_leaf_id() == u1
        (leaf_entry,) = await s.get_entries(types={"leaf"})
        assert isinstance(leaf_entry, LeafEntry)
        assert leaf_entry.parent_id == a1 and leaf_entry.target_id == u1
        a2 = await s.append_message(assistant("other"))
        assert (await s.get_entry(a2)).parent_id == u1  # type: ignore[union-attr]
        await s.set_leaf_id(None)
        assert await s.get_leaf_id() is None
        assert await s.get_branch() == []
        r2 = await s.append_message(user("new root"))
        assert (await s.get_entry(r2)).parent_id is None  # type: ignore[union-attr]
        async with reopened(reopen, s) as again:
            assert await again.get_leaf_id() == r2
            entries = await again.get_entries()
            assert leaf_of_log(entries) == r2

    async def test_set_leaf_id_rejections(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("one"))
        lab = await s.append_label(u, "x")
        before = await snapshot(s)
        with pytest.raises(EntryNotFoundError):
            await s.set_leaf_id("missing")
        with pytest.raises(InvalidEntryError):
            await s.set_leaf_id(lab)
        assert await snapshot(s) == before

    async def test_set_leaf_id_if_moves_only_from_the_expected_leaf(
        self, repo: SessionRepo, reopen: Reopen
    ) -> None:
        """The conditional leaf move: written when the leaf is the expected one, refused
        with :class:`LeafMovedError` (nothing written) when another writer moved it, even
        through another repository object on the same store."""
        s = await repo.create()
        u = await s.append_message(user("q"))
        a = await s.append_message(assistant("a"))
        await s.set_leaf_id_if(u, a)
        assert await s.get_leaf_id() == u
        (leaf_entry,) = await s.get_entries(types={"leaf"})
        assert isinstance(leaf_entry, LeafEntry)
        assert (leaf_entry.target_id, leaf_entry.parent_id) == (u, a)
        async with reopened(reopen, s) as other:  # another writer moves the leaf
            b = await other.append_message(assistant("b"))
        before = await snapshot(s)
        with pytest.raises(LeafMovedError) as caught:
            await s.set_leaf_id_if(None, u)
        assert (caught.value.expected_id, caught.value.actual_id) == (u, b)
        assert caught.value.session_id == s.id
        with pytest.raises(LeafMovedError):
            await s.set_leaf_id_if(u, None)
        with pytest.raises(EntryNotFoundError):
            await s.set_leaf_id_if("missing", b)
        assert await snapshot(s) == before
        await s.set_leaf_id_if(None, b)
        assert await s.get_leaf_id() is None
        await s.set_leaf_id_if(a, None)
        assert await s.get_leaf_id() == a

    async def test_append_entry_if_appends_only_at_the_expected_leaf(
        self, repo: SessionRepo, reopen: Reopen
    ) -> None:
        """The conditional append: an entry decided on a read of the leaf is written while
        the leaf holds, refused with :class:`LeafMovedError` (nothing written) once another
        writer moved it."""
        s = await repo.create()
        u = await s.append_message(user("q"))
        summary = BranchSummaryEntry(summary="left", from_id=u, parent_id=u)
        assert await s.append_entry_if(summary, u) == summary.id
        assert await s.get_leaf_id() == summary.id
        async with reopened(reopen, s) as other:
            b = await other.append_message(assistant("b"))
        before = await snapshot(s)
        late = BranchSummaryEntry(summary="late", from_id=summary.id, parent_id=u)
        with pytest.raises(LeafMovedError) as caught:
            await s.append_entry_if(late, summary.id)
        assert (caught.value.expected_id, caught.value.actual_id) == (summary.id, b)
        assert await snapshot(s) == before

    async def test_leaf_is_pure_function_of_log(self, repo: SessionRepo, reopen: Reopen) -> None:
        s = await repo.create()
        u = await s.append_message(user("a"))
        a = await s.append_message(assistant("b"))
        await s.set_leaf_id(u)
        await s.append_label(a, "x")
        await s.append_session_name("n")
        await s.append_entry(SessionInfoEntry(name="stray", parent_id=None))
        assert await s.get_leaf_id() == u
        async with reopened(reopen, s) as again:
            assert await again.get_leaf_id() == u
            assert leaf_of_log(await again.get_entries()) == u
            assert await again.get_name() == "stray"

    async def test_stale_client_rename_keeps_branch(
        self, repo: SessionRepo, reopen: Reopen
    ) -> None:
        """A second client with a stale view renames; the first client's branch stays."""
        first = await repo.create()
        u = await first.append_message(user("q"))
        await first.append_message(assistant("a1"))
        stale = await repo.open(first.id)  # the second client opens now
        await first.set_leaf_id(u)
        b = await first.append_message(assistant("a2 on a new branch"))
        await stale.append_session_name("renamed by the stale client")
        async with reopened(reopen, first) as resumed:
            assert await resumed.get_leaf_id() == b
            assert [e.id for e in await resumed.get_branch()] == [u, b]
            assert await resumed.get_name() == "renamed by the stale client"

    async def test_append_rejections_change_nothing(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("a"))
        leaf_entry_id = None
        await s.set_leaf_id(u)
        (leaf_entry,) = await s.get_entries(types={"leaf"})
        leaf_entry_id = leaf_entry.id
        before = await snapshot(s)
        cases: list[tuple[type[Exception], Entry]] = [
            (
                DuplicateEntryError,
                MessageEntry(id=u, parent_id=None, message=UserMessage(content="x")),
            ),
            (EntryNotFoundError, MessageEntry(parent_id="ghost", message=UserMessage(content="x"))),
            (
                InvalidEntryError,
                MessageEntry(parent_id=leaf_entry_id, message=UserMessage(content="x")),
            ),
            (EntryNotFoundError, LabelEntry(parent_id=u, target_id="ghost", label="l")),
            (EntryNotFoundError, LeafEntry(parent_id=u, target_id="ghost")),
            (EntryNotFoundError, BranchSummaryEntry(parent_id=u, summary="s", from_id="ghost")),
        ]
        for exc, entry in cases:
            with pytest.raises(exc) as err:
                await s.append_entry(entry)
            assert s.id in str(err.value)
            assert entry.id in str(err.value)
        with pytest.raises(EntryNotFoundError):
            await s.append_label("ghost", "x")
        with pytest.raises(EntryNotFoundError):
            await s.append_branch_summary("s", "ghost")
        assert await snapshot(s) == before

    async def test_append_entries_is_all_or_nothing(self, repo: SessionRepo) -> None:
        s = await repo.create()
        await s.append_message(user("a"))
        before = await snapshot(s)
        good = MessageEntry(id="g1", parent_id=None, message=UserMessage(content="x"))
        bad = MessageEntry(id="g2", parent_id="ghost", message=UserMessage(content="y"))
        with pytest.raises(EntryNotFoundError):
            await s.storage.append_entries([good, bad])
        dup = MessageEntry(id="g1", parent_id=None, message=UserMessage(content="z"))
        with pytest.raises(DuplicateEntryError):
            await s.storage.append_entries([good, dup])
        assert await snapshot(s) == before
        chained = [good, MessageEntry(id="g2", parent_id="g1", message=UserMessage(content="y"))]
        await s.storage.append_entries(chained)
        assert await s.get_leaf_id() == "g2"
        assert [e.id for e in await s.get_branch()] == ["g1", "g2"]

    async def test_navigate_without_summary(self, repo: SessionRepo, reopen: Reopen) -> None:
        s = await repo.create()
        u = await s.append_message(user("q"))
        await s.append_message(assistant("a"))
        assert await s.navigate(u) is None
        assert await s.get_leaf_id() == u
        assert await s.get_entries(types={"branch_summary"}) == []
        async with reopened(reopen, s) as again:
            assert await again.get_leaf_id() == u
