"""Adapters under writers in several real processes, on SQLite, JSONL and PostgreSQL.

* OpenAI Agents ``SessionTreeSession``: ``add_items`` and ``pop_item`` at once from several
  processes: no item is popped twice, and no item whose ``add_items`` returned vanishes
  (every one is either still on the branch or was popped, exactly once).
* Claude Agent SDK ``SessionTreeStore``: the same batch appended by several processes at
  once (the SDK retries) is stored once, without an error.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from backends import shared_store_url

WORKERS = 3
ROUNDS = 24
APPENDS = 12


def add_and_pop(url: str, who: int, out: str, start: Any) -> None:
    """One process: add an item, then (every other round, at random) pop one; write what
    it added and what it popped to ``out``."""
    from sessiontree.integrations.openai_agents import SessionTreeSession

    async def run() -> tuple[list[str], list[str]]:
        session = SessionTreeSession("race", url=url)
        rng = random.Random(who)
        added: list[str] = []
        popped: list[str] = []
        for n in range(ROUNDS):
            text = f"w{who}-{n}"
            await session.add_items([{"role": "user", "content": text}])
            added.append(text)
            if rng.random() < 0.5:
                item: Any = await session.pop_item()
                if item is not None:
                    popped.append(item["content"])
        return added, popped

    start.wait()
    Path(out).write_bytes(orjson.dumps(asyncio.run(run())))


def run_workers(target: Any, url: str, tmp_path: Path) -> list[Any]:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(WORKERS)
    outs = [str(tmp_path / f"out-{w}.json") for w in range(WORKERS)]
    procs = [ctx.Process(target=target, args=(url, w, outs[w], start)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * WORKERS
    return [orjson.loads(Path(out).read_bytes()) for out in outs]


@pytest.mark.parametrize("backend", ["sqlite", "jsonl", "postgres"])
def test_pop_item_across_processes_pops_once_and_loses_nothing(
    backend: str, tmp_path: Path
) -> None:
    from sessiontree.integrations.openai_agents import SessionTreeSession
    from sessiontree.sync import open_repo

    with shared_store_url(backend, tmp_path) as url:
        with open_repo(url) as repo:  # created once, so the workers only race on items
            repo.create(id="race", metadata={"openaiAgentsSessionId": "race"})
        results = run_workers(add_and_pop, url, tmp_path)
        with open_repo(url) as repo:
            items: list[Any] = asyncio.run(SessionTreeSession("race", repo=repo).get_items())
    remaining = [item["content"] for item in items]
    added = [text for a, _ in results for text in a]
    popped = [text for _, p in results for text in p]
    assert len(popped) == len(set(popped)), "an item was popped twice"
    assert len(remaining) == len(set(remaining))
    assert not set(remaining) & set(popped), "a popped item is still on the branch"
    assert sorted(remaining + popped) == sorted(added), "an acknowledged item vanished"
    assert popped  # the pops really ran


BATCH = [
    {
        "type": "user" if n % 2 == 0 else "assistant",
        "uuid": f"00000000-0000-4000-8000-{n:012d}",
        "parentUuid": None if n == 0 else f"00000000-0000-4000-8000-{n - 1:012d}",
        "message": {"role": "user" if n % 2 == 0 else "assistant", "content": f"line {n}"},
    }
    for n in range(6)
]


def key(n: int) -> dict[str, str]:
    return {"project_key": "proj", "session_id": f"retried-{n}"}


def append_same_batch(url: str, who: int, out: str, start: Any) -> None:
    """One process: in each round, all processes at once (a barrier), append the same batch
    to that round's key, as the SDK's retries do; write every error to ``out``."""
    from sessiontree.integrations.claude_agent_sdk import SessionTreeStore

    async def run() -> list[str]:
        store = SessionTreeStore(url=url)
        errors: list[str] = []
        for n in range(APPENDS):
            lines: Any = [dict(line) for line in BATCH]
            start.wait()
            try:
                await store.append(key(n), lines)  # type: ignore[arg-type]
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
        return errors

    start.wait()
    Path(out).write_bytes(orjson.dumps(asyncio.run(run())))


@pytest.mark.parametrize("backend", ["sqlite", "jsonl", "postgres"])
def test_the_same_batch_appended_by_several_processes_is_stored_once(
    backend: str, tmp_path: Path
) -> None:
    from sessiontree.integrations.claude_agent_sdk import SessionTreeStore, store_session_id
    from sessiontree.sync import open_repo

    with shared_store_url(backend, tmp_path) as url:
        results = run_workers(append_same_batch, url, tmp_path)
        with open_repo(url) as repo:
            store = SessionTreeStore(repo=repo)
            for n in range(APPENDS):
                loaded = asyncio.run(store.load(key(n)))  # type: ignore[arg-type]
                assert loaded == BATCH
                session = repo.open(store_session_id(key(n)))
                parents = [(e.id, e.parent_id) for e in session.get_entries()]
                assert parents == [(line["uuid"], line["parentUuid"]) for line in BATCH]
    assert [errors for errors in results] == [[]] * WORKERS
