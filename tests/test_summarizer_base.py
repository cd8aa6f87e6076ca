"""What every summariser shares: the one check of a summariser's answer, the file lists, and
the output-token knob both LLM summarisers name ``max_output_tokens``."""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.errors import SummaryError
from sessiontree.messages import AssistantMessage, ToolCall, Usage
from sessiontree.summarizers.anthropic import AnthropicSummarizer
from sessiontree.summarizers.base import SummaryResult, check_result, file_operations
from sessiontree.summarizers.openai import OpenAISummarizer

LOCAL = "http://127.0.0.1:9"  # never contacted: constructing a client opens no connection


def test_check_result_returns_a_good_answer_unchanged() -> None:
    good = SummaryResult(text="## Goal\nx", usage=Usage(input=1, output=2, total_tokens=3))
    assert check_result(good, what="compaction") is good


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (None, r"returned no text \(compaction\): got NoneType, not a str"),
        (SummaryResult(text=42), r"got int, not a str"),  # type: ignore[arg-type]
        (SummaryResult(text="  \n"), r"returned no text \(compaction\) \(session 's1'"),
        (SummaryResult(text="ok", usage="12"), r"usage of type str, not Usage"),  # type: ignore[arg-type]
    ],
)
def test_check_result_names_what_is_wrong_and_where(answer: Any, reason: str) -> None:
    with pytest.raises(SummaryError, match=reason) as info:
        check_result(answer, what="compaction", session_id="s1", entry_id="e1")
    assert info.value.session_id == "s1" and info.value.entry_id == "e1"


def test_file_operations_carry_over_and_modified_wins() -> None:
    calls = [
        ToolCall(id="1", name="read", arguments={"path": "/a.py"}),
        ToolCall(id="2", name="edit", arguments={"path": "/b.py"}),
        ToolCall(id="3", name="read", arguments={"path": "/b.py"}),
        ToolCall(id="4", name="write", arguments={"path": ""}),
    ]
    msg = AssistantMessage(content=calls)
    assert file_operations([msg], read=["/z.py", "/b.py"]) == (["/a.py", "/z.py"], ["/b.py"])


def test_both_llm_summarisers_take_max_output_tokens() -> None:
    openai = OpenAISummarizer("m", base_url=f"{LOCAL}/v1", max_output_tokens=123)
    claude = AnthropicSummarizer("c", base_url=LOCAL, max_output_tokens=456)
    assert openai.max_output_tokens == 123 and claude.max_output_tokens == 456
    # the API's own name still works, for the same knob
    legacy = AnthropicSummarizer("c", base_url=LOCAL, max_tokens=789)
    assert legacy.max_output_tokens == 789 == legacy.max_tokens
    with pytest.raises(ValueError, match="not both"):
        AnthropicSummarizer("c", base_url=LOCAL, max_output_tokens=1, max_tokens=2)
    with pytest.raises(ValueError, match="max_output_tokens must be positive"):
        AnthropicSummarizer("c", base_url=LOCAL, max_tokens=0)
