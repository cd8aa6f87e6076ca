"""Validated models share one fields set per distinct key set and one empty extras dict, and no
sharer sees another change."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from pydantic import ConfigDict, model_validator

from sessiontree import _model
from sessiontree.entries import ENTRY_ADAPTER, dump_entry
from sessiontree.messages import MESSAGE_ADAPTER, TextContent, UserMessage


def entry(i: int, **extra: Any) -> Any:
    return ENTRY_ADAPTER.validate_python(
        {
            "type": "message",
            "id": f"e{i}",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": f"t{i}"}],
                "usage": {
                    "input": i,
                    "output": 1,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 1,
                },
                "model": "m",
                "stopReason": "stop",
                **extra,
            },
        }
    )


def test_models_with_the_same_keys_share_one_fields_set() -> None:
    a, b = entry(1), entry(2)
    assert a.__pydantic_fields_set__ is b.__pydantic_fields_set__
    assert a.message.__pydantic_fields_set__ is b.message.__pydantic_fields_set__
    assert a.message.usage.__pydantic_fields_set__ is b.message.usage.__pydantic_fields_set__
    # small sets too: a text block's two names take 216 bytes, per block
    assert a.message.content[0].model_fields_set == {"type", "text"}
    assert (
        a.message.content[0].__pydantic_fields_set__ is b.message.content[0].__pydantic_fields_set__
    )
    c = entry(3, timestamp=5)
    assert c.message.__pydantic_fields_set__ is not a.message.__pydantic_fields_set__
    assert c.message.model_fields_set == {
        "role",
        "content",
        "usage",
        "model",
        "stop_reason",
        "timestamp",
    }


def test_a_shared_set_refuses_changes_so_no_model_changes_another() -> None:
    a, b = entry(1), entry(2)
    for change in (
        lambda s: s.add("timestamp"),
        lambda s: s.update({"timestamp"}),
        lambda s: s.discard("role"),
        lambda s: s.clear(),
    ):
        with pytest.raises(TypeError, match="model_copy"):
            change(a.message.model_fields_set)
    assert "timestamp" not in b.message.model_fields_set
    assert "timestamp" not in dump_entry(b)["message"]
    assert a.message.model_fields_set == b.message.model_fields_set


def test_copies_pickles_and_unfrozen_subclasses_get_sets_of_their_own() -> None:
    a, b = entry(1), entry(2)
    for other in (copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert other == a and type(other.model_fields_set) is set
        other.model_fields_set.add("name")  # its own: a and b are untouched
    assert "name" not in a.model_fields_set | b.model_fields_set

    class Mutable(UserMessage):
        model_config = ConfigDict(frozen=False)  # merged with the inherited configuration

    first, second = Mutable(content="1"), Mutable(content="2")
    first.timestamp = 5
    assert first.to_wire() == {"role": "user", "content": "1", "timestamp": 5}
    assert second.to_wire() == {"role": "user", "content": "2"}


def test_a_copy_with_updates_leaves_the_shared_set_alone() -> None:
    a, b = entry(1), entry(2)
    shared = set(a.model_fields_set)
    moved = a.model_copy(update={"parent_id": "p"})
    moved.__pydantic_fields_set__.add("parent_id")
    assert a.model_fields_set == shared == b.model_fields_set
    msg = a.message.model_copy(update={"timestamp": 9})
    msg.__pydantic_fields_set__.add("timestamp")
    assert "timestamp" not in b.message.model_fields_set
    assert "timestamp" in msg.model_fields_set
    assert "timestamp" not in dump_entry(b)["message"]


def test_models_refuse_assignment_so_no_sharer_changes_the_set() -> None:
    a = entry(1)
    with pytest.raises(ValueError):
        a.message.content[0].text = "changed"
    assert a.message.content[0].model_fields_set == {"type", "text"}


def test_direct_construction_marks_and_shares_too() -> None:
    x = UserMessage(content="a", timestamp=1, note=1, more=1)
    y = UserMessage(content="b", timestamp=2, note=2, more=2)
    assert x.model_fields_set == {"role", "content", "timestamp", "note", "more"}
    assert x.__pydantic_fields_set__ is y.__pydantic_fields_set__
    assert TextContent(text="a").model_fields_set == {"type", "text"}
    m = MESSAGE_ADAPTER.validate_python({"role": "user", "content": "hi"})
    assert isinstance(m, UserMessage) and m.to_wire() == {"role": "user", "content": "hi"}


def test_beyond_the_bound_a_model_keeps_a_set_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_model, "_shared_fields_sets", {})
    monkeypatch.setattr(_model, "_MAX_SHARED_FIELDS_SETS", 3)
    first = [entry(i, **{f"k{i}": i}) for i in range(4)]
    again = [entry(i, **{f"k{i}": i}) for i in range(4)]
    assert len(_model._shared_fields_sets) == 3
    for a, b in zip(first, again, strict=True):
        assert a.message.model_fields_set == b.message.model_fields_set
    assert first[0].message.__pydantic_fields_set__ is again[0].message.__pydantic_fields_set__
    assert first[3].message.__pydantic_fields_set__ is not again[3].message.__pydantic_fields_set__


def test_a_class_alternating_between_key_sets_shares_each() -> None:
    plain = [entry(i) for i in range(3)]
    stamped = [entry(i, timestamp=i) for i in range(3)]
    mixed = [entry(i, timestamp=i) if i % 2 else entry(i) for i in range(6)]
    for m in mixed:
        like = stamped[0] if "timestamp" in m.message.model_fields_set else plain[0]
        assert m.message.__pydantic_fields_set__ is like.message.__pydantic_fields_set__
    assert plain[1].message.model_fields_set != stamped[1].message.model_fields_set


def test_models_without_unknown_keys_share_one_read_only_empty_extras() -> None:
    a, b = entry(1), entry(2)
    for x, y in (
        (a, b),
        (a.message, b.message),
        (a.message.usage, b.message.usage),
        (a.message.content[0], b.message.content[0]),
    ):
        assert x.__pydantic_extra__ is y.__pydantic_extra__ is _model.EMPTY_EXTRA
        assert x.model_extra == {}
    for change in (
        lambda d: d.__setitem__("k", 1),
        lambda d: d.update(k=1),
        lambda d: d.setdefault("k", 1),
        lambda d: d.__ior__({"k": 1}),
        lambda d: d.pop("k", None),
        lambda d: d.__delitem__("k"),
    ):
        with pytest.raises(TypeError, match="model_copy"):
            change(a.model_extra)
    with pytest.raises(TypeError):
        a.model_extra.__init__({"k": 1})
    assert _model.EMPTY_EXTRA == {} and dump_entry(b) == dump_entry(entry(2))
    # a model with unknown keys keeps a dict of its own
    c = entry(3, note="kept")
    assert c.message.model_extra == {"note": "kept"}
    assert c.message.__pydantic_extra__ is not _model.EMPTY_EXTRA
    assert dump_entry(c)["message"]["note"] == "kept"


def test_copies_of_shared_empty_extras_are_plain_dicts_of_their_own() -> None:
    a = entry(1)
    for other in (copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert other == a and type(other.model_extra) is dict
        other.model_extra["k"] = 1  # its own: the shared one stays empty
    moved = a.message.model_copy(update={"note": 1})  # an unknown key goes into extras
    assert moved.model_extra == {"note": 1} and moved.to_wire()["note"] == 1
    assert _model.EMPTY_EXTRA == {} and a.message.model_extra == {}

    class Mutable(UserMessage):
        model_config = ConfigDict(frozen=False)

    m = Mutable(content="1")
    assert m.__pydantic_extra__ is not _model.EMPTY_EXTRA
    m.note = 1  # type: ignore[attr-defined]
    assert m.to_wire() == {"role": "user", "content": "1", "note": 1}
    assert Mutable(content="2").to_wire() == {"role": "user", "content": "2"}


def test_deep_copies_and_pickles_give_every_model_extras_of_its_own() -> None:
    a, b = entry(1), entry(2)
    copies = [
        copy.deepcopy(a),
        a.model_copy(deep=True),
        *pickle.loads(pickle.dumps([a, b])),
    ]
    for c in copies:
        models = [c, c.message, c.message.content[0], c.message.usage]
        assert len({id(m.__pydantic_extra__) for m in models}) == len(models)
        c.model_extra["note"] = 1  # the entry's own: its message and blocks do not show it
        assert "note" not in c.message.to_wire() and "note" not in c.message.content[0].to_wire()
    first, second = copies[2:]
    assert first.model_extra is not second.model_extra
    assert first.model_fields_set is not second.model_fields_set
    first.model_fields_set.add("name")  # a plain set of its own
    assert "name" not in second.model_fields_set | a.model_fields_set
    assert "note" not in dump_entry(a) and "note" not in dump_entry(b)


def test_a_users_subclass_keeps_extras_its_own_validators_may_add_to() -> None:
    class Tagged(UserMessage):  # frozen, as its base
        @model_validator(mode="after")
        def _tag(self) -> Any:
            assert self.__pydantic_extra__ is not None
            self.__pydantic_extra__["source"] = "app"
            return self

    assert Tagged(content="x").to_wire() == {"role": "user", "content": "x", "source": "app"}
    assert Tagged(content="y", other=1).to_wire()["source"] == "app"
    assert UserMessage(content="z").model_extra == {}, "the base class is unchanged"
