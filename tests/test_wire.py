"""Wire converters: exact provider request shapes, their inverses, and append_message refusing
provider-shaped messages."""

from __future__ import annotations

from typing import Any

import pytest

from _agent_support import as_assistant, as_tool_result, text_of
from sessiontree import InvalidEntryError
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    CompactionSummaryMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from sessiontree.repos import MemoryRepo
from sessiontree.wire import from_anthropic, from_openai_chat, to_anthropic, to_openai_chat
from wire_check import check_anthropic_messages, check_openai_messages

PNG = "iVBORw0KGgo="


def conversation() -> list[AgentMessage]:
    return [
        CompactionSummaryMessage(summary="## Goal\nfix the bug", tokens_before=5000),
        UserMessage(
            content=[
                TextContent(text="look at this"),
                ImageContent(data=PNG, mime_type="image/png"),
            ]
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="plan", thinking_signature="sig"),
                TextContent(text="reading"),
                ToolCall(id="call.1|x", name="read", arguments={"path": "a.py"}),
                ToolCall(id="c2", name="shot", arguments={}),
            ],
            model="m1",
            stop_reason="toolUse",
        ),
        ToolResultMessage(
            tool_call_id="c2",
            tool_name="shot",
            content=[ImageContent(data=PNG, mime_type="image/png")],
        ),
        ToolResultMessage(
            tool_call_id="call.1|x", tool_name="read", content=[TextContent(text="print(1)")]
        ),
        BashExecutionMessage(command="ls", output="a.py"),
        AssistantMessage(content=[TextContent(text="half")], stop_reason="aborted"),
        AssistantMessage(
            content=[ToolCall(id="dead", name="read", arguments={})], stop_reason="error"
        ),
        ToolResultMessage(tool_call_id="dead", tool_name="read", content=[TextContent(text="x")]),
        AssistantMessage(content=[TextContent(text="done")], model="m1", stop_reason="stop"),
        UserMessage(content="thanks"),
    ]


def test_to_openai_chat_is_an_exact_request() -> None:
    out = to_openai_chat(conversation(), system_prompt="be brief")
    check_openai_messages(out)
    assert out[0] == {"role": "system", "content": "be brief"}
    assert out[1]["role"] == "user" and "compacted" in out[1]["content"]
    assert out[2]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}"},
    }
    assistant = out[3]
    assert assistant["content"] == "reading" and "reasoning_content" not in assistant
    assert assistant["tool_calls"][0]["function"] == {
        "name": "read",
        "arguments": '{"path":"a.py"}',
    }
    # results follow in call order, the image of a result in a user message after the batch
    assert [m["role"] for m in out[4:7]] == ["tool", "tool", "user"]
    assert out[4] == {"role": "tool", "tool_call_id": "call.1|x", "content": "print(1)"}
    assert out[5]["content"] == "(see the attached image)"
    assert out[6]["content"][0]["type"] == "image_url"
    assert out[7]["content"].startswith("Ran `ls`")
    # aborted and failed replies are left out, with their results
    assert "half" not in str(out) and "dead" not in str(out)
    assert out[-2] == {"role": "assistant", "content": "done"}
    assert out[-1] == {"role": "user", "content": "thanks"}


def test_to_openai_chat_sends_thinking_only_when_asked() -> None:
    out = to_openai_chat(conversation(), thinking_field="reasoning_content")
    assert out[2]["reasoning_content"] == "plan"


def test_to_anthropic_is_an_exact_alternating_request() -> None:
    system, out = to_anthropic(conversation(), system_prompt="be brief", model="m1")
    check_anthropic_messages(system, out)
    assert system == "be brief"
    assert [m["role"] for m in out] == ["user", "assistant", "user", "assistant", "user"]
    first = out[0]["content"]
    assert "compacted" in first[0]["text"] and first[2]["type"] == "image"
    blocks = out[1]["content"]
    assert blocks[0] == {"type": "thinking", "thinking": "plan", "signature": "sig"}
    assert blocks[2] == {
        "type": "tool_use",
        "id": "call_1_x",
        "name": "read",
        "input": {"path": "a.py"},
    }
    results = out[2]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result", "text"]
    assert [b["tool_use_id"] for b in results[:2]] == ["call_1_x", "c2"]
    assert results[1]["content"][0]["type"] == "image"
    assert "Ran `ls`" in results[2]["text"]


def test_to_anthropic_drops_thinking_of_another_model() -> None:
    _, out = to_anthropic(conversation(), model="m2")
    assert all(b["type"] != "thinking" for b in out[1]["content"])


def test_a_context_starting_with_an_assistant_gets_a_user_turn_first() -> None:
    _, out = to_anthropic([AssistantMessage(content=[TextContent(text="hi")], stop_reason="stop")])
    check_anthropic_messages(None, [*out, {"role": "user", "content": "next"}])
    assert out[0]["role"] == "user"


