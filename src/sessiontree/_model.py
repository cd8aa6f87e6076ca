"""The one pydantic configuration every wire model shares (camelCase on the wire, extras kept)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, model_validator
from pydantic.alias_generators import to_camel

__all__ = [
    "DEFER_BUILD",
    "EMPTY_EXTRA",
    "SharedFieldsSet",
    "WireModel",
    "json_validator",
    "shared_fields_set",
]

_T = TypeVar("_T")

DEFER_BUILD = ConfigDict(defer_build=True)
"""TypeAdapter config: build the validator on first use, not at import (``import sessiontree``
stays cheap; the first validation pays ~the same once)."""


class SharedFieldsSet(set[str]):
    """The fields set of validated models that share it (see ``WireModel._mark_always_dumped``):
    read-only, so no model's set can change another's. A copy (``copy.copy``, as
    ``model_copy`` makes, ``copy.deepcopy``, pickling) is a plain ``set`` of the model's own.

    Raises (every method that would change it): TypeError.
    """

    __slots__ = ()

    def _refuse(self, *_args: Any, **_kwargs: Any) -> Any:
        raise TypeError(
            "a validated model's fields set is shared with the models that set the same "
            "fields; derive a model with model_copy(update=...) instead of changing it"
        )

    add = discard = remove = pop = clear = _refuse
    update = difference_update = intersection_update = symmetric_difference_update = _refuse
    __ior__ = __iand__ = __isub__ = __ixor__ = _refuse

    def __copy__(self) -> set[str]:
        return set(self)

    def __deepcopy__(self, memo: Any) -> set[str]:
        return set(self)

    def __reduce__(self) -> Any:
        return (set, (list(self),))


class _SharedEmptyExtra(dict[str, Any]):
    """The unknown keys (``model_extra``) of every validated model of this library's frozen
    classes that has none: one empty read-only dict instead of an empty dict each (64 bytes,
    four or so per parsed entry: about a tenth of what a parsed entry takes beyond its text).
    Like :class:`SharedFieldsSet`, a copy (``copy.copy``, as ``model_copy`` makes,
    ``copy.deepcopy``, pickling) is a plain ``dict`` of the model's own; ``WireModel`` makes
    deep copies and pickles give each model a dict of its own, not one per copy operation
    (both memoise the object they copy).

    Raises (every method that would change it): TypeError.
    """

    __slots__ = ()

    def __init__(self) -> None:  # empty, and no later __init__ call can fill it
        super().__init__()

    def _refuse(self, *_args: Any, **_kwargs: Any) -> Any:
        raise TypeError(
            "a validated model's unknown keys are read-only; derive a model with "
            "model_copy(update=...) instead of changing them"
        )

    __setitem__ = __delitem__ = setdefault = pop = popitem = clear = update = _refuse
    __ior__ = _refuse

    def __copy__(self) -> dict[str, Any]:
        return {}

    def __deepcopy__(self, memo: Any) -> dict[str, Any]:
        return {}

    def __reduce__(self) -> Any:
        return (dict, ())


EMPTY_EXTRA: dict[str, Any] = _SharedEmptyExtra()
"""The one read-only empty ``__pydantic_extra__`` validated models of frozen classes share
(see ``WireModel._mark_always_dumped``)."""

_EXTRA_SHARERS: set[type] = set()
"""The classes whose models take :data:`EMPTY_EXTRA`: this library's own frozen classes. A
user's subclass keeps a dict per model, so its own validators may add unknown keys."""

_shared_fields_sets: dict[frozenset[str], SharedFieldsSet] = {}
"""The fields set validated models share, by its names (see ``WireModel._mark_always_dumped``)."""
_MAX_SHARED_FIELDS_SETS = 1024
"""Distinct sets shared at most (~1.5 KB each with its key); a model whose names are not
among them once this many are keeps a set of its own."""
_last_shared: dict[type, tuple[frozenset[str], SharedFieldsSet, bool]] = {}
"""What each class shared last, tried first (one comparison): the fields set as validation
left it (before the always-dumped names are added), the shared set it became, and whether
the class shares the empty extras."""
_set_attribute = object.__setattr__
"""How the validator below gives a model its shared fields set and extras: what pydantic's
own ``model_construct`` does for the documented ``__pydantic_fields_set__`` and
``__pydantic_extra__`` (a frozen model refuses ``setattr``)."""


def shared_fields_set(names: Iterable[str]) -> set[str]:
    """The read-only fields set (:class:`SharedFieldsSet`) that validated models setting
    exactly ``names`` share, for a model built without validating it
    (``Model.model_construct(shared_fields_set(...), ...)``); a plain set of its own once
    :data:`_MAX_SHARED_FIELDS_SETS` distinct sets are shared.
    """
    key = frozenset(names)
    shared = _shared_fields_sets.get(key)
    if shared is None:
        if len(_shared_fields_sets) >= _MAX_SHARED_FIELDS_SETS:
            return set(key)
        shared = _shared_fields_sets.setdefault(key, SharedFieldsSet(key))
    return shared


