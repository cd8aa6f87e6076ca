"""Conformance: listing sessions (order, paging, counts, first message) and session statistics (capability ``listing``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any, ClassVar

import pytest

from sessiontree.entries import MessageEntry
from sessiontree.errors import InvalidEntryError, InvalidMetadataError, SessionNotFoundError
from sessiontree.repos.base import SessionRepo
from sessiontree.testing.builders import assistant, tool_call, tool_result, user
from sessiontree.testing.conformance._base import (
    Conformance,
    Reopen,
    snapshot,
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

    async def test_given_times_are_the_listing_times_until_the_next_append(
        self, repo: SessionRepo, reopen: Reopen
    ) -> None:
        # what an import does: the source's first time at create, its newest after the batch
        # append; created in another order than the sources' dates, to see list() sort by them
        years = {"y2021": 2021, "y2023": 2023, "y2022": 2022}
        made = {}
        for sid, year in years.items():
            first = datetime(year, 3, 4, 5, 6, 7, 123000, tzinfo=UTC)
            newest = first + timedelta(days=40, milliseconds=456)
            s = await repo.create(id=sid, created_at=first)
            (info,) = [i for i in await repo.list() if i.id == sid]
            assert (info.created_at, info.modified_at) == (first, first)  # nothing appended yet
            q = MessageEntry(message=user(f"from {year}"))
            a = MessageEntry(message=assistant("ok"), parent_id=q.id)
            await s.storage.append_entries([q, a])
            await s.storage.set_modified_at(newest)
            made[sid] = (first, newest)
        fresh = await repo.create()
        await fresh.append_message(user("today"))
        async with reopen() as other:
            infos = await other.list()
        assert [i.id for i in infos] == [fresh.id, "y2023", "y2022", "y2021"]
        for i in infos[1:]:
            assert (i.created_at, i.modified_at) == made[i.id]
            assert i.entry_count == 2 and i.first_message == f"from {years[i.id]}"
        assert infos[0].created_at > datetime(2026, 1, 1, tzinfo=UTC)
        assert [i.id for i in await repo.list(limit=2, offset=1)] == ["y2023", "y2022"]

        # a later append is a new modification: now, and the session lists first again
        old = await repo.open("y2021")
        await old.append_message(user("back again"))
        async with reopen() as other:
            infos = await other.list()
        assert infos[0].id == "y2021"
        assert infos[0].created_at == made["y2021"][0]
        assert infos[0].modified_at >= infos[1].modified_at >= made["y2023"][1]

    async def test_times_with_another_zone_are_the_same_instant(self, repo: SessionRepo) -> None:
        east = timezone(timedelta(hours=5, minutes=30))
        when = datetime(2024, 2, 29, 23, 59, 59, 999000, tzinfo=east)
        s = await repo.create(created_at=when)
        await s.storage.append_entries([MessageEntry(message=user("q"))])
        await s.storage.set_modified_at(when + timedelta(hours=1))
        (info,) = await repo.list()
        assert info.created_at == when and info.created_at.utcoffset() == timedelta(0)
        assert info.modified_at == when + timedelta(hours=1)

    async def test_naive_or_wrong_times_are_refused(self, repo: SessionRepo) -> None:
        naive = datetime(2024, 1, 1, 12, 0, 0)
        for bad in (naive, "2024-01-01T12:00:00Z", 1704110400):
            with pytest.raises(InvalidMetadataError, match="created_at"):
                await repo.create(id="refused", created_at=bad)  # type: ignore[arg-type]
        assert await repo.list() == []
        s = await repo.create()
        await s.append_message(user("q"))
        (before,) = await repo.list()
        kept = await snapshot(s)
        for bad in (naive, "2024-01-01T12:00:00Z"):
            with pytest.raises(InvalidMetadataError, match="modified_at"):
                await s.storage.set_modified_at(bad)  # type: ignore[arg-type]
        assert await repo.list() == [before]
        assert await snapshot(s) == kept
        await s.delete()
        with pytest.raises(SessionNotFoundError):
            await s.storage.set_modified_at(datetime(2024, 1, 1, tzinfo=UTC))
        assert await repo.list() == []

    async def test_list_where_filters_on_metadata_keys(self, repo: SessionRepo) -> None:
        u1a = await repo.create(metadata={"userId": "u1", "appName": "support", "tier": 2})
        u1b = await repo.create(metadata={"userId": "u1", "appName": "sales", "vip": True})
        u2 = await repo.create(metadata={"userId": "u2", "appName": "support", "tier": "2"})
        plain = await repo.create(metadata={"cwd": "/w", "note": None})
        for s in (u1a, u1b, u2, plain):
            await s.append_message(user(f"hello from {s.id}"))
        await u1a.append_message(user("newest"))

        async def ids(**where: Any) -> list[str]:
            return [i.id for i in await repo.list(where=where)]

        assert await ids(userId="u1") == [u1a.id, u1b.id]  # newest first, like list()
        assert await ids(userId="u1", appName="support") == [u1a.id]
        assert await ids(appName="support") == [u1a.id, u2.id]
        assert await ids(tier=2) == [u1a.id]  # 2 and "2" differ
        assert await ids(tier="2") == [u2.id]
        assert await ids(vip=True) == [u1b.id]
        assert await ids(vip=1) == []  # true is not 1
        assert await ids(note=None) == [plain.id]
        assert await ids(cwd="/w") == [plain.id]
        assert await ids(userId="u3") == []
        assert await ids(userId="u1", appName="nope") == []
        assert [i.id for i in await repo.list(where={})] == [i.id for i in await repo.list()]
        assert [i.id for i in await repo.list(where={"userId": "u1"}, limit=1)] == [u1a.id]
        assert [i.id for i in await repo.list(where={"userId": "u1"}, offset=1)] == [u1b.id]
        (info,) = await repo.list(where={"userId": "u2"})
        assert info.first_message == f"hello from {u2.id}"
        assert (info.metadata.model_extra or {})["appName"] == "support"

    async def test_list_where_sees_forks_and_forgets_deleted(self, repo: SessionRepo) -> None:
        s = await repo.create(metadata={"userId": "u1"})
        first = await s.append_message(user("one"))
        fork = await s.fork(first)
        assert {i.id for i in await repo.list(where={"userId": "u1"})} == {s.id, fork.id}
        assert [i.id for i in await repo.list(where={"parentSessionId": s.id})] == [fork.id]
        await repo.delete(s.id)
        assert [i.id for i in await repo.list(where={"userId": "u1"})] == [fork.id]

    @pytest.mark.parametrize(
        "bad", [{"userId": 1.5}, {"userId": ["u1"]}, {"userId": {"a": 1}}, {1: "x"}]
    )
    async def test_list_where_refuses_other_values(self, repo: SessionRepo, bad: Any) -> None:
        await repo.create(metadata={"userId": "u1"})
        with pytest.raises(InvalidEntryError, match="where"):
            await repo.list(where=bad)

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
