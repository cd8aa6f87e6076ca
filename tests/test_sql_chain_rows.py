"""A branch read from SQL converts each chain row to its entry as the engine reads it, so the
rows' JSON is never held whole beside the entries; what comes back is what parsing gives."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from backends import throwaway_pg_database
from sessiontree.entries import parse_entry_json
from sessiontree.repos.sql import SQLRepo
from sessiontree.testing.builders import assistant, user


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
    else:
        with throwaway_pg_database() as url:
            yield url


@pytest.fixture
async def repo(store_url: str) -> AsyncIterator[SQLRepo]:
    async with SQLRepo(store_url) as r:
        yield r


async def test_chain_rows_are_converted_as_read_and_equal_parsing(repo: SQLRepo) -> None:
    s = await repo.create()
    for i in range(30):
        await s.append_message(user(f"q{i}"))
        await s.append_message(assistant(f"a{i}"))
    await s.append_label((await s.storage.get_branch())[3].id, "mark")
    engine: Any = s.storage._engine  # type: ignore[attr-defined]
    raw = await engine.get_chain(s.id, None)
    seen: list[str] = []

    def convert(row: Any) -> Any:
        seen.append(row[0])
        return (row[0], row[1], row[2], parse_entry_json(row[3]), row[4])

    converted = await engine.get_chain(s.id, None, convert)
    assert seen == [r[0] for r in raw], "every row, in walk order, once"
    assert [r[3] for r in converted] == [parse_entry_json(r[3]) for r in raw]
    reopened = await repo.open(s.id)
    path = await reopened.storage.get_branch()
    assert path == [parse_entry_json(r[3]) for r in reversed(raw) if r[2] != "label"]
    with_bookkeeping = await reopened.storage.get_branch(include_bookkeeping=True)
    assert len(with_bookkeeping) == len(raw)
    ctx = await reopened.build_context()
    assert len(ctx.messages) == 60
