"""Count arguments (``limit``, ``offset``, ...) beyond what a database integer holds are one
typed argument error on every backend, checked before anything is read."""

from __future__ import annotations

import asyncio
import html
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionRepo
from sessiontree._args import MAX_COUNT
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.errors import InvalidArgumentError

HUGE = int("9" * 40)
"""A 40-digit number: more than any SQLite INTEGER or PostgreSQL bigint."""


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text, "timestamp": 1}


async def test_counts_past_a_database_integer_are_an_argument_error_on_every_backend(
    repo: SessionRepo,
) -> None:
    s = await repo.create(id="counts")
    await s.append_message(user("hello"))
    cases: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
        ("list limit", lambda: repo.list(limit=HUGE)),
        ("list offset", lambda: repo.list(offset=HUGE)),
        ("list limit 2**63", lambda: repo.list(limit=MAX_COUNT + 1)),
        ("list offset 2**63", lambda: repo.list(offset=MAX_COUNT + 1)),
        ("search limit", lambda: repo.search("hello", limit=HUGE)),
        ("get_entries limit", lambda: s.get_entries(limit=HUGE)),
        ("compaction tokens_before", lambda: s.append_compaction("s", HUGE)),
    ]
    for name, call in cases:
        with pytest.raises(InvalidArgumentError) as err:
            await call()
        assert str(MAX_COUNT) in str(err.value), name
        assert "9" * 40 in str(err.value) or str(MAX_COUNT + 1) in str(err.value), name
    assert [e.type for e in await s.get_entries()] == ["message"]  # nothing was appended


async def test_the_largest_count_is_accepted_on_every_backend(repo: SessionRepo) -> None:
    s = await repo.create(id="edge")
    first = await s.append_message(user("hello"))
    assert [i.id for i in await repo.list(limit=MAX_COUNT)] == ["edge"]
    assert await repo.list(offset=MAX_COUNT) == []
    assert await repo.list(limit=MAX_COUNT, offset=MAX_COUNT) == []
    assert [h.entry_id for h in await repo.search("hello", limit=MAX_COUNT)] == [first]
    assert [e.id for e in await s.get_entries(limit=MAX_COUNT)] == [first]


def test_the_viewer_answers_a_huge_page_size_with_a_400_naming_it(tmp_path: Path) -> None:
    pytest.importorskip("starlette", reason="needs the web extra")
    from starlette.testclient import TestClient

    from sessiontree.web.app import create_app

    url = f"sqlite:///{tmp_path / 's.db'}"

    async def make() -> None:
        async with SQLRepo(url) as repo:
            await (await repo.create(id="listed")).append_message(user("hello"))

    asyncio.run(make())
    repo = SQLRepo(url, read_only=True)
    with TestClient(create_app(repo), base_url="http://127.0.0.1") as client:
        assert "listed" in client.get("/").text
        for query in (f"limit={HUGE}", f"offset={HUGE}"):
            page = client.get(f"/?{query}")
            assert page.status_code == 400, query
            assert str(MAX_COUNT) in html.unescape(page.text), query
