"""Imports land the same on every backend, and a failed import leaves nothing on any of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from session_files import VENDORED
from sessiontree import MemoryRepo, SessionRepo, import_session
from sessiontree.entries import dump_entry
from sessiontree.errors import CorruptSessionError

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
