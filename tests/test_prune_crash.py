"""kill -9 during ``prune``: every session is whole, either live or in the trash, never both,
never neither, never partly moved (docs/storage.md "Retention").

A real process prunes a store of many sessions and is killed at random moments; after each
kill the store is checked, and a last, uninterrupted prune finishes the job. Restoring every
session from the trash then gives back exactly the entries it had.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from backends import shared_store_url
from sessiontree import open_repo
from sessiontree.repos import as_trash_repo
from sessiontree.testing.builders import assistant, tool_call, tool_result, user

SESSIONS = 120
"""Sessions in the store: enough that a prune takes a while to kill in the middle of."""
KILLS = 4
"""Pruning processes killed at a random moment (once a random number of sessions is in the
trash), each after the one before."""
OLD = datetime(2020, 1, 1, tzinfo=UTC)

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from datetime import timedelta
    from pathlib import Path
    from sessiontree import open_repo
    from sessiontree.repos import prune

    url, started = sys.argv[1], Path(sys.argv[2])

    async def main():
        repo = open_repo(url)
        started.write_text("pruning")
        await prune(repo, timedelta(days=30))
        await repo.close()

    asyncio.run(main())
    """
)


async def _fill(url: str) -> dict[str, list[object]]:
    """:data:`SESSIONS` old sessions of a few turns each (a tool round in some): their
    entries by session id."""
    repo = open_repo(url)
    out: dict[str, list[object]] = {}
    try:
        for i in range(SESSIONS):
            s = await repo.create(metadata={"cwd": f"/w/p{i % 3}"})
            for turn in range(3):
                await s.append_message(user(f"session {i} turn {turn}: " + "words " * 40))
                if turn == 1:
                    call = tool_call(f"c{i}", "read", path=f"f{i}.py")
                    await s.append_message(assistant("reading", call))
                    await s.append_message(tool_result(f"c{i}", "x = 1\n" * 30))
                await s.append_message(assistant(f"answer {turn} of session {i}"))
            await s.storage.set_modified_at(OLD)
            out[s.id] = list(await s.get_entries())
    finally:
        await repo.close()
    return out


async def _where(url: str) -> tuple[set[str], set[str]]:
    """The ids of the live sessions and of the trashed ones."""
    repo = open_repo(url)
    try:
        live = {i.id for i in await repo.list()}
        trashed = {t.id for t in await as_trash_repo(repo).list_trash()}
    finally:
        await repo.close()
    return live, trashed


async def _live_entries(url: str, ids: set[str]) -> dict[str, list[object]]:
    repo = open_repo(url)
    try:
        return {sid: list(await (await repo.open(sid)).get_entries()) for sid in ids}
    finally:
        await repo.close()


async def _restore_all(url: str) -> dict[str, list[object]]:
    repo = open_repo(url)
    trash = as_trash_repo(repo)
    try:
        out: dict[str, list[object]] = {}
        for t in await trash.list_trash():
            session = await trash.restore(t.id)
            out[t.id] = list(await session.get_entries())
        return out
    finally:
        await repo.close()


def _prune_and_kill(url: str, started: Path, kill_after: int) -> bool:
    """Run a pruning process and SIGKILL it once ``kill_after`` sessions are in the trash
    (the store is polled, so the moment falls anywhere after that); ``True`` when it was
    killed, ``False`` when it had finished first."""
    started.unlink(missing_ok=True)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, str(started)], stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 300
        while not started.exists() or len(asyncio.run(_where(url))[1]) < kill_after:
            if child.poll() is not None:
                assert child.returncode == 0, child.stderr.read() if child.stderr else ""
                return False
            assert time.monotonic() < deadline, "the prune never got that far"
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        return True
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stderr:
            child.stderr.close()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres", "jsonl"])
def test_a_prune_killed_at_random_moments_leaves_every_session_whole(
    backend: str, tmp_path: Path
) -> None:
    rng = random.Random(f"prune-{backend}")
    with shared_store_url(backend, tmp_path) as url:
        original = asyncio.run(_fill(url))
        everyone = set(original)
        midway = 0
        trashed: set[str] = set()
        for _ in range(KILLS):
            kill_after = rng.randint(len(trashed) + 1, SESSIONS - 1)
            killed = _prune_and_kill(url, tmp_path / "started", kill_after)
            live, trashed = asyncio.run(_where(url))
            midway += killed and bool(live) and bool(trashed)
            # each session is in exactly one place...
            assert not live & trashed, sorted(live & trashed)[:5]
            assert live | trashed == everyone, sorted(everyone - live - trashed)[:5]
            # ...and a live one is untouched
            assert asyncio.run(_live_entries(url, live)) == {s: original[s] for s in live}
            if len(live) < 2:  # no moment left between two sessions trashed
                break
        assert midway, "no prune was killed in the middle of its work"
        # a prune run to its end finishes the job; everything comes back whole
        _prune_to_the_end(url)
        live, trashed = asyncio.run(_where(url))
        assert (live, trashed) == (set(), everyone)
        assert asyncio.run(_restore_all(url)) == original
        assert asyncio.run(_where(url)) == (everyone, set())


def _prune_to_the_end(url: str) -> None:
    """Prune to the end in a process of its own."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, url, os.devnull],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
