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

from backends import BACKENDS
from session_files import SHARED, VENDORED
from sessiontree import SessionRepo
from sessiontree.interop import import_session
from sessiontree.interop.detect import detect_format_bytes
from sessiontree.interop.locations import Source
from sessiontree.interop.settling import settled_size
from sessiontree.interop.syncing import sync_sources
from sessiontree.repos import MemoryRepo
from test_import_incremental import snapshot

SETTLED_FORMATS = {"claude-code", "codex", "pi"}
"""Formats whose open turn is held back (Claude Code, Codex) or whose records never change
once written (pi): syncing them mid-write is exact."""

QUIET_S = 3600.0
"""The quiet period the syncs use: every cut, written just now, is fresh."""


def _files(base: Path) -> list[Path]:
    if not base.is_dir():
        return []
    return sorted(
        p
        for p in base.rglob("*.jsonl")
        if p.is_file() and p.parent.name in SETTLED_FORMATS and _jsonl(p)
    )


def _jsonl(path: Path) -> bool:
    """A file written a line at a time (some ``.jsonl`` files hold one JSON document)."""
    first = path.read_bytes().lstrip().split(b"\n", 1)[0]
    return first.startswith(b"{") and first.rstrip().endswith(b"}")


FILES = [*_files(VENDORED), *_files(SHARED)]


def line_ends(data: bytes) -> list[int]:
    """The byte offset after every line of ``data``."""
    return [i + 1 for i, b in enumerate(data) if b == 0x0A]


async def sync_in_steps(
    source: Path, cuts: list[int], repo: SessionRepo, fresh_repo: SessionRepo, work: Path
) -> None:
    """Sync ``source`` written up to each of ``cuts`` (fresh), then whole (left alone), into
    ``repo``; compare with one import of the whole file into ``fresh_repo``."""
    data = await asyncio.to_thread(source.read_bytes)
    fmt = detect_format_bytes(data, source)
    # a folder per file, named as the source: converters read names (Claude Code sub-agents)
    path = work / source.parent.name / source.name
    path.parent.mkdir(parents=True, exist_ok=True)
    sources = [Source(fmt, path)]
    for cut in cuts:
        path.write_bytes(data[:cut])
        report = await sync_sources(repo, sources, quiet_s=QUIET_S)
        assert report.failed == 0, report.to_dict()
        assert report.rows[0].held == cut - settled_size(data[:cut], fmt)
    path.write_bytes(data)
    past = time.time() - 2 * QUIET_S
    os.utime(path, (past, past))
    report = await sync_sources(repo, sources, quiet_s=QUIET_S)
    assert report.failed == 0 and report.rows[0].held == 0, report.to_dict()
    fresh, _ = await import_session(path, fresh_repo, format=fmt)
    stored = await repo.open(fresh.id)
    assert await snapshot(stored) == await snapshot(fresh), f"{source} cut at {cuts}"
    assert len(await repo.list()) == 1


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
    ends = line_ends(source.read_bytes())
    cuts = sorted({ends[min(int(f * len(ends)), len(ends) - 1)] for f in fractions})

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
    assert settled_size(source.read_bytes()[: ends[0]], "claude-code") == 0

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
    cut = next(e for e in reversed(line_ends(data)) if settled_size(data[:e], "claude-code") < e)
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
