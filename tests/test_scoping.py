"""Scoping (docs/storage.md "Scoping"): a view of a store restricted to one user, app or
project never lists, opens, searches, forks, deletes, prunes, sizes or exports another
scope's sessions, alike on every backend."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends import BACKENDS, pg_exec
from sessiontree import SessionNotFoundError, SessionRepo
from sessiontree.errors import InvalidArgumentError, InvalidMetadataError
from sessiontree.interop.pi import export_pi_session
from sessiontree.repos import Scope, ScopedRepo, as_trash_repo, prune, scoped, store_usage
from sessiontree.testing.builders import assistant, user
from sessiontree.usage import collect_usage

OLD = datetime(2020, 1, 1, tzinfo=UTC)
USAGE = {"input": 10, "output": 5}


async def _chat(repo: SessionRepo, text: str, *, old: bool = False) -> str:
    """A session of ``repo`` (a view: created in its scope) holding ``text``."""
    s = await repo.create()
    await s.append_message(user(f"needle {text}"))
    await s.append_message(assistant(f"answer {text}", usage=USAGE))
    if old:
        await s.storage.set_modified_at(OLD)
    return s.id


async def _ids(repo: SessionRepo) -> set[str]:
    return {i.id for i in await repo.list()}


async def test_each_scope_sees_only_its_own_sessions(repo: SessionRepo, tmp_path: Path) -> None:
    alice = scoped(repo, user_id="alice", app="support")
    bob = scoped(repo, user_id="bob", app="support")
    a1, a2 = await _chat(alice, "a1"), await _chat(alice, "a2", old=True)
    b1, b2 = await _chat(bob, "b1"), await _chat(bob, "b2", old=True)
    loose = await _chat(repo, "loose")  # no scope: seen only unscoped

    # create wrote the scope into the metadata; the store itself sees everything
    meta = await (await repo.open(a1)).get_metadata()
    assert (meta.user_id, meta.app) == ("alice", "support")
    assert await _ids(repo) == {a1, a2, b1, b2, loose}
    assert await _ids(alice) == {a1, a2}
    assert await _ids(bob) == {b1, b2}
    assert await _ids(scoped(repo, app="support")) == {a1, a2, b1, b2}
    assert [i.id for i in await alice.list(limit=1)] == [a1]  # paging within the scope
    assert await alice.list(where={"userId": "bob"}) == []  # a where cannot widen a scope

    # open / fork / delete / trash of another scope's id: not found, nothing changes
    for call in (
        lambda: alice.open(b1),
        lambda: alice.delete(b1),
        lambda: alice.fork(b1, "x"),
        lambda: alice.trash(b1),
    ):
        with pytest.raises(SessionNotFoundError) as err:
            await call()
        assert err.value.session_id == b1
    assert await _ids(bob) == {b1, b2}
    # ... with the very error of an id that does not exist: no way to tell them apart
    with pytest.raises(SessionNotFoundError) as missing:
        await alice.open("no-such-session")
    with pytest.raises(SessionNotFoundError) as foreign:
        await alice.open(b1)
    assert str(missing.value).replace("no-such-session", b1) == str(foreign.value)

    # search: hits of the scope only, even when other scopes' hits come first
    for _ in range(3):
        await _chat(bob, "more")
    hits = await alice.search("needle", limit=2)
    assert {h.session_id for h in hits} == {a1, a2}
    assert len(await repo.search("needle", limit=2)) == 2
    assert {h.session_id for h in await bob.search("needle a")} == set()

    # fork inside the scope keeps the scope
    s = await alice.open(a1)
    first = (await s.get_entries())[0].id
    fork = await alice.fork(a1, first)
    assert fork.id in await _ids(alice) and fork.id not in await _ids(bob)
    await alice.delete(fork.id)

    # usage and du count the scope's sessions only
    calls = await collect_usage(alice)
    assert {c.session_id for c in calls} == {a1, a2}
    du = await store_usage(alice, by="session")
    assert du.sessions == 2 and {g.key for g in du.groups} == {a1, a2}
    assert {e.session_id for e in du.largest_entries} == {a1, a2}
    assert set(await as_trash_repo(alice).session_sizes()) == {a1, a2}

    # export reaches a session only through a view that sees it
    exported = tmp_path / "a1.jsonl"
    await export_pi_session(await alice.open(a1), exported)
    assert b"needle a1" in exported.read_bytes()

    before = await _ids(repo)
    # prune: only the scope's old session goes, and only its trash is listed and purged
    report = await prune(alice, timedelta(days=30))
    assert [c.info.id for c in report.trashed] == [a2]
    assert await _ids(repo) == before - {a2}  # bob's old b2 and the loose one stay
    assert [t.id for t in await alice.list_trash()] == [a2]
    assert await bob.list_trash() == []
    await bob_trash_refused(bob, a2)
    await alice.restore(a2)
    assert a2 in await _ids(alice)


async def bob_trash_refused(bob: ScopedRepo, alice_trashed: str) -> None:
    """Another scope can neither restore nor purge a trashed session."""
    with pytest.raises(SessionNotFoundError):
        await bob.restore(alice_trashed)
    with pytest.raises(SessionNotFoundError):
        await bob.purge(alice_trashed)


async def test_created_metadata_outside_the_scope_is_refused(repo: SessionRepo) -> None:
    alice = scoped(repo, user_id="alice")
    with pytest.raises(InvalidMetadataError, match="userId"):
        await alice.create(metadata={"userId": "bob"})
    assert await repo.list() == []
    s = await alice.create(metadata={"userId": "alice", "app": "a"})
    assert (await s.get_metadata()).app == "a"
    with pytest.raises(InvalidArgumentError):
        scoped(repo)  # an empty scope would see everything
    with pytest.raises(InvalidArgumentError):
        scoped(repo, user_id="")
    with pytest.raises(InvalidArgumentError):
        await alice.search("x", limit=-1)


async def test_project_is_the_cwd_unless_given(repo: SessionRepo) -> None:
    """An imported agent session has only a working directory: that is its project."""
    imported = await repo.create(metadata={"cwd": "/w/app"})
    own = await repo.create(metadata={"cwd": "/w/app", "project": "billing"})
    assert await _ids(scoped(repo, project="/w/app")) == {imported.id}
    assert await _ids(scoped(repo, project="billing")) == {own.id}
    assert [i.id for i in await repo.list(where={"project": "/w/app"})] == [imported.id]
    made = await scoped(repo, project="/w/app").create(metadata={"cwd": "/elsewhere"})
    assert (await made.get_metadata()).project == "/w/app"
    for sid in (imported.id, own.id, made.id):
        await (await repo.open(sid)).storage.set_modified_at(OLD)
    # prune's --project: the project's path, a directory under it, or its last part
    report = await prune(repo, timedelta(days=1), project="app", dry_run=True)
    assert {c.info.id for c in report.trashed} == {imported.id, made.id}
    report = await prune(repo, timedelta(days=1), project="billing", dry_run=True)
    assert {c.info.id for c in report.trashed} == {own.id}


async def test_nested_views_narrow(repo: SessionRepo) -> None:
    view = scoped(scoped(repo, user_id="u1"), app="a")
    s = await view.create()
    meta = await s.get_metadata()
    assert (meta.user_id, meta.app) == ("u1", "a")
    await scoped(repo, user_id="u1").create(metadata={"app": "b"})
    assert await _ids(view) == {s.id}
    async with view:  # closing a view leaves the store open
        pass
    assert len(await repo.list()) == 2


scope_value = st.one_of(st.none(), st.sampled_from(["u1", "u2", 'ü "q"']))
scopes = st.tuples(scope_value, st.sampled_from([None, "a", "b"]), st.sampled_from([None, "/p"]))


@pytest.mark.parametrize("backend", list(BACKENDS))
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    made=st.lists(st.tuples(scopes, st.sampled_from([None, "/p", "/q"])), min_size=1, max_size=6),
    asked=st.lists(scopes, min_size=1, max_size=4),
)
def test_every_scoped_list_is_the_filter_of_the_unscoped_list(
    backend: str,
    tmp_path: Path,
    made: list[tuple[tuple[str | None, str | None, str | None], str | None]],
    asked: list[tuple[str | None, str | None, str | None]],
) -> None:
    """For random sessions in random scopes (a cwd too, which is the project when none is
    given), each view lists exactly the unscoped listing filtered in Python, and its search
    finds exactly those sessions' messages."""

    def project(meta: dict[str, Any]) -> str | None:
        return meta.get("project", meta.get("cwd"))

    async def run() -> None:
        async with BACKENDS[backend].open(tmp_path / uuid.uuid4().hex) as repo:
            metas: dict[str, dict[str, Any]] = {}
            for (u, a, p), cwd in made:
                meta = {k: v for k, v in (("userId", u), ("app", a), ("project", p)) if v}
                if cwd:
                    meta["cwd"] = cwd
                made_session = await repo.create(metadata=meta)
                await made_session.append_message(user("needle"))
                metas[made_session.id] = meta
            everything = await repo.list()
            for u, a, p in asked:
                if u is None and a is None and p is None:
                    continue
                view = scoped(repo, user_id=u, app=a, project=p)
                wanted = [
                    i.id
                    for i in everything
                    if (u is None or metas[i.id].get("userId") == u)
                    and (a is None or metas[i.id].get("app") == a)
                    and (p is None or project(metas[i.id]) == p)
                ]
                assert [i.id for i in await view.list()] == wanted
                hits = await view.search("needle", limit=100)
                assert sorted(h.session_id for h in hits) == sorted(wanted)
                assert Scope(u, a, p).where() == {
                    k: v for k, v in (("userId", u), ("app", a), ("project", p)) if v
                }

    asyncio.run(run())


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_upgrade_indexes_the_project_of_older_sessions(backend: str, tmp_path: Path) -> None:
    """A store written before scoping has no project row for a session with a cwd: the
    migration step adds it, so where={"project": cwd} finds the session."""
    from sessiontree.backends.sql.repo import SQLRepo
    from sessiontree.backends.sql.schema import SCHEMA_VERSION

    async with BACKENDS[backend].open(tmp_path) as repo:
        s = await repo.create(metadata={"cwd": "/w/old"})
        assert isinstance(repo, SQLRepo)
        url = repo.url
        undo = (
            "DELETE FROM session_meta WHERE key = 'project'",
            f"DELETE FROM schema_version WHERE version = {SCHEMA_VERSION}",
        )
        if backend == "sqlite":
            import sqlite3

            path = url.removeprefix("sqlite:///")
            await repo.close()
            with sqlite3.connect(path) as conn:
                for sql in undo:
                    conn.execute(sql)
        else:
            await repo.close()
            pg_exec(url, *undo)
        again = SQLRepo(url)
        try:
            found = await again.list(where={"project": "/w/old"})
            assert [i.id for i in found] == [s.id]
        finally:
            await again.close()


