"""Forks of long sessions on every backend (SQL copies the stored rows inside the database):
what a reader sees of the fork, its listing and its search hits are those of the source."""

from __future__ import annotations

import pytest

from sessiontree import SessionRepo
from sessiontree.entries import dump_entry


@pytest.mark.parametrize("labelled", [False, True])
async def test_a_fork_of_a_long_session_reads_and_searches_like_the_source(
    repo: SessionRepo, labelled: bool
) -> None:
    s = await repo.create()
    for i in range(300):  # more than the SQLite search backlog
        await s.append_message({"role": "user", "content": f"zebra{i} word", "timestamp": i})
    ids = [e.id for e in await s.get_branch()]
    if labelled:
        await s.append_label(ids[10], "ten")
    await s.append_session_name("named")
    fork = await repo.fork(s.id, ids[200])
    copied = await fork.get_branch()
    source = await s.get_branch()
    assert [dump_entry(e) for e in copied] == [dump_entry(e) for e in source[:201]]
    assert await fork.get_leaf_id() == ids[200]
    assert (await fork.get_label(ids[10])) == ("ten" if labelled else None)
    info = {i.id: i for i in await repo.list()}[fork.id]
    assert info.entry_count == 201 + labelled and info.message_count == 201
    assert info.first_message == "zebra0 word" and info.parent_session_id == s.id
    hits = await repo.search("zebra150", limit=10)
    assert {h.session_id for h in hits} == {s.id, fork.id}
    reopened = await repo.open(fork.id)
    assert [e.id for e in await reopened.get_branch()] == ids[:201]
    await reopened.append_message({"role": "user", "content": "after the fork"})
    assert len(await reopened.get_branch()) == 202
