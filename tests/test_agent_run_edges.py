"""AgentHarness runs at their edges: parallel calls sharing one id, an abort or a steer
while a listener holds the run, threshold compactions announced to listeners.

Every model is the official SDK over real HTTP to a scripted local server
(``tests/llm_servers.py``); every request the harness sends is checked against the
provider's request types and pairing rules (``tests/wire_check.py``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from _agent_support import (
    APIS,
    as_assistant,
    as_tool_result,
    check_all,
    close_models,
    harness,
    make_model,
    text_of,
)
from llm_servers import FakeLLMServer, ReceivedRequest, Say
from sessiontree import Session
from sessiontree.context import find_tool_pair_problems
from sessiontree.entries import MessageEntry
from sessiontree.errors import AgentHarnessError
from sessiontree.harness import AgentEvent, RetryPolicy
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from sessiontree.repos import MemoryRepo
from sessiontree.wire import to_anthropic, to_openai_chat
from wire_check import check_anthropic_messages, check_openai_messages

__all__ = ["close_models"]  # the autouse fixture that closes the models' HTTP clients


async def stored_messages(session: Session) -> list[AgentMessage]:
    return [e.message for e in await session.get_branch() if isinstance(e, MessageEntry)]


def wire_pairs(api: str, request: ReceivedRequest) -> list[tuple[dict[str, Any], str]]:
    """``(arguments of a call, text of the result sent with its id)`` for every tool call of
    the request, in request order."""
    messages = request.body["messages"]
    calls: list[tuple[str, dict[str, Any]]] = []
    results: dict[str, str] = {}
    for m in messages:
        if api == "openai":
            if m["role"] == "assistant":
                calls += [
                    (c["id"], json.loads(c["function"]["arguments"]))
                    for c in m.get("tool_calls") or ()
                ]
            elif m["role"] == "tool":
                results[m["tool_call_id"]] = m["content"]
        else:
            for b in m["content"] if isinstance(m["content"], list) else ():
                if b["type"] == "tool_use":
                    calls.append((b["id"], b["input"]))
                elif b["type"] == "tool_result":
                    results[b["tool_use_id"]] = "".join(x["text"] for x in b["content"])
    assert len({cid for cid, _ in calls}) == len(calls), calls
    return [(args, results[cid]) for cid, args in calls]


# ---------------------------------------------------------------- parallel calls, one id


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("mode", ["parallel", "sequential"])
async def test_parallel_calls_sharing_an_id_each_keep_their_own_result(api: str, mode: str) -> None:
    calls = (("dup", "add", {"a": 1, "b": 2}), ("dup", "add", {"a": 10, "b": 20}))
    with FakeLLMServer(Say(tool_calls=calls), Say(text="3 and 30")) as server:
        session = await MemoryRepo().create()
        h = harness(session, make_model(api, server), tool_execution=mode)
        reply = await h.prompt("add twice")
        assert reply.stop_reason == "stop"
        stored = await stored_messages(session)
        results = [as_tool_result(m) for m in stored if isinstance(m, ToolResultMessage)]
        # each stored result holds its own call's output, in call order
        assert [text_of(r.content[0]) for r in results] == ["3", "30"]
        assert [r.tool_call_id for r in results] == ["dup", "dup"]
        ctx = await session.build_context()
        assert find_tool_pair_problems(ctx.messages) == []
        # the provider got two distinct ids, each result under its own call's id
        assert len(server.requests) == 2
        check_all(api, server)
        assert wire_pairs(api, server.requests[1]) == [
            ({"a": 1, "b": 2}, "3"),
            ({"a": 10, "b": 20}, "30"),
        ]
        # and the next turn still sends a valid request
        with FakeLLMServer(Say(text="ok")) as again:
            await h.set_model(make_model(api, again))
            assert (await h.prompt("thanks")).stop_reason == "stop"
            check_all(api, again)
            assert len(wire_pairs(api, again.requests[0])) == 2


def _call(cid: str, n: int) -> ToolCall:
    return ToolCall(id=cid, name="f", arguments={"n": n})


def _result(cid: str, text: str) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=cid, tool_name="f", content=[TextContent(text=text)])


def test_converters_send_every_call_id_once_and_pair_results_by_position() -> None:
    messages: list[AgentMessage] = [
        UserMessage(content="go"),
        # two calls share an id; two more map to one Anthropic id ("a.b", "a:b" -> "a_b")
        AssistantMessage(
            content=[_call("x", 1), _call("x", 2), _call("a.b", 3), _call("a:b", 4)],
            stop_reason="toolUse",
        ),
        _result("x", "one"),
        _result("x", "two"),
        _result("a.b", "three"),
        _result("a:b", "four"),
        # a later turn reuses "x", and the second of its two "x" calls lost its result
        UserMessage(content="again"),
        AssistantMessage(content=[_call("x", 5), _call("x", 6)], stop_reason="toolUse"),
        _result("x", "five"),
        UserMessage(content="and?"),
    ]
    lost = "lost"
    expected = [
        ({"n": 1}, "one"),
        ({"n": 2}, "two"),
        ({"n": 3}, "three"),
        ({"n": 4}, "four"),
        ({"n": 5}, "five"),
        ({"n": 6}, lost),
    ]

    def check(api: str, body: dict[str, Any]) -> None:
        pairs = wire_pairs(api, ReceivedRequest("POST", "/", {}, body))
        assert [args for args, _ in pairs] == [args for args, _ in expected]
        for (_, got), (_, want) in zip(pairs, expected, strict=True):
            assert (lost in got) if want == lost else got == want

    openai = to_openai_chat(messages)
    check_openai_messages(openai)
    check("openai", {"messages": openai})
    system, anthropic = to_anthropic(messages)
    check_anthropic_messages(system, anthropic)
    check("anthropic", {"messages": anthropic})
    # ids stay what they were where they are already unique, so cached prefixes stay equal
    assert openai[1]["tool_calls"][0]["id"] == "x" and anthropic[1]["content"][0]["id"] == "x"
    assert to_openai_chat(messages[:7]) == openai[: len(to_openai_chat(messages[:7]))]


# ---------------------------------------------------------------- abort while a listener waits


def _is_target(event: AgentEvent, where: str) -> bool:
    if where == "prompt_message_start":
        return event.type == "message_start" and isinstance(event.message, UserMessage)
    return event.type == where


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("where", ["agent_start", "prompt_message_start", "agent_end"])
async def test_abort_while_a_listener_waits_stores_the_prompt_first_and_never_raises(
    api: str, where: str
) -> None:
    with FakeLLMServer(Say(text="hello"), Say(text="again")) as server:
        session = await MemoryRepo().create()
        h = harness(session, make_model(api, server))
        waiting = asyncio.Event()
        ended: list[AgentMessage] = []
        seen: list[str] = []

        async def slow(event: AgentEvent) -> None:
            seen.append(event.type)
            if event.type == "message_end" and event.message is not None:
                ended.append(event.message)
            if _is_target(event, where) and not waiting.is_set():
                waiting.set()
                await asyncio.sleep(600)  # a listener awaiting something that takes long

        unsubscribe = h.subscribe(slow)
        run = asyncio.create_task(h.prompt("go"))
        await asyncio.wait_for(waiting.wait(), 10)
        await asyncio.wait_for(h.abort(), 10)
        reply = await asyncio.wait_for(run, 10)  # returns; no CancelledError
        stored = await stored_messages(session)
        assert isinstance(stored[0], UserMessage) and stored[0].content == "go"
        assert stored[-1] == reply
        if where == "agent_end":
            # nothing was left to abort: the finished answer stays the last message
            assert reply.stop_reason == "stop" and len(stored) == 2
        else:
            assert len(server.requests) == 0  # the model was never called
            assert reply.stop_reason == "aborted" and reply.content == [] and len(stored) == 2
        assert ended == stored  # every stored message was announced as ended, once
        assert seen[-1] == "agent_end" and seen.count("agent_end") == 1
        unsubscribe()
        # the session goes on as usual
        assert (await h.prompt("next")).stop_reason == "stop"
        check_all(api, server)


# ---------------------------------------------------------------- steer while a run ends


async def test_steer_while_the_run_finishes_is_refused_not_carried_into_the_next_run() -> None:
    with FakeLLMServer(Say(text="first"), Say(text="second"), Say(text="third")) as server:
        session = await MemoryRepo().create()
        h = harness(session, make_model("openai", server))
        refused: list[str] = []
        turn_ends = 0

        def listener(event: AgentEvent) -> None:
            nonlocal turn_ends
            if event.type == "turn_end":
                turn_ends += 1
                if turn_ends == 1:
                    h.steer("more")  # the run is still deciding: delivered in this run
            if event.type == "agent_end":
                for queue in (h.steer, h.follow_up):
                    try:
                        queue("late")
                    except AgentHarnessError as exc:
                        refused.append(exc.code)

        unsubscribe = h.subscribe(listener)
        assert text_of((await h.prompt("hi")).content[0]) == "second"
        unsubscribe()
        assert refused == ["invalid_state", "invalid_state"]
        assert text_of((await h.prompt("next")).content[0]) == "third"
        texts = [
            m.content if isinstance(m, UserMessage) else text_of(as_assistant(m).content[0])
            for m in await stored_messages(session)
        ]
        assert texts == ["hi", "first", "more", "second", "next", "third"]
        assert len(server.requests) == 3 and "late" not in str(server.requests[2].body)


async def test_a_steer_queued_before_a_failed_answer_is_stored_in_that_run() -> None:
    with FakeLLMServer(Say(text="partial words", cut_after=3), Say(text="answer")) as server:
        session = await MemoryRepo().create()
        h = harness(
            session,
            make_model("anthropic", server),
            retry=RetryPolicy(max_attempts=1, base_delay_s=0, max_delay_s=0),
        )

        def listener(event: AgentEvent) -> None:
            if event.type == "message_update" and not h._steering:
                h.steer("meanwhile")

        unsubscribe = h.subscribe(listener)
        failed = await h.prompt("hi")
        unsubscribe()
        assert failed.stop_reason == "error"
        assert (await h.prompt("next")).stop_reason == "stop"
        stored = await stored_messages(session)
        assert [m.role for m in stored] == ["user", "assistant", "user", "user", "assistant"]
        assert [m.content for m in stored if isinstance(m, UserMessage)] == [
            "hi",
            "meanwhile",
            "next",
        ]
        assert len(server.requests) == 2
        check_all("anthropic", server)


# ---------------------------------------------------------------- a hung sync tool

HUNG_TOOL_PROGRAM = """
import asyncio, sys, threading
sys.path.insert(0, sys.argv[1])
from llm_servers import FakeLLMServer, Say
from sessiontree.repos import MemoryRepo
from sessiontree.harness import AgentHarness, tool
from sessiontree.messages import ToolResultMessage
from sessiontree.models.openai_chat import OpenAIChatModel