def test_scope_where_is_json_safe() -> None:
    scope = Scope(user_id='ü "q"')
    assert orjson.loads(orjson.dumps(scope.where())) == {"userId": 'ü "q"'}


def test_cli_scope_options(tmp_path: Path) -> None:
    """--user/--app/--project on list, search, du, usage, export and prune (--user/--app)."""
    from click.testing import CliRunner

    from sessiontree import open_repo
    from sessiontree.cli import cli

    url = f"sqlite:///{tmp_path / 'store.db'}"

    async def fill() -> tuple[str, str]:
        async with open_repo(url) as repo:
            a = await _chat(scoped(repo, user_id="alice", project="/w/p"), "a", old=True)
            b = await _chat(scoped(repo, user_id="bob", app="x"), "b", old=True)
            return a, b

    a, b = asyncio.run(fill())
    runner = CliRunner()

    def run(*args: str, code: int = 0) -> Any:
        result = runner.invoke(cli, ["--store", url, *args], env={"SESSIONTREE_URL": None})
        assert result.exit_code == code, result.output
        return orjson.loads(result.stdout) if code == 0 and "--json" in args else result

    (row,) = run("list", "--json", "--user", "alice")
    assert (row["id"], row["userId"], row["app"], row["project"]) == (a, "alice", None, "/w/p")
    assert [r["id"] for r in run("list", "--json", "--project", "/w/p")] == [a]
    assert [r["id"] for r in run("list", "--json", "--app", "x")] == [b]
    assert len(run("list", "--json")) == 2
    assert {h["sessionId"] for h in run("search", "needle", "--json", "--user", "bob")} == {b}
    assert [g["key"] for g in run("du", "--json", "--user", "bob")["groups"]] == [b]
    assert run("usage", "--json", "--by", "session", "--user", "alice")["totals"]["calls"] == 1
    assert run("usage", "--json", "--by", "session")["totals"]["calls"] == 2
    refused = run("export", b, str(tmp_path / "b.jsonl"), "--user", "alice", code=1)
    assert "no session has this id" in refused.output and not (tmp_path / "b.jsonl").exists()
    run("export", a, str(tmp_path / "a.jsonl"), "--user", "alice")
    assert b"needle a" in (tmp_path / "a.jsonl").read_bytes()
    report = run("prune", "--older-than", "1d", "--user", "bob", "--json")
    assert [t["id"] for t in report["trashed"]] == [b]
    assert [r["id"] for r in run("list", "--json")] == [a]
    assert "--project" not in run("prune", "--help").output.split("--agent")[0]


