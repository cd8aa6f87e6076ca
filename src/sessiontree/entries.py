"""Session entries: the typed nodes of the append-only tree (docs/entries.md).

Every entry has ``type`` (the discriminator), ``id``, ``parent_id`` (``None`` for a root) and
``timestamp`` (ISO 8601 UTC with milliseconds). :data:`ENTRY_ADAPTER` is the only way in and
out: :func:`parse_entry` validates a camelCase (or snake_case) dict, :func:`dump_entry` writes
the camelCase dict back with unknown keys unchanged. An entry whose ``type`` is unknown parses
as :class:`OpaqueEntry` (so a newer writer's file still opens) but is refused by
``append_entry``.

Entries are of two kinds (docs/tree.md): **path entries** (every type but three) and
**bookkeeping entries** (``label``, ``session_info``, ``leaf``) that never move the leaf.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, TypeVar

import orjson
from pydantic import AfterValidator, Field, TypeAdapter, ValidationError
from pydantic_core import to_json

from sessiontree import _json as exact_json
from sessiontree._args import MAX_ENTRY_ID_CHARS
from sessiontree._model import DEFER_BUILD, WireModel
from sessiontree.errors import InvalidEntryError
from sessiontree.ids import new_id, now_iso, now_ms
from sessiontree.messages import (
    MESSAGE_ADAPTER,
    MESSAGE_ROLES,
    AgentMessage,
    ContentBlock,
    Usage,
    parse_message,
)

__all__ = [
    "BOOKKEEPING_TYPES",
    "ENTRY_ADAPTER",
    "ENTRY_TYPES",
    "ActiveToolsChangeEntry",
    "BranchSummaryEntry",
    "CompactionDetails",
    "CompactionEntry",
    "CustomEntry",
    "CustomMessageEntry",
    "Entry",
    "LabelEntry",
    "LeafEntry",
    "MessageEntry",
    "ModelChangeEntry",
    "OpaqueEntry",
    "SessionInfoEntry",
    "ThinkingLevel",
    "ThinkingLevelChangeEntry",
    "dump_entry",
    "dump_entry_json",
    "checked_entry",
    "checked_under",
    "is_path_entry",
    "message_entry",
    "parse_entry",
    "parse_entry_json",
    "reparent",
    "stored_form",
    "with_parent",
    "validation_problem",
]

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
"""Reasoning effort requested from the model; ``off`` when never set."""

BOOKKEEPING_TYPES = frozenset({"label", "session_info", "leaf"})
"""Entry types that never move the leaf and are never on a branch path (docs/tree.md)."""


class _EntryBase(WireModel):
    _always_dumped: ClassVar[frozenset[str]] = frozenset({"type", "id", "parent_id", "timestamp"})

    type: str
    """The discriminator (docs/entries.md)."""
    id: str = Field(default_factory=new_id, min_length=1)
    """Entry id: a UUID v7 for new entries; imported ids of any non-empty form are kept."""
    parent_id: str | None = None
    """The parent entry's id; ``None`` marks a root."""
    timestamp: str = Field(default_factory=now_iso)
    """When the entry was written: ISO 8601 UTC with milliseconds, ``Z`` suffix."""


class MessageEntry(_EntryBase):
    """An :data:`AgentMessage` on the tree; projected into the context as itself."""

    type: Literal["message"] = "message"
    message: AgentMessage


class ModelChangeEntry(_EntryBase):
    """The user switched model; feeds derived state, never the context."""

    type: Literal["model_change"] = "model_change"
    provider: str
    model_id: str


class ThinkingLevelChangeEntry(_EntryBase):
    """The thinking level changed; feeds derived state."""

    type: Literal["thinking_level_change"] = "thinking_level_change"
    thinking_level: ThinkingLevel


class ActiveToolsChangeEntry(_EntryBase):
    """The set of tools offered to the model changed; feeds derived state."""

    type: Literal["active_tools_change"] = "active_tools_change"
    active_tool_names: list[str]


