"""How model failures are classified, retried and stored, over real HTTP through the official
SDKs: a missing or rejected key, an unusable base URL and an unknown model fail at once and
write nothing; every retry wait is bounded whatever ``retry-after`` says; malformed usage
keeps the answer and records its usage as unknown."""

from __future__ import annotations

import asyncio
import logging
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from _agent_support import APIS, FAST_RETRY, close_models, harness, make_model, text_of
from llm_servers import Fail, FakeLLMServer, Reply, Say, openai_completion, unused_port
from session_files import VENDORED
from sessiontree import open_repo
from sessiontree.backends.memory.repo import MemoryRepo
from sessiontree.cli import cli
from sessiontree.entries import MessageEntry, dump_entry
from sessiontree.errors import AgentHarnessError, ModelAuthError, ModelConfigError, ModelError
from sessiontree.harness import RetryPolicy
from sessiontree.messages import AssistantMessage, UserMessage
from sessiontree.models.base import retry_after_seconds

__all__ = ["close_models"]  # the autouse fixture that closes the models' HTTP clients

PI_SESSION = VENDORED / "pi" / "agent-sessions_pi-small.v3.jsonl"
NO_ENV = {
    "COLUMNS": "200",
    "SESSIONTREE_URL": None,
    "SESSIONTREE_MODEL": None,
    "OPENAI_API_KEY": None,
    "OPENAI_BASE_URL": None,
    "ANTHROPIC_API_KEY": None,
    "ANTHROPIC_AUTH_TOKEN": None,
    "ANTHROPIC_BASE_URL": None,
}


def run(store: str, *args: str, code: int = 0, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(cli, ["--store", store, *args], env={**NO_ENV, **(env or {})})
    assert result.exit_code == code, f"{result.stdout}\n{result.stderr}\n{result.exception!r}"
    return result


def stored(store: str) -> dict[str, list[Any]]:
    """Every session of ``store``: its id and its entries as stored (JSON)."""

    async def read() -> dict[str, list[Any]]:
        repo = open_repo(store)
        try:
            out = {}
            for info in await repo.list():
                session = await repo.open(info.id)
                out[info.id] = [dump_entry(e) for e in await session.get_entries()]
            return out
        finally:
            await repo.close()

    return asyncio.run(read())


@pytest.fixture(params=["new", "imported"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, list[str]]:
    """A store and the session arguments of a chat: none (a new session) or an imported one."""
    url = f"sqlite:///{tmp_path / 'st.db'}"
    if request.param == "new":
        return url, []
    run(url, "import", str(PI_SESSION))
    return url, [next(iter(stored(url)))]


def model_args(api: str, model: str, base_url: str | None) -> list[str]:
    name = f"{api}/{model}"
    return ["--model", name, *(["--base-url", base_url] if base_url else [])]


def api_url(api: str, server: FakeLLMServer) -> str:
    return f"{server.url}/v1" if api == "openai" else server.url


# --------------------------------------------------------------------------- the CLI writes nothing


@pytest.mark.parametrize("api", APIS)
def test_chat_without_an_api_key_fails_at_once_and_writes_nothing(
    store: tuple[str, list[str]], api: str
) -> None:
    url, session = store
    before = stored(url)
    result = run(url, "chat", *session, *model_args(api, "some-model", None), "-m", "hi", code=1)
    env = "OPENAI_API_KEY" if api == "openai" else "ANTHROPIC_API_KEY"
    assert result.stderr.strip().splitlines()[-1].startswith("error: [auth]")
    assert env in result.stderr and "retrying" not in result.stderr
    assert stored(url) == before


@pytest.mark.parametrize("api", APIS)
def test_chat_with_a_rejected_key_fails_at_once_and_writes_nothing(
    store: tuple[str, list[str]], api: str
) -> None:
    url, session = store
    before = stored(url)
    with FakeLLMServer(Say(text="never"), api_key="the-right-key", models=["m"]) as server:
        result = run(
            url, "chat", *session, *model_args(api, "m", api_url(api, server)), "-m", "hi", code=1
        )
        assert server.requests == []  # no model call
    assert result.stderr.strip().splitlines()[-1].startswith("error: [auth]")
    assert "invalid x-api-key" in result.stderr and "retrying" not in result.stderr
    assert stored(url) == before


@pytest.mark.parametrize("api", APIS)
def test_chat_with_an_unknown_model_fails_at_once_and_writes_nothing(
    store: tuple[str, list[str]], api: str
) -> None:
    url, session = store
    before = stored(url)
    with FakeLLMServer(Say(text="never"), models=["known"]) as server:
        result = run(
            url,
            "chat",
            *session,
            *model_args(api, "no-such-model", api_url(api, server)),
            "-m",
            "hi",
            code=1,
        )
        assert server.requests == []
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("error: [config]") and "no-such-model" in line
    assert stored(url) == before


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    "base_url",
    [
        "not a url",
        "localhost:8080/v1",
        "ftp://127.0.0.1/v1",
        "http://127.0.0.1:{port}/v1",
        "http://no-such-host.invalid/v1",
    ],
)
def test_chat_with_a_bad_base_url_fails_at_once_and_writes_nothing(
    store: tuple[str, list[str]], api: str, base_url: str
) -> None:
    url, session = store
    before = stored(url)
    base = base_url.format(port=unused_port())
    keys = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}  # a key, so the URL is at fault
    result = run(url, "chat", *session, *model_args(api, "m", base), "-m", "hi", code=1, env=keys)
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith(("error: [config]", "error: [connection]")), line
    assert "retrying" not in result.stderr
    assert stored(url) == before


