"""What a store appends for an entry: a :class:`PreparedEntry`, the entry checked once and its
JSON (docs/storage.md).

Validation produces one value, which the caller hands to ``storage.append_entry``:

* :func:`prepare_entry` takes a dict or an entry model, writes its JSON and reads it back:
  the entry read back, not the caller's object, is what the store checks, indexes and keeps,
  so the writing process sees what every later reader sees;
* :func:`prepare_message` takes a new message and validates it once from its JSON, giving a
  :class:`PreparedMessage` (the message, a new id, the current time): its entry is built once,
  when a store knows the parent, without reading it back; that entry is what a reader gets
  back from the JSON it is written as.

A store puts the prepared entry under its leaf with ``under`` (a new value: entries are
immutable) and writes ``body``, serialised once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_core import to_json

from sessiontree import _json as exact_json
from sessiontree._args import MAX_ENTRY_ID_CHARS
from sessiontree._model import WireModel, json_validator, shared_fields_set
from sessiontree.entries import (
    Entry,
    MessageEntry,
    dump_entry_json,
    parse_entry,
    validate_entry_json,
    validation_problem,
    with_parent,
)
from sessiontree.errors import InvalidEntryError
from sessiontree.ids import check_id, new_id, now_iso, now_ms
from sessiontree.messages import MESSAGE_ADAPTER, MESSAGE_ROLES, AgentMessage, parse_message

__all__ = [
    "Prepared",
    "PreparedEntry",
    "PreparedMessage",
    "check_entry_ids",
    "prepare_entry",
    "prepare_message",
    "reparent",
]

_M = TypeVar("_M", bound=WireModel)


@dataclass(frozen=True, slots=True)
class PreparedEntry:
    """An entry checked for a store: the entry every reader of the store will get back, and
    the JSON it is written as.

    Built by :func:`prepare_entry` or :func:`prepare_message`; passed to
    ``SessionStorage.append_entry`` (which also takes a plain entry and prepares it itself).
    Immutable: :meth:`under` gives a new value.
    """

    entry: Entry
    """The entry as stored: validated (from its JSON, or a message validated from its JSON
    in a new entry), and checked for ids every backend can hold."""
    json: bytes | None = None
    """The entry's JSON (:func:`~sessiontree.entries.dump_entry_json`: compact UTF-8, no
    newline), or ``None`` when it has not been written yet (a new message's entry, which a
    store that keeps no JSON never needs written)."""

    def under(self, parent_id: str | None) -> PreparedEntry:
        """This entry under the parent ``parent_id`` (the store's leaf): ``self`` when it is
        already there, else the moved entry with its JSON moved too (:func:`reparent`; not
        serialised again).
        """
        entry = self.entry
        if entry.parent_id == parent_id:
            return self
        if self.json is None:
            return PreparedEntry(with_parent(entry, parent_id))
        return PreparedEntry(*reparent(entry, self.json, parent_id))

    def serialised(self) -> PreparedEntry:
        """This prepared entry with its :attr:`json` written (``self`` when it is).

        Raises:
            InvalidEntryError: as :meth:`body`.
        """
        return self if self.json is not None else PreparedEntry(self.entry, self.body())

    def body(self) -> bytes:
        """The entry's JSON: :attr:`json`, or the entry written now when there is none yet.

        Raises:
            InvalidEntryError: the entry holds a value JSON cannot carry (names the entry).
        """
        return self.json if self.json is not None else dump_entry_json(self.entry)


@dataclass(frozen=True, slots=True)
class PreparedMessage:
    """A new message checked for a store, before its entry has a parent: the entry is built
    once, by :meth:`under`, when the store knows its leaf.

    Built by :func:`prepare_message`; passed to ``SessionStorage.append_entry`` like a
    :class:`PreparedEntry`. Immutable.
    """

    message: AgentMessage
    """The message, validated from its JSON (what a reader of the stored entry gets back)."""
    id: str
    """The new entry's id (:func:`~sessiontree.ids.new_id`)."""
    timestamp: str
    """The new entry's ``timestamp`` (ISO 8601, UTC, :func:`~sessiontree.ids.now_iso`)."""

    @property
    def entry(self) -> MessageEntry:
        """The entry with no parent (a new root); a new entry on each call: a store builds it
        once, with :meth:`under`."""
        return self.under(None).entry  # type: ignore[return-value]

    def under(self, parent_id: str | None) -> PreparedEntry:
        """The message's entry under the parent ``parent_id`` (the store's leaf), built now,
        its JSON not written yet (:meth:`PreparedEntry.body` writes it).

        Nothing is validated: the message was, and the parent is an entry id the store
        checks when it appends (docs/tree.md).
        """
        return PreparedEntry(
            MessageEntry.model_construct(
                shared_fields_set(_MESSAGE_ENTRY_FIELDS),
                type="message",
                id=self.id,
                parent_id=parent_id,
                timestamp=self.timestamp,
                message=self.message,
            )
        )

    def serialised(self) -> PreparedEntry:
        """The entry with no parent (a new root), its JSON written.

        Raises:
            InvalidEntryError: as :meth:`PreparedEntry.body`.
        """
        return self.under(None).serialised()

    def body(self) -> bytes:
        """The JSON of the entry with no parent (see :meth:`PreparedEntry.body`)."""
        return self.under(None).body()


Prepared = PreparedEntry | PreparedMessage
"""What a store appends: an entry checked with its JSON, or a new message whose entry is built
under the store's leaf."""


def prepare_entry(obj: Any) -> Prepared:
    """What a backend stores for an entry to append: the entry read back from its JSON, with
    that JSON. A :class:`PreparedEntry` or :class:`PreparedMessage` is returned as it is.

    ``obj`` is a dict or an entry model (:func:`parse_entry`). The JSON
    (:func:`dump_entry_json`) is validated back into an entry (~8 µs), and that entry — not
    the caller's object — is what the backend checks (docs/tree.md), indexes, labels and
    searches, so the writing process sees what every later reader sees. Without the
    read-back, an ``OpaqueEntry(type="message")`` or ``(type="label")``, an
    ``OpaqueBlock(type="text")`` put in by ``model_copy(update=...)`` (which does not
    validate), or plain dicts where models belong would be stored as given: the session would
    then fail to open, or the writer's context, labels and search index would differ from the
    file's.

    Raises:
        InvalidEntryError: not a valid entry, an id longer than
            :data:`~sessiontree._args.MAX_ENTRY_ID_CHARS`, an id or reference holding a NUL
            or a lone surrogate (:func:`check_entry_ids`), a timestamp holding a NUL, a value
            JSON cannot carry, or JSON that does not read back as an entry (names the entry
            and the field).
    """
    if type(obj) is PreparedEntry or type(obj) is PreparedMessage:
        return obj
    entry = parse_entry(obj)
    if len(entry.id) > MAX_ENTRY_ID_CHARS:
        raise InvalidEntryError(
            f"entry id of {len(entry.id):,} characters is longer than the "
            f"{MAX_ENTRY_ID_CHARS} any store keeps",
            entry_id=entry.id[:40] + "…",
        )
    check_entry_ids(entry)
    stamp = entry.timestamp  # a column on SQL, where PostgreSQL refuses a NUL: refused alike
    if isinstance(stamp, str) and "\x00" in stamp:
        raise InvalidEntryError(
            f"timestamp {entry.timestamp!r} holds a NUL character", entry_id=entry.id
        )
    data = dump_entry_json(entry)
    try:
        return PreparedEntry(validate_entry_json(data), data)
    except ValidationError as exc:
        raise InvalidEntryError(
            f"entry would not read back: {validation_problem(exc)}", entry_id=entry.id
        ) from exc
    except ValueError as exc:  # e.g. nested deeper than the JSON reader goes
        raise InvalidEntryError(f"entry would not read back: {exc}", entry_id=entry.id) from exc


def prepare_message(message: AgentMessage | Mapping[str, Any]) -> Prepared:
    """A new message for a store to append (new id, the current time), ``message`` validated
    once: a :class:`PreparedMessage`, whose entry the store builds under its leaf; or, for a
    message the JSON path cannot decide, a :class:`PreparedEntry` read back like any entry.

    A message of a modelled role without ``timestamp`` gets the current time (Unix ms).

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
    if msg is None:  # an unusual message: read back like any other entry
        return prepare_entry(MessageEntry(message=_with_timestamp(parse_message(message))))
    return PreparedMessage(msg, new_id(), now_iso())


_MESSAGE_ENTRY_FIELDS = frozenset({"type", "id", "parent_id", "timestamp", "message"})
"""The fields set of a new message's entry, as validating ``MessageEntry(message=...)`` sets
it (``type``, ``id``, ``parent_id`` and ``timestamp`` are always written)."""

_validate_message_json: Callable[[bytes | str], AgentMessage] | None = None
"""``MESSAGE_ADAPTER``'s core ``validate_json`` (:func:`~sessiontree._model.json_validator`),
built on the first message appended."""


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
    if exact_json.may_be_non_finite(data):
        return None  # maybe a non-finite number: the slow path refuses it, or keeps the text
    global _validate_message_json
    validate = _validate_message_json
    if validate is None:
        validate = _validate_message_json = json_validator(MESSAGE_ADAPTER)
    try:
        msg = validate(data)
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
    return message


def check_entry_ids(entry: Entry, *, session_id: str | None = None) -> None:
    """Refuse an entry whose id, or an id it refers to (``parentId``, ``targetId``,
    ``fromId``, ``firstKeptEntryId``), no backend can hold: one holding a NUL or a lone
    surrogate. Every backend refuses it alike, before anything is read or written.

    Raises:
        InvalidEntryError: names the field and the id.
    """
    if isinstance(entry.id, str):  # not a str: the read-back names the fault
        check_id(entry.id, "id", entry.id, session_id)
    # what getattr finds, without its slow miss: a declared field is in __dict__, anything
    # else is an extra key (pydantic's __getattr__ looks nowhere else for a public name)
    values = entry.__dict__
    extra = entry.__pydantic_extra__ or {}
    for what, field in _ID_FIELDS:
        value = values[field] if field in values else extra.get(field)
        if isinstance(value, str):
            check_id(value, what, entry.id, session_id)


_ID_FIELDS = (
    ("parentId", "parent_id"),
    ("targetId", "target_id"),
    ("fromId", "from_id"),
    ("firstKeptEntryId", "first_kept_entry_id"),
)

_PARENT_KEY = b',"parentId":'


def reparent(entry: Entry, body: bytes, parent_id: str | None) -> tuple[Entry, bytes]:
    """``entry`` under another parent, with its stored JSON, without serialising it again.

    ``body`` is the entry's JSON (:func:`dump_entry_json`). The dump writes ``type``, ``id``
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
