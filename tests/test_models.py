"""The wire models' tagged unions: string tags with an opaque fallback, and what is dumped.

The unions (Entry, AgentMessage, ContentBlock) pick a class by the plain ``type``/``role``
string inside pydantic-core and fall back to the opaque class only for an unknown tag; the
tag fields are written whether they were given or defaulted. These tests pin both halves: a
known tag with bad data is an error (never silently opaque), an unknown one is kept whole,
and every way of building a model dumps its tag.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_json

from sessiontree._model import WireModel
from sessiontree.entries import (
    ENTRY_ADAPTER,
    LabelEntry,
    MessageEntry,
    OpaqueEntry,
    dump_entry,
    dump_entry_json,
    parse_entry,
    parse_entry_json,
)
from sessiontree.errors import InvalidEntryError
from sessiontree.messages import (
    AssistantMessage,
    OpaqueBlock,
    OpaqueMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    parse_message,
)


def _all_subclasses(cls: type) -> list[type]:
    out: list[type] = []
    subclasses: list[type] = cls.__subclasses__()
    for sub in subclasses:
        out.append(sub)
        out.extend(_all_subclasses(sub))
    return out


class _AppTurn(BaseModel):
    """A caller's own model holding one of ours (a web request body, say)."""

    msg: UserMessage


def test_tags_are_dumped_on_validation_paths_outside_our_unions() -> None:
    # the tags are set however a message is validated (a TypeAdapter of its class, a field of
    # the caller's model), not only in __init__: a message stored without "role" would make
    # the session unreadable
    assert TypeAdapter(TextContent).validate_python({"text": "x"}).to_wire() == {
        "type": "text",
        "text": "x",
    }
    msg = _AppTurn.model_validate({"msg": {"content": "hello"}}).msg
    assert msg.to_wire() == {"role": "user", "content": "hello"}
    entry = MessageEntry(message=msg)
    assert parse_entry_json(dump_entry_json(entry)) == entry


@pytest.mark.parametrize(
    "model, tag",
    [
        (TextContent(text="x"), {"type": "text"}),
        (ToolCall(id="c1", name="bash"), {"type": "toolCall"}),
        (UserMessage(content="hi"), {"role": "user"}),
        (AssistantMessage(), {"role": "assistant"}),
        (ToolResultMessage(tool_call_id="c1"), {"role": "toolResult"}),
        (TextContent.model_validate({"text": "x"}), {"type": "text"}),
        (UserMessage.model_validate_json(b'{"content": "hi"}'), {"role": "user"}),
        (UserMessage.model_validate_strings({"content": "hi"}), {"role": "user"}),
    ],
)
def test_every_way_of_building_a_model_dumps_its_tag(model: WireModel, tag: dict[str, str]) -> None:
    wire = model.to_wire()
    assert wire.items() >= tag.items()


def test_entries_built_without_id_or_timestamp_dump_the_new_ones() -> None:
    for entry in (
        MessageEntry(message=UserMessage(content="hi")),
        parse_entry({"type": "message", "message": {"role": "user", "content": "hi"}}),
        LabelEntry.model_validate({"targetId": "x"}),
    ):
        wire = dump_entry(entry)
        assert {"type", "id", "parentId", "timestamp"} <= wire.keys()
        assert parse_entry_json(dump_entry_json(entry)) == entry


@pytest.mark.parametrize(
    "raw, path",
    [
        ({"type": "label", "id": "e1"}, "label.targetId"),
        ({"type": "message", "id": "e1"}, "message.message"),
        ({"type": "message", "id": "e1", "message": {"content": "x"}}, "message.message.role"),
        (
            {"type": "message", "id": "e1", "message": {"role": "user", "content": 5}},
            "user.content",
        ),
        (
            {
                "type": "message",
                "id": "e1",
                "message": {"role": "user", "content": [{"type": "text"}]},
            },
            "content",
        ),
        ({"id": "e1"}, "type"),
        ({"type": 5, "id": "e1"}, "type"),
    ],
)
def test_known_tag_with_bad_data_is_an_error_naming_the_field(raw: Any, path: str) -> None:
    for parse in (parse_entry, lambda r: parse_entry_json(orjson.dumps(r))):
        with pytest.raises(InvalidEntryError) as info:
            parse(raw)
        text = str(info.value)
        assert path in text and "'e1'" in text
        assert "tagged-union" not in text and "function-after" not in text


