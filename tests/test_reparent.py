"""Moving a stored entry under another parent patches its JSON to exactly what a dump writes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.entries import dump_entry_json, parse_entry, with_parent
from sessiontree.stored import prepare_entry, reparent

ids = st.one_of(
    # any text an entry id may be: every backend refuses a NUL (entry_id_problem)
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=12),
    st.sampled_from(['a","parentId":"b', ',"parentId":null', "\\", '"', "\u2028", "é"]),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["parentId", "x", ',"parentId":']), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def entries(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["message", "custom", "label", "opaque"]))
    obj: dict[str, Any] = {"id": draw(ids), "parentId": draw(st.none() | ids)}
    if kind == "message":
        obj.update(type="message", message={"role": "user", "content": draw(st.text(max_size=9))})
    elif kind == "custom":
        obj.update(type="custom", customType=draw(ids), data=draw(json_values))
    elif kind == "label":
        obj.update(type="label", targetId=draw(ids), label="x")
    else:
        obj.update(type=draw(st.sampled_from(["future_kind", 'x,"parentId":'])))
    if draw(st.booleans()):
        obj["extra"] = draw(json_values)
    return obj


@settings(max_examples=300, deadline=None)
@given(entries(), st.none() | ids)
def test_reparent_writes_what_a_fresh_dump_writes(obj: dict[str, Any], parent: str | None) -> None:
    prepared = prepare_entry(obj)
    entry, body = prepared.entry, prepared.body()
    moved, patched = reparent(entry, body, parent)
    assert moved == entry.model_copy(update={"parent_id": parent})
    assert moved.parent_id == parent
    assert patched == dump_entry_json(moved)
    assert parse_entry(moved).model_fields_set == entry.model_fields_set | {"parent_id"}


def test_reparent_does_not_serialise_a_stored_entry_again(monkeypatch: Any) -> None:
    import sessiontree.entries as entries_module

    prepared = prepare_entry({"type": "message", "message": {"role": "user", "content": "hi"}})
    entry, body = prepared.entry, prepared.body()

    def no_dump(_: Any) -> bytes:
        raise AssertionError("dumped again")

    monkeypatch.setattr(entries_module, "dump_entry_json", no_dump)
    moved, patched = reparent(entry, body, "p1")
    assert b'"parentId":"p1"' in patched and moved.parent_id == "p1"


@settings(max_examples=300, deadline=None)
@given(entries(), st.none() | ids)
def test_with_parent_is_a_model_copy_with_the_new_parent(
    obj: dict[str, Any], parent: str | None
) -> None:
    entry = prepare_entry(obj).entry
    moved = with_parent(entry, parent)
    copied = entry.model_copy(update={"parent_id": parent})
    assert type(moved) is type(entry)
    assert moved == copied and moved.parent_id == parent
    assert moved.model_fields_set == copied.model_fields_set
    assert moved.model_extra == copied.model_extra
    # unknown keys are the moved entry's own copy
    assert moved.model_extra is not entry.model_extra or entry.model_extra is None
    assert dump_entry_json(moved) == dump_entry_json(copied)
    assert entry.parent_id == obj["parentId"], "the original keeps its parent"
    # the moved entry is a model like any other: copies and dumps work on it
    again = moved.model_copy(update={"parent_id": "z"})
    assert again.parent_id == "z" and moved.parent_id == parent
