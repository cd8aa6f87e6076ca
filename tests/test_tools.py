"""Tools: schemas from type hints and docstrings, validation, failures as isError results,
parallel and sequential batches."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Literal, assert_type

import pytest
from pydantic import BaseModel

from _agent_support import as_tool_result, close_models, harness, make_model, text_of
from llm_servers import FakeLLMServer, Say
from sessiontree.entries import MessageEntry
from sessiontree.harness import Tool, tool
from sessiontree.harness.tools import run_tool
from sessiontree.messages import ImageContent, TextContent, ToolCall, ToolResultMessage
from sessiontree.repos import MemoryRepo

__all__ = ["close_models"]


@tool
async def search(query: str, limit: int = 5, mode: Literal["fast", "deep"] = "fast") -> str:
    """Search the code base.

    Longer explanation that is not the summary.

    Args:
        query: what to look for,
            over two lines.
        limit: the most hits.
        mode: how hard to look.

    Returns:
        the hits.
    """
    return f"{query}:{limit}:{mode}"


def test_tool_schema_comes_from_hints_and_docstring() -> None:
    schema = search.json_schema()
    assert search.name == "search"
    assert search.description == "Search the code base. Longer explanation that is not the summary."
    assert schema["required"] == ["query"]
    props = schema["properties"]
    assert props["query"]["type"] == "string"
    assert props["query"]["description"] == "what to look for, over two lines."
    assert props["limit"] == {
        "default": 5,
        "description": "the most hits.",
        "title": "Limit",
        "type": "integer",
    }
    assert props["mode"]["enum"] == ["fast", "deep"]


def test_tool_is_typed_as_a_tool_bare_and_with_options() -> None:
    # assert_type is checked by mypy (which runs over the tests): both decorator forms give a
    # Tool, so a function decorated with options is not an untyped value to strict callers.
    def echo(x: str) -> str:
        """Echo.

        Args:
            x: text.
        """
        return x

    bare = tool(echo)
    with_options = tool(name="echo_slow", timeout_s=1.5)(echo)
    assert_type(bare, Tool)
    assert_type(with_options, Tool)
    assert isinstance(bare, Tool) and isinstance(with_options, Tool)
    assert (bare.name, bare.timeout_s) == ("echo", None)
    assert (with_options.name, with_options.timeout_s) == ("echo_slow", 1.5)


def test_tool_refuses_bad_names_and_untyped_parameters() -> None:
    with pytest.raises(ValueError, match="must match"):
        Tool("has space", "x", {"type": "object"}, lambda: "")
    with pytest.raises(ValueError, match="no type hint"):

        @tool
        def untyped(x):
            """X."""


async def call(t: Tool, args: dict[str, Any], **extra: Any) -> ToolResultMessage:
    return await run_tool(ToolCall(id="c", name=t.name, arguments=args, **extra), {t.name: t})


async def test_valid_arguments_run_and_defaults_apply() -> None:
    result = await call(search, {"query": "q"})
    assert not result.is_error and result.content == [TextContent(text="q:5:fast")]
    assert (result.tool_call_id, result.tool_name) == ("c", "search")


async def test_invalid_arguments_become_an_error_result_naming_the_field() -> None:
    result = await call(search, {"query": "q", "limit": "many", "mode": "slow"})
    assert result.is_error
    text = text_of(result.content[0])
    assert "limit" in text and "mode" in text and "Invalid arguments for 'search'" in text


async def test_unknown_tools_raised_exceptions_timeouts_and_bad_json_become_errors() -> None:
    unknown = await run_tool(ToolCall(id="c", name="nope", arguments={}), {"search": search})
    assert (
        unknown.is_error
        and "does not exist" in text_of(unknown.content[0])
        and "search" in text_of(unknown.content[0])
    )

    @tool
    def broken(x: int) -> str:
        """Fail.

        Args:
            x: ignored.
        """
        raise RuntimeError("disk on fire")

    failed = await call(broken, {"x": 1})
    assert failed.is_error and "RuntimeError: disk on fire" in text_of(failed.content[0])

    @tool(timeout_s=0.05)
    async def slow() -> str:
        """Sleep."""
        await asyncio.sleep(10)
        return "late"

    timed = await call(slow, {})
    assert timed.is_error and "timed out after 0.05 s" in text_of(timed.content[0])

    raw = await call(search, {}, rawArguments='{"query": ')
    assert raw.is_error and "not a JSON object" in text_of(raw.content[0])


async def test_json_schema_and_pydantic_parameters_and_content_blocks() -> None:
    class Args(BaseModel):
        path: str

    def shot(path: str) -> list[Any]:
        return [TextContent(text=path), {"type": "image", "data": "AAAA", "mimeType": "image/png"}]

    t = Tool("shot", "Screenshot.", Args, shot)
    result = await call(t, {"path": "/x"})
    assert result.content == [
        TextContent(text="/x"),
        ImageContent(data="AAAA", mime_type="image/png"),
    ]
    schema_tool = Tool(
        "echo",
        "Echo.",
        {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
        lambda x: x,
    )
    assert text_of((await call(schema_tool, {"x": "hi"})).content[0]) == "hi"
    missing = await call(schema_tool, {})
    assert missing.is_error and "missing required argument(s): x" in text_of(missing.content[0])


@pytest.mark.parametrize("mode", ["parallel", "sequential"])
async def test_a_batch_runs_in_parallel_or_in_sequence_results_in_call_order(mode: str) -> None:
    log: list[str] = []

    @tool
    async def step(name: str, wait: float) -> str:
        """Log, wait, log.

        Args:
            name: the step.
            wait: seconds.
        """
        log.append(f"start {name}")
        await asyncio.sleep(wait)
        log.append(f"end {name}")
        return name

    calls = (("a", "step", {"name": "a", "wait": 0.2}), ("b", "step", {"name": "b", "wait": 0.0}))
    with FakeLLMServer(Say(tool_calls=calls), Say(text="ok")) as server:
        session = await MemoryRepo().create()
        h = harness(session, make_model("openai", server), tools=[step], tool_execution=mode)
        await h.prompt("go")
        messages = [e.message for e in await session.get_entries() if isinstance(e, MessageEntry)]
        results = [as_tool_result(m) for m in messages[2:4]]
        assert [r.tool_call_id for r in results] == ["a", "b"]
        if mode == "parallel":
            assert log == ["start a", "start b", "end b", "end a"]
        else:
            assert log == ["start a", "end a", "start b", "end b"]


async def test_a_sync_tool_does_not_block_the_event_loop() -> None:
    @tool
    def blocking(seconds: float) -> str:
        """Block.

        Args:
            seconds: how long.
        """
        time.sleep(seconds)
        return "done"

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    result = await call(blocking, {"seconds": 0.2})
    task.cancel()
    assert text_of(result.content[0]) == "done" and ticks >= 5
