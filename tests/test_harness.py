"""AgentHarness: the context-window loop (docs/api.md, docs/compaction.md, docs/branching.md)."""

from __future__ import annotations

from typing import Any

import pytest

from _compaction_support import assistant, new_session, result, tool_rounds, user, words
from sessiontree import CompactionEntry
from sessiontree.compaction import CompactionSettings, estimate_context_tokens
from sessiontree.context import find_tool_pair_problems
from sessiontree.entries import dump_entry
from sessiontree.errors import AgentHarnessError
from sessiontree.harness import AgentHarness
from sessiontree.messages import CompactionSummaryMessage
from sessiontree.testing.fakes import FailingSummarizer, ScriptedSummarizer

SETTINGS = CompactionSettings(reserve_tokens=1000, keep_recent_tokens=800)


async def test_prepare_context_compacts_only_when_the_window_is_nearly_full() -> None:
    s = await new_session()
    await tool_rounds(s, 2)
    fake = ScriptedSummarizer()
    h = AgentHarness(s, context_window=4000, settings=SETTINGS, summarizer=fake)
    ctx = await h.prepare_context()
    assert fake.calls == [] and h.last_compaction is None
    assert h.last_context_tokens == estimate_context_tokens(ctx.messages) <= 3000
    await tool_rounds(s, 6, prefix="q")
    big = estimate_context_tokens((await s.build_context()).messages)
    assert big > 3000
    ctx = await h.prepare_context(instructions="keep the step numbers")
    assert isinstance(h.last_compaction, CompactionEntry)
    assert fake.calls[0].instructions == "keep the step numbers"
    assert isinstance(ctx.messages[0], CompactionSummaryMessage)
    assert h.last_context_tokens < big and h.last_context_tokens <= 3000
    assert find_tool_pair_problems(ctx.messages) == []
    assert await s.get_leaf_id() == h.last_compaction.id


async def test_prepare_context_in_retained_tail_mode_with_the_default_summarizer() -> None:
    s = await new_session()
    await tool_rounds(s, 10)
    h = AgentHarness(s, context_window=4000, settings=SETTINGS, compaction_mode="retained_tail")
    ctx = await h.prepare_context()
    assert h.last_compaction is not None and h.last_compaction.retained_tail
    assert h.last_compaction.summary.startswith("## Goal")
    assert ctx.messages[1:] == h.last_compaction.retained_tail


async def test_prepare_context_raises_when_nothing_can_be_compacted_and_it_does_not_fit() -> None:
    s = await new_session()
    await s.append_message(user("one huge message " + words(5000)))
    fake = ScriptedSummarizer()
    h = AgentHarness(s, context_window=4000, settings=SETTINGS, summarizer=fake)
    with pytest.raises(AgentHarnessError) as info:
        await h.prepare_context()
    assert info.value.code == "context_too_large"
    assert "3000 that fit" in str(info.value)
    assert h.last_compaction is None and fake.calls == []
    assert len(await s.get_entries()) == 1


async def test_a_failed_compaction_raises_and_changes_nothing() -> None:
    s = await new_session()
    await tool_rounds(s, 10)
    before = [dump_entry(e) for e in await s.get_entries()]
    h = AgentHarness(s, context_window=4000, settings=SETTINGS, summarizer=FailingSummarizer())
    with pytest.raises(AgentHarnessError) as err:
        await h.prepare_context()
    assert err.value.code == "compaction"
    assert [dump_entry(e) for e in await s.get_entries()] == before
    with pytest.raises(AgentHarnessError) as err:
        await h.compact()
    assert err.value.code == "compaction"


async def test_a_summary_that_would_not_shrink_the_context_is_an_error() -> None:
    # prepare_context must not swallow it like nothing_to_compact: the context would stay over
    # the window and the summariser would run (and be billed) again on every turn
    s = await new_session()
    await tool_rounds(s, 10)
    before = [dump_entry(e) for e in await s.get_entries()]
    long = ScriptedSummarizer(default="word " * 20_000)
    h = AgentHarness(s, context_window=4000, settings=SETTINGS, summarizer=long)
    with pytest.raises(AgentHarnessError) as err:
        await h.prepare_context()
    assert err.value.code == "compaction"
    assert "would not make the context smaller" in str(err.value)
    assert str(err.value).count("[") == 1  # the code once (it was "[x] [x] ...")
    assert [dump_entry(e) for e in await s.get_entries()] == before


async def test_manual_compact() -> None:
    s = await new_session()
    await tool_rounds(s, 1, size=10)
    h = AgentHarness(s, context_window=100_000, settings=SETTINGS)
    with pytest.raises(AgentHarnessError) as err:
        await h.compact()
    assert err.value.code == "nothing_to_compact"
    await tool_rounds(s, 8, prefix="q")
    entry = await h.compact()
    assert h.last_compaction == entry


