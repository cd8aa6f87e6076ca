"""The JSONL listing index: a listing over it equals a listing read from the files alone,
whoever wrote the sessions (this process, another one, another tool, an older version)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from session_files import format_of, vendored_files
from sessiontree.backends.jsonl import listing as jsonl_listing
from sessiontree.backends.jsonl.listing import list_sessions
from sessiontree.backends.jsonl.listing_index import INDEX_DIR, ListingIndex
from sessiontree.backends.jsonl.repo import JSONLRepo
from sessiontree.interop import import_session
from sessiontree.metadata import SessionInfo
from sessiontree.testing.builders import user


def from_files(root: Path, **kw: Any) -> list[SessionInfo]:
    """The listing read from the session files alone (the index neither read nor written)."""
    return list_sessions(
        root,
        ListingIndex(root),
        read_only=True,
        limit=kw.get("limit"),
        offset=kw.get("offset", 0),
        pairs=kw.get("pairs", {}),
        trust_index=False,
    )


async def check(repo: JSONLRepo, **kw: Any) -> list[SessionInfo]:
    got: list[SessionInfo] = await repo.list(**kw)
    assert got == from_files(repo.root, **{**kw, "pairs": _pairs(kw.get("where"))})
    return got


def _pairs(where: Any) -> dict[str, str]:
    from sessiontree.metadata import where_pairs

    return where_pairs(where)


def foreign_session(root: Path, sid: str, texts: list[str], mtime_s: float | None = None) -> Path:
    """A session written by another tool: its files, no index note."""
    (root / sid).mkdir(mode=0o700)
    path = root / sid / "session.jsonl"
    header = {"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00Z"}
    lines = [orjson.dumps(header)]
    parent = None
    for i, text in enumerate(texts):
        lines.append(
            orjson.dumps(
                {
                    "type": "message",
                    "id": f"{sid}-{i}",
                    "parentId": parent,
                    "timestamp": "2026-01-01T00:00:01Z",
                    "message": user(text),
                }
            )
        )
        parent = f"{sid}-{i}"
    path.write_bytes(b"\n".join(lines) + b"\n")
    if mtime_s is not None:
        os.utime(path, (mtime_s, mtime_s))
    return path


def foreign_append(path: Path, text: str) -> None:
    last = orjson.loads(path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1])
    entry = {
        "type": "message",
        "id": f"{last['id']}x",
        "parentId": last["id"],
        "timestamp": "2026-01-01T00:00:02Z",
        "message": user(text),
    }
    with open(path, "ab") as f:
        f.write(orjson.dumps(entry) + b"\n")


async def test_listing_over_the_index_equals_listing_from_the_files(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    sessions = []
    for i in range(6):
        s = await repo.create(metadata={"userId": f"u{i % 2}"})
        await s.append_message(user(f"hello {i}"))
        sessions.append(s)
    await check(repo)  # builds the index
    assert (tmp_path / INDEX_DIR / "listing.jsonl").exists()
    await sessions[2].append_message(user("more"))
    await sessions[3].append_session_name("three")
    fork = await repo.fork(sessions[1].id, (await sessions[1].get_branch())[-1].id)
    await fork.append_message(user("in the fork"))
    await repo.delete(sessions[0].id)
    for kw in ({}, {"limit": 2}, {"limit": 2, "offset": 3}, {"where": {"userId": "u1"}}):
        await check(repo, **kw)
    await repo.close()  # storages settle: their notes say what the logs show
    await check(repo)
    await check(JSONLRepo(tmp_path))  # another repository object on the same root


async def test_every_real_session_lists_as_from_its_files(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    await check(repo)
    for path in vendored_files():
        relative = str(path.relative_to(path.parents[1]))
        await import_session(path, repo, format=format_of(relative))
        await check(repo)
    await repo.close()
    got = await check(JSONLRepo(tmp_path))
    assert len(got) == len(vendored_files())


async def test_a_session_another_tool_writes_is_listed_at_once(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    await (await repo.create()).append_message(user("ours"))
    await check(repo)
    foreign_session(tmp_path, "theirs", ["from another tool"])
    got = await check(repo)
    assert got[0].id == "theirs" and got[0].first_message == "from another tool"
    shutil.rmtree(tmp_path / "theirs")  # and removed by it
    assert [i.id for i in await check(repo)] != ["theirs"]


async def test_an_append_by_another_tool_shows_on_the_page_at_once(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    paths = [foreign_session(tmp_path, f"s{i}", ["a"], mtime_s=1_000_000 + i) for i in range(5)]
    await check(repo)
    foreign_append(paths[4], "b")  # the newest: on the first page
    got = await check(repo, limit=2)
    assert got[0].id == "s4" and got[0].entry_count == 2
    foreign_append(paths[0], "c")  # the oldest moves to the top
    os.utime(paths[0], (4_000_000_000, 4_000_000_000))
    got = await check(repo)  # every session is on this page: all are checked
    assert got[0].id == "s0" and got[0].entry_count == 2


async def test_an_append_by_another_tool_off_the_page_shows_once_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = JSONLRepo(tmp_path)
    paths = [foreign_session(tmp_path, f"s{i}", ["a"], mtime_s=1_000_000 + i) for i in range(5)]
    await check(repo)
    foreign_append(paths[0], "c")
    os.utime(paths[0], (4_000_000_000, 4_000_000_000))
    # within the verification period the index still orders s0 last (it is not on the page)
    assert [i.id for i in await repo.list(limit=1)] == ["s4"]
    monkeypatch.setattr(jsonl_listing, "VERIFY_AFTER_S", 0.0)
    assert [i.id for i in await check(repo, limit=1)] == ["s0"]


async def test_appends_of_a_writer_that_has_not_settled_show_at_once(tmp_path: Path) -> None:
    writer_repo, reader = JSONLRepo(tmp_path), JSONLRepo(tmp_path)
    a = await writer_repo.create()
    b = await writer_repo.create()
    await a.append_message(user("a"))
    await check(reader)
    for i in range(3):  # announced once, then appended to without a note each time
        await b.append_message(user(f"b{i}"))
        got = await check(reader, limit=1)
        assert got[0].id == b.id and got[0].entry_count == i + 1
    await a.append_message(user("a again"))
    assert (await check(reader, limit=1))[0].id == a.id
    await writer_repo.close()
    await check(reader)


def _append_then_die(root: str, sid: str) -> None:
    async def run() -> None:
        repo = JSONLRepo(root)
        s = await repo.open(sid)
        await s.append_message(user("from a process that is killed"))
        os._exit(0)  # no close: the writer's note stays unsettled

    asyncio.run(run())


@pytest.mark.skipif(sys.platform == "win32", reason="fork start method")
async def test_a_dead_writers_note_is_dropped_after_its_log_is_read(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    s = await repo.create()
    await s.append_message(user("a"))
    await repo.close()
    await check(repo)
    proc = multiprocessing.get_context("fork").Process(
        target=_append_then_die, args=(str(tmp_path), s.id)
    )
    proc.start()
    proc.join()
    snap = ListingIndex(tmp_path).read()
    assert snap is not None and snap.writers.get(s.id)
    got = await check(repo)
    assert got[0].entry_count == 2
    snap = ListingIndex(tmp_path).read()
    assert snap is not None and not snap.writers.get(s.id)


@pytest.mark.parametrize(
    "junk",
    [
        b"not json\n",
        b'["listing",1,0,[["x"]],{}]\n',
        b'["listing",1,0,[[1,2,3,4,5,6]],{}]\n',
        b'["listing",1,0,[],{}]\n["s",["a",1]]\n{"w":1}\n',
        b'["listing",1,0,[],{}]\n["s", ["a", 1, 2, 3, [0, 7], 9]]\n',
        b"",
    ],
)
async def test_a_broken_index_is_ignored_and_written_anew(tmp_path: Path, junk: bytes) -> None:
    repo = JSONLRepo(tmp_path)
    for _ in range(3):
        await (await repo.create()).append_message(user("hi"))
    await repo.close()
    await check(repo)
    (tmp_path / INDEX_DIR / "listing.jsonl").write_bytes(junk)
    await check(repo)
    await check(repo)
    assert ListingIndex(tmp_path).read() is not None


async def test_a_missing_index_is_built_and_a_read_only_repository_writes_none(
    tmp_path: Path,
) -> None:
    repo = JSONLRepo(tmp_path)
    for _ in range(3):
        await (await repo.create()).append_message(user("hi"))
    await repo.close()
    shutil.rmtree(tmp_path / INDEX_DIR, ignore_errors=True)
    await check(JSONLRepo(tmp_path, read_only=True))
    assert not (tmp_path / INDEX_DIR).exists()
    await check(repo)
    assert (tmp_path / INDEX_DIR / "listing.jsonl").exists()
    assert oct((tmp_path / INDEX_DIR / "listing.jsonl").stat().st_mode & 0o777) == "0o600"
    assert oct((tmp_path / INDEX_DIR).stat().st_mode & 0o777) == "0o700"


async def test_an_empty_store_gets_no_index(tmp_path: Path) -> None:
    assert await JSONLRepo(tmp_path).list() == []
    assert os.listdir(tmp_path) == []


async def test_set_modified_at_and_created_at_list_as_from_the_files(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    repo = JSONLRepo(tmp_path)
    a = await repo.create(created_at=datetime(2020, 1, 1, tzinfo=UTC))
    b = await repo.create()
    await b.append_message(user("b"))
    await check(repo)
    await a.storage.set_modified_at(datetime(2030, 1, 1, tzinfo=UTC))
    got = await check(repo)
    assert got[0].id == a.id
    await repo.close()
    await check(repo)


async def test_closing_a_writer_after_its_store_was_removed_makes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "store"
    repo = JSONLRepo(root)
    s = await repo.create()
    await s.append_message(user("hi"))
    shutil.rmtree(root)
    await repo.close()  # the writer's closing note finds no root: it is not made again
    assert not root.exists()


async def test_a_writer_dropped_without_close_is_dropped_from_the_index(tmp_path: Path) -> None:
    import gc

    repo = JSONLRepo(tmp_path)
    s = await repo.create()
    sid = s.id
    await s.append_message(user("hi"))
    snap = ListingIndex(tmp_path).read()
    assert snap is not None and snap.writers.get(sid)
    await check(repo)  # its storage is alive: the writer stays
    snap = ListingIndex(tmp_path).read()
    assert snap is not None and snap.writers.get(sid)
    del s
    gc.collect()
    got = await check(repo)
    assert got[0].entry_count == 1
    snap = ListingIndex(tmp_path).read()
    assert snap is not None and not snap.writers.get(sid)


def test_both_index_caches_are_read_by_one_reader(tmp_path: Path) -> None:
    """``read_lines`` (the listing index and the sync-position cache): a missing file is
    ``None``, a torn line is ``None`` in its place, blank lines are no lines."""
    from sessiontree.backends.jsonl.index_files import read_lines

    path = tmp_path / "cache.jsonl"
    assert read_lines(path) is None
    path.write_bytes(b'["s",1]\n\n{"torn": \n[2]\n')
    assert read_lines(path) == [["s", 1], None, [2]]


def test_a_cache_file_replaced_is_private_and_a_failed_replace_leaves_no_temporary(
    tmp_path: Path,
) -> None:
    from sessiontree.storage.private_files import replace_private_file

    path = tmp_path / "listing.jsonl"
    replace_private_file(path, b"[1]\n")
    assert path.read_bytes() == b"[1]\n" and path.stat().st_mode & 0o777 == 0o600
    blocked = tmp_path / "dir"
    (blocked / "inside").mkdir(parents=True)  # a non-empty directory: the rename fails
    with pytest.raises(OSError):
        replace_private_file(blocked, b"[2]\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "listing.jsonl"]
