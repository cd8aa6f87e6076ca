"""Conformance: forking a session at or before an entry (capability ``fork``)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from sessiontree.entries import (
    dump_entry,
)
from sessiontree.errors import (
    EntryNotFoundError,
    InvalidEntryError,
    SessionNotFoundError,
)
from sessiontree.repos.base import SessionRepo
from sessiontree.testing.builders import assistant, user
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
        assert await fork.get_entry(later) is None
        meta = await fork.get_metadata()
        assert meta.parent_session_id == s.id and meta.forked_from_entry_id == a
        assert meta.system_prompt == "sp"
        new = await fork.append_message(user("only in the fork"))
        assert await s.get_entry(new) is None
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
