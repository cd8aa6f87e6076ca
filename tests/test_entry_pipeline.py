"""The append pipeline validates a message once: what it keeps equals what any reader gets back.

``prepare_message`` validates a message from its JSON and builds its entry, which no store
reads back. That is only sound if validating the dump of a message
validated from JSON gives an equal message (a fixed point) and if the result equals what the
full path (validate, dump, validate the dump) gives. Both are checked on every message of every
real session file and on generated messages, including Python-only values in the untyped
places (``details``, tool ``arguments``, unknown keys).

The JSONL store validates an entry line from its text; the lines of every real session file
and generated lines read alike from their text and from the dict parsed from it.
"""

from __future__ import annotations

import asyncio
import gc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from pydantic_core import to_json

from session_files import COLLECTION, format_of, session_file
from sessiontree import _json as exact_json
from sessiontree.backends.jsonl.repo import JSONLRepo
from sessiontree.backends.jsonl.storage import JSONLStorage
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.entries import ENTRY_ADAPTER, MessageEntry, dump_entry_json, validate_entry_json
from sessiontree.errors import InvalidEntryError, SessionTreeError
from sessiontree.ids import iso_from_ms
from sessiontree.interop import import_session
from sessiontree.messages import MESSAGE_ADAPTER, AssistantMessage, TextContent, parse_message
from sessiontree.repos import MemoryRepo
from sessiontree.repos.base import SessionRepo
from sessiontree.stored import (
    PreparedEntry,
    PreparedMessage,
    prepare_entry,
    prepare_message,
    reparent,
)


def full_path(message: Any, timestamp: Any = None) -> MessageEntry:
    """The entry the unoptimised path stores: validate, fill in a missing ``timestamp``,
    dump, validate the dump."""
    msg = parse_message(message)
    if "timestamp" in type(msg).model_fields and "timestamp" not in msg.model_fields_set:
        msg = msg.model_copy(update={"timestamp": timestamp})
    entry = prepare_entry(MessageEntry(message=msg)).entry
    assert isinstance(entry, MessageEntry)
    return entry


def assert_pipeline_equal(message: Any) -> None:
    prepared = prepare_message(message)
    stored: Any = prepared.entry
    body = prepared.body()
    reread = ENTRY_ADAPTER.validate_json(body)
    assert reread == stored, "a reader gets what the writer holds"
    assert reread.model_fields_set == stored.model_fields_set
    assert dump_entry_json(reread) == body, "the stored JSON is a fixed point"
    reference = full_path(message, getattr(stored.message, "timestamp", None))
    assert stored.message == reference.message


async def import_real_file(relative: str, repo: Any) -> Any:
    """The session a real session file of the collection becomes in ``repo``."""
    session, _ = await import_session(
        session_file(relative),
        repo,
        format=format_of(relative),
        lenient=True,
    )
    return session


def real_messages() -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []

    async def run(relative: str) -> None:
        session = await import_real_file(relative, MemoryRepo())
        for e in await session.storage.get_entries():
            if isinstance(e, MessageEntry):
                out.append((relative, e.message.to_wire()))

    for relative in COLLECTION:
        asyncio.run(run(relative))
    return out


@pytest.mark.parametrize("relative", COLLECTION)
def test_every_real_message_validated_once_equals_the_full_path(relative: str) -> None:
    messages = [m for r, m in real_messages_cache() if r == relative]
    assert messages, f"{relative} holds messages"
    for message in messages:
        assert_pipeline_equal(message)
        assert_pipeline_equal(MESSAGE_ADAPTER.validate_python(message))


def test_nearly_every_real_message_takes_the_validate_once_path() -> None:
    """Only a message whose JSON holds the text ``NaN``/``Infinity`` (maybe a non-finite
    number) or a value the serialiser cannot write goes the full way."""
    real = real_messages_cache()
    once = 0
    for _, message in real:
        once += type(prepare_message(message)) is PreparedMessage  # not read back
    assert once >= 0.99 * len(real) and len(real) > 3000


