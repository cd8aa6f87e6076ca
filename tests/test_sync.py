"""``sync``: default places, new / updated / unchanged / gone / failed, positions stored with
the entries, kill -9 and two syncs at once (docs/interop.md, "sync")."""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from backends import BACKENDS, shared_store_url
from session_files import VENDORED
from sessiontree import open_repo
from sessiontree.interop import import_session
from sessiontree.interop.locations import (
    Source,
    default_locations,
    default_sources,
    is_session_file,
    session_files,
)
from sessiontree.interop.positions import position_of
from sessiontree.interop.syncing import SyncReport, sync_sources
from sessiontree.repos.base import SessionRepo

PI_SMALL = VENDORED / "pi" / "agent-sessions_pi-small.v3.jsonl"


def _pi_line(entry_id: str, parent: str | None, text: str) -> bytes:
    record = {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:05.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1767225605000},
    }
    return json.dumps(record).encode() + b"\n"


async def store_state(repo: SessionRepo) -> dict[str, Any]:
    """Every session's entries (wire form, append order) and leaf."""
    out: dict[str, Any] = {}
    for info in await repo.list():
        session = await repo.open(info.id)
        try:
            entries = [e.to_wire() for e in await session.get_entries()]
            out[info.id] = {"entries": entries, "leaf": await session.get_leaf_id()}
        finally:
            await session.close()
    return out


