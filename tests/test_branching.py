"""navigate(summarize=True): branch summaries (docs/branching.md)."""

from __future__ import annotations

import pytest

from _compaction_support import assistant, new_session, result, tool_rounds, user
from sessiontree import (
    BranchSummaryEntry,
    EntryNotFoundError,
    InvalidEntryError,
    Session,
    SummaryError,
)
from sessiontree.branching import navigate_with_summary
from sessiontree.entries import dump_entry
from sessiontree.messages import BranchSummaryMessage
from sessiontree.testing.fakes import FailingSummarizer, ScriptedSummarizer


async def snapshot(session: Session) -> tuple[list[dict[str, object]], str | None]:
    return [dump_entry(e) for e in await session.get_entries()], await session.get_leaf_id()


async def two_branches() -> tuple[Session, str, str, list[str]]:
    """root… ancestor → (abandoned: a1..a4 = old leaf) ; target is a sibling branch's entry."""
    s = await new_session()
    await s.append_message(user("shared start"))
    ancestor = await s.append_message(assistant("shared answer"))
    target = await s.append_message(user("the other way"))
    await s.navigate(ancestor)
    abandoned = [
        await s.append_message(user("try the risky refactor; never touch main.py")),
        await s.append_message(assistant("", [("c1", "edit", {"path": "lib.py"})])),
        await s.append_message(result("c1", "edited", name="edit")),
        await s.append_message(assistant("It broke the build.")),
    ]
    return s, ancestor, target, abandoned


async def test_summary_hangs_under_the_target_with_from_id_the_old_leaf() -> None:
    s, _, target, abandoned = await two_branches()
    fake = ScriptedSummarizer(["BRANCH"])
    summary_id = await s.navigate(target, summarize=True, summarizer=fake, instructions="focus")
    entry = await s.get_entry(summary_id or "")
    assert isinstance(entry, BranchSummaryEntry)
    assert entry.parent_id == target
    assert entry.from_id == abandoned[-1]
    assert entry.summary == "BRANCH"
    assert entry.details == {"readFiles": [], "modifiedFiles": ["lib.py"]}
    assert await s.get_leaf_id() == summary_id
    # Exactly the abandoned branch (below the common ancestor) went to the summariser.
    (call,) = fake.calls
    assert call.purpose == "branch" and call.instructions == "focus"
    assert call.previous_summary is None
    expected = [(await s.get_entry(i)).message for i in abandoned]  # type: ignore[union-attr]
    assert call.messages == expected
    ctx = await s.build_context()
    assert [m.role for m in ctx.messages] == ["user", "assistant", "user", "branchSummary"]
    last = ctx.messages[-1]
    assert isinstance(last, BranchSummaryMessage) and last.from_id == abandoned[-1]
    # The next message continues from the summary.
    nxt = await s.append_message(user("go on"))
    assert (await s.get_entry(nxt)).parent_id == summary_id  # type: ignore[union-attr]


async def test_nothing_abandoned_means_no_summary() -> None:
    s, _, _, abandoned = await two_branches()
    fake = ScriptedSummarizer()
    # Target is the old leaf: nothing changes at all.
    before = await snapshot(s)
    assert await s.navigate(abandoned[-1], summarize=True, summarizer=fake) is None
    assert await snapshot(s) == before
    # Target below the old leaf: the leaf moves, no summary.
    await s.set_leaf_id(abandoned[1])
    assert await s.navigate(abandoned[-1], summarize=True, summarizer=fake) is None
    assert await s.get_leaf_id() == abandoned[-1]
    assert fake.calls == []
    assert not [e for e in await s.get_entries() if isinstance(e, BranchSummaryEntry)]


@pytest.mark.parametrize(
    "summarizer",
    [FailingSummarizer(), FailingSummarizer(TimeoutError("slow")), ScriptedSummarizer([" "])],
)
async def test_a_failed_summary_changes_nothing(summarizer: object) -> None:
    s, _, target, _ = await two_branches()
    before = await snapshot(s)
    with pytest.raises(SummaryError) as err:
        await s.navigate(target, summarize=True, summarizer=summarizer)  # type: ignore[arg-type]
    assert err.value.session_id == s.id or isinstance(summarizer, FailingSummarizer)
    assert await snapshot(s) == before
    # The caller can retry without a summary.
    assert await s.navigate(target) is None
    assert await s.get_leaf_id() == target


async def test_bad_targets_change_nothing() -> None:
    s, _, target, _ = await two_branches()
    label = await s.append_label(target, "here")
    before = await snapshot(s)
    with pytest.raises(EntryNotFoundError):
        await s.navigate("nope", summarize=True, summarizer=ScriptedSummarizer())
    with pytest.raises(InvalidEntryError):
        await s.navigate(label, summarize=True, summarizer=ScriptedSummarizer())
    assert await snapshot(s) == before


async def test_navigating_to_a_new_root_makes_the_summary_a_root() -> None:
    s, _, _, abandoned = await two_branches()
    summary_id = await navigate_with_summary(s.storage, None, summarizer=None, instructions=None)
    entry = await s.get_entry(summary_id or "")
    assert isinstance(entry, BranchSummaryEntry)
    assert entry.parent_id is None and entry.from_id == abandoned[-1]
    assert entry.summary.startswith("## Goal")  # the extractive default
    assert "never touch main.py" in entry.summary


async def test_a_compaction_inside_the_abandoned_branch_contributes_its_summary() -> None:
    from sessiontree.compaction import CompactionSettings, compact

    s = await new_session()
    await s.append_message(user("start"))
    ancestor = await s.append_message(assistant("ok"))
    await tool_rounds(s, 6, prefix="lost")
    c = await compact(
        s, settings=CompactionSettings(keep_recent_tokens=600), summarizer=ScriptedSummarizer(["C"])
    )
    fake = ScriptedSummarizer()
    await s.navigate(ancestor, summarize=True, summarizer=fake)
    (call,) = fake.calls
    roles = [m.role for m in call.messages]
    assert roles[0] == "compactionSummary"
    assert call.messages[0].summary == c.summary  # type: ignore[union-attr]
    # Messages the compaction replaced are not summarised twice.
    assert len(call.messages) < 6 * 4
