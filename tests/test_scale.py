"""Scale: 100,000-entry linear and bushy trees (no recursion limit, no quadratic step).

These are correctness tests at scale, not timings: a recursive walk would raise
RecursionError, a quadratic one would not finish within the suite's time budget.
"""

from __future__ import annotations

import random
import sys

from sessiontree.entries import Entry, MessageEntry
from sessiontree.messages import AssistantMessage, TextContent, UserMessage
from sessiontree.repos import MemoryRepo

N = 100_000


def _msg(i: int, parent: str | None) -> Entry:
    body = (
        UserMessage(content=f"m{i}")
        if i % 2 == 0
        else AssistantMessage(content=[TextContent(text=f"m{i}")], provider="p", model="m")
    )
    return MessageEntry(id=f"e{i}", parent_id=parent, message=body)


async def test_linear_100k() -> None:
    assert sys.getrecursionlimit() < N
    repo = MemoryRepo()
    s = await repo.create()
    await s.storage.append_entries([_msg(i, f"e{i - 1}" if i else None) for i in range(N)])
    branch = await s.get_branch()
    assert len(branch) == N and branch[0].id == "e0" and branch[-1].id == f"e{N - 1}"
    ctx = await s.build_context()
    assert len(ctx.messages) == N
    (root,) = await s.get_tree()
    depth, node = 1, root
    while node.children:
        (node,) = node.children
        depth += 1
    assert depth == N
    fork = await s.fork(f"e{N // 2}")
    assert len(await fork.get_branch()) == N // 2 + 1


async def test_bushy_100k() -> None:
    rng = random.Random(7)
    repo = MemoryRepo()
    s = await repo.create()
    entries: list[Entry] = []
    for i in range(N):
        parent = None if i == 0 else f"e{rng.randrange(i)}"
        entries.append(_msg(i, parent))
    await s.storage.append_entries(entries)
    roots = await s.get_tree()
    count, stack = 0, list(roots)
    while stack:
        node = stack.pop()
        count += 1
        stack.extend(node.children)
    assert count == N
    branch = await s.get_branch()
    assert branch[-1].id == f"e{N - 1}" and branch[0].id == "e0"
    ctx = await s.build_context()
    assert len(ctx.messages) == len(branch)
