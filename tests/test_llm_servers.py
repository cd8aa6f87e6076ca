"""The fake model servers (tests/llm_servers.py) as the official SDKs see them: the Responses
API stream Codex reads, query strings on routes, model-list and token-count probes, one id per
answer."""

from __future__ import annotations

import anthropic
import openai

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


async def test_token_counts_are_answered_and_recorded_without_taking_a_reply() -> None:
    with FakeLLMServer(Say(text="the only answer"), Say(text="never sent")) as server:
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0)
        counted = await client.messages.count_tokens(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        answer = await client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        await client.close()
    assert counted.input_tokens == 100
    assert [b.text for b in answer.content if b.type == "text"] == ["the only answer"]
    assert [(r.method, r.path) for r in server.requests] == [
        ("POST", "/v1/messages/count_tokens"),
        ("POST", "/v1/messages"),
    ]


async def test_answers_carry_the_request_id_header() -> None:
    # Claude Code records it as requestId; ccusage counts a reply once by message + request id
    with FakeLLMServer(Say(text="a"), Say(text="b")) as server:
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=0)
        ids = []
        for _ in range(2):
            raw = await client.messages.with_raw_response.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            )
            ids.append(raw.headers.get("request-id"))
        await client.close()
    assert all(ids) and ids[0] != ids[1]


async def test_responses_stream_can_fail_midway() -> None:
    with FakeLLMServer(Say(text="partial answer", error=("server_error", "boom"))) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        events = []
        async with await client.responses.create(model="m", input="hi", stream=True) as stream:
            async for event in stream:
                events.append(event)
        await client.close()
    kinds = [e.type for e in events]
    assert kinds == ["response.created", "response.output_item.added", "error"]
    assert events[-1].type == "error" and events[-1].message == "boom"