class CompactionDetails(WireModel):
    """Files the summarised part touched (cumulative, sorted) and any further keys."""

    read_files: list[str] = Field(default_factory=list)
    modified_files: list[str] = Field(default_factory=list)


class CompactionEntry(_EntryBase):
    """A summary that replaces older context (docs/compaction.md).

    ``first_kept_entry_id`` (pointer mode) names the first entry kept after the summary;
    ``retained_tail`` (retained-tail mode, even ``[]``) holds the kept messages themselves.
    ``tokens_before`` is the context size in tokens before compaction.
    """

    type: Literal["compaction"] = "compaction"
    summary: str
    tokens_before: int = 0
    first_kept_entry_id: str | None = None
    details: CompactionDetails | None = None
    usage: Usage | None = None
    retained_tail: list[AgentMessage] | None = None
    from_hook: bool | None = None


class BranchSummaryEntry(_EntryBase):
    """The summary of a branch that was left; ``from_id`` is the old leaf (docs/branching.md).

    ``from_id`` is ``None`` (``"fromId": null``) when the branch that was left is not in this
    session: a fork copies the path to its target, not the abandoned branch a summary on that
    path names. The same entry (same id) in the parent session (``parentSessionId``) still
    holds the original ``fromId``.
    """

    type: Literal["branch_summary"] = "branch_summary"
    summary: str
    from_id: str | None
    details: Any = None
    usage: Usage | None = None
    from_hook: bool | None = None


class CustomEntry(_EntryBase):
    """Extension data; enters the context only through an ``entry_projectors`` function."""

    type: Literal["custom"] = "custom"
    custom_type: str
    data: Any = None


class CustomMessageEntry(_EntryBase):
    """An extension's message, projected as a ``custom`` message."""

    type: Literal["custom_message"] = "custom_message"
    custom_type: str
    content: str | list[ContentBlock]
    display: bool = True
    details: Any = None


class LabelEntry(_EntryBase):
    """Sets (or, with ``None``/empty, clears) the label of ``target_id``. Bookkeeping.

    ``target_id`` is ``None`` (``"targetId": null``) in a fork for a label entry the copied
    path runs through (files of other tools chain entries under labels) whose target was not
    copied: it labels nothing. The fork's labels are those its copied entries had.
    """

    type: Literal["label"] = "label"
    target_id: str | None
    label: str | None = None


class LeafEntry(_EntryBase):
    """Moves the leaf to ``target_id`` (``None``: the next append starts a new root). Bookkeeping."""

    type: Literal["leaf"] = "leaf"
    target_id: str | None = None


class SessionInfoEntry(_EntryBase):
    """Names the session. Bookkeeping."""

    type: Literal["session_info"] = "session_info"
    name: str


class OpaqueEntry(_EntryBase):
    """An entry of a ``type`` this library does not know: kept whole, skipped by context building."""

    type: str


_ENTRY_CLASSES: dict[str, type[_EntryBase]] = {
    "message": MessageEntry,
    "model_change": ModelChangeEntry,
    "thinking_level_change": ThinkingLevelChangeEntry,
    "active_tools_change": ActiveToolsChangeEntry,
    "compaction": CompactionEntry,
    "branch_summary": BranchSummaryEntry,
    "custom": CustomEntry,
    "custom_message": CustomMessageEntry,
    "label": LabelEntry,
    "leaf": LeafEntry,
    "session_info": SessionInfoEntry,
}
ENTRY_TYPES = frozenset(_ENTRY_CLASSES)
"""The entry types of docs/entries.md."""


def _unknown_entry_type(entry: OpaqueEntry) -> OpaqueEntry:
    if entry.type in ENTRY_TYPES:
        raise ValueError(f"not a valid {entry.type!r} entry")
    return entry


