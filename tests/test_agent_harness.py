"""AgentHarness.prompt over real HTTP, through the official SDKs, on every backend.

Each scenario runs once per storage backend (the ``repo`` fixture) and per provider API
(OpenAI chat completions, Anthropic Messages), against a scripted local server; every
request the harness sends is checked against the provider's SDK request types.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from _agent_support import (
    APIS,
    add,
    as_assistant,
    as_tool_result,
    check_all,
    close_models,
    harness,
    make_model,
    overflow,
    text_of,
)
from llm_servers import Fail, FakeLLMServer, Say
from sessiontree import Session, SessionRepo
from sessiontree.entries import CompactionEntry, MessageEntry
from sessiontree.errors import AgentHarnessError
from sessiontree.harness import RetryPolicy, tool
from sessiontree.harness.agent import RETRIED_PREFIX
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ThinkingContent,
    ToolResultMessage,
    UserMessage,
)
from sessiontree.models import Prices

__all__ = ["close_models"]  # the autouse fixture that closes the models' HTTP clients


@pytest.fixture(params=APIS)
def api(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def messages_of(session: Session) -> list[AgentMessage]:
    return [e.message for e in await session.get_branch() if isinstance(e, MessageEntry)]


def roles(messages: list[AgentMessage]) -> list[str]:
    return [m.role for m in messages]


async def test_a_multi_step_tool_run_is_persisted_in_order(repo: SessionRepo, api: str) -> None:
    with FakeLLMServer(
        Say(
            text="adding",
            tool_calls=(("c1", "add", {"a": 1, "b": 2}), ("c2", "add", {"a": 3, "b": 4})),
        ),
        Say(tool_calls=(("c3", "add", {"a": 3, "b": 7}),), input_tokens=300, cached_tokens=50),
        Say(text="1+2=3, 3+4=7, 3+7=10", output_tokens=9),
    ) as server:
        session = await repo.create()
        prices = Prices(input=3.0, output=15.0, cache_read=0.3)
        h = harness(session, make_model(api, server, prices=prices))
        reply = await h.prompt("add things")
        assert reply.stop_reason == "stop"
        assert [text_of(b) for b in reply.content if b.type == "text"] == ["1+2=3, 3+4=7, 3+7=10"]
        stored = await messages_of(await repo.open(session.id))
        assert roles(stored) == [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant",
        ]
        assert [r.tool_call_id for r in stored if isinstance(r, ToolResultMessage)] == [
            "c1",
            "c2",
            "c3",
        ]
        assert [text_of(r.content[0]) for r in stored if isinstance(r, ToolResultMessage)] == [
            "3",
            "7",
            "10",
        ]
        second = stored[4]
        assert isinstance(second, AssistantMessage) and second.usage is not None
        assert (second.usage.input, second.usage.cache_read) == (300, 50)
        assert second.usage.cost is not None
        assert second.usage.cost.input == pytest.approx(300 * 3.0 / 1e6)
        assert second.usage.cost.cache_read == pytest.approx(50 * 0.3 / 1e6)
        assert all(m.provider == api for m in stored if isinstance(m, AssistantMessage))
        assert len(server.requests) == 3
        check_all(api, server)
        # the third request carries the whole run, results right after their calls
        body = server.requests[2].body
        assert "add" in str(body["tools"])


async def test_overflow_compacts_and_the_retry_succeeds(repo: SessionRepo, api: str) -> None:
    session = await repo.create()
    for i in range(12):
        await session.append_message(UserMessage(content=f"question {i} " + "word " * 300))
        await session.append_message(
            AssistantMessage(
                content=[{"type": "text", "text": f"answer {i} " + "word " * 300}],
                stop_reason="stop",
            )
        )
    with FakeLLMServer(
        overflow(api),
        Say(text="## Goal\nanswer questions\n## Progress\n- done: 12 answers"),
        Say(text="the answer after compaction"),
    ) as server:
        events: list[str] = []
        h = harness(
            session,
            make_model(api, server),
            settings={"keep_recent_tokens": 1000, "reserve_tokens": 1000},
        )
        h.subscribe(lambda e: events.append(e.type))
        reply = await h.prompt("one more")
        assert reply.stop_reason == "stop"
        assert "compaction_start" in events and "compaction_end" in events
        compactions = [e for e in await session.get_branch() if isinstance(e, CompactionEntry)]
        assert len(compactions) == 1 and compactions[0].summary.startswith("## Goal")
        assert len(server.requests) == 3
        # the summary went through the same provider; the retry is shorter than the first try
        assert len(str(server.requests[2].body)) < len(str(server.requests[0].body))
        check_all(api, server)


async def test_a_second_overflow_is_persisted_as_an_error(repo: SessionRepo, api: str) -> None:
    session = await repo.create()
    for i in range(6):
        await session.append_message(UserMessage(content=f"q{i} " + "word " * 300))
        await session.append_message(
            AssistantMessage(
                content=[{"type": "text", "text": "a " + "word " * 300}], stop_reason="stop"
            )
        )
    with FakeLLMServer(overflow(api), Say(text="## Goal\nsummary"), overflow(api)) as server:
        h = harness(
            session,
            make_model(api, server),
            settings={"keep_recent_tokens": 500, "reserve_tokens": 500},
        )
        reply = await h.prompt("again")
        assert reply.stop_reason == "error" and reply.error_message
        assert "context" in reply.error_message.lower() or "too long" in reply.error_message
        stored = await messages_of(session)
        assert stored[-1] == reply


async def test_retries_exhausted_persist_an_error_and_the_next_prompt_works(
    repo: SessionRepo, api: str
) -> None:
    with FakeLLMServer(
        Fail(500, "upstream broke"),
        Fail(503, "still broken"),
        Fail(500, "broken again"),
        Say(text="back"),
    ) as server:
        session = await repo.create()
        retries: list[dict[str, Any]] = []
        h = harness(session, make_model(api, server))
        h.subscribe(lambda e: retries.append(e.data) if e.type == "retry_scheduled" else None)
        reply = await h.prompt("hello")
        assert reply.stop_reason == "error" and "broken again" in (reply.error_message or "")
        assert [r["attempt"] for r in retries] == [1, 2]
        assert roles(await messages_of(session)) == ["user", "assistant"]
        again = await h.prompt("hello again")
        assert again.stop_reason == "stop"
        assert roles(await messages_of(session)) == ["user", "assistant", "user", "assistant"]
        # the failed reply is not sent back: the last request holds the two user messages only
        last = server.requests[-1].body["messages"]
        assert [m["role"] for m in last] == (["user", "user"] if api == "openai" else ["user"])
        check_all(api, server)


async def test_429_retry_after_is_honoured(repo: SessionRepo, api: str) -> None:
    with FakeLLMServer(
        Fail(429, "slow down", headers={"retry-after": "0.05"}), Say(text="ok")
    ) as server:
        session = await repo.create()
        delays: list[float] = []
        h = harness(
            session, make_model(api, server), retry=RetryPolicy(max_attempts=2, base_delay_s=5)
        )
        h.subscribe(
            lambda e: delays.append(e.data["delay_s"]) if e.type == "retry_scheduled" else None
        )
        reply = await h.prompt("hi")
        assert reply.stop_reason == "stop" and delays == [0.05]


async def test_a_stream_cut_midway_is_retried(repo: SessionRepo, api: str) -> None:
    with FakeLLMServer(
        Say(text="this answer gets cut off", cut_after=3, chunk=3), Say(text="whole")
    ) as server:
        session = await repo.create()
        h = harness(session, make_model(api, server))
        reply = await h.prompt("hi")
        assert [text_of(b) for b in reply.content] == ["whole"]
        stored = await messages_of(session)
        if api == "anthropic":
            # Anthropic reported the cut attempt's input tokens when it started: what it
            # cost is kept as an `error` record before the answer (docs/harness.md)
            assert roles(stored) == ["user", "assistant", "assistant"]
            record = stored[1]
            assert isinstance(record, AssistantMessage) and record.stop_reason == "error"
            assert record.error_message and record.error_message.startswith(RETRIED_PREFIX)
        else:  # OpenAI chat completions report usage in the last chunk only: nothing to keep
            assert roles(stored) == ["user", "assistant"]
        assert len(server.requests) == 2


async def test_auth_errors_raise(repo: SessionRepo, api: str) -> None:
    with FakeLLMServer(Fail(401, "invalid x-api-key")) as server:
        session = await repo.create()
        h = harness(session, make_model(api, server))
        with pytest.raises(AgentHarnessError) as info:
            await h.prompt("hi")
        assert info.value.code == "auth" and "invalid x-api-key" in str(info.value)
        assert len(server.requests) == 1 and not h.busy


async def test_abort_during_streaming_persists_the_partial_reply(
    repo: SessionRepo, api: str
) -> None:
    with FakeLLMServer(
        Say(text="the partial answer", hang_after=4, chunk=4), Say(text="fine")
    ) as server:
        session = await repo.create()
        h = harness(session, make_model(api, server))
        seen = asyncio.Event()
        deltas: list[str] = []

        def on(event: Any) -> None:
            if event.type == "message_update" and getattr(event.delta, "text", None):
                deltas.append(event.delta.text)
                if len(deltas) >= 2:
                    seen.set()

        h.subscribe(on)
        run = asyncio.create_task(h.prompt("tell me"))
        await asyncio.wait_for(seen.wait(), 10)
        cleared = await h.abort()
        reply = await run
        assert cleared == {"steering": [], "follow_up": []}
        assert reply.stop_reason == "aborted"
        assert text_of(reply.content[0]) == "".join(deltas) and text_of(
            reply.content[0]
        ).startswith("the ")
        assert (await messages_of(session))[-1] == reply
        assert not h.busy
        after = await h.prompt("go on")
        assert after.stop_reason == "stop"
        check_all(api, server)


async def test_steering_during_a_tool_batch_is_delivered_before_the_next_call(
    repo: SessionRepo, api: str
) -> None:
    gate = asyncio.Event()
    holder: dict[str, Any] = {}

    @tool
    async def slow(n: int) -> str:
        """Wait, then echo n.

        Args:
            n: a number.
        """
        holder["h"].steer("also check the tests")
        holder["h"].follow_up("and summarise at the end")
        gate.set()
        return f"slow {n}"

    with FakeLLMServer(
        Say(tool_calls=(("s1", "slow", {"n": 1}), ("a1", "add", {"a": 1, "b": 1}))),
        Say(text="checked the tests"),
        Say(text="summary"),
    ) as server:
        session = await repo.create()
        h = harness(session, make_model(api, server), tools=[slow, add])
        holder["h"] = h
        reply = await h.prompt("work")
        assert gate.is_set() and text_of(reply.content[0]) == "summary"
        stored = await messages_of(session)
        assert roles(stored) == [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "user",
            "assistant",
            "user",
            "assistant",
        ]
        steered, followed = stored[4], stored[6]
        assert isinstance(steered, UserMessage) and steered.content == "also check the tests"
        assert isinstance(followed, UserMessage) and followed.content == "and summarise at the end"
        second = server.requests[1].body["messages"]
        last_text = str(second[-1]["content"])
        assert "also check the tests" in last_text
        check_all(api, server)


async def test_a_second_prompt_while_running_is_busy(repo: SessionRepo, api: str) -> None:
    with FakeLLMServer(Say(text="slow answer", hang_after=2)) as server:
        session = await repo.create()
        h = harness(session, make_model(api, server))
        run = asyncio.create_task(h.prompt("first"))
        await asyncio.sleep(0)  # the first prompt starts its run
        assert h.busy
        with pytest.raises(AgentHarnessError) as info:
            await h.prompt("second")
        assert info.value.code == "busy"
        await h.abort()
        assert (await run).stop_reason == "aborted"
        assert roles(await messages_of(session)) == ["user", "assistant"]


async def test_thinking_is_streamed_stored_and_sent_back(repo: SessionRepo, api: str) -> None:
    with FakeLLMServer(
        Say(thinking="let me think", text="thought", tool_calls=(("t1", "add", {"a": 2, "b": 2}),)),
        Say(text="4"),
    ) as server:
        session = await repo.create()
        h = harness(session, make_model(api, server), thinking_level="high")
        await h.prompt("think")
        first = as_assistant((await messages_of(session))[1])
        thinking = [b for b in first.content if isinstance(b, ThinkingContent)]
        assert thinking and thinking[0].thinking == "let me think"
        body = server.requests[0].body
        if api == "anthropic":
            assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384}
            assert body["max_tokens"] > 16384
            assert thinking[0].thinking_signature == "sig-1"
            sent = server.requests[1].body["messages"][1]["content"][0]
            assert sent == {"type": "thinking", "thinking": "let me think", "signature": "sig-1"}
        else:
            assert body["reasoning_effort"] == "high"
        check_all(api, server)


async def test_only_active_tools_are_offered(repo: SessionRepo, api: str) -> None:
    @tool
    def other(x: str) -> str:
        """Echo.

        Args:
            x: text.
        """
        return x

    with FakeLLMServer(Say(tool_calls=(("o1", "other", {"x": "hi"}),)), Say(text="done")) as server:
        session = await repo.create()
        h = harness(session, make_model(api, server), tools=[add, other])
        await h.set_active_tools(["add"])
        await h.prompt("go")
        offered = server.requests[0].body["tools"]
        assert "other" not in str(offered) and "add" in str(offered)
        result = as_tool_result((await messages_of(session))[2])
        assert result.is_error and "does not exist" in text_of(result.content[0])
        reopened = harness(await repo.open(session.id), make_model(api, server), tools=[add, other])
        assert [t.name for t in (await reopened._request()).tools] == ["add"]
