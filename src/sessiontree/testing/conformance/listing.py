"""Conformance: listing sessions (order, paging, counts, first message) and session statistics (capability ``listing``)."""

from __future__ import annotations

from typing import ClassVar

import pytest

from sessiontree.repos.base import SessionRepo
from sessiontree.testing.builders import assistant, tool_call, tool_result, user
from sessiontree.testing.conformance._base import (
    Conformance,
)

__all__ = ["ListingConformance"]


class ListingConformance(Conformance):
    """Listing sessions (order, paging, counts, first message) and session statistics."""

    capability: ClassVar[str] = "listing"

    async def test_list_orders_by_modified_and_pages(self, repo: SessionRepo) -> None:
        sessions = [await repo.create() for _ in range(5)]
        for s in sessions:
            await s.append_message(user(f"first message of {s.id}"))
        await sessions[1].append_session_name("touched last")
        await sessions[1].append_message(user("more"))
        infos = await repo.list()
        assert infos[0].id == sessions[1].id
        assert infos[0].name == "touched last"
        assert len(infos) == 5
        mods = [i.modified_at for i in infos]
        assert mods == sorted(mods, reverse=True)
        page1 = await repo.list(limit=2)
        page2 = await repo.list(limit=2, offset=2)
        page3 = await repo.list(limit=2, offset=4)
        assert [i.id for i in page1 + page2 + page3] == [i.id for i in infos]

    async def test_list_first_message_is_capped(self, repo: SessionRepo) -> None:
        s = await repo.create()
        await s.append_message(assistant("not a user message"))
        await s.append_message(user("x" * 500))
        (info,) = await repo.list()
        assert info.first_message == "x" * 200
        assert info.message_count == 2

    async def test_stats(self, repo: SessionRepo) -> None:
        s = await repo.create()
        usage = {
            "input": 10,
            "output": 5,
            "cacheRead": 2,
            "cacheWrite": 1,
            "totalTokens": 18,
            "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.3},
        }
        await s.append_message(user("q"))
        await s.append_message(assistant("", tool_call("c1"), usage=usage))
        await s.append_message(tool_result("c1"))
        await s.append_message(assistant("done", usage=usage))
        await s.append_compaction(
            "s", 40, usage={"input": 100, "output": 7, "cost": {"total": 1.0}}
        )
        stats = await s.get_stats()
        assert stats.messages_by_role == {"user": 1, "assistant": 2, "toolResult": 1}
        assert stats.tool_calls == 1
        assert stats.input_tokens == 120 and stats.output_tokens == 17
        assert stats.cache_read_tokens == 4 and stats.cache_write_tokens == 2
        assert stats.cost == pytest.approx(1.6)
        assert stats.compactions == 1 and stats.entry_count == 5
