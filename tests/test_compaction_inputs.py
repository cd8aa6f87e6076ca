"""Compaction with hard inputs: scale, non-str summaries, settings validation, harness
messages, constraints taken from pasted error text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from _compaction_support import assistant, new_session, result, tool_rounds, user
from session_files import VENDORED
from sessiontree import CompactionEntry, Session
from sessiontree.compaction import (
    CompactionSettings,
    compact,
    estimate_tokens,
    prepare_compaction,
)
from sessiontree.entries import Entry, MessageEntry, dump_entry
from sessiontree.errors import AgentHarnessError, CompactionError, SummaryError
from sessiontree.harness import AgentHarness
from sessiontree.messages import AgentMessage, UserMessage, parse_message
from sessiontree.repos import MemoryRepo
from sessiontree.summarizers.base import SummaryPurpose, SummaryResult
from sessiontree.summarizers.extractive import ExtractiveSummarizer
from sessiontree.testing.fakes import ScriptedSummarizer

KEEP = CompactionSettings(keep_recent_tokens=600)
PI = VENDORED / "pi"


async def snapshot(session: Session) -> tuple[list[dict[str, object]], str | None]:
    return [dump_entry(e) for e in await session.get_entries()], await session.get_leaf_id()


class BadTextSummarizer:
    """A summariser that breaks the protocol: ``text`` is not a str."""

    def __init__(self, text: Any, usage: Any = None) -> None:
        self.text = text
        self.usage = usage

    async def summarize(
        self,
        messages: Sequence[AgentMessage],
        *,
        previous_summary: str | None,
        instructions: str | None,
        purpose: SummaryPurpose,
    ) -> SummaryResult:
        return SummaryResult(text=self.text, usage=self.usage)


# --------------------------------------------------------------------------- 1: scale

N = 100_000


async def test_compacting_a_100k_message_linear_session_finishes() -> None:
    """Extraction deduplicated items with ``item in list`` (quadratic); 100,000 user messages
    never finished. Correctness at scale, not a timing."""
    s = await MemoryRepo().create()
    entries: list[Entry] = [
        MessageEntry(
            id=f"e{i}",
            parent_id=f"e{i - 1}" if i else None,
            message=UserMessage(content=f"task {i}: never touch file f{i}.py", timestamp=i + 1),
        )
        for i in range(N)
    ]
    await s.storage.append_entries(entries)
    entry = await compact(s)
    assert await s.get_leaf_id() == entry.id and entry.parent_id == f"e{N - 1}"
    # The walk back from the leaf stops once keep_recent_tokens=20000 are kept.
    total, cut = 0, N
    while total < 20000:
        cut -= 1
        total += estimate_tokens(entries[cut].message)  # type: ignore[union-attr]
    assert entry.first_kept_entry_id is not None
    kept = int(entry.first_kept_entry_id.removeprefix("e"))
    assert kept == cut and 1900 < N - kept < 2300
    assert entry.summary.startswith("## Goal\n- task 0: never touch file f0.py\n")
    assert "earlier item(s) omitted" in entry.summary  # capped, and the drop is counted
    assert len(entry.summary) <= 2000 * 4
    ctx = await s.build_context()
    assert len(ctx.messages) == 1 + N - kept


def test_extractive_merges_many_duplicate_and_blocked_items() -> None:
    """The In-progress filter scanned every Blocked item per call (quadratic)."""
    msgs: list[AgentMessage] = []
    for i in range(3000):
        msgs.append(parse_message(assistant("", [(f"c{i}", "bash", {"command": f"x{i}"})])))
        msgs.append(parse_message(result(f"c{i}", f"failed {i}", error=True)))
    msgs.append(parse_message(assistant("", [("open", "bash", {"command": "x0"})])))
    text = ExtractiveSummarizer(max_tokens=100_000).summarize_sync(msgs)
    blocked = text.split("### Blocked\n")[1].split("\n\n")[0].splitlines()
    assert len(blocked) == 3000 and blocked[0] == "- bash `x0`: failed 0"
    # The call still open repeats a blocked description: it is not in progress.
    assert text.split("### In progress\n")[1].startswith("- (none)")


# --------------------------------------------------------------------------- 2: non-str text


@pytest.mark.parametrize("text", [None, 42, b"bytes"])
@pytest.mark.parametrize("mode", ["pointer", "retained_tail"])
async def test_compact_refuses_a_summary_whose_text_is_not_a_str(text: Any, mode: str) -> None:
    s = await new_session()
    await tool_rounds(s, 6)
    before = await snapshot(s)
    with pytest.raises(CompactionError) as err:
        await compact(s, settings=KEEP, summarizer=BadTextSummarizer(text), mode=mode)  # type: ignore[arg-type]
    assert err.value.code == "summarization_failed"
    assert isinstance(err.value.__cause__, SummaryError)
    assert await snapshot(s) == before


async def test_harness_refuses_a_summary_whose_text_is_none() -> None:
    s = await new_session()
    await tool_rounds(s, 10)
    before = await snapshot(s)
    h = AgentHarness(
        s,
        context_window=4000,
        settings=CompactionSettings(reserve_tokens=1000, keep_recent_tokens=800),
        summarizer=BadTextSummarizer(None),
    )
    with pytest.raises(AgentHarnessError) as err:
        await h.prepare_context()
    assert err.value.code == "compaction"
    with pytest.raises(AgentHarnessError) as err:
        await h.compact()
    assert err.value.code == "compaction"
    assert await snapshot(s) == before
    await s.append_message(user("other branch"))
    side = await s.get_leaf_id()
    first = (await s.get_entries())[0].id
    before = await snapshot(s)
    with pytest.raises(AgentHarnessError) as err:
        await h.navigate_tree(first, summarize=True)
    assert err.value.code == "branch_summary"
    assert isinstance(err.value.__cause__, SummaryError)
    with pytest.raises(SummaryError):
        await s.navigate(first, summarize=True, summarizer=BadTextSummarizer(None))
    assert await snapshot(s) == before and await s.get_leaf_id() == side


# --------------------------------------------------------------------------- 3: settings


async def test_compact_accepts_a_settings_mapping() -> None:
    s = await new_session()
    await tool_rounds(s, 6)
    path = await s.get_branch()
    want = prepare_compaction(path, KEEP).first_kept_entry_id
    entry = await compact(s, settings={"keep_recent_tokens": 600}, summarizer=ScriptedSummarizer())
    assert entry.first_kept_entry_id == want
    assert prepare_compaction(path, {"keepRecentTokens": 600}).first_kept_entry_id == want


@pytest.mark.parametrize(
    "settings",
    [
        {"keep_recent_tokens": "600"},
        {"keep_recent_tokens": -1},
        {"keep": 600},
        {"enabled": "yes"},
        {"reserve_tokens": True},
        "big",
        600,
    ],
)
async def test_compact_refuses_bad_settings_with_a_typed_error(settings: Any) -> None:
    s = await new_session()
    await tool_rounds(s, 6)
    before = await snapshot(s)
    with pytest.raises(CompactionError) as err:
        await compact(s, settings=settings, summarizer=ScriptedSummarizer())
    assert err.value.code == "invalid_settings" and err.value.session_id == s.id
    assert await snapshot(s) == before


@pytest.mark.parametrize(
    "kwargs",
    [
        {"context_window": "big"},
        {"context_window": 1.5e5},
        {"context_window": True},
        {"context_window": 100_000, "compaction_mode": "bogus"},
        {"context_window": 100_000, "settings": {"keep_recent_tokens": "x"}},
        {"context_window": 100_000, "settings": [1, 2]},
        {"context_window": 100_000, "token_counter": 4},
    ],
)
async def test_harness_validates_its_arguments_in_the_constructor(kwargs: Any) -> None:
    s = await new_session()
    with pytest.raises(AgentHarnessError) as err:
        AgentHarness(s, **kwargs)
    assert err.value.code == "invalid_settings" and err.value.session_id == s.id


async def test_harness_accepts_a_settings_mapping() -> None:
    s = await new_session()
    h = AgentHarness(s, context_window=100_000, settings={"reserve_tokens": 1000})
    assert h.settings == CompactionSettings(reserve_tokens=1000)


# --------------------------------------------------------------------------- 4: messages


async def test_harness_errors_name_the_session_once() -> None:
    s = await new_session()
    await tool_rounds(s, 10)
    h = AgentHarness(
        s,
        context_window=4000,
        settings=CompactionSettings(reserve_tokens=1000, keep_recent_tokens=800),
        summarizer=BadTextSummarizer(""),
    )
    for call in (h.prepare_context, h.compact):
        with pytest.raises(AgentHarnessError) as err:
            await call()
        assert str(err.value).count(repr(s.id)) == 1, str(err.value)
    first = (await s.get_entries())[0].id
    with pytest.raises(AgentHarnessError) as err:
        await h.navigate_tree(first, summarize=True)
    assert str(err.value).count(repr(s.id)) == 1, str(err.value)
    empty = AgentHarness(await new_session(), context_window=100_000)
    with pytest.raises(AgentHarnessError) as err:
        await empty.compact()
    assert err.value.code == "nothing_to_compact"
    assert str(err.value).count(repr(empty.session.id)) == 1, str(err.value)


# --------------------------------------------------------------------------- 5: constraints

PASTED = (
    "then we need to tackle this bash issue:\n\n"
    '{"type":"message","message":{"role":"toolResult","toolCallId":"toolu_01"}}\n\n'
    "this results in\n\n"
    ' Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":'
    '"messages.236: `tool_use`\n'
    " ids were found without `tool_result` blocks immediately after: toolu_01. Each\n"
    " `tool_use` block must have a corresponding `tool_result` block in the next\n"
    ' message."},"request_id":"req_1"}\n\n'
    "```\nassert x  # you must never see this\n```\n\n"
    "Please fix it. You must not change the public API."
)


def constraints(text: str) -> list[str]:
    return text.split("## Constraints\n")[1].split("\n\n")[0].splitlines()


def test_constraints_come_from_the_users_own_words_not_pasted_errors() -> None:
    msgs = [
        parse_message(user(PASTED)),
        parse_message(
            assistant(
                stopReason="error",
                errorMessage="`tool_use` block must have a corresponding `tool_result` block",
            )
        ),
        parse_message(assistant("", [("c1", "bash", {"command": "make"})])),
        parse_message(result("c1", "You must always pass --force. Never retry.", error=True)),
    ]
    text = ExtractiveSummarizer().summarize_sync(msgs)
    assert constraints(text) == ["- You must not change the public API."]
    assert "Model call failed" in text  # the model error is still reported, as context


async def test_real_pi_session_constraints_hold_no_api_error() -> None:
    from sessiontree.interop import import_session

    s, _ = await import_session(PI / "pi-mono_before-compaction.v1.jsonl", MemoryRepo())
    entry = await compact(s, summarizer=ExtractiveSummarizer(max_tokens=100_000))
    assert isinstance(entry, CompactionEntry)
    found = constraints(entry.summary)
    assert not [c for c in found if "tool_result" in c or "tool_use" in c], found


async def test_a_summary_with_a_usage_that_is_not_usage_is_refused() -> None:
    s = await new_session()
    await tool_rounds(s, 6)
    bad = BadTextSummarizer("fine text", usage="12 tokens")
    before = await snapshot(s)
    with pytest.raises(CompactionError) as err:
        await compact(s, settings=KEEP, summarizer=bad)
    assert err.value.code == "summarization_failed"
    first = (await s.get_entries())[0].id
    with pytest.raises(SummaryError):
        await s.navigate(first, summarize=True, summarizer=bad)
    assert await snapshot(s) == before
