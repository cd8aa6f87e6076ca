"""The fake model servers (tests/llm_servers.py) as the official SDKs see them: the Responses
API stream Codex reads, query strings on routes, model-list and token-count probes, one id per
answer."""

from __future__ import annotations

import anthropic
import openai
import pytest

from llm_servers import FakeLLMServer, Say

CALL = ("call_7", "exec_command", {"cmd": "echo hi"})


async def test_responses_stream_parses_in_the_openai_sdk() -> None:
    with FakeLLMServer(Say(text="hello there", thinking="hmm", tool_calls=(CALL,))) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        kinds: list[str] = []
        stream = await client.responses.create(model="gpt-x", input="hi", stream=True)
        async for event in stream:
            kinds.append(event.type)
            if event.type == "response.completed":
                final = event.response
        await client.close()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    assert "response.function_call_arguments.delta" in kinds
    assert final.model == "gpt-x"  # the requested model, as a real server answers
    assert final.output_text == "hello there"
    (call,) = [item for item in final.output if item.type == "function_call"]
    assert (call.call_id, call.name, call.arguments) == (
        "call_7",
        "exec_command",
        '{"cmd":"echo hi"}',
    )
    assert final.usage is not None and final.usage.input_tokens == 100
    assert server.requests[0].path == "/v1/responses"


async def test_responses_without_stream_is_one_body() -> None:
    with FakeLLMServer(Say(text="plain", model="named")) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        response = await client.responses.create(model="gpt-x", input="hi")
        await client.close()
    assert (response.output_text, response.model, response.status) == (
        "plain",
        "named",
        "completed",
    )


async def test_anthropic_route_ignores_the_query_string_and_ids_differ() -> None:
    # Claude Code posts to /v1/messages?beta=true; two answers never share a message id
    with FakeLLMServer(Say(text="one"), Say(text="two")) as server:
        client = anthropic.AsyncAnthropic(
            base_url=server.url, api_key="k", max_retries=0, default_query={"beta": "true"}
        )
        first = await client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        async with client.messages.stream(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            second = await stream.get_final_message()
        await client.close()
    assert [r.path for r in server.requests] == ["/v1/messages?beta=true"] * 2
    texts = [b.text for m in (first, second) for b in m.content if b.type == "text"]
    assert texts == ["one", "two"]
    assert first.id != second.id


async def test_probes_are_answered_and_recorded_without_taking_a_reply() -> None:
    with FakeLLMServer(Say(text="the only answer")) as server:
        oa = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        models = await oa.models.list()
        with pytest.raises(openai.NotFoundError):
            await oa.files.list()
        an = anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0)
        counted = await an.messages.count_tokens(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        listed = await an.models.list()
        answer = await an.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        await oa.close()
        await an.close()
    assert [m.id for m in models.data] == ["fake-model"]
    assert [m.id for m in listed.data] == ["fake-claude"]
    assert counted.input_tokens == 100
    assert answer.content[0].type == "text" and answer.content[0].text == "the only answer"
    assert [(r.method, r.path.split("?")[0]) for r in server.requests] == [
        ("GET", "/v1/models"),
        ("GET", "/v1/files"),
        ("POST", "/v1/messages/count_tokens"),
        ("GET", "/v1/models"),
        ("POST", "/v1/messages"),
    ]
