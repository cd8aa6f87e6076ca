"""SessionTreeStore: the Claude Agent SDK's SessionStore, judged by the SDK's own conformance
runner on every backend, and a real Claude Code transcript stored as a real tree."""

from __future__ import annotations

import asyncio
import copy
import uuid as uuidlib
from pathlib import Path
from typing import Any, cast

import orjson
import pytest
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.testing.session_store_conformance import _has_optional
from claude_agent_sdk.types import SessionKey, SessionStore, SessionStoreEntry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends import BACKENDS
from sessiontree import (
    AssistantMessage,
    InvalidEntryError,
    MessageEntry,
    SessionRepo,
    ToolResultMessage,
    UserMessage,
)
from sessiontree.integrations.claude_agent_sdk import SessionTreeStore, store_session_id

TRANSCRIPT = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "sessions"
    / "claude-code"
    / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
)
KEY: SessionKey = {
    "project_key": "-path-to-Demo",
    "session_id": "5c0375b4-57a5-4f26-b12d-d022ee4e51b7",
}


def transcript() -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in TRANSCRIPT.read_bytes().splitlines() if line.strip()]


def as_entries(lines: list[dict[str, Any]]) -> list[SessionStoreEntry]:
    """The same lines, typed as the SDK's ``SessionStoreEntry``: that TypedDict declares only
    ``type``, ``uuid`` and ``timestamp``, while a transcript line carries more keys, which a
    store passes through untouched."""
    return cast("list[SessionStoreEntry]", lines)


async def test_sdk_conformance_with_no_contract_skipped(repo: SessionRepo) -> None:
    stores: list[SessionTreeStore] = []

    async def fresh() -> SessionTreeStore:
        # every contract gets an empty store: clear what the previous one wrote
        for info in await repo.list():
            await repo.delete(info.id)
        store = SessionTreeStore(repo=repo)
        stores.append(store)
        return store

    probe: SessionStore = SessionTreeStore(repo=repo)  # the SDK's protocol, statically too
    for method in ("list_sessions", "list_session_summaries", "delete", "list_subkeys"):
        assert _has_optional(probe, method, frozenset()), method  # nothing the runner would skip
    await run_session_store_conformance(fresh)
    assert len(stores) >= 14


async def test_a_transcript_is_a_real_tree_and_loads_equal(repo: SessionRepo) -> None:
    store = SessionTreeStore(repo=repo)
    lines = transcript()
    for start in range(0, len(lines), 7):  # the SDK mirrors in batches
        await store.append(KEY, as_entries(lines[start : start + 7]))
    # a retried batch: uuids already stored are skipped
    await store.append(KEY, as_entries(lines[10:20]))
    assert await store.load(KEY) == lines
    session = await repo.open(store_session_id(KEY))
    entries = await session.get_entries()
    assert [e.id for e in entries] == [line["uuid"] for line in lines]
    assert [e.parent_id for e in entries] == [line["parentUuid"] for line in lines]
    roots = await session.get_tree()
    assert [r.entry.id for r in roots] == [x["uuid"] for x in lines if x["parentUuid"] is None]
    messages = [e.message for e in entries if isinstance(e, MessageEntry)]
    assert len(messages) == len(lines)  # every user/assistant line is a real message
    assert any(isinstance(m, AssistantMessage) and m.tool_calls() for m in messages)
    assert any(isinstance(m, ToolResultMessage) for m in messages)
    hits = await repo.search("orchestrator")
    assert hits and {h.session_id for h in hits} == {session.id}
    context = await session.build_context()  # the current branch: the last line's path
    branch = await session.get_branch()
    assert branch[-1].id == lines[-1]["uuid"] and len(context.messages) == len(branch)
    first = context.messages[0]
    assert isinstance(first, UserMessage)
    assert first.timestamp > 1.7e12  # the line's time, in Unix ms
    (listed,) = await store.list_sessions(KEY["project_key"])
    assert listed["session_id"] == KEY["session_id"]
    (summary,) = await store.list_session_summaries(KEY["project_key"])
    assert summary["mtime"] == listed["mtime"]
    # a fork of the stored transcript at any line
    fork = await session.fork(lines[5]["uuid"])
    assert [e.id for e in await fork.get_branch()] == [line["uuid"] for line in lines[:6]]


async def test_loaded_lines_are_copies_and_bad_lines_are_refused(repo: SessionRepo) -> None:
    store = SessionTreeStore(repo=repo)
    await store.append(KEY, as_entries([{"type": "x", "uuid": "u1", "data": {"n": [1, 2]}}]))
    loaded = await store.load(KEY)
    assert loaded is not None
    cast("dict[str, Any]", loaded[0])["data"]["n"].append(3)
    assert await store.load(KEY) == [{"type": "x", "uuid": "u1", "data": {"n": [1, 2]}}]
    with pytest.raises(InvalidEntryError):
        await store.append(
            KEY, as_entries([{"type": "x", "uuid": "u2"}, {"type": "x", "v": float("nan")}])
        )
    assert await store.load(KEY) == [{"type": "x", "uuid": "u1", "data": {"n": [1, 2]}}]


