"""Framework adapter benchmark: the OpenAI Agents SDK ``Session`` protocol.

Run: ``.venv/bin/python bench/bench_adapters.py [--items 2000] [--batch 4]``

The same items — turns of user message, function call, function call output, assistant
message (~200 B to ~2 KB each) — go through ``add_items`` (``--batch`` items per call, as the
Runner adds one turn's items at once) and are read back with ``get_items()`` (the whole
history, as the Runner does before every run), on:

* the SDK's own ``SQLiteSession`` on a file (the reference),
* ``SessionTreeSession`` over a sessiontree SQLite file (the caller's loop, ``repo=``),
* the same through ``url=`` (calls hop to the shared repository's loop thread),
* ``SessionTreeSession`` over the memory and JSONL backends.

Each line prints microseconds per item for add and for get, and the ratio to SQLiteSession
measured in the same run. Best of three runs.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any


def items(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n // 4 + 1):
        out += [
            {"role": "user", "content": f"question {i}: " + "please look at the logs " * 8},
            {
                "type": "function_call",
                "call_id": f"call_{i}",
                "name": "read_file",
                "arguments": f'{{"path": "src/module_{i}.py"}}',
                "id": f"fc_{i}",
            },
            {
                "type": "function_call_output",
                "call_id": f"call_{i}",
                "output": "def f():\n    return 1\n" * 80,
            },
            {
                "id": f"msg_{i}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {
                        "type": "output_text",
                        "text": "The function returns one. " * 6,
                        "annotations": [],
                    }
                ],
            },
        ]
    return out[:n]


async def measure(session: Any, data: list[dict[str, Any]], batch: int) -> tuple[float, float]:
    start = time.perf_counter()
    for i in range(0, len(data), batch):
        await session.add_items(data[i : i + batch])
    added = time.perf_counter() - start
    start = time.perf_counter()
    got = await session.get_items()
    read = time.perf_counter() - start
    assert got == data, "items did not come back equal"
    return added / len(data) * 1e6, read / len(data) * 1e6


def best(runs: int, fn: Callable[[Path], Awaitable[tuple[float, float]]]) -> tuple[float, float]:
    results = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            results.append(asyncio.run(fn(Path(tmp))))
    return min(r[0] for r in results), min(r[1] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    try:
        from agents import SQLiteSession
    except ImportError:
        print("openai-agents is not installed: pip install 'sessiontree[openai-agents]'")
        return
    from sessiontree import MemoryRepo
    from sessiontree.backends.jsonl.repo import JSONLRepo
    from sessiontree.backends.sql.repo import SQLRepo
    from sessiontree.integrations.openai_agents import SessionTreeSession

    data = items(args.items)

    async def sdk(tmp: Path) -> tuple[float, float]:
        session = SQLiteSession("bench", tmp / "agents.db")
        try:
            return await measure(session, data, args.batch)
        finally:
            session.close()

    def ours(make: Callable[[Path], Any]) -> Callable[[Path], Awaitable[tuple[float, float]]]:
        async def run(tmp: Path) -> tuple[float, float]:
            repo = make(tmp)
            try:
                return await measure(SessionTreeSession("bench", repo=repo), data, args.batch)
            finally:
                await repo.close()

        return run

    url_counter = iter(range(10**6))

    async def via_url(tmp: Path) -> tuple[float, float]:
        url = f"sqlite:///{tmp / f'url{next(url_counter)}.db'}"
        return await measure(SessionTreeSession("bench", url=url), data, args.batch)

    cases: list[tuple[str, Callable[[Path], Awaitable[tuple[float, float]]]]] = [
        ("agents SQLiteSession (file)", sdk),
        ("SessionTreeSession sqlite (repo=)", ours(lambda t: SQLRepo(f"sqlite:///{t / 'st.db'}"))),
        ("SessionTreeSession sqlite (url=)", via_url),
        ("SessionTreeSession memory", ours(lambda t: MemoryRepo())),
        ("SessionTreeSession jsonl", ours(lambda t: JSONLRepo(t / "jsonl"))),
    ]
    print(f"{args.items} items, {args.batch} per add_items call, best of {args.runs}")
    print(f"{'store':38} {'add µs/item':>12} {'ratio':>7} {'get µs/item':>12} {'ratio':>7}")
    reference: tuple[float, float] | None = None
    for name, fn in cases:
        add, get = best(args.runs, fn)
        reference = reference or (add, get)
        print(
            f"{name:38} {add:12.1f} {add / reference[0]:7.2f} {get:12.1f} {get / reference[1]:7.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
