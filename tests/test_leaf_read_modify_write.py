"""Every read-modify-write of the leaf is one atomic step: an entry decided on a read of the
leaf or the branch (a compaction, a branch summary, a navigation) is never written after
another writer moved the leaf (docs/tree.md).

* :meth:`Session.append_entry_if` on every backend, as a property: whatever another writer
  (another repository object on the same store) appends between the read and the write,
  the conditional append is written exactly when the leaf is still the one read, and a
  refused one changes nothing;
* with a real writer process appending all the time on SQLite, JSONL and PostgreSQL,
  compaction and navigation with a summary never put one of its messages on a side branch.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends import shared_store_url
from sessiontree import SessionRepo, open_repo
from sessiontree.compaction import compact
from sessiontree.entries import BranchSummaryEntry, CustomEntry, LeafEntry, MessageEntry
from sessiontree.errors import CompactionError, LeafMovedError
from sessiontree.messages import message_text
from sessiontree.testing.builders import assistant, user
from sessiontree.testing.conformance._base import reopened


async def _snapshot(session: Any) -> tuple[Any, ...]:
    return tuple(e.id for e in await session.get_entries()), await session.get_leaf_id()


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(st.tuples(st.booleans(), st.integers(0, 2)), min_size=1, max_size=6))
async def test_a_conditional_append_is_written_exactly_when_the_leaf_held(
    steps: list[tuple[bool, int]], repo: SessionRepo, reopen: Any
) -> None:
    s = await repo.create()
    await s.append_message(user("q"))
    async with reopened(reopen, s) as other:
        for moved, n in steps:
            seen = await s.get_leaf_id()
            if moved:  # another writer, through its own repository object
                for i in range(n + 1):
                    await other.append_message(assistant(f"other {i}"))
            before = await _snapshot(s)
            entry = CustomEntry(custom_type="probe", data=n, parent_id=seen)
            if moved:
                with pytest.raises(LeafMovedError):
                    await s.append_entry_if(entry, seen)
                assert await _snapshot(s) == before
            else:
                assert await s.append_entry_if(entry, seen) == entry.id
                assert (await s.get_entry(entry.id)) is not None


def _writer(url: str, session_id: str, seconds: float, ready: Any) -> None:
    """Append user messages under the leaf, as fast as it can, for ``seconds``."""

    async def run() -> None:
        async with open_repo(url) as repo:
            s = await repo.open(session_id)
            ready.set()
            end = time.monotonic() + seconds
            n = 0
            while time.monotonic() < end:
                await s.append_message(user(f"writer {n} " + "words " * 20))
                n += 1
            await s.close()

    asyncio.run(run())


@pytest.mark.parametrize("backend", ["sqlite", "jsonl", "postgres"])
def test_compaction_and_navigation_never_hide_a_concurrent_append(
    backend: str, tmp_path: Path
) -> None:
    with shared_store_url(backend, tmp_path) as url:

        async def setup() -> str:
            async with open_repo(url) as repo:
                s = await repo.create()
                for i in range(6):
                    await s.append_message(user(f"q{i} " + "words " * 40))
                    await s.append_message(assistant(f"a{i} " + "words " * 40))
                return s.id

        session_id = asyncio.run(setup())
        ctx = multiprocessing.get_context("spawn")
        ready = ctx.Event()
        writer = ctx.Process(target=_writer, args=(url, session_id, 4.0, ready))
        writer.start()
        assert ready.wait(60)

        async def race() -> dict[str, int]:
            counts = {"compacted": 0, "compaction refused": 0, "navigated": 0, "nav refused": 0}
            async with open_repo(url) as repo:
                s = await repo.open(session_id)
                while writer.is_alive():
                    try:
                        await compact(s, settings={"keep_recent_tokens": 50})
                        counts["compacted"] += 1
                    except CompactionError as exc:
                        counts["compaction refused"] += exc.code == "leaf_moved"
                    branch = await s.get_branch()
                    try:
                        # back one step and forward again, summarising what is left
                        await s.navigate(branch[-2].id, summarize=True)
                        counts["navigated"] += 1
                    except LeafMovedError:
                        counts["nav refused"] += 1
                await s.close()
            return counts

        counts = asyncio.run(race())
        writer.join(60)
        assert writer.exitcode == 0

        async def check() -> None:
            async with open_repo(url) as repo:
                s = await repo.open(session_id)
                entries = await s.get_entries()
                written = {
                    e.id
                    for e in entries
                    if isinstance(e, MessageEntry) and message_text(e.message).startswith("writer")
                }
                # every message the writer appended hangs under the leaf of the moment: each
                # one has a child, or is the leaf, or was left only by a navigation that
                # summarised it (a branch_summary naming a leaf at or after it)
                children = {e.parent_id for e in entries}
                summarised = {e.from_id for e in entries if isinstance(e, BranchSummaryEntry)}
                leaf = await s.get_leaf_id()
                orphans = [
                    i for i in written if i not in children and i != leaf and i not in summarised
                ]
                assert orphans == [], (orphans[:3], counts)
                moves = [e for e in entries if isinstance(e, LeafEntry)]
                assert all(m.parent_id is not None for m in moves)
                await s.close()

        asyncio.run(check())
        assert counts["compacted"] + counts["compaction refused"] > 0