# Tagged by the plain ``type`` string, then the opaque fallback for unknown types only (see
# ``ContentBlock`` in messages.py: twice as fast as a callable discriminator).
Entry = Annotated[
    Annotated[
        MessageEntry
        | ModelChangeEntry
        | ThinkingLevelChangeEntry
        | ActiveToolsChangeEntry
        | CompactionEntry
        | BranchSummaryEntry
        | CustomEntry
        | CustomMessageEntry
        | LabelEntry
        | LeafEntry
        | SessionInfoEntry,
        Field(discriminator="type"),
    ]
    | Annotated[OpaqueEntry, AfterValidator(_unknown_entry_type)],
    Field(union_mode="left_to_right"),
]
"""Any session entry, discriminated by ``type``."""

ENTRY_ADAPTER: TypeAdapter[Entry] = TypeAdapter(Entry, config=DEFER_BUILD)
_ENTRY_LIST_ADAPTER: TypeAdapter[list[Entry]] = TypeAdapter(list[Entry], config=DEFER_BUILD)


def is_path_entry(entry: Entry) -> bool:
    """True for path entries (may be on a branch and move the leaf), False for bookkeeping ones."""
    return entry.type not in BOOKKEEPING_TYPES


def validation_problem(exc: ValidationError) -> str:
    """The most specific problem of a failed entry validation as ``"field.path: message"``.

    Union labels pydantic puts in error locations (``tagged-union[...]``,
    ``function-after[...]``, the ``str`` of ``str | list``) are left out, so the path names
    wire fields and type tags only (``message.message.user.content.0.text``). Of the errors
    of the union's branches, the deepest is reported: it names the field that is wrong (a
    missing ``text`` rather than "content is not a string").
    """
    best: tuple[str, ...] | None = None
    msgs: list[str] = [str(exc)]
    for error in exc.errors():
        loc = tuple(
            str(p)
            for p in error["loc"]
            if not (
                isinstance(p, str)
                and (p.startswith(("tagged-union[", "function-after[", "list[")) or p == "str")
            )
        )
        if best is None or len(loc) > len(best):
            best, msgs = loc, [str(error["msg"])]
        elif loc == best and str(error["msg"]) not in msgs:
            msgs.append(str(error["msg"]))  # branches of ``str | list`` failing alike
    text = " / ".join(msgs)
    return f"{'.'.join(best)}: {text}" if best else text


def _invalid(exc: ValidationError, obj: Any) -> InvalidEntryError:
    entry_id = obj.get("id") if isinstance(obj, dict) else None
    return InvalidEntryError(
        f"invalid entry: {validation_problem(exc)}",
        entry_id=entry_id if isinstance(entry_id, str) else None,
    )


def parse_entry(obj: Any) -> Entry:
    """Validate a dict (camelCase or snake_case keys) or an entry model into an :data:`Entry`.

    A missing ``id`` gets a new UUID v7 and a missing ``timestamp`` the current time.

    Raises:
        InvalidEntryError: the object is not a valid entry (names the entry and the field).
    """
    if isinstance(obj, _EntryBase):
        return obj  # type: ignore[return-value]
    try:
        return ENTRY_ADAPTER.validate_python(obj)
    except ValidationError as exc:
        raise _invalid(exc, obj) from exc


def _validate_json(data: bytes | str) -> Entry:
    """:data:`ENTRY_ADAPTER` over JSON text, at any depth the JSON reader goes.

    pydantic-core's own JSON parser stops at about 200 levels of nesting; a deeper document
    (a tool's ``details`` 200 levels down) is parsed by :func:`sessiontree._json.loads`
    (1024 levels) and validated as Python data, which has no such limit.

    Raises:
        ValidationError: not a valid entry (or not JSON).
    """
    try:
        return ENTRY_ADAPTER.validate_json(data)
    except ValidationError as exc:
        if not any("recursion limit" in str(e.get("msg", "")) for e in exc.errors()):
            raise
        try:
            obj = exact_json.loads(data)
        except ValueError:
            raise exc from None
        return ENTRY_ADAPTER.validate_python(obj)