def json_validator(adapter: TypeAdapter[_T]) -> Callable[[bytes | str], _T]:
    """``adapter.validate_json`` as pydantic-core's own method, built now if deferred: the same
    validation with the same defaults, without ``TypeAdapter``'s Python wrapper (~0.2 µs a
    call, on every entry read and every message appended).

    Raises (the returned function):
        pydantic.ValidationError: as ``adapter.validate_json``.
    """
    validate: Callable[[bytes | str], _T] = adapter.validator.validate_json
    return validate


class WireModel(BaseModel):
    """Base of entries, messages and blocks.

    * wire JSON keys are camelCase (``parentId``); Python attributes snake_case; both spellings
      are accepted on input (docs/entries.md);
    * unknown keys are kept (``model_extra``) and written back unchanged;
    * validators and serialisers are built on first use (``defer_build``), not at import;
    * instances are immutable: use ``model_copy(update=...)`` to derive a changed one;
    * the fields named in ``_always_dumped`` (type tags, ids) are written even when they took
      their default, however the model was built (a call of the class, a union, a
      ``TypeAdapter`` of the class, a field of the caller's own model). An after-validator
      does it: ~0.3 µs per model, ~4% of parsing an entry — a Python ``__init__`` marking
      only calls of the class missed the other paths and wrote messages without ``role``.
    """

    model_config = ConfigDict(
        extra="allow",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        frozen=True,
        ser_json_inf_nan="constants",
        defer_build=True,
    )

    _always_dumped: ClassVar[frozenset[str]] = frozenset()
    """Fields written even when they took their default (discriminators, ids)."""

    @model_validator(mode="after")
    def _mark_always_dumped(self) -> Any:
        """Mark the fields written even when defaulted, and share the fields set and, when
        there are no unknown keys, the empty extras (:data:`EMPTY_EXTRA`).

        Sharing: a set of two names takes 216 bytes, of five or more 728; the sets of a
        parsed entry's models take about a third of what it takes beyond its text, and a
        session's models repeat a handful of key sets, so the model takes the shared equal
        set (up to :data:`_MAX_SHARED_FIELDS_SETS` distinct ones). The set a class last shared
        is tried first (one set comparison, no ``frozenset``): most models of a class have the
        same keys. Sharing is safe because a shared set is a :class:`SharedFieldsSet`, which
        refuses changes, and only frozen classes share (pydantic adds to the set on attribute
        assignment, which frozen models refuse); ``model_copy`` gives the copy a plain set of
        its own before it adds the updated keys. A model validated again (an instance given
        where its class is expected) keeps its shared set. Inline, one call per model: this
        runs for every model of every entry read.
        """
        fields_set = self.__pydantic_fields_set__
        if type(fields_set) is SharedFieldsSet:
            return self  # marked and shared when it was first validated
        cls = type(self)
        last = _last_shared.get(cls)
        if last is not None and last[0] == fields_set:
            # the keys the class's last shared model had: the set that became, as it is
            _set_attribute(self, "__pydantic_fields_set__", last[1])
            shares_extra = last[2]
        else:
            given = frozenset(fields_set)
            fields_set.update(self._always_dumped)
            if not cls.model_config.get("frozen"):
                return self  # a subclass that allows assignment adds to its own set and extras
            if cls.__module__.startswith("sessiontree."):
                _EXTRA_SHARERS.add(cls)
            shares_extra = cls in _EXTRA_SHARERS
            key = frozenset(fields_set)
            shared = _shared_fields_sets.get(key)
            if shared is None and len(_shared_fields_sets) < _MAX_SHARED_FIELDS_SETS:
                shared = _shared_fields_sets.setdefault(key, SharedFieldsSet(fields_set))
            if shared is not None:  # (None: beyond the bound, the model keeps its own set)
                _set_attribute(self, "__pydantic_fields_set__", shared)
                _last_shared[cls] = (given, shared, shares_extra)
        if shares_extra:
            extra = self.__pydantic_extra__
            if extra is not None and not extra:  # (None: a class ignoring unknown keys)
                _set_attribute(self, "__pydantic_extra__", EMPTY_EXTRA)
        return self

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        """pydantic's deep copy, with unknown keys of the copy's own: a deep copy memoises the
        copy of :data:`EMPTY_EXTRA`, which would give every model it copies the same dict."""
        copied = super().__deepcopy__(memo)
        if self.__pydantic_extra__ is EMPTY_EXTRA:
            _set_attribute(copied, "__pydantic_extra__", {})
        return copied

    def __getstate__(self) -> dict[Any, Any]:
        """pydantic's pickle state, with a fields set and unknown keys of the model's own:
        pickling memoises each object it writes, so the one shared set or empty dict would
        come back as one plain set or dict for every model unpickled with it."""
        state = super().__getstate__()
        if state["__pydantic_extra__"] is EMPTY_EXTRA:
            state["__pydantic_extra__"] = {}
        if type(state["__pydantic_fields_set__"]) is SharedFieldsSet:
            state["__pydantic_fields_set__"] = set(state["__pydantic_fields_set__"])
        return state

    def to_wire(self) -> dict[str, Any]:
        """The camelCase dict of this object: only keys that were set, plus unknown ones.

        At any depth of nesting: past the serialiser's limit (~255 levels) the values come
        as Python data, which for a model read from JSON is the same JSON data.
        """
        try:
            return self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        except ValueError as exc:
            if "depth" not in str(exc):
                raise
            return self.model_dump(mode="python", by_alias=True, exclude_unset=True)
