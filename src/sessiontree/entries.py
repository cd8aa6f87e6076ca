"""Session entries: the typed nodes of the append-only tree (docs/entries.md).

Every entry has ``type`` (the discriminator), ``id``, ``parent_id`` (``None`` for a root) and
``timestamp`` (ISO 8601 UTC with milliseconds). :data:`ENTRY_ADAPTER` is the only way in and
out: :func:`parse_entry` validates a camelCase (or snake_case) dict, :func:`dump_entry` writes
the camelCase dict back with unknown keys unchanged. An entry whose ``type`` is unknown parses
as :class:`OpaqueEntry` (so a newer writer's file still opens) but is refused by
``append_entry``. What a store writes for an entry (validated once, put under the leaf) is
:mod:`sessiontree.stored`.

Entries are of two kinds (docs/tree.md): **path entries** (every type but three) and
**bookkeeping entries** (``label``, ``session_info``, ``leaf``) that never move the leaf.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal, TypeVar

import orjson
from pydantic import AfterValidator, Field, TypeAdapter, ValidationError

from sessiontree import _json as exact_json
from sessiontree._model import DEFER_BUILD, WireModel, json_validator
from sessiontree.errors import InvalidEntryError
from sessiontree.ids import new_id, now_iso
from sessiontree.messages import (
    AgentMessage,
    ContentBlock,
    Usage,
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
    "is_path_entry",
    "parse_entry",
    "parse_entry_json",
    "with_parent",
    "validate_entry_json",
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
    """Always ``"message"``."""
    message: AgentMessage
    """The message, any :data:`AgentMessage` (an unknown role is kept as :class:`OpaqueMessage`)."""


class ModelChangeEntry(_EntryBase):
    """The user switched model; feeds derived state, never the context."""

    type: Literal["model_change"] = "model_change"
    """Always ``"model_change"``."""
    provider: str
    """The provider of the model switched to (e.g. ``anthropic``)."""
    model_id: str
    """The model switched to, as its provider names it (``modelId`` on the wire)."""


class ThinkingLevelChangeEntry(_EntryBase):
    """The thinking level changed; feeds derived state."""

    type: Literal["thinking_level_change"] = "thinking_level_change"
    """Always ``"thinking_level_change"``."""
    thinking_level: ThinkingLevel
    """The reasoning effort asked of the model from here on."""


class ActiveToolsChangeEntry(_EntryBase):
    """The set of tools offered to the model changed; feeds derived state."""

    type: Literal["active_tools_change"] = "active_tools_change"
    """Always ``"active_tools_change"``."""
    active_tool_names: list[str]
    """The names of the tools offered to the model from here on (``[]``: none)."""


class CompactionDetails(WireModel):
    """Files the summarised part touched (cumulative, sorted) and any further keys."""

    read_files: list[str] = Field(default_factory=list)
    """Paths the summarised messages read, cumulative over earlier compactions, sorted."""
    modified_files: list[str] = Field(default_factory=list)
    """Paths the summarised messages wrote or edited, cumulative, sorted."""


class CompactionEntry(_EntryBase):
    """A summary that replaces older context (docs/compaction.md).

    ``first_kept_entry_id`` (pointer mode) names the first entry kept after the summary;
    ``retained_tail`` (retained-tail mode, even ``[]``) holds the kept messages themselves.
    ``tokens_before`` is the context size in tokens before compaction.
    """

    type: Literal["compaction"] = "compaction"
    """Always ``"compaction"``."""
    summary: str
    """The summary that stands for the compacted messages in the context."""
    tokens_before: int = 0
    """The context's size in tokens just before this compaction; ``0`` when unknown."""
    first_kept_entry_id: str | None = None
    """Pointer mode: the first entry on the path kept after the summary; ``None`` in retained-tail
    mode or when nothing before the compaction is kept."""
    details: CompactionDetails | None = None
    """The files the summarised part read and modified; ``None`` when not recorded."""
    usage: Usage | None = None
    """Tokens and cost of the summarising model call; ``None`` for a summary made without a model
    call."""
    retained_tail: list[AgentMessage] | None = None
    """Retained-tail mode: the kept messages themselves, in order (``[]`` keeps none); ``None`` in
    pointer mode."""
    from_hook: bool | None = None
    """``True`` when an extension wrote the summary rather than the built-in compaction; ``None``
    when not said."""