def test_chat_keeps_working_with_a_server_that_has_no_models_endpoint(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'st.db'}"
    with FakeLLMServer(Say(text="hello")) as server:  # every GET answers 501
        result = run(url, "chat", *model_args("openai", "m", f"{server.url}/v1"), "-m", "hi")
        assert result.stdout.strip() == "hello" and len(server.gets) == 1


@pytest.mark.parametrize("scheme", ["sqlite", "jsonl"])
def test_a_key_rejected_only_by_the_model_call_leaves_no_new_session(
    tmp_path: Path, scheme: str
) -> None:
    url = f"sqlite:///{tmp_path / 'st.db'}" if scheme == "sqlite" else f"jsonl://{tmp_path / 'js'}"
    with FakeLLMServer(Fail(401, "invalid api key")) as server:  # GETs cannot tell
        result = run(
            url, "chat", *model_args("openai", "m", f"{server.url}/v1"), "-m", "hi", code=1
        )
        assert len(server.requests) == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: [auth]")
    assert stored(url) == {}


# --------------------------------------------------------------------------- the harness


async def test_a_client_without_credentials_is_an_auth_error_not_retried() -> None:
    import anthropic

    from sessiontree.models.anthropic import AnthropicModel

    with FakeLLMServer(Say(text="never")) as server:
        client = anthropic.AsyncAnthropic(api_key=None, auth_token=None, base_url=server.url)
        model = AnthropicModel("m", client=client)
        session = await MemoryRepo().create()
        h = harness(session, model, retry=RetryPolicy(max_attempts=4, base_delay_s=5))
        with pytest.raises(AgentHarnessError) as info:
            await asyncio.wait_for(h.prompt("hi"), 30)
        await model.aclose()
        assert info.value.code == "auth"
        assert isinstance(info.value.__cause__, ModelAuthError)
        assert server.requests == []
    # as documented: the user message is stored, no reply (the call could not be made)
    roles = [e.message.role for e in await session.get_entries() if isinstance(e, MessageEntry)]
    assert roles == ["user"]


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    "fail",
    [
        Fail(404, "The model `fake-model` does not exist"),
        Fail(400, "messages: field required"),
        Fail(422, "unprocessable"),
    ],
    ids=["unknown-model", "bad-request", "422"],
)
async def test_non_transient_errors_are_not_retried_and_are_stored_once(
    api: str, fail: Fail
) -> None:
    with FakeLLMServer(fail, Say(text="never")) as server:
        session = await MemoryRepo().create()
        h = harness(session, make_model(api, server), retry=RetryPolicy(base_delay_s=5))
        retries: list[Any] = []
        h.subscribe(lambda e: retries.append(e) if e.type == "retry_scheduled" else None)
        reply = await asyncio.wait_for(h.prompt("hi"), 30)
        assert reply.stop_reason == "error" and fail.message in (reply.error_message or "")
        assert len(server.requests) == 1 and retries == []
    messages = [e.message for e in await session.get_entries() if isinstance(e, MessageEntry)]
    assert [m.role for m in messages] == ["user", "assistant"]


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (("overloaded_error", "Overloaded"), "retried"),
        (("server_error", "The server had an error"), "retried"),
        (("rate_limit_error", "slow down"), "retried"),
        (("authentication_error", "invalid x-api-key"), "auth"),
        (("invalid_api_key", "Incorrect API key provided"), "auth"),
        (("invalid_request_error", "max_tokens: too large"), "stored"),
    ],
    ids=lambda v: v if isinstance(v, str) else v[0],
)
async def test_an_error_event_mid_stream_is_classified_by_its_type(
    api: str, error: tuple[str, str], outcome: str
) -> None:
    with FakeLLMServer(Say(text="partial answer", error=error), Say(text="ok")) as server:
        session = await MemoryRepo().create()
        h = harness(session, make_model(api, server), retry=FAST_RETRY)
        if outcome == "auth":
            with pytest.raises(AgentHarnessError) as info:
                await asyncio.wait_for(h.prompt("hi"), 30)
            assert info.value.code == "auth" and len(server.requests) == 1
            return
        reply = await asyncio.wait_for(h.prompt("hi"), 30)
    if outcome == "retried":
        assert [text_of(b) for b in reply.content] == ["ok"] and len(server.requests) == 2
    else:
        assert reply.stop_reason == "error" and error[1] in (reply.error_message or "")
        assert len(server.requests) == 1


