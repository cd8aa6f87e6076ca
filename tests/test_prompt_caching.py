"""Anthropic prompt caching: the requests the Anthropic model sends mark cache breakpoints on
the tools, the system prompt, the newest message and the user message before it, so resuming
a long session reads its prefix from the cache (docs/harness.md); and OpenAI's cached input
is counted as cache reads, not also as input. Through the official SDKs, over real HTTP."""

from __future__ import annotations

from typing import Any

from _agent_support import close_models, make_model  # noqa: F401  (fixture)
from llm_servers import FakeLLMServer, Say
from sessiontree.messages import parse_message
from sessiontree.models.base import Done, ModelRequest, ToolSchema
from sessiontree.providers.anthropic import cache_breakpoints
from sessiontree.testing.builders import assistant, tool_call, tool_result, user
from wire_check import check_anthropic_messages

TOOLS = (ToolSchema("read", "Read a file.", {"type": "object", "properties": {}}),)


def _conversation() -> list[Any]:
    return [
        parse_message(user("first question")),
        parse_message(assistant("reading", tool_call("c1", "read", path="a"))),
        parse_message(tool_result("c1", "file a")),
        parse_message(assistant("a says hi")),
        parse_message(user("second question")),
    ]


def _marked(body: dict[str, Any]) -> list[str]:
    where = []
    if any("cache_control" in t for t in body.get("tools", [])):
        where.append("tools")
    if isinstance(body.get("system"), list) and "cache_control" in body["system"][-1]:
        where.append("system")
    for i, message in enumerate(body["messages"]):
        content = message["content"]
        if isinstance(content, list) and any("cache_control" in b for b in content):
            where.append(f"{message['role']} {i}")
    return where


async def _first_body(**options: Any) -> dict[str, Any]:
    with FakeLLMServer(Say(text="ok")) as server:
        model = make_model("anthropic", server, **options)
        request = ModelRequest("You are careful.", _conversation(), tools=TOOLS)
        events = [e async for e in model.stream(request)]
        assert isinstance(events[-1], Done)
        body: dict[str, Any] = server.requests[0].body
    return body


async def test_an_anthropic_request_marks_four_cache_breakpoints() -> None:
    body = await _first_body()
    check_anthropic_messages(body["system"], body["messages"])  # still a valid request
    # the user turns of the request: 0 (question), 2 (tool result), 4 (second question)
    assert _marked(body) == ["tools", "system", "user 2", "user 4"]
    assert body["system"][0]["text"] == "You are careful."
    count = sum(
        "cache_control" in b
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
    )
    assert count + 2 <= 4  # Anthropic allows four breakpoints a request


async def test_prompt_caching_can_be_turned_off() -> None:
    body = await _first_body(prompt_caching=False)
    assert _marked(body) == []
    assert body["system"] == "You are careful."


def test_a_breakpoint_never_sits_on_thinking_or_empty_text() -> None:
    body: dict[str, Any] = {
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "answer"},
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "text", "text": ""},
                ],
            },
        ]
    }
    cache_breakpoints(body)
    blocks = body["messages"][1]["content"]
    assert [("cache_control" in b) for b in blocks] == [True, False, False]
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "q", "cache_control": {"type": "ephemeral"}}
    ]


async def test_openai_cached_input_is_a_cache_read_not_also_input() -> None:
    # prompt_tokens 1000, 800 of them cached (Say.input_tokens is the uncached part)
    with FakeLLMServer(Say(text="ok", input_tokens=200, cached_tokens=800)) as server:
        model = make_model("openai", server)
        events = [e async for e in model.stream(ModelRequest("", _conversation()))]
    done = events[-1]
    assert isinstance(done, Done)
    usage = done.message.usage
    assert usage is not None
    assert (usage.input, usage.cache_read) == (200, 800)
