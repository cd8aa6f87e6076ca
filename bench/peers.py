"""Per-message append cost of sessiontree next to peer session stores, in one run.

Peers (optional; installed by ``pip install -e '.[bench]'``):

* OpenAI Agents SDK ``SQLiteSession.add_items`` (one message per call, file database);
* LangGraph ``SqliteSaver.put`` (one checkpoint per message, the way a graph stores each step).

All three write to a SQLite file in a temporary directory; the same realistic messages
(user ~200 bytes, assistant with a tool call, tool result ~2 KB) are appended one at a time.
Prints microseconds per message and each peer's ratio to sessiontree.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

N = 300


def messages(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        k = i % 3
        if k == 0:
            out.append({"role": "user", "content": f"please look at file {i} " * 8})
        elif k == 1:
            out.append(
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "toolCall",
                            "id": f"call-{i}",
                            "name": "read",
                            "arguments": {"path": f"src/module_{i}.py"},
                        }
                    ],
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "stopReason": "toolUse",
                }
            )
        else:
            out.append(
                {
                    "role": "toolResult",
                    "toolCallId": f"call-{i - 1}",
                    "toolName": "read",
                    "content": [{"type": "text", "text": "x = 1\n" * 340}],
                    "isError": False,
                }
            )
    return out


def as_openai_items(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for m in msgs:
        if m["role"] == "user":
            items.append({"role": "user", "content": m["content"]})
        elif m["role"] == "assistant":
            c = m["content"][0]
            items.append(
                {
                    "type": "function_call",
                    "call_id": c["id"],
                    "name": c["name"],
                    "arguments": str(c["arguments"]),
                }
            )
        else:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": m["toolCallId"],
                    "output": m["content"][0]["text"],
                }
            )
    return items


async def bench_sessiontree(tmp: Path, msgs: list[dict[str, Any]]) -> float:
    from sessiontree.repos.sql import SQLRepo

    async with SQLRepo(f"sqlite:///{tmp / 'st.db'}") as repo:
        s = await repo.create()
        t = time.perf_counter()
        for m in msgs:
            await s.append_message(m)
        return (time.perf_counter() - t) / len(msgs) * 1e6


async def bench_openai_agents(tmp: Path, msgs: list[dict[str, Any]]) -> float | None:
    try:
        from agents import SQLiteSession
    except ImportError:
        return None
    session = SQLiteSession("bench", tmp / "agents.db")
    items = as_openai_items(msgs)
    t = time.perf_counter()
    for item in items:
        await session.add_items([item])  # type: ignore[list-item]
    elapsed = (time.perf_counter() - t) / len(items) * 1e6
    session.close()
    return elapsed


def bench_langgraph(tmp: Path, msgs: list[dict[str, Any]]) -> float | None:
    try:
        import sqlite3

        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        return None
    conn = sqlite3.connect(tmp / "lg.db", check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    config: Any = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
    t = time.perf_counter()
    for i, m in enumerate(msgs):
        cp = empty_checkpoint()
        cp["channel_values"] = {"messages": [m]}
        cp["channel_versions"] = {"messages": i + 1}
        config = saver.put(
            config, cp, {"source": "loop", "step": i, "parents": {}}, {"messages": i + 1}
        )
    elapsed = (time.perf_counter() - t) / len(msgs) * 1e6
    conn.close()
    return elapsed


def best_of(runs: int, fn: Callable[[Path], float | None]) -> float | None:
    values = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as d:
            v = fn(Path(d))
            if v is None:
                return None
            values.append(v)
    return statistics.median(values)


def main() -> None:
    msgs = messages(N)
    ours = best_of(3, lambda d: asyncio.run(bench_sessiontree(d, msgs)))
    assert ours is not None
    rows = [("sessiontree SQLRepo (sqlite)", ours)]
    peers = [
        (
            "OpenAI Agents SQLiteSession",
            best_of(3, lambda d: asyncio.run(bench_openai_agents(d, msgs))),
        ),
        ("LangGraph SqliteSaver", best_of(3, lambda d: bench_langgraph(d, msgs))),
    ]
    print(f"\nappend one message at a time, {N} messages, median of 3 runs")
    print(f"{'store':34} {'µs/message':>11} {'ratio to sessiontree':>22}")
    print(f"{rows[0][0]:34} {ours:11.1f} {1.0:22.2f}")
    for name, value in peers:
        if value is None:
            print(f"{name:34} {'not installed':>11}  (pip install -e '.[bench]')")
        else:
            print(f"{name:34} {value:11.1f} {value / ours:22.2f}")


if __name__ == "__main__":
    main()