def test_errors_are_classified_by_what_they_are() -> None:
    from sessiontree.models.openai_chat import OpenAIChatModel

    with pytest.raises(ModelAuthError):
        OpenAIChatModel("m", base_url="https://api.example.com/v1")
    with pytest.raises(ModelConfigError, match="not an http"):
        OpenAIChatModel("m", base_url="example.com/v1", api_key="k")
    assert ModelAuthError("x").kind == "auth" and not ModelAuthError("x").transient
    assert ModelConfigError("x").kind == "config" and not ModelConfigError("x").transient
    for kind in ("bad_request", "invalid_response", "overflow"):
        assert not ModelError(kind, "x").transient


# --------------------------------------------------------------------------- retry waits


BAD_DELAYS = [
    {"retry-after": "nan"},
    {"retry-after-ms": "NaN"},
    {"retry-after": "inf"},
    {"retry-after-ms": "-Infinity"},
    {"retry-after": "-5"},
    {"retry-after": "1e400"},
    {"retry-after": "99999999"},
    {"retry-after": "soon"},
    {"retry-after": "Wed, 21 Oct 2099 07:28:00 GMT"},
    {"retry-after-ms": "nan", "retry-after": "nan"},
]


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("headers", BAD_DELAYS, ids=lambda h: ",".join(h.values()))
async def test_every_retry_wait_is_bounded_by_max_delay(api: str, headers: dict[str, str]) -> None:
    with FakeLLMServer(Fail(429, "slow down", headers=headers), Say(text="ok")) as server:
        session = await MemoryRepo().create()
        policy = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.2)
        h = harness(session, make_model(api, server), retry=policy)
        delays: list[float] = []
        h.subscribe(
            lambda e: delays.append(e.data["delay_s"]) if e.type == "retry_scheduled" else None
        )
        reply = await asyncio.wait_for(h.prompt("hi"), 30)
        assert [text_of(b) for b in reply.content] == ["ok"]
        assert len(delays) == 1 and 0 <= delays[0] <= 0.2


header_values = st.one_of(
    st.text(max_size=40),
    st.floats().map(repr),
    st.floats().map(str),
    st.integers().map(str),
    st.sampled_from(["nan", "NaN", "-nan", "inf", "+Infinity", "1e999", " 3 ", "1_000", "0x10"]),
    st.datetimes().map(lambda d: d.strftime("%a, %d %b %Y %H:%M:%S GMT")),
)


