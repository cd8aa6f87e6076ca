"""OpenAISummarizer and AnthropicSummarizer over real HTTP against local fake servers (docs/compaction.md).

Every request goes to a :mod:`llm_servers` server on 127.0.0.1 speaking the provider's wire
format; nothing reaches the internet. The same behaviours are checked for both providers
(good answer, error status, retries, timeout, refused connection, empty or cut-off answers),
then what is specific to each (usage mapping, token-cap field, keys).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from llm_servers import (
    FakeLLMServer,
    Reply,
    anthropic_error,
    anthropic_message,
    fake_server,
    openai_completion,
    openai_error,
    unused_port,
)
from sessiontree import (
    AssistantMessage,
    SummaryError,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from sessiontree.messages import AgentMessage
from sessiontree.providers.endpoint import LOCAL_API_KEY
from sessiontree.summarizers.anthropic import AnthropicSummarizer
from sessiontree.summarizers.base import Summarizer
from sessiontree.summarizers.openai import OpenAISummarizer

SUMMARY = "## Goal\nShip the parser.\n\n## Files\n- src/parser.py — modified"

MESSAGES: list[AgentMessage] = [
    UserMessage(content="Please fix the flaky test in tests/test_parser.py", timestamp=1),
    AssistantMessage(
        content=[
            TextContent(text="Reading the test first."),
            ToolCall(id="c1", name="read", arguments={"path": "tests/test_parser.py"}),
        ],
        timestamp=2,
    ),
    ToolResultMessage(
        tool_call_id="c1",
        tool_name="read",
        content=[TextContent(text="def test_roundtrip(): assert parse(dump(x)) == x")],
        timestamp=3,
    ),
    AssistantMessage(content=[TextContent(text="The fixture leaks a tempdir.")], timestamp=4),
]


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys or base URLs from the developer's shell must not change what the tests see."""
    for var in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_ADMIN_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_AUTH_TOKEN",
    ):
        monkeypatch.delenv(var, raising=False)


@dataclass(frozen=True)
class Provider:
    """How one provider's summariser, wire format and request body look to a test."""

    name: str
    path: str
    ok: Callable[[str | None], dict[str, Any]]
    error: Callable[[str], dict[str, Any]]
    cut_off: dict[str, Any]
    make: Callable[..., OpenAISummarizer | AnthropicSummarizer]
    vendor_error: type[BaseException]

    def prompt_text(self, body: dict[str, Any]) -> str:
        """System prompt and user message of a received request body, joined."""
        if self.name == "openai":
            return "\n".join(m["content"] for m in body["messages"])
        return str(body["system"] + "\n" + _anthropic_user_text(body["messages"][0]))


def _anthropic_user_text(message: dict[str, Any]) -> str:
    """The text of the one user message of a summary request (one text block, no cache mark)."""
    [block] = message["content"]
    assert block.keys() == {"type", "text"} and block["type"] == "text"
    return str(block["text"])


def _make_openai(url: str, **kw: Any) -> OpenAISummarizer:
    return OpenAISummarizer("fake-model", base_url=f"{url}/v1", **kw)


def _make_anthropic(url: str, **kw: Any) -> AnthropicSummarizer:
    if "max_output_tokens" in kw:
        kw["max_tokens"] = kw.pop("max_output_tokens")
    return AnthropicSummarizer("fake-claude", base_url=url, **kw)


PROVIDERS = {
    "openai": Provider(
        name="openai",
        path="/v1/chat/completions",
        ok=lambda text: openai_completion(text),
        error=lambda msg: openai_error(msg),
        cut_off=openai_completion("## Goal\nShip the", finish_reason="length"),
        make=_make_openai,
        vendor_error=openai.OpenAIError,
    ),
    "anthropic": Provider(
        name="anthropic",
        path="/v1/messages",
        ok=lambda text: anthropic_message(text),
        error=lambda msg: anthropic_error(msg),
        cut_off=anthropic_message("## Goal\nShip the", stop_reason="max_tokens"),
        make=_make_anthropic,
        vendor_error=anthropic.AnthropicError,
    ),
}


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> Provider:
    return PROVIDERS[request.param]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with fake_server() as s:
        yield s


