"""The one pydantic configuration every wire model shares (camelCase on the wire, extras kept)."""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["WireModel"]


class WireModel(BaseModel):
    """Base of entries, messages and blocks.

    * wire JSON keys are camelCase (``parentId``); Python attributes snake_case; both spellings
      are accepted on input (SPEC §1);
    * unknown keys are kept (``model_extra``) and written back unchanged;
    * instances are immutable: use ``model_copy(update=...)`` to derive a changed one;
    * the fields named in ``_always_dumped`` (type tags, ids) are written even when they took
      their default: they are marked as set when a model is built in Python (``TextContent(
      text=...)``) or by ``model_validate*``. Inside a union (``ContentBlock``, ``AgentMessage``)
      the tag is always present in the input, so the hot validation path calls no Python code
      per model (a per-model validator cost ~0.4 µs each, a quarter of parsing an entry).
    """

    model_config = ConfigDict(
        extra="allow",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        frozen=True,
        ser_json_inf_nan="constants",
    )

    _always_dumped: ClassVar[frozenset[str]] = frozenset()
    """Fields written even when they took their default (discriminators, ids)."""

    def __init__(self, /, **data: Any) -> None:
        super().__init__(**data)
        if self._always_dumped:
            self.__pydantic_fields_set__.update(self._always_dumped)

    # Tell pydantic this is its own __init__ (as RootModel does): validation through a
    # TypeAdapter or a parent model then builds instances without calling Python, and only a
    # call of the class itself runs the marking above.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        """:meth:`pydantic.BaseModel.model_validate`, with ``_always_dumped`` marked as set."""
        return super().model_validate(obj, **kwargs)._mark()

    @classmethod
    def model_validate_json(cls, json_data: Any, **kwargs: Any) -> Self:
        """:meth:`pydantic.BaseModel.model_validate_json`, with ``_always_dumped`` marked as set."""
        return super().model_validate_json(json_data, **kwargs)._mark()

    @classmethod
    def model_validate_strings(cls, obj: Any, **kwargs: Any) -> Self:
        """:meth:`pydantic.BaseModel.model_validate_strings`, with ``_always_dumped`` marked."""
        return super().model_validate_strings(obj, **kwargs)._mark()

    def _mark(self) -> Self:
        if self._always_dumped:
            self.__pydantic_fields_set__.update(self._always_dumped)
        return self

    def to_wire(self) -> dict[str, Any]:
        """The camelCase dict of this object: only keys that were set, plus unknown ones."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)
