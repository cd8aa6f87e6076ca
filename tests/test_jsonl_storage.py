"""JSONLStorage: the file format, crash and fault behaviour of docs/storage.md "jsonl"."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from session_files import VENDORED
from sessiontree import _json as exact_json
from sessiontree.backends.jsonl.format import line_head
from sessiontree.backends.jsonl.storage import JSONLStorage, create_session_file
from sessiontree.entries import MessageEntry, parse_entry
from sessiontree.errors import (
    CorruptSessionError,
    DuplicateEntryError,
    EntryNotFoundError,
    SessionNotFoundError,
)
from sessiontree.metadata import SessionMetadata
from sessiontree.session import Session
from sessiontree.testing.builders import assistant, user

PI_V3 = VENDORED / "pi" / "agent-sessions_pi-small.v3.jsonl"
PI_V1 = VENDORED / "pi" / "pi-mono_large-session.v1.jsonl"

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z"}


def line(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


def msg(entry_id: str, parent: str | None, text: str = "hi") -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": user(text),
    }


def write(path: Path, *parts: bytes) -> bytes:
    data = b"".join(parts)
    path.write_bytes(data)
    return data


def data_of(path: Path) -> bytes:
    return path.read_bytes()


def lines_of(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [orjson.loads(raw) for raw in data.split(b"\n")[:-1]]


@pytest.fixture
def pi_copy(tmp_path: Path) -> Path:
    target = tmp_path / "pi.jsonl"
    shutil.copyfile(PI_V3, target)
    return target


# ---------------------------------------------------------------------- pi v3 in place


async def test_opens_a_real_pi_v3_file_in_place_and_appends(pi_copy: Path) -> None:
    original = data_of(pi_copy)
    storage = JSONLStorage(pi_copy)
    session = Session(storage)
    raw = lines_of(pi_copy)
    assert storage.id == raw[0]["id"]
    assert storage.metadata.cwd == raw[0]["cwd"]
    assert [e.id for e in await session.get_entries()] == [r["id"] for r in raw[1:]]
    leaf = await session.get_leaf_id()
    assert leaf == raw[-1]["id"]
    ctx = await session.build_context()
    assert ctx.messages and ctx.model is not None
    assert data_of(pi_copy) == original  # opening writes nothing

    new_id = await session.append_message(assistant("appended"))
    data = data_of(pi_copy)
    assert data.startswith(original)  # append-only: every old byte unchanged
    added = lines_of(pi_copy)[-1]
    assert added["id"] == new_id and added["parentId"] == leaf and added["type"] == "message"
    await storage.close()

    again = Session(JSONLStorage(pi_copy))
    assert await again.get_leaf_id() == new_id
    assert (await again.get_entry(new_id)) == await session.get_entry(new_id)


async def test_unknown_header_keys_are_metadata_and_the_header_is_never_rewritten(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    header = {**HEADER, "cwd": "/w", "provider": "anthropic", "modelId": "m", "branchedFrom": "x"}
    head = line(header)
    write(path, head)
    storage = JSONLStorage(path)
    meta = storage.metadata
    assert meta.cwd == "/w"
    assert meta.model_extra == {"provider": "anthropic", "modelId": "m", "branchedFrom": "x"}
    await storage.append_entry(parse_entry(msg("a", None)))
    assert path.read_bytes().startswith(head)


async def test_header_round_trips_metadata(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    meta = SessionMetadata.model_validate(
        {"systemPrompt": "sp", "cwd": "/w", "parentSessionId": "p1", "extra": [1, 2]}
    )
    create_session_file(path, "new-1", meta)
    (header,) = lines_of(path)
    assert header["type"] == "session" and header["version"] == 3 and header["id"] == "new-1"
    assert header["cwd"] == "/w" and header["parentSession"] == "p1"
    assert header["metadata"] == {"systemPrompt": "sp", "extra": [1, 2]}
    assert JSONLStorage(path).metadata == meta


def test_missing_file_is_session_not_found(tmp_path: Path) -> None:
    with pytest.raises(SessionNotFoundError):
        JSONLStorage(tmp_path / "nope.jsonl")


# ---------------------------------------------------------------------- files that are not sessions


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"2026-01-01 12:00:00 INFO server started\n2026-01-01 12:00:01 INFO ok\n",
        b'{"level": "info", "msg": "a JSON log, not a session"}\n',
        b'{"type":"session","version":3,"id":"s1"',  # a header without its newline
        b"\x00\x01\x02binary",
    ],
    ids=["empty", "text-log", "json-log", "torn-header", "binary"],
)
async def test_a_file_without_a_valid_header_is_refused_and_untouched(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "not-a-session.jsonl"
    write(path, content)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(CorruptSessionError) as err:
        JSONLStorage(path)
    assert err.value.path == path and err.value.line_number == 1
    assert str(path) in str(err.value)
    assert path.read_bytes() == content
    assert sorted(os.listdir(tmp_path)) == before  # no lock file, no sidecar


def test_an_older_pi_file_is_refused_not_migrated(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    shutil.copyfile(PI_V1, path)
    with pytest.raises(CorruptSessionError, match="import_session"):
        JSONLStorage(path)
    assert path.read_bytes() == PI_V1.read_bytes()


# ---------------------------------------------------------------------- torn and bad lines


async def test_torn_final_line_is_ignored_then_cut_before_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = line(HEADER) + line(msg("a", None)) + line(msg("b", "a"))
    torn = b'{"type":"message","id":"c","parentId":"b","timesta'
    write(path, good, torn)
    storage = JSONLStorage(path)
    assert [e.id for e in await storage.get_entries()] == ["a", "b"]
    assert await storage.get_leaf_id() == "b"
    assert path.read_bytes() == good + torn  # ignoring is not cutting
    await storage.append_entry(parse_entry(msg("c2", None)), at_leaf=True)
    rows = lines_of(path)
    assert [r["id"] for r in rows[1:]] == ["a", "b", "c2"]
    assert rows[-1]["parentId"] == "b"
    assert path.read_bytes().startswith(good)


async def test_unparsable_final_line_with_newline_is_treated_as_torn(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = line(HEADER) + line(msg("a", None))
    write(path, good, b'{"type":"message","id":"x",,,\n')
    storage = JSONLStorage(path)
    assert [e.id for e in await storage.get_entries()] == ["a"]
    b = msg("b", "a")
    await storage.append_entry(parse_entry(b))
    assert path.read_bytes() == good + line(b)


async def test_a_bad_line_elsewhere_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    content = write(path, line(HEADER), line(msg("a", None)), b"{not json\n", line(msg("b", "a")))
    with pytest.raises(CorruptSessionError) as err:
        JSONLStorage(path)
    assert err.value.line_number == 3 and err.value.path == path
    assert f"{path}:3" in str(err.value)
    assert path.read_bytes() == content


async def test_a_line_that_is_json_but_not_an_entry_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    bad = {"type": "message", "id": "b", "parentId": "a", "timestamp": "t", "message": 42}
    write(path, line(HEADER), line(msg("a", None)), line(bad), line(msg("c", "b")))
    storage = JSONLStorage(path)  # structure is fine; the entry is validated when read
    with pytest.raises(CorruptSessionError) as err:
        await storage.get_branch()
    assert err.value.line_number == 3 and f"{path}:3" in str(err.value)
    with pytest.raises(CorruptSessionError):
        await storage.get_entries()
    assert (await storage.get_entry("a")) is not None


async def test_lines_without_id_or_with_a_duplicate_id_are_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), line({"type": "message", "parentId": None}), line(msg("a", None)))
    with pytest.raises(CorruptSessionError) as err:
        JSONLStorage(path)
    assert err.value.line_number == 2
    write(path, line(HEADER), line(msg("a", None)), line(msg("a", None)), line(msg("b", "a")))
    with pytest.raises(CorruptSessionError, match="duplicate") as err:
        JSONLStorage(path)
    assert err.value.line_number == 3


async def test_skipping_bad_lines_reports_every_one(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    not_an_entry = {"type": "message", "id": "x", "parentId": None, "message": "nope"}
    content = write(
        path,
        line(HEADER),
        line(msg("a", None)),
        b"garbage\n",
        line(msg("b", "a")),
        line(not_an_entry),
        line(msg("a", None)),  # duplicate id
        line(msg("c", "b")),
    )
    storage = JSONLStorage(path, skip_bad_lines=True)
    assert [s.line_number for s in storage.skipped_lines] == [3, 5, 6]
    assert [e.id for e in await storage.get_branch()] == ["a", "b", "c"]
    assert path.read_bytes() == content


# ---------------------------------------------------------------------- several writers


async def test_a_writer_picks_up_what_another_appended_before_it_appends(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER))
    first, second = JSONLStorage(path), JSONLStorage(path)
    a = await first.append_entry(
        MessageEntry.model_validate({"message": user("one")}), at_leaf=True
    )
    # ``second`` has not read since it opened; under the lock it reads ``a`` first.
    b = await second.append_entry(
        MessageEntry.model_validate({"message": user("two")}), at_leaf=True
    )
    assert b.parent_id == a.id
    with pytest.raises(DuplicateEntryError):
        await second.append_entry(parse_entry(msg(a.id, None)))
    with pytest.raises(EntryNotFoundError):
        await second.append_entry(parse_entry(msg("z", "ghost")))
    # readers pick up appends too (one fstat per call)
    assert [e.id for e in await first.get_entries()] == [a.id, b.id]
    assert await first.get_leaf_id() == b.id
    rows = lines_of(path)
    assert [r["id"] for r in rows[1:]] == [a.id, b.id]


async def test_build_context_never_rereads_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    parts = [line(HEADER)]
    parent = None
    for i in range(200):
        parts.append(line(msg(f"m{i}", parent, "x" * 500)))
        parent = f"m{i}"
    write(path, *parts)
    storage = JSONLStorage(path)
    session = Session(storage)
    read: list[int] = []
    real_pread = os.pread

    def counting_pread(fd: int, n: int, offset: int) -> bytes:
        data = real_pread(fd, n, offset)
        read.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", counting_pread)
    for _ in range(3):
        ctx = await session.build_context()
        assert len(ctx.messages) == 200
    assert sum(read) == 0
    other = JSONLStorage(path)
    new = line(msg("late", "m199"))
    await other.append_entry(parse_entry(msg("late", "m199")))
    read.clear()
    ctx = await session.build_context()
    assert len(ctx.messages) == 201
    assert sum(read) == len(new)  # only the new bytes


# ---------------------------------------------------------------------- durability and modes


@pytest.mark.parametrize(
    ("durability", "on_append", "on_close"),
    [("none", 0, 0), ("flush", 0, 1), ("fsync", 1, 1)],
)
async def test_durability_settings(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    durability: Any,
    on_append: int,
    on_close: int,
) -> None:
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER))
    storage = JSONLStorage(path, durability=durability)
    calls: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    await storage.append_entry(parse_entry(msg("a", None)))
    await storage.append_entry(parse_entry(msg("b", "a")))
    assert len(calls) == 2 * on_append
    calls.clear()
    await storage.close()
    assert len(calls) == on_close
    assert [r["id"] for r in lines_of(path)[1:]] == ["a", "b"]
    with pytest.raises(ValueError, match="durability"):
        JSONLStorage(path, durability="sometimes")  # type: ignore[arg-type]


async def test_new_files_are_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "s.jsonl"
        create_session_file(path, "s", SessionMetadata())
        storage = JSONLStorage(path)
        await storage.append_entry(parse_entry(msg("a", None)))
        fork = await storage.fork("a")
        assert isinstance(fork, JSONLStorage)
    finally:
        os.umask(old)
    for p in (path, path.with_name("s.jsonl.lock"), fork.path):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p


async def test_fork_of_a_file_outside_a_repository_is_a_sibling_file(pi_copy: Path) -> None:
    original = data_of(pi_copy)
    storage = JSONLStorage(pi_copy)
    leaf = await storage.get_leaf_id()
    assert leaf is not None
    fork = await storage.fork(leaf)
    assert isinstance(fork, JSONLStorage)
    assert fork.path.parent == pi_copy.parent and fork.path.name == f"{fork.id}.jsonl"
    assert fork.metadata.parent_session_id == storage.id
    assert [e.id for e in await fork.get_branch()] == [e.id for e in await storage.get_branch()]
    assert data_of(pi_copy) == original


async def test_append_entries_is_all_or_nothing_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    content = write(path, line(HEADER), line(msg("a", None)))
    storage = JSONLStorage(path)
    batch = [parse_entry(msg("b", "a")), parse_entry(msg("c", "b")), parse_entry(msg("d", "x"))]
    with pytest.raises(EntryNotFoundError):
        await storage.append_entries(batch)
    assert path.read_bytes() == content
    assert [e.id for e in await storage.get_entries()] == ["a"]
    await storage.append_entries(batch[:2])
    assert [r["id"] for r in lines_of(path)[1:]] == ["a", "b", "c"]


async def test_appending_to_a_session_deleted_elsewhere_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), line(msg("a", None)))
    storage = JSONLStorage(path)
    assert await storage.get_leaf_id() == "a"
    path.unlink()  # another process removed the session
    with pytest.raises(SessionNotFoundError):
        await storage.append_entry(parse_entry(msg("b", "a")))
    assert os.listdir(tmp_path) == []  # not recreated, no stray lock file
    with pytest.raises(SessionNotFoundError):
        await storage.get_entries()


async def test_appending_after_the_log_was_replaced_by_a_rename_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), line(msg("a", None)))
    storage = JSONLStorage(path)
    await storage.append_entry(parse_entry(msg("b", "a")))  # the lock file is open now
    other = tmp_path / "other.jsonl"
    content = write(other, line(HEADER), line(msg("x", None)))
    os.replace(other, path)  # an editor saving a new file over the log
    with pytest.raises(SessionNotFoundError, match="replaced"):
        await storage.append_entry(parse_entry(msg("c", "b")))
    assert path.read_bytes() == content


@pytest.mark.parametrize("remove", ["log", "link"])
async def test_a_log_with_a_second_name_is_checked_by_its_name(tmp_path: Path, remove: str) -> None:
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), line(msg("a", None)))
    storage = JSONLStorage(path)
    await storage.append_entry(parse_entry(msg("b", "a")))
    link = tmp_path / "backup.jsonl"
    os.link(path, link)  # the log has two names: one link gone is not a deleted log
    if remove == "link":
        link.unlink()
        await storage.append_entry(parse_entry(msg("c", "b")))
        assert [r["id"] for r in lines_of(path)[1:]] == ["a", "b", "c"]
        return
    path.unlink()  # the log's own name is gone, though the file lives on as backup.jsonl
    with pytest.raises(SessionNotFoundError, match="deleted"):
        await storage.append_entry(parse_entry(msg("c", "b")))
    assert [r["id"] for r in lines_of(link)[1:]] == ["a", "b"]


async def test_each_entry_is_one_write_and_a_writer_reads_only_new_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), line(msg("a", None)))
    mine, other = JSONLStorage(path), JSONLStorage(path)
    theirs = msg("b", "a")
    await other.append_entry(parse_entry(theirs))
    writes: list[bytes] = []
    reads: list[int] = []
    real_write, real_pread = os.write, os.pread

    def recording_write(fd: int, data: Any) -> int:
        writes.append(bytes(data))
        return real_write(fd, data)

    def counting_pread(fd: int, n: int, off: int) -> bytes:
        data = real_pread(fd, n, off)
        reads.append(len(data))
        return data

    monkeypatch.setattr(os, "write", recording_write)
    monkeypatch.setattr(os, "pread", counting_pread)
    batch = [parse_entry(msg("c", "b")), parse_entry(msg("d", "c")), parse_entry(msg("e", "d"))]
    await mine.append_entries(batch)
    assert sum(reads) == len(line(theirs))  # only what ``other`` appended
    assert [orjson.loads(w)["id"] for w in writes] == ["c", "d", "e"]
    assert all(w.endswith(b"\n") and w.count(b"\n") == 1 for w in writes)


async def test_entries_are_validated_only_when_returned(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    bad_sibling = {"type": "message", "id": "x", "parentId": "a", "timestamp": "t", "message": 1}
    write(path, line(HEADER), line(msg("a", None)), line(bad_sibling), line(msg("b", "a")))
    session = Session(JSONLStorage(path))
    assert await session.get_leaf_id() == "b"
    ctx = await session.build_context()  # the branch a → b never touches line 3
    assert len(ctx.messages) == 2
    with pytest.raises(CorruptSessionError) as err:
        await session.get_entries()
    assert err.value.line_number == 3


_scalars = st.sampled_from(
    ["null", "true", "1", "-0", "1e400", "123456789012345678901234567890", "NaN", "-Infinity"]
) | st.text(max_size=6).map(lambda t: orjson.dumps(t).decode())
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda v: "[" + ",".join(v) + "]")
        | st.lists(st.tuples(st.sampled_from(['"a"', '"id"']), inner), max_size=3).map(
            lambda kv: "{" + ",".join(f"{k}:{v}" for k, v in kv) + "}"
        )
    ),
    max_leaves=10,
)
_keys = st.sampled_from(['"type"', '"id"', '"parentId"', '"message"', '"x"', '"i\\u0064"'])


@st.composite
def entry_like_lines(draw: st.DrawFn) -> bytes:
    """Object lines with the head keys (repeated, missing, of any kind) among other keys and
    values: non-finite constants, huge numbers, nesting; some cut short or with bytes added."""
    pairs = draw(st.lists(st.tuples(_keys, _values | _scalars), max_size=6))
    if draw(st.booleans()):
        pairs = [('"type"', '"message"'), ('"id"', '"e1"'), *pairs]
    text = ("{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}").encode()
    cut = draw(st.integers(0, len(text)))
    tail = draw(st.sampled_from([b"", b" ", b"x", b"\xff", b"}"]))
    return text if draw(st.booleans()) else text[:cut] + tail


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entry_like_lines() | st.binary(max_size=40))
def test_a_line_head_read_fast_is_what_the_strict_parser_reads(line: bytes) -> None:
    """Where the scan's fast read answers, the strict parser accepts the line and reads the
    same id, type and parent: a line is never taken that the strict scan would refuse."""
    head = line_head(line)
    if head is None:
        return
    obj = exact_json.loads(line)
    assert type(obj) is dict
    assert head == (obj["id"], obj["type"], obj.get("parentId"))
    assert all(type(v) is str for v in head[:2]) and head[0]
    assert head[2] is None or type(head[2]) is str


def test_a_line_head_leaves_non_finite_and_odd_lines_to_the_strict_parser() -> None:
    head = b'{"type":"message","id":"e1","parentId":null'
    assert line_head(head + b"}") == ("e1", "message", None)
    assert line_head(head + b',"x":"Infinity"}') is None  # may be a constant: strict decides
    assert line_head(head + b',"x":NaN}') is None
    assert line_head(b'{"type":"message","id":""}') is None
    assert line_head(b'{"type":1,"id":"e1"}') is None
    assert line_head(head + b"} x") is None
    assert line_head(b'{"type":"a","type":"b","id":"e1"}') == ("e1", "b", None)


def test_a_non_finite_constant_in_a_middle_line_is_still_refused_at_open(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    bad = b'{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z",'
    bad += b'"message":{"role":"user","content":"x","timestamp":1},"x":NaN}\n'
    path.write_bytes(line(HEADER) + line(msg("a", None)) + bad + line(msg("c", "b")))
    with pytest.raises(CorruptSessionError) as info:
        JSONLStorage(path)
    assert info.value.line_number == 3