_CACHE: list[tuple[str, dict[str, Any]]] = []


def real_messages_cache() -> list[tuple[str, dict[str, Any]]]:
    if not _CACHE:
        _CACHE.extend(real_messages())
    return _CACHE


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    _containers,
    max_leaves=12,
)
python_values = (
    json_values
    | st.tuples(json_values, json_values)
    | st.datetimes()
    | st.binary(max_size=8).map(lambda b: b.hex().encode())
)
keys = st.sampled_from(
    ["toolCallId", "tool_call_id", "extra", "x", "Type", "details", "content"]
) | st.text(max_size=6)
blocks = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=30)}),
    st.fixed_dictionaries(
        {
            "type": st.just("toolCall"),
            "id": st.text(min_size=1, max_size=8),
            "name": st.text(max_size=8),
        },
        optional={"arguments": st.dictionaries(st.text(max_size=6), python_values, max_size=3)},
    ),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": st.text(max_size=10)}),
    st.fixed_dictionaries({"type": st.sampled_from(["audio", "x-new"]), "data": json_values}),
)
messages = st.one_of(
    st.fixed_dictionaries(
        {"role": st.just("user"), "content": st.text(max_size=30) | st.lists(blocks, max_size=3)},
        optional={"timestamp": st.integers(0, 2**41) | st.floats(0, 1e13)},
    ),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": st.lists(blocks, max_size=4)},
        optional={
            "usage": st.fixed_dictionaries(
                {"input": st.integers(0, 10**6), "output": st.integers(0, 10**6)}
            ),
            "stopReason": st.sampled_from(["stop", "toolUse", "new-reason"]),
            "model": st.text(max_size=8),
        },
    ),
    st.fixed_dictionaries(
        {"role": st.just("toolResult"), "toolCallId": st.text(min_size=1, max_size=8)},
        optional={
            "details": python_values,
            "isError": st.booleans(),
            "content": st.lists(blocks, max_size=2),
        },
    ),
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system-note", "newRole"]), "body": json_values}
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages, st.dictionaries(keys, python_values, max_size=3))
def test_generated_messages_validated_once_equal_the_full_path(
    message: dict[str, Any], extra: dict[str, Any]
) -> None:
    message = {**extra, **message}
    try:
        prepare_message(message).body()
    except (ValueError, InvalidEntryError):
        with pytest.raises((ValueError, InvalidEntryError)):
            full_path(message, 0)
        return
    assert_pipeline_equal(message)


def test_python_only_values_are_kept_as_their_json_on_every_store(tmp_path: Path) -> None:
    message = {
        "role": "toolResult",
        "toolCallId": "c1",
        "details": {
            "when": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
            "pair": (1, 2),
            7: "int key",
        },
        "content": [{"type": "toolCall", "id": "t", "name": "n", "arguments": {"t": (3, "x")}}],
        "note": {"set": (1,)},
    }

    async def run(repo: Any) -> None:
        s = await repo.create()
        eid = await s.append_message(message)
        held: Any = await s.storage.get_entry(eid)
        await repo.close()
        assert held.message.details == {
            "when": "2026-01-02T03:04:05Z",
            "pair": [1, 2],
            "7": "int key",
        }
        assert held.message.model_extra == {"note": {"set": [1]}}
        if not isinstance(repo, MemoryRepo):
            reopened = type(repo)(*repo_args[type(repo)])
            again = await (await reopened.open(s.id)).storage.get_entry(eid)
            await reopened.close()
            assert again == held

    repo_args: dict[type, tuple[Any, ...]] = {
        JSONLRepo: (tmp_path / "j",),
        SQLRepo: (f"sqlite:///{tmp_path / 's.db'}",),
    }
    asyncio.run(run(MemoryRepo()))
    for cls, args in repo_args.items():
        asyncio.run(run(cls(*args)))


