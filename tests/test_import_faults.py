"""The faults real files and their users showed, each as a test (docs/interop.md)."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from session_files import VENDORED, session_file
from sessiontree import MemoryRepo, import_session
from sessiontree.context import LOST_RESULT_TEXT, find_tool_pair_problems
from sessiontree.entries import CompactionEntry, CustomEntry, LeafEntry, MessageEntry
from sessiontree.errors import CorruptSessionError, DuplicateEntryError, UnknownFormatError
from sessiontree.interop import DanglingParent
from sessiontree.messages import (
    AssistantMessage,
    CompactionSummaryMessage,
    OpaqueMessage,
    TextContent,
    ToolResultMessage,
)

SESSIONS = VENDORED
CLAUDE = SESSIONS / "claude-code"
PI = SESSIONS / "pi"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in path.read_bytes().split(b"\n") if raw.strip()]


def _entry_of(rows: list[dict[str, Any]], row: dict[str, Any]) -> str:
    """The entry id a Claude Code line lands in: a reply over several lines sharing
    ``message.id`` is one entry, with the uuid of its first line."""
    msg = row.get("message") or {}
    if row.get("type") == "assistant" and msg.get("id"):
        first = next(r for r in rows if (r.get("message") or {}).get("id") == msg["id"])
        return str(first["uuid"])
    return str(row["uuid"])


def _lines_on(branch: list[Any]) -> set[int]:
    """The source lines the entries of a branch were made from."""
    out: set[int] = set()
    for e in branch:
        source = getattr(e, "source", None)
        if isinstance(source, dict):
            out.add(source["line"])
            out.update(m["line"] for m in source.get("merged", []))
    return out


# ----------------------------------------------------------------- dangling parentUuid


async def test_a_dangling_parent_uuid_is_reattached_to_the_nearest_earlier_record() -> None:
    path = CLAUDE / "agent-a7c3dfb.jsonl"
    rows = _lines(path)
    line6 = rows[5]
    assert line6["parentUuid"] == "88c4af90-5a53-48c6-9559-c372cd8f4901"
    assert line6["parentUuid"] not in {r["uuid"] for r in rows}

    session, report = await import_session(path, MemoryRepo())

    # a sub-agent file names its parent session; its own id keeps the two apart
    assert session.id == f"{line6['sessionId']}-agent-a7c3dfb"
    [dangling] = report.dangling_parents
    assert (dangling.line, dangling.entry_id, dangling.parent_id) == (
        6,
        line6["uuid"],
        "88c4af90-5a53-48c6-9559-c372cd8f4901",
    )
    entry = await session.get_entry(line6["uuid"])
    assert entry is not None and entry.parent_id == dangling.attached_to
    assert dangling.attached_to == _entry_of(rows, rows[4])  # line 5, the record before it
    # one conversation: every line is on the leaf's branch, every result in the context
    branch = await session.get_branch()
    assert _lines_on(branch) == set(range(1, len(rows) + 1))
    assert (await session.get_stats()).roots == 1
    assert await session.get_leaf_id() == _entry_of(rows, rows[-1])
    ctx = await session.build_context()
    results = [m for m in ctx.messages if isinstance(m, ToolResultMessage)]
    expected = sum(
        b.get("type") == "tool_result"
        for r in rows
        if isinstance(r["message"].get("content"), list)
        for b in r["message"]["content"]
    )
    assert len(results) == expected and not any(LOST_RESULT_TEXT in str(m.content) for m in results)
    assert find_tool_pair_problems(ctx.messages) == []


# ----------------------------------------------------------------- side records / sidechains


@pytest.mark.parametrize(
    "name",
    ["fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl", "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"],
)
async def test_sidechains_never_become_the_leaf(name: str) -> None:
    path = CLAUDE / name
    rows = _lines(path)
    main = [(n, r) for n, r in enumerate(rows, 1) if r.get("uuid") and not r.get("isSidechain")]
    side = {r["uuid"] for r in rows if r.get("uuid") and r.get("isSidechain")}
    assert side, "the file has inline sub-agent conversations"

    session, _ = await import_session(path, MemoryRepo())

    assert await session.get_leaf_id() == _entry_of(rows, main[-1][1])
    branch = await session.get_branch()
    assert not {e.id for e in branch} & side
    messages = [e for e in branch if isinstance(e, MessageEntry)]
    assert messages[0].id == main[0][1]["uuid"]  # the main conversation from its first line
    # every main-conversation line, and only those (and uuid-less side records), is on it
    on_branch = _lines_on(branch)
    assert {n for n, _ in main} <= on_branch
    assert not on_branch & {n for n, r in enumerate(rows, 1) if r.get("isSidechain")}


async def test_side_records_after_the_main_conversation_do_not_move_the_leaf(
    tmp_path: Path,
) -> None:
    """A file that ends with sidechain and uuid-less side records: the leaf stays on the
    newest main-conversation message (a trailing ``leaf`` entry puts it there)."""
    src = CLAUDE / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    rows = _lines(src)
    main_last = [r for r in rows if r.get("uuid") and not r.get("isSidechain")][-1]
    side_last = [r for r in rows if r.get("isSidechain")][-1]
    extra_side = {
        **side_last,
        "uuid": "0000-side",
        "parentUuid": side_last["uuid"],
        "message": {**side_last["message"], "id": "msg_another_reply"},
    }
    progress = {"type": "progress", "data": {"step": 1}, "sessionId": side_last["sessionId"]}
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        src.read_bytes()
        + (json.dumps(extra_side) + "\n").encode()
        + (json.dumps(progress) + "\n").encode()
    )

    session, report = await import_session(path, MemoryRepo())

    assert await session.get_leaf_id() == main_last["uuid"] == report.leaf_id
    last = (await session.get_entries())[-1]
    assert isinstance(last, LeafEntry) and last.target_id == main_last["uuid"]
    assert any("leaf" in w for w in report.warnings)
    # the side records are kept, hanging where they were written
    side_entry = await session.get_entry("0000-side")
    assert side_entry is not None and side_entry.parent_id == _entry_of(rows, side_last)
    custom = [e for e in await session.get_entries() if isinstance(e, CustomEntry)]
    assert [c.custom_type for c in custom] == ["claude-code:progress"]
    assert custom[0].parent_id == "0000-side"
    # appending continues the main conversation
    new_id = await session.append_message({"role": "user", "content": "go on"})
    new = await session.get_entry(new_id)
    assert new is not None and new.parent_id == main_last["uuid"]


# ----------------------------------------------------------------- unmodelled line kinds


async def test_unmodelled_line_kinds_are_kept_as_custom_entries() -> None:
    path = session_file("claude-code/8a283a61-e3f0-4e8f-ba06-6711e2fcf2ed.jsonl")
    rows = _lines(path)
    session, report = await import_session(path, MemoryRepo())

    custom = {e.id: e for e in await session.get_entries() if isinstance(e, CustomEntry)}
    kinds = [r["type"] for r in rows if r["type"] not in ("user", "assistant")]
    assert sorted(kinds) == sorted(
        ["permission-mode"] * 3
        + ["file-history-snapshot"] * 2
        + ["attachment"]
        + ["ai-title"] * 3
        + ["last-prompt"] * 2
        + ["system"] * 2
    )
    assert len(report.custom_lines) == len(kinds) == len(custom)
    for record in report.custom_lines:
        entry = custom[record.entry_id]
        assert entry.data == rows[record.line - 1]  # the whole line, unchanged
        assert entry.custom_type == f"claude-code:{rows[record.line - 1]['type']}"
    # side records chain in file order after the newest record: no fork anywhere
    attachment = next(r for r in rows if r["type"] == "attachment")
    assert attachment["uuid"] in custom
    assert custom[attachment["uuid"]].parent_id == attachment["parentUuid"]
    title = next(c for c in report.custom_lines if c.custom_type == "claude-code:ai-title")
    assert title.line == 10
    assert custom[title.entry_id].parent_id == rows[8]["uuid"]  # line 9
    entries = await session.get_entries()
    children = Counter(e.parent_id for e in entries if e.type != "leaf")
    assert max(children.values()) == 1 and children[None] == 1
    # lines before the first record chain before it
    first = next(c for c in report.custom_lines if c.line == 1)
    assert custom[first.entry_id].parent_id is None
    assert (await session.get_entry(rows[2]["uuid"])).parent_id is not None
    # the leaf is the last assistant message, not the trailing system / title lines
    newest = [r for r in rows if r["type"] == "assistant"][-1]
    assert await session.get_leaf_id() == _entry_of(rows, newest)
    ctx = await session.build_context()
    assert find_tool_pair_problems(ctx.messages) == []


# ----------------------------------------------------------------- pi v1 compaction index


async def test_pi_v1_compaction_index_becomes_first_kept_entry_id() -> None:
    path = PI / "pi-mono_before-compaction.v1.jsonl"
    rows = _lines(path)
    indices = [r["firstKeptEntryIndex"] for r in rows if r["type"] == "compaction"]
    assert indices == [293, 551]

    session, report = await import_session(path, MemoryRepo())
    assert report.source_version == 1
    entries = await session.get_entries()
    # ids in file order, each entry's parent the previous one
    assert entries[0].parent_id is None
    assert all(b.parent_id == a.id for a, b in itertools.pairwise(entries))
    compactions = [e for e in entries if isinstance(e, CompactionEntry)]
    assert len(compactions) == 2
    for c, index in zip(compactions, indices, strict=True):
        assert "firstKeptEntryIndex" not in c.to_wire()
        kept = entries[index - 1]  # the header is index 0
        assert c.first_kept_entry_id == kept.id
        assert isinstance(kept, MessageEntry)
        assert not isinstance(kept.message, OpaqueMessage)
        assert kept.message.timestamp == rows[index]["message"]["timestamp"]

    ctx = await session.build_context()
    assert isinstance(ctx.messages[0], CompactionSummaryMessage)
    assert ctx.messages[0].summary == compactions[-1].summary
    kept_entry = entries[indices[-1] - 1]
    assert isinstance(kept_entry, MessageEntry)
    assert ctx.messages[1] == kept_entry.message
    assert find_tool_pair_problems(ctx.messages) == []


# ----------------------------------------------------------------- unreadable lines


def _torn_copy(tmp_path: Path) -> Path:
    data = (PI / "agent-sessions_pi-small.v3.jsonl").read_bytes().rstrip(b"\n")
    path = tmp_path / "torn.jsonl"
    path.write_bytes(data[: len(data) - 40])  # the last line cut in the middle, no newline
    return path


async def test_torn_line_fails_the_import_and_creates_nothing(tmp_path: Path) -> None:
    path = _torn_copy(tmp_path)
    before = path.read_bytes()
    repo = MemoryRepo()
    with pytest.raises(CorruptSessionError) as info:
        await import_session(path, repo)
    assert info.value.line_number == 9
    assert info.value.path == path
    assert f"{path}:9" in str(info.value)
    assert await repo.list() == []
    assert path.read_bytes() == before


async def test_torn_line_is_listed_with_lenient(tmp_path: Path) -> None:
    path = _torn_copy(tmp_path)
    session, report = await import_session(path, MemoryRepo(), lenient=True)
    assert [u.line for u in report.unreadable_lines] == [9]
    assert "torn" in report.unreadable_lines[0].reason
    assert report.unreadable_lines[0].text.startswith('{"type":"compaction"')
    assert report.entries_imported == len(await session.get_entries()) == 7


async def test_bad_line_in_the_middle_with_lenient_cuts_and_reports_the_link(
    tmp_path: Path,
) -> None:
    src = CLAUDE / "agent-a0294d5.jsonl"
    lines = src.read_bytes().split(b"\n")
    rows = [json.loads(raw) for raw in lines if raw.strip()]
    lines[13] = b'{"type": "user", "uuid": broken'
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines))

    with pytest.raises(CorruptSessionError) as info:
        await import_session(path, MemoryRepo())
    assert info.value.line_number == 14

    session, report = await import_session(path, MemoryRepo(), lenient=True)
    assert [u.line for u in report.unreadable_lines] == [14]
    assert "bad JSON" in report.unreadable_lines[0].reason
    # line 15's parent was line 14: it hangs under line 13's entry now, and the report says so
    assert [(d.line, d.entry_id) for d in report.dangling_parents] == [(15, rows[14]["uuid"])]
    assert report.dangling_parents[0].attached_to == _entry_of(rows, rows[12])
    branch = await session.get_branch()
    assert _lines_on(branch) == set(range(1, len(rows) + 1)) - {14}


async def test_not_a_session_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    repo = MemoryRepo()
    for name, content in [
        ("log.txt", b"2026-01-01 12:00:00 INFO server started\nmore\n"),
        ("empty.jsonl", b""),
        ("other.jsonl", b'{"event": "click", "x": 1}\n{"event": "scroll"}\n'),
        ("doc.json", b'{\n  "name": "package",\n  "version": "1.0"\n}\n'),
    ]:
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(UnknownFormatError, match="unknown format: not a session file") as info:
            await import_session(path, repo)
        assert info.value.path == path
        assert path.read_bytes() == content
    assert await repo.list() == []


async def test_a_pi_file_without_a_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "headless.jsonl"
    lines = (PI / "agent-sessions_pi-small.v3.jsonl").read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[1:]))
    with pytest.raises(CorruptSessionError, match="session header"):
        await import_session(path, MemoryRepo(), format="pi")


async def test_duplicate_entry_id_is_unreadable(tmp_path: Path) -> None:
    lines = (PI / "agent-sessions_pi-small.v3.jsonl").read_bytes().rstrip(b"\n").split(b"\n")
    path = tmp_path / "dup.jsonl"
    path.write_bytes(b"\n".join([*lines, lines[3]]) + b"\n")
    with pytest.raises(CorruptSessionError, match="duplicate entry id") as info:
        await import_session(path, MemoryRepo())
    assert info.value.line_number == 10
    _, report = await import_session(path, MemoryRepo(), lenient=True)
    assert [u.line for u in report.unreadable_lines] == [10]


async def test_a_forced_format_that_does_not_match_is_warned_about() -> None:
    path = PI / "agent-sessions_pi-small.v3.jsonl"
    session, report = await import_session(path, MemoryRepo(), format="codex")
    assert report.format == "codex"
    assert any("looks like pi" in w for w in report.warnings)
    # nothing is dropped even then: every line is a custom entry
    assert len(report.custom_lines) == 9 == len(await session.get_entries())


async def test_swe_agent_ids_come_from_the_content(tmp_path: Path) -> None:
    """Trajectories have no id and their names recur across runs: same content, same id
    (a second import is refused); same name, other content, another session."""
    src = SESSIONS / "swe-agent-traj" / "function_calling_simple.traj"
    repo = MemoryRepo()
    first, _ = await import_session(src, repo)
    assert first.id.startswith("swe-agent-")
    with pytest.raises(DuplicateEntryError):
        await import_session(src, repo)
    other = tmp_path / src.name
    other.write_bytes(src.read_bytes().replace(b"missing_colon", b"missing_semicolon"))
    second, _ = await import_session(other, repo)
    assert second.id != first.id


# ----------------------------------------------------------------- broken pi trees


def _pi_v3(tmp_path: Path, entries: list[dict[str, Any]]) -> Path:
    header = {"type": "session", "version": 3, "id": "t3", "timestamp": "2026-01-01T00:00:00.000Z"}
    path = tmp_path / "tree.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, *entries]))
    return path


def _msg(entry_id: str, parent: str | None, text: str = "x") -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1767225601000},
    }


async def test_pi_parent_that_names_no_entry_is_a_reported_root(tmp_path: Path) -> None:
    path = _pi_v3(tmp_path, [_msg("a", None), _msg("b", "gone"), _msg("c", "b")])
    session, report = await import_session(path, MemoryRepo())
    assert report.dangling_parents == [DanglingParent(3, "b", "gone")]
    assert [e.id for e in await session.get_branch()] == ["b", "c"]
    assert (await session.get_stats()).roots == 2


async def test_pi_child_written_before_its_parent_is_moved_after_it(tmp_path: Path) -> None:
    path = _pi_v3(tmp_path, [_msg("c", "b"), _msg("a", None), _msg("b", "a")])
    session, report = await import_session(path, MemoryRepo())
    assert report.ok
    assert [e.id for e in await session.get_entries()] == ["a", "b", "c"]
    assert [e.id for e in await session.get_branch()] == ["a", "b", "c"]


async def test_pi_parent_cycle_is_cut_and_reported(tmp_path: Path) -> None:
    path = _pi_v3(tmp_path, [_msg("a", None), _msg("b", "c"), _msg("c", "b")])
    session, report = await import_session(path, MemoryRepo())
    assert [(d.line, d.entry_id, d.reason) for d in report.dangling_parents] == [(3, "b", "cycle")]
    assert len(await session.get_entries()) == 3
    assert [e.id for e in await session.get_branch()] == ["b", "c"]


async def test_pi_label_of_a_missing_entry_is_unreadable(tmp_path: Path) -> None:
    label = {
        "type": "label",
        "id": "l1",
        "parentId": "a",
        "timestamp": "2026-01-01T00:00:02.000Z",
        "targetId": "nowhere",
        "label": "x",
    }
    path = _pi_v3(tmp_path, [_msg("a", None), label])
    with pytest.raises(CorruptSessionError, match="targetId 'nowhere'") as info:
        await import_session(path, MemoryRepo())
    assert info.value.line_number == 3
    session, report = await import_session(path, MemoryRepo(), lenient=True)
    assert [(u.line, u.reason) for u in report.unreadable_lines] == [
        (3, "targetId 'nowhere' names no entry")
    ]
    assert [e.id for e in await session.get_entries()] == ["a"]


async def test_a_repeated_claude_uuid_is_kept_beside_the_first(tmp_path: Path) -> None:
    src = CLAUDE / "agent-a0294d5.jsonl"
    lines = src.read_bytes().rstrip(b"\n").split(b"\n")
    path = tmp_path / "resumed.jsonl"
    path.write_bytes(b"\n".join([*lines, lines[4]]) + b"\n")
    again = json.loads(lines[4])

    session, report = await import_session(path, MemoryRepo())

    assert report.unreadable_lines == []
    assert any("already used" in w for w in report.warnings)
    dup = [c for c in report.custom_lines if c.custom_type == "claude-code:duplicate"]
    assert [c.line for c in dup] == [96]
    entry = await session.get_entry(dup[0].entry_id)
    assert isinstance(entry, CustomEntry) and entry.data == again
    rows = [json.loads(raw) for raw in lines]
    first = await session.get_entry(_entry_of(rows, again))
    assert isinstance(first, MessageEntry)  # the first line keeps its place
    # the leaf stays on the newest message, not on the repeated record
    assert await session.get_leaf_id() == _entry_of(rows, rows[-1])


async def test_a_missing_file_is_a_storage_error(tmp_path: Path) -> None:
    from sessiontree.errors import StorageError

    with pytest.raises(StorageError, match="cannot read") as info:
        await import_session(tmp_path / "nope.jsonl", MemoryRepo())
    assert isinstance(info.value.__cause__, OSError)
    with pytest.raises(StorageError):
        await import_session(tmp_path, MemoryRepo())


async def test_the_report_is_json_ready() -> None:
    import orjson

    _, report = await import_session(CLAUDE / "agent-a7c3dfb.jsonl", MemoryRepo())
    data = orjson.loads(orjson.dumps(report.to_dict()))
    assert data["format"] == "claude-code"
    assert data["dangling_parents"][0]["line"] == 6
    assert data["source_path"].endswith("agent-a7c3dfb.jsonl")
    assert "1 dangling parents" in report.summary()


async def test_a_damaged_first_line_is_still_detected_and_reported(tmp_path: Path) -> None:
    lines = (CLAUDE / "agent-a7c3dfb.jsonl").read_bytes().split(b"\n")
    path = tmp_path / "damaged-start.jsonl"
    path.write_bytes(b"\n".join([lines[0][:50], *lines[1:]]))
    with pytest.raises(CorruptSessionError) as info:
        await import_session(path, MemoryRepo())
    assert info.value.line_number == 1
    _, report = await import_session(path, MemoryRepo(), lenient=True)
    assert report.format == "claude-code"
    assert [u.line for u in report.unreadable_lines] == [1]
    # line 2's parent was line 1: it is a root now, and the report says so
    assert [d.line for d in report.dangling_parents] == [2, 6]


# ----------------------------------------------------------------- more import faults


def _copy(src: Path, dst: Path, *, prefix: bytes = b"", suffix: bytes = b"") -> Path:
    dst.write_bytes(prefix + src.read_bytes() + suffix)
    return dst


@pytest.mark.parametrize(
    ("path", "fmt"),
    [
        (PI / "agent-sessions_pi-small.v3.jsonl", "pi"),
        (CLAUDE / "agent-a7c3dfb.jsonl", "claude-code"),
        (SESSIONS / "codex" / "sample_codex_session_simonw.jsonl", "codex"),
        (SESSIONS / "swe-agent-traj" / "function_calling_simple.traj", "swe-agent"),
    ],
)
async def test_a_utf8_bom_before_the_first_line_is_ignored(
    tmp_path: Path, path: Path, fmt: str
) -> None:
    plain_session, plain = await import_session(path, MemoryRepo())
    with_bom = _copy(path, tmp_path / path.name, prefix=b"\xef\xbb\xbf")

    session, report = await import_session(with_bom, MemoryRepo())

    assert report.format == fmt
    assert report.unreadable_lines == []
    assert report.entries_imported == plain.entries_imported > 0
    if fmt != "swe-agent":  # its id hashes the bytes, BOM included or not
        assert session.id == plain_session.id


async def test_an_unsafe_pi_header_id_gets_a_safe_id_made_from_it_and_a_warning(
    tmp_path: Path,
) -> None:
    path = tmp_path / "unsafe.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": "../../etc",
        "timestamp": "2026-01-01T00:00:00Z",
    }
    path.write_text("\n".join(json.dumps(x) for x in [header, _msg("a1", None, "hello")]) + "\n")

    session, report = await import_session(path, MemoryRepo())

    assert session.id != "../../etc" and "/" not in session.id
    assert any("'../../etc'" in w and session.id in w for w in report.warnings)


async def test_a_grown_file_extends_its_session_and_an_unchanged_one_is_refused(
    tmp_path: Path,
) -> None:
    from sessiontree.interop import AlreadyImportedError

    path = _pi_v3(tmp_path, [_msg("a1", None), _msg("a2", "a1")])
    repo = MemoryRepo()
    first, _ = await import_session(path, repo)
    with pytest.raises(AlreadyImportedError) as caught:  # nothing new: refused
        await import_session(path, repo)
    assert isinstance(caught.value, DuplicateEntryError)
    assert caught.value.session_id == first.id
    assert caught.value.report.entries_imported == 0
    _copy(path, path, suffix=json.dumps(_msg("a3", "a2")).encode() + b"\n")  # it grew

    again, report = await import_session(path, repo)

    assert again.id == first.id and report.extended and report.entries_imported == 1
    assert [e.id for e in await again.get_entries()] == ["a1", "a2", "a3"]
    assert await again.get_leaf_id() == "a3" == report.leaf_id
    assert len(await repo.list()) == 1


SWE_TRAJ = SESSIONS / "swe-agent-traj" / "function_calling_simple.traj"


@pytest.mark.parametrize("damage", ["torn", "a line put in"])
async def test_a_damaged_trajectory_names_the_json_error_and_its_line(
    tmp_path: Path, damage: str
) -> None:
    lines = SWE_TRAJ.read_bytes().split(b"\n")
    if damage == "torn":
        data, bad_line = b"\n".join(lines[:30]), 30
    else:  # an object written in as line 3: the comma after it is missing
        data, bad_line = b"\n".join([*lines[:2], b'{"x": 1}', *lines[2:]]), 4
    path = tmp_path / "task.traj"
    path.write_bytes(data)
    repo = MemoryRepo()
    with pytest.raises(UnknownFormatError, match="JSON document that does not parse") as info:
        await import_session(path, repo)
    assert info.value.path == path
    assert info.value.line_number == bad_line
    assert await repo.list() == []


@pytest.mark.parametrize(
    ("data", "message", "line"),
    [
        ((PI / "agent-sessions_pi-small.v3.jsonl").read_text().encode("utf-16"), "UTF-16", None),
        (b'\n{"type": "session", "id": "caf\xe9", "version": 3}\n', r"not UTF-8 \(byte 0xe9\)", 2),
    ],
    ids=["utf-16", "latin-1 header"],
)
async def test_a_file_not_in_utf8_says_so(
    tmp_path: Path, data: bytes, message: str, line: int | None
) -> None:
    path = tmp_path / "session.jsonl"
    path.write_bytes(data)
    with pytest.raises(UnknownFormatError, match=message) as info:
        await import_session(path, MemoryRepo())
    assert info.value.line_number == line
    assert "unknown format" in str(info.value)
    assert "tried pi" in str(info.value)


@pytest.mark.parametrize("stamp", [2**70, -(2**62), 1e300])
async def test_a_timestamp_beyond_year_9999_falls_back_instead_of_crashing(
    tmp_path: Path, stamp: float
) -> None:
    lines = (SESSIONS / "codex" / "sample_codex_session_simonw.jsonl").read_bytes().split(b"\n")
    meta = json.loads(lines[0])
    meta["payload"]["timestamp"] = stamp
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"\n".join([json.dumps(meta).encode(), *lines[1:]]))
    session, report = await import_session(path, MemoryRepo())
    assert report.entries_imported == len(await session.get_entries()) > 0


async def test_a_pi_line_whose_type_is_not_a_string_is_kept_as_custom(tmp_path: Path) -> None:
    lines = (PI / "agent-sessions_pi-small.v3.jsonl").read_bytes().split(b"\n")
    entry = json.loads(lines[1])
    entry["type"] = [None]
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"\n".join([lines[0], json.dumps(entry).encode(), *lines[2:]]))
    session, report = await import_session(path, MemoryRepo())
    assert [c.line for c in report.custom_lines] == [2]
    kept = await session.get_entry(entry["id"])
    assert isinstance(kept, CustomEntry) and kept.data["type"] == [None]


async def test_a_cline_time_beyond_year_9999_falls_back_instead_of_crashing(
    tmp_path: Path,
) -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}], "ts": 2**70},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}], "ts": 10**15},
    ]
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(history))
    session, _report = await import_session(path, MemoryRepo())
    assert [e.message.role for e in await session.get_branch() if isinstance(e, MessageEntry)] == [
        "user",
        "assistant",
    ]


async def test_a_claude_reply_line_whose_content_is_not_a_list_keeps_it_as_text(
    tmp_path: Path,
) -> None:
    source = CLAUDE / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    rows = _lines(source)
    # the last of the lines of one reply (same message.id) gets a number for its content
    reply = next(
        r
        for r in rows
        if r.get("type") == "assistant"
        and sum((x.get("message") or {}).get("id") == r["message"]["id"] for x in rows) > 1
    )
    last = [r for r in rows if (r.get("message") or {}).get("id") == reply["message"]["id"]][-1]
    last["message"]["content"] = -1
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    session, _report = await import_session(path, MemoryRepo())
    entry = await session.get_entry(_entry_of(rows, last))
    assert isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage)
    assert [b.text for b in entry.message.content if isinstance(b, TextContent)][-1] == "-1"


async def test_a_line_whose_type_is_a_list_does_not_stop_detection(tmp_path: Path) -> None:
    header, *rest = (PI / "agent-sessions_pi-small.v3.jsonl").read_bytes().split(b"\n")
    damaged = json.loads(header)
    damaged["type"] = []
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"\n".join([json.dumps(damaged).encode(), *rest]))
    with pytest.raises(UnknownFormatError, match="not a session file"):
        await import_session(path, MemoryRepo())


@pytest.mark.parametrize("doc", [{"history": []}, {"history": [], "info": {}}])
async def test_an_empty_trajectory_history_is_imported_empty_with_a_warning(
    tmp_path: Path, doc: dict[str, Any]
) -> None:
    path = tmp_path / "task.traj"
    path.write_text(json.dumps(doc))
    session, report = await import_session(path, MemoryRepo())
    assert [w for w in report.warnings if "'history' is an empty list" in w]
    assert [e for e in await session.get_entries() if isinstance(e, MessageEntry)] == []


async def test_a_fifo_is_refused_at_once_not_read_forever(tmp_path: Path) -> None:
    import asyncio
    import os

    from sessiontree.errors import StorageError

    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(StorageError, match="not a regular file"):
        await asyncio.wait_for(import_session(fifo, MemoryRepo()), timeout=10)


@pytest.mark.parametrize("file_id", ["my.session:1", "a\x00b", "x" * 200])
async def test_a_file_whose_session_id_is_not_safe_is_recognised_when_imported_again(
    file_id: str, tmp_path: Path
) -> None:
    from sessiontree.interop import AlreadyImportedError

    path = tmp_path / "odd.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": file_id,
        "timestamp": "2026-01-01T00:00:00.000Z",
    }
    line = {
        "type": "message",
        "id": "m1",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "hi", "timestamp": 1767225601000},
    }
    path.write_text(json.dumps(header) + "\n" + json.dumps(line) + "\n")
    repo = MemoryRepo()
    session, report = await import_session(path, repo)
    assert session.id.startswith("import-") and any("not a safe id" in w for w in report.warnings)
    with pytest.raises(AlreadyImportedError):
        await import_session(path, repo)
    assert len(await repo.list()) == 1
