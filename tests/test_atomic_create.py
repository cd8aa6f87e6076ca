"""A session made by an import or a fork appears whole or not at all, on every persistent
backend, even when the process is killed (``kill -9``) part-way.

Before, an import cut short left a session listed with 0 entries, and importing the file again
was refused ("the file has changed since"). A child process imports (or forks) in a loop and is
killed at staggered moments; every session the store then shows must be whole, and the
interrupted import must go through when run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from backends import throwaway_pg_database
from sessiontree import open_repo
from sessiontree.interop import import_session

N = 4000
"""Entries of the imported file: enough that an import takes a good part of a second."""
KILLS_AFTER_S = (0.15, 0.4, 0.8)
"""When the child is killed, counted from its first completed step."""

CHILD = r"""
import asyncio, sys
from sessiontree import open_repo
from sessiontree.interop import import_session

async def main(url, mode, src, start):
    async with open_repo(url) as repo:
        if mode == "fork":
            base = await repo.open("base")
            leaf = await base.get_leaf_id()
        i = int(start)
        while True:
            if mode == "import":
                await import_session(src, repo, session_id=f"imp-{i}")
            else:
                await base.fork(leaf)
            print(i, flush=True)
            i += 1

asyncio.run(main(*sys.argv[1:]))
"""


def write_pi_file(path: Path, n: int) -> None:
    lines = [{"type": "session", "version": 3, "id": "src", "timestamp": "2026-01-01T00:00:00Z"}]
    parent = None
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        message: dict[str, object] = {"role": role, "timestamp": 1_700_000_000_000 + i}
        if role == "user":
            message["content"] = f"question {i} " + "x" * 200
        else:
            message["content"] = [{"type": "text", "text": f"answer {i} " + "y" * 200}]
        eid = f"e{i:06d}"
        lines.append(
            {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": message,
            }
        )
        parent = eid
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))


@contextlib.contextmanager
def store(kind: str, tmp_path: Path) -> Iterator[str]:
    if kind == "postgres":
        with throwaway_pg_database() as url:
            yield url
    elif kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
    else:
        yield f"jsonl://{tmp_path / 'store'}"


def run_and_kill(url: str, mode: str, src: Path, start: int, after_s: float) -> int:
    """Run the child until it has done one step, then ``after_s`` more seconds; SIGKILL it.
    Returns how many steps it reported done."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, mode, str(src), str(start)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert child.stdout is not None
    try:
        first = child.stdout.readline()
        assert first.strip(), child.stderr.read().decode() if child.stderr else ""
        time.sleep(after_s)
    finally:
        child.send_signal(signal.SIGKILL)
        rest = child.communicate(timeout=60)[0]
    return 1 + len(rest.split())


async def sessions(url: str) -> dict[str, int]:
    async with open_repo(url) as repo:
        return {i.id: i.entry_count for i in await repo.list()}


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
def test_import_killed_midway_leaves_nothing_or_the_whole_session(
    kind: str, tmp_path: Path
) -> None:
    src = tmp_path / "big.jsonl"
    write_pi_file(src, N)
    with store(kind, tmp_path) as url:
        start = 0
        for after in KILLS_AFTER_S:
            run_and_kill(url, "import", src, start, after)
            found = asyncio.run(sessions(url))
            assert found and all(count == N for count in found.values()), found
            start = len(found)
            assert set(found) == {f"imp-{i}" for i in range(start)}
        # the import that was cut short goes through now (it was refused before)

        async def again() -> int:
            async with open_repo(url) as repo:
                session, _ = await import_session(src, repo, session_id=f"imp-{start}")
                return len(await session.get_entries())

        assert asyncio.run(again()) == N


@pytest.mark.parametrize("kind", ["jsonl", "sqlite", "postgres"])
def test_fork_killed_midway_leaves_nothing_or_the_whole_fork(kind: str, tmp_path: Path) -> None:
    src = tmp_path / "big.jsonl"
    write_pi_file(src, N)
    with store(kind, tmp_path) as url:

        async def base() -> None:
            async with open_repo(url) as repo:
                await import_session(src, repo, session_id="base")

        asyncio.run(base())
        for after in KILLS_AFTER_S:
            run_and_kill(url, "fork", src, 0, after)
            found = asyncio.run(sessions(url))
            assert len(found) > 1
            assert all(count == N for count in found.values()), found
