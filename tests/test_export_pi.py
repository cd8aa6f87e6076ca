"""pi v3 export, round trips, and the pi version migrations (docs/interop.md)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from session_files import COLLECTION, VENDORED, session_file
from sessiontree.entries import CompactionEntry, MessageEntry, dump_entry
from sessiontree.errors import DuplicateEntryError, StorageError
from sessiontree.interop import export_pi_session, import_session
from sessiontree.messages import CustomMessage
from sessiontree.repos import MemoryRepo

SESSIONS = VENDORED
PI_V3 = SESSIONS / "pi" / "agent-sessions_pi-small.v3.jsonl"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in path.read_bytes().split(b"\n") if raw.strip()]


async def test_v3_import_export_import_reproduces_every_entry(tmp_path: Path) -> None:
    original = _lines(PI_V3)
    first, _ = await import_session(PI_V3, MemoryRepo())
    out = tmp_path / "export.jsonl"
    written = await export_pi_session(first, out)
    assert written == len(original) - 1

    exported = _lines(out)
    header = exported[0]
    assert header["type"] == "session" and header["version"] == 3
    assert header["id"] == original[0]["id"]
    assert header["timestamp"] == original[0]["timestamp"]
    assert header["cwd"] == original[0]["cwd"]
    # every entry line is the original line, key for key
    assert exported[1:] == original[1:]

    second, report = await import_session(out, MemoryRepo())
    assert report.format == "pi" and report.source_version == 3
    assert [dump_entry(e) for e in await second.get_entries()] == original[1:]
    assert await second.get_leaf_id() == await first.get_leaf_id()
    assert (await second.get_metadata()).cwd == original[0]["cwd"]


@pytest.mark.parametrize("name", COLLECTION, ids=lambda n: n.split("/")[-1][:40])
async def test_every_import_survives_export_and_reimport(name: str, tmp_path: Path) -> None:
    first, _ = await import_session(session_file(name), MemoryRepo())
    out = tmp_path / "export.jsonl"
    await export_pi_session(first, out)
    second, report = await import_session(out, MemoryRepo())

    assert report.format == "pi" and report.unreadable_lines == [] and report.ok
    assert second.id == first.id
    entries = [dump_entry(e) for e in await first.get_entries()]
    assert [dump_entry(e) for e in await second.get_entries()] == entries
    assert await second.get_leaf_id() == await first.get_leaf_id()
    meta1 = (await first.get_metadata()).to_wire()
    meta2 = (await second.get_metadata()).to_wire()
    assert meta2.pop("importedFrom")["format"] == "pi"
    meta1.pop("importedFrom")
    assert meta2 == meta1
    ctx1, ctx2 = await first.build_context(), await second.build_context()
    assert ctx2 == ctx1


async def test_export_refuses_an_existing_file_unless_asked(tmp_path: Path) -> None:
    session, _ = await import_session(PI_V3, MemoryRepo())
    out = tmp_path / "x.jsonl"
    out.write_text("precious\n")
    with pytest.raises(StorageError, match="exists"):
        await export_pi_session(session, out)
    assert out.read_text() == "precious\n"
    await export_pi_session(session, out, overwrite=True)
    assert _lines(out)[0]["type"] == "session"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["x.jsonl"]  # no temporary file left behind


async def test_export_into_a_missing_directory_is_a_storage_error(tmp_path: Path) -> None:
    session, _ = await import_session(PI_V3, MemoryRepo())
    with pytest.raises(StorageError) as info:
        await export_pi_session(session, tmp_path / "no" / "such" / "dir.jsonl")
    assert isinstance(info.value.__cause__, OSError)


async def test_export_of_a_new_session_is_importable(tmp_path: Path) -> None:
    repo = MemoryRepo()
    session = await repo.create(metadata={"cwd": "/w", "systemPrompt": "be brief"})
    await session.append_message({"role": "user", "content": "hi", "timestamp": 1})
    await session.append_label((await session.get_leaf_id()) or "", "start")
    await session.append_session_name("greeting")
    out = tmp_path / "s.jsonl"
    await export_pi_session(session, out)
    again, _ = await import_session(out, MemoryRepo())
    assert await again.get_name() == "greeting"
    assert (await again.get_metadata()).system_prompt == "be brief"
    leaf = await again.get_leaf_id()
    assert leaf is not None and await again.get_label(leaf) == "start"


# ----------------------------------------------------------------- version migrations


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


async def test_v2_hook_message_is_renamed_custom(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "v2.jsonl",
        [
            {
                "type": "session",
                "version": 2,
                "id": "s2",
                "timestamp": "2025-12-01T00:00:00.000Z",
                "cwd": "/w",
            },
            {
                "type": "message",
                "id": "a1",
                "parentId": None,
                "timestamp": "2025-12-01T00:00:01.000Z",
                "message": {
                    "role": "hookMessage",
                    "customType": "note",
                    "content": "remember",
                    "display": True,
                    "timestamp": 1764547201000,
                },
            },
        ],
    )
    session, report = await import_session(path, MemoryRepo())
    assert report.source_version == 2
    entry = await session.get_entry("a1")
    assert isinstance(entry, MessageEntry) and isinstance(entry.message, CustomMessage)
    assert entry.message.custom_type == "note"


async def test_v1_header_keys_are_kept_and_a_bad_index_is_reported(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "v1.jsonl",
        [
            {
                "type": "session",
                "id": "s1",
                "timestamp": "2025-12-01T00:00:00.000Z",
                "cwd": "/w",
                "provider": "anthropic",
                "modelId": "claude",
                "thinkingLevel": "low",
                "branchedFrom": "/sessions/parent.jsonl",
            },
            {
                "type": "message",
                "timestamp": "2025-12-01T00:00:01.000Z",
                "message": {"role": "user", "content": "hi", "timestamp": 1764547201000},
            },
            {
                "type": "compaction",
                "timestamp": "2025-12-01T00:00:02.000Z",
                "summary": "s",
                "tokensBefore": 5,
                "firstKeptEntryIndex": 0,
            },
            {"type": "mystery", "timestamp": "2025-12-01T00:00:03.000Z", "x": 1},
        ],
    )
    session, report = await import_session(path, MemoryRepo())
    meta = (await session.get_metadata()).to_wire()
    assert meta["cwd"] == "/w"
    assert (meta["provider"], meta["modelId"], meta["thinkingLevel"]) == (
        "anthropic",
        "claude",
        "low",
    )
    assert meta["branchedFrom"] == "/sessions/parent.jsonl"
    assert meta["importedFrom"]["version"] == 1 and meta["importedFrom"]["sessionId"] == "s1"
    assert any("firstKeptEntryIndex 0" in w for w in report.warnings)
    entries = await session.get_entries()
    assert isinstance(entries[1], CompactionEntry) and entries[1].first_kept_entry_id is None
    # an entry type we do not know is kept whole as a custom entry on the chain
    assert entries[2].type == "custom" and entries[2].parent_id == entries[1].id
    assert [(c.line, c.custom_type) for c in report.custom_lines] == [(4, "pi:mystery")]


async def test_importing_the_same_file_twice_is_refused_and_a_copy_needs_an_id() -> None:
    repo = MemoryRepo()
    first, _ = await import_session(PI_V3, repo)
    assert first.id == "019e19b4-eb48-746a-aa6b-8dfcfa37954b"
    with pytest.raises(DuplicateEntryError) as info:
        await import_session(PI_V3, repo)
    assert info.value.session_id == first.id and info.value.entry_id is None
    assert str(PI_V3) in str(info.value)
    assert [s.id for s in await repo.list()] == [first.id]

    copy, report = await import_session(PI_V3, repo, session_id="my-copy")
    assert copy.id == report.session_id == "my-copy"
    assert [dump_entry(e) for e in await copy.get_entries()] == [
        dump_entry(e) for e in await first.get_entries()
    ]


async def test_an_export_opens_in_place_with_the_jsonl_backend(tmp_path: Path) -> None:
    from sessiontree import Session
    from sessiontree.backends.jsonl import JSONLStorage

    src = SESSIONS / "claude-code" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    first, _ = await import_session(src, MemoryRepo())
    out = tmp_path / "session.jsonl"
    await export_pi_session(first, out)
    storage = JSONLStorage(out)
    try:
        opened = Session(storage)
        assert opened.id == first.id
        assert (await opened.get_metadata()).cwd == (await first.get_metadata()).cwd
        assert [dump_entry(e) for e in await opened.get_entries()] == [
            dump_entry(e) for e in await first.get_entries()
        ]
        assert await opened.build_context() == await first.build_context()
    finally:
        await storage.close()


async def test_parent_session_maps_like_the_jsonl_backend(tmp_path: Path) -> None:
    repo = MemoryRepo()
    parent = await repo.create(metadata={"cwd": "/w"})
    await parent.append_message({"role": "user", "content": "hi", "timestamp": 1})
    leaf = await parent.get_leaf_id()
    assert leaf is not None
    child = await parent.fork(leaf)
    out = tmp_path / "child.jsonl"
    await export_pi_session(child, out)
    header = _lines(out)[0]
    assert header["parentSession"] == parent.id
    again, _ = await import_session(out, MemoryRepo())
    meta = await again.get_metadata()
    assert meta.parent_session_id == parent.id and meta.forked_from_entry_id == leaf


# ----------------------------------------------------------------- migration in place


async def test_migrating_a_v1_file_in_place_gives_what_import_gives(tmp_path: Path) -> None:
    from sessiontree import Session
    from sessiontree.backends.jsonl import JSONLStorage
    from sessiontree.interop import migrate_pi_file

    src = SESSIONS / "pi" / "pi-mono_large-session.v1.jsonl"
    path = tmp_path / "old.jsonl"
    path.write_bytes(src.read_bytes())
    path.chmod(0o640)
    imported, _ = await import_session(src, MemoryRepo())

    report = await migrate_pi_file(path)

    assert report.source_version == 1 and report.session_id == imported.id
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["old.jsonl"]
    header = _lines(path)[0]
    assert header["version"] == 3 and header["id"] == imported.id
    assert header["timestamp"] == _lines(src)[0]["timestamp"]
    storage = JSONLStorage(path)
    try:
        migrated = Session(storage)
        assert [dump_entry(e) for e in await migrated.get_entries()] == [
            dump_entry(e) for e in await imported.get_entries()
        ]
        assert (await migrated.get_metadata()).to_wire()["modelId"] == "claude-sonnet-4-5"
    finally:
        await storage.close()
    # a second run finds version 3 and leaves the file alone
    before = path.read_bytes()
    again = await migrate_pi_file(path)
    assert any("not changed" in w for w in again.warnings)
    assert path.read_bytes() == before


async def test_a_failed_migration_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    from sessiontree.errors import CorruptSessionError
    from sessiontree.interop import migrate_pi_file

    data = (SESSIONS / "pi" / "pi-mono_large-session.v1.jsonl").read_bytes()
    path = tmp_path / "torn.jsonl"
    path.write_bytes(data[:-100])  # a torn last line
    with pytest.raises(CorruptSessionError):
        await migrate_pi_file(path)
    assert path.read_bytes() == data[:-100]
    assert sorted(os.listdir(tmp_path)) == ["torn.jsonl"]
