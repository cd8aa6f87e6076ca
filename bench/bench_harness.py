"""The agent harness's own cost per turn: ``.venv/bin/python bench/bench_harness.py [TURNS]``.

Each turn is ``AgentHarness.prompt`` against a local model server (tests/llm_servers.py,
real HTTP, server-sent events) through the official SDK; right after it the exact request
body the harness sent is sent again with the bare SDK call (create + read the stream). The
difference is what sessiontree adds per model call: appending the user and assistant
messages to the store, building the context, converting it to the wire format, events.
Medians over the turns after a warm-up; the context grows by two messages per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from llm_servers import FakeLLMServer, Say
from sessiontree import open_repo
from sessiontree.harness import AgentHarness
from sessiontree.models import resolve_model

TURNS = 300
WARMUP = 30
REPLY = Say(text="a short answer of about twenty words " * 3, chunk=16)


async def bare_call(api: str, model: Any, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    if api == "openai":
        stream = await model.client.chat.completions.create(**body)
    else:
        stream = await model.client.messages.create(**body)
    async for _ in stream:
        pass
    return time.perf_counter() - started


async def run(api: str, store: str) -> tuple[float, float, float]:
    with FakeLLMServer(REPLY) as server:
        name = "openai/fake-model" if api == "openai" else "anthropic/fake-claude"
        base = f"{server.url}/v1" if api == "openai" else server.url
        model: Any = resolve_model(name, base_url=base, api_key="k")
        turns: list[float] = []
        bares: list[float] = []
        try:
            async with open_repo(store) as repo:
                session = await repo.create()
                harness = AgentHarness(session, model=model)
                for i in range(TURNS):
                    started = time.perf_counter()
                    await harness.prompt(f"question number {i}: what next?")
                    turn = time.perf_counter() - started
                    bare = await bare_call(api, model, dict(server.requests[-1].body))
                    if i >= WARMUP:
                        turns.append(turn)
                        bares.append(bare)
        finally:
            await model.aclose()
    overhead = statistics.median(t - b for t, b in zip(turns, bares, strict=True))
    return statistics.median(turns), statistics.median(bares), overhead


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stores = {"memory": "memory://", "sqlite": f"sqlite:///{Path(tmp) / 'bench.db'}"}
        print(
            f"{TURNS - WARMUP} turns after {WARMUP} warm-up, context growing to {2 * TURNS} messages"
        )
        print(
            f"{'api':<10}{'store':<8}{'turn µs':>10}{'bare SDK µs':>13}{'overhead µs':>13}{'ratio':>8}"
        )
        for api in ("openai", "anthropic"):
            for label, url in stores.items():
                turn, bare, overhead = await run(api, url)
                print(
                    f"{api:<10}{label:<8}{turn * 1e6:>10.0f}{bare * 1e6:>13.0f}"
                    f"{overhead * 1e6:>13.0f}{turn / bare:>8.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "turns",
        nargs="?",
        type=int,
        help=f"turns per session, e.g. 60 for a short run (default {TURNS}, {WARMUP} of them "
        "warm-up; the context grows by two messages a turn)",
    )
    turns = parser.parse_args().turns
    if turns is not None:
        if turns < 2:
            parser.error("turns must be 2 or more")
        TURNS = turns
        WARMUP = max(TURNS // 10, 1)
    asyncio.run(main())