def parse_entry_json(data: bytes | str) -> Entry:
    """Validate one JSON document (a JSONL line) into an :data:`Entry`, at any depth of
    nesting the JSON reader goes (1024 levels).

    Raises:
        InvalidEntryError: the JSON is malformed or not a valid entry.
    """
    try:
        return _validate_json(data)
    except ValidationError as exc:
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            obj = None
        raise _invalid(exc, obj) from exc


def dump_entry(entry: Entry) -> dict[str, Any]:
    """The camelCase wire dict of an entry: keys that were set, unknown keys unchanged."""
    return entry.to_wire()


def dump_entry_json(entry: Entry) -> bytes:
    """The entry as compact JSON bytes (one JSONL line without the newline).

    Every backend stores this form (through :func:`stored_form`), so it is also where data
    that JSON cannot carry is refused, before anything is written: non-finite numbers
    (``NaN``, ``Infinity``), strings with lone surrogates, ``bytes`` that are not UTF-8.

    Raises:
        InvalidEntryError: the entry holds a value that is not valid JSON (names the entry).
    """
    try:
        return exact_json.model_json(entry)
    except ValueError as exc:
        raise InvalidEntryError(f"entry {exc}", entry_id=entry.id) from exc


_checked: OrderedDict[int, tuple[Entry, bool]] = OrderedDict()
"""Entries :func:`message_entry` built from a message it validated from JSON, by ``id()``,
each with whether its caller keeps no other reference (``owned``): :func:`stored_form` takes
them as they are, without the read-back. The value holds the entry, so its ``id()`` cannot
be reused while it is here, and a hit must be the very object (``is``). Bounded: an entry
never handed to a store is forgotten after :data:`_CHECKED_MAX` newer ones."""
_checked_lock = threading.Lock()
_M = TypeVar("_M", bound=WireModel)
_E = TypeVar("_E", bound=_EntryBase)
_CHECKED_MAX = 256


def _remember_checked(entry: Entry, owned: bool) -> None:
    with _checked_lock:
        _checked[id(entry)] = (entry, owned)
        if len(_checked) > _CHECKED_MAX:
            _checked.popitem(last=False)


def _take_checked(obj: Any) -> tuple[Entry, bool] | None:
    with _checked_lock:
        hit = _checked.pop(id(obj), None)
    return hit if hit is not None and hit[0] is obj else None


def _message_from_json(message: Any) -> AgentMessage | None:
    """``message`` validated from its JSON, or ``None`` when that path cannot decide (then
    :func:`parse_message` must, and raises what it raises).

    A dict is written by pydantic-core's serialiser first, so Python-only values in the
    untyped places (``details``, tool ``arguments``, unknown keys: tuples, datetimes, int
    keys) become the JSON values every reader of a store sees; a model is written with
    :func:`~sessiontree._json.model_json`. The message validated from that JSON is what a
    reader gets back from the entry's stored JSON: validating its dump again gives an equal
    message (``tests/test_entry_pipeline.py`` checks that on every real session file and on
    generated messages), so the entry needs no read-back.
    """
    try:
        if type(message) is dict:
            data = to_json(message, inf_nan_mode="constants")
        elif isinstance(message, WireModel):
            data = exact_json.model_json(message)
        else:
            return None
    except ValueError:  # a lone surrogate, a value no serialiser writes, too deep
        return None
    # (a one-byte search is a memchr, ~20x faster than the word search it spares for the
    # many messages without a capital N or I)
    if (b"N" in data and b"NaN" in data) or (b"I" in data and b"Infinity" in data):
        return None  # maybe a non-finite number: the slow path refuses it, or keeps the text
    try:
        msg = MESSAGE_ADAPTER.validate_json(data)
    except ValueError:
        return None
    if type(message) is not dict and type(msg) is not type(message):
        return None  # e.g. an OpaqueMessage of a modelled role: the slow path refuses it
    return msg


def _with_timestamp(message: _M) -> _M:
    """``message`` with the current time (Unix ms) when its class has a ``timestamp`` it
    did not set."""
    if "timestamp" in type(message).model_fields and "timestamp" not in message.model_fields_set:
        message = message.model_copy(update={"timestamp": now_ms()})
        message.__pydantic_fields_set__.add("timestamp")
    return message


