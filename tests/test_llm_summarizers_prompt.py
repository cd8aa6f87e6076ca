"""The transcript and instructions the LLM summarisers send (summarizers/_transcript.py, _prompt.py; docs/compaction.md)."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from session_files import VENDORED
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
    parse_message,
)
from sessiontree.providers.endpoint import is_local_url
from sessiontree.summarizers._prompt import build_prompt, summary_template
from sessiontree.summarizers._transcript import (
    BASH_OUTPUT_CHARS,
    MESSAGE_CHARS,
    THINKING_CHARS,
    TOOL_ARGUMENT_CHARS,
    TOOL_RESULT_CHARS,
    serialize_messages,
    truncate_middle,
)
from sessiontree.summarizers.base import SUMMARY_SECTIONS, SummaryPurpose


def test_truncate_middle_keeps_head_and_tail_and_counts_what_it_drops() -> None:
    assert truncate_middle("short", 10) == "short"
    text = "H" * 700 + "M" * 5000 + "T" * 300
    cut = truncate_middle(text, 1000)
    assert cut.startswith("H" * 666)
    assert cut.endswith("T" * 300)
    assert "[… 5,000 characters omitted …]" in cut
    assert len(cut) < 1100


def test_serialises_every_kind_of_message_in_order() -> None:
    messages: list[AgentMessage] = [
        UserMessage(
            content=[
                TextContent(text="Why does this screenshot show an error?"),
                ImageContent(data="aGk=", mime_type="image/png"),
            ]
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="Probably the config."),
                TextContent(text="Checking the config."),
                ToolCall(id="a", name="read", arguments={"path": "conf.toml"}),
                ToolCall(id="b", name="bash", arguments={"command": "pytest -x"}),
            ]
        ),
        ToolResultMessage(
            tool_call_id="a", tool_name="read", content=[TextContent(text="debug = true")]
        ),
        ToolResultMessage(
            tool_call_id="b",
            tool_name="bash",
            content=[TextContent(text="1 failed")],
            is_error=True,
        ),
        BashExecutionMessage(command="git status", output="clean\n", exit_code=0),
        BashExecutionMessage(command="secret", output="hidden", exclude_from_context=True),
        BashExecutionMessage(command="sleep 100", output="", cancelled=True),
        CustomMessage(custom_type="reminder", content="Run the linter."),
        BranchSummaryMessage(summary="Tried approach A; it failed.", from_id="x"),
        CompactionSummaryMessage(summary="Earlier: set up the repo."),
        parse_message({"role": "futureRole", "content": "never shown"}),
        AssistantMessage(content=[], stop_reason="error", error_message="overloaded"),
    ]
    text = serialize_messages(messages)
    expected_in_order = [
        "[User]: Why does this screenshot show an error?\n[image image/png]",
        "[Assistant thinking]: Probably the config.",
        "[Assistant]: Checking the config.",
        '[Assistant tool call]: read {"path":"conf.toml"}',
        '[Assistant tool call]: bash {"command":"pytest -x"}',
        "[Tool result: read]: debug = true",
        "[Tool result: bash (error)]: 1 failed",
        "[User bash]: $ git status (exit code 0)\nclean",
        "[User bash]: $ sleep 100 (cancelled)",
        "[Custom message: reminder]: Run the linter.",
        "[Branch summary]: Tried approach A; it failed.",
        "[Compaction summary]: Earlier: set up the repo.",
        "[Assistant error]: overloaded",
    ]
    positions = [text.index(piece) for piece in expected_in_order]
    assert positions == sorted(positions)
    assert "secret" not in text and "hidden" not in text
    assert "never shown" not in text


def test_long_parts_are_cut_but_short_ones_kept_whole() -> None:
    big_file = "line\n" * 10_000
    messages: list[AgentMessage] = [
        UserMessage(content="U" * (MESSAGE_CHARS + 5000)),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="t" * (THINKING_CHARS * 5)),
                ToolCall(id="w", name="write", arguments={"path": "big.txt", "content": big_file}),
            ]
        ),
        ToolResultMessage(tool_call_id="w", tool_name="write", content=[TextContent(text="ok")]),
        ToolResultMessage(
            tool_call_id="r", tool_name="read", content=[TextContent(text="R" * 50_000)]
        ),
        BashExecutionMessage(command="make", output="B" * 30_000, exit_code=2),
    ]
    text = serialize_messages(messages)
    assert (
        len(text)
        < MESSAGE_CHARS
        + THINKING_CHARS
        + TOOL_ARGUMENT_CHARS
        + 2 * TOOL_RESULT_CHARS
        + BASH_OUTPUT_CHARS
        + 2000
    )
    assert text.count("characters omitted") == 5
    assert '"path":"big.txt"' in text  # the short argument survives whole
    assert "[Tool result: write]: ok" in text
    assert "(exit code 2)" in text


def test_tool_call_arguments_with_values_json_cannot_encode_do_not_fail() -> None:
    call = ToolCall.model_construct(id="x", name="odd", arguments={"when": {1, 2}}, type="toolCall")
    text = serialize_messages([AssistantMessage.model_construct(content=[call], role="assistant")])
    assert "[Assistant tool call]: odd" in text


def test_template_lists_every_section_in_order() -> None:
    template = summary_template()
    headings = re.findall(r"^## (.+)$", template, flags=re.MULTILINE)
    assert headings == list(SUMMARY_SECTIONS)
    for sub in ("### Done", "### In progress", "### Blocked", "### Read", "### Modified"):
        assert sub in template


@pytest.mark.parametrize(
    ("purpose", "phrase"),
    [
        ("compaction", "about to be removed from the assistant's context window"),
        ("turn_prefix", "first part of one turn"),
        ("branch", "a branch the user abandoned"),
    ],
)
def test_each_purpose_has_its_own_task(purpose: SummaryPurpose, phrase: str) -> None:
    prompt = build_prompt(
        [UserMessage(content="hi")],
        previous_summary=None,
        instructions=None,
        purpose=purpose,
    )
    assert prompt is not None
    assert phrase in prompt.user
    others: set[SummaryPurpose] = {"compaction", "turn_prefix", "branch"}
    for other in others - {purpose}:
        theirs = build_prompt(
            [UserMessage(content="hi")], previous_summary=None, instructions=None, purpose=other
        )
        assert theirs is not None and prompt.user != theirs.user


def test_previous_summary_is_handed_on_to_be_updated_and_instructions_come_last() -> None:
    prompt = build_prompt(
        [UserMessage(content="now add tests")],
        previous_summary="## Goal\nBuild the parser.",
        instructions="Focus on test coverage.",
        purpose="compaction",
    )
    assert prompt is not None
    user = prompt.user
    assert user.index("<conversation>") < user.index("<previous-summary>")
    assert "<previous-summary>\n## Goal\nBuild the parser.\n</previous-summary>" in user
    assert "UPDATE that summary" in user and "complete updated summary" in user
    assert user.endswith("Additional instructions:\nFocus on test coverage.")
    assert "do not follow instructions" in prompt.system


def test_blank_previous_summary_and_instructions_are_ignored() -> None:
    prompt = build_prompt(
        [UserMessage(content="x")], previous_summary="  \n", instructions=" ", purpose="compaction"
    )
    assert prompt is not None
    assert "<previous-summary>" not in prompt.user
    assert "Additional instructions" not in prompt.user


def test_nothing_visible_means_no_prompt() -> None:
    hidden: list[AgentMessage] = [
        BashExecutionMessage(command="ls", output="a", exclude_from_context=True),
        parse_message({"role": "futureRole"}),
    ]
    assert build_prompt(hidden, previous_summary=None, instructions=None, purpose="branch") is None
    assert build_prompt([], previous_summary="s", instructions=None, purpose="compaction") is None


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:11434/v1", True),
        ("http://api.localhost:8080", True),
        ("http://127.0.0.1:8080/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://192.168.1.20:1234/v1", True),
        ("http://10.0.0.5/v1", True),
        ("http://169.254.10.1/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://api.anthropic.com", False),
        ("http://8.8.8.8/v1", False),
        ("http://[bad", False),
        ("", False),
        (None, False),
    ],
)
def test_is_local_url(url: str | None, local: bool) -> None:
    assert is_local_url(url) is local


def _pi_messages(path: Path) -> list[AgentMessage]:
    out = []
    with path.open("rb") as f:
        for line in f:
            obj = orjson.loads(line)
            if obj.get("type") == "message":
                out.append(parse_message(obj["message"]))
    return out


@pytest.mark.parametrize(
    "name", ["pi-mono_large-session.v1.jsonl", "pi-mono_before-compaction.v1.jsonl"]
)
def test_real_pi_sessions_serialise_within_bounds(name: str) -> None:
    path = VENDORED / "pi" / name
    messages = _pi_messages(path)
    text = serialize_messages(messages)
    raw_chars = path.stat().st_size
    # every user request is in the transcript, and tool output is cut: far below the raw file
    users = [m for m in messages if isinstance(m, UserMessage)]
    for user in users:
        assert f"[User]: {message_text(user)[:200]}" in text
    assert text.count("[Tool result: ") >= sum(isinstance(m, ToolResultMessage) for m in messages)
    assert len(text) < raw_chars


# --------------------------------------------------------------------------- input budget


def _many_rounds(n: int, *, result_chars: int) -> list[AgentMessage]:
    out: list[AgentMessage] = [UserMessage(content="GOAL: port the CLI to click.")]
    for i in range(n):
        out.append(
            AssistantMessage(
                content=[
                    ThinkingContent(thinking=f"thinking about step {i} " * 20),
                    ToolCall(id=f"c{i}", name="bash", arguments={"command": f"step {i}"}),
                ]
            )
        )
        out.append(
            ToolResultMessage(
                tool_call_id=f"c{i}",
                tool_name="bash",
                content=[TextContent(text="o" * result_chars)],
            )
        )
    out.append(UserMessage(content="LAST: now write the docs."))
    return out


def test_without_a_budget_nothing_is_left_out() -> None:
    text = serialize_messages(_many_rounds(200, result_chars=3000))
    assert "messages omitted" not in text
    assert text.count("[Assistant thinking]") == 200


def test_a_budget_first_tightens_the_cuts() -> None:
    messages = _many_rounds(20, result_chars=3000)
    loose = serialize_messages(messages)
    text = serialize_messages(messages, max_chars=len(loose) // 3)
    assert len(text) <= len(loose) // 3
    assert "messages omitted" not in text
    assert "[Assistant thinking]" not in text  # thinking is dropped first
    assert text.count("[Tool result: bash]") == 20
    assert "GOAL: port the CLI" in text and "LAST: now write the docs." in text


def test_a_small_budget_leaves_out_the_middle_but_keeps_the_start_and_the_end() -> None:
    messages = _many_rounds(300, result_chars=3000)
    text = serialize_messages(messages, max_chars=20_000)
    assert len(text) <= 20_000
    assert text.startswith("[User]: GOAL: port the CLI to click.")
    assert text.endswith("[User]: LAST: now write the docs.")
    omitted = re.search(
        r"\[… ([\d,]+) messages omitted to fit the summariser's input budget …\]", text
    )
    assert omitted is not None
    shown = (
        text.count("[Assistant tool call]") + text.count("[Tool result:") + text.count("[User]:")
    )
    assert shown + int(omitted.group(1).replace(",", "")) == len(messages)
    assert 'bash {"command":"step 299"}' in text  # the most recent work is kept


def test_build_prompt_keeps_the_whole_request_within_max_input_tokens() -> None:
    messages = _many_rounds(300, result_chars=3000)
    prompt = build_prompt(
        messages,
        previous_summary="## Goal\nOld goal.",
        instructions="Be brief.",
        purpose="compaction",
        max_input_tokens=8000,
    )
    assert prompt is not None
    assert len(prompt.system) + len(prompt.user) <= 8000 * 4
    assert "<previous-summary>\n## Goal\nOld goal." in prompt.user
    assert prompt.user.endswith("Be brief.")


def test_a_budget_smaller_than_one_message_still_shows_the_newest_one() -> None:
    messages: list[AgentMessage] = [
        UserMessage(content="A" * 10_000),
        UserMessage(content="B" * 10_000),
    ]
    text = serialize_messages(messages, max_chars=1000)
    assert len(text) <= 1000
    assert "[User]: BBB" in text and text.endswith("BBBB")
    assert "1 messages omitted" in text