def test_calls_without_results_get_error_results_in_every_converter() -> None:
    msgs: list[AgentMessage] = [
        UserMessage(content="go"),
        AssistantMessage(
            content=[ToolCall(id="c1", name="run", arguments={})], stop_reason="toolUse"
        ),
    ]
    out = to_openai_chat(msgs)
    check_openai_messages(out)
    assert out[-1]["role"] == "tool" and "lost" in out[-1]["content"]
    _, anth = to_anthropic(msgs)
    check_anthropic_messages(None, anth)
    assert anth[-1]["content"][0]["is_error"] is True


def test_from_openai_chat_inverts_to_openai_chat() -> None:
    msgs = conversation()
    system, back = from_openai_chat(to_openai_chat(msgs, system_prompt="sys"))
    assert system == "sys"
    assert [m.role for m in back] == [
        "user",
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "user",
        "user",
        "assistant",
        "user",
    ]
    assert as_assistant(back[2]).tool_calls()[0] == ToolCall(
        id="call.1|x", name="read", arguments={"path": "a.py"}
    )
    result = as_tool_result(back[3])
    assert result.tool_name == "read" and text_of(result.content[0]) == "print(1)"
    assert to_openai_chat(back, system_prompt=system) == to_openai_chat(msgs, system_prompt="sys")


def test_from_anthropic_inverts_to_anthropic() -> None:
    msgs = conversation()
    _, wire = to_anthropic(msgs, model="m1")
    back = from_anthropic(wire)
    assert [m.role for m in back] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "user",
        "assistant",
        "user",
    ]
    assert as_assistant(back[1]).content[0] == ThinkingContent(
        thinking="plan", thinking_signature="sig"
    )
    assert as_tool_result(back[2]).tool_name == "read"
    assert to_anthropic(back, model="m1")[1] == wire


def test_from_converters_refuse_unknown_roles() -> None:
    with pytest.raises(InvalidEntryError, match="unknown role"):
        from_openai_chat([{"role": "robot", "content": "x"}])
    with pytest.raises(InvalidEntryError, match="only 'user' and 'assistant'"):
        from_anthropic([{"role": "system", "content": "x"}])
    with pytest.raises(InvalidEntryError, match="not JSON"):
        from_openai_chat(
            [
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{"}}
                    ],
                }
            ]
        )


@pytest.mark.parametrize(
    ("message", "converter"),
    [
        ({"role": "tool", "tool_call_id": "c1", "content": "result"}, "from_openai_chat"),
        ({"role": "system", "content": "you are"}, "from_openai_chat"),
        ({"role": "developer", "content": "you are"}, "from_openai_chat"),
        (
            {"role": "assistant", "content": [], "tool_calls": [{"id": "c", "type": "function"}]},
            "from_openai_chat",
        ),
        (
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
            },
            "from_anthropic",
        ),
        (
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}],
            },
            "from_anthropic",
        ),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
            "from_openai_chat",
        ),
    ],
)
async def test_append_message_refuses_provider_shaped_messages(
    message: dict[str, Any], converter: str
) -> None:
    session = await MemoryRepo().create()
    await session.append_message(UserMessage(content="hi"))
    before = await session.get_entries()
    with pytest.raises(InvalidEntryError) as info:
        await session.append_message(message)
    assert f"sessiontree.{converter}(" in str(info.value) and session.id in str(info.value)
    assert await session.get_entries() == before


async def test_append_message_still_keeps_unknown_roles_and_blocks() -> None:
    session = await MemoryRepo().create()
    await session.append_message({"role": "futureRole", "content": "x"})
    await session.append_message({"role": "user", "content": [{"type": "futureBlock", "v": 1}]})
    assert len(await session.get_entries()) == 2


def test_a_call_id_reused_by_a_later_turn_keeps_both_results() -> None:
    from sessiontree.context import find_tool_pair_problems, repair_tool_pairs

    turn: list[AgentMessage] = [
        UserMessage(content="count"),
        AssistantMessage(
            content=[ToolCall(id="call_1", name="count", arguments={})], stop_reason="toolUse"
        ),
        ToolResultMessage(
            tool_call_id="call_1", tool_name="count", content=[TextContent(text="4")]
        ),
        AssistantMessage(content=[TextContent(text="4 words")], stop_reason="stop"),
    ]
    again: list[AgentMessage] = [
        UserMessage(content="count again"),
        AssistantMessage(
            content=[ToolCall(id="call_1", name="count", arguments={})], stop_reason="toolUse"
        ),
        ToolResultMessage(
            tool_call_id="call_1", tool_name="count", content=[TextContent(text="5")]
        ),
    ]
    repaired = repair_tool_pairs(turn + again)
    assert repaired == turn + again and find_tool_pair_problems(repaired) == []
    out = to_openai_chat(turn + again)
    check_openai_messages(out)
    assert [m.get("content") for m in out if m["role"] == "tool"] == ["4", "5"]
    assert "lost" not in str(out)
