"""The tool-pair repair and its checker (docs/context.md step 5), including reused tool-call ids."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree import tool_pairs
from sessiontree.context import LOST_RESULT_TEXT, find_tool_pair_problems, repair_tool_pairs
from sessiontree.messages import AgentMessage, ToolResultMessage, parse_message
from sessiontree.testing.builders import assistant, tool_call, tool_result, user


def msgs(*raw: dict[str, Any]) -> list[AgentMessage]:
    return [parse_message(m) for m in raw]


def real_results(messages: list[AgentMessage]) -> list[ToolResultMessage]:
    return [
        m
        for m in messages
        if isinstance(m, ToolResultMessage)
        and not (m.is_error and LOST_RESULT_TEXT in str(m.content))
    ]


def test_a_call_id_reused_in_a_later_turn_keeps_both_results() -> None:
    # SWE-agent trajectories issue the same id in every turn
    before = msgs(
        user("fix it"),
        assistant("", tool_call("call_0")),
        tool_result("call_0", "ls output"),
        assistant("", tool_call("call_0")),
        tool_result("call_0", "cat output"),
        assistant("", tool_call("call_0")),
        tool_result("call_0", "edit output"),
        assistant("done"),
    )
    assert find_tool_pair_problems(before) == []
    assert repair_tool_pairs(before) == before


def test_a_result_goes_to_the_nearest_unanswered_call_of_its_id() -> None:
    before = msgs(
        user("go"),
        assistant("", tool_call("x")),  # its result was lost
        user("again"),
        assistant("", tool_call("x")),
        tool_result("x", "second run"),
        user("next"),
    )
    assert find_tool_pair_problems(before) != []
    after = repair_tool_pairs(before)
    assert find_tool_pair_problems(after) == []
    texts = [str(m.content) for m in after if isinstance(m, ToolResultMessage)]
    assert LOST_RESULT_TEXT in texts[0] and "second run" in texts[1]
    assert after[5] == before[4]


def test_results_out_of_call_order_are_a_problem_the_repair_fixes() -> None:
    before = msgs(
        user("go"),
        assistant("", tool_call("a"), tool_call("b")),
        tool_result("b"),
        tool_result("a"),
        user("next"),
    )
    assert find_tool_pair_problems(before) != []
    after = repair_tool_pairs(before)
    assert [m.tool_call_id for m in after if isinstance(m, ToolResultMessage)] == ["a", "b"]
    assert find_tool_pair_problems(after) == []


def test_a_second_result_for_one_call_is_a_problem_and_dropped() -> None:
    before = msgs(user("go"), assistant("", tool_call("a")), tool_result("a"), tool_result("a"))
    assert find_tool_pair_problems(before) != []
    assert len(real_results(repair_tool_pairs(before))) == 1


step = st.one_of(
    st.tuples(st.just("user"), st.just(0), st.just(())),
    st.tuples(st.just("assistant"), st.just(0), st.lists(st.integers(0, 3), max_size=3)),
    st.tuples(st.just("result"), st.integers(0, 4), st.just(())),
)


def build(steps: list[tuple[str, int, Any]]) -> list[AgentMessage]:
    out: list[dict[str, Any]] = []
    for kind, k, calls in steps:
        if kind == "user":
            out.append(user("u"))
        elif kind == "assistant":
            out.append(assistant("", *[tool_call(f"id{c}") for c in calls]))
        else:
            out.append(tool_result(f"id{k}", f"result {len(out)}"))
    return msgs(*out)


@settings(max_examples=300, deadline=None)
@given(st.lists(step, max_size=25))
def test_repair_and_checker_agree_whatever_the_ids(steps: list[tuple[str, int, Any]]) -> None:
    """Ids drawn from a pool of four, so calls reuse ids across and within turns."""
    before = build(steps)
    after = repair_tool_pairs(before)
    assert find_tool_pair_problems(after) == []
    assert repair_tool_pairs(after) == after
    # the checker reports nothing exactly when the repair would change nothing
    assert (find_tool_pair_problems(before) == []) == (after == before)
    # a result is genuine when an earlier call of its id is still open: none of those is lost
    open_calls: Counter[str] = Counter()
    genuine = 0
    for m in before:
        if isinstance(m, ToolResultMessage):
            if open_calls[m.tool_call_id] > 0:
                open_calls[m.tool_call_id] -= 1
                genuine += 1
        elif hasattr(m, "tool_calls"):
            open_calls.update(c.id for c in m.tool_calls())
    assert len(real_results(after)) == genuine
    assert [m for m in after if not isinstance(m, ToolResultMessage)] == [
        m for m in before if not isinstance(m, ToolResultMessage)
    ]


paired_turn = st.tuples(
    st.lists(st.integers(0, 3), max_size=3),  # call ids of an assistant message
    st.integers(0, 4),  # how many of its results follow (cut to the calls)
    st.booleans(),  # a user message after the turn
)


@settings(max_examples=300, deadline=None)
@given(st.lists(paired_turn, max_size=8), st.lists(step, max_size=3), st.integers(0, 40))
def test_the_already_paired_shortcut_gives_what_the_full_repair_gives(
    turns: list[tuple[list[int], int, bool]], extra: list[tuple[str, int, Any]], at: int
) -> None:
    """Mostly well-paired histories (the shortcut's case), some with a few random messages
    spliced in: the result equals the full repair's, message for message."""
    steps: list[tuple[str, int, Any]] = [("user", 0, ())]
    for calls, answered, then_user in turns:
        steps.append(("assistant", 0, calls))
        steps.extend(("result", c, ()) for c in calls[:answered])
        if then_user:
            steps.append(("user", 0, ()))
    at = min(at, len(steps))
    messages = build(steps[:at] + extra + steps[at:])
    fast = repair_tool_pairs(messages)
    assert fast == tool_pairs._repair(messages)
    if tool_pairs._already_paired(messages):
        assert all(a is b for a, b in zip(fast, messages, strict=True))
