"""What a model call that fails or is aborted after the provider reported usage cost is
recorded on the stored ``error``/``aborted`` answer, and ``sessiontree usage`` counts it.

Anthropic reports the input tokens when the stream starts (``message_start``), so a stream
that fails or is aborted afterwards has known usage; the local server sends it over real
HTTP through the official SDK.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from click.testing import CliRunner

from _agent_support import FAST_RETRY, as_assistant, close_models, harness, make_model, message_of
from llm_servers import FakeLLMServer, Say
from sessiontree import open_repo
from sessiontree.cli import cli
from sessiontree.harness import RetryPolicy
from sessiontree.harness.agent import RETRIED_PREFIX
from sessiontree.repos import MemoryRepo
from sessiontree.usage import collect_usage

__all__ = ["close_models"]


async def test_an_aborted_stream_records_the_usage_reported_so_far() -> None:
    say = Say(text="a long answer " * 20, hang_after=4, chunk=4, input_tokens=321)
    with FakeLLMServer(say) as server:
        session = await MemoryRepo().create()
        h = harness(session, make_model("anthropic", server))
        got = asyncio.Event()
        h.subscribe(lambda e: got.set() if e.type == "message_update" else None)
        task = asyncio.create_task(h.prompt("go"))
        await asyncio.wait_for(got.wait(), 10)
        await h.abort()
        reply = await task
    assert reply.stop_reason == "aborted"
    stored = as_assistant(message_of((await session.get_branch())[-1]))
    assert stored.usage is not None
    assert (stored.usage.input, stored.usage.output) == (321, 1)


async def test_a_call_failing_after_usage_records_every_failed_attempts_usage() -> None:
    failing = Say(text="starting", error=("overloaded_error", "busy"), input_tokens=250)
    attempts = FAST_RETRY.max_attempts
    with FakeLLMServer(*[failing] * attempts) as server:
        repo = MemoryRepo()
        session = await repo.create()
        h = harness(session, make_model("anthropic", server))
        reply = await h.prompt("go")
        assert len(server.requests) == attempts
    assert reply.stop_reason == "error"
    last = (await session.get_branch())[-1]
    stored = as_assistant(message_of(last))
    assert stored.usage is not None and stored.usage.input == 250 * attempts
    (call,) = [c for c in await collect_usage(repo) if c.entry_id == last.id]
    assert call.usage.input == 250 * attempts


async def test_the_usage_command_counts_a_failed_call(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    failing = Say(text="starting", error=("overloaded_error", "busy"), input_tokens=400)
    async with open_repo(store) as repo:
        session = await repo.create()
        with FakeLLMServer(Say(text="fine", input_tokens=30), failing) as server:
            h = harness(session, make_model("anthropic", server), retry=RetryPolicy(max_attempts=1))
            assert (await h.prompt("one")).stop_reason == "stop"
            assert (await h.prompt("two")).stop_reason == "error"
    args = ["--store", store, "usage", "--json", "--timezone", "UTC"]
    result = await asyncio.to_thread(CliRunner().invoke, cli, args)
    assert result.exit_code == 0, result.output
    totals = json.loads(result.stdout)["totals"]
    assert totals["input_tokens"] == 30 + 400


async def test_a_retried_then_successful_answer_keeps_the_failed_attempts_usage() -> None:
    # two attempts fail after Anthropic reported their input tokens; the third answers
    failing = Say(text="starting", error=("overloaded_error", "busy"), input_tokens=250)
    with FakeLLMServer(failing, failing, Say(text="fine", input_tokens=30)) as server:
        repo = MemoryRepo()
        session = await repo.create()
        h = harness(session, make_model("anthropic", server))
        heard: list[str] = []
        h.subscribe(lambda e: heard.append(e.type) if e.type.startswith("message_") else None)
        reply = await h.prompt("go")
        assert len(server.requests) == 3
    assert reply.stop_reason == "stop"
    branch = await session.get_branch()
    user, record, answer = (message_of(e) for e in branch)
    assert user.role == "user"
    # the answer keeps its own usage (its context size); the failed attempts' usage is an
    # `error` record just before it, which no request and no context estimate uses
    answered = as_assistant(answer).usage
    assert answered is not None and answered.input == 30
    failed = as_assistant(record)
    assert failed.stop_reason == "error" and failed.error_message is not None
    assert failed.error_message.startswith(RETRIED_PREFIX)
    assert failed.usage is not None and failed.usage.input == 2 * 250
    assert branch[2].parent_id == branch[1].id
    calls = await collect_usage(repo)
    assert sum(c.usage.input for c in calls) == 2 * 250 + 30
    # listeners hear the prompt and the answer, not the record (they heard retry_scheduled)
    assert heard == ["message_start", "message_end", "message_start"] + [
        t for t in heard[3:] if t == "message_update"
    ] + ["message_end"]

    # the next request leaves the record out: the conversation goes on as if it were not there
    with FakeLLMServer(Say(text="again")) as server:
        h2 = harness(session, make_model("anthropic", server))
        await h2.prompt("more")
        roles = [m["role"] for m in server.requests[0].body["messages"]]
    assert roles == ["user", "assistant", "user"]


async def test_a_retried_answer_whose_failures_reported_no_usage_adds_no_record() -> None:
    cut = Say(text="starting", cut_after=1)  # the connection drops before any usage
    with FakeLLMServer(cut, Say(text="fine")) as server:
        session = await MemoryRepo().create()
        h = harness(session, make_model("openai", server))
        reply = await h.prompt("go")
        assert len(server.requests) == 2
    assert reply.stop_reason == "stop"
    assert [message_of(e).role for e in await session.get_branch()] == ["user", "assistant"]