def test_a_non_finite_number_or_lone_surrogate_is_refused_as_before() -> None:
    for bad in (float("nan"), float("inf"), "\ud800"):
        message = {"role": "toolResult", "toolCallId": "c", "details": {"v": bad}}
        with pytest.raises(InvalidEntryError):
            prepare_message(message).body()
    # the text "NaN" inside a string is no number: kept
    kept: Any = prepare_message({"role": "user", "content": "NaN and Infinity"}).entry
    assert kept.message.content == "NaN and Infinity"


def test_a_prepared_entry_is_taken_as_it_is_and_any_other_object_read_back() -> None:
    prepared = prepare_message({"role": "user", "content": "hi"})
    assert prepare_entry(prepared) is prepared
    # the same entry handed over plain is read back like any other: equal, a new object
    again = prepare_entry(prepared.entry)
    assert isinstance(again, PreparedEntry)
    assert again.entry == prepared.entry and again.entry is not prepared.entry
    assert again.json == prepared.body()
    moved = prepared.entry.model_copy(update={"message": TextContent(text="not a message")})
    with pytest.raises(InvalidEntryError):
        prepare_entry(moved)  # a changed copy is read back and refused


def test_under_a_parent_is_a_new_value_equal_to_the_copy() -> None:
    message = {"role": "user", "content": "hi", "timestamp": 5}
    prepared = prepare_message(message)
    placed = prepared.under("parent-1")
    assert prepared.entry.parent_id is None, "entries are immutable: the value is not changed"
    assert placed.entry.parent_id == "parent-1" and placed.json is None
    expected = prepared.entry.model_copy(update={"parent_id": "parent-1"})
    assert placed.entry == expected
    assert placed.entry.model_fields_set == expected.model_fields_set
    assert placed.body() == dump_entry_json(expected)
    assert ENTRY_ADAPTER.validate_json(placed.body()) == placed.entry
    assert placed.under("parent-1") is placed


def test_an_entry_the_caller_holds_is_copied_under_the_leaf_not_changed() -> None:
    async def run() -> None:
        repo = MemoryRepo()
        session = await repo.create()
        leaf = await session.append_message({"role": "user", "content": "first"})
        held = prepare_message({"role": "user", "content": "second"}).entry
        stored = await session.storage.append_entry(held, at_leaf=True)
        assert held.parent_id is None, "the caller's entry is never changed"
        assert stored is not held and stored.parent_id == leaf
        assert stored.model_copy(update={"parent_id": None}) == held
        await repo.close()

    asyncio.run(run())


def test_session_appends_chain_each_message_under_the_last() -> None:
    async def run() -> None:
        repo = MemoryRepo()
        session = await repo.create()
        ids = [await session.append_message({"role": "user", "content": str(i)}) for i in range(5)]
        entries = await session.storage.get_entries()
        assert [e.id for e in entries] == ids
        assert [e.parent_id for e in entries] == [None, *ids[:-1]]
        await repo.close()

    asyncio.run(run())


def test_a_model_given_as_message_is_read_back_from_its_json() -> None:
    bad = AssistantMessage(content=[]).model_copy(
        update={"content": [{"type": "text", "text": "x"}]}
    )
    entry: Any = prepare_message(bad).entry
    assert entry.message.content == [TextContent(text="x")]
    assert_pipeline_equal(AssistantMessage(content=[TextContent(text="hello")], timestamp=5))


@given(st.integers(min_value=-(10**12), max_value=253402300799999))
def test_entry_timestamps_format_like_datetime(ms: int) -> None:
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    assert iso_from_ms(ms) == dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def test_a_model_that_reads_back_as_another_class_is_refused() -> None:
    from sessiontree.messages import OpaqueMessage

    with pytest.raises(ValueError):
        prepare_message(OpaqueMessage(role="user", content="x"))
    with pytest.raises(ValueError):
        prepare_message(TextContent(text="not a message"))  # type: ignore[arg-type]


