"""Compaction (docs/compaction.md): estimates, planning, both modes, errors, and the faults
other stores had: orphaned tool results, lost kept messages, foreign branches, budgets."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from _compaction_support import (
    assistant,
    left_context,
    new_session,
    real,
    result,
    tick,
    tool_rounds,
    user,
    words,
)
from sessiontree import CompactionEntry, CompactionError, Session
from sessiontree.compaction import (
    IMAGE_TOKENS,
    TURN_PREFIX_SEPARATOR,
    CompactionMode,
    CompactionSettings,
    compact,
    estimate_context_tokens,
    estimate_tokens,
    file_operations,
    prepare_compaction,
    should_compact,
)
from sessiontree.context import find_tool_pair_problems
from sessiontree.entries import dump_entry
from sessiontree.messages import (
    AssistantMessage,
    CompactionSummaryMessage,
    ToolResultMessage,
    UserMessage,
    parse_message,
)
from sessiontree.testing.fakes import FailingSummarizer, ScriptedSummarizer

KEEP = CompactionSettings(keep_recent_tokens=600)


async def snapshot(session: Session) -> tuple[list[dict[str, object]], str | None]:
    return [dump_entry(e) for e in await session.get_entries()], await session.get_leaf_id()


def assert_valid(messages: Sequence[object]) -> None:
    assert find_tool_pair_problems(messages) == []  # type: ignore[arg-type]
    assert not messages or not isinstance(messages[0], ToolResultMessage)


# --------------------------------------------------------------------------- estimates


def test_estimate_tokens_counts_chars_over_four_rounded_up() -> None:
    assert estimate_tokens(parse_message({"role": "user", "content": "abcde"})) == 2
    msg = parse_message(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "abcd"},
                {"type": "thinking", "thinking": "efgh"},
                {"type": "toolCall", "id": "1", "name": "read", "arguments": {"path": "a"}},
            ],
        }
    )
    # 4 + 4 + len("read") + len('{"path":"a"}') = 24 chars
    assert estimate_tokens(msg) == 6


def test_estimate_tokens_counts_images_and_bash() -> None:
    img = {"type": "image", "data": "AAAA" * 1000, "mimeType": "image/png"}
    msg = parse_message({"role": "user", "content": [{"type": "text", "text": "abcd"}, img]})
    assert estimate_tokens(msg) == 1 + IMAGE_TOKENS
    bash = parse_message({"role": "bashExecution", "command": "ls", "output": "a\nb"})
    assert estimate_tokens(bash) == 2
    hidden = parse_message(
        {"role": "bashExecution", "command": "ls", "output": "x" * 99, "excludeFromContext": True}
    )
    assert estimate_tokens(hidden) == 0


def test_estimate_context_tokens_uses_newest_usage_plus_estimates_after() -> None:
    msgs = [
        parse_message(user("a" * 40)),
        parse_message(assistant("b" * 40, usage=1000)),
        parse_message(user("c" * 40)),
    ]
    assert estimate_context_tokens(msgs) == 1000 + 10


@pytest.mark.parametrize("stop", ["error", "aborted"])
def test_estimate_context_tokens_skips_the_usage_of_failed_and_aborted_calls(stop: str) -> None:
    """A failed call records what its attempts cost (summed), not the size of a context."""
    failed = parse_message(assistant("", usage=90_000)).model_copy(update={"stop_reason": stop})
    msgs = [
        parse_message(user("a" * 40)),
        parse_message(assistant("b" * 40, usage=1000)),
        parse_message(user("c" * 40)),
        failed,
    ]
    assert estimate_context_tokens(msgs) == 1000 + 10


def test_estimate_context_tokens_ignores_usage_recorded_before_the_summary() -> None:
    # A kept assistant message sits after the summary in the context but is older than it.
    kept = parse_message(assistant("b" * 40, usage=150_000))
    summary = CompactionSummaryMessage(summary="s" * 40, tokens_before=150_000, timestamp=tick())
    msgs = [summary, kept, parse_message(user("c" * 40))]
    assert estimate_context_tokens(msgs) == 10 + 10 + 10
    newer = parse_message(assistant("d" * 40, usage=5000))
    assert estimate_context_tokens([*msgs, newer]) == 5000


def test_should_compact_threshold_and_disabled() -> None:
    s = CompactionSettings(reserve_tokens=1000)
    assert not should_compact(9000, 10_000, s)
    assert should_compact(9001, 10_000, s)
    assert not should_compact(9001, 10_000, CompactionSettings(enabled=False, reserve_tokens=1000))
    assert CompactionSettings() == CompactionSettings(True, 16384, 20000)
    with pytest.raises(CompactionError) as err:
        CompactionSettings(keep_recent_tokens=-1)
    assert err.value.code == "invalid_settings"


def test_file_operations_are_cumulative_sorted_and_modified_wins() -> None:
    msgs = [
        parse_message(
            assistant(
                "",
                [
                    ("1", "read", {"path": "/b.py"}),
                    ("2", "read", {"path": "/a.py"}),
                    ("3", "edit", {"path": "/a.py"}),
                    ("4", "write", {"path": "/c.py"}),
                    ("5", "bash", {"path": "/ignored"}),
                ],
            )
        )
    ]
    read, modified = file_operations(msgs, ["/z.py", "/c.py"], ["/y.py"])
    assert read == ["/b.py", "/z.py"]
    assert modified == ["/a.py", "/c.py", "/y.py"]


# --------------------------------------------------------------------------- planning


async def test_cut_never_lands_on_a_tool_result() -> None:
    s = await new_session()
    await s.append_message(user("start " + words(300)))
    call = await s.append_message(assistant("", [("c1", "bash", {"command": "x"})]))
    await s.append_message(result("c1", words(900)))  # the budget is reached on this result
    path = await s.get_branch()
    prep = prepare_compaction(path, KEEP)
    assert prep.first_kept_entry_id == call
    assert [m.role for m in prep.kept_messages] == ["assistant", "toolResult"]


async def test_only_message_carrying_entries_count_toward_the_keep_budget() -> None:
    s = await new_session()
    await s.append_message(user("old " + words(400)))
    await s.append_message(assistant("old answer " + words(400)))
    second = await s.append_message(user("new " + words(600)))
    for _ in range(5):
        await s.append_custom_entry("state", {"blob": "x" * 10_000})
        await s.append_model_change("anthropic", "claude-test")
    await s.append_message(assistant("fine " + words(50)))
    prep = prepare_compaction(await s.get_branch(), KEEP)
    assert prep.first_kept_entry_id == second
    # A projected custom entry does carry messages and counts.
    projectors = {
        "state": lambda e, i, es: [{"role": "custom", "customType": "state", "content": words(200)}]
    }
    prep = prepare_compaction(await s.get_branch(), KEEP, entry_projectors=projectors)
    assert prep.kept_tokens >= 600
    assert prep.first_kept_entry_id == second


async def test_split_turn_is_summarised_separately_and_stored_with_a_separator() -> None:
    s = await new_session()
    await s.append_message(user("first request " + words(300)))
    await s.append_message(assistant("ok " + words(300)))
    await s.append_message(user("second request: read the files"))
    for i in range(6):
        await s.append_message(assistant("", [(f"c{i}", "read", {"path": f"/f{i}"})]))
        await s.append_message(result(f"c{i}", words(200), name="read"))
    prep = prepare_compaction(await s.get_branch(), KEEP)
    assert prep.is_split_turn
    assert isinstance(prep.turn_prefix_messages[0], UserMessage)
    assert [m.role for m in prep.messages_to_summarize] == ["user", "assistant"]
    fake = ScriptedSummarizer(["HISTORY", "PREFIX"])
    entry = await compact(s, settings=KEEP, summarizer=fake)
    assert [c.purpose for c in fake.calls] == ["compaction", "turn_prefix"]
    assert fake.calls[1].previous_summary is None
    assert entry.summary == f"HISTORY{TURN_PREFIX_SEPARATOR}PREFIX"
    # The stored text is what the next compaction receives as previous_summary.
    for i in range(6, 12):
        await s.append_message(assistant("", [(f"c{i}", "read", {"path": f"/f{i}"})]))
        await s.append_message(result(f"c{i}", words(200), name="read"))
    await s.append_message(user("third " + words(700)))
    fake2 = ScriptedSummarizer()
    await compact(s, settings=KEEP, summarizer=fake2)
    assert fake2.calls[0].previous_summary == entry.summary


async def test_details_carry_cumulative_file_lists() -> None:
    s = await new_session()
    for i in range(4):
        await s.append_message(user(f"do {i} " + words(200)))
        await s.append_message(assistant("", [(f"r{i}", "read", {"path": f"/r{i}"})]))
        await s.append_message(result(f"r{i}", words(100), name="read"))
        await s.append_message(assistant("", [(f"w{i}", "edit", {"path": f"/r{i % 2}"})]))
        await s.append_message(result(f"w{i}", "ok", name="edit"))
    first = await compact(s, settings=KEEP, summarizer=ScriptedSummarizer())
    assert first.details is not None
    await tool_rounds(s, 3)
    second = await compact(s, settings=KEEP, summarizer=ScriptedSummarizer())
    assert second.details is not None
    assert set(first.details.read_files) <= set(second.details.read_files) | set(
        second.details.modified_files
    )
    assert second.details.read_files == sorted(second.details.read_files)
    assert "/r0" in second.details.modified_files and "/r0" not in second.details.read_files


# --------------------------------------------------------------------------- compact()


async def test_pointer_mode_appends_one_entry_under_the_leaf() -> None:
    s = await new_session()
    await tool_rounds(s, 6)
    leaf = await s.get_leaf_id()
    before = await s.build_context()
    n = len(await s.get_entries())
    entry = await compact(s, settings=KEEP, summarizer=ScriptedSummarizer(["S"]))
    assert len(await s.get_entries()) == n + 1
    assert entry.parent_id == leaf and await s.get_leaf_id() == entry.id
    assert entry.retained_tail is None and entry.first_kept_entry_id is not None
    assert entry.tokens_before == estimate_context_tokens(before.messages)
    after = await s.build_context()
    assert isinstance(after.messages[0], CompactionSummaryMessage)
    assert after.messages[0].summary == entry.summary and entry.summary.startswith("S")
    kept = await s.get_entry(entry.first_kept_entry_id)
    assert after.messages[1] == kept.message  # type: ignore[union-attr]
    assert after.messages[-1] == before.messages[-1]
    assert_valid(after.messages)


async def test_retained_tail_mode_stores_kept_messages_and_state() -> None:
    s = await new_session()
    await s.append_thinking_level_change("high")
    await s.append_active_tools_change(["read", "bash"])
    await tool_rounds(s, 6)
    before = await s.build_context()
    entry = await compact(
        s, settings=KEEP, summarizer=ScriptedSummarizer(["S"]), mode="retained_tail"
    )
    assert entry.first_kept_entry_id is None and entry.retained_tail
    assert entry.details is not None
    assert entry.details.model_extra["state"] == {  # type: ignore[index]
        "model": {"provider": "anthropic", "modelId": "claude-test"},
        "thinkingLevel": "high",
        "activeToolNames": ["read", "bash"],
    }
    after = await s.build_context()
    assert after.messages[1:] == entry.retained_tail
    assert after.messages[-1] == before.messages[-1]
    assert (after.thinking_level, after.active_tool_names) == ("high", ["read", "bash"])
    assert_valid(after.messages)


async def test_default_summarizer_is_extractive() -> None:
    s = await new_session()
    await tool_rounds(s, 6)
    entry = await compact(s, settings=KEEP)
    assert entry.summary.startswith("## Goal")
    assert "r0: please do step 0" in entry.summary
    assert entry.usage is None


async def test_nothing_to_compact() -> None:
    s = await new_session()
    with pytest.raises(CompactionError) as err:
        await compact(s, summarizer=ScriptedSummarizer())
    assert err.value.code == "nothing_to_compact"
    await tool_rounds(s, 2, size=20)
    with pytest.raises(CompactionError) as err:
        await compact(s, summarizer=ScriptedSummarizer())
    assert err.value.code == "nothing_to_compact"
    assert len(await s.get_entries()) == 8


async def test_summary_that_does_not_shrink_the_context_is_not_appended() -> None:
    # `compact --keep-tokens 0` on a short session must not append a summary longer than what
    # it replaces (e.g. "102 → 197 tokens")
    s = await new_session()
    await tool_rounds(s, 6)
    before = len(await s.get_entries())
    with pytest.raises(CompactionError, match="would not make the context smaller") as err:
        await compact(s, settings=KEEP, summarizer=ScriptedSummarizer(default="word " * 20_000))
    assert err.value.code == "summary_not_smaller"
    assert len(await s.get_entries()) == before
    entry = await compact(s, settings=KEEP, summarizer=ScriptedSummarizer(default="short"))
    assert entry.summary.startswith("short")


async def test_small_recorded_usage_does_not_make_a_shrinking_summary_look_larger() -> None:
    # a 12,000-token context whose last reply reported a usage of 2 tokens was "not smaller"
    # after a 3,900-token summary: recorded usage was compared with an estimate
    s = await new_session()
    await tool_rounds(s, 15, size=300)
    await s.append_message(assistant("All done.", usage=2))
    context = (await s.build_context()).messages
    estimated = sum(estimate_tokens(m) for m in context)
    assert 11_000 < estimated < 13_000
    assert estimate_context_tokens(context) < 1_000  # the usage anchor says "tiny"
    entry = await compact(s, settings=KEEP, summarizer=ScriptedSummarizer(default=words(3_900)))
    assert entry.summary.startswith("w w")
    after = sum(estimate_tokens(m) for m in (await s.build_context()).messages)
    assert after < estimated
    # the same summary with no usage recorded at all compacts too
    s2 = await new_session()
    await tool_rounds(s2, 15, size=300)
    assert await compact(s2, settings=KEEP, summarizer=ScriptedSummarizer(default=words(3_900)))


async def test_bad_mode_is_refused() -> None:
    s = await new_session()
    await tool_rounds(s, 6)
    with pytest.raises(CompactionError) as err:
        await compact(s, settings=KEEP, mode="everything")  # type: ignore[arg-type]
    assert err.value.code == "invalid_settings"


async def test_leaf_moved_during_summary_changes_nothing() -> None:
    s = await new_session()
    await tool_rounds(s, 6)

    def meddle(call: object) -> str:
        return "S"

    class Meddler(ScriptedSummarizer):
        async def summarize(self, messages, **kw):
            await s.append_message(user("typed while summarising"))
            return await super().summarize(messages, **kw)

    with pytest.raises(CompactionError) as err:
        await compact(s, settings=KEEP, summarizer=Meddler([meddle]))
    assert err.value.code == "leaf_moved"
    assert not [e for e in await s.get_entries() if isinstance(e, CompactionEntry)]


# --------------------------------------------------------------------------- faults of other stores


@pytest.mark.parametrize("mode", ["pointer", "retained_tail"])
@pytest.mark.parametrize(
    "failure", [FailingSummarizer(), FailingSummarizer(RuntimeError("boom")), "empty"]
)
async def test_summarizer_failure_leaves_the_session_exactly_as_it_was(
    mode: str, failure: object
) -> None:
    s = await new_session()
    await tool_rounds(s, 6)
    await compact(s, settings=KEEP, summarizer=ScriptedSummarizer())
    await tool_rounds(s, 3, prefix="q")
    before = await snapshot(s)
    summarizer = ScriptedSummarizer(["   "]) if failure == "empty" else failure
    with pytest.raises(CompactionError) as err:
        await compact(s, settings=KEEP, summarizer=summarizer, mode=mode)  # type: ignore[arg-type]
    assert err.value.code == "summarization_failed"
    assert err.value.__cause__ is not None
    assert await snapshot(s) == before


@pytest.mark.parametrize("first_mode", ["pointer", "retained_tail"])
@pytest.mark.parametrize("second_mode", ["pointer", "retained_tail"])
async def test_second_compaction_summarises_what_the_first_one_kept(
    first_mode: CompactionMode, second_mode: CompactionMode
) -> None:
    """The issue's scenario: a peer tool started the second scan after the first compaction
    entry, so the messages the first one kept were neither summarised nor kept."""
    s = await new_session()
    await tool_rounds(s, 8)
    first = await compact(
        s, settings=KEEP, summarizer=ScriptedSummarizer(["FIRST"]), mode=first_mode
    )
    kept_by_first = (await s.build_context()).messages[1:]
    assert kept_by_first
    await tool_rounds(s, 4, prefix="q")
    before = (await s.build_context()).messages
    fake = ScriptedSummarizer(["SECOND"])
    second = await compact(s, settings=KEEP, summarizer=fake, mode=second_mode)
    after = (await s.build_context()).messages
    summarised = [m for c in fake.calls for m in c.messages]
    assert fake.calls[0].previous_summary == first.summary
    # Every message the first compaction kept is still in the context or went to the summariser.
    for m in kept_by_first:
        assert m in after or m in summarised, m
    # Every message that left the context went to the summariser.
    for m in left_context(real(before), real(after)):
        assert m in summarised, m
    assert second.summary.startswith("SECOND")
    assert_valid(after)


async def test_a_kept_message_larger_than_the_budget_does_not_stay_forever() -> None:
    s = await new_session()
    await tool_rounds(s, 4)
    huge = await s.append_message(user("huge paste " + words(5000)))
    await compact(s, settings=KEEP, summarizer=ScriptedSummarizer())
    ctx = await s.build_context()
    assert ctx.messages[1] == (await s.get_entry(huge)).message  # type: ignore[union-attr]
    await tool_rounds(s, 4, prefix="q")
    await compact(s, settings=KEEP, summarizer=ScriptedSummarizer())
    ctx = await s.build_context()
    assert (await s.get_entry(huge)).message not in ctx.messages  # type: ignore[union-attr]
    assert estimate_context_tokens(ctx.messages) < 5000


async def test_compaction_plans_from_the_current_branch_only() -> None:
    s = await new_session()
    await tool_rounds(s, 3)
    fork_point = await s.get_leaf_id()
    await tool_rounds(s, 5, prefix="abandoned")
    await s.navigate(fork_point)
    await tool_rounds(s, 5, prefix="live")
    fake = ScriptedSummarizer()
    await compact(s, settings=KEEP, summarizer=fake)
    texts = [str(m.model_dump()) for c in fake.calls for m in c.messages]
    assert texts and not any("abandoned" in t for t in texts)


@pytest.mark.parametrize("keep", [100, 600, 2500])
async def test_the_keep_budget_is_honoured(keep: int) -> None:
    s = await new_session()
    await tool_rounds(s, 10)
    before = (await s.build_context()).messages
    await compact(
        s, settings=CompactionSettings(keep_recent_tokens=keep), summarizer=ScriptedSummarizer()
    )
    after = (await s.build_context()).messages
    kept = after[1:]
    assert sum(estimate_tokens(m) for m in kept) >= keep
    assert kept == before[-len(kept) :]


@pytest.mark.parametrize("mode", ["pointer", "retained_tail"])
async def test_chained_compactions_never_orphan_a_tool_result(mode: str) -> None:
    s = await new_session()
    for round_ in range(4):
        await s.append_message(user(f"round {round_} " + words(100)))
        # Parallel calls whose results arrive out of order, one of them never.
        ids = [f"p{round_}_{i}" for i in range(3)]
        await s.append_message(assistant("", [(i, "bash", {"command": i}) for i in ids]))
        await s.append_message(result(ids[2], words(300)))
        await s.append_message(result(ids[0], words(300)))
        await s.append_message(assistant("", [(f"s{round_}", "read", {"path": "/x"})]))
        await s.append_message(result(f"s{round_}", words(400), name="read"))
        await compact(s, settings=KEEP, summarizer=ScriptedSummarizer(), mode=mode)  # type: ignore[arg-type]
        ctx = await s.build_context()
        assert_valid(ctx.messages)
        entry = await s.get_entry((await s.get_leaf_id()) or "")
        assert isinstance(entry, CompactionEntry)
        if entry.first_kept_entry_id is not None:
            kept = await s.get_entry(entry.first_kept_entry_id)
            assert not isinstance(kept.message, ToolResultMessage)  # type: ignore[union-attr]
        if entry.retained_tail:
            assert not isinstance(entry.retained_tail[0], ToolResultMessage)


async def test_a_kept_result_whose_call_is_summarised_goes_to_the_summariser() -> None:
    s = await new_session()
    await s.append_message(user("go " + words(100)))
    await s.append_message(
        assistant("", [("a", "bash", {"command": "a"}), ("b", "bash", {"command": "b"})])
    )
    await s.append_message(result("a", words(100)))
    await s.append_message(user("interjection " + words(700)))  # the cut lands here
    late = await s.append_message(result("b", "late result"))  # a result that arrives late
    before = (await s.build_context()).messages
    fake = ScriptedSummarizer()
    entry = await compact(s, settings=KEEP, summarizer=fake, mode="retained_tail")
    late_msg = (await s.get_entry(late)).message  # type: ignore[union-attr]
    assert late_msg in [m for c in fake.calls for m in c.messages]
    assert late_msg not in (entry.retained_tail or [])
    after = (await s.build_context()).messages
    for m in left_context(real(before), real(after)):
        assert m in fake.summarized_messages
    assert_valid(after)


@pytest.mark.parametrize("mode", ["pointer", "retained_tail"])
async def test_compaction_while_a_tool_runs_keeps_the_call_for_its_result(
    mode: str,
) -> None:
    s = await new_session()
    await tool_rounds(s, 6)
    await s.append_message(user("one more " + words(50)))
    await s.append_message(assistant("", [("running", "bash", {"command": "sleep 60"})]))
    await compact(s, settings=KEEP, summarizer=ScriptedSummarizer(), mode=mode)  # type: ignore[arg-type]
    ctx = await s.build_context()
    assert isinstance(ctx.messages[-1], AssistantMessage)
    assert_valid(ctx.messages)
    # The result arrives after the compaction and is parented on it.
    await s.append_message(result("running", "done after 60 s"))
    ctx = await s.build_context()
    assert [m.role for m in ctx.messages[-2:]] == ["assistant", "toolResult"]
    assert_valid(ctx.messages)


async def test_previous_retained_tail_goes_to_the_summariser_when_it_falls_before_the_cut() -> None:
    s = await new_session()
    await tool_rounds(s, 6)
    first = await compact(s, settings=KEEP, summarizer=ScriptedSummarizer(), mode="retained_tail")
    assert first.retained_tail
    await tool_rounds(s, 4, prefix="q")
    fake = ScriptedSummarizer()
    await compact(s, settings=KEEP, summarizer=fake)
    summarised = fake.summarized_messages
    for m in first.retained_tail:
        assert m in summarised