@tool(timeout_s=1)
def hang(n: int) -> str:
    '''Never return.

    Args:
        n: ignored.
    '''
    threading.Event().wait()
    return "never"

async def main() -> None:
    with FakeLLMServer(Say(tool_calls=(("h1", "hang", {"n": 1}),)), Say(text="gave up")) as server:
        model = OpenAIChatModel("m", base_url=server.url + "/v1", api_key="k")
        session = await MemoryRepo().create()
        reply = await AgentHarness(session, model=model, tools=[hang]).prompt("go")
        await model.aclose()
        for entry in await session.get_branch():
            if isinstance(entry.message, ToolResultMessage):
                print("RESULT", entry.message.content[0].text, flush=True)
        print("REPLY", reply.content[0].text, flush=True)

asyncio.run(main())
print("RUN RETURNED", flush=True)
"""


def test_a_timed_out_sync_tool_does_not_hold_asyncio_run_or_the_process() -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    tests = Path(__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tests.parent / "src"), str(tests)]))
    # The tool never returns; the program must end all the same (generous bound for a
    # loaded machine: the defect is a process that never ends).
    done = subprocess.run(
        [sys.executable, "-c", HUNG_TOOL_PROGRAM, str(tests)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == [
        "RESULT Tool 'hang' timed out after 1 s.",
        "REPLY gave up",
        "RUN RETURNED",
    ], done.stdout + done.stderr


# ---------------------------------------------------------------- threshold compaction events


async def long_session() -> Session:
    """A session whose context (about 9,000 tokens) does not fit a 6,000-token window."""
    session = await MemoryRepo().create()
    for i in range(12):
        await session.append_message(UserMessage(content=f"question {i} " + "word " * 300))
        await session.append_message(
            AssistantMessage(
                content=[TextContent(text=f"answer {i} " + "word " * 300)], stop_reason="stop"
            )
        )
    return session


@pytest.mark.parametrize("api", APIS)
async def test_a_threshold_compaction_is_announced_to_listeners(api: str) -> None:
    from sessiontree.entries import CompactionEntry

    session = await long_session()

    def answer(request: ReceivedRequest) -> Say:
        # a summariser's request offers no tools
        if "tools" in request.body:
            return Say(text="the answer")
        return Say(text="## Goal\nanswer questions")

    with FakeLLMServer(answer) as server:
        events: list[AgentEvent] = []
        h = harness(
            session,
            make_model(api, server),
            context_window=6000,
            settings={"keep_recent_tokens": 1000, "reserve_tokens": 1000},
        )
        h.subscribe(events.append)
        assert (await h.prompt("one more")).stop_reason == "stop"
        compactions = [e for e in await session.get_branch() if isinstance(e, CompactionEntry)]
        assert len(compactions) == 1 and "tools" in server.requests[-1].body
        kinds = [e.type for e in events]
        marks = [e for e in events if e.type.startswith("compaction_")]
        assert [(e.type, e.data) for e in marks] == [
            ("compaction_start", {"reason": "threshold"}),
            ("compaction_end", {"reason": "threshold", "entry_id": compactions[0].id}),
        ]
        # within the turn, before the model's answer
        assert (
            kinds.index("turn_start")
            < kinds.index("compaction_start")
            < kinds.index("compaction_end")
            < kinds.index("message_update")
        )
        check_all(api, server)


async def test_a_failed_threshold_compaction_ends_with_its_error() -> None:
    from sessiontree.testing.fakes import FailingSummarizer

    session = await long_session()
    with FakeLLMServer(Say(text="never asked")) as server:
        events: list[AgentEvent] = []
        h = harness(
            session,
            make_model("openai", server),
            context_window=6000,
            settings={"keep_recent_tokens": 1000, "reserve_tokens": 1000},
            summarizer=FailingSummarizer(),
        )
        h.subscribe(events.append)
        reply = await h.prompt("one more")
        assert reply.stop_reason == "error" and "compaction failed" in (reply.error_message or "")
        marks = [(e.type, e.data) for e in events if e.type.startswith("compaction_")]
        assert [kind for kind, _ in marks] == ["compaction_start", "compaction_end"]
        assert marks[1][1]["reason"] == "threshold" and "entry_id" not in marks[1][1]
        assert "compaction failed" in marks[1][1]["error"]
        assert server.requests == []
