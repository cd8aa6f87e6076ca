"""A sync run at any moment of an agent's writing, then once the file is finished, stores
exactly what one import of the finished file stores (docs/interop.md, "sync").

The property: a real session file is written up to a cut at a line boundary (as an agent
would leave it mid-reply), synced while it is fresh (modified just now: its open turn is held
back), grown to the next cut and synced again, and finally written whole, left alone (its
modification time put ``quiet_s`` in the past) and synced: the entries (ids, parents,
content), the leaf, the branch, the compactions and the context equal those of one fresh
import. Checked with hypothesis over every line of every vendored Claude Code, Codex and pi
file (and the collection beside the checkout when present), on memory; and on JSONL, SQLite
and PostgreSQL over a few cuts of a Claude Code and a Codex file.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _growing_files import (
    EXTRA,
    assert_equals_a_fresh_import,
    cut_points,
    growable_files,
    line_ends,
    snapshot,
    work_copy,
)
from backends import BACKENDS
from session_files import SHARED, VENDORED
from sessiontree import SessionRepo
from sessiontree.entries import MessageEntry
from sessiontree.interop import import_session
from sessiontree.interop.detect import Format, detect_format_bytes
from sessiontree.interop.locations import Source
from sessiontree.interop.settling import settled
from sessiontree.interop.syncing import sync_sources
from sessiontree.repos import MemoryRepo

SETTLED_FORMATS = {"claude-code", "codex", "pi", "gemini-cli", "copilot-cli", "aider"}
"""Formats whose open turn is held back (Claude Code, Codex, Gemini CLI, Copilot CLI, Aider)
or whose records never change once written (pi): syncing them mid-write is exact."""

QUIET_S = 3600.0
"""The quiet period the syncs use: every cut, written just now, is fresh."""

FILES = list(
    {
        p.name + p.parent.name: p
        for p in reversed(
            [
                *growable_files(VENDORED, SETTLED_FORMATS),
                *growable_files(SHARED, SETTLED_FORMATS),
                *growable_files(EXTRA / "set3", SETTLED_FORMATS - {"claude-code", "codex", "pi"}),
            ]
        )
    }.values()
)
"""Every line-written file of those formats, once (the vendored copy of a file the
collection holds too): vendored, in the collection, and the extra set of the formats with
the newest rules."""


async def sync_in_steps(
    source: Path, cuts: list[int], repo: SessionRepo, fresh_repo: SessionRepo, work: Path
) -> None:
    """Sync ``source`` written up to each of ``cuts`` (fresh), then whole (left alone), into
    ``repo``; compare with one import of the whole file into ``fresh_repo``."""
    data = await asyncio.to_thread(source.read_bytes)
    fmt = detect_format_bytes(data, source)
    path = work_copy(source, work)
    sources = [Source(fmt, path)]
    for cut in cuts:
        path.write_bytes(data[:cut])
        report = await sync_sources(repo, sources, quiet_s=QUIET_S)
        assert report.failed == 0, report.to_dict()
        assert report.rows[0].held == cut - len(settled(data[:cut], fmt))
    await sync_left_alone(repo, path, data, fmt)
    await assert_equals_a_fresh_import(repo, path, fresh_repo, fmt, f"{source} cut at {cuts}")


async def sync_left_alone(repo: SessionRepo, path: Path, data: bytes, fmt: Format) -> None:
    """Write ``data`` at ``path``, date it ``quiet_s`` back and sync it: stored whole."""
    await asyncio.to_thread(path.write_bytes, data)
    past = time.time() - 2 * QUIET_S
    os.utime(path, (past, past))
    report = await sync_sources(repo, [Source(fmt, path)], quiet_s=QUIET_S)
    assert report.failed == 0 and report.rows[0].held == 0, report.to_dict()


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.sampled_from(FILES),
    st.lists(st.floats(0, 1, allow_nan=False), min_size=2, max_size=4),
)
def test_syncing_mid_write_then_finished_equals_a_fresh_import(
    source: Path, fractions: list[float]
) -> None:
    cuts = cut_points(source.read_bytes(), fractions)

    async def run() -> None:
        with tempfile.TemporaryDirectory() as work:
            await sync_in_steps(source, cuts, MemoryRepo(), MemoryRepo(), Path(work))

    asyncio.run(run())


@pytest.mark.parametrize("source", FILES, ids=lambda p: p.name)
def test_every_line_of_a_small_file_or_every_tenth_of_a_large_one(source: Path) -> None:
    """Each file synced after every line (a large one after every tenth of its lines)."""
    ends = line_ends(source.read_bytes())
    step = 1 if len(ends) <= 60 else len(ends) // 10

    async def run() -> None:
        with tempfile.TemporaryDirectory() as work:
            await sync_in_steps(source, ends[::step], MemoryRepo(), MemoryRepo(), Path(work))

    asyncio.run(run())


def test_an_undated_first_line_waits_for_the_date_it_takes(tmp_path: Path) -> None:
    """Regression (the collection's fe5e1c67 cut after its first line, then its second): a
    leading ``summary`` line has no date and takes the first dated record's, so it is not
    settled until that record is in the file (else it was stored with the Unix epoch)."""
    session = "fe5e1c67-53e7-4862-81ae-d0e013e3270b"
    lines = [
        {"type": "summary", "summary": "Setup", "leafUuid": "u-2"},
        {
            "parentUuid": None,
            "type": "user",
            "sessionId": session,
            "message": {"role": "user", "content": "hello"},
            "uuid": "u-1",
            "timestamp": "2025-09-03T00:52:31.217Z",
        },
        {
            "parentUuid": "u-1",
            "type": "assistant",
            "sessionId": session,
            "message": {
                "id": "m-1",
                "role": "assistant",
                "model": "claude-sonnet-4",
                "content": [{"type": "text", "text": "hi"}],
                "stop_reason": "end_turn",
            },
            "uuid": "u-2",
            "timestamp": "2025-09-03T00:52:35.613Z",
        },
        {"type": "last-prompt", "sessionId": session, "lastPrompt": "hello"},
    ]
    source = tmp_path / "claude-code" / f"{session}.jsonl"
    source.parent.mkdir()
    source.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    ends = line_ends(source.read_bytes())
    assert settled(source.read_bytes()[: ends[0]], "claude-code") == b""

    async def run() -> None:
        await sync_in_steps(source, ends[:2], MemoryRepo(), MemoryRepo(), tmp_path / "work")

    asyncio.run(run())


ON_BACKENDS = [
    "claude-code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "codex/sample_codex_session_simonw.jsonl",
]


@pytest.mark.parametrize("backend", ["jsonl", "sqlite", "postgres"])
@pytest.mark.parametrize("relative", ON_BACKENDS)
async def test_syncing_mid_write_on_each_backend(
    backend: str, relative: str, tmp_path: Path
) -> None:
    source = VENDORED / relative
    ends = line_ends(source.read_bytes())
    cuts = [ends[len(ends) // 4], ends[len(ends) // 2], ends[3 * len(ends) // 4]]
    opener = BACKENDS[backend].open
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with opener(tmp_path / "a") as repo, opener(tmp_path / "b") as fresh:
        await sync_in_steps(source, cuts, repo, fresh, tmp_path / "work")


async def test_watch_stores_a_held_back_turn_once_the_file_is_left_alone(tmp_path: Path) -> None:
    """A Claude Code file left in the middle of its last turn: the watch's first round holds the
    turn back; with no further write, the file is synced again after ``quiet_s`` and the
    session then equals a fresh import."""
    from sessiontree.interop.syncing import SyncReport
    from sessiontree.interop.watching import watch_sources

    source = VENDORED / "claude-code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    data = source.read_bytes()
    cut = next(e for e in reversed(line_ends(data)) if len(settled(data[:e], "claude-code")) < e)
    path = tmp_path / "src" / source.name
    path.parent.mkdir()
    path.write_bytes(data[:cut])
    reports: list[SyncReport] = []
    stop = asyncio.Event()

    def on_report(report: SyncReport) -> None:
        reports.append(report)
        if report.rows and report.rows[0].held == 0:
            stop.set()

    repo = MemoryRepo()
    watch = watch_sources(
        repo,
        [Source("claude-code", path)],
        on_report=on_report,
        stop=stop,
        quiet_s=0.5,
        rescan_ms=50,
    )
    await asyncio.wait_for(watch, 30)
    assert reports[0].rows[0].held > 0 and reports[-1].rows[0].held == 0
    fresh, _ = await import_session(path, MemoryRepo(), format="claude-code")
    assert await snapshot(await repo.open(fresh.id)) == await snapshot(fresh)


LIVE_RULES = {"gemini-cli", "copilot-cli", "aider"}
"""The formats whose open-turn rules :func:`test_every_boundary_of_a_live_file` checks line by
line (Claude Code and Codex are checked by the tests above)."""

EVERY_LINE_UP_TO = 120
"""A file of more lines is cut at every n-th line, for about this many cuts."""


@pytest.mark.parametrize(
    "source", [p for p in FILES if LIVE_RULES & set(p.parts)], ids=lambda p: p.name
)
async def test_every_boundary_of_a_live_file(source: Path, tmp_path: Path) -> None:
    """The file grows a line at a time (every n-th line for a long one), synced fresh after
    each: the store holds exactly a fresh import of the settled part (the open turn held
    back), and once the file is left alone, exactly a fresh import of the whole. Some cut
    falls inside a turn (something is held back), so the rule is exercised."""
    data = await asyncio.to_thread(source.read_bytes)
    fmt = detect_format_bytes(data, source)
    ends = line_ends(data)
    step = max(1, len(ends) // EVERY_LINE_UP_TO)
    path = work_copy(source, tmp_path / "work")
    part = work_copy(source, tmp_path / "settled")
    repo = MemoryRepo()
    held_back = 0
    for cut in ends[::step]:
        await asyncio.to_thread(path.write_bytes, data[:cut])
        report = await sync_sources(repo, [Source(fmt, path)], quiet_s=QUIET_S)
        assert report.failed == 0, report.to_dict()
        done = settled(data[:cut], fmt)
        assert report.rows[0].held == cut - len(done)
        held_back += report.rows[0].held > 0
        if done:
            await asyncio.to_thread(part.write_bytes, done)
            what = f"{source} cut at {cut}"
            await assert_equals_a_fresh_import(repo, part, MemoryRepo(), fmt, what)
    assert held_back > 0
    await sync_left_alone(repo, path, data, fmt)
    await assert_equals_a_fresh_import(repo, path, MemoryRepo(), fmt, f"{source} whole")


def _gemini_document(data: bytes) -> bytes:
    """The one-document recording Gemini CLI rewrites each turn, holding what the JSONL
    recording ``data`` holds: the header with its ``$set`` lines applied, and each message
    record's last copy in the place of its first."""
    header: dict[str, object] = {}
    messages: dict[str, object] = {}
    for line in data.splitlines():
        obj = orjson.loads(line)
        if "$set" in obj:
            header.update(obj["$set"])
        elif "id" in obj:
            messages[obj["id"]] = obj
        else:
            header.update(obj)
    return orjson.dumps({**header, "messages": list(messages.values())}, option=orjson.OPT_INDENT_2)


async def test_a_rewritten_gemini_document_holds_back_its_open_reply(tmp_path: Path) -> None:
    """Gemini CLI's older layout is one JSON document rewritten after every write: the
    states it went through (here: those of the vendored JSONL recording, as documents) are
    synced fresh; a document whose newest message is a reply (its usage and tool calls still
    to come) is stored without it; left alone, the whole equals a fresh import."""
    jsonl = (VENDORED / "gemini-cli" / "test_conversation_gemini.jsonl").read_bytes()
    states = [_gemini_document(jsonl[:cut]) for cut in line_ends(jsonl)]
    path = tmp_path / "work" / "session-2026-04-23T00-00-gemini.json"
    path.parent.mkdir()
    part = tmp_path / "settled" / path.name
    part.parent.mkdir()
    repo = MemoryRepo()
    held = []
    for state in states:
        await asyncio.to_thread(path.write_bytes, state)
        report = await sync_sources(repo, [Source("gemini-cli", path)], quiet_s=QUIET_S)
        assert report.failed == 0, report.to_dict()
        held.append(report.rows[0].held)
        await asyncio.to_thread(part.write_bytes, settled(state, "gemini-cli"))
        await assert_equals_a_fresh_import(repo, part, MemoryRepo(), "gemini-cli", "a state")
    assert any(held) and not all(held)
    await sync_left_alone(repo, path, states[-1], "gemini-cli")
    await assert_equals_a_fresh_import(repo, path, MemoryRepo(), "gemini-cli", "whole")


def test_a_document_without_an_open_reply_is_settled_whole() -> None:
    """A Gemini document whose newest message is the user's, and a Copilot CLI legacy state
    (written whole), are settled as they are: the same bytes."""
    doc = orjson.dumps(
        {"sessionId": "g", "projectHash": "p", "messages": [{"id": "u", "type": "user"}]}
    )
    assert settled(doc, "gemini-cli") is doc
    legacy = (VENDORED / "copilot-cli" / "test_conversation_copilot.json").read_bytes()
    assert settled(legacy, "copilot-cli") == legacy


async def test_an_aider_answer_ends_on_its_last_line_not_past_the_file(tmp_path: Path) -> None:
    """Regression (elengenix synced up to a console line): the empty text after a history's
    final newline was read as a line of its last run, so an answer stored while it was last
    named a line past it (``lastLine`` 34 where a fresh import says 33)."""
    path = tmp_path / ".aider.chat.history.md"
    path.write_text("# aider chat started at 2026-05-04 01:24:27\n\n#### hi  \n\nhello\n\n")
    session, _ = await import_session(path, MemoryRepo(), format="aider")
    answer = [e for e in await session.get_entries() if isinstance(e, MessageEntry)][-1]
    assert (answer.model_extra or {})["source"] == {"format": "aider", "line": 5, "lastLine": 6}
