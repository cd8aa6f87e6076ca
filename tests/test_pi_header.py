"""A pi header maps to session metadata once: opening the file in place and importing it agree."""

from __future__ import annotations

import json
from pathlib import Path

from sessiontree.backends.jsonl import JSONLStorage
from sessiontree.interop import import_session
from sessiontree.repos import MemoryRepo

HEADER = {
    "type": "session",
    "version": 3,
    "id": "s1",
    "timestamp": "2026-01-01T00:00:00.000Z",
    "cwd": "",
    "parentSession": "p0",
    "provider": "anthropic",
    "modelId": "",
    "branchedFrom": None,
    "metadata": {"title": "kept"},
}


async def test_open_in_place_and_import_map_the_header_alike(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    path.write_text(json.dumps(HEADER) + "\n", encoding="utf-8")
    in_place = JSONLStorage(path).metadata.to_wire()
    session, _ = await import_session(path, MemoryRepo())
    imported = (await session.get_metadata()).to_wire()
    assert imported.pop("importedFrom")["sessionId"] == "s1"
    assert in_place == imported
    # empty header values are no values; the metadata object and parentSession are kept
    assert in_place == {"parentSessionId": "p0", "provider": "anthropic", "title": "kept"}
