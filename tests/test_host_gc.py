"""A library never changes its host's global state: the cyclic garbage collector stays as the
program set it (enabled or not, its frozen objects frozen), before, during and after every
call that reads or writes a session, on every backend."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from sessiontree import Entry
from sessiontree.context import default_transform
from sessiontree.repos.base import SessionRepo


def gc_state() -> tuple[bool, int]:
    return gc.isenabled(), gc.get_freeze_count()


async def exercise(repo: SessionRepo, seen: list[tuple[bool, int]]) -> None:
    """Append, read, build a context (its transform records the collector's state while the
    library is inside the call), fork, list, reopen."""

    def transform(path: Sequence[Entry]) -> list[Entry]:
        seen.append(gc_state())
        return default_transform(path)

    session = await repo.create()
    for i in range(60):
        role = "user" if i % 2 == 0 else "assistant"
        content: Any = f"message {i}" if role == "user" else [{"type": "text", "text": str(i)}]
        await session.append_message({"role": role, "content": content})
    await session.append_custom_entry("note", {"i": 1})
    entries = await session.get_entries()
    await session.get_branch()
    await session.get_tree()
    await session.build_context()
    await session.build_context(transform=transform)
    fork = await repo.fork(session.id, entries[30].id)
    await fork.build_context(transform=transform)
    await repo.list()
    reopened = await repo.open(session.id)
    await reopened.build_context(transform=transform)


@pytest.fixture
def frozen_objects() -> Iterator[None]:
    """The program froze objects of its own (as a pre-forking server does)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def test_an_enabled_collector_stays_enabled_and_nothing_is_frozen(repo: SessionRepo) -> None:
    assert gc.isenabled()
    before = gc_state()
    seen: list[tuple[bool, int]] = []
    await exercise(repo, seen)
    assert gc_state() == before
    assert seen and all(state == before for state in seen), "not even during a call"


async def test_a_collector_the_program_disabled_stays_disabled(repo: SessionRepo) -> None:
    gc.disable()
    try:
        seen: list[tuple[bool, int]] = []
        await exercise(repo, seen)
        assert not gc.isenabled()
        assert seen and not any(enabled for enabled, _ in seen)
    finally:
        gc.enable()


async def test_objects_the_program_froze_stay_frozen(
    repo: SessionRepo, frozen_objects: None
) -> None:
    frozen = gc.get_freeze_count()
    assert frozen > 0
    seen: list[tuple[bool, int]] = []
    await exercise(repo, seen)
    # a frozen object that dies leaves the count; none is added (frozen by the library) and
    # the rest are not handed back to the collector (unfrozen)
    assert 0.9 * frozen < gc.get_freeze_count() <= frozen
    assert seen and all(0.9 * frozen < count <= frozen for _, count in seen)
