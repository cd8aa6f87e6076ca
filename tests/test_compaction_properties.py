"""Property test (docs/compaction.md invariant): for random sessions with tool calls — parallel calls,
results out of order or missing, branches — compaction in either mode at any point leaves a
context that passes the tool-pair invariant and never starts with a tool result, and every
message that leaves the context went to the summariser."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from _compaction_support import assistant, left_context, real, result, user, words
from sessiontree import CompactionError
from sessiontree.compaction import CompactionSettings, compact
from sessiontree.context import find_tool_pair_problems
from sessiontree.messages import ToolResultMessage
from sessiontree.repos import MemoryRepo
from sessiontree.testing.fakes import ScriptedSummarizer

sizes = st.integers(min_value=1, max_value=400)
op = st.one_of(
    st.tuples(st.just("user"), sizes),
    st.tuples(st.just("assistant"), st.integers(min_value=0, max_value=3), sizes),
    # results for some issued calls: indices from the newest call backwards, any order
    st.tuples(st.just("results"), st.lists(st.integers(0, 5), max_size=4), sizes),
    st.tuples(st.just("navigate"), st.integers(min_value=1, max_value=6)),
    st.tuples(st.just("custom"), sizes),
    st.tuples(
        st.just("model"),
    ),
    st.tuples(
        st.just("compact"),
        st.sampled_from(["pointer", "retained_tail"]),
        st.sampled_from([0, 50, 300, 1000]),
    ),
)


async def scenario(ops: list[tuple[Any, ...]]) -> None:
    session = await MemoryRepo().create()
    calls: list[str] = []
    n = 0
    compactions = 0
    for o in ops:
        kind = o[0]
        n += 1
        if kind == "user":
            await session.append_message(user(f"u{n} " + words(o[1])))
        elif kind == "assistant":
            ids = [f"call{n}_{i}" for i in range(o[1])]
            calls.extend(ids)
            await session.append_message(
                assistant(
                    f"a{n} " + words(o[2] // 4), [(i, "read", {"path": f"/f{i}"}) for i in ids]
                )
            )
        elif kind == "results":
            for back in o[1]:
                if back < len(calls):
                    await session.append_message(result(calls[-1 - back], words(o[2])))
        elif kind == "navigate":
            path = await session.get_branch()
            if len(path) > o[1]:
                await session.navigate(path[-1 - o[1]].id)
        elif kind == "custom":
            await session.append_custom_message_entry("note", f"n{n} " + words(o[1]))
        elif kind == "model":
            await session.append_model_change("openai", f"m{n}")
        else:
            before = (await session.build_context()).messages
            fake = ScriptedSummarizer()
            try:
                await compact(
                    session,
                    settings=CompactionSettings(keep_recent_tokens=o[2]),
                    summarizer=fake,
                    mode=o[1],
                )
            except CompactionError as exc:
                assert exc.code in (
                    "nothing_to_compact",
                    "summary_not_smaller",
                )  # session unchanged
                continue
            compactions += 1
            event(f"compacted ({o[1]})")
            after = (await session.build_context()).messages
            assert find_tool_pair_problems(after) == []
            assert not isinstance(after[0], ToolResultMessage)
            summarised = fake.summarized_messages
            for gone in left_context(real(before), real(after)):
                assert gone in summarised, gone
            # Raw context (no repair) never starts with a tool result either.
            raw = (await session.build_context(repair_tool_pairs=False)).messages
            assert not any(isinstance(m, ToolResultMessage) for m in raw[:1])
    ctx = (await session.build_context()).messages
    assert find_tool_pair_problems(ctx) == []


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(op, min_size=8, max_size=40),
    st.sampled_from(["pointer", "retained_tail"]),
    st.sampled_from([0, 50, 300]),
)
def test_compaction_keeps_the_tool_pair_invariant_and_loses_nothing(
    ops: list[tuple[Any, ...]], final_mode: str, final_keep: int
) -> None:
    asyncio.run(scenario([*ops, ("compact", final_mode, final_keep)]))
