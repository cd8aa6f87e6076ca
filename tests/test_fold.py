"""One fold of the append log: validated entries and raw lines give the same state."""

from __future__ import annotations

import functools
from typing import Any

from sessiontree.entries import Entry, parse_entry
from sessiontree.fold import FIRST_MESSAGE_CHARS, LogFold, first_message_text
from sessiontree.messages import parse_message

WIRE: list[dict[str, Any]] = [
    {"type": "message", "id": "a", "parentId": None,
     "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}],
                 "timestamp": 1}},
    {"type": "message", "id": "b", "parentId": "a",
     "message": {"role": "user", "content": "x" * 300, "timestamp": 2}},
    {"type": "label", "id": "l1", "parentId": "b", "targetId": "a", "label": "start"},
    {"type": "label", "id": "l2", "parentId": "b", "targetId": "b", "label": "mid"},
    {"type": "label", "id": "l3", "parentId": "b", "targetId": "b", "label": ""},
    {"type": "session_info", "id": "n1", "parentId": "b", "name": "first"},
    {"type": "leaf", "id": "f1", "parentId": "b", "targetId": "a"},
    {"type": "message", "id": "c", "parentId": "a",
     "message": {"role": "user", "content": "second", "timestamp": 3}},
    {"type": "session_info", "id": "n2", "parentId": "c", "name": "second"},
    {"type": "leaf", "id": "f2", "parentId": "c", "targetId": None},
]  # fmt: skip


def _state(fold: LogFold) -> tuple[Any, ...]:
    return (
        fold.leaf_id,
        fold.labels,
        fold.name,
        fold.entry_count,
        fold.message_count,
        fold.first_message,
    )


def _typed(n: int) -> LogFold:
    fold = LogFold()
    entries: list[Entry] = [
        parse_entry({**w, "timestamp": "2026-01-01T00:00:00.000Z"}) for w in WIRE
    ]
    for entry in entries[:n]:
        fold.add_entry(entry)
    return fold


def _first_text(msg: Any) -> str | None:
    return msg and first_message_text(parse_message(msg))


def _raw(n: int) -> LogFold:
    fold = LogFold()
    for w in WIRE[:n]:
        msg = w.get("message")
        fold.add(
            w["type"],
            w["id"],
            w.get,
            functools.partial(_first_text, msg),
        )
    return fold


def test_typed_and_raw_entries_fold_alike_at_every_step() -> None:
    for n in range(len(WIRE) + 1):
        assert _state(_typed(n)) == _state(_raw(n)), n


def test_the_rules() -> None:
    fold = _typed(len(WIRE))
    assert fold.labels == {"a": "start"}  # the empty label cleared b's
    assert fold.name == "second"
    assert fold.leaf_id is None  # the last leaf entry points at no entry
    assert (fold.entry_count, fold.message_count) == (len(WIRE), 3)
    assert fold.first_message == "x" * FIRST_MESSAGE_CHARS  # the assistant message is skipped
    assert _typed(7).leaf_id == "a" and _typed(6).leaf_id == "b"


def test_a_store_that_keeps_the_first_message_elsewhere_does_not_take_a_later_one() -> None:
    fold = LogFold("a", entry_count=5, message_count=2, first_seen=True)
    fold.add_entry(parse_entry({**WIRE[7], "timestamp": "2026-01-01T00:00:00.000Z"}))
    assert (fold.first_message, fold.message_count, fold.entry_count) == (None, 3, 6)
    assert fold.leaf_id == "c"
