"""A search query holding NUL is answered, not an error, and alike on every backend (SQLite's
trigram index cannot parse NUL in a query: such a query is checked without it)."""

from __future__ import annotations

from sessiontree import SessionRepo
from sessiontree.testing.builders import user


async def test_a_query_with_nul_finds_the_message_holding_it_on_every_backend(
    repo: SessionRepo,
) -> None:
    s = await repo.create()
    await s.append_message(user("plain words"))
    odd = await s.append_message(user("odd a\x00b text"))
    await s.append_message(user("abc"))
    for query in ("a\x00b", "\x00", "A\x00B TEXT"):
        hits = await repo.search(query)
        assert [h.entry_id for h in hits] == [odd], query
    assert await repo.search("xa\x00bx") == []
