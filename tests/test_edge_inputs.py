"""Inputs at the edges of JSON and files, each with the input that shows it: values JSON cannot
carry, big integers, deep nesting, lines without a newline, byte-order marks, bad arguments."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sessiontree import CorruptSessionError, InvalidEntryError, SessionRepo, StorageError, open_repo
from sessiontree.backends.jsonl.listing_index import INDEX_DIR
from sessiontree.backends.jsonl.repo import JSONLRepo
from sessiontree.messages import message_text
from sessiontree.repos import MemoryRepo
from sessiontree.testing.builders import user
from sessiontree.testing.conformance import Reopen, reopened, snapshot


async def test_jsonl_delete_refuses_a_folder_that_is_not_a_session(tmp_path: Path) -> None:
    """Deleting 'notes' once removed a user's folder whose session.jsonl was not a session."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "session.jsonl").write_text("my precious notes\n")
    (tmp_path / "notes" / "keep.txt").write_text("x")
    async with JSONLRepo(tmp_path) as repo:
        with pytest.raises(CorruptSessionError):
            await repo.open("notes")
        with pytest.raises(CorruptSessionError):
            await repo.delete("notes")
    assert (tmp_path / "notes" / "session.jsonl").read_text() == "my precious notes\n"
    assert (tmp_path / "notes" / "keep.txt").exists()


async def test_jsonl_delete_removes_only_its_own_files(tmp_path: Path) -> None:
    async with JSONLRepo(tmp_path) as repo:
        s = await repo.create(id="s1")
        await s.append_message(user("hi"))
        await s.close()
        (tmp_path / "s1" / "attachment.png").write_bytes(b"\x89PNG")
        await repo.delete("s1")
        assert [i.id for i in await repo.list()] == []
    assert sorted(p.name for p in (tmp_path / "s1").iterdir()) == ["attachment.png"]


@pytest.mark.parametrize(
    "bad",
    [float("nan"), float("inf"), {"x": [1, float("-inf")]}, "lone \ud83d surrogate", b"\x00\xff"],
    ids=["nan", "inf", "nested-inf", "surrogate", "bytes"],
)
async def test_values_json_cannot_carry_are_refused_everywhere(
    repo: SessionRepo, reopen: Reopen, bad: Any
) -> None:
    """A NaN once made a JSONL session unreadable; SQLite silently stored null instead."""
    s = await repo.create()
    await s.append_message(user("before"))
    before = await snapshot(s)
    with pytest.raises(InvalidEntryError) as err:
        await s.append_custom_entry("t", bad)
    assert s.id in str(err.value)
    if isinstance(bad, str):
        with pytest.raises(InvalidEntryError):
            await s.append_message({"role": "user", "content": bad})
    assert await snapshot(s) == before
    async with reopened(reopen, s) as again:
        assert len(await again.get_entries()) == 1
        await again.build_context()


