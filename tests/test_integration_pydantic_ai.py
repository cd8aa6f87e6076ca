"""pydantic-ai message history through sessiontree, on every backend: real agent runs with
pydantic-ai's own TestModel and FunctionModel, every part kind, and a round-trip property."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai import messages as pa
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RequestUsage

from backends import BACKENDS
from sessiontree import (
    AssistantMessage,
    InvalidEntryError,
    MessageEntry,
    SessionRepo,
    ToolResultMessage,
    UserMessage,
)
from sessiontree.compaction import compact
from sessiontree.integrations.pydantic_ai import from_model_messages, to_model_messages
from sessiontree.messages import ImageContent, ThinkingContent
from sessiontree.summarizers.extractive import ExtractiveSummarizer

PNG = b"\x89PNG\r\n\x1a\n\x00\x00"
T0 = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


def every_part() -> list[pa.ModelMessage]:
    legacy_retry = pa.ModelMessagesTypeAdapter.validate_python(
        [
            {
                "kind": "request",
                "parts": [
                    {
                        "part_kind": "retry-prompt",
                        "content": "try again",
                        "tool_name": "lookup",
                        "tool_call_id": "c2",
                        "timestamp": T0,
                    },
                    {
                        "part_kind": "retry-prompt",
                        "content": [
                            {"type": "missing", "loc": ["x"], "msg": "Field required", "input": {}}
                        ],
                        "timestamp": T0,
                    },
                ],
            }
        ]
    )
    return [
        pa.ModelRequest(
            parts=[
                pa.SystemPromptPart(content="be exact", timestamp=T0),
                pa.UserPromptPart(
                    content=[
                        'look at this ✓ "q" \'; DROP TABLE x; --',
                        pa.BinaryContent(data=PNG, media_type="image/png"),
                        pa.ImageUrl(url="https://example.com/a.png"),
                    ],
                    timestamp=T0,
                ),
            ],
            timestamp=T0,
            instructions="answer in French",
        ),
        pa.ModelResponse(
            parts=[
                pa.ThinkingPart(content="the user wants…", signature="sig-1", id="th_1"),
                pa.TextPart(content="checking"),
                pa.ToolCallPart(tool_name="lookup", args={"q": "x", "n": 2}, tool_call_id="c1"),
                pa.ToolCallPart(tool_name="lookup", args='{"q": "y"}', tool_call_id="c2"),
            ],
            usage=RequestUsage(input_tokens=10, output_tokens=5),
            model_name="m-1",
            provider_name="prov",
            timestamp=T0,
        ),
        pa.ModelRequest(
            parts=[
                pa.ToolReturnPart(
                    tool_name="lookup", content={"found": [1, 2]}, tool_call_id="c1", timestamp=T0
                )
            ],
            timestamp=T0,
        ),
        *legacy_retry,
        pa.ModelRequest(
            parts=[
                pa.RetryFeedbackPart(
                    content="no output", retry=pa.RetryInfo(cause="no_output"), timestamp=T0
                )
            ],
            timestamp=T0,
        ),
        pa.ModelResponse(parts=[pa.TextPart(content="voilà")], timestamp=T0),
    ]


def same(ours: list[pa.ModelMessage], original: list[pa.ModelMessage]) -> None:
    """Equal as pydantic-ai persists history: the same JSON, and the same objects as its own
    load of that JSON (its load normalises, e.g. BinaryContent of an image → BinaryImage)."""
    adapter = pa.ModelMessagesTypeAdapter
    assert adapter.dump_python(ours, mode="json") == adapter.dump_python(original, mode="json")
    assert ours == adapter.validate_json(adapter.dump_json(original))


async def store(
    repo: SessionRepo, model_messages: list[pa.ModelMessage], session_id: str = "run-1"
) -> Any:
    session = await repo.create(id=session_id)
    for message in from_model_messages(model_messages):
        await session.append_message(message)
    return session


async def test_every_part_kind_round_trips_through_a_store(repo: SessionRepo) -> None:
    original = every_part()
    session = await store(repo, original)
    reopened = await repo.open(session.id)
    context = await reopened.build_context()
    same(to_model_messages(context.messages), original)
    messages = [e.message for e in await reopened.get_branch() if isinstance(e, MessageEntry)]
    kinds = [m.role for m in messages]
    assert kinds == [
        "custom",
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "custom",
        "custom",
        "assistant",
    ]
    user = messages[1]
    assert isinstance(user, UserMessage) and isinstance(user.content, list)
    assert isinstance(user.content[1], ImageContent) and user.content[1].mime_type == "image/png"
    turn = messages[2]
    assert isinstance(turn, AssistantMessage) and isinstance(turn.content[0], ThinkingContent)
    assert [c.arguments for c in turn.tool_calls()] == [{"q": "x", "n": 2}, {"q": "y"}]
    assert turn.usage is not None and turn.usage.input == 10
    retried = messages[4]
    assert (
        isinstance(retried, ToolResultMessage) and retried.is_error and retried.tool_call_id == "c2"
    )
    assert [h.session_id for h in await repo.search("DROP TABLE")] == [session.id]


async def test_agent_run_continues_from_stored_history(repo: SessionRepo) -> None:
    agent = Agent(TestModel(), system_prompt="be brief")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    first = await agent.run("what is 1+1?")
    session = await store(repo, first.all_messages())
    seen: list[list[pa.ModelMessage]] = []

    def answer(messages: list[pa.ModelMessage], info: AgentInfo) -> pa.ModelResponse:
        seen.append(messages)
        return pa.ModelResponse(parts=[pa.TextPart(content=f"I saw {len(messages)} messages")])

    history = to_model_messages((await session.build_context()).messages)
    assert history == first.all_messages()
    second = await Agent(FunctionModel(answer)).run("and now?", message_history=history)
    assert second.output == f"I saw {len(history) + 1} messages"
    assert seen[0][: len(history)] == history
    for message in from_model_messages(second.new_messages()):
        await session.append_message(message)
    assert to_model_messages((await session.build_context()).messages) == second.all_messages()


async def test_messages_other_code_wrote_are_converted(repo: SessionRepo) -> None:
    session = await repo.create()
    await session.append_message({"role": "user", "content": "hi"})
    await session.append_message(
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c", "name": "f", "arguments": {"a": 1}}],
        }
    )
    await session.append_message(
        {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "f",
            "content": [{"type": "text", "text": "2"}],
        }
    )
    await session.append_message(
        {"role": "assistant", "content": [{"type": "text", "text": "two"}]}
    )
    history = to_model_messages((await session.build_context()).messages)
    assert [type(m) for m in history] == [
        pa.ModelRequest,
        pa.ModelResponse,
        pa.ModelRequest,
        pa.ModelResponse,
    ]
    calls: list[Any] = []

    def answer(messages: list[pa.ModelMessage], info: AgentInfo) -> pa.ModelResponse:
        calls.append(messages)
        return pa.ModelResponse(parts=[pa.TextPart(content="ok")])

    result = await Agent(FunctionModel(answer)).run("next", message_history=history)
    assert result.output == "ok"
    assert isinstance(calls[0][1].parts[0], pa.ToolCallPart) and calls[0][1].parts[0].args == {
        "a": 1
    }


async def test_compacted_history_still_runs(repo: SessionRepo) -> None:
    agent = Agent(TestModel(custom_output_text="answer " + "word " * 300))
    messages: list[pa.ModelMessage] = []
    for n in range(8):
        result = await agent.run(f"question {n} " + "pad " * 300, message_history=messages)
        messages = result.all_messages()
    session = await store(repo, messages)
    await compact(session, settings={"keep_recent_tokens": 150}, summarizer=ExtractiveSummarizer())
    history = to_model_messages((await session.build_context()).messages)
    assert isinstance(history[0], pa.ModelRequest)
    summary = history[0].parts[0]
    assert isinstance(summary, pa.UserPromptPart) and "compacted" in str(summary.content)
    assert (await agent.run("go on", message_history=history)).output.startswith("answer")


def test_refuses_what_is_not_a_model_message() -> None:
    with pytest.raises(InvalidEntryError, match="message 0"):
        from_model_messages([{"kind": "request"}])  # type: ignore[list-item]


text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)
stamp = st.datetimes(
    timezones=st.just(UTC), min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)
).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
args = st.dictionaries(text, st.integers(-(2**40), 2**40) | text | st.booleans(), max_size=3)
request_part = st.one_of(
    st.builds(lambda c, t: pa.SystemPromptPart(content=c, timestamp=t), text, stamp),
    st.builds(lambda c, t: pa.UserPromptPart(content=c, timestamp=t), text, stamp),
    st.builds(
        lambda c, b, t: pa.UserPromptPart(
            content=[c, pa.BinaryContent(data=b, media_type="image/png")], timestamp=t
        ),
        text,
        st.binary(min_size=1, max_size=16),
        stamp,
    ),
    st.builds(
        lambda n, c, i, t: pa.ToolReturnPart(tool_name=n, content=c, tool_call_id=i, timestamp=t),
        text,
        text | args,
        text,
        stamp,
    ),
    st.builds(
        lambda c, t: pa.RetryFeedbackPart(
            content=c, retry=pa.RetryInfo(cause="model_retry"), timestamp=t
        ),
        text,
        stamp,
    ),
)
response_part = st.one_of(
    st.builds(lambda c: pa.TextPart(content=c), text),
    st.builds(lambda c, s: pa.ThinkingPart(content=c, signature=s), text, st.none() | text),
    st.builds(
        lambda n, a, i: pa.ToolCallPart(tool_name=n, args=a, tool_call_id=i), text, args, text
    ),
)
model_message = st.one_of(
    st.builds(
        lambda p, t: pa.ModelRequest(parts=p, timestamp=t),
        st.lists(request_part, min_size=1, max_size=3),
        stamp,
    ),
    st.builds(
        lambda p, t, m: pa.ModelResponse(parts=p, timestamp=t, model_name=m),
        st.lists(response_part, min_size=1, max_size=3),
        stamp,
        st.none() | text,
    ),
)


@pytest.mark.parametrize("backend", list(BACKENDS))
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(history=st.lists(model_message, min_size=1, max_size=5))
def test_model_messages_round_trip_exactly(
    backend: str, tmp_path: Path, history: list[pa.ModelMessage]
) -> None:
    async def run() -> list[pa.ModelMessage]:
        async with BACKENDS[backend].open(tmp_path / uuid.uuid4().hex) as repo:
            await store(repo, history, "prop")
            return to_model_messages(
                (await (await repo.open("prop")).build_context(repair_tool_pairs=False)).messages
            )

    same(asyncio.run(run()), history)


def test_a_lone_surrogate_in_a_part_is_a_typed_error_naming_the_message() -> None:
    good = pa.ModelRequest(parts=[pa.UserPromptPart(content="hi")])
    bad = pa.ModelRequest(parts=[pa.UserPromptPart(content="cut mid-emoji \ud83d")])
    with pytest.raises(InvalidEntryError, match="message 1 cannot be written as JSON"):
        from_model_messages([good, bad])


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
async def test_a_non_finite_tool_return_is_refused_not_stored_as_null(
    repo: SessionRepo, value: float
) -> None:
    """pydantic's JSON writes ``inf`` as ``null``: the message is refused instead, and the
    store is left as it was, on every backend."""
    session = await repo.create()
    before = await session.get_entries()
    good = pa.ModelRequest(parts=[pa.UserPromptPart(content="hi")])
    returned = pa.ModelRequest(
        parts=[pa.ToolReturnPart(tool_name="measure", content={"ratio": value}, tool_call_id="c1")]
    )
    called = pa.ModelResponse(
        parts=[pa.ToolCallPart(tool_name="measure", args={"x": [1.0, value]}, tool_call_id="c1")]
    )
    for bad in (returned, called):
        with pytest.raises(InvalidEntryError, match=r"message 1 .*non-finite"):
            for message in from_model_messages([good, bad]):
                await session.append_message(message)
    assert await session.get_entries() == before
    finite = pa.ModelRequest(
        parts=[pa.ToolReturnPart(tool_name="measure", content={"ratio": 1e308}, tool_call_id="c1")]
    )
    for message in from_model_messages([finite]):
        await session.append_message(message)
    stored = [e.message for e in await session.get_branch() if isinstance(e, MessageEntry)]
    (back,) = to_model_messages(stored)
    assert back.parts[0].content == {"ratio": 1e308}  # type: ignore[union-attr]
