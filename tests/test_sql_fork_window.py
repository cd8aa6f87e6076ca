"""The SQL fork's chain from one range read (fork.chain_in_window) is the chain the recursive
walk finds, and the fork made from it equals the generic fork, on every real session file and
on generated sessions with branches; a target past the range takes the recursive walk. Also:
PostgreSQL entries have no foreign key to their session (schema version 6), and deleting a
session still leaves none of its rows behind."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends import pg_exec, throwaway_pg_database
from session_files import format_of, vendored_files
from sessiontree import import_session
from sessiontree.backends.sql import fork as sql_fork
from sessiontree.backends.sql.fork import WINDOW_ROWS, ChainRow
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.backends.sql.schema import SCHEMA_VERSION
from sessiontree.backends.sql.storage import SQLStorage
from sessiontree.entries import Entry, LabelEntry, MessageEntry, is_path_entry
from sessiontree.errors import SessionNotFoundError
from sessiontree.testing.builders import assistant, user

VENDORED_FILES = vendored_files()


def _comparable(entries: list[Entry]) -> list[Any]:
    """Entries as compared between two forks: new label entries differ in id and time only."""
    out = []
    for e in entries:
        data = e.model_dump(by_alias=True, exclude_unset=True)
        if isinstance(e, LabelEntry) and e.parent_id is not None:
            data.pop("id", None)
            data.pop("timestamp", None)
        out.append(data)
    return out


async def _recursive_chain(repo: SQLRepo, session_id: str, target: str) -> list[ChainRow]:
    """The chain as the recursive walk alone finds it (the window read made to find nothing)."""
    engine: Any = repo._engine
    real = sql_fork.chain_in_window
    try:
        for module in _engine_modules():
            module.chain_in_window = lambda rows, target_id: None
        chain, _, _ = await engine.get_fork_rows(session_id, target)
    finally:
        for module in _engine_modules():
            module.chain_in_window = real
    return list(chain)


def _engine_modules() -> list[Any]:
    from sessiontree.backends.sql import postgres, sqlite

    return [postgres, sqlite]


async def _check(repo: SQLRepo, session_id: str, targets: list[str]) -> int:
    """For each target: the windowed chain's rows (id, parent, type, and the JSON of the rows
    the plan parses) are the recursive walk's, and the fork equals the generic fork."""
    engine: Any = repo._engine
    forks = 0
    for target in targets:
        window, _, _ = await engine.get_fork_rows(session_id, target)
        walked = await _recursive_chain(repo, session_id, target)
        assert [(r.id, r.parent_id, r.type) for r in window] == [
            (r.id, r.parent_id, r.type) for r in walked
        ]
        for got, want in zip(window, walked, strict=True):
            if got.type in sql_fork.PARSED_TYPES:
                assert got.body == want.body
        for position in ("at", "before"):
            fast = await repo.fork(session_id, target, position)
            slow = await _generic_fork(repo, session_id, target, position)
            assert _comparable(await (await repo.open(fast.id)).get_entries()) == _comparable(
                await (await repo.open(slow.id)).get_entries()
            ), (target, position)
            infos = {i.id: i for i in await repo.list()}
            a, b = infos[fast.id], infos[slow.id]
            assert (a.entry_count, a.message_count, a.first_message, a.name) == (
                b.entry_count,
                b.message_count,
                b.first_message,
                b.name,
            )
            forks += 1
    return forks


async def _generic_fork(repo: SQLRepo, session_id: str, target: str, position: str) -> Any:
    """The fork through the generic path (the planner from columns made to decline)."""
    real = SQLStorage._fork_plan

    async def declined(self: SQLStorage, target_id: str, position: Any) -> None:
        return None

    SQLStorage._fork_plan = declined  # type: ignore[method-assign]
    try:
        return await repo.fork(session_id, target, position)  # type: ignore[arg-type]
    finally:
        SQLStorage._fork_plan = real  # type: ignore[method-assign]