@pytest.mark.parametrize("line", ["text", None, ["a", "b"]])
async def test_a_line_that_is_not_an_object_is_refused_naming_its_index(
    repo: SessionRepo, line: Any
) -> None:
    store = SessionTreeStore(repo=repo)
    await store.append(KEY, [{"type": "x", "uuid": "u1"}])
    with pytest.raises(InvalidEntryError, match="line 1 of the batch"):
        await store.append(KEY, [{"type": "x", "uuid": "u2"}, line])
    assert await store.load(KEY) == [{"type": "x", "uuid": "u1"}]


async def test_a_line_time_beyond_year_9999_is_stored_and_loads_equal(repo: SessionRepo) -> None:
    store = SessionTreeStore(repo=repo)
    line: Any = {"type": "user", "uuid": "u1", "parentUuid": None, "timestamp": 2**70,
                 "message": {"role": "user", "content": "hi"}}  # fmt: skip
    await store.append(KEY, [line])
    assert await store.load(KEY) == [line]


async def test_lines_without_uuid_hang_under_the_previous_line(repo: SessionRepo) -> None:
    store = SessionTreeStore(repo=repo)
    lines = transcript()[:3]
    title = {"type": "custom-title", "customTitle": "demo", "sessionId": KEY["session_id"]}
    await store.append(KEY, as_entries([*lines[:2], title, lines[2], title]))
    assert await store.load(KEY) == [*lines[:2], title, lines[2], title]
    session = await repo.open(store_session_id(KEY))
    entries = await session.get_entries()
    assert entries[2].parent_id == lines[1]["uuid"]
    assert entries[2].type == "custom" and entries[2].custom_type == "claude_code.custom-title"  # type: ignore[union-attr]
    assert entries[3].parent_id == lines[1]["uuid"]  # its parentUuid, not the title


async def test_stores_built_from_a_url_share_it_across_loops(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'claude.db'}"
    store = SessionTreeStore(url=url)
    await store.append(KEY, as_entries(transcript()[:4]))

    def elsewhere() -> Any:
        return asyncio.run(SessionTreeStore(url=url).load(KEY))

    assert await asyncio.to_thread(elsewhere) == transcript()[:4]


json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
line = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "system", "x"])},
    optional={"uuid": st.uuids().map(str), "message": json_value, "data": json_value},
)


@pytest.mark.parametrize("backend", list(BACKENDS))
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(st.lists(line, max_size=4), min_size=1, max_size=3))
def test_lines_round_trip_exactly(
    backend: str, tmp_path: Path, batches: list[list[dict[str, Any]]]
) -> None:
    async def run() -> Any:
        async with BACKENDS[backend].open(tmp_path / uuidlib.uuid4().hex) as repo:
            store = SessionTreeStore(repo=repo)
            for batch in batches:
                await store.append(KEY, as_entries(copy.deepcopy(batch)))
            return await SessionTreeStore(repo=repo).load(KEY)

    seen: set[str] = set()
    expected = []
    for item in (i for b in batches for i in b):
        if "uuid" in item:
            if item["uuid"] in seen:
                continue
            seen.add(item["uuid"])
        expected.append(item)
    assert asyncio.run(run()) == (expected or None)  # a key never appended to loads None


async def test_a_parent_never_written_makes_a_root_and_loses_nothing(repo: SessionRepo) -> None:
    store = SessionTreeStore(repo=repo)
    lines: list[dict[str, Any]] = [
        {
            "type": "user",
            "uuid": "a",
            "parentUuid": None,
            "message": {"role": "user", "content": "one"},
        },
        {
            "type": "user",
            "uuid": "b",
            "parentUuid": "never-written",
            "message": {"role": "user", "content": "two"},
        },
        {
            "type": "assistant",
            "uuid": "c",
            "parentUuid": "b",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "three"}]},
        },
    ]
    await store.append(KEY, as_entries(lines))
    assert await store.load(KEY) == lines
    session = await repo.open(store_session_id(KEY))
    assert [n.entry.id for n in await session.get_tree()] == ["a", "b"]
    assert [e.id for e in await session.get_branch()] == ["b", "c"]


