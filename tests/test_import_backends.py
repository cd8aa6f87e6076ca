"""Imports land the same on every backend, and a failed import leaves nothing on any of them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from session_files import VENDORED, file_times
from sessiontree import SessionRepo
from sessiontree.entries import dump_entry
from sessiontree.errors import CorruptSessionError
from sessiontree.interop import import_session
from sessiontree.repos import MemoryRepo
from sessiontree.testing.builders import user
from sessiontree.testing.conformance import Reopen

SESSIONS = VENDORED
SAMPLES = [
    SESSIONS / "pi" / "agent-sessions_pi-small.v3.jsonl",
    SESSIONS / "claude-code" / "agent-a7c3dfb.jsonl",
    SESSIONS / "codex" / "sample_codex_session_simonw.jsonl",
    SESSIONS / "swe-agent-traj" / "function_calling_simple.traj",
    SESSIONS / "aider" / "mozgoslav.aider.chat.history.md",
]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.parent.name)
async def test_import_is_the_same_on_every_backend(repo: SessionRepo, path: Path) -> None:
    reference, _ = await import_session(path, MemoryRepo())
    session, report = await import_session(path, repo)
    reopened = await repo.open(session.id)
    want = [dump_entry(e) for e in await reference.get_entries()]
    assert [dump_entry(e) for e in await reopened.get_entries()] == want
    assert report.entries_imported == len(want)
    assert await reopened.get_leaf_id() == await reference.get_leaf_id()
    assert (await reopened.build_context()) == (await reference.build_context())


def _torn(tmp_path: Path) -> Path:
    data = SAMPLES[0].read_bytes().rstrip(b"\n")
    path = tmp_path / "torn-source.jsonl"
    path.write_bytes(data[:-30])
    return path


async def test_a_failed_import_creates_nothing(repo: SessionRepo, tmp_path: Path) -> None:
    path = _torn(tmp_path)
    with pytest.raises(CorruptSessionError):
        await import_session(path, repo)
    assert await repo.list() == []


# ----------------------------------------------------------------- the source's own times

DATED = [  # not in date order: list() must sort by the files' times, not the import order
    SESSIONS / "codex" / "sample_codex_session_simonw.jsonl",
    SESSIONS / "claude-code" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    SESSIONS / "pi" / "agent-sessions_pi-small.v3.jsonl",
    SESSIONS / "pi" / "pi-mono_large-session.v1.jsonl",
    SESSIONS / "claude-code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
]


async def test_imports_list_by_the_sources_own_times(repo: SessionRepo, reopen: Reopen) -> None:
    want = {}
    for path in DATED:
        session, _ = await import_session(path, repo)
        want[session.id] = file_times(path)
    newest_first = sorted(want, key=lambda sid: want[sid][1], reverse=True)
    assert newest_first != list(reversed(list(want)))  # the order differs from import order
    async with reopen() as other:
        infos = await other.list()
    assert [i.id for i in infos] == newest_first
    for info in infos:
        assert (info.created_at, info.modified_at) == want[info.id], info.id
    assert [i.id for i in await repo.list(limit=2, offset=1)] == newest_first[1:3]

    # a later append to the oldest moves it to now: it lists first, its created_at stays
    oldest = newest_first[-1]
    session = await repo.open(oldest)
    before = datetime.now(UTC)
    await session.append_message(user("a question a year later"))
    async with reopen() as other:
        infos = await other.list()
    assert [i.id for i in infos] == [oldest, *newest_first[:-1]]
    assert infos[0].created_at == want[oldest][0]
    # (a file system's clock may lag Python's by a tick: a second of slack)
    assert infos[0].modified_at >= before - timedelta(seconds=1) > want[newest_first[0]][1]


async def test_source_times_go_by_the_instant_not_the_text(
    repo: SessionRepo, tmp_path: Path
) -> None:
    # "10:00+02:00" sorts after "09:00Z" as text but is an hour earlier; a timestamp that is
    # not ISO 8601 names no instant and is left out
    lines = [
        '{"type":"session","version":3,"id":"zones","timestamp":"2025-01-01T07:00:00.000Z"}',
        '{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T09:00:00.000Z",'
        '"message":{"role":"user","content":"q"}}',
        '{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T10:00:00.000+02:00",'
        '"message":{"role":"user","content":"q2"}}',
        '{"type":"message","id":"c","parentId":"b","timestamp":"not a time",'
        '"message":{"role":"user","content":"q3"}}',
        '{"type":"message","id":"d","parentId":"c","timestamp":"2025-01-01T08:30:00.000Z",'
        '"message":{"role":"user","content":"q4"}}',
    ]
    path = tmp_path / "zones.jsonl"
    path.write_text("\n".join(lines) + "\n")
    session, _ = await import_session(path, repo)
    (info,) = await repo.list()
    assert info.id == session.id == "zones"
    assert info.created_at == datetime(2025, 1, 1, 8, 0, tzinfo=UTC)
    assert info.modified_at == datetime(2025, 1, 1, 9, 0, tzinfo=UTC)
    imported = (await session.get_metadata()).to_wire()["importedFrom"]
    assert (imported["createdAt"], imported["modifiedAt"]) == (
        "2025-01-01T10:00:00.000+02:00",
        "2025-01-01T09:00:00.000Z",
    )
