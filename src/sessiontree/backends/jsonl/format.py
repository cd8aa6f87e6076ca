"""The on-disk format of a JSONL session (docs/storage.md "jsonl"): the header and the entry lines.

A session file is a pi v3 session file::

    {"type":"session","version":3,"id":"…","timestamp":"…","cwd":"…","parentSession":"…","metadata":{…}}
    {"type":"message","id":"…","parentId":null,"timestamp":"…","message":{…}}
    …

This module is pure (no file I/O): it turns the header into :class:`SessionMetadata` and back,
and scans a block of bytes into light :class:`LineRecord` objects. A record holds only what the
tree rules need (``type``, ``id``, ``parentId``) plus the line's JSON text; the pydantic
:data:`~sessiontree.entries.Entry` is validated lazily, from that text, only when an entry is
actually returned (:meth:`LineRecord.entry_of`). Validating every line of a large file costs
more than parsing it, and context building only needs the branch.

Header mapping (docs/storage.md leaves it open; this is the rule): ``cwd`` ↔ ``metadata.cwd``,
``parentSession`` ↔ ``metadata.parent_session_id``; every other metadata field goes into the
header's ``metadata`` object. On reading, unknown top-level header keys (pi's ``provider``,
``modelId``, ``thinkingLevel``, ``branchedFrom``, …) are kept as metadata extras; the header
line itself is never rewritten.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import orjson
from pydantic import ValidationError
from pydantic_core import SchemaValidator, core_schema, to_json

from sessiontree import _json as exact_json
from sessiontree._gc import gc_paused
from sessiontree.entries import Entry, MessageEntry, validate_entry_json, validation_problem
from sessiontree.errors import CorruptSessionError
from sessiontree.fold import first_message_text
from sessiontree.ids import ms_from_iso
from sessiontree.messages import parse_message
from sessiontree.metadata import SessionMetadata

__all__ = [
    "FORMAT_VERSION",
    "Header",
    "LineRecord",
    "ScanResult",
    "SkippedLine",
    "build_header",
    "created_at_of",
    "entries_of",
    "first_user_text",
    "gc_paused",
    "is_whole_line",
    "header_metadata",
    "parse_header",
    "scan_block",
]

FORMAT_VERSION = 3
"""The pi session-file version this backend reads and writes."""

_HEADER_KEYS = frozenset({"type", "version", "id", "timestamp", "cwd", "parentSession", "metadata"})


@dataclass(frozen=True)
class Header:
    """The parsed header line of a session file.

    Attributes:
        session_id: the header's ``id``.
        created_at: the header's ``timestamp`` (aware UTC).
        metadata: the session metadata built from the header.
        length: bytes of the header line including its newline.
        created_ms: ``created_at`` as Unix milliseconds (0 when the header has no time).
        wire_metadata: what ``metadata`` was validated from (:func:`header_metadata`), so a
            listing index can keep it and build the same ``metadata`` again.
    """

    session_id: str
    created_at: datetime
    metadata: SessionMetadata
    length: int
    created_ms: int = 0
    wire_metadata: Mapping[str, Any] = field(default_factory=dict)


def build_header(session_id: str, metadata: SessionMetadata, timestamp: str) -> bytes:
    """The header line (with its newline) for a new session file.

    Args:
        session_id: written as ``id``.
        metadata: ``cwd`` and ``parent_session_id`` go to the top level, the rest (extras
            included) into ``metadata``.
        timestamp: ISO 8601 UTC creation time.
    """
    wire = metadata.to_wire()
    header: dict[str, Any] = {
        "type": "session",
        "version": FORMAT_VERSION,
        "id": session_id,
        "timestamp": timestamp,
        "cwd": wire.pop("cwd", None) or "",
    }
    parent = wire.pop("parentSessionId", None)
    if parent is not None:
        header["parentSession"] = parent
    header["metadata"] = wire
    try:
        return orjson.dumps(header) + b"\n"
    except TypeError:  # an integer beyond 64 bits, which orjson cannot write: pydantic can
        return to_json(header) + b"\n"


def header_metadata(header: Mapping[str, Any]) -> dict[str, Any]:
    """The session metadata (camelCase, not validated) a pi session header carries.

    ``cwd`` ↔ ``cwd`` and ``parentSession`` ↔ ``parentSessionId``; the ``metadata`` object
    (what sessiontree writes) as it is; every other header key (``branchedFrom``,
    ``provider``, ...) as a metadata key. A header value that is ``null`` or ``""`` is no
    value: it is left out (an empty ``cwd`` too). Opening a file in place and importing it
    map its header alike.
    """
    meta: dict[str, Any] = {
        k: v for k, v in header.items() if k not in _HEADER_KEYS and v not in (None, "")
    }
    raw = header.get("metadata")
    if isinstance(raw, dict):
        meta.update(raw)
    cwd = header.get("cwd")
    if isinstance(cwd, str) and cwd:
        meta["cwd"] = cwd
    parent = header.get("parentSession")
    if isinstance(parent, str):
        meta["parentSessionId"] = parent
    return meta


def parse_header(first_line: bytes, path: str | Path) -> Header:
    """Parse line 1 of a session file (without or with its newline).

    Raises:
        CorruptSessionError: not a JSON object with ``type: "session"`` and a string ``id``
            (the file is not a session file), or a pi version other than 3 (older files are
            imported with :func:`sessiontree.import_session`, never migrated in place here).
    """
    # a UTF-8 byte-order mark before the header (an editor's) is not part of it: found in
    # review, import accepted such a file while the store hid it from listing and opening
    line = first_line.rstrip(b"\r\n").removeprefix(b"\xef\xbb\xbf")
    try:
        obj = exact_json.loads(line) if line.strip() else None
    except exact_json.JSONDecodeError as exc:
        obj, _, reason = _read_repaired(line)
        if reason is not None:
            raise CorruptSessionError(
                "not a session file: line 1 is not a JSON session header",
                path=path,
                line_number=1,
            ) from exc
    if not isinstance(obj, dict) or obj.get("type") != "session":
        raise CorruptSessionError(
            'not a session file: line 1 is not a {"type":"session"} header',
            path=path,
            line_number=1,
        )
    session_id = obj.get("id")
    if not isinstance(session_id, str) or not session_id:
        raise CorruptSessionError("session header has no id", path=path, line_number=1)
    version = obj.get("version", 1)
    if version != FORMAT_VERSION:
        raise CorruptSessionError(
            f"pi session file version {version!r} cannot be opened in place (only version "
            f"{FORMAT_VERSION}); import it with sessiontree.import_session",
            path=path,
            line_number=1,
        )
    wire = header_metadata(obj)
    try:
        metadata = SessionMetadata.model_validate(wire)
    except ValidationError as exc:
        raise CorruptSessionError(
            f"session header metadata is invalid: {exc.errors()[0]['msg']}",
            path=path,
            line_number=1,
        ) from exc
    created_ms, created_at = 0, created_at_of(0)
    ts = obj.get("timestamp")
    if isinstance(ts, str):
        with contextlib.suppress(ValueError):
            ms = ms_from_iso(ts)
            created_ms, created_at = ms, created_at_of(ms)
    return Header(session_id, created_at, metadata, len(first_line), created_ms, wire)


def created_at_of(created_ms: int) -> datetime:
    """A header's ``created_at`` from its Unix milliseconds (:attr:`Header.created_ms`).

    Raises:
        OverflowError, OSError, ValueError: a time out of range.
    """
    return datetime.fromtimestamp(created_ms / 1000, UTC)


class LineRecord:
    """One entry line, indexed but not yet validated into a pydantic model.

    Only ``type``, ``id`` and ``parentId`` are read from the raw JSON at open, which is all
    the tree rules need of existing entries (:func:`sessiontree.tree.check_append` asks for
    types by id; :func:`sessiontree.tree.trace_chain` follows ``parent_id``).
    ``data`` is the line's JSON text (without its newline) until :meth:`entry_of` validates
    it; then ``entry`` holds the model and ``data`` is dropped. The text, not the parsed
    line, is kept: it takes half the memory of the parsed dict, and validating it
    (``validate_json``) is cheaper than validating a dict parsed earlier, whose objects are
    no longer in the CPU's caches (the same entry either way: both are read by
    pydantic-core's JSON parser, ``tests/test_entry_pipeline.py``). ``seq`` is the
    append-order position; ``start`` and ``end`` are the byte offsets of the line in the
    file (``end`` at its newline, or at the end of a final line without one), so the stored
    line can be copied as it is.
    """

    __slots__ = (
        "data",
        "end",
        "entry",
        "id",
        "line_number",
        "parent_id",
        "parsed",
        "seq",
        "start",
        "type",
    )

    def __init__(
        self,
        entry_id: str,
        kind: str,
        parent_id: str | None,
        line_number: int,
        data: bytes | None,
        entry: Entry | None = None,
        start: int = -1,
        end: int = -1,
    ) -> None:
        self.id = entry_id
        self.type = kind
        self.parent_id = parent_id
        self.line_number = line_number
        self.data = data
        self.parsed: Any = None  # ``data`` parsed, once the fold asked for a field or text
        self.entry = entry
        self.start = start
        self.end = end
        self.seq = -1

    @classmethod
    def of_entry(cls, entry: Entry, line_number: int, start: int, end: int) -> LineRecord:
        """A record of an entry already validated (just appended at bytes ``start:end``)."""
        return cls(entry.id, entry.type, entry.parent_id, line_number, None, entry, start, end)

    def field(self, key: str) -> Any:
        """A top-level wire field (camelCase) of the line, validated or not (an unvalidated
        line is parsed for it: the fold asks only label, name and leaf lines)."""
        if self.entry is not None:
            return self.entry.to_wire().get(key)
        return None if self.data is None else self._parsed().get(key)

    def first_message_text(self) -> str | None:
        """:func:`~sessiontree.fold.first_message_text` of the line's message, validated or
        not (``None`` for a line that is not a user message or does not validate)."""
        entry = self.entry
        if entry is None:
            return None if self.data is None else first_user_text(self._parsed())
        return first_message_text(entry.message) if isinstance(entry, MessageEntry) else None

    def _parsed(self) -> Any:
        """The unvalidated line parsed, once (a label line is asked for two fields)."""
        if self.parsed is None:
            self.parsed = exact_json.loads(cast(bytes, self.data))
        return self.parsed

    def entry_of(self, path: str | Path, session_id: str | None) -> Entry:
        """The validated entry (validated once, then cached).

        Raises:
            CorruptSessionError: the line is JSON but not a valid entry (names file and line).
        """
        entry = self.entry
        if entry is None:
            try:
                entry = validate_entry_json(cast(bytes, self.data))
            except ValidationError as exc:
                raise CorruptSessionError(
                    f"invalid entry: {validation_problem(exc)}",
                    session_id=session_id,
                    entry_id=self.id,
                    path=path,
                    line_number=self.line_number,
                ) from exc
            self.entry = entry
            self.data = self.parsed = None
        return entry


def entries_of(
    records: Sequence[LineRecord], path: str | Path, session_id: str | None
) -> list[Entry]:
    """The validated entries of ``records``, each validated from its text once (root first:
    the first bad line raises).

    Raises:
        CorruptSessionError: a line is JSON but not a valid entry (names file and line).
    """

    def entries() -> list[Entry]:
        return [r.entry if r.entry is not None else r.entry_of(path, session_id) for r in records]

    if sum(r.entry is None for r in records) < 2:
        return entries()  # nothing to build in bulk: the collector is left as it is
    with gc_paused():
        return entries()


@dataclass(frozen=True)
class SkippedLine:
    """A line left out because the caller opted into skipping bad lines."""

    line_number: int
    reason: str


@dataclass
class ScanResult:
    """What :func:`scan_block` found in a block of bytes.

    Attributes:
        records: the good lines, in order.
        consumed: bytes of the block that are whole, accepted lines (the next read starts here).
        lines: lines consumed (good, blank or skipped).
        torn: the block ends in an incomplete line (no newline) or a final line that does not
            parse; it is not consumed (docs/storage.md: ignored, cut off before the next append).
        skipped: lines skipped in skip mode.
    """

    records: list[LineRecord] = field(default_factory=list)
    consumed: int = 0
    lines: int = 0
    torn: bool = False
    skipped: list[SkippedLine] = field(default_factory=list)


def _check_shape(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return "not a JSON object"
    if not isinstance(obj.get("type"), str):
        return "no string 'type'"
    entry_id = obj.get("id")
    if not isinstance(entry_id, str) or not entry_id:
        return "no entry 'id'"
    parent = obj.get("parentId")
    if parent is not None and not isinstance(parent, str):
        return "'parentId' is not a string or null"
    return None


_validate_head: Callable[[bytes], dict[str, Any]] | None = None
"""``validate_json`` of the keys of an entry line the scan reads (``type``, ``id`` and an
optional ``parentId``), built on the first line scanned: a typed-dict schema ignores the
other keys, and pydantic-core skips their values without building them."""


def line_head(line: bytes) -> tuple[str, str, str | None] | None:
    """``(id, type, parentId)`` of an entry line, read without building the line's other
    values (about half the time of parsing it); ``None`` when the strict parser must decide:
    the line may hold a ``NaN``/``Infinity`` constant, does not read as JSON, or its head is
    not an entry's (no ``id`` or an empty one, a ``type`` or ``parentId`` of another kind).

    Where it answers, :func:`sessiontree._json.loads` accepts the line too and reads the same
    three values: both are pydantic-core's JSON parser (a duplicate key keeps its last value
    in both), which reads the non-finite constants only when lenient, and lines that may hold
    them are left to the strict one (``tests/test_jsonl_storage.py``).
    """
    global _validate_head
    validate = _validate_head
    if validate is None:
        text = core_schema.str_schema(strict=True)
        schema = core_schema.typed_dict_schema(
            {
                "type": core_schema.typed_dict_field(text),
                "id": core_schema.typed_dict_field(text),
                "parentId": core_schema.typed_dict_field(
                    core_schema.nullable_schema(text), required=False
                ),
            },
            extra_behavior="ignore",
        )
        validate = _validate_head = SchemaValidator(schema).validate_json
    if exact_json.may_be_non_finite(line):
        return None
    try:
        head = validate(line)
    except ValueError:  # pydantic's ValidationError: not JSON, not an object, a wrong kind
        return None
    entry_id = head["id"]
    return (entry_id, head["type"], head.get("parentId")) if entry_id else None


def scan_block(
    block: bytes,
    first_line_number: int,
    path: str | Path,
    *,
    skip_bad: bool = False,
    validate: bool = False,
    session_id: str | None = None,
    base: int = 0,
) -> ScanResult:
    """Scan whole lines of ``block`` (bytes that follow the last consumed line) into records.

    Args:
        block: file bytes from the first unread byte to the end of the file.
        first_line_number: the 1-based file line number of the block's first line.
        base: the file offset of the block's first byte (records' ``start``/``end``).
        path: named in errors.
        skip_bad: skip (and report) bad lines instead of raising.
        validate: validate every line into an entry now (used with ``skip_bad`` so that invalid
            entries are found at open time, not later).
        session_id: named in errors.

    Raises:
        CorruptSessionError: a line that is not a valid entry line and is not the final line
            (``file:line``), unless ``skip_bad``.
    """
    result = ScanResult()
    pieces = block.split(b"\n")
    tail = pieces.pop()  # bytes after the last newline: b"" or a torn line
    last = len(pieces) - 1
    loads = exact_json.loads
    records = result.records
    append = records.append
    line_number = first_line_number - 1
    end = base - 1
    for i, piece in enumerate(pieces):
        line_number += 1
        start = end + 1
        end = start + len(piece)
        if not piece or piece.isspace():
            continue
        reason: str | None = None
        head = line_head(piece)
        if head is None:  # the strict parser decides, and says what is wrong
            obj: Any = None
            try:
                obj = loads(piece)
            except exact_json.JSONDecodeError:
                obj, piece, reason = _read_repaired(piece)
            if reason is None:
                if (
                    type(obj) is dict
                    and type(entry_id := obj.get("id")) is str
                    and entry_id
                    and type(kind := obj.get("type")) is str
                    and ((pid := obj.get("parentId")) is None or type(pid) is str)
                ):
                    head = entry_id, kind, pid
                else:
                    reason = _check_shape(obj)
        if head is not None:
            record = LineRecord(*head, line_number, piece, None, start, end)
            if not validate:
                append(record)
                continue
            try:
                record.entry_of(path, session_id)
            except CorruptSessionError as exc:
                reason = str(exc)
            else:
                append(record)
                continue
        assert reason is not None
        if i == last and not tail and reason == "not valid JSON":
            result.consumed = sum(len(p) + 1 for p in pieces[:i])
            result.lines = i
            result.torn = True
            return result
        if not skip_bad:
            raise CorruptSessionError(
                f"bad line: {reason}",
                session_id=session_id,
                path=path,
                line_number=line_number,
            )
        result.skipped.append(SkippedLine(line_number, reason))
    result.consumed = len(block) - len(tail)
    result.lines = len(pieces)
    if tail:
        result.torn = True
    return result


def _read_repaired(line: bytes) -> tuple[Any, bytes, str | None]:
    """A line the strict parser refused, read again with its lone surrogate escapes as
    U+FFFD (:func:`sessiontree._json.without_lone_surrogates`, as import reads them):
    ``(value, the line as read, None)``, else ``(None, line, "not valid JSON")``."""
    fixed = exact_json.without_lone_surrogates(line)
    if fixed is not line:
        try:
            return exact_json.loads(fixed), fixed, None
        except exact_json.JSONDecodeError:
            pass
    return None, line, "not valid JSON"


def is_whole_line(tail: bytes) -> bool:
    """Whether ``tail``, a final line without its newline, is whole (it parses as JSON).

    A torn write cannot parse (an object only closes at its end), so a tail that parses is a
    line another tool wrote without the last newline: storage, listing, search and ``verify``
    all read it as a line, by this one rule.
    """
    if not tail.strip():
        return False
    try:
        exact_json.loads(tail)
    except exact_json.JSONDecodeError:
        return _read_repaired(tail)[2] is None
    return True


def first_user_text(data: dict[str, Any]) -> str | None:
    """:func:`~sessiontree.fold.first_message_text` of a raw ``message`` line, else ``None``.

    Used for :attr:`SessionInfo.first_message`; a message that does not validate gives ``None``.
    """
    if data.get("type") != "message":
        return None
    msg = data.get("message")
    if not isinstance(msg, dict) or msg.get("role") != "user":
        return None
    try:
        return first_message_text(parse_message(msg))
    except ValidationError:
        return None
