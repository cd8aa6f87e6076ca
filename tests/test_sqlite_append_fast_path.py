"""SQLite appends that skip the id lookup (the leaf this connection wrote last) stay exact."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.entries import MessageEntry
from sessiontree.errors import DuplicateEntryError


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text, "timestamp": 1}


async def test_a_duplicate_id_under_the_leaf_is_named_and_changes_nothing(tmp_path: Path) -> None:
    async with SQLRepo(f"sqlite:///{tmp_path / 's.db'}") as repo:
        s = await repo.create()
        first = await s.append_message(user("a"))
        leaf = await s.append_message(user("b"))
        dup = MessageEntry(id=first, parent_id=leaf, message=user("c"))
        with pytest.raises(DuplicateEntryError, match="already exists"):
            await s.append_entry(dup)
        assert await s.get_leaf_id() == leaf
        assert len(await s.get_entries()) == 2
        third = await s.append_message(user("d"))  # the fast path works again afterwards
        assert [e.id for e in await s.get_branch()] == [first, leaf, third]


async def test_another_writers_append_is_seen_before_the_next_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    async with SQLRepo(url) as a, SQLRepo(url) as b:
        s = await a.create()
        await s.append_message(user("a"))
        other = await (await b.open(s.id)).append_message(user("from b"))
        mine = await s.append_message(user("c"))
        branch = await s.get_branch()
        assert [e.id for e in branch][-2:] == [other, mine]
        assert branch[-1].parent_id == other