class BranchSummaryEntry(_EntryBase):
    """The summary of a branch that was left; ``from_id`` is the old leaf (docs/branching.md).

    ``from_id`` is ``None`` (``"fromId": null``) when the branch that was left is not in this
    session: a fork copies the path to its target, not the abandoned branch a summary on that
    path names. The same entry (same id) in the parent session (``parentSessionId``) still
    holds the original ``fromId``.
    """

    type: Literal["branch_summary"] = "branch_summary"
    """Always ``"branch_summary"``."""
    summary: str
    """The summary of the branch that was left; an empty one is not sent to the model."""
    from_id: str | None
    """The leaf of the branch that was left; ``None`` when that branch is not in this session (see
    above)."""
    details: Any = None
    """The writer's own data about the summary (any JSON); ``None`` for none."""
    usage: Usage | None = None
    """Tokens and cost of the summarising model call; ``None`` when no model was called."""
    from_hook: bool | None = None
    """``True`` when an extension wrote the summary; ``None`` when not said."""


class CustomEntry(_EntryBase):
    """Extension data; enters the context only through an ``entry_projectors`` function."""

    type: Literal["custom"] = "custom"
    """Always ``"custom"``."""
    custom_type: str
    """The extension's name for this kind of data; selects its ``entry_projectors`` function."""
    data: Any = None
    """The extension's data (any JSON); ``None`` for none."""


class CustomMessageEntry(_EntryBase):
    """An extension's message, projected as a ``custom`` message."""

    type: Literal["custom_message"] = "custom_message"
    """Always ``"custom_message"``."""
    custom_type: str
    """The extension's name for this kind of message."""
    content: str | list[ContentBlock]
    """What the model is sent: a string, or text and image blocks."""
    display: bool = True
    """Whether UIs show the message to the user (it is sent to the model either way)."""
    details: Any = None
    """The extension's own data (any JSON), never sent to the model; ``None`` for none."""


class LabelEntry(_EntryBase):
    """Sets (or, with ``None``/empty, clears) the label of ``target_id``. Bookkeeping.

    ``target_id`` is ``None`` (``"targetId": null``) in a fork for a label entry the copied
    path runs through (files of other tools chain entries under labels) whose target was not
    copied: it labels nothing. The fork's labels are those its copied entries had.
    """

    type: Literal["label"] = "label"
    """Always ``"label"``."""
    target_id: str | None
    """The entry labelled; ``None`` in a fork when the target was not copied (see above)."""
    label: str | None = None
    """The label; ``None`` or ``""`` clears the target's label."""


class LeafEntry(_EntryBase):
    """Moves the leaf to ``target_id`` (``None``: the next append starts a new root). Bookkeeping."""

    type: Literal["leaf"] = "leaf"
    """Always ``"leaf"``."""
    target_id: str | None = None
    """The path entry that becomes the leaf; ``None``: the next append starts a new root."""


class SessionInfoEntry(_EntryBase):
    """Names the session. Bookkeeping."""

    type: Literal["session_info"] = "session_info"
    """Always ``"session_info"``."""
    name: str
    """The session's name from here on (the newest ``session_info`` entry wins)."""


class OpaqueEntry(_EntryBase):
    """An entry of a ``type`` this library does not know: kept whole, skipped by context building."""

    type: str
    """The unknown entry type; every other key is kept in ``model_extra``."""


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


_validate_entry_json: Callable[[bytes | str], Entry] | None = None
"""``ENTRY_ADAPTER``'s core ``validate_json`` (:func:`~sessiontree._model.json_validator`),
built on the first entry read."""


def validate_entry_json(data: bytes | str) -> Entry:
    """:data:`ENTRY_ADAPTER` over JSON text, at any depth the JSON reader goes.

    pydantic-core's own JSON parser stops at about 200 levels of nesting; a deeper document
    (a tool's ``details`` 200 levels down) is parsed by :func:`sessiontree._json.loads`
    (1024 levels) and validated as Python data, which has no such limit.

    Raises:
        ValidationError: not a valid entry (or not JSON).
    """
    global _validate_entry_json
    validate = _validate_entry_json
    if validate is None:
        validate = _validate_entry_json = json_validator(ENTRY_ADAPTER)
    try:
        return validate(data)
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
        return validate_entry_json(data)
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

    Every backend stores this form (through :func:`~sessiontree.stored.prepare_entry`), so it is also where data
    that JSON cannot carry is refused, before anything is written: non-finite numbers
    (``NaN``, ``Infinity``), strings with lone surrogates, ``bytes`` that are not UTF-8.

    Raises:
        InvalidEntryError: the entry holds a value that is not valid JSON (names the entry).
    """
    try:
        return exact_json.model_json(entry)
    except ValueError as exc:
        raise InvalidEntryError(f"entry {exc}", entry_id=entry.id) from exc


_E = TypeVar("_E", bound=_EntryBase)


def with_parent(entry: _E, parent_id: str | None) -> _E:
    """``entry`` under another parent: ``entry.model_copy(update={"parent_id": parent_id})``,
    ``parent_id`` among the fields set (it always is, see ``_EntryBase._always_dumped``).

    Nothing is validated: the parent is an entry id the caller checked (the store's leaf).
    """
    return entry.model_copy(update={"parent_id": parent_id})