async def test_the_sdks_store_functions_behave_as_with_its_in_memory_store(
    repo: SessionRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """import_session_to_store, list/get/rename/fork/delete via the store: the SDK's own
    helpers give the same answers over SessionTreeStore as over its InMemorySessionStore."""
    import shutil

    import claude_agent_sdk as sdk
    from claude_agent_sdk._internal.sessions import project_key_for_directory

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    project = tmp_path / "project"
    project.mkdir()
    local = tmp_path / "config" / "projects" / project_key_for_directory(project)
    local.mkdir(parents=True)
    shutil.copy(TRANSCRIPT, local / TRANSCRIPT.name)
    sid, where = KEY["session_id"], str(project)

    async def drive(store: Any) -> list[Any]:
        await sdk.import_session_to_store(sid, store, directory=where)
        listed = [
            (i.session_id, i.summary)
            for i in await sdk.list_sessions_from_store(store, directory=where)
        ]
        messages = await sdk.get_session_messages_from_store(store, sid, directory=where)
        await sdk.rename_session_via_store(store, sid, "renamed ✓", directory=where)
        info = await sdk.get_session_info_from_store(store, sid, directory=where)
        fork = await sdk.fork_session_via_store(
            store, sid, directory=where, up_to_message_id=messages[3].uuid, title="forked"
        )
        forked = await sdk.get_session_messages_from_store(store, fork.session_id, directory=where)
        await sdk.delete_session_via_store(store, sid, directory=where)
        gone = await store.load(
            {"project_key": project_key_for_directory(project), "session_id": sid}
        )
        return [
            listed,
            [(m.type, m.uuid) for m in messages],
            info and info.custom_title,
            len(forked),
            gone,
        ]

    ours = await drive(SessionTreeStore(repo=repo))
    theirs = await drive(sdk.InMemorySessionStore())
    assert ours == theirs
    assert ours[2] == "renamed ✓" and len(ours[1]) > 10 and ours[4] is None


def test_a_sync_repository_serves_the_store(tmp_path: Path) -> None:
    from sessiontree.sync import open_repo as sync_open_repo

    with sync_open_repo(f"sqlite:///{tmp_path / 's.db'}") as repo:
        store = SessionTreeStore(repo=repo)
        asyncio.run(store.append(KEY, as_entries(transcript()[:3])))
        assert asyncio.run(store.load(KEY)) == transcript()[:3]  # from another loop than the repo's
        assert [i.id for i in repo.list(where={"claudeProjectKey": KEY["project_key"]})] == [
            store_session_id(KEY)
        ]


@pytest.mark.parametrize("field", ["uuid", "parentUuid"])
@pytest.mark.parametrize("bad", ["a\x00b", "cut \ud83d", "\udc00"], ids=["nul", "high", "low"])
async def test_a_uuid_no_backend_can_hold_is_refused_naming_its_line(
    repo: SessionRepo, field: str, bad: str
) -> None:
    """A lone surrogate in a line's uuid raised untyped errors (pydantic's, the SQL drivers'
    UnicodeEncodeError); a NUL was stored on three backends and refused on PostgreSQL."""
    store = SessionTreeStore(repo=repo)
    first: Any = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}
    await store.append(KEY, [first])
    line: Any = {"type": "user", "uuid": "u3", "parentUuid": "u1", field: bad,
                 "message": {"role": "user", "content": "again"}}  # fmt: skip
    second: Any = {"type": "user", "uuid": "u2", "message": {"role": "user", "content": "ok"}}
    with pytest.raises(InvalidEntryError, match=f"transcript line 1: {field} .* cannot be an"):
        await store.append(KEY, [second, line])
    assert await store.load(KEY) == [first]


async def test_sdk_conformance_with_memory_urls_and_a_shared_named_one() -> None:
    """``SessionTreeStore(url="memory://")`` was the process-wide shared store: the SDK's
    runner saw the previous contract's data. Each object now has its own."""
    await run_session_store_conformance(lambda: SessionTreeStore(url="memory://"))
    one, two = SessionTreeStore(url="memory://"), SessionTreeStore(url="memory://")
    line: Any = {"type": "x", "uuid": "u1"}
    await one.append(KEY, [line])
    assert await two.load(KEY) is None
    name = f"memory://claude-{uuidlib.uuid4().hex}"
    await SessionTreeStore(url=name).append(KEY, [line])
    assert await SessionTreeStore(url=name).load(KEY) == [line]


async def test_sdk_conformance_in_a_user_scope_beside_another_users_sessions(
    repo: SessionRepo,
) -> None:
    """The SDK's own contract holds for a store scoped to one user while another user's
    store holds the same keys: none of bob's transcripts shows, and none is touched."""
    bob = SessionTreeStore(repo=repo, user_id="bob")
    await bob.append(KEY, as_entries(transcript()))
    await bob.append({**KEY, "session_id": "other"}, as_entries(transcript()[:2]))
    bob_before = {i.id for i in await repo.list()}

    async def fresh() -> SessionTreeStore:
        store = SessionTreeStore(repo=repo, user_id="alice", app="code")
        for info in await store.repo.list():  # clears alice's sessions only
            await store.repo.delete(info.id)
        return store

    await run_session_store_conformance(fresh)
    alice = await fresh()
    assert await alice.load(KEY) is None
    assert await alice.list_sessions(KEY["project_key"]) == []
    assert {i.id for i in await repo.list()} == bob_before
    assert await bob.load(KEY) == transcript()
    assert store_session_id(KEY, bob._scope) != store_session_id(KEY)