def test_text_block_without_text_is_not_silently_opaque() -> None:
    with pytest.raises(Exception, match="text"):
        parse_message({"role": "user", "content": [{"type": "text", "txt": "x"}]})
    with pytest.raises(Exception, match="toolCallId"):
        parse_message({"role": "toolResult", "content": []})


def test_unknown_tags_stay_opaque_at_every_level() -> None:
    raw = {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "audio", "data": "AAA", "x": [1]}]},
    }
    entry = parse_entry(raw)
    assert isinstance(entry, MessageEntry)
    assert isinstance(entry.message, UserMessage)
    assert isinstance(entry.message.content, list)
    (block,) = entry.message.content
    assert isinstance(block, OpaqueBlock) and block.model_extra == {"data": "AAA", "x": [1]}
    assert dump_entry(entry) == raw

    message = parse_message({"role": "observer", "note": "n"})
    assert isinstance(message, OpaqueMessage) and message.to_wire() == {
        "role": "observer",
        "note": "n",
    }

    other = {"type": "bookmark", "id": "e2", "parentId": "e1", "timestamp": "t", "at": 3}
    opaque = ENTRY_ADAPTER.validate_json(orjson.dumps(other))
    assert isinstance(opaque, OpaqueEntry) and dump_entry(opaque) == other


_text = st.text(max_size=20)
_blocks = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, _text),
        st.builds(
            lambda i, n, a: {"type": "toolCall", "id": i, "name": n, "arguments": a},
            _text,
            _text,
            st.dictionaries(_text, st.integers(), max_size=2),
        ),
        st.builds(lambda k, v: {"type": "x-" + k, "v": v}, _text, st.integers()),
    ),
    max_size=4,
)
_messages = st.one_of(
    st.builds(lambda c: {"role": "user", "content": c}, st.one_of(_text, _blocks)),
    st.builds(lambda c: {"role": "assistant", "content": c, "model": "m"}, _blocks),
    st.builds(
        lambda c, e: {"role": "toolResult", "toolCallId": "c", "content": c, "isError": e},
        _blocks,
        st.booleans(),
    ),
    st.builds(lambda k: {"role": "x-" + k, "payload": k}, _text),
)


@given(_messages, st.booleans())
def test_dict_and_json_parsing_agree_and_round_trip(message: dict[str, Any], as_json: bool) -> None:
    raw = {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": message,
    }
    entry = parse_entry_json(to_json(raw)) if as_json else parse_entry(raw)
    assert entry == parse_entry(raw)
    assert dump_entry(entry) == raw
    assert parse_entry_json(dump_entry_json(entry)) == entry


def test_content_of_neither_shape_names_both() -> None:
    # every branch of the content union is reported for ``content: 5``, not only ``str``'s
    with pytest.raises(InvalidEntryError) as info:
        parse_entry({"type": "message", "id": "e1", "message": {"role": "user", "content": 5}})
    assert "user.content: Input should be a valid string / Input should be a valid list" in str(
        info.value
    )


def test_a_users_subclass_in_a_union_field_is_written_whole() -> None:
    # the message and block unions write each value with its own class's serialiser, so the
    # fields a user's subclass adds are written (and read back as unknown keys), not dropped
    class ReviewedText(TextContent):
        reviewer: str = ""

    class ScoredAnswer(AssistantMessage):
        score: float = 0.0

    message = ScoredAnswer(content=[ReviewedText(text="ok", reviewer="ana")], score=0.5)
    entry = MessageEntry(id="e1", timestamp="2026-01-01T00:00:00.000Z", message=message)
    written = orjson.loads(dump_entry_json(entry))
    assert written["message"]["score"] == 0.5
    assert written["message"]["content"] == [{"type": "text", "text": "ok", "reviewer": "ana"}]
    back = parse_entry_json(dump_entry_json(entry))
    assert isinstance(back, MessageEntry) and type(back.message) is AssistantMessage
    assert back.message.model_extra == {"score": 0.5}
    assert back.message.content[0].model_extra == {"reviewer": "ana"}
    assert dump_entry_json(back) == dump_entry_json(entry)