class _NoFilterRepo:
    """A third-party repository whose search takes no ``where``: the view filters its hits."""

    def __init__(self, repo: SessionRepo) -> None:
        self._repo = repo
        self.url = repo.url

    def __getattr__(self, name: str) -> Any:
        return getattr(self._repo, name)

    async def search(self, query: str, limit: int = 20) -> list[Any]:
        return await self._repo.search(query, limit)


@pytest.mark.parametrize("filtered", [True, False], ids=["backend-filter", "over-fetch"])
async def test_scoped_search_pages_within_the_scope(repo: SessionRepo, filtered: bool) -> None:
    """Other scopes' hits first in the repository's order never crowd the scope's out, with
    the backend's own filter or (a repository without one) the view's over-fetching."""
    base: Any = repo if filtered else _NoFilterRepo(repo)
    mine = [await _chat(scoped(repo, user_id="me"), f"m{i}") for i in range(3)]
    for i in range(30):
        await _chat(scoped(repo, user_id="other"), f"o{i}")
    view = scoped(base, user_id="me")
    assert {h.session_id for h in await view.search("needle", limit=3)} == set(mine)
    assert len(await view.search("needle", limit=2)) == 2
    assert await view.search("needle", where={"userId": "other"}) == []
    assert await view.search("nothing like it") == []
    narrowed = await scoped(view, app="none").search("needle")
    assert narrowed == []


