"""A fork in the memory backend holds the very entry objects of the chain it copies (entries
are immutable, and they were checked when the source took them); only what the fork makes
(labels, copies whose references it clears) is new, and that is checked as any append."""

from __future__ import annotations

import pytest

from sessiontree import BranchSummaryEntry, EntryNotFoundError, LabelEntry
from sessiontree.backends.memory.repo import MemoryRepo
from sessiontree.backends.memory.storage import MemoryStorage


async def test_a_fork_shares_the_chain_it_copies_and_makes_only_what_changes() -> None:
    repo = MemoryRepo()
    source = await repo.create()
    ids = [await source.append_message({"role": "user", "content": str(i)}) for i in range(6)]
    side = await source.append_message({"role": "user", "content": "side"})
    await source.navigate(ids[2])
    await source.append_branch_summary("left the side branch", side)
    await source.append_message({"role": "user", "content": "after"})
    await source.append_label(ids[1], "first")
    target = await source.get_leaf_id()
    assert target is not None

    fork = await repo.fork(source.id, target)
    held = {e.id: e for e in await source.storage.get_entries()}
    copied = await fork.storage.get_entries()
    chain = await source.storage.get_branch(target, include_bookkeeping=True)
    for entry in copied[: len(chain)]:
        original = held[entry.id]
        if isinstance(entry, BranchSummaryEntry):
            # its fromId names the side branch, which the fork does not copy: a new entry
            assert entry is not original and entry.from_id is None
            assert original.from_id == side  # type: ignore[union-attr]
        else:
            assert entry is original, "shared, not copied"
    labels = copied[len(chain) :]
    assert [(type(e), e.target_id, e.label) for e in labels] == [  # type: ignore[union-attr]
        (LabelEntry, ids[1], "first")
    ]
    assert all(e.id not in held for e in labels)
    assert await fork.get_label(ids[1]) == "first"

    # the two sessions share entries, not their trees: appending to one leaves the other
    before = [e.id for e in await source.storage.get_entries()]
    await fork.append_message({"role": "user", "content": "only in the fork"})
    assert [e.id for e in await source.storage.get_entries()] == before
    assert (await fork.build_context()).messages[-1].content == "only in the fork"  # type: ignore[union-attr]


async def test_an_entry_the_fork_did_not_take_from_its_source_is_prepared_and_checked() -> None:
    repo = MemoryRepo()
    source = await repo.create()
    first = await source.append_message({"role": "user", "content": "hi"})
    storage = source.storage
    assert isinstance(storage, MemoryStorage)
    entry = storage.index.by_id[first]
    # an equal entry that is not the object the source holds is read back, not shared
    equal = entry.model_copy()
    index = storage._fork_index([equal], "fork-id")
    assert index.entries == [entry] and index.entries[0] is not equal
    # and checked as an append: a parent the fork does not hold is refused
    stranger = entry.model_copy(update={"parent_id": "nowhere"})
    with pytest.raises(EntryNotFoundError, match="nowhere"):
        storage._fork_index([stranger], "fork-id")
