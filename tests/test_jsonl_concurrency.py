"""Several processes appending to one JSONL session (docs/storage.md: nothing lost or interleaved)."""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
from pathlib import Path

import orjson

from sessiontree.backends.jsonl.storage import JSONLStorage, create_session_file
from sessiontree.entries import MessageEntry
from sessiontree.metadata import SessionMetadata

WORKERS = 4
APPENDS = 500


def append_many(path: str, worker: int, count: int) -> None:
    """Child process: ``count`` appends under the current leaf, each its own open-append cycle."""

    async def run() -> None:
        storage = JSONLStorage(path)
        for i in range(count):
            entry = MessageEntry.model_validate(
                {"message": {"role": "user", "content": f"w{worker}-{i}", "timestamp": i}}
            )
            await storage.append_entry(entry, at_leaf=True)
        await storage.close()

    asyncio.run(run())


async def test_four_processes_times_500_appends_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    create_session_file(path, "shared", SessionMetadata())
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=append_many, args=(str(path), w, APPENDS)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
    assert [p.exitcode for p in procs] == [0] * WORKERS

    data = path.read_bytes()
    assert data.endswith(b"\n")
    rows = [orjson.loads(raw) for raw in data.split(b"\n")[:-1]]  # every line whole JSON
    assert rows[0]["type"] == "session"
    entries = rows[1:]
    assert len(entries) == WORKERS * APPENDS
    assert len({r["id"] for r in entries}) == WORKERS * APPENDS
    texts = {r["message"]["content"] for r in entries}
    assert texts == {f"w{w}-{i}" for w in range(WORKERS) for i in range(APPENDS)}
    # each append hung under the true leaf of the moment: one chain, in file order
    assert entries[0]["parentId"] is None
    for prev, row in itertools.pairwise(entries):
        assert row["parentId"] == prev["id"]

    storage = JSONLStorage(path)
    branch = await storage.get_branch()
    assert [e.id for e in branch] == [r["id"] for r in entries]
    assert await storage.get_leaf_id() == entries[-1]["id"]
