"""The viewer keeps serving small pages while a heavy one is built (``sessiontree serve``).

The context of a 100,000-entry session, every message shown, takes seconds to build and
render; a one-entry page asked for meanwhile must not wait for it. Real server (uvicorn on a
loopback socket), real HTTP clients in two threads.
"""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

from sessiontree.entries import Entry, MessageEntry
from sessiontree.messages import TextContent, UserMessage
from sessiontree.repos import MemoryRepo
from sessiontree.web.app import create_app
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