@pytest.fixture
async def summarizer_factory(
    provider: Provider, server: FakeLLMServer
) -> AsyncIterator[Callable[..., OpenAISummarizer | AnthropicSummarizer]]:
    """Builds summarisers against ``server`` (no retries unless asked) and closes them after."""
    made: list[OpenAISummarizer | AnthropicSummarizer] = []

    def make(**kw: Any) -> OpenAISummarizer | AnthropicSummarizer:
        kw.setdefault("max_retries", 0)
        kw.setdefault("timeout", 20.0)
        s = provider.make(server.url, **kw)
        made.append(s)
        return s

    yield make
    for s in made:
        await s.aclose()


async def _summarize(s: Summarizer, **kw: Any) -> Any:
    kw.setdefault("previous_summary", None)
    kw.setdefault("instructions", None)
    kw.setdefault("purpose", "compaction")
    return await s.summarize(MESSAGES, **kw)


# --------------------------------------------------------------------------- both providers


async def test_good_answer_returns_text_and_usage_and_sends_the_transcript(
    provider: Provider, server: FakeLLMServer, summarizer_factory: Callable[..., Any]
) -> None:
    server.script(Reply(provider.ok(SUMMARY)))
    s = summarizer_factory()
    assert isinstance(s, Summarizer)

    result = await _summarize(
        s,
        previous_summary="## Goal\nEarlier goal: migrate to orjson.",
        instructions="Mention the tempdir leak.",
    )

    assert result.text == SUMMARY
    assert isinstance(result.usage, Usage) and result.usage.total_tokens > 0
    [request] = server.requests
    assert request.path == provider.path
    assert request.body["model"] in ("fake-model", "fake-claude")
    prompt = provider.prompt_text(request.body)
    assert "[User]: Please fix the flaky test in tests/test_parser.py" in prompt
    assert '[Assistant tool call]: read {"path":"tests/test_parser.py"}' in prompt
    assert "[Tool result: read]: def test_roundtrip()" in prompt
    assert "[Assistant]: The fixture leaks a tempdir." in prompt
    assert "about to be removed from the assistant's context window" in prompt
    assert "<previous-summary>\n## Goal\nEarlier goal: migrate to orjson.\n</previous-summary>" in (
        prompt
    )
    assert "UPDATE that summary" in prompt
    assert prompt.rstrip().endswith("Mention the tempdir leak.")
    for heading in ("## Goal", "## Constraints", "## Progress", "## Next steps", "## Files"):
        assert heading in prompt


async def test_without_previous_summary_no_update_is_asked(
    provider: Provider, server: FakeLLMServer, summarizer_factory: Callable[..., Any]
) -> None:
    server.script(Reply(provider.ok(SUMMARY)))
    await _summarize(summarizer_factory(), purpose="branch")
    prompt = provider.prompt_text(server.requests[0].body)
    assert "<previous-summary>" not in prompt
    assert "UPDATE" not in prompt
    assert "a branch the user abandoned" in prompt


async def test_error_status_raises_summary_error_with_the_vendor_cause(
    provider: Provider, server: FakeLLMServer, summarizer_factory: Callable[..., Any]
) -> None:
    server.script(Reply(provider.error("the GPU caught fire"), status=500))
    s = summarizer_factory(max_retries=0)
    with pytest.raises(SummaryError, match=r"HTTP 500.*GPU caught fire") as info:
        await _summarize(s)
    assert isinstance(info.value.__cause__, provider.vendor_error)
    assert len(server.requests) == 1


async def test_client_error_status_is_not_retried(
    provider: Provider, server: FakeLLMServer, summarizer_factory: Callable[..., Any]
) -> None:
    server.script(
        Reply(
            provider.error(
                "bad model name",
            ),
            status=400,
        )
    )
    with pytest.raises(SummaryError, match="HTTP 400"):
        await _summarize(summarizer_factory(max_retries=2))
    assert len(server.requests) == 1


async def test_sdk_retries_a_server_error_then_succeeds(
    provider: Provider, server: FakeLLMServer, summarizer_factory: Callable[..., Any]
) -> None:
    fast_retry = {"retry-after-ms": "10"}
    server.script(
        Reply(provider.error("overloaded"), status=503, headers=fast_retry),
        Reply(provider.ok(SUMMARY)),
    )
    result = await _summarize(summarizer_factory(max_retries=1))
    assert result.text == SUMMARY
    assert len(server.requests) == 2


