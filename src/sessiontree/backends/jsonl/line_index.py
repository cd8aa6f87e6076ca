"""The in-memory index of a JSONL session's lines (the tree rules over lazy records).

:class:`LineIndex` keeps, for the lines read so far: the records in append order, records by
id, and the :class:`~sessiontree.fold.LogFold` of them (current leaf, labels, name, listing
counts). It is updated from :class:`~sessiontree.backends.jsonl.format.LineRecord` objects
without validating them into pydantic entries, so opening a large file costs about one
orjson parse of it.
"""

from __future__ import annotations

from pathlib import Path

from sessiontree.backends.jsonl.format import LineRecord, SkippedLine
from sessiontree.errors import CorruptSessionError
from sessiontree.fold import LogFold

__all__ = ["LineIndex"]


class LineIndex:
    """Records of one session log in append order, plus what the log folds into.

    Attributes:
        records: every entry line, append order (``record.seq`` is the position).
        by_id: records by entry id.
        fold: the leaf, labels, name and listing counts of the records.
    """

    def __init__(self) -> None:
        self.records: list[LineRecord] = []
        self.by_id: dict[str, LineRecord] = {}
        self.fold = LogFold()

    def add_all(
        self,
        records: list[LineRecord],
        skipped: list[SkippedLine],
        *,
        skip_duplicates: bool,
        path: Path,
        session_id: str,
    ) -> None:
        """Index records in append order; keep the fold current.

        Raises:
            CorruptSessionError: a record reuses an id already indexed (names file and line),
                unless ``skip_duplicates``, which appends it to ``skipped`` instead.
        """
        by_id = self.by_id
        entries = self.records
        add = self.fold.add
        seq = len(entries)
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
            add(record.type, record.id, record.field, record.first_message_text)

    def add_appended(self, record: LineRecord) -> None:
        """Index one record just appended (:func:`~sessiontree.tree.check_append` has
        refused a duplicate id already); keep the fold current."""
        record.seq = len(self.records)
        self.by_id[record.id] = record
        self.records.append(record)
        self.fold.add(record.type, record.id, record.field, record.first_message_text)

    def type_of(self, entry_id: str) -> str | None:
        """The type of an indexed entry, ``None`` when absent (for ``check_append``)."""
        record = self.by_id.get(entry_id)
        return None if record is None else record.type
