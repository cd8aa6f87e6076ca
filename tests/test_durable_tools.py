"""A tool call is recorded as started before it runs; a process killed (SIGKILL) while tools
run leaves that record, and the next prompt answers every call left without a result: a
replay-safe tool runs again, any other call gets an ``interrupted`` (or, never started, a
``not run``) error result, so the pairing stays valid and the model is told.

The kill test runs the harness in a child process against a local OpenAI/Anthropic-wire
server that asks for two calls of a tool that sleeps; the child runs them one at a time and
is killed while the first runs.
"""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest

from _agent_support import (
    as_tool_result,
    check_all,
    close_models,
    harness,
    kill_once_flagged,
    make_model,
)
from backends import BACKENDS
from llm_servers import FakeLLMServer, Say
from sessiontree.drafts import TOOL_INTERRUPTED, TOOL_NOT_STARTED, ToolRun
from sessiontree.entries import MessageEntry
from sessiontree.harness import Tool, tool
from sessiontree.messages import AssistantMessage, ToolCall, message_text
from sessiontree.repos import MemoryRepo

__all__ = ["close_models"]

CHILD = textwrap.dedent(
    """
    import asyncio, os, sys, time
    from pathlib import Path
    from sessiontree import open_repo
    from sessiontree.harness import AgentHarness, tool
    from sessiontree.models import resolve_model

    url, session_id, model, base_url, replay, flag = sys.argv[1:7]

    @tool(replay=replay)
    def fetch(n: int) -> str:
        '''Fetch item n (slowly).

        Args:
            n: the item.
        '''
        Path(flag + ".tmp").write_text(str(n))
        os.replace(flag + ".tmp", flag)  # whole when it appears: the test kills at once
        time.sleep(60)
        return f"item {n}"

    async def main():
        repo = open_repo(url)
        session = await repo.open(session_id)
        h = AgentHarness(session, model=resolve_model(model, base_url=base_url, api_key="k"),
                         tools=[fetch], tool_execution="sequential")
        await h.prompt("fetch items 1 and 2")

    asyncio.run(main())
    """
)

CALLS = (("call_1", "fetch", {"n": 1}), ("call_2", "fetch", {"n": 2}))


@pytest.mark.parametrize("replay", ["never", "safe"])
@pytest.mark.parametrize("backend", ["jsonl", "sqlite", "postgres"])
async def test_a_run_killed_while_a_tool_runs_answers_its_calls_on_the_next_prompt(
    backend: str, replay: str, tmp_path: Path
) -> None:
    api = "openai" if replay == "safe" else "anthropic"
    flag = tmp_path / "started"
    async with BACKENDS[backend].open(tmp_path) as repo:
        session = await repo.create()
        with FakeLLMServer(Say(tool_calls=CALLS), Say(text="done")) as server:
            model = "openai/fake-model" if api == "openai" else "anthropic/fake-claude"
            base = f"{server.url}/v1" if api == "openai" else server.url
            args = [repo.url, session.id, model, base, replay, str(flag)]
            await asyncio.to_thread(kill_once_flagged, CHILD, args, flag)
            assert flag.read_text() == "1"

            # the dead run left the record: the first call started, the second did not
            reopened = await repo.open(session.id)
            record = await reopened.get_tool_run()
            assert record is not None and record.started == ("call_1",)
            assert await reopened.get_draft() is None
            stored = [e for e in await reopened.get_branch() if isinstance(e, MessageEntry)]
            assert [e.message.role for e in stored] == ["user", "assistant"]
            assert record.entry_id == stored[1].id

            ran: list[int] = []

            @tool(replay="safe" if replay == "safe" else "never")
            async def fetch(n: int) -> str:
                """Fetch item n.

                Args:
                    n: the item.
                """
                ran.append(n)
                return f"item {n}, fetched again"

            h = harness(reopened, make_model(api, server), tools=[fetch])
            reply = await h.prompt("go on")
            assert reply.stop_reason == "stop"

        assert await reopened.get_tool_run() is None
        branch = [e.message for e in await reopened.get_branch() if isinstance(e, MessageEntry)]
        assert [m.role for m in branch] == [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "user",
            "assistant",
        ]
        results = [as_tool_result(m) for m in branch[2:4]]
        assert [r.tool_call_id for r in results] == ["call_1", "call_2"]
        if replay == "safe":
            assert ran == [1, 2]
            assert [message_text(r) for r in results] == [
                "item 1, fetched again",
                "item 2, fetched again",
            ]
            assert not any(r.is_error for r in results)
        else:
            assert ran == []
            assert [message_text(r) for r in results] == [TOOL_INTERRUPTED, TOOL_NOT_STARTED]
            assert all(r.is_error for r in results)
        # the model is told what happened, in a request whose pairs are intact
        assert len(server.requests) == 2
        check_all(api, server)
        sent = str(server.requests[1].body["messages"])
        expected = "fetched again" if replay == "safe" else TOOL_INTERRUPTED
        assert expected in sent


async def test_calls_are_recorded_before_they_run_and_the_record_cleared_after() -> None:
    session = await MemoryRepo().create()
    seen: list[ToolRun | None] = []

    @tool
    async def look(n: int) -> str:
        """Look at n.

        Args:
            n: what to look at.
        """
        seen.append(await session.get_tool_run())
        return str(n)

    calls = (("c1", "look", {"n": 1}), ("c2", "look", {"n": 2}))
    with FakeLLMServer(Say(tool_calls=calls), Say(text="ok")) as server:
        h = harness(session, make_model("openai", server), tools=[look])
        await h.prompt("look")
    # a concurrent batch is recorded once, with every call, before any runs
    assert [r.started if r else None for r in seen] == [("c1", "c2"), ("c1", "c2")]
    entries = await session.get_entries()
    assert seen[0] is not None and seen[0].entry_id == entries[1].id
    assert await session.get_tool_run() is None
    assert [e.type for e in entries] == ["message"] * 5  # the record is no entry


async def test_a_record_without_a_matching_answer_is_only_cleared() -> None:
    session = await MemoryRepo().create()
    await session.put_tool_run(ToolRun("gone", ("c9",), 1))
    with FakeLLMServer(Say(text="hi")) as server:
        h = harness(session, make_model("openai", server))
        await h.prompt("hello")
    assert await session.get_tool_run() is None
    assert [e.type for e in await session.get_entries()] == ["message", "message"]


async def test_calls_left_without_a_record_count_as_interrupted() -> None:
    """An answer whose calls have no results and no record (a session from elsewhere, or a
    process that died before recording) gets interrupted results: they may have run."""
    session = await MemoryRepo().create()
    await session.append_message({"role": "user", "content": "x", "timestamp": 1})
    call = ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2})
    answer = AssistantMessage(content=[call], stop_reason="toolUse", timestamp=2)
    await session.append_message(answer)
    with FakeLLMServer(Say(text="ok")) as server:
        h = harness(session, make_model("openai", server))
        await h.prompt("again")
        check_all("openai", server)
    messages = [e.message for e in await session.get_entries() if isinstance(e, MessageEntry)]
    (result,) = [m for m in messages if m.role == "toolResult"]
    assert message_text(result) == TOOL_INTERRUPTED


def test_a_bad_replay_value_is_refused() -> None:
    def f(n: int) -> str:
        """F."""
        return ""

    bad: Any = "sometimes"
    with pytest.raises(ValueError, match="replay must be 'safe' or 'never'"):
        tool(replay=bad)(f)
    with pytest.raises(ValueError, match="replay must be 'safe' or 'never'"):
        Tool("f", "F.", {"type": "object"}, f, replay=bad)