async def test_retries_exhausted_raise_summary_error(
    provider: Provider, server: FakeLLMServer, summarizer_factory: Callable[..., Any]
) -> None:
    server.script(Reply(provider.error("still down"), status=502, headers={"retry-after-ms": "10"}))
    with pytest.raises(SummaryError, match="HTTP 502"):
        await _summarize(summarizer_factory(max_retries=2))
    assert len(server.requests) == 3


async def test_timeout_raises_summary_error(
    provider: Provider, server: FakeLLMServer, summarizer_factory: Callable[..., Any]
) -> None:
    # The server would answer after 60 s (it is woken at teardown); the client gives up at 0.2 s.
    server.script(Reply(provider.ok(SUMMARY), delay_s=60))
    s = summarizer_factory(timeout=0.2, max_retries=0)
    started = time.monotonic()
    with pytest.raises(SummaryError, match=r"timed out after 0\.2 s") as info:
        await _summarize(s)
    assert time.monotonic() - started < 30  # generous: the machine may be heavily loaded
    assert isinstance(info.value.__cause__, provider.vendor_error)


async def test_refused_connection_raises_summary_error(provider: Provider) -> None:
    s = provider.make(f"http://127.0.0.1:{unused_port()}", max_retries=0, timeout=2.0)
    try:
        with pytest.raises(SummaryError, match="cannot connect") as info:
            await _summarize(s)
        assert isinstance(info.value.__cause__, provider.vendor_error)
    finally:
        await s.aclose()


@pytest.mark.parametrize("text", [None, "", "  \n "])
async def test_empty_answer_raises_summary_error(
    provider: Provider,
    server: FakeLLMServer,
    summarizer_factory: Callable[..., Any],
    text: str | None,
) -> None:
    server.script(Reply(provider.ok(text)))
    with pytest.raises(SummaryError, match="empty answer"):
        await _summarize(summarizer_factory())


async def test_answer_cut_off_at_the_token_cap_raises_summary_error(
    provider: Provider, server: FakeLLMServer, summarizer_factory: Callable[..., Any]
) -> None:
    server.script(Reply(provider.cut_off))
    with pytest.raises(SummaryError, match=r"cut off at max_(output_)?tokens=64"):
        await _summarize(summarizer_factory(max_output_tokens=64))


async def test_a_body_that_is_not_json_raises_summary_error(
    provider: Provider, server: FakeLLMServer, summarizer_factory: Callable[..., Any]
) -> None:
    server.script(Reply(b"<html>502 Bad Gateway</html>"))
    with pytest.raises(SummaryError):
        await _summarize(summarizer_factory())


async def test_nothing_to_summarise_sends_no_request(
    provider: Provider, server: FakeLLMServer, summarizer_factory: Callable[..., Any]
) -> None:
    s = summarizer_factory()
    with pytest.raises(SummaryError, match="nothing to summarise"):
        await s.summarize([], previous_summary=None, instructions=None, purpose="compaction")
    kept = await s.summarize([], previous_summary="## Goal\nx", instructions=None, purpose="branch")
    assert kept.text == "## Goal\nx" and kept.usage is None
    assert server.requests == []


async def test_local_server_without_key_gets_the_placeholder_key(
    provider: Provider, server: FakeLLMServer, summarizer_factory: Callable[..., Any]
) -> None:
    server.script(Reply(provider.ok(SUMMARY)))
    await _summarize(summarizer_factory())
    headers = server.requests[0].headers
    assert LOCAL_API_KEY in (headers.get("authorization", "") + headers.get("x-api-key", ""))


