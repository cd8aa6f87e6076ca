"""The one pydantic configuration every wire model shares (camelCase on the wire, extras kept)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.alias_generators import to_camel

__all__ = ["DEFER_BUILD", "WireModel"]

DEFER_BUILD = ConfigDict(defer_build=True)
"""TypeAdapter config: build the validator on first use, not at import (``import sessiontree``
stays cheap; the first validation pays ~the same once)."""


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
        if self._always_dumped:
            self.__pydantic_fields_set__.update(self._always_dumped)
        return self

    def to_wire(self) -> dict[str, Any]:
        """The camelCase dict of this object: only keys that were set, plus unknown ones."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)
