"""The size limit per session, alike on every backend (docs/storage.md "Size limit"):
``open_repo(url, max_session_bytes=N)`` warns once at 80% and refuses an append over N with
a typed error, writing nothing."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends import SELECTED, throwaway_pg_database
from sessiontree import MessageEntry, SessionRepo, StorageError, open_repo
from sessiontree.errors import InvalidArgumentError, SessionSizeWarning, SessionTooLargeError
from sessiontree.repos import as_trash_repo
from sessiontree.testing.builders import user

LIMIT = 20_000
TEXT = "x" * 1_000  # each message entry stores a little over 1 kB


def _store_url(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "memory":
        yield "memory://"
    elif backend == "jsonl":
        yield f"jsonl://{tmp_path / 'store'}"
    elif backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
    else:
        with throwaway_pg_database() as url:
            yield url


@pytest.fixture(params=SELECTED)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty store of each backend."""
    yield from _store_url(request.param, tmp_path)


@pytest.fixture(params=[b for b in SELECTED if b != "memory"])
def lasting_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty store of each backend that outlives the object that opens it."""
    yield from _store_url(request.param, tmp_path)


def _entry(entry_id: str, parent: str | None, text: str = TEXT) -> MessageEntry:
    message = {"role": "user", "content": text, "timestamp": 1}
    return MessageEntry(
        id=entry_id, parent_id=parent, timestamp="2026-01-01T00:00:00.000Z", message=message
    )


async def _size(repo: SessionRepo, session_id: str) -> int:
    return (await as_trash_repo(repo).session_sizes()).get(session_id, 0)


def _logs(tmp_path: Path) -> dict[Path, bytes]:
    """The bytes of every JSONL log under ``tmp_path`` (none for the other backends)."""
    return {p: p.read_bytes() for p in sorted(tmp_path.rglob("session.jsonl"))}


async def _state(repo: SessionRepo, session_id: str, tmp_path: Path) -> tuple[object, ...]:
    """Everything a refused append must leave as it was: entries, leaf, size, log bytes."""
    s = await repo.open(session_id)
    size = await _size(repo, session_id)
    return await s.get_entries(), await s.get_leaf_id(), size, _logs(tmp_path)


def _recorded(caught: list[warnings.WarningMessage]) -> list[SessionSizeWarning]:
    return [w.message for w in caught if isinstance(w.message, SessionSizeWarning)]


async def test_off_by_default(store: str) -> None:
    async with open_repo(store) as repo:
        s = await repo.create()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(30):
                await s.append_message(user(TEXT))
        assert await _size(repo, s.id) > LIMIT


async def test_warns_once_at_80_percent_then_refuses_and_changes_nothing(
    store: str, tmp_path: Path
) -> None:
    async with open_repo(store, max_session_bytes=LIMIT) as repo:
        s = await repo.create()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sizes = []
            with pytest.raises(SessionTooLargeError) as refused:
                for _ in range(40):
                    await s.append_message(user(TEXT))
                    sizes.append(await _size(repo, s.id))
        (warning,) = _recorded(caught)
        crossing = next(i for i, n in enumerate(sizes) if n >= 0.8 * LIMIT)
        assert warning.session_id == s.id
        assert warning.size_bytes == sizes[crossing]
        assert warning.limit_bytes == LIMIT
        assert s.id in str(warning)

        err = refused.value
        assert isinstance(err, StorageError)
        assert err.session_id == s.id
        assert s.id in str(err) and f"{LIMIT:,}" in str(err)
        assert err.limit_bytes == LIMIT
        assert err.size_bytes == sizes[-1] == await _size(repo, s.id)
        assert err.size_bytes <= LIMIT < err.size_bytes + err.adding_bytes

        before = await _state(repo, s.id, tmp_path)
        leaf = await s.get_leaf_id()
        for attempt in (
            s.append_message(user(TEXT)),
            s.storage.append_entry(_entry("late", leaf)),
            s.storage.append_entries([_entry("b1", leaf, "y"), _entry("b2", "b1")]),
        ):
            with pytest.raises(SessionTooLargeError):
                await attempt
        assert await _state(repo, s.id, tmp_path) == before

        room = LIMIT - err.size_bytes
        if room > 400:  # an append that still fits is taken
            await s.append_message(user("short"))
            assert await _size(repo, s.id) <= LIMIT


async def test_create_over_the_limit_creates_nothing(store: str) -> None:
    async with open_repo(store, max_session_bytes=LIMIT) as repo:
        entries = [_entry(f"e{i}", f"e{i - 1}" if i else None) for i in range(25)]
        with pytest.raises(SessionTooLargeError) as refused:
            await repo.create("big", entries=entries)
        assert refused.value.session_id == "big"
        assert await repo.list() == []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s = await repo.create("fits", entries=entries[:15])  # about 85%
        assert [w.session_id for w in _recorded(caught)] == ["fits"]
        assert len(await s.get_entries()) == 15


async def test_a_reopened_store_counts_what_is_stored(lasting_store: str) -> None:
    store = lasting_store
    async with open_repo(store) as repo:
        s = await repo.create()
        for _ in range(25):
            await s.append_message(user(TEXT))
        size = await _size(repo, s.id)
    async with open_repo(store, max_session_bytes=LIMIT) as repo:
        again = await repo.open(s.id)
        with pytest.raises(SessionTooLargeError) as refused:
            await again.append_message(user("one more"))
        assert refused.value.size_bytes == size


async def test_a_fork_keeps_the_limit(store: str) -> None:
    async with open_repo(store, max_session_bytes=LIMIT) as repo:
        s = await repo.create()
        for _ in range(12):
            await s.append_message(user(TEXT))
        leaf = await s.get_leaf_id()
        assert leaf is not None
        fork = await s.fork(leaf)
        with pytest.raises(SessionTooLargeError) as refused, warnings.catch_warnings():
            warnings.simplefilter("ignore", SessionSizeWarning)
            for _ in range(10):
                await fork.append_message(user(TEXT))
        assert refused.value.session_id == fork.id


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "100"])
def test_a_bad_limit_is_refused(bad: object) -> None:
    with pytest.raises(InvalidArgumentError, match="max_session_bytes"):
        open_repo("memory://", max_session_bytes=bad)  # type: ignore[arg-type]