async def test_sqlite_scoped_search_while_the_index_lags(tmp_path: Path) -> None:
    """The search of rows not yet indexed (another writer holds the lock) keeps the scope."""
    import sqlite3

    from sessiontree.backends.sql.repo import SQLRepo

    path = tmp_path / "lag.db"
    async with SQLRepo(f"sqlite:///{path}?timeout=5") as repo:
        mine = await _chat(scoped(repo, user_id="me"), "indexed")
        await repo.search("needle")  # brings the index up to date
        other_id = await _chat(scoped(repo, user_id="other"), "pending")
        mine_too = await _chat(scoped(repo, user_id="me"), "pending")
        lock = sqlite3.connect(path, isolation_level=None)
        try:
            lock.execute("BEGIN IMMEDIATE")
            hits = await scoped(repo, user_id="me").search("needle")
            lock.execute("ROLLBACK")
        finally:
            lock.close()
        assert {h.session_id for h in hits} == {mine, mine_too}
        assert other_id not in {h.session_id for h in hits}


async def test_postgres_scoped_search_of_fork_copies_not_yet_indexed(tmp_path: Path) -> None:
    """A read-only PostgreSQL repository matches pending fork copies in Python: the scope
    holds there too."""
    from sessiontree.backends.sql.repo import SQLRepo

    async with BACKENDS["postgres"].open(tmp_path) as repo:
        forks = {}
        for user_id in ("me", "other"):
            sid = await _chat(scoped(repo, user_id=user_id), user_id)
            first = (await (await repo.open(sid)).get_entries())[-1].id
            forks[user_id] = (await repo.fork(sid, first)).id
        async with SQLRepo(repo.url, read_only=True) as reader:
            hits = await scoped(reader, user_id="me").search("needle", limit=50)
        found = {h.session_id for h in hits}
        assert forks["me"] in found and forks["other"] not in found
        owners = [(await (await repo.open(s)).get_metadata()).user_id for s in found]
        assert set(owners) == {"me"}
        pending = pg_exec(repo.url, "SELECT count(*) FROM search_pending")[0][0]
        assert pending == 2  # the copies were matched in Python, not through the index
