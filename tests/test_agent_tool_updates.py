"""Tool progress: ``on_update`` calls become ``tool_execution_update`` events, over real HTTP."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from _agent_support import APIS, as_tool_result, close_models, harness, make_model, text_of
from llm_servers import FakeLLMServer, Say
from sessiontree import SessionRepo
from sessiontree.entries import MessageEntry
from sessiontree.harness import AgentEvent, Tool, UpdateCallback, tool

__all__ = ["close_models"]  # the autouse fixture that closes the models' HTTP clients


@pytest.fixture(params=APIS)
def api(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@tool
async def crawl(pages: int, on_update: UpdateCallback) -> str:
    """Crawl some pages, reporting each.

    Args:
        pages: how many.
    """
    for page in range(1, pages + 1):
        await asyncio.sleep(0)
        on_update(f"page {page} of {pages}")
    return f"crawled {pages}"


@tool
def count_sync(n: int, on_update: UpdateCallback) -> str:
    """Count in a worker thread, reporting each step.

    Args:
        n: up to what.
    """
    for i in range(1, n + 1):
        time.sleep(0.01)
        on_update([{"type": "text", "text": f"at {i}"}])
    return f"counted {n}"


def tool_events(events: list[AgentEvent]) -> list[tuple[str, str, str]]:
    """``(type, call id, text)`` of every ``tool_execution_*`` event."""
    out = []
    for e in events:
        if e.type.startswith("tool_execution_"):
            assert e.tool_call is not None
            text = text_of(e.result.content[0]) if e.result and e.result.content else ""
            out.append((e.type, e.tool_call.id, text))
    return out


def test_on_update_is_not_part_of_the_schema() -> None:
    assert crawl.json_schema()["properties"].keys() == {"pages"}
    assert crawl.json_schema()["required"] == ["pages"]
    assert count_sync.json_schema()["properties"].keys() == {"n"}


async def test_two_updates_are_two_events_in_order_between_start_and_end(
    repo: SessionRepo, api: str
) -> None:
    with FakeLLMServer(
        Say(tool_calls=(("u1", "crawl", {"pages": 2}),)), Say(text="done")
    ) as server:
        session = await repo.create()
        h = harness(session, make_model(api, server), tools=[crawl])
        events: list[AgentEvent] = []
        h.subscribe(events.append)
        await h.prompt("crawl")
        assert tool_events(events) == [
            ("tool_execution_start", "u1", ""),
            ("tool_execution_update", "u1", "page 1 of 2"),
            ("tool_execution_update", "u1", "page 2 of 2"),
            ("tool_execution_end", "u1", "crawled 2"),
        ]
        update = next(e for e in events if e.type == "tool_execution_update")
        assert update.result is not None and update.result.tool_name == "crawl"
        assert update.result.tool_call_id == "u1"
        # updates are events only: the session stores the final result alone
        stored = [e.message for e in await session.get_branch() if isinstance(e, MessageEntry)]
        results = [as_tool_result(m) for m in stored if m.role == "toolResult"]
        assert [text_of(r.content[0]) for r in results] == ["crawled 2"]


async def test_a_sync_tool_reports_from_its_thread_and_parallel_calls_keep_their_order(
    repo: SessionRepo,
) -> None:
    with FakeLLMServer(
        Say(tool_calls=(("s1", "count_sync", {"n": 3}), ("c1", "crawl", {"pages": 2}))),
        Say(text="done"),
    ) as server:
        session = await repo.create()
        h = harness(session, make_model("openai", server), tools=[count_sync, crawl])
        events: list[AgentEvent] = []
        h.subscribe(events.append)
        await h.prompt("both")
        got = tool_events(events)
        for call_id, texts, final in (
            ("s1", ["at 1", "at 2", "at 3"], "counted 3"),
            ("c1", ["page 1 of 2", "page 2 of 2"], "crawled 2"),
        ):
            mine = [(t, text) for t, i, text in got if i == call_id]
            assert mine == [
                ("tool_execution_start", ""),
                *(("tool_execution_update", t) for t in texts),
                ("tool_execution_end", final),
            ]


async def test_a_listener_that_raises_on_an_update_does_not_break_the_run(
    repo: SessionRepo, api: str
) -> None:
    def bad(event: AgentEvent) -> None:
        if event.type == "tool_execution_update":
            raise RuntimeError("listener broke")

    with FakeLLMServer(
        Say(tool_calls=(("u1", "crawl", {"pages": 2}),)), Say(text="all good")
    ) as server:
        session = await repo.create()
        h = harness(session, make_model(api, server), tools=[crawl])
        seen: list[AgentEvent] = []
        h.subscribe(bad)
        h.subscribe(seen.append)
        reply = await h.prompt("crawl")
        assert text_of(reply.content[0]) == "all good"
        assert [t for t, _, _ in tool_events(seen)].count("tool_execution_update") == 2
        assert len(server.requests) == 2
        sent = str(server.requests[1].body["messages"])
        assert "crawled 2" in sent and "listener broke" not in sent


async def test_a_plain_tool_and_a_schema_tool_ignore_a_model_supplied_on_update(
    repo: SessionRepo,
) -> None:
    received: dict[str, Any] = {}

    def echo(**arguments: Any) -> str:
        received.update(arguments)
        return "ok"

    plain = Tool("echo", "Echo.", {"type": "object", "properties": {}}, echo)
    with FakeLLMServer(
        Say(tool_calls=(("e1", "echo", {"x": 1, "on_update": "from the model"}),)),
        Say(text="done"),
    ) as server:
        session = await repo.create()
        h = harness(session, make_model("openai", server), tools=[plain])
        events: list[AgentEvent] = []
        h.subscribe(events.append)
        await h.prompt("echo")
        assert received == {"x": 1}
        assert not any(e.type == "tool_execution_update" for e in events)
