"""The LLM summarisers inside compaction and branch navigation, over real local HTTP (docs/compaction.md, docs/branching.md).

The whole chain runs: a session is compacted (or navigated with ``summarize=True``), the
summariser sends the transcript to a :mod:`llm_servers` fake on 127.0.0.1, and the answer and
the usage it reported end up on the appended entry. On failure nothing is appended.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from _compaction_support import assistant, new_session, result, tool_rounds, user
from llm_servers import (
    FakeLLMServer,
    Reply,
    anthropic_error,
    anthropic_message,
    fake_server,
    openai_completion,
    openai_error,
)
from sessiontree import BranchSummaryEntry, CompactionError, SummaryError, Usage
from sessiontree.compaction import CompactionSettings, compact
from sessiontree.summarizers.anthropic import AnthropicSummarizer
from sessiontree.summarizers.openai import OpenAISummarizer

SUMMARY = "## Goal\nFinish every step.\n\n## Next steps\n1. Run step 9."
SETTINGS = CompactionSettings(keep_recent_tokens=600)


@pytest.fixture(autouse=True)
def _no_ambient_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with fake_server() as s:
        yield s


def _user_text(request_body: Any) -> str:
    return str(request_body["messages"][-1]["content"])


async def test_compaction_stores_the_model_summary_and_its_usage(server: FakeLLMServer) -> None:
    server.script(Reply(openai_completion(SUMMARY, prompt_tokens=900, completion_tokens=80)))
    session = await new_session()
    await tool_rounds(session, 6, size=150)
    async with OpenAISummarizer("m", base_url=f"{server.url}/v1", max_retries=0) as summarizer:
        entry = await compact(session, settings=SETTINGS, summarizer=summarizer)

    assert entry.summary.startswith(SUMMARY)
    n = len(server.requests)
    assert n >= 1
    per_call = Usage(input=700, output=80, cache_read=200, total_tokens=980)
    assert entry.usage is not None
    assert (entry.usage.input, entry.usage.output, entry.usage.cache_read) == (
        per_call.input * n,
        per_call.output * n,
        per_call.cache_read * n,
    )
    first = _user_text(server.requests[0].body)
    assert "[User]: r0: please do step 0." in first
    assert '[Assistant tool call]: bash {"command":"step 0"}' in first
    assert "<previous-summary>" not in first
    assert await session.get_leaf_id() == entry.id


async def test_second_compaction_asks_the_model_to_update_the_first_summary(
    server: FakeLLMServer,
) -> None:
    session = await new_session()
    await tool_rounds(session, 6, size=150)
    server.script(Reply(openai_completion(SUMMARY)))
    async with OpenAISummarizer("m", base_url=f"{server.url}/v1", max_retries=0) as summarizer:
        await compact(session, settings=SETTINGS, summarizer=summarizer)
        await tool_rounds(session, 6, size=150, prefix="s")
        seen = len(server.requests)
        server.script(Reply(openai_completion("## Goal\nUpdated.")))
        second = await compact(session, settings=SETTINGS, summarizer=summarizer)

    history_request = _user_text(server.requests[seen].body)
    assert f"<previous-summary>\n{SUMMARY}" in history_request
    assert "UPDATE that summary" in history_request
    assert "[User]: s0: please do step 0." in history_request
    assert second.summary.startswith("## Goal\nUpdated.")


async def test_failing_model_leaves_the_session_unchanged(server: FakeLLMServer) -> None:
    server.script(Reply(openai_error("model not loaded"), status=503))
    session = await new_session()
    await tool_rounds(session, 6, size=150)
    before = [e.id for e in await session.get_entries()]
    leaf = await session.get_leaf_id()
    async with OpenAISummarizer("m", base_url=f"{server.url}/v1", max_retries=0) as summarizer:
        with pytest.raises(CompactionError) as info:
            await compact(session, settings=SETTINGS, summarizer=summarizer)
    assert info.value.code == "summarization_failed"
    assert isinstance(info.value.__cause__, SummaryError)
    assert [e.id for e in await session.get_entries()] == before
    assert await session.get_leaf_id() == leaf


async def _branched_session() -> tuple[Any, str, str]:
    """root user → assistant (fork point) → abandoned: user, tool call, result, answer."""
    session = await new_session()
    await session.append_message(user("Set up the project."))
    fork_point = await session.append_message(assistant("Done."))
    await session.append_message(user("Try the risky migration."))
    await session.append_message(
        assistant("Running it.", [("m1", "bash", {"command": "./migrate --all"})])
    )
    await session.append_message(result("m1", "ERROR: table locked", error=True))
    old_leaf = await session.append_message(assistant("The migration failed: table locked."))
    return session, fork_point, old_leaf


async def test_branch_summary_from_the_model_with_usage_and_from_id(server: FakeLLMServer) -> None:
    server.script(Reply(anthropic_message(SUMMARY, input_tokens=400, output_tokens=60)))
    session, fork_point, old_leaf = await _branched_session()
    async with AnthropicSummarizer("c", base_url=server.url, max_retries=0) as summarizer:
        summary_id = await session.navigate(fork_point, summarize=True, summarizer=summarizer)

    assert summary_id is not None and await session.get_leaf_id() == summary_id
    entry = await session.get_entry(summary_id)
    assert isinstance(entry, BranchSummaryEntry)
    assert entry.summary == SUMMARY
    assert entry.from_id == old_leaf and entry.parent_id == fork_point
    assert entry.usage == Usage(
        input=400, output=60, cache_read=300, cache_write=50, total_tokens=810
    )
    [request] = server.requests
    prompt = _user_text(request.body)
    assert "a branch the user abandoned" in prompt
    assert "[User]: Try the risky migration." in prompt
    assert "[Tool result: bash (error)]: ERROR: table locked" in prompt
    assert "Set up the project." not in prompt  # above the common ancestor: not abandoned


@pytest.mark.parametrize(
    ("reply", "timeout_s", "reason"),
    [
        (Reply(anthropic_error("busy", type="overloaded_error"), status=529), 20.0, "HTTP 529"),
        (Reply(anthropic_message(SUMMARY), delay_s=60), 0.3, "timed out"),
        (Reply(anthropic_message(None)), 20.0, "empty answer"),
    ],
    ids=["error-status", "timeout", "empty"],
)
async def test_failed_branch_summary_changes_nothing(
    server: FakeLLMServer, reply: Reply, timeout_s: float, reason: str
) -> None:
    server.script(reply)
    session, fork_point, old_leaf = await _branched_session()
    before = [e.id for e in await session.get_entries()]
    async with AnthropicSummarizer(
        "c", base_url=server.url, max_retries=0, timeout=timeout_s
    ) as summarizer:
        with pytest.raises(SummaryError, match=reason):
            await session.navigate(fork_point, summarize=True, summarizer=summarizer)
    assert await session.get_leaf_id() == old_leaf
    assert [e.id for e in await session.get_entries()] == before
