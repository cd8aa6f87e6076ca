"""sessiontree.sync: the API without await, on every backend, from threads and running loops."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends import BACKENDS, throwaway_pg_database
from sessiontree import Session, SessionNotFoundError, SessionRepo
from sessiontree.compaction import compact
from sessiontree.summarizers.extractive import ExtractiveSummarizer
from sessiontree.sync import SyncRepo, SyncSession, open_repo


@pytest.fixture(params=list(BACKENDS))
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SyncRepo]:
    urls: dict[str, contextlib.AbstractContextManager[str]] = {
        "memory": contextlib.nullcontext("memory://"),
        "jsonl": contextlib.nullcontext(f"jsonl://{tmp_path / 'store'}"),
        "sqlite": contextlib.nullcontext(f"sqlite:///{tmp_path / 'store.db'}"),
        "postgres": throwaway_pg_database(),
    }
    with urls[request.param] as url, open_repo(url) as r:
        yield r


def test_the_same_api_without_await(repo: SyncRepo) -> None:
    session = repo.create(id="s1", metadata={"userId": "u1"})
    assert isinstance(session, SyncSession) and session.id == "s1"
    first = session.append_message({"role": "user", "content": "hello sync world"})
    session.append_message({"role": "assistant", "content": [{"type": "text", "text": "hi"}]})
    session.append_session_name("greeting")
    assert [m.role for m in session.build_context().messages] == ["user", "assistant"]
    assert session.get_name() == "greeting"
    assert session.get_entry(first) is not None
    fork = session.fork(first)
    assert isinstance(fork, SyncSession) and len(fork.get_branch()) == 1
    assert {i.id for i in repo.list(where={"userId": "u1"})} == {fork.id, "s1"}
    assert {h.session_id for h in repo.search("sync world")} == {fork.id, "s1"}
    for n in range(6):
        session.append_message({"role": "user", "content": f"turn {n} " + "words " * 200})
    reopened = repo.open("s1")
    assert reopened.get_leaf_id() == session.get_leaf_id()
    repo.call(
        compact,
        reopened.aio,
        settings={"keep_recent_tokens": 300},
        summarizer=ExtractiveSummarizer(),
    )
    assert reopened.build_context().messages[0].role == "compactionSummary"
    repo.delete("s1")
    with pytest.raises(SessionNotFoundError):
        repo.open("s1")


def test_safe_from_several_threads(repo: SyncRepo) -> None:
    shared = repo.create(id="shared")
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            own = repo.create(id=f"t{n}")
            for i in range(10):
                own.append_message({"role": "user", "content": f"{n}:{i}"})
                shared.append_message({"role": "user", "content": f"shared {n}:{i}"})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(shared.get_branch()) == 60  # one chain: every append hung under the leaf
    for n in range(6):
        texts = [getattr(m, "content", None) for m in repo.open(f"t{n}").build_context().messages]
        assert texts == [f"{n}:{i}" for i in range(10)]


def test_works_inside_a_running_loop(repo: SyncRepo) -> None:
    async def notebook_cell() -> int:
        session = repo.create()  # a sync call while this loop runs (as in Jupyter)
        session.append_message({"role": "user", "content": "from a cell"})
        await asyncio.sleep(0)
        return len(session.get_branch())

    assert asyncio.run(notebook_cell()) == 1


def test_calling_from_the_repositorys_own_loop_is_refused(repo: SyncRepo) -> None:
    async def inside() -> None:
        repo.list()

    with pytest.raises(RuntimeError, match="own event loop"):
        repo.call(inside)


def test_close_stops_the_thread_and_later_calls_fail(tmp_path: Path) -> None:
    repo = open_repo(f"sqlite:///{tmp_path / 'c.db'}")
    repo.create()
    thread = repo.runner.thread
    assert thread.is_alive()
    repo.close()
    repo.close()  # idempotent
    assert not thread.is_alive()
    with pytest.raises(RuntimeError, match="closed"):
        repo.list()


def test_a_dropped_repository_is_closed(tmp_path: Path) -> None:
    repo = open_repo(f"sqlite:///{tmp_path / 'd.db'}")
    repo.create()
    thread = repo.runner.thread
    del repo
    gc.collect()
    thread.join(timeout=5)
    assert not thread.is_alive()


def _public_coroutines(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(cls).items()
        if not name.startswith("_") and inspect.iscoroutinefunction(member)
    }


@pytest.mark.parametrize(
    ("async_cls", "sync_cls"), [(Session, SyncSession), (SessionRepo, SyncRepo)]
)
def test_every_async_method_has_a_sync_one_with_the_same_parameters(
    async_cls: type, sync_cls: type
) -> None:
    wanted = _public_coroutines(async_cls)
    assert wanted  # the comparison below compares something
    for name, signature in wanted.items():
        counterpart = getattr(sync_cls, name, None)
        assert counterpart is not None, f"{sync_cls.__name__}.{name} is missing"
        assert not inspect.iscoroutinefunction(counterpart), name
        got = inspect.signature(counterpart)
        assert list(got.parameters.values()) == list(signature.parameters.values()), name
        assert inspect.getdoc(counterpart), name


def test_a_sync_method_returns_what_the_async_one_does(repo: SyncRepo) -> None:
    session = repo.create(metadata={"userId": "u2"})
    first = session.append_message({"role": "user", "content": "one"})
    second = session.append_message({"role": "user", "content": "two"})
    session.append_label(first, "start")
    assert session.get_label(first) == "start"
    assert [e.id for e in session.get_entries(types={"message"})] == [first, second]
    assert session.navigate(first) is None and session.get_leaf_id() == first
    assert session.get_stats().messages_by_role == {"user": 2}
    assert [n.entry.id for n in session.get_tree()] == [first]
    with pytest.raises(AttributeError):
        session.no_such_method  # type: ignore[attr-defined]  # noqa: B018
