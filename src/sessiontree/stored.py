"""What a store writes for an entry to append: its JSON and the entry read back, each message
validated once (docs/storage.md).

:func:`stored_form` is the one way an entry gets into any backend: the backend checks, indexes
and keeps the entry read back from the JSON it writes, so the writing process sees what every
later reader sees. :func:`message_entry` builds the entry of a new message from the message
validated once from its JSON and marks it as checked, so :func:`stored_form` skips the
read-back for it; :func:`checked_under` and :func:`reparent` put an entry under the store's
leaf without serialising or validating it again.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_core import to_json

from sessiontree import _json as exact_json
from sessiontree._args import MAX_ENTRY_ID_CHARS
from sessiontree._model import (
    EMPTY_EXTRA,
    SharedFieldsSet,
    WireModel,
    json_validator,
    set_model_slots,
)
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
from sessiontree.ids import entry_id_problem, new_id, now_iso, now_ms
from sessiontree.messages import MESSAGE_ADAPTER, MESSAGE_ROLES, AgentMessage, parse_message

__all__ = [
    "check_entry_ids",
    "check_id",
    "checked_entry",
    "checked_under",
    "discard_checked",
    "message_entry",
    "reparent",
    "stored_form",
    "stored_form_under",
]


_checked: OrderedDict[int, tuple[Entry, bool]] = OrderedDict()
"""Entries :func:`message_entry` built from a message it validated from JSON, by ``id()``,
each with whether its caller keeps no other reference (``owned``): :func:`stored_form` takes
them as they are, without the read-back. The value holds the entry, so its ``id()`` cannot
be reused while it is here, and a hit must be the very object (``is``). Bounded: an entry
never handed to a store is forgotten after :data:`_CHECKED_MAX` newer ones."""
_M = TypeVar("_M", bound=WireModel)
_CHECKED_MAX = 256


def _remember_checked(entry: Entry, owned: bool) -> None:
    # No lock: each ``OrderedDict`` call is atomic, and threads racing past the bound at
    # once only forget one entry too many (which is then read back like any other).
    _checked[id(entry)] = (entry, owned)
    if len(_checked) > _CHECKED_MAX:
        with contextlib.suppress(KeyError):
            _checked.popitem(last=False)


def _take_checked(obj: Any) -> tuple[Entry, bool] | None:
    hit = _checked.pop(id(obj), None)
    return hit if hit is not None and hit[0] is obj else None


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


_MESSAGE_ENTRY_FIELDS = SharedFieldsSet({"type", "id", "parent_id", "timestamp", "message"})
"""The fields set of every entry :func:`_new_message_entry` builds (shared and read-only, as a
validated model's, see ``sessiontree._model``)."""


def _new_message_entry(msg: AgentMessage) -> MessageEntry:
    """``MessageEntry(id=new_id(), timestamp=now_iso(), message=msg)`` without validating the
    parts again: ``msg`` was just validated, the id is a new UUID v7, the time is formatted
    here. Equal to the validated construction, fields set included
    (``tests/test_entry_pipeline.py``); ~1 µs instead of ~10-20 (validating the message
    instance again runs its model validator)."""
    entry = object.__new__(MessageEntry)
    entry.__dict__.update(
        type="message", id=new_id(), parent_id=None, timestamp=now_iso(), message=msg
    )
    set_fields, set_extra, set_private = set_model_slots
    set_fields(entry, _MESSAGE_ENTRY_FIELDS)
    set_extra(entry, EMPTY_EXTRA)
    set_private(entry, None)
    return entry


def discard_checked(entry: Entry) -> None:
    """Forget an entry from :func:`message_entry` that will not be stored (an append refused
    before any store took it), so the registry does not keep it, and its message, alive."""
    _take_checked(entry)


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
    return _under(hit if hit is not None else (stored_form(obj)[0], False), parent_id)


def _under(hit: tuple[Entry, bool], parent_id: str | None) -> Entry:
    """The entry of ``hit`` (an entry and whether it is owned: a registry hit, or an entry just
    read back, which is not) under ``parent_id``: an owned entry without a parent gets it in
    place (nobody else holds it), any other a copy when its parent differs."""
    entry, owned = hit
    if owned and entry.parent_id is None:
        entry.__dict__["parent_id"] = parent_id
        return entry
    return entry if entry.parent_id == parent_id else with_parent(entry, parent_id)


def stored_form_under(obj: Any, parent_id: str | None) -> tuple[Entry, bytes]:
    """:func:`stored_form` of ``obj`` under the parent ``parent_id``: equal, byte for byte, to
    ``reparent(*stored_form(obj), parent_id)`` when the parents differ. An entry from
    :func:`message_entry` is put under the parent before it is serialised (:func:`checked_under`'s
    rule), so it is written once and never patched.

    Raises:
        InvalidEntryError: as :func:`stored_form`.
    """
    hit = _take_checked(obj)
    if hit is not None:
        entry = _under(hit, parent_id)
        return entry, dump_entry_json(entry)
    entry, data = stored_form(obj)
    return (entry, data) if entry.parent_id == parent_id else reparent(entry, data, parent_id)


def check_id(value: str, what: str, entry_id: str, session_id: str | None = None) -> None:
    """Refuse ``value`` (the entry's ``id``, or the id its field ``what`` refers to) when
    :func:`~sessiontree.ids.entry_id_problem` does.

    Raises:
        InvalidEntryError: names the field and the id.
    """
    problem = entry_id_problem(value)
    if problem is not None:
        raise InvalidEntryError(
            f"{what} {value!r} cannot be an entry id: it {problem}",
            session_id=session_id,
            entry_id=None if what == "id" else entry_id,
        )


def check_entry_ids(entry: Entry, *, session_id: str | None = None) -> None:
    """Refuse an entry whose id, or an id it refers to (``parentId``, ``targetId``,
    ``fromId``, ``firstKeptEntryId``), no backend can hold: one holding a NUL or a lone
    surrogate. Every backend refuses it alike, before anything is read or written.

    Raises:
        InvalidEntryError: names the field and the id.
    """
    if isinstance(entry.id, str):  # not a str: the read-back names the fault
        check_id(entry.id, "id", entry.id, session_id)
    for what, field in _ID_FIELDS:
        value = getattr(entry, field, None)
        if isinstance(value, str):
            check_id(value, what, entry.id, session_id)


_ID_FIELDS = (
    ("parentId", "parent_id"),
    ("targetId", "target_id"),
    ("fromId", "from_id"),
    ("firstKeptEntryId", "first_kept_entry_id"),
)


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
            :data:`~sessiontree._args.MAX_ENTRY_ID_CHARS`, an id or reference holding a NUL
            or a lone surrogate (:func:`check_entry_ids`), a timestamp holding a NUL, a value
            JSON cannot carry, or JSON
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
    check_entry_ids(entry)
    stamp = entry.timestamp  # a column on SQL, where PostgreSQL refuses a NUL: refused alike
    if isinstance(stamp, str) and "\x00" in stamp:
        raise InvalidEntryError(
            f"timestamp {entry.timestamp!r} holds a NUL character", entry_id=entry.id
        )
    data = dump_entry_json(entry)
    try:
        return validate_entry_json(data), data
    except ValidationError as exc:
        raise InvalidEntryError(
            f"entry would not read back: {validation_problem(exc)}", entry_id=entry.id
        ) from exc
    except ValueError as exc:  # e.g. nested deeper than the JSON reader goes
        raise InvalidEntryError(f"entry would not read back: {exc}", entry_id=entry.id) from exc


_PARENT_KEY = b',"parentId":'


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