async def test_wrong_argument_types_give_typed_errors(repo: SessionRepo) -> None:
    s = await repo.create()
    u = await s.append_message(user("q"))
    before = await snapshot(s)
    calls = [
        lambda: s.append_model_change(None, None),  # type: ignore[arg-type]
        lambda: s.append_label(5, "x"),  # type: ignore[arg-type]
        lambda: s.append_label(u, 5),  # type: ignore[arg-type]
        lambda: s.set_leaf_id(5),  # type: ignore[arg-type]
        lambda: s.fork(None),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(InvalidEntryError):
            await call()
    assert await snapshot(s) == before
    with pytest.raises(InvalidEntryError):
        await repo.create(metadata="x")  # type: ignore[arg-type]


def test_empty_store_url_is_refused() -> None:
    """--store "" once used the current directory as a JSONL store."""
    for url in ("", "   "):
        with pytest.raises(StorageError, match="empty store URL"):
            open_repo(url)


async def test_jsonl_store_root_that_is_a_file(tmp_path: Path) -> None:
    """A jsonl:// URL naming a regular file was reported as "already present" by import."""
    root = tmp_path / "notdb.txt"
    root.write_text("not a directory")
    async with JSONLRepo(root) as repo:
        with pytest.raises(StorageError, match="JSONL store"):
            await repo.create(id="s1")
    assert root.read_text() == "not a directory"


def test_exact_json_keeps_big_integers_and_refuses_nan() -> None:
    # 2**70 must read back as an int, not a float (orjson's reading), or data would change
    from sessiontree import _json

    assert _json.loads(b'{"n": 1180591620717411303425, "m": -36893488147419103232}') == {
        "n": 2**70 + 1,
        "m": -(2**65),
    }
    for bad in (b'{"v": NaN}', b'{"v": Infinity}', b"{", b""):
        with pytest.raises(_json.JSONDecodeError):
            _json.loads(bad)


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def _write_deep_line(path: Path, parent: str, call: dict[str, Any]) -> None:
    """Append a message line holding ``call`` to a session file, as another tool would."""
    import orjson

    from sessiontree.testing.builders import assistant

    line = {
        "type": "message",
        "id": "deep-1",
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": assistant("", call),
    }
    with path.open("ab") as f:
        f.write(orjson.dumps(line) + b"\n")


async def test_deeply_nested_entry_is_read_back_not_cut_as_torn(tmp_path: Path) -> None:
    # the exact JSON parser stops at ~200 levels; a 210-deep tool argument
    # made the last line look torn, and the next append cut the complete line off the file.
    # Such an entry is appended and read back (every reader goes to 1024 levels); one a file
    # another writer put it in is read, and kept.
    from sessiontree.testing.builders import assistant

    repo = JSONLRepo(tmp_path)
    s = await repo.create()
    first = await s.append_message(user("hi"))
    deep = _nested(210)
    call = {"type": "toolCall", "id": "t", "name": "deep", "arguments": deep}
    appended = await s.append_message(assistant("", call))
    await s.navigate(first)
    assert len(await s.get_entries()) == 3
    _write_deep_line(tmp_path / s.id / "session.jsonl", first, call)
    again = await JSONLRepo(tmp_path).open(s.id)
    ids = [e.id for e in await again.get_entries()]
    assert ids[1] == appended and ids[-1] == "deep-1"
    await again.append_message(user("next"))
    entries = await (await JSONLRepo(tmp_path).open(s.id)).get_entries()
    assert len(entries) == 5
    assert entries[3].message.content[0].arguments == deep  # type: ignore[union-attr]
    assert entries[1].message.content[0].arguments == deep  # type: ignore[union-attr]


async def test_big_integers_survive_show_export_and_token_counting(tmp_path: Path) -> None:
    # read back exactly, a 2**70 tool argument must not crash orjson.dumps callers (CLI show,
    # pi export, token estimates) with "Integer exceeds 64-bit range"
    from sessiontree.compaction.tokens import estimate_context_tokens
    from sessiontree.interop.pi import export_pi_session
    from sessiontree.testing.builders import assistant

    repo = JSONLRepo(tmp_path / "store")
    s = await repo.create()
    await s.append_message(user("count"))
    call = {"type": "toolCall", "id": "t", "name": "n", "arguments": {"n": 2**70}}
    await s.append_message(assistant("", call))
    again = await JSONLRepo(tmp_path / "store").open(s.id)
    assert estimate_context_tokens((await again.build_context()).messages) > 0
    await export_pi_session(again, tmp_path / "out.jsonl")
    assert b"1180591620717411303424" in (tmp_path / "out.jsonl").read_bytes()


async def test_valid_final_line_without_newline_is_kept(tmp_path: Path) -> None:
    # a complete last entry without its newline (a file another tool wrote) is not torn: it
    # must not be hidden on read and then cut off the file by the next append
    repo = JSONLRepo(tmp_path)
    s = await repo.create()
    await s.append_message(user("one"))
    await s.append_message(user("two"))
    path = tmp_path / s.id / "session.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    reader = await JSONLRepo(tmp_path).open(s.id)
    writer = await JSONLRepo(tmp_path).open(s.id)
    assert [message_text(m) for m in (await reader.build_context()).messages] == ["one", "two"]
    await writer.append_message(user("three"))  # finishes the line, then appends
    await reader.append_message(user("four"))  # sees the finished line: no blank line
    data = path.read_bytes()
    assert data.endswith(b"\n") and b"\n\n" not in data and data.count(b"\n") == 5
    fresh = await JSONLRepo(tmp_path).open(s.id)
    texts = [message_text(m) for m in (await fresh.build_context()).messages]
    assert texts == ["one", "two", "three", "four"]
    # a tail that is not one whole valid entry is still torn, and cut before the next append
    with path.open("ab") as f:
        f.write(b'{"type": "message", "id": "half')
    torn = await JSONLRepo(tmp_path).open(s.id)
    assert len(await torn.get_entries()) == 4
    await torn.append_message(user("five"))
    assert b"half" not in path.read_bytes()
    assert len(await (await JSONLRepo(tmp_path).open(s.id)).get_entries()) == 5


async def test_failed_fork_leaves_no_session_behind(tmp_path: Path) -> None:
    # forking at an entry that cannot be copied (a file another tool wrote
    # holds it: here an id longer than any store keeps) failed, and left an empty fork session
    import orjson

    repo = JSONLRepo(tmp_path)
    s = await repo.create()
    first = await s.append_message(user("hi"))
    line = {
        "type": "message",
        "id": "x" * 600,
        "parentId": first,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "long id", "timestamp": 1},
    }
    with (tmp_path / s.id / "session.jsonl").open("ab") as f:
        f.write(orjson.dumps(line) + b"\n")
    again = await repo.open(s.id)
    before = [i.id for i in await repo.list()]
    with pytest.raises(InvalidEntryError, match="longer than"):
        await again.fork("x" * 600)
    assert [i.id for i in await repo.list()] == before
    assert sorted(os.listdir(tmp_path)) == [INDEX_DIR, s.id]  # and the listing index