def test_a_new_message_entry_equals_the_validated_construction() -> None:
    for message in ({"role": "user", "content": "hi"}, {"role": "toolResult", "toolCallId": "c"}):
        entry: Any = prepare_message(message).entry
        validated = MessageEntry(id=entry.id, timestamp=entry.timestamp, message=entry.message)
        assert entry == validated
        assert entry.model_fields_set == validated.model_fields_set
        # one read-only fields set shared with the validated entries, as any entry read
        assert entry.__pydantic_fields_set__ is validated.__pydantic_fields_set__
        assert entry.model_extra == validated.model_extra == {}
        assert dump_entry_json(entry) == dump_entry_json(validated)
        assert ENTRY_ADAPTER.validate_json(dump_entry_json(entry)) == entry
        moved = entry.model_copy(update={"parent_id": "p"})
        assert moved.parent_id == "p" and entry.parent_id is None
        assert "parent_id" in entry.model_fields_set


@given(st.binary(max_size=64) | st.text(alphabet='NaIfinty:,"{}', max_size=40).map(str.encode))
def test_the_non_finite_check_finds_what_the_plain_search_finds(data: bytes) -> None:
    assert exact_json.may_be_non_finite(data) == (b"NaN" in data or b"Infinity" in data)


def test_a_refused_append_leaves_nothing_behind() -> None:
    """Nothing keeps a refused message alive: once the append has raised, no entry holding it
    is left anywhere in the process (no registry of prepared entries)."""

    async def run() -> None:
        repo = MemoryRepo()
        session = await repo.create()
        marker = "refused " * 1000
        for shaped in (
            {"role": "system", "content": marker},  # a provider's wire message
            {"role": "user", "content": [{"type": "tool_result", "content": marker}]},
        ):
            with pytest.raises(InvalidEntryError):
                await session.append_message(shaped)
        assert await session.storage.get_entries() == []
        await session.delete()
        with pytest.raises(SessionTreeError):
            await session.append_message({"role": "user", "content": marker})
        await repo.close()

    asyncio.run(run())
    gc.collect()
    alive = [
        o
        for o in gc.get_objects()
        if isinstance(o, MessageEntry | PreparedEntry) and "refused refused" in repr(o)
    ]
    assert alive == []


def test_a_prepared_entry_under_a_parent_is_the_reparented_prepared_entry() -> None:
    message = {"role": "user", "content": "hi", "timestamp": 5}
    prepared = prepare_message(message)
    placed = prepared.under("p1")
    assert placed.entry.parent_id == "p1" and prepared.entry.parent_id is None
    data = placed.body()
    assert (
        data == dump_entry_json(placed.entry) and ENTRY_ADAPTER.validate_json(data) == placed.entry
    )
    written = prepared.serialised()
    assert written.json == dump_entry_json(prepared.entry)
    moved = written.under("p1")
    assert (moved.entry, moved.json) == reparent(prepared.entry, written.body(), "p1")
    assert moved.json == data, "moving the JSON writes what serialising the moved entry writes"
    plain = {
        "type": "message",
        "id": "e1",
        "parentId": "old",
        "timestamp": "2026-01-01T00:00:00.000Z",  # each read-back would stamp its own time
        "message": message,
    }
    read_back = prepare_entry(plain)
    assert isinstance(read_back, PreparedEntry) and read_back.json is not None
    under = read_back.under("p1")
    assert (under.entry, under.json) == reparent(read_back.entry, read_back.json, "p1")
    assert read_back.under("old") is read_back


def test_jsonl_appends_of_two_writers_hang_under_the_true_leaf(tmp_path: Path) -> None:
    """Each writer serialises its entry under the leaf it saw last, which the other writer's
    append has made stale: under the lock the entry is moved to the true leaf."""

    async def run() -> None:
        first = JSONLRepo(tmp_path / "s")
        session = await first.create()
        second = JSONLRepo(tmp_path / "s")
        other = await second.open(session.id)
        ids = []
        for i in range(6):
            writer = session if i % 2 == 0 else other
            ids.append(await writer.append_message({"role": "user", "content": str(i)}))
        assert isinstance(session.storage, JSONLStorage)
        path = session.storage.path
        lines = [orjson.loads(line) for line in path.read_bytes().splitlines()[1:]]
        assert [row["id"] for row in lines] == ids
        assert [row["parentId"] for row in lines] == [None, *ids[:-1]]
        fresh = await JSONLRepo(tmp_path / "s").open(session.id)
        assert [e.parent_id for e in await fresh.storage.get_entries()] == [None, *ids[:-1]]
        for line, entry in zip(
            path.read_bytes().splitlines()[1:], await fresh.storage.get_entries(), strict=True
        ):
            assert dump_entry_json(entry) == line
        await first.close()
        await second.close()

    asyncio.run(run())


