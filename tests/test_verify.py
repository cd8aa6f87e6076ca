"""sessiontree.verify from Python: the checks ``sessiontree verify`` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sessiontree import MemoryRepo
from sessiontree.backends.jsonl.repo import JSONLRepo
from sessiontree.entries import Entry, parse_entry
from sessiontree.verify import Findings, check_entries, verify_session


def _entry(eid: str, parent: str | None, **fields: Any) -> Entry:
    data = {"type": "custom", "customType": "t", **fields}
    data.update(id=eid, parentId=parent, timestamp="2026-01-01T00:00:00.000Z")
    return parse_entry(data)


def _message(eid: str, parent: str | None, message: dict[str, Any]) -> Entry:
    return parse_entry(
        {
            "type": "message",
            "id": eid,
            "parentId": parent,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": message,
        }
    )


async def test_a_healthy_session_has_no_findings() -> None:
    async with MemoryRepo() as repo:
        s = await repo.create()
        await s.append_message({"role": "user", "content": "hi"})
        await s.append_message({"role": "assistant", "content": [{"type": "text", "text": "yo"}]})
        found = await verify_session(s)
    assert isinstance(found, Findings)
    assert found.problems == [] and found.warnings == []
    assert found.facts == {"entries": 2, "entries on the branch": 2, "context messages": 2}


def test_dangling_parents_and_cycles_are_problems() -> None:
    entries = [
        _entry("a", None),
        _entry("b", "c"),
        _entry("c", "d"),
        _entry("d", "b"),
        _entry("e", "zz"),
    ]
    found = check_entries(entries, "a", session_id="s1")
    assert "entry e: parentId 'zz' names no entry" in found.problems
    cycles = [p for p in found.problems if p.startswith("parentId cycle of 3 entries: ")]
    assert len(cycles) == 1
    assert found.facts["entries on the branch"] == 1
    # a leaf on the cycle: the branch cannot be traced, and that is a problem too
    on_cycle = check_entries(entries, "b", session_id="s1")
    assert any(p.startswith("current branch: cycle in parentId links") for p in on_cycle.problems)
    assert "entries on the branch" not in on_cycle.facts


def test_an_unpaired_tool_call_is_a_warning_that_context_building_repairs() -> None:
    call = {"type": "toolCall", "id": "call1", "name": "bash", "arguments": {"command": "ls"}}
    entries = [
        _message("u", None, {"role": "user", "content": "list"}),
        _message("a", "u", {"role": "assistant", "content": [call]}),
        _message("u2", "a", {"role": "user", "content": "never mind"}),
    ]
    found = check_entries(entries, "u2")
    assert found.problems == []
    assert len(found.warnings) == 1 and "unpaired tool call/result" in found.warnings[0]


async def test_a_torn_final_line_of_a_jsonl_session_is_a_problem(tmp_path: Path) -> None:
    async with JSONLRepo(tmp_path) as repo:
        s = await repo.create(id="s1")
        await s.append_message({"role": "user", "content": "hi"})
        log = getattr(s.storage, "path")  # noqa: B009 - JSONL storage's file
        assert isinstance(log, Path)
        with log.open("ab") as fh:
            fh.write(b'{"type":"message","id":"torn1","parentId":')
        found = await verify_session(s)
    assert found.problems == [
        f"{log}:3: torn final line (a crash mid-write); it is ignored and cut off before the "
        "next append"
    ]
    assert found.facts["entries"] == 1