@pytest.mark.parametrize("backend", list(BACKENDS))
async def test_sync_new_then_unchanged_then_grown_then_gone(backend: str, tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(VENDORED / "pi", src / "pi")
    shutil.copytree(VENDORED / "codex", src / "codex")
    sources = [Source(None, src)]
    (tmp_path / "store").mkdir()
    async with BACKENDS[backend].open(tmp_path / "store") as repo:
        first = await sync_sources(repo, sources)
        assert (first.new, first.updated, first.failed) == (4, 0, 0)
        again = await sync_sources(repo, sources)
        assert (again.new, again.updated, again.unchanged, again.entries_added) == (0, 0, 4, 0)

        grown = src / "pi" / PI_SMALL.name
        last = json.loads(grown.read_bytes().splitlines()[-1])["id"]
        with grown.open("ab") as f:
            f.write(_pi_line("more-1", last, "one more"))
        third = await sync_sources(repo, sources)
        assert (third.updated, third.unchanged, third.entries_added) == (1, 3, 1)
        row = next(r for r in third.rows if r.status == "updated")
        fresh_session, _ = await import_session(grown, repo_fresh := _memory())
        stored = await repo.open(row.session_id or "")
        assert [e.id for e in await stored.get_entries() if position_of(e) is None] == [
            e.id for e in await fresh_session.get_entries()
        ]
        assert await stored.get_leaf_id() == "more-1"
        await stored.close()
        await repo_fresh.close()

        (src / "codex" / "sample_codex_session_simonw.jsonl").unlink()
        fourth = await sync_sources(repo, sources)
        assert (fourth.gone, fourth.unchanged) == (1, 3)
        gone = next(r for r in fourth.rows if r.status == "gone")
        assert (await repo.open(gone.session_id or "")).id == gone.session_id  # still stored
        assert len(await repo.list()) == 4


def _memory() -> SessionRepo:
    from sessiontree.repos import MemoryRepo

    return MemoryRepo()


async def test_an_unchanged_file_is_not_read(tmp_path: Path) -> None:
    """Same size, time and inode: the sync does not read the file, so bytes changed behind
    its back (times put back) are not seen."""
    path = tmp_path / PI_SMALL.name
    shutil.copy(PI_SMALL, path)
    async with open_repo(f"sqlite:///{tmp_path / 's.db'}") as repo:
        await sync_sources(repo, [Source("pi", path)])
        st = path.stat()
        data = path.read_bytes()
        path.write_bytes(data.replace(b'"content"', b'"CONTENT"'))  # same size
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        report = await sync_sources(repo, [Source("pi", path)])
        assert report.rows[0].status == "unchanged" and report.rows[0].format is None
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # now it is read
        report = await sync_sources(repo, [Source("pi", path)])
        assert report.rows[0].status in ("failed", "unchanged") and report.rows[0].format != ""


async def test_a_line_being_written_waits_for_the_next_sync(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = PI_SMALL.read_bytes()
    last = json.loads(data.splitlines()[-1])["id"]
    torn = _pi_line("late", last, "half written")
    path.write_bytes(data + torn[:20])
    async with open_repo("memory://") as repo:
        first = await sync_sources(repo, [Source(None, path)])
        assert first.rows[0].status == "new" and first.failed == 0
        path.write_bytes(data + torn)
        second = await sync_sources(repo, [Source(None, path)])
        assert second.rows[0].status == "updated" and second.entries_added == 1


async def test_a_file_of_another_session_with_the_same_id_fails_alone(tmp_path: Path) -> None:
    async with open_repo("memory://") as repo:
        header = json.loads(PI_SMALL.read_bytes().splitlines()[0])
        await repo.create(id=header["id"])  # written here, not imported
        other = tmp_path / "ok.jsonl"
        other.write_bytes(PI_SMALL.read_bytes().replace(header["id"].encode(), b"another-id"))
        report = await sync_sources(repo, [Source(None, PI_SMALL), Source(None, other)])
        assert [r.status for r in report.rows] == ["failed", "new"]
        assert str(PI_SMALL) in (report.rows[0].error or "")


def test_default_locations_honour_the_environment(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"),
        "CODEX_HOME": str(tmp_path / "cx"),
        "PI_CODING_AGENT_DIR": str(tmp_path / "pi"),
        "COPILOT_HOME": str(tmp_path / "gh"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "OPENCLAW_STATE_DIR": str(tmp_path / "claw"),
    }
    paths = {(loc.agent, loc.path) for loc in default_locations(env)}
    assert ("Claude Code", tmp_path / "cc" / "projects") in paths
    assert ("Codex", tmp_path / "cx" / "sessions") in paths
    assert ("Codex", tmp_path / "cx" / "archived_sessions") in paths
    assert ("pi", tmp_path / "pi" / "sessions") in paths
    assert ("Copilot CLI", tmp_path / "gh" / "session-state") in paths
    assert ("OpenCode", tmp_path / "data" / "opencode") in paths
    assert ("OpenClaw", tmp_path / "claw" / "agents") in paths
    assert ("Gemini CLI", tmp_path / ".gemini" / "tmp") in paths
    agents = {loc.agent for loc in default_locations(env)}
    assert agents >= {"Cline", "Roo Code"}
    assert default_sources(env) == []  # none exists yet
    (tmp_path / "cx" / "sessions").mkdir(parents=True)
    assert default_sources(env) == [Source("codex", tmp_path / "cx" / "sessions")]


def test_defaults_without_variables_are_under_home(tmp_path: Path) -> None:
    paths = {loc.path for loc in default_locations({}, home=tmp_path)}
    assert tmp_path / ".claude" / "projects" in paths
    assert tmp_path / ".codex" / "sessions" in paths
    assert tmp_path / ".pi" / "agent" / "sessions" in paths
    assert tmp_path / ".openclaw" / "agents" in paths
    assert tmp_path / ".copilot" / "session-state" in paths


def test_which_files_of_a_folder_are_session_files(tmp_path: Path) -> None:
    assert is_session_file(Path("p/x.jsonl"))
    assert is_session_file(Path("proj/.aider.chat.history.md"))
    assert is_session_file(Path("t/1/api_conversation_history.json"))
    assert not is_session_file(Path("t/1/ui_messages.json"))
    assert not is_session_file(Path(".git/x.jsonl"))
    assert is_session_file(Path("h/chats/session-1.json"), "gemini-cli")
    assert not is_session_file(Path("h/logs.json"), "gemini-cli")
    assert is_session_file(Path("storage/session/p/ses_1.json"), "opencode")
    assert not is_session_file(Path("storage/message/ses_1/msg_1.json"), "opencode")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.jsonl").write_text("{}\n")
    (tmp_path / "a" / "notes.txt").write_text("no")
    found = [p for p, _ in session_files(Source(None, tmp_path))]
    assert found == [tmp_path / "a" / "x.jsonl"]
    assert list(session_files(Source(None, tmp_path / "missing"))) == []


def test_sync_cli_on_a_home_laid_out_like_the_agents(tmp_path: Path) -> None:
    """``sessiontree sync --json`` with HOME holding Claude Code, Codex and pi folders and an
    Aider history named with --source."""
    home = tmp_path / "home"
    claude = home / ".claude" / "projects" / "-work-demo"
    codex = home / ".codex" / "sessions" / "2026" / "01" / "02"
    pi = home / ".pi" / "agent" / "sessions" / "--work-demo--"
    for folder in (claude, codex, pi):
        folder.mkdir(parents=True)
    # copied with their modification times: sessions the agents finished a while ago (a file
    # modified just now would have its open turn held back)
    shutil.copy2(VENDORED / "claude-code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", claude)
    shutil.copy2(VENDORED / "codex" / "sample_codex_session_simonw.jsonl", codex)
    shutil.copy2(PI_SMALL, pi)
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(
        VENDORED / "aider" / "mozgoslav.aider.chat.history.md", project / ".aider.chat.history.md"
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_HOME", "_DIR"))}
    env.update(HOME=str(home), SESSIONTREE_URL=f"sqlite:///{tmp_path / 's.db'}")
    argv = [sys.executable, "-m", "sessiontree", "sync", "--json", "--source", f"aider={project}"]
    first = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert first.returncode == 0, first.stderr
    out = json.loads(first.stdout)
    assert {k: out[k] for k in ("new", "updated", "unchanged", "gone", "failed")} == {
        "new": 4,
        "updated": 0,
        "unchanged": 0,
        "gone": 0,
        "failed": 0,
    }
    assert out["entries_added"] > 100
    again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert json.loads(again.stdout)["unchanged"] == 4


def _sync_process(url: str, src: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "sessiontree", "--store", url, "sync", "--no-defaults"]
    return subprocess.Popen(
        [*argv, "--json", "--source", str(src)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _corpus(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    for folder in ("pi", "claude-code", "codex", "aider", "copilot-cli"):
        shutil.copytree(VENDORED / folder, src / folder)
    return src


async def _state_at(url: str) -> dict[str, Any]:
    async with open_repo(url) as repo:
        return await store_state(repo)


@pytest.mark.parametrize("backend", ["sqlite", "jsonl", "postgres"])
def test_kill_9_during_sync_then_sync_again_is_one_clean_sync(backend: str, tmp_path: Path) -> None:
    src = _corpus(tmp_path)
    rng = random.Random(7)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        shared_store_url(backend, tmp_path / "a") as killed,
        shared_store_url(backend, tmp_path / "b") as clean,
    ):
        for _ in range(4):
            proc = _sync_process(killed, src)
            time.sleep(rng.uniform(0.3, 2.5))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert _sync_process(killed, src).wait(timeout=300) == 0
        assert _sync_process(clean, src).wait(timeout=300) == 0
        assert asyncio.run(_state_at(killed)) == asyncio.run(_state_at(clean))


@pytest.mark.parametrize("backend", ["sqlite", "jsonl", "postgres"])
def test_two_syncs_at_once_store_nothing_twice(backend: str, tmp_path: Path) -> None:
    src = _corpus(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        shared_store_url(backend, tmp_path / "a") as both,
        shared_store_url(backend, tmp_path / "b") as clean,
    ):
        procs = [_sync_process(both, src), _sync_process(both, src)]
        assert [p.wait(timeout=300) for p in procs] == [0, 0]
        assert _sync_process(clean, src).wait(timeout=300) == 0
        assert asyncio.run(_state_at(both)) == asyncio.run(_state_at(clean))


def test_report_counts_come_from_the_rows() -> None:
    from sessiontree.interop.syncing import SourceRow

    report = SyncReport(
        [
            SourceRow(Path("/a"), "new", entries_added=3),
            SourceRow(Path("/b"), "failed", error="bad"),
            SourceRow(Path("/c"), "unchanged"),
        ]
    )
    d = report.to_dict()
    assert (d["new"], d["failed"], d["unchanged"], d["entries_added"]) == (1, 1, 1, 3)
    assert d["sources"][1]["error"] == "bad"
