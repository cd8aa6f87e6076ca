"""Compaction, branch summaries and the harness on every backend (memory, jsonl, sqlite, pg):
what is appended survives a reopen and builds the same context."""

from __future__ import annotations

import pytest

from _compaction_support import assistant, tool_rounds, user
from sessiontree import BranchSummaryEntry, CompactionEntry, CompactionError, SessionRepo
from sessiontree.compaction import CompactionSettings, compact
from sessiontree.context import find_tool_pair_problems
from sessiontree.entries import dump_entry
from sessiontree.testing.fakes import FailingSummarizer, ScriptedSummarizer

KEEP = CompactionSettings(keep_recent_tokens=600)


@pytest.mark.parametrize("mode", ["pointer", "retained_tail"])
async def test_compaction_round_trips_through_the_backend(repo: SessionRepo, mode: str) -> None:
    s = await repo.create()
    await s.append_thinking_level_change("low")
    await tool_rounds(s, 6)
    first = await compact(s, settings=KEEP, mode=mode)  # type: ignore[arg-type]
    await tool_rounds(s, 3, prefix="q")
    second = await compact(s, settings=KEEP, mode=mode)  # type: ignore[arg-type]
    ctx = await s.build_context()
    reopened = await repo.open(s.id)
    stored = await reopened.get_entry(second.id)
    assert isinstance(stored, CompactionEntry)
    assert dump_entry(stored) == dump_entry(second)
    assert await reopened.get_leaf_id() == second.id
    ctx2 = await reopened.build_context()
    assert ctx2.messages == ctx.messages
    assert ctx2.thinking_level == "low"
    assert find_tool_pair_problems(ctx2.messages) == []
    assert first.summary.split("\n\n---\n\n")[0].splitlines()[0] == "## Goal"


async def test_failed_compaction_changes_nothing_on_the_backend(repo: SessionRepo) -> None:
    s = await repo.create()
    await tool_rounds(s, 6)
    before = [dump_entry(e) for e in await s.get_entries()]
    with pytest.raises(CompactionError):
        await compact(s, settings=KEEP, summarizer=FailingSummarizer())
    reopened = await repo.open(s.id)
    assert [dump_entry(e) for e in await reopened.get_entries()] == before


async def test_branch_summary_on_the_backend(repo: SessionRepo) -> None:
    s = await repo.create()
    await s.append_message(user("start"))
    ancestor = await s.append_message(assistant("ok"))
    target = await s.append_message(user("other way"))
    await s.navigate(ancestor)
    await s.append_message(user("the abandoned way"))
    old_leaf = await s.append_message(assistant("did not work"))
    summary_id = await s.navigate(target, summarize=True, summarizer=ScriptedSummarizer(["B"]))
    reopened = await repo.open(s.id)
    entry = await reopened.get_entry(summary_id or "")
    assert isinstance(entry, BranchSummaryEntry)
    assert (entry.parent_id, entry.from_id) == (target, old_leaf)
    assert await reopened.get_leaf_id() == summary_id
    roles = [m.role for m in (await reopened.build_context()).messages]
    assert roles == ["user", "assistant", "user", "branchSummary"]
