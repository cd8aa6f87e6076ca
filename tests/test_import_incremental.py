"""Importing a file again after it grew appends only its new records, and the session is
then what a fresh import of the whole file gives (docs/interop.md, "Importing again").

The property: for every growable session file (the vendored ones, and the collection and the
extra sets beside the checkout when present), import a prefix of its records, then the whole
file: the entries (ids and content), the leaf, the branch and the compactions equal those of
one import of the whole file. Checked on memory with hypothesis over files and cut points,
and on JSONL, SQLite and PostgreSQL stores over a few cuts of one file of each format.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _growing_files import (
    EXTRA,
    assert_equals_a_fresh_import,
    growable_files,
    snapshot,
    work_copy,
)
from backends import BACKENDS
from session_files import SHARED, VENDORED
from sessiontree import SessionRepo
from sessiontree.errors import AlreadyImportedError
from sessiontree.interop import import_session
from sessiontree.interop.detect import detect_format_bytes
from sessiontree.repos import MemoryRepo


def _all_files() -> list[Path]:
    return [
        p
        for p in [*growable_files(VENDORED), *growable_files(SHARED), *growable_files(EXTRA)]
        if not INEXACT & set(p.parts)
    ]


INEXACT = {"claude-code", "gemini-cli", "codex", "copilot-cli", "aider"}
"""Formats whose import of a record depends on records after it, so a prefix is not exact:
Claude Code (a side record without a time takes a later record's; parallel tool results are
put in call order), Gemini CLI (a later line with a record's id replaces the record, e.g. when
its tool calls finish), Codex (a reply's usage is read from the ``token_count`` event after
it), Copilot CLI (parallel tool results are put in call order), Aider (a reply can hold
``#### `` lines like a user's, so a cut of the test may split a reply). An append-only store
keeps the record as first read; :func:`test_a_grown_file_of_a_rewriting_agent_stores_nothing_twice`
checks what holds. A sync holds such a file's open turn back until it is finished, which is
exact (test_sync_exact.py)."""


def record_ends(data: bytes, path: Path) -> list[int]:
    """Byte offsets where a record of the file ends: after each line of a JSONL file; before
    each user message (a run of ``#### `` lines) or chat header of an Aider history (the
    agent writes a message whole)."""
    ends: list[int] = []
    pos = 0
    if path.suffix == ".md":
        previous = b""
        fenced = False  # inside a ``` block of a reply, a "#### " line is the reply's text
        for line in data.splitlines(keepends=True):
            if line.startswith(b"```"):
                fenced = not fenced
            heading = line.startswith(b"# aider chat started") or (
                not fenced
                and line.startswith(b"#### ")
                and not previous.startswith(b"#### ")
                and not previous.strip()
            )
            if heading and data[:pos].strip():
                ends.append(pos)
            pos += len(line)
            previous = line
        return [*ends, len(data)]
    lines = data.splitlines(keepends=True)
    fmt = detect_format_bytes(data, path)
    if fmt in ("claude-code", "codex"):
        # both write one reply over several lines (Claude Code a block each, Codex its text
        # then each call) and the importer makes one message of a reply, so the records are
        # whole between turns: before each prompt the user typed (Codex: each turn's context; a file
        # without them only whole)
        starts = _is_prompt if fmt == "claude-code" else _is_codex_turn
        for line in lines:
            if pos and starts(line):
                ends.append(pos)
            pos += len(line)
        return [*ends, len(data)]
    for line in lines:
        pos += len(line)
        if line.strip():
            ends.append(pos)
    return ends


def _is_codex_turn(line: bytes) -> bool:
    """A Codex turn starts with its ``turn_context`` (the usage of the previous reply, read
    from the ``token_count`` after it, is written before)."""
    try:
        obj = json.loads(line)
    except ValueError:
        return False
    return isinstance(obj, dict) and obj.get("type") == "turn_context"


def _is_prompt(line: bytes) -> bool:
    try:
        obj = json.loads(line)
    except ValueError:
        return False
    if not isinstance(obj, dict) or obj.get("type") != "user":
        return False
    content = (obj.get("message") or {}).get("content")
    if isinstance(content, list):
        return not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    return isinstance(content, str)


async def grow_and_compare(
    source: Path, cuts: list[int], grown_repo: SessionRepo, fresh_repo: SessionRepo, work: Path
) -> None:
    """Import ``source`` cut at each of ``cuts`` (bytes) in turn into ``grown_repo``, then
    whole; compare with one import of the whole file into ``fresh_repo``."""
    data = await asyncio.to_thread(source.read_bytes)
    fmt = detect_format_bytes(data, source)  # a short prefix may not show it yet
    path = work_copy(source, work)
    first_id = None
    for cut in [*cuts, len(data)]:
        path.write_bytes(data[:cut])
        try:
            session, report = await import_session(path, grown_repo, format=fmt, lenient=True)
        except AlreadyImportedError as exc:  # the cut added nothing the session lacks
            assert exc.session_id is not None
            session = await grown_repo.open(exc.session_id)
        else:
            assert first_id is None or (report.extended and session.id == first_id)
        first_id = session.id
        await session.close()
    await assert_equals_a_fresh_import(grown_repo, path, fresh_repo, fmt, f"{source} cut at {cuts}")


FILES = _all_files()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.sampled_from(FILES),
    st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=3),
)
def test_a_grown_file_imports_to_what_a_fresh_import_gives(
    source: Path, fractions: list[float]
) -> None:
    ends = record_ends(source.read_bytes(), source)
    cuts = sorted({ends[min(int(f * len(ends)), len(ends) - 1)] for f in fractions})

    async def run() -> None:
        with tempfile.TemporaryDirectory() as work:
            await grow_and_compare(source, cuts, MemoryRepo(), MemoryRepo(), Path(work))

    asyncio.run(run())


def test_every_growable_file_imports_whole_after_each_half() -> None:
    """Every file once, cut after its first record and at its middle (the cuts most likely
    to split a turn)."""

    async def run() -> None:
        for source in FILES:
            ends = record_ends(source.read_bytes(), source)
            cuts = sorted({ends[0], ends[len(ends) // 2]})
            with tempfile.TemporaryDirectory() as work:
                await grow_and_compare(source, cuts, MemoryRepo(), MemoryRepo(), Path(work))

    asyncio.run(run())


ONE_OF_EACH = ["pi/pi-mono_before-compaction.v1.jsonl", "pi/agent-sessions_pi-small.v3.jsonl"]


@pytest.mark.parametrize("backend", ["jsonl", "sqlite", "postgres"])
@pytest.mark.parametrize("relative", ONE_OF_EACH)
async def test_a_grown_file_on_each_backend(backend: str, relative: str, tmp_path: Path) -> None:
    source = VENDORED / relative
    ends = record_ends(source.read_bytes(), source)
    cuts = sorted({ends[len(ends) // 3], ends[2 * len(ends) // 3]})
    opener = BACKENDS[backend].open
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with opener(tmp_path / "a") as grown, opener(tmp_path / "b") as fresh:
        await grow_and_compare(source, cuts, grown, fresh, tmp_path / "work")


async def test_a_gemini_file_rewritten_in_place_adds_only_its_new_messages(
    tmp_path: Path,
) -> None:
    """Gemini CLI rewrites its whole JSON each turn: the records it held before are
    recognised by their ids, never stored twice."""
    messages = [
        {
            "id": f"m{i}",
            "timestamp": f"2026-01-01T00:00:0{i}.000Z",
            "type": "user" if i % 2 == 0 else "gemini",
            "content": f"message {i}",
        }
        for i in range(4)
    ]
    doc = {
        "sessionId": "g-1",
        "projectHash": "p",
        "startTime": "2026-01-01T00:00:00.000Z",
        "lastUpdated": "2026-01-01T00:00:01.000Z",
        "messages": messages[:2],
    }
    path = tmp_path / "session-g-1.json"
    path.write_text(json.dumps(doc, indent=2))
    repo = MemoryRepo()
    first, _ = await import_session(path, repo)
    doc["messages"] = messages
    doc["lastUpdated"] = "2026-01-01T00:00:03.000Z"
    path.write_text(json.dumps(doc, indent=2))  # rewritten whole, as the agent does

    again, report = await import_session(path, repo)

    fresh, _ = await import_session(path, MemoryRepo())
    assert again.id == first.id and report.extended and report.entries_imported == 2
    assert await snapshot(again) == await snapshot(fresh)


async def test_a_stored_session_of_another_format_is_never_extended(tmp_path: Path) -> None:
    """A file whose session id is taken by a session imported from another format (or
    written here) is refused; nothing is appended to it."""
    repo = MemoryRepo()
    taken = await repo.create(id="t3")
    await taken.append_message({"role": "user", "content": "mine"})
    header = {"type": "session", "version": 3, "id": "t3", "timestamp": "2026-01-01T00:00:00Z"}
    line = {
        "type": "message",
        "id": "a1",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "hi", "timestamp": 1767225601000},
    }
    path = tmp_path / "t3.jsonl"
    path.write_text(json.dumps(header) + "\n" + json.dumps(line) + "\n")

    with pytest.raises(AlreadyImportedError, match="not an import"):
        await import_session(path, repo)

    assert len(await taken.get_entries()) == 1


@pytest.mark.parametrize(
    "relative",
    [
        "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
        "claude-code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
        "gemini-cli/test_conversation_gemini.jsonl",
        "codex/sample_codex_session_simonw.jsonl",
    ],
)
async def test_a_grown_file_of_a_rewriting_agent_stores_nothing_twice(
    relative: str, tmp_path: Path
) -> None:
    """Claude Code, Gemini CLI and Codex, cut at record boundaries: one session, every entry of a
    fresh import is in it (same ids), none twice, and it ends on the same leaf."""
    source = VENDORED / relative
    data = source.read_bytes()
    ends = record_ends(data, source)
    path = tmp_path / source.name
    repo = MemoryRepo()
    fmt = detect_format_bytes(data, source)
    for cut in [ends[0], ends[len(ends) // 2], len(data)]:
        path.write_bytes(data[:cut])
        await import_session(path, repo, format=fmt, lenient=True)
    fresh, _ = await import_session(path, MemoryRepo(), lenient=True)
    grown = await repo.open(fresh.id)
    ids = [e.id for e in await grown.get_entries()]
    assert len(ids) == len(set(ids))
    assert {e.id for e in await fresh.get_entries()} <= set(ids)
    assert await grown.get_leaf_id() == await fresh.get_leaf_id()
    assert len(await repo.list()) == 1
