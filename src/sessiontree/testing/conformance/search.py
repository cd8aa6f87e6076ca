"""Conformance: full-text search over messages (capability ``search``)."""

from __future__ import annotations

from typing import ClassVar

from sessiontree.repos.base import SessionRepo
from sessiontree.testing.builders import assistant, user
from sessiontree.testing.conformance._base import (
    Conformance,
)

__all__ = ["SearchConformance"]


class SearchConformance(Conformance):
    """Full-text search over messages."""

    capability: ClassVar[str] = "search"

    async def test_search(self, repo: SessionRepo) -> None:
        a = await repo.create()
        b = await repo.create()
        await a.append_message(user("the quick brown fox jumps"))
        hit_id = await b.append_message(assistant("a lazy zebrafish sleeps"))
        await b.append_message(user("nothing to see"))
        hits = await repo.search("zebrafish", limit=10)
        assert [(h.session_id, h.entry_id) for h in hits] == [(b.id, hit_id)]
        assert "zebrafish" in hits[0].snippet
        assert await repo.search("unmatchedword") == []