@pytest.mark.parametrize("path", VENDORED_FILES, ids=[p.name for p in VENDORED_FILES])
async def test_the_windowed_fork_of_every_real_session_is_the_generic_fork(
    sql_repo: SQLRepo, path: Path
) -> None:
    relative = str(path.relative_to(path.parents[1]))
    session, _ = await import_session(path, sql_repo, format=format_of(relative))
    path_ids = [e.id for e in await session.get_entries() if is_path_entry(e)]
    targets = sorted({path_ids[0], path_ids[len(path_ids) // 2], path_ids[-1]})
    assert await _check(sql_repo, session.id, targets) > 0


async def test_a_target_past_the_window_takes_the_recursive_walk(
    sql_repo: SQLRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    walked: list[bool] = []

    def recording(rows: Any, target_id: str) -> list[ChainRow] | None:
        chain = sql_fork.chain_in_window(rows, target_id)
        walked.append(chain is not None)
        return chain

    for module in _engine_modules():
        monkeypatch.setattr(module, "chain_in_window", recording)
    entries: list[Entry] = []
    parent = None
    for i in range(WINDOW_ROWS + 5):
        e = MessageEntry(message=user(f"m{i}") if i % 2 else assistant(f"a{i}"), parent_id=parent)
        entries.append(e)
        parent = e.id
    s = await sql_repo.create(entries=entries)
    targets = [entries[WINDOW_ROWS - 1].id, entries[WINDOW_ROWS].id, entries[-1].id]
    for target in targets:
        fork = await sql_repo.fork(s.id, target)
        got = await (await sql_repo.open(fork.id)).get_branch()
        assert [e.id for e in got] == [e.id for e in entries[: 1 + _index(entries, target)]]
    assert walked == [True, False, False]  # the range holds the first WINDOW_ROWS rows only


def _index(entries: list[Entry], entry_id: str) -> int:
    return next(i for i, e in enumerate(entries) if e.id == entry_id)


_texts = st.text(st.characters(codec="utf-8"), max_size=12)


async def _generated(url: str, steps: list[tuple[str, int, str]]) -> None:
    async with SQLRepo(url) as repo:
        s = await repo.create()
        path: list[str] = []
        for kind, pick, text in steps:
            if kind == "user" or kind == "assistant":
                make = user if kind == "user" else assistant
                path.append(await s.append_message(make(text or "x")))
            elif kind == "label" and path:
                await s.append_label(path[pick % len(path)], text or None)
            elif kind == "name":
                await s.append_session_name(text or "n")
            elif kind == "back" and path:  # a branch: appends go under an earlier entry
                at = pick % len(path)
                await s.set_leaf_id(path[at])
                path = path[: at + 1]
            elif kind == "summary" and len(path) > 1:
                abandoned = path[-1]
                await s.set_leaf_id(path[-2])
                path.pop()
                path.append(await s.append_branch_summary(text or "s", abandoned))
        if path:
            every = [e.id for e in await s.get_entries() if is_path_entry(e)]
            targets = sorted({path[-1], path[len(path) // 2], every[len(every) // 3]})
            await _check(repo, s.id, targets)


_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["user", "assistant", "label", "name", "back", "summary"]),
        st.integers(0, 50),
        _texts,
    ),
    min_size=1,
    max_size=30,
)
"""Generated sessions: what each step appends (see ``_generated``)."""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_STEPS)
def test_windowed_forks_of_generated_sessions_are_the_generic_fork(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, str]]
) -> None:
    path = tmp_path_factory.mktemp("gen") / "store.db"
    asyncio.run(_generated(f"sqlite:///{path}", steps))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_STEPS)
def test_windowed_forks_of_generated_sessions_are_the_generic_fork_on_postgres(
    steps: list[tuple[str, int, str]],
) -> None:
    with throwaway_pg_database() as url:
        asyncio.run(_generated(url, steps))


# ------------------------------------------------------------------ PostgreSQL, version 6


_ENTRY_KEYS = (
    "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conrelid = 'entries'::regclass"
)


async def test_postgres_entries_have_no_foreign_key_and_a_delete_leaves_no_rows() -> None:
    with throwaway_pg_database() as url:
        async with SQLRepo(url) as repo:
            s = await repo.create(metadata={"userId": "u"})
            hit = await s.append_message(user("a platypus"))
            fork = await s.fork(hit)
            assert pg_exec(url, _ENTRY_KEYS) == [(0,)]
            await repo.delete(s.id)
            await repo.delete(fork.id)
            assert pg_exec(url, "SELECT count(*) FROM entries") == [(0,)]
            assert pg_exec(url, "SELECT count(*) FROM session_meta") == [(0,)]
            assert pg_exec(url, "SELECT count(*) FROM search_pending") == [(0,)]