def assert_text_and_dict_read_alike(line: bytes) -> None:
    """A JSONL line read from its text (what the JSONL store validates) equals the line
    parsed first and its dict validated (what it validated before), unknown keys and the
    fields set included."""
    from_text = validate_entry_json(line)
    from_dict = ENTRY_ADAPTER.validate_python(exact_json.loads(line))
    assert from_text == from_dict
    assert from_text.model_fields_set == from_dict.model_fields_set
    assert from_text.model_extra == from_dict.model_extra
    assert dump_entry_json(from_text) == dump_entry_json(from_dict)


def jsonl_lines_of_real_files(tmp_path: Path) -> list[bytes]:
    """The entry lines of every real session file imported into a JSONL store, and the lines
    of the pi v3 file as pi wrote them."""

    for relative in COLLECTION:
        asyncio.run(import_real_file(relative, JSONLRepo(tmp_path)))
    # each session's log (the repository's listing index beside them holds no entries)
    files = [*tmp_path.glob("*/session.jsonl"), session_file("pi/agent-sessions_pi-small.v3.jsonl")]
    lines: list[bytes] = []
    for path in files:
        lines.extend(ln for ln in path.read_bytes().splitlines()[1:] if ln.strip())
    return lines


def test_every_real_jsonl_line_reads_alike_from_its_text_and_its_dict(tmp_path: Path) -> None:
    lines = jsonl_lines_of_real_files(tmp_path)
    assert len(lines) > 3000
    for line in lines:
        assert_text_and_dict_read_alike(line)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages, st.dictionaries(keys, json_values, max_size=3))
def test_generated_jsonl_lines_read_alike_from_their_text_and_their_dict(
    message: dict[str, Any], extra: dict[str, Any]
) -> None:
    entry = {**extra, "type": "message", "id": "e1", "parentId": None, "message": message}
    entry["timestamp"] = "2026-01-01T00:00:00.000Z"
    try:
        line = orjson.dumps(entry)
    except TypeError:  # an integer beyond 64 bits: written by pydantic-core instead
        line = to_json(entry)
    try:
        ENTRY_ADAPTER.validate_python(exact_json.loads(line))
    except ValidationError:
        with pytest.raises(ValidationError):
            validate_entry_json(line)  # not an entry: refused from its text too
        return
    assert_text_and_dict_read_alike(line)


async def test_a_new_message_entry_is_built_once_under_the_leaf(repo: SessionRepo) -> None:
    """On every backend, the entry a message append stores and returns is the one
    :meth:`PreparedMessage.under` built under the leaf: no copy under the parent afterwards
    (a copy gets a fields set of its own), and the entry reads back equal."""
    session = await repo.create()
    parent = None
    for text in ("first", "second", "third"):
        prepared = prepare_message({"role": "user", "content": text, "timestamp": 7})
        assert type(prepared) is PreparedMessage
        shared = prepared.under("elsewhere").entry.model_fields_set  # the one set all share
        stored = await session.storage.append_entry(prepared, at_leaf=True)
        assert stored.parent_id == parent and stored.id == prepared.id
        if parent is not None:  # an SQL store learns the leaf from its first append
            assert stored.model_fields_set is shared, "built once, not copied under the leaf"
        assert stored == await session.storage.get_entry(stored.id)
        parent = stored.id
    assert [e.id for e in await session.storage.get_branch()][-1] == parent