async def test_unterminated_json_tail_is_a_line_not_a_torn_write(tmp_path: Path) -> None:
    # a whole JSON line without newline that is not a valid entry is not cut off by the next
    # append; and a reader that counted the unterminated line does not count the newline
    # another writer adds as one more line (line numbers stay right)
    import orjson

    repo = JSONLRepo(tmp_path)
    s = await repo.create()
    one = await s.append_message(user("one"))
    path = tmp_path / s.id / "session.jsonl"
    whole = orjson.dumps(
        {
            "type": "message",
            "id": "L",
            "parentId": one,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user"},  # no content: not a valid entry
        }
    )
    with path.open("ab") as f:
        f.write(whole)
    reader = await JSONLRepo(tmp_path).open(s.id)
    writer = await JSONLRepo(tmp_path).open(s.id)
    await writer.append_entry(
        {"type": "message", "parentId": one, "message": {"role": "user", "content": "two"}}
    )
    assert whole + b"\n" in path.read_bytes()  # kept, and finished
    with path.open("ab") as f:
        f.write(b'{"bad": 1}\n')  # physically line 5 (header, one, L, two, bad)
    for storage in (reader, writer):
        with pytest.raises(CorruptSessionError, match=r"session\.jsonl:5"):
            await storage.get_entries()
    with pytest.raises(CorruptSessionError, match=r"session\.jsonl:5"):
        await JSONLRepo(tmp_path).open(s.id)


async def test_header_only_file_without_newline_opens_and_appends(tmp_path: Path) -> None:
    # what is listed opens: not "the header line is incomplete"
    repo = JSONLRepo(tmp_path)
    s = await repo.create()
    path = tmp_path / s.id / "session.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    again = await JSONLRepo(tmp_path).open(s.id)
    assert await again.get_entries() == []
    await again.append_message(user("first"))
    data = path.read_bytes()
    assert data.count(b"\n") == 2 and data.endswith(b"\n")
    fresh = await JSONLRepo(tmp_path).open(s.id)
    assert [message_text(m) for m in (await fresh.build_context()).messages] == ["first"]


async def test_whole_unterminated_last_line_is_a_line_for_list_search_and_verify(
    tmp_path: Path,
) -> None:
    # storage, list, search and verify agree that such a line is a line (verify must not call
    # it torn, "ignored and cut off before the next append")
    from sessiontree.cli.maintenance import torn_final_line

    repo = JSONLRepo(tmp_path)
    s = await repo.create()
    await s.append_message(user("first alpha"))
    await s.append_message(user("zebraword last"))
    await repo.close()
    folder = tmp_path / s.id
    path = folder / "session.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    for sidecar in folder.glob("stats*"):
        sidecar.unlink()
    fresh = JSONLRepo(tmp_path)
    (info,) = await fresh.list()
    assert (info.entry_count, info.message_count) == (2, 2)
    assert [h.entry_id for h in await fresh.search("zebraword")] != []
    assert torn_final_line(path) is None
    with path.open("ab") as f:
        f.write(b'\n{"type": "message", "id": "half')
    assert torn_final_line(path) == 4


