"""The viewer keeps serving small pages while a heavy one is built (``sessiontree serve``).

The context of a 100,000-entry session, every message shown, takes seconds to build and
render; a one-entry page asked for meanwhile must not wait for it. Real server (uvicorn on a
loopback socket: in a thread for a memory store, else the ``sessiontree serve`` process), real
HTTP clients in two threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from backends import shared_store_url
from sessiontree import SessionRepo, open_repo
from sessiontree.entries import Entry, MessageEntry
from sessiontree.messages import TextContent, UserMessage
from sessiontree.repos import MemoryRepo
from sessiontree.testing.builders import assistant, user
from sessiontree.web.app import create_app
from sessiontree.web.reading import Readers
from sessiontree.web.server import serve_in_thread

ENTRIES = 100_000


def _linear(n: int) -> list[Entry]:
    return [
        MessageEntry(id=f"e{i}", parent_id=f"e{i - 1}" if i else None,
                     message=UserMessage(content=[TextContent(text=f"message {i}")]))
        for i in range(n)
    ]  # fmt: skip


async def _big_repo() -> MemoryRepo:
    repo = MemoryRepo()
    session = await repo.create("big")
    await session.storage.append_entries(_linear(ENTRIES))
    return repo


@pytest.mark.slow
def test_a_small_page_is_served_while_a_whole_big_context_is_built() -> None:
    repo = asyncio.run(_big_repo())
    done: dict[str, float] = {}

    def fetch(name: str, url: str) -> None:
        with httpx.Client(timeout=300) as client:
            response = client.get(url)
        assert response.status_code == 200, response.text[:500]
        done[name] = time.monotonic()

    with serve_in_thread(create_app(repo, close_repo=False)) as base:
        httpx.get(f"{base}/s/big/entry/e1", timeout=60).raise_for_status()  # warm up
        heavy = threading.Thread(
            target=fetch, args=("heavy", f"{base}/s/big/context?all=1"), daemon=True
        )
        started = time.monotonic()
        heavy.start()
        time.sleep(1.0)  # the heavy page is being built now
        asked = time.monotonic()
        fetch("light", f"{base}/s/big/entry/e5")
        light_took = done["light"] - asked
        heavy.join(300)
        assert not heavy.is_alive()
    heavy_took = done["heavy"] - started
    # the small page did not wait for the heavy one: it was back while that was still being
    # built (the heavy one takes seconds; generous bounds for a loaded machine)
    assert done["light"] < done["heavy"], (light_took, heavy_took)
    assert light_took < heavy_took / 2, (light_took, heavy_took)


# -- every kind of heavy page, on every store the viewer reads (a fresh server each: cold) --

BIG = 20_000
"""Entries of the big session whose transcript is the heavy page (read and parsed whole)."""
SMALL_SESSIONS = 100
"""Sessions a model filter, the usage page and a search read (each with usage and a model)."""
TURNS = 20
"""User turns of each of them (a reply with usage and a tool round each)."""
MODELS = ("claude-sonnet-4-5", "gpt-5")


def _turns(n: int, model: str, prefix: str) -> list[Entry]:
    out: list[Entry] = []
    for i in range(n):
        parent = out[-1].id if out else None
        out.append(
            MessageEntry(
                id=f"{prefix}u{i}",
                parent_id=parent,
                message=user(f"turn {i}: look at module_{i % 97}.py and fix it " * 4),
            )
        )
        out.append(
            MessageEntry(
                id=f"{prefix}a{i}",
                parent_id=out[-1].id,
                message=assistant(
                    f"Looked at module_{i % 97}.py; fixed. " * 6,
                    model=model,
                    usage={"input": 900, "output": 120, "cacheRead": 4000},
                ),
            )
        )
    return out  # fmt: skip


async def _fill(url: str) -> None:
    """The big session ``big`` and :data:`SMALL_SESSIONS` others (``s0000``...)."""
    repo = open_repo(url)
    try:
        await repo.create("big", entries=_turns(BIG // 2, MODELS[0], "b"))
        for i in range(SMALL_SESSIONS):
            await repo.create(f"s{i:04d}", entries=_turns(TURNS, MODELS[i % 2], f"s{i}"))
    finally:
        await repo.close()


@pytest.fixture(scope="module", params=["sqlite", "jsonl", "postgres"])
def filled_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    with shared_store_url(request.param, tmp_path_factory.mktemp(request.param)) as url:
        asyncio.run(_fill(url))
        yield url


HEAVY_PAGES = {
    "transcript": "/s/big",
    "model filter": f"/?model={MODELS[1]}",
    "label filter": "/?label=nothing-has-it",
    "agent filter": "/?agent=sessiontree&model=" + MODELS[0],
    "search": "/?search=module_96.py+and+fix&limit=200",
    "usage": "/usage?stack=model",
    "usage json": "/usage.json?by=day",
    "stats": "/s/big/stats",
}


def _small_while_heavy(base: str, heavy: str, small: str) -> tuple[float, list[float]]:
    """Fetch ``heavy`` and, while it is being built, ``small`` again and again: the heavy
    page's time and each small fetch's time (those asked while the heavy one was out)."""
    done = threading.Event()
    took: dict[str, float] = {}

    def fetch_heavy() -> None:
        start = time.monotonic()
        with httpx.Client(timeout=600) as client:
            response = client.get(base + heavy)
        took["heavy"] = time.monotonic() - start
        took["status"] = response.status_code
        done.set()

    smalls: list[float] = []
    thread = threading.Thread(target=fetch_heavy, daemon=True)
    with httpx.Client(timeout=600) as client:
        thread.start()
        time.sleep(0.05)  # the heavy page is on its way to a reader
        while not done.is_set():
            start = time.monotonic()
            response = client.get(base + small)
            assert response.status_code == 200, response.text[:300]
            if not done.is_set():
                smalls.append(time.monotonic() - start)
            time.sleep(0.05)
    thread.join(600)
    assert took["status"] == 200
    return took["heavy"], smalls


@contextlib.contextmanager
def _serve_process(url: str) -> Iterator[str]:
    """``sessiontree serve --store URL --port 0`` as its own process: its base URL. A process
    of its own, as users run it: the test's clients and the heap of the whole test session
    (whose full garbage collections stop every thread of a process) are not the server's."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "sessiontree", "serve", "--store", url, "--port", "0"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    ) as server:
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            assert " on http://" in line, line
            yield line.split(" on ", 1)[1].split()[0].rstrip("/")
        finally:
            server.terminate()
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                server.kill()


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(HEAVY_PAGES))
def test_a_heavy_page_does_not_hold_up_a_small_one(filled_store: str, kind: str) -> None:
    with _serve_process(filled_store) as base:  # a fresh server: nothing read yet
        httpx.get(f"{base}/s/s0002/entry/s2u0", timeout=60).raise_for_status()  # readers up
        heavy, smalls = _small_while_heavy(base, HEAVY_PAGES[kind], "/s/s0001/entry/s1u1")
    # the heavy page is genuinely heavy, and small pages were served while it was built (a
    # blocked server answers no small page before the heavy one is done), half of them
    # within half its time, or within 0.25 s when the heavy page is short (two cores and
    # one interpreter lock are shared: a small page waits for its slices of the lock while
    # the heavy page renders, so the median is the measure)
    assert heavy > 0.3, f"{kind}: the heavy page took only {heavy:.2f} s"
    assert smalls, f"{kind}: no small page came back while the heavy one ({heavy:.2f} s) ran"
    ordered = sorted(smalls)
    assert ordered[(len(ordered) - 1) // 2] < max(heavy / 2, 0.25), (kind, heavy, smalls)


# -- the readers themselves --


async def _noop(state: object) -> None:
    return None


@pytest.mark.parametrize("url", ["sqlite", "memory://"])
async def test_each_reader_reads_through_its_own_connection_off_the_loop(
    url: str, tmp_path: Any
) -> None:
    repo = open_repo(f"sqlite:///{tmp_path / 'store.db'}" if url == "sqlite" else url)
    await repo.create("a")
    readers: Readers[SessionRepo] = Readers(repo, lambda r: r, _noop, size=2)

    async def where(held: SessionRepo, hold: float) -> tuple[SessionRepo, int, str]:
        await asyncio.sleep(hold)  # keeps this reader busy: the next request goes elsewhere
        session = await held.open("a")
        return held, threading.get_ident(), session.id

    try:
        first, second = await asyncio.gather(
            readers.run(lambda r: where(r, 0.3)), readers.run(lambda r: where(r, 0.0))
        )
    finally:
        await readers.close()
    assert first[2] == second[2] == "a"
    assert len({first[1], second[1], threading.get_ident()}) == 3  # two readers, not the loop
    if url == "sqlite":  # a connection of its own each, closed with the readers
        assert first[0] is not repo and second[0] is not repo and first[0] is not second[0]
    else:  # a memory store cannot be opened again: shared
        assert first[0] is repo and second[0] is repo
    await repo.close()
