"""The backend conformance suite (SPEC §2, §3, §5, §6, §7), shipped so any backend can prove itself.

Use it by subclassing :class:`ConformanceSuite` in a pytest module and providing an async
``repo`` fixture that yields a fresh, empty :class:`~sessiontree.repos.base.SessionRepo`::

    from sessiontree.testing.conformance import ConformanceSuite

    class TestMyBackend(ConformanceSuite):
        @pytest.fixture
        async def repo(self, tmp_path):
            async with MyRepo(tmp_path) as r:
                yield r

Persistence is checked by reopening sessions through ``open_repo(repo.url)`` — a fresh
repository object on the same store — for every backend whose ``url`` is not ``memory://``.
Every rejection test also checks that nothing stored changed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from sessiontree.context import LOST_RESULT_TEXT, find_tool_pair_problems
from sessiontree.entries import (
    BranchSummaryEntry,
    CustomEntry,
    Entry,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    OpaqueEntry,
    SessionInfoEntry,
    dump_entry,
)
from sessiontree.errors import (
    DuplicateEntryError,
    EntryNotFoundError,
    InvalidEntryError,
    SessionNotFoundError,
)
from sessiontree.messages import (
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    OpaqueBlock,
    OpaqueMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from sessiontree.metadata import SessionMetadata
from sessiontree.repos import open_repo
from sessiontree.repos.base import SessionRepo
from sessiontree.session import Session
from sessiontree.testing.builders import assistant, tool_call, tool_result, user
from sessiontree.tree import leaf_of_log

__all__ = ["ConformanceSuite", "reopened", "snapshot"]


async def snapshot(session: Session) -> tuple[list[dict[str, Any]], str | None]:
    """Every entry (wire dicts, append order) and the leaf: equal snapshots = nothing changed."""
    return [dump_entry(e) for e in await session.get_entries()], await session.get_leaf_id()


@contextlib.asynccontextmanager
async def reopened(repo: SessionRepo, session: Session) -> AsyncIterator[Session]:
    """The same session read back through a fresh repository object (same store)."""
    if repo.url.startswith("memory:"):
        yield await repo.open(session.id)
        return
    other = open_repo(repo.url)
    try:
        yield await other.open(session.id)
    finally:
        await other.close()


def _texts(messages: Sequence[Any]) -> list[str]:
    out = []
    for m in messages:
        if isinstance(m, CompactionSummaryMessage | BranchSummaryMessage):
            out.append(f"[{m.role}] {m.summary}")
        elif isinstance(m, ToolResultMessage):
            out.append(f"result:{m.tool_call_id}")
        else:
            out.append(message_text(m))
    return out


class ConformanceSuite:
    """Every rule a backend must honour. Subclass and provide a ``repo`` fixture."""

    # ------------------------------------------------------------------ §6 repository

    async def test_create_open_and_list(self, repo: SessionRepo) -> None:
        s = await repo.create(metadata={"systemPrompt": "be brief", "cwd": "/w", "custom": 1})
        await s.append_message(user("hello there"))
        other = await repo.open(s.id)
        assert other.id == s.id
        meta = await other.get_metadata()
        assert meta.system_prompt == "be brief"
        assert meta.cwd == "/w"
        assert (meta.model_extra or {}).get("custom") == 1
        infos = await repo.list()
        assert [i.id for i in infos] == [s.id]
        assert infos[0].entry_count == 1
        assert infos[0].message_count == 1
        assert infos[0].first_message == "hello there"

    async def test_create_with_id_and_duplicate(self, repo: SessionRepo) -> None:
        s = await repo.create(id="my-session_1")
        assert s.id == "my-session_1"
        with pytest.raises(DuplicateEntryError) as err:
            await repo.create(id="my-session_1")
        assert "my-session_1" in str(err.value)

    @pytest.mark.parametrize("bad", ["../etc", "a/b", "x\x00y", "", "x" * 129, "sp ace"])
    async def test_create_refuses_unsafe_ids(self, repo: SessionRepo, bad: str) -> None:
        with pytest.raises(InvalidEntryError):
            await repo.create(id=bad)
        assert await repo.list() == []

    async def test_open_unknown_session(self, repo: SessionRepo) -> None:
        with pytest.raises(SessionNotFoundError) as err:
            await repo.open("no-such-session")
        assert "no-such-session" in str(err.value)
        with pytest.raises(SessionNotFoundError):
            await repo.delete("no-such-session")

    async def test_delete(self, repo: SessionRepo) -> None:
        keep = await repo.create()
        gone = await repo.create()
        await gone.append_message(user("bye"))
        await repo.delete(gone.id)
        assert [i.id for i in await repo.list()] == [keep.id]
        with pytest.raises(SessionNotFoundError):
            await repo.open(gone.id)

    async def test_session_delete_method(self, repo: SessionRepo) -> None:
        s = await repo.create()
        await s.delete()
        with pytest.raises(SessionNotFoundError):
            await repo.open(s.id)

    async def test_list_orders_by_modified_and_pages(self, repo: SessionRepo) -> None:
        sessions = [await repo.create() for _ in range(5)]
        for s in sessions:
            await s.append_message(user(f"first message of {s.id}"))
        await sessions[1].append_session_name("touched last")
        await sessions[1].append_message(user("more"))
        infos = await repo.list()
        assert infos[0].id == sessions[1].id
        assert infos[0].name == "touched last"
        assert len(infos) == 5
        mods = [i.modified_at for i in infos]
        assert mods == sorted(mods, reverse=True)
        page1 = await repo.list(limit=2)
        page2 = await repo.list(limit=2, offset=2)
        page3 = await repo.list(limit=2, offset=4)
        assert [i.id for i in page1 + page2 + page3] == [i.id for i in infos]

    async def test_list_where_filters_on_metadata_keys(self, repo: SessionRepo) -> None:
        u1a = await repo.create(metadata={"userId": "u1", "appName": "support", "tier": 2})
        u1b = await repo.create(metadata={"userId": "u1", "appName": "sales", "vip": True})
        u2 = await repo.create(metadata={"userId": "u2", "appName": "support", "tier": "2"})
        plain = await repo.create(metadata={"cwd": "/w", "note": None})
        for s in (u1a, u1b, u2, plain):
            await s.append_message(user(f"hello from {s.id}"))
        await u1a.append_message(user("newest"))

        async def ids(**where: Any) -> list[str]:
            return [i.id for i in await repo.list(where=where)]

        assert await ids(userId="u1") == [u1a.id, u1b.id]  # newest first, like list()
        assert await ids(userId="u1", appName="support") == [u1a.id]
        assert await ids(appName="support") == [u1a.id, u2.id]
        assert await ids(tier=2) == [u1a.id]  # 2 and "2" differ
        assert await ids(tier="2") == [u2.id]
        assert await ids(vip=True) == [u1b.id]
        assert await ids(vip=1) == []  # true is not 1
        assert await ids(note=None) == [plain.id]
        assert await ids(cwd="/w") == [plain.id]
        assert await ids(userId="u3") == []
        assert await ids(userId="u1", appName="nope") == []
        assert [i.id for i in await repo.list(where={})] == [i.id for i in await repo.list()]
        assert [i.id for i in await repo.list(where={"userId": "u1"}, limit=1)] == [u1a.id]
        assert [i.id for i in await repo.list(where={"userId": "u1"}, offset=1)] == [u1b.id]
        (info,) = await repo.list(where={"userId": "u2"})
        assert info.first_message == f"hello from {u2.id}"
        assert (info.metadata.model_extra or {})["appName"] == "support"

    async def test_list_where_sees_forks_and_forgets_deleted(self, repo: SessionRepo) -> None:
        s = await repo.create(metadata={"userId": "u1"})
        first = await s.append_message(user("one"))
        fork = await s.fork(first)
        assert {i.id for i in await repo.list(where={"userId": "u1"})} == {s.id, fork.id}
        assert [i.id for i in await repo.list(where={"parentSessionId": s.id})] == [fork.id]
        await repo.delete(s.id)
        assert [i.id for i in await repo.list(where={"userId": "u1"})] == [fork.id]

    @pytest.mark.parametrize(
        "bad", [{"userId": 1.5}, {"userId": ["u1"]}, {"userId": {"a": 1}}, {1: "x"}]
    )
    async def test_list_where_refuses_other_values(self, repo: SessionRepo, bad: Any) -> None:
        await repo.create(metadata={"userId": "u1"})
        with pytest.raises(InvalidEntryError, match="where"):
            await repo.list(where=bad)

    async def test_list_first_message_is_capped(self, repo: SessionRepo) -> None:
        s = await repo.create()
        await s.append_message(assistant("not a user message"))
        await s.append_message(user("x" * 500))
        (info,) = await repo.list()
        assert info.first_message == "x" * 200
        assert info.message_count == 2

    async def test_search(self, repo: SessionRepo) -> None:
        a = await repo.create()
        b = await repo.create()
        await a.append_message(user("the quick brown fox jumps"))
        hit_id = await b.append_message(assistant("a lazy zebrafish sleeps"))
        await b.append_message(user("nothing to see"))
        hits = await repo.search("zebrafish", limit=10)
        assert [(h.session_id, h.entry_id) for h in hits] == [(b.id, hit_id)]
        assert "zebrafish" in hits[0].snippet
        assert await repo.search("unmatchedword") == []

    # ------------------------------------------------------------------ §1 round trips

    async def test_unknown_keys_roles_and_blocks_survive(self, repo: SessionRepo) -> None:
        s = await repo.create()
        raw = {
            "type": "message",
            "id": "abc12345",
            "parentId": None,
            "timestamp": "2026-01-02T03:04:05.678Z",
            "futureEntryKey": {"nested": [1, 2.5, None, "x"]},
            "message": {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hi", "cacheHint": True},
                    {"type": "hologram", "payload": {"z": 1}},
                ],
                "timestamp": 1767322245678,
                "futureMessageKey": "kept",
            },
        }
        alien = {
            "type": "message",
            "id": "alien-1",
            "parentId": "abc12345",
            "timestamp": "2026-01-02T03:04:06.000Z",
            "message": {"role": "telepathy", "thought": ["a", {"b": 2}]},
        }
        await s.append_entry(raw)
        await s.append_entry(alien)
        async with reopened(repo, s) as again:
            entries = await again.get_entries()
            assert [dump_entry(e) for e in entries] == [raw, alien]
            assert isinstance(entries[1], MessageEntry)
            assert isinstance(entries[1].message, OpaqueMessage)
            first = entries[0]
            assert isinstance(first, MessageEntry)
            assert isinstance(first.message, UserMessage)
            assert isinstance(first.message.content, list)
            assert isinstance(first.message.content[1], OpaqueBlock)
            ctx = await again.build_context()
            # the opaque message is kept in storage but is no user/assistant message for a model
            assert [type(m).__name__ for m in ctx.messages] == ["UserMessage", "OpaqueMessage"]

    async def test_values_survive_exactly(self, repo: SessionRepo) -> None:
        # found in review: JSONL read integers beyond 64 bits back as floats (orjson), and
        # metadata holding NaN was stored as null, as a bare NaN, or refused, by backend
        big = 2**70 + 1
        s = await repo.create(metadata={"cwd": "/w", "seed": big, "neg": -(2**65)})
        call = {"type": "toolCall", "id": "c1", "name": "n", "arguments": {"n": big, "f": 0.1}}
        await s.append_message(user("numbers"))
        await s.append_message(assistant("", call))
        async with reopened(repo, s) as again:
            entries = await again.get_entries()
            message = entries[1]
            assert isinstance(message, MessageEntry)
            assert isinstance(message.message, AssistantMessage)
            (stored_call,) = message.message.tool_calls()
            assert stored_call.arguments == {"n": big, "f": 0.1}
            assert type(stored_call.arguments["n"]) is int
            assert again.storage.metadata.model_extra == {"seed": big, "neg": -(2**65)}
            (info,) = [i for i in await repo.list() if i.id == s.id]
            assert info.metadata.model_extra == {"seed": big, "neg": -(2**65)}
        before = await repo.list()
        for bad in (float("nan"), float("inf")):
            with pytest.raises(InvalidEntryError, match="JSON cannot carry"):
                await repo.create(metadata={"cwd": "/w", "v": bad})
        assert [i.id for i in await repo.list()] == [i.id for i in before]

    async def test_append_refuses_what_would_not_read_back(self, repo: SessionRepo) -> None:
        # found in review: each of these was appended, and the session then failed to open
        s = await repo.create()
        root = await s.append_message(user("start"))
        before = await snapshot(s)
        good = MessageEntry(parent_id=root, message=UserMessage(content=[TextContent(text="a")]))
        bad_entries: list[Any] = [
            OpaqueEntry(type="message", parent_id=root, x=1),  # a known type, opaque
            # model_copy does not validate: an opaque block with a known type slips in
            good.model_copy(
                update={
                    "message": good.message.model_copy(
                        update={"content": [OpaqueBlock(type="text")]}
                    )
                }
            ),
            good.model_copy(update={"timestamp": 5}),
        ]
        for bad in bad_entries:
            with pytest.raises(InvalidEntryError):
                await s.append_entry(bad)
        for bad_message in (
            TextContent(text="not a message"),
            SessionMetadata(cwd="/w"),
            OpaqueMessage(role="user", content="x"),
        ):
            with pytest.raises(InvalidEntryError):
                await s.append_message(bad_message)  # type: ignore[arg-type]
        assert await snapshot(s) == before
        # an unknown role with content of another shape is kept, and found by nothing
        await s.append_message({"role": "telepathy", "content": 5})
        assert await repo.search("telepathy") == []
        async with reopened(repo, s) as again:
            assert len(await again.get_entries()) == 2

    async def test_append_holds_what_readers_see(self, repo: SessionRepo) -> None:
        # found in review: appends whose JSON reads back fine still left the writing process
        # (and SQL labels / PostgreSQL search) holding the caller's object, not the entry read
        s = await repo.create()
        root = await s.append_message(user("start"))
        narwhal = {"role": "user", "content": "narwhal", "timestamp": 1}
        m = await s.append_entry(OpaqueEntry(type="message", parent_id=root, message=narwhal))
        await s.append_entry(OpaqueEntry(type="label", parent_id=m, targetId=root, label="LBL"))
        g = MessageEntry(parent_id=m, message=UserMessage(content="x"))
        dicts = g.message.model_copy(update={"content": [{"type": "text", "text": "wombat"}]})
        await s.append_entry(g.model_copy(update={"message": dicts}))
        await s.set_leaf_id(g.id)

        async def seen(session: Session, store: SessionRepo) -> tuple[Any, ...]:
            texts = [message_text(x) for x in (await session.build_context()).messages]
            kinds = [type(e).__name__ for e in await session.get_entries()]
            hits = [len(await store.search(w)) for w in ("narwhal", "wombat")]
            return texts, kinds, await session.get_label(root), hits

        here = await seen(s, repo)
        assert here == (
            ["start", "narwhal", "wombat"],
            ["MessageEntry", "MessageEntry", "LabelEntry", "MessageEntry", "LeafEntry"],
            "LBL",
            [1, 1],
        )
        async with reopened(repo, s) as again:
            other = open_repo(repo.url) if not repo.url.startswith("memory:") else repo
            try:
                assert await seen(again, other) == here
            finally:
                if other is not repo:
                    await other.close()

    async def test_unknown_entry_type_rejected(self, repo: SessionRepo) -> None:
        s = await repo.create()
        await s.append_message(user("a"))
        before = await snapshot(s)
        with pytest.raises(InvalidEntryError):
            await s.append_entry(
                {
                    "type": "hologram",
                    "id": "h1",
                    "parentId": None,
                    "timestamp": "2026-01-01T00:00:00.000Z",
                }
            )
        assert await snapshot(s) == before

    async def test_invalid_entries_rejected(self, repo: SessionRepo) -> None:
        s = await repo.create()
        await s.append_message(user("a"))
        before = await snapshot(s)
        bad: list[dict[str, Any]] = [
            {"type": "thinking_level_change", "parentId": None, "thinkingLevel": "ludicrous"},
            {"type": "model_change", "parentId": None, "provider": "p"},
            {"type": "message", "parentId": None, "message": {"role": "user"}},
            {"type": "label", "parentId": None},
            {
                "type": "message",
                "id": "",
                "parentId": None,
                "message": {"role": "user", "content": "x"},
            },
        ]
        for obj in bad:
            with pytest.raises(InvalidEntryError):
                await s.append_entry(obj)
        with pytest.raises(InvalidEntryError):
            await s.append_message({"role": "assistant", "content": "not a list"})
        with pytest.raises(InvalidEntryError):
            await s.append_thinking_level_change("ludicrous")  # type: ignore[arg-type]
        assert await snapshot(s) == before

    # ------------------------------------------------------------------ §2 the tree and the leaf

    async def test_path_entries_move_leaf_bookkeeping_does_not(self, repo: SessionRepo) -> None:
        s = await repo.create()
        assert await s.get_leaf_id() is None
        assert await s.get_branch() == []
        u = await s.append_message(user("q"))
        assert await s.get_leaf_id() == u
        lab = await s.append_label(u, "start")
        name = await s.append_session_name("named")
        assert await s.get_leaf_id() == u
        lab_entry = await s.get_entry(lab)
        name_entry = await s.get_entry(name)
        assert isinstance(lab_entry, LabelEntry) and lab_entry.parent_id == u
        assert isinstance(name_entry, SessionInfoEntry) and name_entry.parent_id == u
        a = await s.append_message(assistant("answer"))
        a_entry = await s.get_entry(a)
        assert a_entry is not None and a_entry.parent_id == u  # never under a bookkeeping entry
        for append in (
            s.append_model_change("p", "m"),
            s.append_thinking_level_change("high"),
            s.append_active_tools_change(["read"]),
            s.append_custom_entry("ext", {"k": 1}),
            s.append_custom_message_entry("ext", "hello"),
            s.append_branch_summary("", a),
        ):
            new = await append
            assert await s.get_leaf_id() == new
        branch = await s.get_branch()
        assert [e.type for e in branch] == [
            "message",
            "message",
            "model_change",
            "thinking_level_change",
            "active_tools_change",
            "custom",
            "custom_message",
            "branch_summary",
        ]

    async def test_set_leaf_id_appends_a_leaf_entry(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u1 = await s.append_message(user("one"))
        a1 = await s.append_message(assistant("two"))
        await s.set_leaf_id(u1)
        assert await s.get_leaf_id() == u1
        (leaf_entry,) = await s.get_entries(types={"leaf"})
        assert isinstance(leaf_entry, LeafEntry)
        assert leaf_entry.parent_id == a1 and leaf_entry.target_id == u1
        a2 = await s.append_message(assistant("other"))
        assert (await s.get_entry(a2)).parent_id == u1  # type: ignore[union-attr]
        await s.set_leaf_id(None)
        assert await s.get_leaf_id() is None
        assert await s.get_branch() == []
        r2 = await s.append_message(user("new root"))
        assert (await s.get_entry(r2)).parent_id is None  # type: ignore[union-attr]
        async with reopened(repo, s) as again:
            assert await again.get_leaf_id() == r2
            entries = await again.get_entries()
            assert leaf_of_log(entries) == r2

    async def test_set_leaf_id_rejections(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("one"))
        lab = await s.append_label(u, "x")
        before = await snapshot(s)
        with pytest.raises(EntryNotFoundError):
            await s.set_leaf_id("missing")
        with pytest.raises(InvalidEntryError):
            await s.set_leaf_id(lab)
        assert await snapshot(s) == before

    async def test_leaf_is_pure_function_of_log(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("a"))
        a = await s.append_message(assistant("b"))
        await s.set_leaf_id(u)
        await s.append_label(a, "x")
        await s.append_session_name("n")
        await s.append_entry(SessionInfoEntry(name="stray", parent_id=None))
        assert await s.get_leaf_id() == u
        async with reopened(repo, s) as again:
            assert await again.get_leaf_id() == u
            assert leaf_of_log(await again.get_entries()) == u
            assert await again.get_name() == "stray"

    async def test_stale_client_rename_keeps_branch(self, repo: SessionRepo) -> None:
        """LESSONS 12: a second client with a stale view renames; the first client's branch stays."""
        first = await repo.create()
        u = await first.append_message(user("q"))
        await first.append_message(assistant("a1"))
        stale = await repo.open(first.id)  # the second client opens now
        await first.set_leaf_id(u)
        b = await first.append_message(assistant("a2 on a new branch"))
        await stale.append_session_name("renamed by the stale client")
        async with reopened(repo, first) as resumed:
            assert await resumed.get_leaf_id() == b
            assert [e.id for e in await resumed.get_branch()] == [u, b]
            assert await resumed.get_name() == "renamed by the stale client"

    async def test_append_rejections_change_nothing(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("a"))
        leaf_entry_id = None
        await s.set_leaf_id(u)
        (leaf_entry,) = await s.get_entries(types={"leaf"})
        leaf_entry_id = leaf_entry.id
        before = await snapshot(s)
        cases: list[tuple[type[Exception], Entry]] = [
            (
                DuplicateEntryError,
                MessageEntry(id=u, parent_id=None, message=UserMessage(content="x")),
            ),
            (EntryNotFoundError, MessageEntry(parent_id="ghost", message=UserMessage(content="x"))),
            (
                InvalidEntryError,
                MessageEntry(parent_id=leaf_entry_id, message=UserMessage(content="x")),
            ),
            (EntryNotFoundError, LabelEntry(parent_id=u, target_id="ghost", label="l")),
            (EntryNotFoundError, LeafEntry(parent_id=u, target_id="ghost")),
            (EntryNotFoundError, BranchSummaryEntry(parent_id=u, summary="s", from_id="ghost")),
        ]
        for exc, entry in cases:
            with pytest.raises(exc) as err:
                await s.append_entry(entry)
            assert s.id in str(err.value)
            assert entry.id in str(err.value)
        with pytest.raises(EntryNotFoundError):
            await s.append_label("ghost", "x")
        with pytest.raises(EntryNotFoundError):
            await s.append_branch_summary("s", "ghost")
        assert await snapshot(s) == before

    async def test_append_entries_is_all_or_nothing(self, repo: SessionRepo) -> None:
        s = await repo.create()
        await s.append_message(user("a"))
        before = await snapshot(s)
        good = MessageEntry(id="g1", parent_id=None, message=UserMessage(content="x"))
        bad = MessageEntry(id="g2", parent_id="ghost", message=UserMessage(content="y"))
        with pytest.raises(EntryNotFoundError):
            await s.storage.append_entries([good, bad])
        dup = MessageEntry(id="g1", parent_id=None, message=UserMessage(content="z"))
        with pytest.raises(DuplicateEntryError):
            await s.storage.append_entries([good, dup])
        assert await snapshot(s) == before
        chained = [good, MessageEntry(id="g2", parent_id="g1", message=UserMessage(content="y"))]
        await s.storage.append_entries(chained)
        assert await s.get_leaf_id() == "g2"
        assert [e.id for e in await s.get_branch()] == ["g1", "g2"]

    async def test_get_branch_and_multiple_roots(self, repo: SessionRepo) -> None:
        s = await repo.create()
        r1 = await s.append_message(user("root one"))
        c1 = await s.append_message(assistant("child"))
        await s.set_leaf_id(None)
        r2 = await s.append_message(user("root two"))
        assert [e.id for e in await s.get_branch()] == [r2]
        assert [e.id for e in await s.get_branch(c1)] == [r1, c1]
        with pytest.raises(EntryNotFoundError):
            await s.get_branch("ghost")
        roots = await s.get_tree()
        assert [n.entry.id for n in roots] == [r1, r2]

    async def test_paths_through_bookkeeping_entries(self, repo: SessionRepo) -> None:
        """Files from other tools may chain path entries under label/session_info entries."""
        s = await repo.create()
        u = await s.append_message(user("a"))
        lab = await s.append_label(u, "mark")
        a = await s.append_entry(
            MessageEntry(
                parent_id=lab, message=AssistantMessage(content=[], provider="p", model="m")
            )
        )
        assert await s.get_leaf_id() == a
        assert [e.id for e in await s.get_branch()] == [u, a]
        (root,) = await s.get_tree()
        assert root.entry.id == u and [c.entry.id for c in root.children] == [a]
        assert root.label == "mark"
        fork = await s.fork(a)
        assert [e.id for e in await fork.get_branch()] == [u, a]
        copied = {e.id for e in await fork.get_entries()}
        assert lab in copied

    async def test_get_entries_cursor(self, repo: SessionRepo) -> None:
        s = await repo.create()
        ids = []
        for i in range(7):
            ids.append(await s.append_message(user(f"m{i}")))
            if i % 3 == 0:
                ids.append(await s.append_label(ids[-1], f"l{i}"))
        assert [e.id for e in await s.get_entries()] == ids
        seen: list[str] = []
        after = None
        while True:
            page = await s.get_entries(after=after, limit=3)
            if not page:
                break
            assert len(page) <= 3
            seen.extend(e.id for e in page)
            after = page[-1].id
        assert seen == ids
        assert [e.id for e in await s.get_entries(reverse=True)] == ids[::-1]
        back = await s.get_entries(after=ids[4], reverse=True, limit=2)
        assert [e.id for e in back] == [ids[3], ids[2]]
        labels = await s.get_entries(types={"label"})
        assert all(e.type == "label" for e in labels) and len(labels) == 3
        assert await s.get_entries(limit=0) == []
        with pytest.raises(EntryNotFoundError):
            await s.get_entries(after="ghost")

    async def test_labels_and_names(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("a"))
        assert await s.get_label(u) is None
        assert await s.get_name() is None
        assert await s.get_entry("ghost") is None
        await s.append_label(u, "one")
        await s.append_label(u, "two")
        assert await s.get_label(u) == "two"
        await s.append_label(u, None)
        assert await s.get_label(u) is None
        await s.append_label(u, "three")
        await s.append_label(u, "")
        assert await s.get_label(u) is None
        await s.append_label(u, "final")
        await s.append_session_name("first")
        await s.append_session_name("second")
        async with reopened(repo, s) as again:
            assert await again.get_label(u) == "final"
            assert await again.get_name() == "second"
            (root,) = await again.get_tree()
            assert root.label == "final"

    async def test_get_tree_children_in_append_order(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("root"))
        kids = []
        for i in range(3):
            await s.set_leaf_id(u)
            kids.append(await s.append_message(assistant(f"child {i}")))
        grandchild = await s.append_message(user("deeper"))
        (root,) = await s.get_tree()
        assert [c.entry.id for c in root.children] == kids
        assert [c.entry.id for c in root.children[2].children] == [grandchild]

    # ------------------------------------------------------------------ §3 context building

    async def test_context_plain_and_derived_state(self, repo: SessionRepo) -> None:
        s = await repo.create(metadata={"systemPrompt": "from metadata"})
        ctx = await s.build_context()
        assert ctx.messages == [] and ctx.thinking_level == "off" and ctx.model is None
        assert ctx.active_tool_names is None and ctx.system_prompt == "from metadata"
        await s.append_model_change("openai", "gpt-x")
        await s.append_message(user("hi"))
        ctx = await s.build_context()
        assert (ctx.model.provider, ctx.model.model_id) == ("openai", "gpt-x")  # type: ignore[union-attr]
        await s.append_message(assistant("yo", provider="anthropic", model="claude-y"))
        await s.append_thinking_level_change("high")
        await s.append_active_tools_change(["read", "bash"])
        ctx = await s.build_context(system_prompt="override")
        assert ctx.system_prompt == "override"
        assert (ctx.model.provider, ctx.model.model_id) == ("anthropic", "claude-y")  # type: ignore[union-attr]
        assert ctx.thinking_level == "high"
        assert ctx.active_tool_names == ["read", "bash"]
        assert _texts(ctx.messages) == ["hi", "yo"]
        await s.append_model_change("openai", "gpt-z")
        ctx = await s.build_context(system_prompt="")
        assert ctx.system_prompt == ""
        assert ctx.model.model_id == "gpt-z"  # type: ignore[union-attr]

    async def test_context_follows_the_leaf_and_leaf_argument(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("q"))
        a1 = await s.append_message(assistant("first answer"))
        await s.set_leaf_id(u)
        await s.append_message(assistant("second answer"))
        assert _texts((await s.build_context()).messages) == ["q", "second answer"]
        assert _texts((await s.build_context(a1)).messages) == ["q", "first answer"]
        with pytest.raises(EntryNotFoundError):
            await s.build_context("ghost")

    async def test_context_compaction_pointer_mode(self, repo: SessionRepo) -> None:
        s = await repo.create()
        await s.append_message(user("m0"))
        await s.append_message(assistant("m1"))
        k1 = await s.append_message(user("m2"))
        await s.append_compaction("old summary", 100, first_kept_entry_id=k1)
        await s.append_message(assistant("m3"))
        k2 = await s.append_message(user("m4"))
        await s.append_message(assistant("m5"))
        await s.append_compaction("new summary", 200, first_kept_entry_id=k2)
        await s.append_message(user("m6"))
        ctx = await s.build_context()
        assert _texts(ctx.messages) == [
            "[compactionSummary] new summary",
            "m4",
            "m5",
            "m6",
        ]
        assert isinstance(ctx.messages[0], CompactionSummaryMessage)
        assert ctx.messages[0].tokens_before == 200
        # kept range spanning the older compaction: it is dropped, its kept entries stay
        s2 = await repo.create()
        await s2.append_message(user("a"))
        keep = await s2.append_message(assistant("b"))
        await s2.append_compaction("c1", 10, first_kept_entry_id=keep)
        await s2.append_message(user("d"))
        await s2.append_compaction("c2", 20, first_kept_entry_id=keep)
        ctx2 = await s2.build_context()
        assert _texts(ctx2.messages) == ["[compactionSummary] c2", "b", "d"]

    async def test_context_compaction_retained_tail(self, repo: SessionRepo) -> None:
        s = await repo.create()
        await s.append_message(user("old"))
        await s.append_compaction(
            "sum",
            50,
            retained_tail=[user("kept 1"), assistant("kept 2")],  # type: ignore[list-item]
        )
        await s.append_message(user("after"))
        assert _texts((await s.build_context()).messages) == [
            "[compactionSummary] sum",
            "kept 1",
            "kept 2",
            "after",
        ]
        await s.append_compaction("empty tail", 60, retained_tail=[])
        assert _texts((await s.build_context()).messages) == ["[compactionSummary] empty tail"]

    async def test_context_compaction_kept_id_off_path(
        self, repo: SessionRepo, caplog: pytest.LogCaptureFixture
    ) -> None:
        s = await repo.create()
        u = await s.append_message(user("q"))
        other = await s.append_message(assistant("other branch"))
        await s.set_leaf_id(u)
        await s.append_message(assistant("this branch"))
        await s.append_compaction("sum", 5, first_kept_entry_id=other)
        await s.append_message(user("after"))
        with caplog.at_level(logging.WARNING, logger="sessiontree.context"):
            ctx = await s.build_context()
        assert _texts(ctx.messages) == ["[compactionSummary] sum", "after"]
        assert any("firstKeptEntryId" in r.getMessage() for r in caplog.records)

    async def test_context_projection_of_every_type(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("q"))
        await s.append_custom_message_entry("note", "visible note", display=False, details={"x": 1})
        await s.append_branch_summary("", u)
        await s.append_branch_summary("left a branch", u)
        await s.append_custom_entry("memo", {"text": "projected memo"})
        await s.append_custom_entry("ignored", {"text": "never seen"})
        await s.append_model_change("p", "m")
        seen: list[tuple[int, int]] = []

        def memo(entry: CustomEntry, index: int, entries: Sequence[Entry]) -> list[dict[str, Any]]:
            seen.append((index, len(entries)))
            assert entries[index] is entry
            return [user(entry.data["text"])]

        ctx = await s.build_context(entry_projectors={"memo": memo})
        kinds = [type(m).__name__ for m in ctx.messages]
        assert kinds == ["UserMessage", "CustomMessage", "BranchSummaryMessage", "UserMessage"]
        custom = ctx.messages[1]
        assert isinstance(custom, CustomMessage)
        assert (
            custom.custom_type == "note" and custom.display is False and custom.details == {"x": 1}
        )
        assert _texts(ctx.messages)[2:] == ["[branchSummary] left a branch", "projected memo"]
        assert seen == [(4, 7)]

    async def test_tool_pair_repair(self, repo: SessionRepo) -> None:
        s = await repo.create()
        await s.append_message(user("go"))
        await s.append_message(tool_result("orphan"))  # matches no call: dropped
        await s.append_message(assistant("", tool_call("c1"), tool_call("c2"), tool_call("c3")))
        await s.append_message(user("interjection"))  # results arrive after another message
        await s.append_message(tool_result("c2", "two"))
        await s.append_message(tool_result("c1", "one"))
        await s.append_message(tool_result("c1", "duplicate"))  # second result: dropped
        await s.append_message(assistant("", tool_call("c4")))  # newest turn: may still run
        ctx = await s.build_context()
        assert _texts(ctx.messages) == [
            "go",
            "",
            "result:c1",
            "result:c2",
            "result:c3",
            "interjection",
            "",
        ]
        lost = ctx.messages[4]
        assert isinstance(lost, ToolResultMessage) and lost.is_error
        assert LOST_RESULT_TEXT in message_text(lost)
        first = ctx.messages[2]
        assert isinstance(first, ToolResultMessage) and message_text(first) == "one"
        assert find_tool_pair_problems(ctx.messages) == []
        raw = await s.build_context(repair_tool_pairs=False)
        assert len(raw.messages) == 8
        assert find_tool_pair_problems(raw.messages) != []

    async def test_tool_pairs_survive_compaction_in_the_middle_of_a_batch(
        self, repo: SessionRepo
    ) -> None:
        """LESSONS 3/4: a kept window that starts with a tool result must not reach the model."""
        s = await repo.create()
        await s.append_message(user("go"))
        await s.append_message(assistant("", tool_call("c1")))
        kept = await s.append_message(tool_result("c1"))
        await s.append_compaction("sum", 10, first_kept_entry_id=kept)
        await s.append_message(user("next"))
        ctx = await s.build_context()
        assert not isinstance(ctx.messages[1], ToolResultMessage)
        assert find_tool_pair_problems(ctx.messages) == []

    # ------------------------------------------------------------------ §5 navigation and fork

    async def test_navigate_without_summary(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("q"))
        await s.append_message(assistant("a"))
        assert await s.navigate(u) is None
        assert await s.get_leaf_id() == u
        assert await s.get_entries(types={"branch_summary"}) == []
        async with reopened(repo, s) as again:
            assert await again.get_leaf_id() == u

    async def test_fork_at(self, repo: SessionRepo) -> None:
        s = await repo.create(metadata={"systemPrompt": "sp"})
        u = await s.append_message(user("q"))
        a = await s.append_message(assistant("a"))
        await s.append_label(u, "question")
        await s.append_label(a, "to be cleared")
        await s.append_label(a, None)
        later = await s.append_message(user("later"))
        original = await snapshot(s)
        fork = await s.fork(a)
        assert fork.id != s.id
        branch = await fork.get_branch()
        assert [dump_entry(e) for e in branch] == [dump_entry(e) for e in (await s.get_branch(a))]
        assert await fork.get_leaf_id() == a
        assert await fork.get_label(u) == "question"
        assert await fork.get_label(a) is None
        assert await fork.get_entry(later) is None
        meta = await fork.get_metadata()
        assert meta.parent_session_id == s.id and meta.forked_from_entry_id == a
        assert meta.system_prompt == "sp"
        new = await fork.append_message(user("only in the fork"))
        assert await s.get_entry(new) is None
        assert await snapshot(s) == original
        infos = {i.id: i for i in await repo.list()}
        assert infos[fork.id].parent_session_id == s.id
        async with reopened(repo, fork) as again:
            assert await again.get_leaf_id() == new

    async def test_fork_before(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("q"))
        a = await s.append_message(assistant("a"))
        u2 = await s.append_message(user("ask again differently"))
        fork = await s.fork(u2, position="before")
        assert [e.id for e in await fork.get_branch()] == [u, a]
        assert await fork.get_leaf_id() == a
        empty = await s.fork(u, position="before")
        assert await empty.get_leaf_id() is None
        assert await empty.get_entries() == []
        assert (await empty.get_metadata()).parent_session_id == s.id

    async def test_fork_via_repo_and_rejections(self, repo: SessionRepo) -> None:
        s = await repo.create()
        u = await s.append_message(user("q"))
        lab = await s.append_label(u, "l")
        before = await snapshot(s)
        count = len(await repo.list())
        fork = await repo.fork(s.id, u)
        assert [e.id for e in await fork.get_branch()] == [u]
        with pytest.raises(EntryNotFoundError):
            await s.fork("ghost")
        with pytest.raises(InvalidEntryError):
            await s.fork(lab)
        with pytest.raises(InvalidEntryError):
            await s.fork(u, position="sideways")  # type: ignore[arg-type]
        with pytest.raises(SessionNotFoundError):
            await repo.fork("no-such-session", u)
        assert await snapshot(s) == before
        assert len(await repo.list()) == count + 1

    # ------------------------------------------------------------------ §6 statistics

    async def test_stats(self, repo: SessionRepo) -> None:
        s = await repo.create()
        usage = {
            "input": 10,
            "output": 5,
            "cacheRead": 2,
            "cacheWrite": 1,
            "totalTokens": 18,
            "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.3},
        }
        await s.append_message(user("q"))
        await s.append_message(assistant("", tool_call("c1"), usage=usage))
        await s.append_message(tool_result("c1"))
        await s.append_message(assistant("done", usage=usage))
        await s.append_compaction(
            "s", 40, usage={"input": 100, "output": 7, "cost": {"total": 1.0}}
        )
        stats = await s.get_stats()
        assert stats.messages_by_role == {"user": 1, "assistant": 2, "toolResult": 1}
        assert stats.tool_calls == 1
        assert stats.input_tokens == 120 and stats.output_tokens == 17
        assert stats.cache_read_tokens == 4 and stats.cache_write_tokens == 2
        assert stats.cost == pytest.approx(1.6)
        assert stats.compactions == 1 and stats.entry_count == 5