def message_entry(
    message: AgentMessage | Mapping[str, Any], *, owned: bool = False
) -> MessageEntry:
    """A new :class:`MessageEntry` (new id, the current time, no parent) for ``message``,
    which is validated once.

    A message of a modelled role without ``timestamp`` gets the current time (Unix ms). The
    entry is remembered as checked: :func:`stored_form` then returns it without validating
    its JSON again. ``owned``: the caller hands the entry to one store append and keeps no
    other reference to it, so :func:`checked_under` may set its parent in place instead of
    copying it (what ``Session.append_message`` does).

    Raises:
        pydantic.ValidationError: ``message`` is not a valid message.
        ValueError: it holds a value JSON cannot carry.
    """
    if type(message) is dict:
        if "timestamp" not in message and message.get("role") in MESSAGE_ROLES:
            message = {**message, "timestamp": now_ms()}
    elif isinstance(message, WireModel):
        message = _with_timestamp(message)
    msg = _message_from_json(message)
    if msg is None:
        msg = _with_timestamp(parse_message(message))
        return MessageEntry(message=msg)  # an unusual message: stored_form reads it back
    entry = _new_message_entry(msg)
    _remember_checked(entry, owned)
    return entry


_MESSAGE_ENTRY_FIELDS: set[str] = {"type", "id", "parent_id", "timestamp", "message"}
"""The fields set of every entry :func:`_new_message_entry` builds (shared: never changed in
place, see ``sessiontree._model``)."""


def _new_message_entry(msg: AgentMessage) -> MessageEntry:
    """``MessageEntry(id=new_id(), timestamp=now_iso(), message=msg)`` without validating the
    parts again: ``msg`` was just validated, the id is a new UUID v7, the time is formatted
    here. Equal to the validated construction, fields set included
    (``tests/test_entry_pipeline.py``); ~1 µs instead of ~10-20 (validating the message
    instance again runs its model validator)."""
    entry = object.__new__(MessageEntry)
    object.__setattr__(
        entry,
        "__dict__",
        {
            "type": "message",
            "id": new_id(),
            "parent_id": None,
            "timestamp": now_iso(),
            "message": msg,
        },
    )
    object.__setattr__(entry, "__pydantic_fields_set__", _MESSAGE_ENTRY_FIELDS)
    object.__setattr__(entry, "__pydantic_extra__", {})
    object.__setattr__(entry, "__pydantic_private__", None)
    return entry


def checked_entry(obj: Any) -> Entry:
    """:func:`stored_form`'s entry without its JSON, for a store that keeps no JSON (memory):
    an entry from :func:`message_entry` is taken as it is.

    Raises:
        InvalidEntryError: as :func:`stored_form`.
    """
    hit = _take_checked(obj)
    return hit[0] if hit is not None else stored_form(obj)[0]


def checked_under(obj: Any, parent_id: str | None) -> Entry:
    """:func:`checked_entry` of ``obj`` under the parent ``parent_id`` (the store's leaf): as
    ``with_parent(checked_entry(obj), parent_id)``.

    An entry from ``message_entry(..., owned=True)`` gets its parent set in place: nobody else
    holds it, so no copy is needed (it is taken from the registry once, here).

    Raises:
        InvalidEntryError: as :func:`stored_form`.
    """
    hit = _take_checked(obj)
    if hit is None:
        entry = stored_form(obj)[0]
    else:
        entry, owned = hit
        if owned and entry.parent_id is None:
            entry.__dict__["parent_id"] = parent_id
            return entry
    return entry if entry.parent_id == parent_id else with_parent(entry, parent_id)


