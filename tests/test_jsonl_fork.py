"""The JSONL fork copies stored lines as bytes: what it holds equals the fork of validated
entries (the plan every backend shares), on every real session file and on generated entries,
and copied lines keep their bytes (unknown keys and types included)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from session_files import format_of, vendored_files
from sessiontree import JSONLRepo, import_session
from sessiontree.backends.jsonl.storage import JSONLStorage
from sessiontree.entries import Entry, dump_entry, is_path_entry
from sessiontree.storage.base import fork_plan
from sessiontree.stored import stored_form
from sessiontree.testing.builders import user

VENDORED_FILES = vendored_files()


def _comparable(e: Entry, copied: set[str]) -> Any:
    """An entry as compared: a label entry the fork adds has its own new id and time."""
    wire = dump_entry(e)
    if e.id not in copied:
        wire.pop("id")
        wire.pop("timestamp")
    return wire


async def _expected(storage: JSONLStorage, target: str, position: str) -> tuple[Any, list[Entry]]:
    """The fork as the shared plan makes it from validated entries, read back as stored."""
    meta, entries = await fork_plan(storage, target, position)  # type: ignore[arg-type]
    return meta, [stored_form(e)[0] for e in entries]


async def _check_forks(repo: JSONLRepo, session_id: str) -> int:
    """Fork ``session_id`` at a few path entries, both ways; compare; the number of forks."""
    source = await repo.open(session_id)
    storage = source.storage
    assert isinstance(storage, JSONLStorage)
    path_ids = [e.id for e in await storage.get_entries() if is_path_entry(e)]
    targets = sorted({path_ids[0], path_ids[len(path_ids) // 2], path_ids[-1]})
    source_lines = storage.path.read_bytes().split(b"\n")
    forks = 0
    for target in targets:
        for position in ("at", "before"):
            meta, expected = await _expected(storage, target, position)
            if position == "before" and not expected:
                continue
            fork = await repo.fork(session_id, target, position)
            forks += 1
            copied = {e.id for e in await storage.get_entries()}
            got = await fork.storage.get_entries()
            assert [_comparable(e, copied) for e in got] == [
                _comparable(e, copied) for e in expected
            ]
            for e, want in zip(got, expected, strict=True):
                if e.id in copied:
                    assert e == want
            assert fork.storage.metadata == meta
            # the fork read from its file by a new reader is the same
            fresh = await JSONLRepo(repo.root).open(fork.id)
            assert await fresh.storage.get_entries() == got
            assert await fresh.get_leaf_id() == await fork.get_leaf_id()
            # a copied line is the source's line, byte for byte, unless a reference changed
            fork_lines = fork.storage.path.read_bytes().split(b"\n")[1:-1]
            for raw, e in zip(fork_lines, got, strict=True):
                if e.id in copied and e == await storage.get_entry(e.id):
                    assert raw in source_lines
    return forks


@pytest.mark.parametrize("path", VENDORED_FILES, ids=[p.name for p in VENDORED_FILES])
async def test_a_fork_of_every_real_session_equals_the_fork_of_validated_entries(
    tmp_path: Path, path: Path
) -> None:
    repo = JSONLRepo(tmp_path / "store")
    relative = str(path.relative_to(path.parents[1]))
    session, _ = await import_session(path, repo, format=format_of(relative))
    assert await _check_forks(repo, session.id) > 0
    await repo.close()


async def test_a_pi_file_opened_in_place_forks_its_own_lines(tmp_path: Path) -> None:
    pi = next(p for p in VENDORED_FILES if p.name.endswith(".v3.jsonl"))
    copy = tmp_path / "s.jsonl"
    copy.write_bytes(pi.read_bytes())
    storage = JSONLStorage(copy)
    leaf = await storage.get_leaf_id()
    assert leaf is not None
    _, expected = await _expected(storage, leaf, "at")
    fork = await storage.fork(leaf)
    assert await fork.get_entries() == expected
    source_lines = copy.read_bytes().split(b"\n")
    assert isinstance(fork, JSONLStorage)
    assert all(raw in source_lines for raw in fork.path.read_bytes().split(b"\n")[1:-1])


def _line(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


async def test_unknown_keys_and_types_are_copied_byte_for_byte(tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00Z"}
    lines = [
        {
            "type": "message",
            "id": "a",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {**user("hi"), "vendorKey": {"z": 1, "a": [1.5, None]}},
            "extraTop": "kept",
        },
        {"type": "future_kind", "id": "b", "parentId": "a", "timestamp": "2026-01-01T00:00:02Z"},
        {
            "type": "label",
            "id": "l",
            "parentId": "b",
            "timestamp": "2026-01-01T00:00:03Z",
            "targetId": "a",
            "label": "start",
        },
        {
            "type": "message",
            "id": "c",
            "parentId": "l",
            "timestamp": "2026-01-01T00:00:04Z",
            "message": user("there"),
        },
    ]
    path = tmp_path / "s.jsonl"
    # spacing another writer may use: copied as it is, not rewritten
    body = [orjson.dumps(obj, option=orjson.OPT_INDENT_2).replace(b"\n", b" ") for obj in lines]
    path.write_bytes(_line(header) + b"".join(b + b"\n" for b in body))
    storage = JSONLStorage(path)
    _, expected = await _expected(storage, "c", "at")
    fork = await storage.fork("c")
    assert isinstance(fork, JSONLStorage)
    assert await fork.get_entries() == expected
    assert fork.path.read_bytes().split(b"\n")[1:-1] == body
    assert await fork.get_label("a") == "start"


async def test_a_reference_to_an_entry_not_copied_is_written_anew(tmp_path: Path) -> None:
    repo = JSONLRepo(tmp_path)
    s = await repo.create()
    a = await s.append_message(user("a"))
    b = await s.append_message(user("b"))
    await s.append_label(b, "bee")  # on the path of what follows, targets an entry not copied
    c = await s.append_message(user("c"))
    await s.set_leaf_id(a)
    d = await s.append_message(user("d"))
    fork = await repo.fork(s.id, c, "at")
    entries = await fork.storage.get_entries()
    label = next(e for e in entries if e.type == "label")
    assert label.target_id == b
    fork2 = await repo.fork(s.id, d, "at")
    assert [e.id for e in await fork2.get_branch()] == [a, d]
    raw = fork.storage.path.read_bytes()
    assert raw.count(b"\n") == 1 + len(entries)


_texts = st.text(st.characters(codec="utf-8"), max_size=30)


async def _generated_fork(
    root: Path, steps: list[tuple[str, str]], pick: float, before: bool
) -> None:
    repo = JSONLRepo(root)
    s = await repo.create()
    ids: list[str] = [await s.append_message(user("first"))]
    for kind, text in steps:
        other = ids[len(text) % len(ids)]
        if kind == "msg":
            ids.append(await s.append_message(user(text)))
        elif kind == "label":
            await s.append_label(other, text or "x")
        elif kind == "unlabel":
            await s.append_label(other, None)
        elif kind == "name":
            await s.append_session_name(text or "n")
        elif kind == "leaf":
            await s.set_leaf_id(other)
        else:
            ids.append(await s.append_branch_summary(text, other))
    storage = s.storage
    assert isinstance(storage, JSONLStorage)
    path_ids = [e.id for e in await storage.get_entries() if is_path_entry(e)]
    target = path_ids[min(int(pick * len(path_ids)), len(path_ids) - 1)]
    position = "before" if before else "at"
    meta, expected = await _expected(storage, target, position)
    fork = await repo.fork(s.id, target, position)
    copied = {e.id for e in await storage.get_entries()}
    got = await fork.storage.get_entries()
    assert [_comparable(e, copied) for e in got] == [_comparable(e, copied) for e in expected]
    assert fork.storage.metadata == meta
    fresh = await JSONLRepo(repo.root).open(fork.id)
    assert await fresh.storage.get_entries() == got
    await repo.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["msg", "label", "unlabel", "name", "leaf", "summary"]), _texts),
        min_size=1,
        max_size=25,
    ),
    pick=st.floats(0, 1),
    before=st.booleans(),
)
def test_forks_of_generated_sessions_equal_the_fork_of_validated_entries(
    steps: list[tuple[str, str]], pick: float, before: bool
) -> None:
    with tempfile.TemporaryDirectory() as root:
        asyncio.run(_generated_fork(Path(root), steps, pick, before))
