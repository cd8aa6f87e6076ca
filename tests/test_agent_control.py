"""AgentHarness control surface: its own model writes summaries, setters append entries,
listeners cannot break a run, queues need a run."""

from __future__ import annotations

from typing import Any

import pytest

from _agent_support import (
    APIS,
    as_assistant,
    close_models,
    harness,
    make_model,
    message_of,
    text_of,
)
from llm_servers import FakeLLMServer, Say
from sessiontree.entries import (
    ActiveToolsChangeEntry,
    BranchSummaryEntry,
    CompactionEntry,
    MessageEntry,
    ModelChangeEntry,
    ThinkingLevelChangeEntry,
)
from sessiontree.errors import AgentHarnessError
from sessiontree.harness import EVENT_TYPES
from sessiontree.models import resolve_model
from sessiontree.repos import MemoryRepo
from sessiontree.summarizers.model import ModelSummarizer

__all__ = ["close_models"]


@pytest.mark.parametrize("api", APIS)
async def test_compaction_and_branch_summaries_use_the_harness_model(api: str) -> None:
    session = await MemoryRepo().create()
    with FakeLLMServer(
        Say(text="first answer"), Say(text="## Goal\nmodel-written summary")
    ) as server:
        h = harness(session, make_model(api, server))
        assert isinstance(h.summarizer, ModelSummarizer)
        await h.prompt("a question " + "word " * 50)
        first = (await session.get_branch())[0].id
        summary_id = await h.navigate_tree(first, summarize=True, label="start")
        entry = await session.get_entry(summary_id or "")
        assert isinstance(entry, BranchSummaryEntry) and entry.summary.startswith("## Goal")
        assert await session.get_label(first) == "start"
        summary_request = server.requests[1].body
        assert "<conversation>" in str(summary_request["messages"])
        assert "tools" not in summary_request

    session = await MemoryRepo().create()
    for i in range(4):
        await session.append_message({"role": "user", "content": f"q{i} " + "w " * 400})
        await session.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "a " + "w " * 400}],
                "stopReason": "stop",
            }
        )
    with FakeLLMServer(Say(text="## Goal\nsummary by the model")) as server:
        h = harness(session, make_model(api, server), settings={"keep_recent_tokens": 200})
        entry2 = await h.compact()
        assert isinstance(entry2, CompactionEntry) and entry2.summary.startswith(
            "## Goal\nsummary by the model"
        )


async def test_without_a_model_the_extractive_summariser_is_used() -> None:
    from sessiontree.harness import AgentHarness

    h = AgentHarness(await MemoryRepo().create(), context_window=100_000)
    assert h.summarizer is None  # compaction falls back to the offline extractive summariser
    with pytest.raises(AgentHarnessError) as info:
        await h.prompt("hi")
    assert info.value.code == "invalid_state"


async def test_setters_append_entries_and_apply_to_the_next_call() -> None:
    session = await MemoryRepo().create()
    with FakeLLMServer(Say(text="one"), Say(text="two")) as server:
        h = harness(session, make_model("openai", server))
        await h.prompt("hi")
        other = resolve_model("openai/other-model", base_url=f"{server.url}/v1", api_key="k")
        try:
            await h.set_model(other)
            await h.set_thinking_level("low")
            await h.set_active_tools([])
            await h.prompt("again")
        finally:
            await other.aclose()  # type: ignore[attr-defined]
        body = server.requests[1].body
        assert body["model"] == "other-model" and body["reasoning_effort"] == "low"
        assert "tools" not in body
    kinds = [type(e) for e in await session.get_branch()]
    assert (
        ModelChangeEntry in kinds
        and ThinkingLevelChangeEntry in kinds
        and ActiveToolsChangeEntry in kinds
    )
    with pytest.raises(AgentHarnessError) as info:
        await h.set_active_tools(["nope"])
    assert info.value.code == "invalid_argument"


async def test_a_listener_that_raises_does_not_break_the_run_and_events_are_known() -> None:
    seen: list[str] = []

    def bad(event: Any) -> None:
        raise RuntimeError("listener bug")

    async def good(event: Any) -> None:
        seen.append(event.type)

    with FakeLLMServer(Say(text="fine")) as server:
        h = harness(await MemoryRepo().create(), make_model("anthropic", server))
        h.subscribe(bad)
        unsubscribe = h.subscribe(good)
        reply = await h.prompt("hi")
        assert reply.stop_reason == "stop"
        assert seen[0] == "agent_start" and seen[-1] == "agent_end" and set(seen) <= EVENT_TYPES
        unsubscribe()
        count = len(seen)
        await h.prompt("again")
        assert len(seen) == count


async def test_steer_and_follow_up_need_a_running_prompt() -> None:
    with FakeLLMServer(Say(text="x")) as server:
        h = harness(await MemoryRepo().create(), make_model("openai", server))
        for queue in (h.steer, h.follow_up):
            with pytest.raises(AgentHarnessError) as info:
                queue("later")
            assert info.value.code == "invalid_state"
        assert await h.abort() == {"steering": [], "follow_up": []}
        await h.wait_for_idle()


def test_resolve_model_names_what_it_wants() -> None:
    for bad in ("gpt-4.1", "openai/", "mistral/large"):
        with pytest.raises(AgentHarnessError) as info:
            resolve_model(bad)
        assert (
            info.value.code == "invalid_argument" and "provider/model" in str(info.value)
        ) or "unknown provider" in str(info.value)


async def test_cancelling_the_prompt_task_keeps_the_partial_reply() -> None:
    import asyncio

    with FakeLLMServer(Say(text="partial words here", hang_after=3, chunk=4)) as server:
        session = await MemoryRepo().create()
        h = harness(session, make_model("openai", server))
        got = asyncio.Event()
        h.subscribe(lambda e: got.set() if e.type == "message_update" else None)
        task = asyncio.create_task(h.prompt("go"))
        await asyncio.wait_for(got.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        last = as_assistant(message_of((await session.get_branch())[-1]))
        assert last.stop_reason == "aborted" and text_of(last.content[0]).startswith("part")


@pytest.mark.parametrize("mode", ["parallel", "sequential"])
async def test_abort_during_a_tool_batch_gives_every_call_a_result(mode: str) -> None:
    import asyncio

    from _agent_support import check_all
    from sessiontree.harness import tool
    from sessiontree.messages import ToolResultMessage

    running = asyncio.Event()

    @tool
    async def wait(n: int) -> str:
        """Wait forever.

        Args:
            n: ignored.
        """
        running.set()
        await asyncio.sleep(600)
        return "never"

    calls = (("w1", "wait", {"n": 1}), ("w2", "wait", {"n": 2}))
    with FakeLLMServer(Say(tool_calls=calls), Say(text="after")) as server:
        session = await MemoryRepo().create()
        h = harness(session, make_model("anthropic", server), tools=[wait], tool_execution=mode)
        run = asyncio.create_task(h.prompt("go"))
        await asyncio.wait_for(running.wait(), 10)
        await h.abort()
        await run
        results = [
            e.message
            for e in await session.get_branch()
            if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage)
        ]
        texts = [text_of(r.content[0]) for r in results]
        assert [r.tool_call_id for r in results] == ["w1", "w2"] and all(
            r.is_error for r in results
        )
        if mode == "parallel":
            assert all("before this tool call finished" in t for t in texts)
        else:
            assert "finished" in texts[0] and "before this tool call started" in texts[1]
        assert (await h.prompt("next")).stop_reason == "stop"
        check_all("anthropic", server)
