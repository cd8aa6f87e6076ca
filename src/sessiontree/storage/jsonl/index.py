"""The in-memory index of a JSONL session's lines (SPEC §2 rules over lazy records).

:class:`LineIndex` keeps, for the lines read so far: the records in append order, records by
id, the current leaf, labels, the name and the listing counts. It is updated from
:class:`~sessiontree.storage.jsonl.format.LineRecord` objects without validating them into
pydantic entries, so opening a large file costs about one orjson parse of it.
"""

from __future__ import annotations

from pathlib import Path

from sessiontree.entries import BOOKKEEPING_TYPES, MessageEntry
from sessiontree.errors import CorruptSessionError
from sessiontree.messages import UserMessage, message_text
from sessiontree.storage.jsonl.format import LineRecord, SkippedLine, first_user_text

__all__ = ["LineIndex"]


class LineIndex:
    """Records of one session log in append order, plus what SPEC §2 derives from the log.

    Attributes:
        records: every entry line, append order (``record.seq`` is the position).
        by_id: records by entry id.
        leaf_id: the current leaf: the newest ``leaf`` entry's target or path entry's id.
        labels: entry id → label (newest ``label`` entry; empty or null clears).
        name: the newest ``session_info`` name.
        message_count: ``message`` entries.
        first_message: the first user message's text, ≤ 200 characters.
    """

    def __init__(self) -> None:
        self.records: list[LineRecord] = []
        self.by_id: dict[str, LineRecord] = {}
        self.leaf_id: str | None = None
        self.labels: dict[str, str] = {}
        self.name: str | None = None
        self.message_count = 0
        self.first_message: str | None = None

    def add_all(
        self,
        records: list[LineRecord],
        skipped: list[SkippedLine],
        *,
        skip_duplicates: bool,
        path: Path,
        session_id: str,
    ) -> None:
        """Index records in append order; keep leaf, labels, name and counts current.

        Raises:
            CorruptSessionError: a record reuses an id already indexed (names file and line),
                unless ``skip_duplicates``, which appends it to ``skipped`` instead.
        """
        by_id = self.by_id
        entries = self.records
        seq = len(entries)
        added: list[LineRecord] = []
        for record in records:
            if record.id in by_id:
                reason = f"duplicate entry id {record.id!r}"
                if not skip_duplicates:
                    raise CorruptSessionError(
                        reason, session_id=session_id, path=path, line_number=record.line_number
                    )
                skipped.append(SkippedLine(record.line_number, reason))
                continue
            record.seq = seq
            seq += 1
            by_id[record.id] = record
            entries.append(record)
            added.append(record)
            kind = record.type
            if kind == "message":
                self.message_count += 1
                if self.first_message is None:
                    self.first_message = _first_user_text(record)
            elif kind == "label":
                target, label = record.field("targetId"), record.field("label")
                if isinstance(target, str):
                    if isinstance(label, str) and label:
                        self.labels[target] = label
                    else:
                        self.labels.pop(target, None)
            elif kind == "session_info":
                name = record.field("name")
                if isinstance(name, str):
                    self.name = name
        # The leaf is a pure function of the log (SPEC §2): the newest leaf or path entry.
        for record in reversed(added):
            if record.type == "leaf":
                target = record.field("targetId")
                self.leaf_id = target if isinstance(target, str) else None
                break
            if record.type not in BOOKKEEPING_TYPES:
                self.leaf_id = record.id
                break

    def type_of(self, entry_id: str) -> str | None:
        """The type of an indexed entry, ``None`` when absent (for ``check_append``)."""
        record = self.by_id.get(entry_id)
        return None if record is None else record.type


def _first_user_text(record: LineRecord) -> str | None:
    entry = record.entry
    if entry is None:
        return None if record.data is None else first_user_text(record.data)
    if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
        return message_text(entry.message)[:200]
    return None