async def test_key_from_the_environment_is_used(
    provider: Provider,
    server: FakeLLMServer,
    summarizer_factory: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(f"{provider.name.upper()}_API_KEY", "sk-from-env")
    server.script(Reply(provider.ok(SUMMARY)))
    await _summarize(summarizer_factory())
    headers = server.requests[0].headers
    assert "sk-from-env" in (headers.get("authorization", "") + headers.get("x-api-key", ""))


async def test_explicit_key_wins_over_the_environment(
    provider: Provider,
    server: FakeLLMServer,
    summarizer_factory: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(f"{provider.name.upper()}_API_KEY", "sk-from-env")
    server.script(Reply(provider.ok(SUMMARY)))
    await _summarize(summarizer_factory(api_key="sk-explicit"))
    headers = server.requests[0].headers
    sent = headers.get("authorization", "") + headers.get("x-api-key", "")
    assert "sk-explicit" in sent and "sk-from-env" not in sent


async def test_max_input_tokens_bounds_the_request(
    provider: Provider, server: FakeLLMServer, summarizer_factory: Callable[..., Any]
) -> None:
    server.script(Reply(provider.ok(SUMMARY)))
    long_history: list[Any] = []
    for i in range(200):
        long_history += [
            UserMessage(content=f"request {i}: " + "x" * 2000),
            AssistantMessage(content=[TextContent(text=f"answer {i}: " + "y" * 2000)]),
        ]
    s = summarizer_factory(max_input_tokens=3000)
    await s.summarize(long_history, previous_summary=None, instructions=None, purpose="compaction")
    prompt = provider.prompt_text(server.requests[0].body)
    assert len(prompt) <= 3000 * 4
    assert "[User]: request 0: " in prompt and "[Assistant]: answer 199: " in prompt
    assert "messages omitted to fit the summariser's input budget" in prompt


def test_non_positive_limits_are_rejected(provider: Provider) -> None:
    with pytest.raises(ValueError, match="max_input_tokens"):
        provider.make("http://127.0.0.1:9", max_input_tokens=0)


# --------------------------------------------------------------------------- OpenAI specifics


async def test_openai_usage_moves_cached_prompt_tokens_to_cache_read(
    server: FakeLLMServer,
) -> None:
    server.script(
        Reply(
            openai_completion(SUMMARY, prompt_tokens=1200, completion_tokens=150, cached_tokens=200)
        )
    )
    async with OpenAISummarizer("m", base_url=f"{server.url}/v1", max_retries=0) as s:
        result = await _summarize(s)
    assert result.usage == Usage(
        input=1000, output=150, cache_read=200, cache_write=0, total_tokens=1350
    )


async def test_openai_without_reported_usage_gives_none(server: FakeLLMServer) -> None:
    server.script(Reply(openai_completion(SUMMARY, usage=False)))
    async with OpenAISummarizer("m", base_url=f"{server.url}/v1", max_retries=0) as s:
        result = await _summarize(s)
    assert result.text == SUMMARY and result.usage is None


async def test_openai_compatible_server_gets_max_tokens(server: FakeLLMServer) -> None:
    server.script(Reply(openai_completion(SUMMARY)))
    async with OpenAISummarizer("m", base_url=f"{server.url}/v1", max_output_tokens=777) as s:
        await _summarize(s)
    body = server.requests[0].body
    assert body["max_tokens"] == 777 and "max_completion_tokens" not in body
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][1]["role"] == "user"
    assert "stream" not in body or body["stream"] is False


async def test_openai_itself_gets_max_completion_tokens(server: FakeLLMServer) -> None:
    # The fake server acts as an HTTP proxy, so the client believes it talks to api.openai.com.
    http_client = httpx2.AsyncClient(proxy=server.url)
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url="http://api.openai.com/v1", http_client=http_client
    )
    server.script(Reply(openai_completion(SUMMARY)))
    s = OpenAISummarizer("gpt-test", client=client, max_output_tokens=555, max_retries=0)
    try:
        await _summarize(s)
    finally:
        await client.close()
    [request] = server.requests
    assert request.path == "http://api.openai.com/v1/chat/completions"
    assert request.body["max_completion_tokens"] == 555 and "max_tokens" not in request.body


async def test_openai_strips_a_leading_think_block(server: FakeLLMServer) -> None:
    server.script(Reply(openai_completion(f"<think>\nlet me see\n</think>\n\n{SUMMARY}")))
    async with OpenAISummarizer("m", base_url=f"{server.url}/v1", max_retries=0) as s:
        result = await _summarize(s)
    assert result.text == SUMMARY


