"""``sessiontree sync`` against the real agents (docs/interop.md "Tested against the real agents").

Claude Code, Codex and pi (tests/real_agents.py) each run non-interactively into a throwaway
HOME; ``sessiontree sync`` then runs with that HOME's environment (``CLAUDE_CONFIG_DIR``,
``CODEX_HOME``, ``PI_CODING_AGENT_DIR``), so it finds the session file at the agent's default
place by itself. The session must arrive whole (every prompt and answer, each tool call
paired with its result, the model, the leaf on the last answer). A second ``-p`` turn
appended to the same file (resume), and for pi a fork into a new file, are then synced
again: only the new entries are added, to the same session, and the session equals a fresh
import of the whole file. ``sync --watch`` must have an agent's turn in the store within 1 s
of the agent writing it. Each agent runs on a different store, so SQLite, JSONL and
PostgreSQL are all covered by real agents' files.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backends import shared_store_url, unavailable
from real_agents import AgentSandbox, missing
from sessiontree import open_repo
from sessiontree.backends.memory.repo import MemoryRepo
from sessiontree.entries import Entry, MessageEntry
from sessiontree.interop import import_session
from sessiontree.interop.positions import position_of
from sessiontree.repos.base import SessionRepo
from test_real_agents import PROMPTS, check_whole, text_of

STORE_OF = {"claude-code": "sqlite", "codex": "jsonl", "pi": "postgres"}
"""The store each agent's sessions are synced into (all three backends get real files)."""
LATENCY_S = 1.0
"""The promise of ``sync --watch``: a record an agent wrote is in the store within this."""
SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(params=list(STORE_OF))
def agent(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    reason = missing(name)
    if reason is not None:
        unavailable(f"{name}: {reason}")
    return name


@pytest.fixture
def store(agent: str, tmp_path: Path) -> Iterator[str]:
    with shared_store_url(STORE_OF[agent], tmp_path) as url:
        yield url


def _sync_argv(url: str, *more: str) -> list[str]:
    return [sys.executable, "-m", "sessiontree", "--store", url, "sync", "--json", *more]


def _sync_env(box: AgentSandbox) -> dict[str, str]:
    """The agent's own environment (its HOME and config directory variable), so ``sync``
    finds its files at the defaults; plus what runs this checkout's sessiontree."""
    env = box.env()
    env["PYTHONPATH"] = SRC + os.pathsep + os.environ.get("PYTHONPATH", "")
    return env


def sync(box: AgentSandbox, url: str) -> dict[str, Any]:
    """``sessiontree sync --json`` with the sandbox's environment; the printed object."""
    done = subprocess.run(
        _sync_argv(url), env=_sync_env(box), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def session_id_of(agent: str, path: Path) -> str:
    """The id the agent gave the session of ``path`` (what the import keeps)."""
    first = json.loads(path.read_text().splitlines()[0])
    if agent == "claude-code":
        return path.stem
    if agent == "codex":
        return str(first["payload"]["id"])
    return str(first["id"])


async def _stored(url: str, session_id: str) -> tuple[list[Entry], str | None]:
    repo = open_repo(url)
    try:
        return await _entries_and_leaf(repo, session_id)
    finally:
        await repo.close()


async def _entries_and_leaf(repo: SessionRepo, session_id: str) -> tuple[list[Entry], str | None]:
    session = await repo.open(session_id)
    try:
        return list(await session.get_entries()), await session.get_leaf_id()
    finally:
        await session.close()


async def _branch(url: str, session_id: str) -> tuple[list[MessageEntry], str | None, str | None]:
    repo = open_repo(url)
    try:
        session = await repo.open(session_id)
        try:
            branch = await session.get_branch()
            context = await session.build_context()
            model = context.model.model_id if context.model else None
            messages = [e for e in branch if isinstance(e, MessageEntry)]
            return messages, await session.get_leaf_id(), model
        finally:
            await session.close()
    finally:
        await repo.close()


async def _fresh(path: Path) -> tuple[list[Entry], str | None]:
    """The entries and leaf of a fresh import of ``path``."""
    repo = MemoryRepo()
    try:
        session, _ = await import_session(path, repo)
        return await _entries_and_leaf(repo, session.id)
    finally:
        await repo.close()


def wire(entries: list[Entry]) -> list[dict[str, Any]]:
    """The entries as stored, without ``leaf`` entries: a sync of part of a file may need one
    to put the leaf where that part ended (or to record how far it read), which a fresh
    import of the whole file does not."""
    return [e.to_wire() for e in entries if e.type != "leaf"]


def counted(entries: list[Entry]) -> int:
    """The entries a sync report counts: all but its sync positions."""
    return sum(position_of(e) is None for e in entries)


def check_equals_fresh_import(url: str, session_id: str, path: Path) -> list[Entry]:
    """The stored session has the entries (same ids, same content, same order) and the leaf
    of a fresh import of ``path``; every stored entry, ``leaf`` entries too."""
    stored, leaf = asyncio.run(_stored(url, session_id))
    fresh, fresh_leaf = asyncio.run(_fresh(path))
    assert wire(stored) == wire(fresh)
    assert leaf == fresh_leaf
    return stored


def test_sync_brings_a_session_whole_then_only_its_resumed_turn(
    agent: str, store: str, tmp_path: Path
) -> None:
    with AgentSandbox(agent, tmp_path / agent) as box:
        first = box.run(PROMPTS[0])
        report = sync(box, store)
        assert (report["new"], report["updated"], report["failed"]) == (1, 0, 0), report
        session_id = session_id_of(agent, first.session_file)
        check_whole(agent, *asyncio.run(_branch(store, session_id)), turns=1)
        before = check_equals_fresh_import(store, session_id, first.session_file)
        assert report["entries_added"] == counted(before)

        # nothing changed: nothing to do
        again = sync(box, store)
        assert (again["new"], again["updated"], again["entries_added"]) == (0, 0, 0), again
        assert again["unchanged"] >= 1

        second = box.resume(PROMPTS[1])
    assert second.session_file == first.session_file
    report = sync(box, store)
    assert (report["new"], report["updated"], report["failed"]) == (0, 1, 0), report
    check_whole(agent, *asyncio.run(_branch(store, session_id)), turns=2)
    after = check_equals_fresh_import(store, session_id, second.session_file)
    # the same session, its first entries untouched, only the new turn's entries added
    assert after[: len(before)] == before
    assert report["entries_added"] == counted(after) - counted(before) > 0


@pytest.mark.parametrize("agent", ["pi"], indirect=True)
def test_a_pi_fork_syncs_as_a_new_session_naming_its_parent(
    agent: str, store: str, tmp_path: Path
) -> None:
    with AgentSandbox(agent, tmp_path / agent) as box:
        first = box.run(PROMPTS[0])
        sync(box, store)
        parent_id = session_id_of(agent, first.session_file)
        before, _ = asyncio.run(_stored(store, parent_id))
        # `pi --fork FILE -p PROMPT`: a new session file holding the history, then the turn
        argv = [*box.argv(PROMPTS[1], resume=False), "--fork", str(first.session_file)]
        done = subprocess.run(
            argv, env=box.env(), cwd=box.workdir, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr
    files = sorted(box.config_dir.glob("sessions/**/*.jsonl"))
    assert len(files) == 2 and first.session_file in files
    fork_file = next(f for f in files if f != first.session_file)
    report = sync(box, store)
    assert (report["new"], report["updated"], report["failed"]) == (1, 0, 0), report
    # the original is as it was; the fork is whole and equals a fresh import of its file
    after_parent, _ = asyncio.run(_stored(store, parent_id))
    assert wire(after_parent) == wire(before)
    fork_id = session_id_of(agent, fork_file)
    fork = check_equals_fresh_import(store, fork_id, fork_file)
    assert report["entries_added"] == counted(fork)
    check_whole(agent, *asyncio.run(_branch(store, fork_id)), turns=2)

    async def parent_of_fork() -> object:
        repo = open_repo(store)
        try:
            session = await repo.open(fork_id)
            try:
                return (await session.get_metadata()).parent_session_id
            finally:
                await session.close()
        finally:
            await repo.close()

    # pi's header names the parent by its file's path; the import keeps it
    assert asyncio.run(parent_of_fork()) == str(first.session_file)


def test_sync_watch_has_an_agents_turn_in_the_store_within_a_second(
    agent: str, store: str, tmp_path: Path
) -> None:
    with AgentSandbox(agent, tmp_path / agent) as box:
        watcher = subprocess.Popen(
            [*_sync_argv(store, "--watch")],
            env=_sync_env(box),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert watcher.stdout is not None
            assert json.loads(watcher.stdout.readline())["failed"] == 0  # the first round
            # the store is watched while the agent runs (it may take a second to exit)
            seen: dict[str, float] = {}
            stop = threading.Event()
            poller = threading.Thread(target=_watch_store, args=(store, seen, stop), daemon=True)
            poller.start()
            try:
                run = box.run(PROMPTS[0])
                session_id = session_id_of(agent, run.session_file)
                # the agent's last write to its file: the answer that ends the turn
                written = run.session_file.stat().st_mtime
                deadline = time.time() + 20
                while session_id not in seen and time.time() < deadline:
                    time.sleep(0.05)
            finally:
                stop.set()
                poller.join()
            assert session_id in seen, f"the answer of {session_id} did not reach the store"
            assert seen[session_id] - written < LATENCY_S, (seen[session_id] - written, agent)
            check_whole(agent, *asyncio.run(_branch(store, session_id)), turns=1)
        finally:
            watcher.terminate()
            out, err = watcher.communicate(timeout=30)
    assert watcher.returncode == 0, err
    assert all(json.loads(line)["failed"] == 0 for line in out.splitlines()), out


def _watch_store(url: str, seen: dict[str, float], stop: threading.Event) -> None:
    """Until ``stop``: read the store every 20 ms (one repository, opened once); the time a
    session first ends on the turn's answer goes into ``seen`` under its id."""

    async def poll() -> None:
        repo = open_repo(url)
        try:
            while not stop.is_set():
                for info in await repo.list():
                    if info.id in seen:
                        continue
                    session = await repo.open(info.id)
                    try:
                        entries = await session.get_entries()
                    finally:
                        await session.close()
                    said = [e.message for e in entries if isinstance(e, MessageEntry)]
                    if said and text_of(said[-1]) == "answer 1":  # type: ignore[arg-type]
                        seen[info.id] = time.time()
                await asyncio.sleep(0.02)
        finally:
            await repo.close()

    asyncio.run(poll())