def stored_form(obj: Any) -> tuple[Entry, bytes]:
    """What a backend stores for an entry to append: its JSON, and the entry read back from it.

    ``obj`` is a dict or an entry model (:func:`parse_entry`). The JSON
    (:func:`dump_entry_json`) is validated back into an entry (~8 µs), and that entry — not
    the caller's object — is what the backend checks (docs/tree.md), indexes, labels and searches,
    so the writing process sees what every later reader sees. Without the read-back, an
    ``OpaqueEntry(type="message")`` or ``(type="label")``, an ``OpaqueBlock(type="text")``
    put in by ``model_copy(update=...)`` (which does not validate), or plain dicts where
    models belong would be stored as given: the session would then fail to open, or the
    writer's context, labels and search index would differ from the file's.

    Raises:
        InvalidEntryError: not a valid entry, an id longer than
            :data:`~sessiontree._args.MAX_ENTRY_ID_CHARS`, a value JSON cannot carry, or JSON
            that does not read back as an entry (names the entry and the field).
    """
    hit = _take_checked(obj)
    if hit is not None:
        return hit[0], dump_entry_json(hit[0])
    entry = parse_entry(obj)
    if len(entry.id) > MAX_ENTRY_ID_CHARS:
        raise InvalidEntryError(
            f"entry id of {len(entry.id):,} characters is longer than the "
            f"{MAX_ENTRY_ID_CHARS} any store keeps",
            entry_id=entry.id[:40] + "…",
        )
    data = dump_entry_json(entry)
    try:
        return _validate_json(data), data
    except ValidationError as exc:
        raise InvalidEntryError(
            f"entry would not read back: {validation_problem(exc)}", entry_id=entry.id
        ) from exc
    except ValueError as exc:  # e.g. nested deeper than the JSON reader goes
        raise InvalidEntryError(f"entry would not read back: {exc}", entry_id=entry.id) from exc


_PARENT_KEY = b',"parentId":'


def with_parent(entry: _E, parent_id: str | None) -> _E:
    """``entry`` under another parent: equal to ``entry.model_copy(update={"parent_id":
    parent_id})``, ``parent_id`` among the fields set, in ~1 µs instead of ~5-12.

    The new model gets a copy of the field values with the new parent; its fields set is the
    entry's own (``parent_id`` is always in it, see ``_EntryBase._always_dumped``), which is
    safe to share because no model's fields set is changed in place (``sessiontree._model``).
    Nothing is validated: the parent is an entry id the caller checked (the store's leaf).
    """
    moved = object.__new__(type(entry))
    values = entry.__dict__.copy()
    values["parent_id"] = parent_id
    fields_set = entry.__pydantic_fields_set__
    if "parent_id" not in fields_set:
        fields_set = {*fields_set, "parent_id"}
    extra = entry.__pydantic_extra__
    object.__setattr__(moved, "__dict__", values)
    object.__setattr__(moved, "__pydantic_fields_set__", fields_set)
    object.__setattr__(moved, "__pydantic_extra__", None if extra is None else dict(extra))
    object.__setattr__(moved, "__pydantic_private__", entry.__pydantic_private__)
    return moved


def reparent(entry: Entry, body: bytes, parent_id: str | None) -> tuple[Entry, bytes]:
    """``entry`` under another parent, with its stored JSON, without serialising it again.

    ``body`` is the entry's JSON from :func:`stored_form`. The dump writes ``type``, ``id``
    and ``parentId`` first, in that order, and a quote inside a string value is escaped, so
    the first ``,"parentId":`` in ``body`` is the entry's own key; its value is replaced by the
    new one, written by the same serialiser as the rest. The result is byte for byte
    :func:`dump_entry_json` of the moved entry (serialising a 2 KB entry costs ~5-25 µs;
    this costs ~1 µs). A body not of that shape is dumped again.
    """
    moved = with_parent(entry, parent_id)
    old = _PARENT_KEY + to_json(entry.parent_id)
    at = body.find(_PARENT_KEY)
    end = at + len(old)
    if body.startswith(b'{"type":') and at > 0 and end < len(body) and body.startswith(old, at):
        return moved, body[:at] + _PARENT_KEY + to_json(parent_id) + body[end:]
    return moved, dump_entry_json(moved)
