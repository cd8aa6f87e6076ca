"""Compaction on real pi sessions (docs/compaction.md): both modes, extractive summariser.

``pi-mono_before-compaction.v1.jsonl`` already holds two v1 compactions written by pi (so the
new compaction updates pi's summary and summarises what pi kept); ``pi-mono_large-session``
has none.
"""

from __future__ import annotations

import pytest

from _compaction_support import contains, left_context, real
from session_files import VENDORED
from sessiontree import CompactionEntry
from sessiontree.compaction import CompactionSettings, compact, estimate_context_tokens
from sessiontree.context import find_tool_pair_problems
from sessiontree.interop import import_session
from sessiontree.messages import CompactionSummaryMessage, ToolResultMessage, UserMessage
from sessiontree.repos import MemoryRepo
from sessiontree.summarizers.base import SUMMARY_SECTIONS
from sessiontree.summarizers.extractive import ExtractiveSummarizer
from sessiontree.testing.fakes import RecordingSummarizer

PI = VENDORED / "pi"
FILES = {
    "pi-mono_before-compaction.v1.jsonl": 2,
    "pi-mono_large-session.v1.jsonl": 0,
}


@pytest.mark.parametrize("mode", ["pointer", "retained_tail"])
@pytest.mark.parametrize("name", sorted(FILES))
async def test_real_pi_session_compacts_and_stays_valid(name: str, mode: str) -> None:
    session, _ = await import_session(PI / name, MemoryRepo())
    path = await session.get_branch()
    previous = [e for e in path if isinstance(e, CompactionEntry)]
    assert len(previous) == FILES[name]
    before = (await session.build_context()).messages
    tokens_before = estimate_context_tokens(before)
    assert tokens_before > 100_000
    summarizer = RecordingSummarizer(ExtractiveSummarizer(max_tokens=2000))
    entry = await compact(session, mode=mode, summarizer=summarizer)  # type: ignore[arg-type]
    after = (await session.build_context()).messages
    tokens_after = estimate_context_tokens(after)

    assert entry.tokens_before == tokens_before
    assert tokens_after < tokens_before / 4
    assert tokens_after >= CompactionSettings().keep_recent_tokens
    assert find_tool_pair_problems(after) == []
    assert isinstance(after[0], CompactionSummaryMessage)
    assert not isinstance(after[1], ToolResultMessage)
    assert after[-1] == before[-1]
    summarised = summarizer.summarized_messages
    for gone in left_context(real(before), real(after)):
        assert contains(summarised, gone)
    if previous:
        assert summarizer.calls[0].previous_summary == previous[-1].summary
    # The summary uses the layout and each part stays within the extractive budget.
    for part in entry.summary.split("\n\n---\n\n"):
        assert len(part) <= 2000 * 4
    assert all(f"## {s}" in entry.summary for s in SUMMARY_SECTIONS)
    assert entry.details is not None and entry.details.modified_files

    # A second compaction after more work also shrinks the context and stays valid.
    await session.append_message(UserMessage(content="continue " + "x" * 100_000))
    await compact(session, mode=mode)  # type: ignore[arg-type]
    again = (await session.build_context()).messages
    assert find_tool_pair_problems(again) == []
    assert estimate_context_tokens(again) < tokens_after + 25_001
