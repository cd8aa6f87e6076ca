"""A JSONL fork that copies the stored lines of the path as bytes.

:func:`~sessiontree.storage.base.fork_plan` decides what a fork holds (the same plan on every
backend). It is handed a :class:`RecordSource`: the log's lines as
:class:`~sessiontree.backends.jsonl.format.LineRecord` objects, validated into entries only
where the plan reads their content (``label``, ``branch_summary`` and ``leaf`` entries, the
ones with references besides ``parentId``). The plan returns those objects unchanged where it
copies an entry, and new entries where it writes one (a reference set to ``null``, a label
entry); :meth:`RecordSource.fork_lines` then copies each unchanged line byte for byte from
the source file and writes only the new entries from JSON. Every line is checked as an append
to the new session, as creating a session from entries checks them.

A copied line is read back exactly as the source's reader reads it: validated lazily, when
returned (a line that is JSON with the entry shape but not a valid entry is reported when it is
read, by the fork as by the source).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from sessiontree._args import MAX_ENTRY_ID_CHARS
from sessiontree.backends.jsonl.format import LineRecord
from sessiontree.entries import Entry
from sessiontree.storage.base import EntryCursor
from sessiontree.stored import stored_form
from sessiontree.tree import check_append, trace_chain

if TYPE_CHECKING:
    from pathlib import Path

    from sessiontree.backends.jsonl.line_index import LineIndex
    from sessiontree.metadata import SessionMetadata

__all__ = ["LogSource", "RecordSource"]

_READ_TYPES = frozenset({"label", "branch_summary", "leaf"})
"""Entry types whose content the fork plan reads (references besides ``parentId``)."""

_SPAN_SLACK = 1 << 16
"""Bytes of lines not copied that one read of the whole span may include before the lines are
read one by one instead."""


class LogSource(Protocol):
    """What a :class:`RecordSource` reads of a JSONL storage (:class:`JSONLStorage` is one)."""

    @property
    def id(self) -> str:
        """The session id."""
        ...

    @property
    def path(self) -> Path:
        """The session file."""
        ...

    @property
    def metadata(self) -> SessionMetadata:
        """The session metadata."""
        ...

    _index: LineIndex

    def _open_read(self) -> int:
        """A descriptor of the log opened for reading (the storage's own)."""
        ...

    async def get_entries(self, cursor: EntryCursor | None = None) -> list[Entry]:
        """:meth:`SessionStorage.get_entries`."""
        ...


class RecordSource:
    """What :func:`~sessiontree.storage.base.fork_plan` asks of a source, over a log's records.

    Attributes:
        id: the source session's id.
        metadata: the source session's metadata.
    """

    def __init__(self, storage: LogSource) -> None:
        self._storage = storage
        self.id = storage.id
        self.metadata: SessionMetadata = storage.metadata
        self._records: dict[int, LineRecord] = {}  # id() of a validated entry handed out → record

    async def get_branch(
        self, leaf_id: str | None = None, *, include_bookkeeping: bool = False
    ) -> list[Any]:
        """The chain root → ``leaf_id``, bookkeeping included: records, and validated entries
        for the types the plan reads.

        Raises:
            EntryNotFoundError: ``leaf_id`` names no entry.
            CorruptSessionError: a broken chain, or a line of a type read that is not valid.
        """
        storage = self._storage
        records = cast(
            list[LineRecord],
            trace_chain(
                leaf_id,
                cast(Any, storage._index.by_id.get),  # records have id/parent_id
                session_id=self.id,
            ),
        )
        out: list[Any] = []
        for record in records:
            if record.type in _READ_TYPES:
                entry = record.entry_of(storage.path, self.id)
                self._records[id(entry)] = record
                out.append(entry)
            else:
                out.append(record)
        return out

    async def get_entries(self, cursor: EntryCursor | None = None) -> list[Entry]:
        """The source's :meth:`~sessiontree.storage.base.SessionStorage.get_entries`."""
        return await self._storage.get_entries(cursor)

    def fork_lines(
        self, entries: Sequence[Any], session_id: str
    ) -> tuple[list[bytes], list[LineRecord]]:
        """The lines (with newlines) of the plan's ``entries`` and a record for each.

        A record or entry this source handed out is its stored line, copied; anything else is
        a new entry, written as :func:`~sessiontree.stored.stored_form` writes it. Records'
        positions are left for the new log to set.

        Raises:
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: an entry is refused
                as an append to the new session (nothing is written).
            OSError: the source file cannot be read.
        """
        types: dict[str, str] = {}
        plan: list[LineRecord | bytes] = []
        records: list[LineRecord] = []
        for item in entries:
            source = item if isinstance(item, LineRecord) else self._records.get(id(item))
            if source is not None and (source is item or source.entry is item):
                parent = source.parent_id
                if (
                    source.type in _READ_TYPES
                    or source.id in types
                    or (parent is not None and types.get(parent) in (None, "leaf"))
                ):
                    # a line of another type passes check_append unless its id is taken or
                    # its parent is missing or a leaf entry: only then is it worth the call
                    check_append(
                        cast(Any, item), types.get, session_id=session_id, keep_unknown=True
                    )
                plan.append(source)
                records.append(
                    LineRecord(
                        source.id, source.type, source.parent_id, 0, source.data, source.entry
                    )
                )
                types[source.id] = source.type
                continue
            entry, data = stored_form(item)
            check_append(entry, types.get, session_id=session_id, keep_unknown=True)
            plan.append(data + b"\n")
            records.append(LineRecord.of_entry(entry, 0, -1, -1))
            types[entry.id] = entry.type
        lines = self._read_lines(plan)
        for item in plan:
            if isinstance(item, LineRecord) and len(item.id) > MAX_ENTRY_ID_CHARS:
                # what stored_form refuses of a line it could copy: an id longer than any
                # store keeps (the file's JSON reader already refuses lone surrogates)
                stored_form(item.entry_of(self._storage.path, self.id))
        return lines, records

    def _read_lines(self, plan: list[LineRecord | bytes]) -> list[bytes]:
        copied = [p for p in plan if isinstance(p, LineRecord)]
        if not copied:
            return cast(list[bytes], plan)
        fd = self._storage._open_read()
        low = min(r.start for r in copied)
        high = max(r.end for r in copied)
        wanted = sum(r.end - r.start for r in copied)
        if high - low - wanted <= _SPAN_SLACK + wanted:
            span = _pread_all(fd, high - low, low)

            def line_of(r: LineRecord) -> bytes:
                return span[r.start - low : r.end - low] + b"\n"

        else:

            def line_of(r: LineRecord) -> bytes:
                return _pread_all(fd, r.end - r.start, r.start) + b"\n"

        return [p if isinstance(p, bytes) else line_of(p) for p in plan]


def _pread_all(fd: int, size: int, offset: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            raise OSError(f"the session file ended {size} bytes early")
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)
