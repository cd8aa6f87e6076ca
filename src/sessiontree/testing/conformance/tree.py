"""Conformance: paths, entry cursors, labels, names and the tree of a session (capability ``tree``)."""

from __future__ import annotations

import warnings
from typing import ClassVar

import pytest

from sessiontree.entries import (
    MessageEntry,
)
from sessiontree.errors import (
    EntryNotFoundError,
)
from sessiontree.messages import (
    AssistantMessage,
)
from sessiontree.repos.base import SessionRepo
from sessiontree.testing.builders import assistant, user
from sessiontree.testing.conformance._base import (
    Conformance,
    Reopen,
    reopened,
)

__all__ = ["TreeConformance"]


class TreeConformance(Conformance):
    """Paths, entry cursors, labels, names and the tree of a session."""

    capability: ClassVar[str] = "tree"

    async def test_get_branch_and_multiple_roots(self, repo: SessionRepo) -> None:
        s = await repo.create()
        r1 = await s.append_message(user("root one"))
        c1 = await s.append_message(assistant("child"))
        await s.set_leaf_id(None)
        r2 = await s.append_message(user("root two"))
        assert [e.id for e in await s.get_branch()] == [r2]
        assert [e.id for e in await s.get_branch(c1)] == [r1, c1]
        with pytest.raises(EntryNotFoundError):
            await s.get_branch("ghost")
        roots = await s.get_tree()
        assert [n.entry.id for n in roots] == [r1, r2]

    async def test_paths_through_bookkeeping_entries(self, repo: SessionRepo) -> None:
        """Files from other tools may chain path entries under label/session_info entries."""
        s = await repo.create()
        u = await s.append_message(user("a"))
        lab = await s.append_label(u, "mark")
        a = await s.append_entry(
            MessageEntry(
                parent_id=lab, message=AssistantMessage(content=[], provider="p", model="m")
            )
        )
        assert await s.get_leaf_id() == a
        assert [e.id for e in await s.get_branch()] == [u, a]
        (root,) = await s.get_tree()
        assert root.entry.id == u and [c.entry.id for c in root.children] == [a]
        assert root.label == "mark"
        fork = await s.fork(a)
        assert [e.id for e in await fork.get_branch()] == [u, a]
        copied = {e.id for e in await fork.get_entries()}
        assert lab in copied

    async def test_get_entries_cursor(self, repo: SessionRepo) -> None:
        s = await repo.create()
        ids = []
        for i in range(7):
            ids.append(await s.append_message(user(f"m{i}")))
            if i % 3 == 0:
                ids.append(await s.append_label(ids[-1], f"l{i}"))
        assert [e.id for e in await s.get_entries()] == ids
        seen: list[str] = []
        after = None
        while True:
            page = await s.get_entries(after=after, limit=3)
            if not page:
                break
            assert len(page) <= 3
            seen.extend(e.id for e in page)
            after = page[-1].id
        assert seen == ids
        assert [e.id for e in await s.get_entries(reverse=True)] == ids[::-1]
        back = await s.get_entries(after=ids[4], reverse=True, limit=2)
        assert [e.id for e in back] == [ids[3], ids[2]]
        labels = await s.get_entries(types={"label"})
        assert all(e.type == "label" for e in labels) and len(labels) == 3
        assert await s.get_entries(limit=0) == []
        with pytest.raises(EntryNotFoundError):
            await s.get_entries(after="ghost")

    async def test_get_and_find_of_a_missing_entry(self, repo: SessionRepo) -> None:
        """The get/find rule (docs/api.md): ``find_entry`` gives ``None`` for a missing entry;
        ``get_entry`` and ``get_label`` give ``None`` with a DeprecationWarning for now (the next
        release raises EntryNotFoundError); a label that is unset is ``None`` silently."""
        s = await repo.create()
        u = await s.append_message(user("a"))
        assert await s.find_entry("ghost") is None
        found = await s.find_entry(u)
        assert found is not None and found.id == u
        with pytest.warns(DeprecationWarning, match=r"get_entry\('ghost'\).*EntryNotFoundError"):
            assert await s.get_entry("ghost") is None
        with pytest.warns(DeprecationWarning, match=r"get_label\('ghost'\).*EntryNotFoundError"):
            assert await s.get_label("ghost") is None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = await s.get_entry(u)
            assert got is not None and got.id == u
            assert await s.get_label(u) is None
            assert await s.get_name() is None

    async def test_labels_and_names(self, repo: SessionRepo, reopen: Reopen) -> None:
        s = await repo.create()
        u = await s.append_message(user("a"))
        assert await s.get_label(u) is None
        assert await s.get_name() is None
        assert await s.find_entry("ghost") is None
        await s.append_label(u, "one")
        await s.append_label(u, "two")
        assert await s.get_label(u) == "two"
        await s.append_label(u, None)
        assert await s.get_label(u) is None
        await s.append_label(u, "three")
        await s.append_label(u, "")
        assert await s.get_label(u) is None
        await s.append_label(u, "final")
        await s.append_session_name("first")
        await s.append_session_name("second")
        async with reopened(reopen, s) as again:
            assert await again.get_label(u) == "final"
            assert await again.get_name() == "second"
            (root,) = await again.get_tree()
            assert root.label == "final"

    async def test_get_tree_children_in_append_order(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("root"))
        kids = []
        for i in range(3):
            await s.set_leaf_id(u)
            kids.append(await s.append_message(assistant(f"child {i}")))
        grandchild = await s.append_message(user("deeper"))
        (root,) = await s.get_tree()
        assert [c.entry.id for c in root.children] == kids
        assert [c.entry.id for c in root.children[2].children] == [grandchild]