async def test_navigate_tree_reraises_summary_errors_as_branch_summary() -> None:
    s = await new_session()
    first = await s.append_message(user("a"))
    await h_append(s)
    h = AgentHarness(s, context_window=100_000, summarizer=FailingSummarizer())
    leaf = await s.get_leaf_id()
    with pytest.raises(AgentHarnessError) as err:
        await h.navigate_tree(first, summarize=True)
    assert err.value.code == "branch_summary"
    assert await s.get_leaf_id() == leaf
    assert await h.navigate_tree(first) is None
    assert await s.get_leaf_id() == first
    h.summarizer = ScriptedSummarizer(["S"])
    await h.append_message(assistant("different"))
    summary = await h.navigate_tree(first, summarize=True)
    assert summary is not None and await s.get_leaf_id() == summary


async def h_append(s: object) -> None:
    await s.append_message(assistant("b"))  # type: ignore[attr-defined]
    await s.append_message(user("c"))  # type: ignore[attr-defined]


async def test_invalid_window() -> None:
    s = await new_session()
    with pytest.raises(AgentHarnessError) as err:
        AgentHarness(s, context_window=0)
    assert err.value.code == "invalid_settings"
    with pytest.raises(AgentHarnessError) as err:
        AgentHarness(s, context_window=30_000)  # 20000 kept + 16384 reserve do not fit
    assert err.value.code == "invalid_settings"
    assert AgentHarness(s, context_window=200_000).settings == CompactionSettings()


async def big_batch_turn(
    session: Any, i: int, *, results: int, size: int, answered: bool = True
) -> None:
    """One turn whose assistant message calls ``results`` tools, each answering ``size``
    tokens; ``answered=False`` stops after the results (the model has not seen them yet)."""
    await session.append_message(user(f"turn {i}: run the checks"))
    calls = [(f"t{i}c{j}", "bash", {"command": f"check {j}"}) for j in range(results)]
    await session.append_message(assistant("running", calls))
    for call_id, _, _ in calls:
        await session.append_message(result(call_id, words(size, "out")))
    if answered:
        await session.append_message(assistant(f"turn {i} checked"))


async def test_every_context_fits_the_window_when_the_kept_tail_holds_a_large_tool_batch() -> None:
    s = await new_session()
    settings = CompactionSettings(reserve_tokens=1000, keep_recent_tokens=2500)
    h = AgentHarness(s, context_window=4000, settings=settings, summarizer=ScriptedSummarizer())
    over_before: list[int] = []
    for i in range(10):
        await big_batch_turn(s, i, results=3, size=450)
        plain = estimate_context_tokens((await s.build_context()).messages)
        ctx = await h.prepare_context()
        if plain > 3000:
            over_before.append(plain)
        assert h.last_context_tokens == estimate_context_tokens(ctx.messages) <= 3000
        assert find_tool_pair_problems(ctx.messages) == []
    # the keep budget alone (2500 tokens reach back into the batch before the last one) would
    # have left contexts over the window: the scenario does exercise the tighter cut
    assert over_before


async def test_a_tool_batch_larger_than_the_window_is_a_clear_error() -> None:
    s = await new_session()
    await big_batch_turn(s, 0, results=2, size=100)
    await big_batch_turn(s, 1, results=3, size=1200, answered=False)
    before = [dump_entry(e) for e in await s.get_entries()]
    fake = ScriptedSummarizer()
    h = AgentHarness(s, context_window=4000, settings=SETTINGS, summarizer=fake)
    with pytest.raises(AgentHarnessError) as info:
        await h.prepare_context()
    assert info.value.code == "context_too_large"
    text = str(info.value)
    assert "over the 3000 that fit (context_window 4000 - reserve_tokens 1000)" in text
    batch = (await s.build_context()).messages[-4:]  # the call and its three results
    assert batch[0].role == "assistant"
    assert f"take {estimate_context_tokens(batch)} tokens alone" in text
    # refused before any summariser call: nothing was billed, nothing appended
    assert fake.calls == [] and [dump_entry(e) for e in await s.get_entries()] == before


async def test_a_finished_turn_with_a_large_batch_is_summarised_to_fit() -> None:
    s = await new_session()
    await big_batch_turn(s, 0, results=3, size=1200)
    h = AgentHarness(s, context_window=4000, settings=SETTINGS, summarizer=ScriptedSummarizer())
    ctx = await h.prepare_context()
    assert h.last_context_tokens <= 3000 and isinstance(ctx.messages[0], CompactionSummaryMessage)
