"""The SQL fork planned from the rows' columns (backends/sql/fork.py) makes exactly the fork the
generic path makes (storage/base.fork_plan, every backend's algorithm), parses only what the
rules read, and the PostgreSQL copies' search text (filled by the next search) finds what an
eagerly indexed copy would."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from backends import throwaway_pg_database
from sessiontree.backends.sql import storage as sql_storage
from sessiontree.backends.sql.fork import FIRST_MESSAGES
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.backends.sql.storage import SQLStorage
from sessiontree.entries import Entry, LabelEntry, MessageEntry
from sessiontree.session import Session
from sessiontree.testing.builders import assistant, user


@pytest.fixture
def repo(sql_repo: SQLRepo) -> SQLRepo:
    """This module's tests run on each SQL dialect (conftest's ``sql_repo``)."""
    return sql_repo


async def _rich_session(repo: SQLRepo) -> tuple[Session, list[str]]:
    """A session with every kind of row a fork treats specially: more leading non-user
    messages than the fork query returns, labels set, moved and cleared, a name, two branches,
    a branch summary whose ``fromId`` is off the copied path, and a path entry whose parent is a
    label entry. Returns it and its path entries' ids."""
    s = await repo.create()
    ids = [await s.append_message(assistant(f"preamble {i}")) for i in range(FIRST_MESSAGES + 2)]
    first_q = await s.append_message(user("the first question, about otters"))
    ids.append(first_q)
    await s.append_label(ids[1], "one")
    await s.append_label(ids[2], "two")
    await s.append_session_name("otters")
    ids.append(await s.append_message(assistant("answer")))
    abandoned = await s.append_message(user("abandoned branch"))
    ids.append(abandoned)
    await s.append_label(abandoned, "left")
    await s.set_leaf_id(first_q)
    ids.append(await s.append_branch_summary("we tried something", abandoned))
    await s.append_label(ids[2], None)  # cleared
    label_id = await s.append_label(first_q, "q")
    under_label = MessageEntry(message=user("hung under a label"), parent_id=label_id)
    await s.storage.append_entry(under_label)
    ids.append(under_label.id)
    ids.append(await s.append_message(assistant("last otter fact")))
    await s.append_session_name("otters, renamed")
    return s, ids


def _comparable(entries: list[Entry]) -> list[Any]:
    """Entries as compared between two forks: new label entries differ in id and time only."""
    out = []
    for e in entries:
        data = e.model_dump(by_alias=True, exclude_unset=True)
        if isinstance(e, LabelEntry) and e.parent_id is not None and data.get("id") is not None:
            data.pop("id")
            data.pop("timestamp")
        out.append(data)
    return out


async def _fork_state(repo: SQLRepo, fork: Session, ids: list[str]) -> dict[str, Any]:
    reopened = await repo.open(fork.id)
    entries = await reopened.get_entries()
    info = {i.id: i for i in await repo.list()}[fork.id]
    return {
        "entries": _comparable(entries),
        "leaf": await reopened.get_leaf_id(),
        "labels": {i: await reopened.get_label(i) for i in ids},
        "name": await reopened.get_name(),
        "counts": (info.entry_count, info.message_count, info.first_message, info.name),
        "metadata": (await reopened.get_metadata()).model_dump(exclude={"created_at"}),
    }


async def test_the_fork_from_columns_is_the_generic_fork(
    repo: SQLRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    s, path_ids = await _rich_session(repo)
    planned: list[bool] = []
    fast_plan = SQLStorage._fork_plan

    async def recording(self: SQLStorage, target_id: str, position: Any) -> Any:
        plan = await fast_plan(self, target_id, position)
        planned.append(plan is not None)
        return plan

    async def generic(self: SQLStorage, target_id: str, position: Any) -> Any:
        return None

    for target in path_ids:
        for position in ("at", "before"):
            monkeypatch.setattr(SQLStorage, "_fork_plan", recording)
            fast = await (await repo.open(s.id)).fork(target, position)
            monkeypatch.setattr(SQLStorage, "_fork_plan", generic)
            slow = await (await repo.open(s.id)).fork(target, position)
            fast_state = await _fork_state(repo, fast, path_ids)
            slow_state = await _fork_state(repo, slow, path_ids)
            root_before = target == path_ids[0] and position == "before"
            assert bool(fast_state["entries"]) != root_before, (target, position)
            assert fast_state == slow_state, (target, position)
    assert all(planned) and len(planned) == 2 * len(path_ids)


async def test_a_fork_parses_only_what_its_rules_read(
    repo: SQLRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = await repo.create()
    ids = [await s.append_message(user(f"message {i}")) for i in range(40)]
    await s.append_label(ids[5], "five")
    parsed: list[str] = []
    real = sql_storage.parse_entry_json  # type: ignore[attr-defined]

    def counting(body: str | bytes) -> Entry:
        entry = real(body)
        parsed.append(entry.type)
        return entry

    monkeypatch.setattr(sql_storage, "parse_entry_json", counting)
    fork = await (await repo.open(s.id)).fork(ids[30])
    assert sorted(parsed) == sorted(["label"] + ["message"] * FIRST_MESSAGES)
    monkeypatch.undo()
    copied = await (await repo.open(fork.id)).get_branch()
    assert [e.id for e in copied] == ids[:31]
    assert copied == (await (await repo.open(s.id)).get_branch(ids[30]))
    assert await (await repo.open(fork.id)).get_label(ids[5]) == "five"


async def test_a_fork_whose_first_user_message_is_far_down_lists_it(repo: SQLRepo) -> None:
    s = await repo.create()
    for i in range(3 * FIRST_MESSAGES + 1):
        await s.append_message(assistant(f"no user yet {i}"))
    q = await s.append_message(user("finally a question"))
    fork = await (await repo.open(s.id)).fork(q)
    info = {i.id: i for i in await repo.list()}[fork.id]
    assert info.first_message == "finally a question"
    assert info.message_count == 3 * FIRST_MESSAGES + 2


@pytest.fixture
def pg_url() -> Iterator[str]:
    with throwaway_pg_database() as url:
        yield url


def _pending(url: str) -> list[Any]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT session_id, source_id FROM search_pending").fetchall()


async def test_postgres_copies_are_found_before_and_after_their_text_is_filled(
    pg_url: str,
) -> None:
    async with SQLRepo(pg_url) as repo:
        a = await repo.create()
        hit = await a.append_message(user("A Platypus Sighting"))
        await a.append_message(assistant("no platypus here, only otters"))
        b = await a.fork(hit)
        c = await b.fork(hit)  # a fork of a fork whose copies have no text yet
        d = await a.fork(hit)
        await repo.delete(d.id)
        e = await a.fork(hit)
        await repo.delete(a.id)  # e's copies can no longer take the text from their source
        assert {r[0] for r in _pending(pg_url)} == {b.id, c.id, e.id}
        async with SQLRepo(pg_url, read_only=True) as reader:
            before = await reader.search("platypus")
        assert {r[0] for r in _pending(pg_url)} == {b.id, c.id, e.id}  # the reader wrote nothing
        after = await repo.search("platypus")
        assert _pending(pg_url) == []
        assert after == before
        assert {(h.session_id, h.entry_id) for h in after} == {
            (b.id, hit),
            (c.id, hit),
            (e.id, hit),
        }
        assert await repo.search("platypus", limit=2) == after[:2]
        assert await repo.search("otters") == []  # the answer was not copied
