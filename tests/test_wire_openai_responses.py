"""AgentMessages ⇄ OpenAI Responses input items, checked against the openai SDK's typed params."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses import ResponseInputItemParam
from pydantic import TypeAdapter

from sessiontree import (
    AssistantMessage,
    ImageContent,
    InvalidEntryError,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from sessiontree.messages import CompactionSummaryMessage, OpaqueMessage
from sessiontree.wire import from_openai_responses, to_openai_responses
from sessiontree.wire.openai_responses import OPAQUE_ROLE

ITEM = TypeAdapter(ResponseInputItemParam)


def valid(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for item in items:
        ITEM.validate_python(item, strict=True)
    return items


PNG = "iVBORw0KGgo="


def conversation() -> list[Any]:
    return [
        UserMessage(content="what is in the picture?"),
        UserMessage(
            content=[TextContent(text="this one"), ImageContent(data=PNG, mime_type="image/png")]
        ),
        AssistantMessage(
            content=[
                TextContent(text="let me look"),
                ToolCall(id="call_1", name="zoom", arguments={"factor": 2, "where": "top"}),
                ToolCall(id="call_2", name="ocr", arguments={}),
            ]
        ),
        ToolResultMessage(
            tool_call_id="call_1", tool_name="zoom", content=[TextContent(text="a cat")]
        ),
        ToolResultMessage(
            tool_call_id="call_2",
            tool_name="ocr",
            content=[TextContent(text="crop"), ImageContent(data=PNG, mime_type="image/png")],
        ),
        AssistantMessage(content=[TextContent(text="a cat")]),
    ]


def test_shapes_are_the_sdk_input_item_params() -> None:
    items = valid(to_openai_responses(conversation()))
    assert items[0] == {"role": "user", "content": "what is in the picture?"}
    assert items[1]["content"][1] == {
        "type": "input_image",
        "image_url": f"data:image/png;base64,{PNG}",
        "detail": "auto",
    }
    assert items[2] == {"role": "assistant", "content": "let me look"}
    assert items[3] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "zoom",
        "arguments": '{"factor":2,"where":"top"}',
    }
    assert items[5] == {"type": "function_call_output", "call_id": "call_1", "output": "a cat"}
    assert items[6]["output"][1]["type"] == "input_image"
    assert items[-1] == {"role": "assistant", "content": "a cat"}


def test_reading_back_groups_one_assistant_turn_and_names_the_tool() -> None:
    messages = from_openai_responses(to_openai_responses(conversation()))
    assert [m.role for m in messages] == [
        "user",
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]
    turn = messages[2]
    assert isinstance(turn, AssistantMessage)
    assert [c.name for c in turn.tool_calls()] == ["zoom", "ocr"]
    assert turn.stop_reason == "toolUse"
    result = messages[3]
    assert isinstance(result, ToolResultMessage) and result.tool_name == "zoom"
    assert to_openai_responses(messages) == to_openai_responses(conversation())


def test_reasoning_items_survive_but_foreign_thinking_is_left_out() -> None:
    items = [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "hmm"}],
            "encrypted_content": "enc",
        },
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}],
        },
    ]
    messages = from_openai_responses(items)
    assert len(messages) == 1
    back = valid(to_openai_responses(messages))
    assert back[0] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "hmm"}],
        "encrypted_content": "enc",
    }
    foreign = AssistantMessage(
        content=[
            ThinkingContent(thinking="x", thinking_signature="sig-from-anthropic"),
            TextContent(text="y"),
        ]
    )
    assert to_openai_responses([foreign]) == [{"role": "assistant", "content": "y"}]


def test_unknown_item_kinds_are_kept_whole() -> None:
    item = {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "q"},
    }
    (msg,) = from_openai_responses([item])
    assert isinstance(msg, OpaqueMessage) and msg.role == OPAQUE_ROLE
    assert to_openai_responses([msg]) == [item]


def test_summaries_and_instructions_reach_the_model_as_messages() -> None:
    items = valid(
        to_openai_responses([CompactionSummaryMessage(summary="we talked", tokens_before=10)])
    )
    assert items[0]["role"] == "user" and "we talked" in items[0]["content"]
    dev = from_openai_responses([{"role": "developer", "content": "be brief"}])
    assert valid(to_openai_responses(dev)) == [{"role": "developer", "content": "be brief"}]


def test_bad_items_are_refused_with_their_index() -> None:
    with pytest.raises(InvalidEntryError, match="item 1"):
        from_openai_responses(
            [{"role": "user", "content": "a"}, {"type": "function_call", "name": "f"}]
        )
    with pytest.raises(InvalidEntryError, match="not a mapping"):
        from_openai_responses(["text"])


@pytest.mark.parametrize("content", [None, 5])
def test_a_message_of_mistyped_content_is_refused_naming_the_key(content: Any) -> None:
    with pytest.raises(
        InvalidEntryError,
        match=r"item 0 \('message'\) has a value of the wrong "
        r"type .*'content': '" + type(content).__name__,
    ):
        from_openai_responses([{"role": "assistant", "content": content}])


def test_sdk_output_objects_are_read() -> None:
    from openai.types.responses import ResponseFunctionToolCall

    call = ResponseFunctionToolCall(
        type="function_call", call_id="c", name="f", arguments='{"a": 1}'
    )
    (msg,) = from_openai_responses([call])
    assert isinstance(msg, AssistantMessage) and msg.tool_calls()[0].arguments == {"a": 1}


def test_arguments_that_are_not_an_object_round_trip() -> None:
    item = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "[1, 2]"}
    assert to_openai_responses(from_openai_responses([item])) == [item]


text = st.text(min_size=1, max_size=40)
args = st.dictionaries(
    st.text(max_size=8), st.one_of(st.integers(-1000, 1000), text, st.booleans()), max_size=3
)
user_item = st.builds(lambda t: {"role": "user", "content": t}, text)
call_id = st.from_regex(r"call_[a-z0-9]{1,8}", fullmatch=True)


@st.composite
def turn(draw: st.DrawFn) -> list[dict[str, Any]]:
    import orjson

    items: list[dict[str, Any]] = [draw(user_item)]
    ids = draw(st.lists(call_id, max_size=3, unique=True))
    if draw(st.booleans()):
        items.append({"role": "assistant", "content": draw(text)})
    for cid in ids:
        items.append(
            {
                "type": "function_call",
                "call_id": cid,
                "name": draw(st.from_regex(r"[a-z]{1,6}", fullmatch=True)),
                "arguments": orjson.dumps(draw(args)).decode(),
            }
        )
    for cid in ids:
        items.append({"type": "function_call_output", "call_id": cid, "output": draw(text)})
    items.append({"role": "assistant", "content": draw(text)})
    return items


@settings(max_examples=60, deadline=None)
@given(st.lists(turn(), min_size=1, max_size=3))
def test_items_to_messages_to_items_is_the_identity(turns: list[list[dict[str, Any]]]) -> None:
    items = [i for t in turns for i in t]
    assert valid(to_openai_responses(from_openai_responses(items))) == items


def responses_body(*output: dict[str, Any]) -> dict[str, Any]:
    """A Responses API ``POST /v1/responses`` answer, as the official SDK parses it."""
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-test",
        "status": "completed",
        "output": list(output),
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 2,
            "total_tokens": 12,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


async def test_items_go_over_http_through_the_official_sdk_and_back() -> None:
    import openai

    from llm_servers import Reply, fake_server

    answer = {
        "type": "function_call",
        "id": "fc_9",
        "call_id": "call_9",
        "name": "zoom",
        "arguments": '{"factor": 3}',
        "status": "completed",
    }
    with fake_server(Reply(responses_body(answer))) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
        items = to_openai_responses(conversation())
        response = await client.responses.create(model="gpt-test", input=items)  # type: ignore[arg-type]
        await client.close()
    (request,) = server.requests
    assert request.path == "/v1/responses" and request.body["input"] == items
    (message,) = from_openai_responses(response.output)
    assert isinstance(message, AssistantMessage)
    assert message.tool_calls()[0].arguments == {"factor": 3}
