"""The provider layer (``sessiontree.providers``) and what it gives models and summarisers alike.

The rules are checked as functions (token-cap field, stop reasons, ``<think>`` blocks), then
over real HTTP through the official SDKs to the local servers of :mod:`llm_servers`: a
leading ``<think>`` block and a refusal are handled the same way in the harness's streamed
answers and in a summary's whole answer, a summary's usage is priced and recorded on the
compaction entry as a model call's is, and a model without a whole-answer call is summarised
through its stream.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _compaction_support import assistant, new_session, user, words
from llm_servers import FakeLLMServer, Reply, Say, anthropic_message, openai_completion
from sessiontree import SummaryError, ThinkingContent, UserMessage
from sessiontree.compaction import CompactionSettings, compact
from sessiontree.entries import CompactionEntry
from sessiontree.messages import TextContent
from sessiontree.models.anthropic import AnthropicModel
from sessiontree.models.base import (
    CompletingModel,
    Done,
    ModelEvent,
    ModelRequest,
    Prices,
    TextDelta,
    ThinkingDelta,
)
from sessiontree.models.openai_chat import OpenAIChatModel
from sessiontree.providers import anthropic as anthropic_rules
from sessiontree.providers import openai as openai_rules
from sessiontree.providers.endpoint import DEFAULT_MAX_OUTPUT_TOKENS
from sessiontree.summarizers.anthropic import AnthropicSummarizer
from sessiontree.summarizers.model import ModelSummarizer
from sessiontree.summarizers.openai import OpenAISummarizer

SUMMARY = "## Goal\nShip the parser."


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


# --------------------------------------------------------------------------- the rules


def test_the_output_cap_field_depends_on_the_host() -> None:
    assert openai_rules.cap_field("https://api.openai.com/v1") == "max_completion_tokens"
    assert openai_rules.cap_field("http://127.0.0.1:8080/v1") == "max_tokens"
    assert openai_rules.cap_field("https://api.openai.com.example.net/v1") == "max_tokens"


def test_stop_reasons_say_what_went_wrong() -> None:
    assert openai_rules.stop_reason("tool_calls") == ("toolUse", "finish_reason 'tool_calls'")
    assert openai_rules.stop_reason("length")[0] == "length"
    stop, why = openai_rules.stop_reason("content_filter")
    assert stop == "error" and "content filter" in why and "'content_filter'" in why
    stop, why = openai_rules.stop_reason("stop", "I can't help with that.")
    assert stop == "error" and why.startswith("the model refused: I can't help with that.")
    assert anthropic_rules.stop_reason(None) == ("stop", "stop_reason None")
    stop, why = anthropic_rules.stop_reason("refusal")
    assert stop == "error" and "refused" in why and "'refusal'" in why


_NO_TAG = st.text().filter(lambda t: "<think>" not in t and "</think>" not in t)


@given(thinking=_NO_TAG, answer=_NO_TAG, lead=st.sampled_from(["", " ", "\n \n"]))
def test_a_leading_think_block_is_split_off_and_nothing_else(
    thinking: str, answer: str, lead: str
) -> None:
    assert openai_rules.split_think(answer) == ("", answer)
    text = f"{lead}<think>{thinking}</think>{answer}"
    assert openai_rules.split_think(text) == (thinking.strip(), answer.lstrip())
    # a think block later in the text is the answer's own
    later = f"x<think>{thinking}</think>"
    assert openai_rules.split_think(later) == ("", later)
    # a block left open is all thinking (the answer was cut off while the model reasoned)
    assert openai_rules.split_think(f"{lead}<think>{thinking}") == (thinking.strip(), "")


@given(
    text=st.one_of(
        st.text(alphabet="<>/thinkab \n", max_size=40),
        st.builds(
            lambda a, b, c: f"{a}<think>{b}</think>{c}",
            st.text(alphabet=" \n", max_size=3),
            st.text(alphabet="<>/thinkab \n", max_size=20),
            st.text(alphabet="<>/thinkab \n", max_size=20),
        ),
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=8),
)
def test_a_streamed_answer_splits_as_the_whole_answer_does(text: str, cuts: list[int]) -> None:
    """However the text arrives in pieces, the thinking and the text are those of the whole."""
    splitter = openai_rules.ThinkSplitter()
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    pieces: list[tuple[str, str]] = []
    for start, end in itertools.pairwise(bounds):
        pieces += splitter.feed(text[start:end])
    pieces += splitter.flush()
    thinking = "".join(t for kind, t in pieces if kind == "thinking")
    answer = "".join(t for kind, t in pieces if kind == "text")
    whole_thinking, whole_answer = openai_rules.split_think(text)
    assert (thinking.strip(), answer) == (whole_thinking, whole_answer)
    assert all(t for _, t in pieces)  # no empty piece is streamed


def test_the_output_cap_default_is_written_once() -> None:
    import sessiontree.summarizers.model as summaries

    assert summaries.DEFAULT_MAX_OUTPUT_TOKENS is DEFAULT_MAX_OUTPUT_TOKENS
    assert OpenAISummarizer("m", base_url="http://127.0.0.1:9/v1").max_output_tokens == (
        DEFAULT_MAX_OUTPUT_TOKENS
    )


# --------------------------------------------------------------------------- one behaviour


def _request(text: str = "hi") -> ModelRequest:
    return ModelRequest(system_prompt="", messages=[UserMessage(content=text)])


async def _streamed(model: Any, request: ModelRequest) -> Any:
    events = [event async for event in model.stream(request)]
    assert isinstance(events[-1], Done)
    return events[-1].message


async def test_a_think_block_becomes_thinking_in_a_streamed_answer_and_in_a_summary(
    server: FakeLLMServer,
) -> None:
    said = f"<think>\nthe user wants a parser\n</think>\n\n{SUMMARY}"
    server.script(Say(text=said), Reply(openai_completion(said)))
    model = OpenAIChatModel("m", base_url=f"{server.url}/v1")
    try:
        events = [event async for event in model.stream(_request())]
    finally:
        await model.aclose()
    streamed_text = "".join(e.text for e in events if isinstance(e, TextDelta))
    streamed_thinking = "".join(e.thinking for e in events if isinstance(e, ThinkingDelta))
    assert streamed_text == SUMMARY and "<think>" not in streamed_thinking
    assert streamed_thinking.strip() == "the user wants a parser"
    assert isinstance(events[-1], Done)
    reply = events[-1].message
    [thought, answer] = reply.content
    assert isinstance(thought, ThinkingContent) and isinstance(answer, TextContent)
    assert (thought.thinking, answer.text) == ("the user wants a parser", SUMMARY)
    async with OpenAISummarizer("m", base_url=f"{server.url}/v1", max_retries=0) as summarizer:
        result = await summarizer.summarize(
            [UserMessage(content="write the parser")],
            previous_summary=None,
            instructions=None,
            purpose="compaction",
        )
    assert result.text == SUMMARY


def _sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


async def test_a_streamed_refusal_ends_the_answer_as_an_error_naming_it(
    server: FakeLLMServer,
) -> None:
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    server.script(
        Reply(
            _sse(
                {**base, "choices": [{"index": 0, "delta": {"refusal": "I can't "}}]},
                {**base, "choices": [{"index": 0, "delta": {"refusal": "help with that."}}]},
                {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            )
        )
    )
    model = OpenAIChatModel("m", base_url=f"{server.url}/v1")
    try:
        reply = await _streamed(model, _request())
    finally:
        await model.aclose()
    assert reply.stop_reason == "error"
    assert (reply.error_message or "").startswith("the model refused: I can't help with that.")


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_summary_is_priced_and_recorded_like_a_model_call(
    api: str, server: FakeLLMServer
) -> None:
    prices = Prices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    summarizer: ModelSummarizer
    if api == "openai":
        server.script(Reply(openai_completion(SUMMARY, prompt_tokens=1200, completion_tokens=150)))
        summarizer = OpenAISummarizer("m", base_url=f"{server.url}/v1", prices=prices)
    else:
        server.script(
            Reply(
                anthropic_message(
                    SUMMARY,
                    input_tokens=1000,
                    output_tokens=150,
                    cache_read_input_tokens=200,
                    cache_creation_input_tokens=0,
                )
            )
        )
        summarizer = AnthropicSummarizer("c", base_url=server.url, prices=prices)
    s = await new_session()
    await s.append_message(user("first request " + words(400)))
    await s.append_message(assistant("ok " + words(400)))
    await s.append_message(user("second request " + words(400)))
    async with summarizer:
        entry = await compact(
            s, settings=CompactionSettings(keep_recent_tokens=300), summarizer=summarizer
        )
    assert isinstance(entry, CompactionEntry) and entry.summary == SUMMARY
    usage = entry.usage
    assert usage is not None and usage.output == 150 and usage.input + usage.cache_read == 1200
    assert usage.cost is not None
    expected = prices.cost(usage)
    assert usage.cost.total == pytest.approx(expected.total) and usage.cost.total > 0
    [stored] = [e for e in await s.get_entries() if isinstance(e, CompactionEntry)]
    assert stored.usage == usage
    body = server.requests[0].body
    assert "stream" not in body  # one whole answer, the SDK's retries apply
    if api == "anthropic":  # a one-off summary request marks no prompt-cache breakpoint
        assert "cache_control" not in orjson.dumps(body).decode()


class _StreamOnly:
    """A model that only streams (what a user's own Model implements): it forwards to a real
    OpenAIChatModel's stream and offers nothing else."""

    def __init__(self, inner: OpenAIChatModel) -> None:
        self.provider = inner.provider
        self.model_id = inner.model_id
        self.context_window: int | None = None
        self._inner = inner

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        async for event in self._inner.stream(request):
            yield event


async def test_a_model_that_only_streams_is_summarised_through_its_stream(
    server: FakeLLMServer,
) -> None:
    server.script(Say(text=SUMMARY, input_tokens=300, output_tokens=40))
    inner = OpenAIChatModel("m", base_url=f"{server.url}/v1")
    model = _StreamOnly(inner)
    assert not isinstance(model, CompletingModel) and isinstance(inner, CompletingModel)
    try:
        result = await ModelSummarizer(model, max_output_tokens=500).summarize(
            [UserMessage(content="write the parser")],
            previous_summary=None,
            instructions=None,
            purpose="branch",
        )
    finally:
        await inner.aclose()
    assert result.text == SUMMARY
    assert result.usage is not None and (result.usage.input, result.usage.output) == (300, 40)
    body = server.requests[0].body
    assert body["stream"] is True and body["max_tokens"] == 500


async def test_a_summary_model_failure_keeps_the_sdk_error_as_cause(server: FakeLLMServer) -> None:
    import anthropic

    server.script(Reply({"type": "error", "error": {"type": "api_error", "message": "down"}}, 529))
    model = AnthropicModel("c", base_url=server.url)
    try:
        with pytest.raises(SummaryError, match=r"summary by anthropic/c at .* HTTP 529") as info:
            await ModelSummarizer(model).summarize(
                [UserMessage(content="x")],
                previous_summary=None,
                instructions=None,
                purpose="compaction",
            )
    finally:
        await model.aclose()
    assert isinstance(info.value.__cause__, anthropic.APIStatusError)
    assert len(server.requests) == 1  # the harness's model does not retry by itself


@pytest.mark.parametrize(
    ("make", "url", "reason"),
    [
        (AnthropicSummarizer, "https://llm.example.com", "ANTHROPIC_API_KEY"),
        (OpenAISummarizer, "https://llm.example.com/v1", "OPENAI_API_KEY"),
        (AnthropicSummarizer, "ftp://127.0.0.1:9", "not an http"),
        (OpenAISummarizer, "127.0.0.1:9/v1", "not an http"),
    ],
)
def test_a_summariser_that_can_never_work_is_refused_when_built(
    make: Any, url: str, reason: str
) -> None:
    """The model's own checks run for summarisers too: no key for a remote server, or a base
    URL that is not an http(s) URL, fails at once rather than at the first compaction."""
    with pytest.raises(SummaryError, match=reason) as info:
        make("some-model", base_url=url)
    assert "summariser for model 'some-model'" in str(info.value)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_whole_answer_holds_what_the_stream_would(api: str, server: FakeLLMServer) -> None:
    """``complete`` and ``stream`` of one model give the same message for the same answer:
    thinking, text, tool calls with their arguments, stop reason, usage."""
    say = Say(
        text="Reading it.",
        thinking="the file first" if api == "anthropic" else "",
        tool_calls=(("call_1", "read", {"path": "src/parser.py"}),),
        input_tokens=120,
        output_tokens=30,
    )
    server.script(say)
    model: Any = (
        OpenAIChatModel("fake-model", base_url=f"{server.url}/v1")
        if api == "openai"
        else AnthropicModel("fake-claude", base_url=server.url)
    )
    try:
        streamed = await _streamed(model, _request())
        whole = await model.complete(_request())
    finally:
        await model.aclose()
    assert server.requests[0].body.get("stream") is True
    assert "stream" not in server.requests[1].body
    assert whole.content == streamed.content and len(whole.content) == (
        3 if api == "anthropic" else 2
    )
    assert (whole.stop_reason, whole.usage, whole.model) == (
        streamed.stop_reason,
        streamed.usage,
        streamed.model,
    )
    assert whole.stop_reason == "toolUse" and whole.usage is not None
    assert whole.usage.output == 30