@settings(max_examples=300, deadline=None)
@given(
    ms=st.none() | header_values,
    seconds=st.none() | header_values,
    attempt=st.integers(min_value=1, max_value=100_000),
    max_delay=st.floats(min_value=0, max_value=1e6),
    base=st.floats(min_value=0, max_value=1e6),
)
def test_retry_after_headers_never_make_a_wait_unbounded(
    ms: str | None, seconds: str | None, attempt: int, max_delay: float, base: float
) -> None:
    headers = {k: v for k, v in (("retry-after-ms", ms), ("retry-after", seconds)) if v is not None}
    asked = retry_after_seconds(headers)
    assert asked is None or (math.isfinite(asked) and asked >= 0)
    delay = RetryPolicy(base_delay_s=base, max_delay_s=max_delay).delay_s(attempt, asked)
    assert math.isfinite(delay) and 0 <= delay <= max_delay
    for odd in (math.nan, math.inf, -math.inf, -1.0):
        delay = RetryPolicy(base_delay_s=base, max_delay_s=max_delay).delay_s(attempt, odd)
        assert math.isfinite(delay) and 0 <= delay <= max_delay


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, "1"])
def test_a_retry_policy_takes_only_finite_delays(value: Any) -> None:
    with pytest.raises(AgentHarnessError, match="finite"):
        RetryPolicy(max_delay_s=value)
    with pytest.raises(AgentHarnessError, match="finite"):
        RetryPolicy(base_delay_s=value)


# --------------------------------------------------------------------------- malformed usage

MALFORMED_USAGE = {
    "openai": [
        {"prompt_tokens": "abc", "completion_tokens": 5, "total_tokens": 7},
        {"prompt_tokens": [1, 2], "completion_tokens": 5, "total_tokens": 7},
        {"prompt_tokens": 3, "completion_tokens": -5, "total_tokens": 7},
        {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 1.5},
        {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": {"n": 8}},
        {
            "prompt_tokens": 3,
            "completion_tokens": 5,
            "total_tokens": 8,
            "prompt_tokens_details": {"cached_tokens": "x"},
        },
    ],
    "anthropic": [
        {"output_tokens": "abc"},
        {"output_tokens": [1, 2]},
        {"output_tokens": 5, "input_tokens": -3},
        {"output_tokens": 5, "cache_read_input_tokens": 2.5},
    ],
}


@pytest.mark.parametrize(
    ("api", "usage"),
    [(api, usage) for api, cases in MALFORMED_USAGE.items() for usage in cases],
)
async def test_malformed_usage_keeps_the_answer_and_records_usage_as_unknown(
    api: str, usage: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    with FakeLLMServer(Say(text="the whole answer", usage=usage), Say(text="again")) as server:
        session = await MemoryRepo().create()
        h = harness(session, make_model(api, server), retry=FAST_RETRY)
        with caplog.at_level(logging.WARNING, logger="sessiontree.models"):
            reply = await asyncio.wait_for(h.prompt("hi"), 30)
        assert reply.stop_reason == "stop" and reply.usage is None
        assert [text_of(b) for b in reply.content] == ["the whole answer"]
        assert len(server.requests) == 1  # not retried
    [warning] = [r for r in caplog.records if r.name.startswith("sessiontree.models")]
    assert "malformed usage" in warning.getMessage() and "unknown" in warning.getMessage()
    [*_, last] = [e for e in await session.get_entries() if isinstance(e, MessageEntry)]
    assert isinstance(last.message, AssistantMessage) and last.message.usage is None
    assert [text_of(b) for b in last.message.content] == ["the whole answer"]


async def test_a_summary_with_malformed_usage_is_kept_with_unknown_usage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from sessiontree.summarizers.openai import OpenAISummarizer

    body = openai_completion("## Goal\nthe summary")
    body["usage"]["prompt_tokens"] = "abc"
    with FakeLLMServer(Reply(body=body)) as server:
        async with OpenAISummarizer(
            model="m", base_url=f"{server.url}/v1", api_key="k"
        ) as summarizer:
            with caplog.at_level(logging.WARNING, logger="sessiontree.summarizers"):
                result = await summarizer.summarize(
                    [UserMessage(content="please summarise me")],
                    previous_summary=None,
                    instructions=None,
                    purpose="compaction",
                )
    assert "the summary" in result.text and result.usage is None
    assert any("malformed usage" in r.getMessage() for r in caplog.records)