async def test_import_of_a_line_nested_past_every_writer_is_reported(tmp_path: Path) -> None:
    # reporting the refused line must not call orjson, which stops at 254 levels: a
    # TypeError would end the whole import, --lenient too
    import orjson

    from sessiontree.interop import import_session

    deep: Any = 1
    for _ in range(1100):  # past the 1024 levels any reader goes
        deep = [deep]
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "deep-import",
            "timestamp": "2026-05-12T01:02:27.657Z",
            "cwd": "/w",
        },
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-05-12T01:02:27.673Z",
            "message": {"role": "user", "content": "hi", "timestamp": 1},
        },
    ]
    text = b"\n".join(orjson.dumps(x) for x in lines) + b"\n"
    bad = (
        b'{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-05-12T01:02:28.000Z",'
        b'"message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n",'
        b'"arguments":{"n":' + b"[" * 1100 + b"1" + b"]" * 1100 + b"}}]}}\n"
    )
    path = tmp_path / "deep.jsonl"
    path.write_bytes(text + bad)
    with pytest.raises(CorruptSessionError, match=r"deep\.jsonl:3"):
        await import_session(path, MemoryRepo())
    session, report = await import_session(path, MemoryRepo(), lenient=True)
    assert [u.line for u in report.unreadable_lines] == [3]
    assert len(await session.get_entries()) == 1


async def test_session_file_with_a_byte_order_mark_is_listed_and_opened(tmp_path: Path) -> None:
    # import accepts a BOM, so the JSONL store lists such a session too
    repo = JSONLRepo(tmp_path)
    s = await repo.create()
    await s.append_message(user("with a bom"))
    await repo.close()
    path = tmp_path / s.id / "session.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    for sidecar in (tmp_path / s.id).glob("stats*"):
        sidecar.unlink()
    fresh = JSONLRepo(tmp_path)
    assert [i.id for i in await fresh.list()] == [s.id]
    again = await fresh.open(s.id)
    await again.append_message(user("after"))
    texts = [message_text(m) for m in (await again.build_context()).messages]
    assert texts == ["with a bom", "after"]
    reread = await JSONLRepo(tmp_path).open(s.id)
    assert [message_text(m) for m in (await reread.build_context()).messages] == texts


def test_verify_reads_a_bom_header_without_newline_as_whole(tmp_path: Path) -> None:
    # storage opens such a file, so verify must not call its only line torn
    from sessiontree.cli.maintenance import torn_final_line

    path = tmp_path / "session.jsonl"
    header = (
        b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":""}'
    )
    path.write_bytes(b"\xef\xbb\xbf" + header)
    assert torn_final_line(path) is None
    path.write_bytes(b"\xef\xbb\xbf" + header[:-5])
    assert torn_final_line(path) == 1


@pytest.mark.parametrize("bad_id", ["a\x00b", "\ud800", "x\udc00y"], ids=["nul", "high", "low"])
async def test_ids_holding_nul_or_a_lone_surrogate_are_refused_alike_everywhere(
    repo: SessionRepo, bad_id: str
) -> None:
    """A NUL id was stored by memory, JSONL and SQLite and refused by PostgreSQL alone; a
    lone surrogate raised the SQL drivers' UnicodeEncodeError. Now every backend gives the
    same InvalidEntryError, and nothing is stored."""
    from sessiontree import LabelEntry, LeafEntry, MessageEntry
    from sessiontree.errors import InvalidArgumentError
    from sessiontree.messages import UserMessage

    s = await repo.create()
    u = await s.append_message(user("q"))
    before = await snapshot(s)
    message = UserMessage(content="x")
    made: list[Any] = [
        MessageEntry.model_construct(id=bad_id, parent_id=u, message=message, timestamp="t"),
        MessageEntry(parent_id=u, message=message).model_copy(update={"parent_id": bad_id}),
        LabelEntry(target_id=u, label="l", parent_id=u).model_copy(update={"target_id": bad_id}),
        LeafEntry(target_id=u, parent_id=u).model_copy(update={"target_id": bad_id}),
    ]
    messages = []
    for entry in made:
        for append in (s.append_entry, lambda e: s.storage.append_entries([e])):
            with pytest.raises(InvalidEntryError) as err:
                await append(entry)
            messages.append(str(err.value).replace(s.id, "<session>"))
    with pytest.raises(InvalidEntryError):
        await s.append_entry({"type": "message", "id": bad_id, "parentId": u,
                              "timestamp": "2026-01-01T00:00:00.000Z",
                              "message": {"role": "user", "content": "x"}})  # fmt: skip
    with pytest.raises(InvalidEntryError):
        await repo.create(entries=[made[0].model_copy(update={"parent_id": None})])
    with pytest.raises(InvalidEntryError, match="timestamp"):  # a column too, on SQL
        await s.append_entry({"type": "custom", "customType": "x", "timestamp": "2026\x00"})
    for read in (s.get_entry, s.get_label, s.set_leaf_id, lambda i: s.get_branch(i)):
        with pytest.raises(InvalidArgumentError):
            await read(bad_id)
    assert await snapshot(s) == before
    assert all("cannot be an entry id" in m and repr(bad_id) in m for m in messages), messages
    assert len(await repo.list()) == 1