async def test_openai_refusal_raises_summary_error(server: FakeLLMServer) -> None:
    body = openai_completion(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    server.script(Reply(body))
    async with OpenAISummarizer("m", base_url=f"{server.url}/v1", max_retries=0) as s:
        with pytest.raises(SummaryError, match="refused"):
            await _summarize(s)


async def test_openai_no_choices_raises_summary_error(server: FakeLLMServer) -> None:
    body = openai_completion(SUMMARY)
    body["choices"] = []
    server.script(Reply(body))
    async with OpenAISummarizer("m", base_url=f"{server.url}/v1", max_retries=0) as s:
        with pytest.raises(SummaryError, match="no choices"):
            await _summarize(s)


def test_openai_without_any_key_for_a_remote_server_raises_summary_error() -> None:
    with pytest.raises(SummaryError, match="OPENAI_API_KEY"):
        OpenAISummarizer("gpt-test", base_url="https://llm.example.com/v1")


async def test_openai_passed_client_is_used_and_left_open(server: FakeLLMServer) -> None:
    server.script(Reply(openai_completion(SUMMARY)))
    client = openai.AsyncOpenAI(api_key="k", base_url=f"{server.url}/v1", max_retries=5)
    try:
        s = OpenAISummarizer("m", client=client, timeout=3.0, max_retries=0)
        assert (await _summarize(s)).text == SUMMARY
        await s.aclose()
        assert not client.is_closed()
        assert client.max_retries == 5  # options applied to a copy, not to the caller's client
    finally:
        await client.close()


def test_openai_client_and_base_url_together_are_rejected() -> None:
    client = openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="either client"):
        OpenAISummarizer("m", client=client, base_url="http://127.0.0.1:9/v1")


# --------------------------------------------------------------------------- Anthropic specifics


async def test_anthropic_usage_maps_cache_reads_and_writes(server: FakeLLMServer) -> None:
    server.script(
        Reply(
            anthropic_message(
                SUMMARY,
                input_tokens=1000,
                output_tokens=120,
                cache_read_input_tokens=300,
                cache_creation_input_tokens=50,
            )
        )
    )
    async with AnthropicSummarizer("c", base_url=server.url, max_retries=0) as s:
        result = await _summarize(s)
    assert result.usage == Usage(
        input=1000, output=120, cache_read=300, cache_write=50, total_tokens=1470
    )


async def test_anthropic_request_shape(server: FakeLLMServer) -> None:
    server.script(Reply(anthropic_message(SUMMARY)))
    async with AnthropicSummarizer("c", base_url=server.url, max_tokens=999) as s:
        await _summarize(s, purpose="turn_prefix")
    body = server.requests[0].body
    assert body["max_tokens"] == 999
    assert body["model"] == "c"
    assert "summarise conversations" in body["system"]
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert "first part of one turn" in _anthropic_user_text(body["messages"][0])
    assert "anthropic-version" in server.requests[0].headers


async def test_anthropic_joins_text_blocks_and_skips_thinking(server: FakeLLMServer) -> None:
    body = anthropic_message(None)
    body["content"] = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "## Goal\nShip it."},
        {"type": "text", "text": "## Files\n- a.py"},
    ]
    server.script(Reply(body))
    async with AnthropicSummarizer("c", base_url=server.url, max_retries=0) as s:
        result = await _summarize(s)
    assert result.text == "## Goal\nShip it.\n## Files\n- a.py"


async def test_anthropic_refusal_raises_summary_error(server: FakeLLMServer) -> None:
    server.script(Reply(anthropic_message("", stop_reason="refusal")))
    async with AnthropicSummarizer("c", base_url=server.url, max_retries=0) as s:
        with pytest.raises(SummaryError, match="refused"):
            await _summarize(s)


async def test_anthropic_passed_client_is_used_and_left_open(server: FakeLLMServer) -> None:
    server.script(Reply(anthropic_message(SUMMARY)))
    client = anthropic.AsyncAnthropic(api_key="k", base_url=server.url)
    try:
        s = AnthropicSummarizer("c", client=client, max_retries=0)
        assert (await _summarize(s)).text == SUMMARY
        await s.aclose()
        assert not client.is_closed()
    finally:
        await client.close()


def test_anthropic_client_and_api_key_together_are_rejected() -> None:
    client = anthropic.AsyncAnthropic(api_key="k", base_url="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="either client"):
        AnthropicSummarizer("c", client=client, api_key="k2")
