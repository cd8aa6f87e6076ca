"""Unit tests of the pure core: ids, entry models, tree walks, context helpers."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest

from sessiontree import CorruptSessionError, EntryNotFoundError, InvalidEntryError
from sessiontree.context import default_transform, derive_state, to_llm_messages
from sessiontree.entries import (
    CompactionEntry,
    MessageEntry,
    ModelChangeEntry,
    OpaqueEntry,
    dump_entry,
    dump_entry_json,
    parse_entry,
    parse_entry_json,
)
from sessiontree.ids import iso_from_ms, ms_from_iso, new_id, now_iso
from sessiontree.messages import parse_message
from sessiontree.testing.builders import assistant, bash, tool_call, tool_result, user
from sessiontree.tree import build_tree, check_append, fork_chain, trace_chain


def test_ids_are_uuid7_and_ordered() -> None:
    ids = [new_id() for _ in range(200)]
    assert all(
        re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", i)
        for i in ids
    )
    assert len(set(ids)) == 200
    assert ids == sorted(ids)


def test_timestamps() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", now_iso())
    assert iso_from_ms(1765233665292) == "2025-12-08T22:41:05.292Z"
    assert ms_from_iso("2025-12-08T22:41:05.292Z") == 1765233665292
    assert ms_from_iso("2025-12-08T22:41:05.292") == 1765233665292


def test_wire_format_is_camel_case_and_snapshot() -> None:
    e = CompactionEntry(
        id="c1",
        parent_id="p",
        timestamp="2026-01-01T00:00:00.000Z",
        summary="s",
        tokens_before=5,
        first_kept_entry_id="k",
    )
    assert dump_entry(e) == {
        "type": "compaction",
        "id": "c1",
        "parentId": "p",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "summary": "s",
        "tokensBefore": 5,
        "firstKeptEntryId": "k",
    }
    assert orjson.loads(dump_entry_json(e)) == dump_entry(e)
    # both spellings accepted on input
    snake = parse_entry(
        {"type": "model_change", "parent_id": None, "provider": "p", "model_id": "m"}
    )
    assert isinstance(snake, ModelChangeEntry) and snake.model_id == "m"


def test_parse_errors_name_entry_and_field() -> None:
    with pytest.raises(InvalidEntryError) as err:
        parse_entry({"type": "model_change", "id": "bad-1", "parentId": None, "provider": "p"})
    assert "bad-1" in str(err.value) and "modelId" in str(err.value)
    with pytest.raises(InvalidEntryError):
        parse_entry_json(b"{not json")


def test_unknown_type_parses_opaque() -> None:
    raw = {"type": "future", "id": "f", "parentId": None, "timestamp": "t", "x": [1]}
    e = parse_entry(raw)
    assert isinstance(e, OpaqueEntry) and dump_entry(e) == raw


def _chain(n: int) -> dict[str, Any]:
    return {
        f"e{i}": MessageEntry(
            id=f"e{i}", parent_id=f"e{i - 1}" if i else None, message=parse_message(user("x"))
        )
        for i in range(n)
    }


def test_trace_chain_detects_cycles_and_missing_parents() -> None:
    entries = _chain(3)
    assert [e.id for e in trace_chain("e2", entries.get)] == ["e0", "e1", "e2"]
    entries["e0"] = entries["e0"].model_copy(update={"parent_id": "e2"})
    with pytest.raises(CorruptSessionError, match="cycle"):
        trace_chain("e2", entries.get, session_id="s1")
    dangling = _chain(2)
    dangling["e0"] = dangling["e0"].model_copy(update={"parent_id": "ghost"})
    with pytest.raises(CorruptSessionError, match="ghost"):
        trace_chain("e1", dangling.get)
    with pytest.raises(EntryNotFoundError):
        trace_chain("nope", dangling.get)


def test_build_tree_detects_cycles() -> None:
    entries = _chain(3)
    entries["e0"] = entries["e0"].model_copy(update={"parent_id": "e2"})
    with pytest.raises(CorruptSessionError, match="cycle"):
        build_tree(list(entries.values()))


def test_fork_chain_before_drops_dangling_bookkeeping() -> None:
    chain = list(_chain(2).values())
    assert fork_chain(chain, "before") == chain[:1]
    assert fork_chain(chain[:1], "before") == []
    with pytest.raises(InvalidEntryError):
        fork_chain(chain, "sideways")  # type: ignore[arg-type]


def test_default_transform_without_compaction_is_identity() -> None:
    chain = list(_chain(4).values())
    assert default_transform(chain) == chain


def test_derive_state_reads_retained_tail_snapshot() -> None:
    snap = CompactionEntry(
        summary="s",
        retained_tail=[],
        details={
            "readFiles": [],
            "modifiedFiles": [],
            "state": {
                "model": {"provider": "p", "modelId": "m"},
                "thinkingLevel": "high",
                "activeToolNames": ["read"],
            },
        },
    )
    model, thinking, tools = derive_state([snap])
    assert model is not None and (model.provider, model.model_id) == ("p", "m")
    assert thinking == "high" and tools == ["read"]


def test_to_llm_messages_shapes() -> None:
    msgs = [
        parse_message(m)
        for m in (
            user("hi"),
            assistant("let me look", tool_call("c1", path="a.py")),
            tool_result("c1", "contents"),
            bash("ls", "a.py"),
            {
                "role": "bashExecution",
                "command": "secret",
                "output": "x",
                "excludeFromContext": True,
            },
            {"role": "compactionSummary", "summary": "earlier work", "tokensBefore": 10},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "text", "text": "ok"},
                ],
            },
            {"role": "telepathy"},
        )
    ]
    out = to_llm_messages(msgs)
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "user", "user", "assistant"]
    assert out[1]["tool_calls"] == [{"id": "c1", "name": "read", "arguments": {"path": "a.py"}}]
    assert out[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "read",
        "content": "contents",
        "is_error": False,
    }
    assert "ls" in out[3]["content"] and "a.py" in out[3]["content"]
    assert "summary" in out[4]["content"] and "earlier work" in out[4]["content"]
    assert "thinking" not in out[5]
    assert to_llm_messages(msgs, include_thinking=True)[5]["thinking"] == ["hmm"]


@pytest.mark.parametrize(
    ("entry_id", "parent_id", "refused"),
    [
        ("new", None, None),
        ("new", "m1", None),
        ("new", "label1", None),  # any path or bookkeeping entry but a leaf entry may parent
        ("m1", "m1", "DuplicateEntryError"),
        ("m1", None, "DuplicateEntryError"),
        ("new", "ghost", "EntryNotFoundError"),
        ("new", "new", "EntryNotFoundError"),  # its own parent, which does not exist yet
        ("new", "leaf1", "InvalidEntryError"),
    ],
)
def test_check_append_of_a_message_entry(
    entry_id: str, parent_id: str | None, refused: str | None
) -> None:
    types = {"m1": "message", "label1": "label", "leaf1": "leaf"}
    entry = MessageEntry(id=entry_id, parent_id=parent_id, message=parse_message(user("x")))
    if refused is None:
        check_append(entry, types.get, session_id="s")
        return
    with pytest.raises(Exception) as info:
        check_append(entry, types.get, session_id="s")
    assert type(info.value).__name__ == refused
    assert entry_id in str(info.value)
