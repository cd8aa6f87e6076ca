"""Values nested as deep as the JSON reader goes (1024 levels) are imported, opened in place,
forked and exported as they were read, on every file-backed store.

A tool result's ``details`` about 200 levels deep failed to import on every backend
(pydantic-core's JSON parser stops at ~200 levels, its serialiser at ~255), and a JSONL file
holding one opened but could not be forked."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import orjson
import pytest

from sessiontree import import_session, open_repo
from sessiontree.backends.jsonl.storage import JSONLStorage
from sessiontree.entries import dump_entry_json
from sessiontree.interop import export_pi_session


def nested(depth: int) -> object:
    value: object = "bottom"
    for _ in range(depth):
        value = {"k": value}
    return value


def write_deep_pi_file(path: Path, depth: int) -> None:
    lines = [
        {"type": "session", "version": 3, "id": "deep", "timestamp": "2026-01-01T00:00:00Z"},
        {
            "type": "message",
            "id": "m1",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": "edit it", "timestamp": 1},
        },
        {
            "type": "message",
            "id": "m2",
            "parentId": "m1",
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "edit",
                "content": [{"type": "text", "text": "done"}],
                "details": nested(depth),
                "timestamp": 2,
            },
        },
    ]
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    try:
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    finally:
        sys.setrecursionlimit(old)


def details_depth(raw: bytes) -> int:
    """How deep ``"bottom"`` sits under ``details`` in a stored line."""
    after = raw[raw.index(b'"details"') :]
    return after[: after.index(b'"bottom"')].count(b'{"k"')


@pytest.mark.parametrize("depth", [210, 600, 1000])
@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
async def test_deep_tool_details_import_fork_and_export(
    kind: str, depth: int, tmp_path: Path
) -> None:
    src = tmp_path / "deep.jsonl"
    write_deep_pi_file(src, depth)
    url = f"sqlite:///{tmp_path / 's.db'}" if kind == "sqlite" else f"jsonl://{tmp_path / 'j'}"
    async with open_repo(url) as repo:
        session, report = await import_session(src, repo)
        assert report.unreadable_lines == []
        entry = await session.get_entry("m2")
        assert entry is not None and details_depth(dump_entry_json(entry)) == depth
        fork = await session.fork("m2")
        copied = await fork.get_entry("m2")
        assert copied is not None and dump_entry_json(copied) == dump_entry_json(entry)
        out = tmp_path / "out.jsonl"
        assert await export_pi_session(session, out) == 2
        assert details_depth(out.read_bytes().splitlines()[2]) == depth


async def test_deep_line_of_a_file_opened_in_place_can_be_forked(tmp_path: Path) -> None:
    src = tmp_path / "deep.jsonl"
    write_deep_pi_file(src, 210)
    storage = JSONLStorage(src)
    fork = await storage.fork("m2")
    assert [e.id for e in await fork.get_branch()] == ["m1", "m2"]
    forked_path: Path = fork.path  # type: ignore[attr-defined]
    forked_lines = await asyncio.to_thread(lambda: forked_path.read_bytes().splitlines())
    assert details_depth(forked_lines[2]) == 210
    assert orjson.loads(forked_lines[0])["parentSession"] == "deep"
    await storage.close()
    await fork.close()
