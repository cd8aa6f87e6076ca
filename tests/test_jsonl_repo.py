"""JSONLRepo: layout, ids, permissions, listing cost and search (docs/storage.md "jsonl")."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from sessiontree import _json as exact_json
from sessiontree.backends.jsonl.repo import JSONLRepo
from sessiontree.backends.jsonl.stats import REFRESH_BYTES
from sessiontree.backends.jsonl.storage import JSONLStorage
from sessiontree.entries import parse_entry
from sessiontree.errors import CorruptSessionError, InvalidEntryError, SessionNotFoundError
from sessiontree.repos import open_repo
from sessiontree.testing.builders import assistant, user

PROC_IO = Path("/proc/self/io")


def bytes_read() -> int:
    """Bytes this process has read through read()/pread() so far (Linux ``rchar``)."""
    for row in PROC_IO.read_text().splitlines():
        if row.startswith("rchar:"):
            return int(row.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def append_raw(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def total_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("session.jsonl"))


needs_proc_io = pytest.mark.skipif(not PROC_IO.exists(), reason="needs /proc/self/io")


def tree_of(path: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(path)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(path.rglob("*"))
    }


def big_message(i: int, size: int) -> dict[str, Any]:
    return {
        "type": "message",
        "message": {"role": "assistant", "content": [{"type": "text", "text": f"{i} " + "y" * size}],
                    "api": "a", "provider": "p", "model": "m", "stopReason": "stop",
                    "timestamp": 1},
    }  # fmt: skip


# ---------------------------------------------------------------------- layout and URLs


async def test_open_repo_dispatches_jsonl_urls_and_directories(tmp_path: Path) -> None:
    for url in (f"jsonl://{tmp_path}", str(tmp_path)):
        repo = open_repo(url)
        assert isinstance(repo, JSONLRepo) and repo.root == tmp_path
        assert repo.url == f"jsonl://{tmp_path}"
    async with JSONLRepo(tmp_path / "store") as repo:
        s = await repo.create(id="abc")
        await s.append_message(user("hi"))
    assert (tmp_path / "store" / "abc" / "session.jsonl").is_file()


@pytest.mark.parametrize("bad", ["..", "../escape", "a/b", "/abs", "x\x00y", "x" * 129, "", "a.b"])
async def test_ids_that_could_escape_the_root_are_refused(tmp_path: Path, bad: str) -> None:
    root = tmp_path / "store"
    repo = JSONLRepo(root)
    before = tree_of(tmp_path)
    with pytest.raises(InvalidEntryError):
        await repo.create(id=bad)
    with pytest.raises(InvalidEntryError):
        await repo.open(bad)
    with pytest.raises(InvalidEntryError):
        await repo.delete(bad)
    with pytest.raises(InvalidEntryError):
        await repo.fork(bad, "e")
    assert tree_of(tmp_path) == before
    assert await repo.list() == []


async def test_longest_allowed_id_works(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    s = await repo.create(id="x" * 128)
    await s.append_message(user("hi"))
    assert [i.id for i in await repo.list()] == ["x" * 128]


async def test_directories_0700_and_files_0600_whatever_the_umask(tmp_path: Path) -> None:
    root = tmp_path / "store"
    old = os.umask(0)
    try:
        async with JSONLRepo(root) as repo:
            s = await repo.create()
            u = await s.append_message(user("hi"))
            fork = await s.fork(u)
    finally:
        os.umask(old)
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    for sid in (s.id, fork.id):
        assert stat.S_IMODE((root / sid).stat().st_mode) == 0o700
    files = [p for p in root.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"session.jsonl", "session.jsonl.lock", "stats.json"}
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p


async def test_delete_removes_the_session_directory(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    a = await repo.create(id="a")
    await a.append_message(user("hi"))
    await repo.delete("a")
    assert not (tmp_path / "a").exists()
    with pytest.raises(SessionNotFoundError):
        await repo.open("a")
    with pytest.raises(SessionNotFoundError):
        await repo.delete("a")
    with pytest.raises(SessionNotFoundError):
        await a.append_message(user("after delete"))
    assert not (tmp_path / "a").exists()


# ---------------------------------------------------------------------- listing


async def test_listing_ignores_and_never_touches_what_is_not_a_session(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    good = await repo.create(id="good")
    await good.append_message(user("hello"))
    (tmp_path / "notes.txt").write_text("not a session dir")
    (tmp_path / "empty-dir").mkdir()
    (tmp_path / "logdir").mkdir()
    (tmp_path / "logdir" / "session.jsonl").write_bytes(b"2026-01-01 INFO a log file\n")
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / "session.jsonl").write_bytes(b"")
    before = tree_of(tmp_path)
    assert [i.id for i in await repo.list()] == ["good"]
    after = tree_of(tmp_path)
    # the repository's own listing index aside
    assert {k: v for k, v in after.items() if "good" not in k and ".index" not in k} == {
        k: v for k, v in before.items() if "good" not in k and ".index" not in k
    }


@needs_proc_io
async def test_listing_reads_headers_and_sidecars_not_whole_files(tmp_path: Path) -> None:
    root = tmp_path / "store"
    n, per_session = 6, 1_000_000
    async with JSONLRepo(root, durability="none") as repo:
        for s_i in range(n):
            s = await repo.create()
            await s.append_message(user(f"first question {s_i}"))
            # wire dicts without ids: storage validates them as it validates entries
            wire: list[Any] = [big_message(i, 10_000) for i in range(per_session // 10_000)]
            await s.storage.append_entries(wire)
            await s.append_session_name(f"name {s_i}")
    assert total_size(root) > n * per_session

    fresh = JSONLRepo(root)
    start = bytes_read()
    infos = await fresh.list()
    used = bytes_read() - start
    assert len(infos) == n
    assert used < n * 16_000, f"listing read {used} bytes of {total_size(root)}"
    assert all(i.entry_count == 102 and i.message_count == 101 for i in infos)
    assert {i.first_message for i in infos} == {f"first question {k}" for k in range(n)}
    assert {i.name for i in infos} == {f"name {k}" for k in range(n)}

    start = bytes_read()
    page = await fresh.list(limit=2, offset=1)
    assert [i.id for i in page] == [i.id for i in infos[1:3]]
    assert bytes_read() - start < 2 * 16_000


@needs_proc_io
async def test_listing_of_sessions_still_open_reads_at_most_the_unsummarised_tail(
    tmp_path: Path,
) -> None:
    repo = JSONLRepo(tmp_path, durability="none")
    sessions = [await repo.create() for _ in range(3)]
    for s in sessions:  # appended one by one and never closed: no final sidecar write
        for i in range(120):
            await s.storage.append_entry(parse_entry(big_message(i, 10_000)), at_leaf=True)
    size = total_size(tmp_path)
    start = bytes_read()
    infos = await JSONLRepo(tmp_path).list()
    used = bytes_read() - start
    assert [i.entry_count for i in infos] == [120, 120, 120]
    assert used < 3 * (REFRESH_BYTES + 16_000) < size
    start = bytes_read()
    await JSONLRepo(tmp_path).list()  # the first listing caught the sidecars up
    assert bytes_read() - start < 3 * 16_000


async def test_listing_counts_stay_right_after_a_torn_tail_is_cut(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    s = await repo.create(id="s")
    await s.append_message(user("one"))
    await s.close()
    log = tmp_path / "s" / "session.jsonl"
    append_raw(log, b'{"type":"message","id":"torn","parentId":null,"message":{"role":"us\n')
    (info,) = await repo.list()
    assert info.entry_count == 1
    again = await JSONLRepo(tmp_path).open("s")
    await again.append_message(user("two"))
    await again.append_message(user("three"))
    (info,) = await JSONLRepo(tmp_path).list()
    assert (info.entry_count, info.message_count, info.first_message) == (3, 3, "one")


async def test_listing_sees_appends_from_other_writers(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    s = await repo.create(id="s")
    await s.append_message(user("one"))
    await repo.close()  # sidecar written
    other = JSONLStorage(tmp_path / "s" / "session.jsonl")
    await other.append_entry(parse_entry({"type": "session_info", "name": "renamed"}))
    (info,) = await JSONLRepo(tmp_path).list()
    assert info.name == "renamed" and info.entry_count == 2


# ---------------------------------------------------------------------- search


async def test_search_finds_text_that_json_escapes(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    s = await repo.create(id="s")
    quoted = await s.append_message(user('she said "stop" at C:\\temp\nnext line'))
    accented = await s.append_message(assistant("Une École près du café"))
    # a line written by another tool that escapes every non-ASCII character
    log = tmp_path / "s" / "session.jsonl"
    leaf = await s.get_leaf_id()
    foreign = {
        "type": "message", "id": "foreign", "parentId": leaf, "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "naïve zèbre", "timestamp": 1},
    }  # fmt: skip
    append_raw(log, json.dumps(foreign, ensure_ascii=True).encode() + b"\n")
    assert b"\\u00ef" in tree_of(tmp_path)["s/session.jsonl"]  # type: ignore[operator]

    async def ids(q: str) -> list[str]:
        return [h.entry_id for h in await repo.search(q)]

    assert await ids('said "stop"') == [quoted]
    assert await ids("c:\\temp\nnext") == [quoted]
    assert await ids("ÉCOLE PRÈS") == [accented]
    assert await ids("NAÏVE") == ["foreign"]
    assert await ids("absent") == []
    (hit,) = await repo.search("zèbre")
    assert hit.session_id == "s" and "zèbre" in hit.snippet


async def test_search_parses_only_lines_that_pass_the_raw_precheck(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = JSONLRepo(tmp_path)
    s = await repo.create()
    for i in range(40):
        await s.append_message(user(f"ordinary message {i}"))
    hit = await s.append_message(assistant("a lazy zebrafish"))
    parsed: list[bytes] = []
    real_loads = exact_json.loads

    def counting_loads(data: Any) -> Any:
        parsed.append(bytes(data))
        return real_loads(data)

    monkeypatch.setattr(exact_json, "loads", counting_loads)
    hits = await repo.search("Zebrafish")
    assert [h.entry_id for h in hits] == [hit]
    assert len(parsed) == 1 and b"zebrafish" in parsed[0]
    assert await repo.search("message", limit=5) and len(await repo.search("message", limit=5)) == 5


async def test_a_corrupt_session_fails_to_open_but_still_lists(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    s = await repo.create(id="s")
    await s.append_message(user("one"))
    await s.append_message(user("two"))
    await repo.close()
    log = tmp_path / "s" / "session.jsonl"
    rows = tree_of(tmp_path)["s/session.jsonl"]
    assert rows is not None
    header, first, second = rows.split(b"\n")[:3]
    broken = header + b"\n" + first + b"\n" + b"{oops\n" + second + b"\n"
    log.write_bytes(broken)
    with pytest.raises(CorruptSessionError) as err:
        await JSONLRepo(tmp_path).open("s")
    assert err.value.line_number == 3 and f"{log}:3" in str(err.value)
    lenient = await JSONLRepo(tmp_path, skip_bad_lines=True).open("s")
    assert isinstance(lenient.storage, JSONLStorage)
    assert [sk.line_number for sk in lenient.storage.skipped_lines] == [3]
    assert len(await lenient.get_branch()) == 2
    (info,) = await JSONLRepo(tmp_path).list()
    assert info.id == "s"
    assert log.read_bytes() == broken


async def test_a_directory_left_by_a_crash_mid_create_is_reused(tmp_path: Path) -> None:
    (tmp_path / "half").mkdir()  # the crash came after mkdir, before the log was linked in
    repo = JSONLRepo(tmp_path)
    assert await repo.list() == []
    s = await repo.create(id="half")
    await s.append_message(user("hi"))
    assert [i.id for i in await repo.list()] == ["half"]