async def test_a_version_5_postgres_store_keeps_every_row_and_loses_the_key() -> None:
    with throwaway_pg_database() as url:
        async with SQLRepo(url) as repo:
            s = await repo.create()
            ids = [await s.append_message(user(f"m{i}")) for i in range(5)]
        # back to version 5: the key as version 1 made it, the stamp of version 6 gone
        pg_exec(
            url,
            "ALTER TABLE entries ADD FOREIGN KEY (session_id) REFERENCES sessions (id)"
            " ON DELETE CASCADE",
            "DELETE FROM schema_version WHERE version >= 6",
        )
        assert pg_exec(url, _ENTRY_KEYS) == [(1,)]
        async with SQLRepo(url) as repo:
            assert [e.id for e in await (await repo.open(s.id)).get_entries()] == ids
            assert pg_exec(url, _ENTRY_KEYS) == [(0,)]
            assert pg_exec(url, "SELECT max(version) FROM schema_version") == [(SCHEMA_VERSION,)]
            await repo.delete(s.id)
            assert pg_exec(url, "SELECT count(*) FROM entries") == [(0,)]


async def test_a_fork_through_the_repo_reads_the_metadata_with_its_rows(
    sql_repo: SQLRepo,
) -> None:
    s = await sql_repo.create(metadata={"userId": "u1", "title": "t"})
    u = await s.append_message(user("q"))
    await s.append_message(assistant("a"))
    via_repo = await sql_repo.fork(s.id, u)
    via_open = await (await sql_repo.open(s.id)).fork(u)
    for fork in (via_repo, via_open):
        reopened = await sql_repo.open(fork.id)
        assert [e.id for e in await reopened.get_entries()] == [u]
    meta_repo = await (await sql_repo.open(via_repo.id)).get_metadata()
    meta_open = await (await sql_repo.open(via_open.id)).get_metadata()
    assert meta_repo == meta_open
    assert meta_repo.parent_session_id == s.id and meta_repo.forked_from_entry_id == u
    assert {i.id for i in await sql_repo.list(where={"userId": "u1"})} == {
        s.id,
        via_repo.id,
        via_open.id,
    }
    for position in ("at", "sideways"):
        with pytest.raises(SessionNotFoundError):
            await sql_repo.fork("no-such-session", u, position)  # type: ignore[arg-type]


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3)), max_size=40))
def test_copy_runs_place_every_copy_where_the_plan_put_it(steps: list[tuple[int, int]]) -> None:
    # distinct source seqs, fork seqs going up with gaps (rows written from JSON between)
    sources = list(dict.fromkeys(s for s, _ in steps))
    copies: list[tuple[str, int]] = []
    seq = 0
    for (_, gap), source in zip(steps, sources, strict=False):
        seq += gap
        copies.append((f"id{source}", seq))
        seq += 1
    sources = sources[: len(copies)]
    runs = sql_fork.copy_runs(copies, sources)
    placed = [(s, s + shift) for first, last, shift in runs for s in range(first, last + 1)]
    assert placed == [(s, c[1]) for s, c in zip(sources, copies, strict=True)]
    assert (
        len(runs)
        == 1
        + sum(
            1
            for i in range(1, len(copies))
            if not (sources[i] == sources[i - 1] + 1 and copies[i][1] == copies[i - 1][1] + 1)
        )
        or not copies
    )


async def test_a_source_made_again_between_plan_and_copy_is_not_copied(sql_repo: SQLRepo) -> None:
    s = await sql_repo.create(id="again")
    ids = [await s.append_message(user(f"first life {i}")) for i in range(6)]
    source = SQLStorage.for_fork(sql_repo._engine, "again")
    plan = await source._fork_plan(ids[3], "at")
    assert plan is not None
    await sql_repo.delete("again")
    again = await sql_repo.create(id="again")
    for i in range(6):  # as many rows, at the same places, other ids
        await again.append_message(user(f"second life {i}"))
    before = {i.id for i in await sql_repo.list()}
    with pytest.raises(SessionNotFoundError):
        await sql_repo._engine.fork_session("again", "the-fork", source.metadata, plan)
    assert {i.id for i in await sql_repo.list()} == before
