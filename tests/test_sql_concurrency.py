"""Many processes, one SQL store (docs/storage.md): nothing lost, a whole tree.

Each worker is a separate Python process with its own connection (SQLite) or pool
(PostgreSQL), started together behind a file barrier.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends import throwaway_pg_database
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.entries import MessageEntry
from sessiontree.messages import UserMessage

PROCESSES = 4
APPENDS = 500

_WORKER = textwrap.dedent(
    """
    import asyncio, os, sys, time
    from sessiontree.backends.sql.repo import SQLRepo

    async def main(url, go, mode, sid, n, tag):
        while not os.path.exists(go):
            time.sleep(0.005)
        async with SQLRepo(url) as repo:
            if mode == "open":
                s = await repo.create(id=tag)
                await s.append_message({"role": "user", "content": f"hello from {tag}"})
                return
            s = await repo.open(sid)
            for i in range(n):
                await s.append_message({"role": "user", "content": f"{tag}-{i}"})

    url, go, mode, sid, n, tag = sys.argv[1:]
    asyncio.run(main(url, go, mode, sid, int(n), tag))
    """
)


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
    else:
        with throwaway_pg_database() as url:
            yield url


def _run_workers(url: str, tmp_path: Path, mode: str, sid: str, count: int, n: int) -> None:
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, url, str(go), mode, sid, str(n), f"w{k}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(count)
    ]
    time.sleep(0.5)
    go.touch()
    failures = []
    for p in procs:
        _out, err = p.communicate(timeout=600)
        if p.returncode != 0:
            failures.append(err[-2000:])
    assert not failures, failures


async def test_concurrent_appenders_lose_nothing(store_url: str, tmp_path: Path) -> None:
    async with SQLRepo(store_url) as repo:
        session = await repo.create()
        root = await session.append_message({"role": "user", "content": "start"})
    _run_workers(store_url, tmp_path, "append", session.id, PROCESSES, APPENDS)

    async with SQLRepo(store_url) as repo:
        s = await repo.open(session.id)
        entries = await s.get_entries()
        total = PROCESSES * APPENDS + 1
        assert len(entries) == total
        ids = [e.id for e in entries]
        assert len(set(ids)) == total
        known = set(ids)
        assert all(e.parent_id is None or e.parent_id in known for e in entries)
        # every append hung under the leaf of its moment: one unbroken chain, no siblings
        branch = await s.get_branch()
        assert len(branch) == total and branch[0].id == root
        texts: list[str] = []
        for e in branch[1:]:
            assert isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)
            assert isinstance(e.message.content, str)
            texts.append(e.message.content)
        assert sorted(texts) == sorted(
            f"w{k}-{i}" for k in range(PROCESSES) for i in range(APPENDS)
        )
        for k in range(PROCESSES):
            mine = [int(t.split("-")[1]) for t in texts if t.startswith(f"w{k}-")]
            assert mine == list(range(APPENDS))
        (info,) = await repo.list()
        assert info.entry_count == total and info.message_count == total
        seqs = [e.id for e in await s.get_entries(reverse=True)]
        assert seqs == ids[::-1]


async def test_concurrent_first_opens(store_url: str, tmp_path: Path) -> None:
    _run_workers(store_url, tmp_path, "open", "-", 8, 0)
    async with SQLRepo(store_url) as repo:
        infos = await repo.list()
        assert sorted(i.id for i in infos) == [f"w{k}" for k in range(8)]
        assert all(i.first_message == f"hello from {i.id}" for i in infos)
