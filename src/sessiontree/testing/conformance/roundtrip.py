"""Conformance: what is appended reads back exactly, and what would not read back is refused (capability ``roundtrip``)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from sessiontree.entries import (
    MessageEntry,
    OpaqueEntry,
    dump_entry,
)
from sessiontree.errors import (
    InvalidEntryError,
)
from sessiontree.messages import (
    AssistantMessage,
    OpaqueBlock,
    OpaqueMessage,
    TextContent,
    UserMessage,
    message_text,
)
from sessiontree.metadata import SessionMetadata
from sessiontree.repos.base import SessionRepo
from sessiontree.session import Session
from sessiontree.testing.builders import assistant, user
from sessiontree.testing.conformance._base import (
    Conformance,
    Reopen,
    reopened,
    snapshot,
)

__all__ = ["RoundTripConformance"]


class RoundTripConformance(Conformance):
    """What is appended reads back exactly, and what would not read back is refused."""

    capability: ClassVar[str] = "roundtrip"

    async def test_unknown_keys_roles_and_blocks_survive(
        self, repo: SessionRepo, reopen: Reopen
    ) -> None:
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
        async with reopened(reopen, s) as again:
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

    async def test_values_survive_exactly(self, repo: SessionRepo, reopen: Reopen) -> None:
        # integers beyond 64 bits read back as int, not float; metadata holding NaN is
        # refused alike by every backend (not stored as null or as a bare NaN)
        big = 2**70 + 1
        s = await repo.create(metadata={"cwd": "/w", "seed": big, "neg": -(2**65)})
        call = {"type": "toolCall", "id": "c1", "name": "n", "arguments": {"n": big, "f": 0.1}}
        await s.append_message(user("numbers"))
        await s.append_message(assistant("", call))
        async with reopened(reopen, s) as again:
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

    async def test_append_refuses_what_would_not_read_back(
        self, repo: SessionRepo, reopen: Reopen
    ) -> None:
        # each of these would be stored and then make the session fail to open: refused
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
        if "search" in self.capabilities:
            assert await repo.search("telepathy") == []
        async with reopened(reopen, s) as again:
            assert len(await again.get_entries()) == 2

    async def test_append_holds_what_readers_see(self, repo: SessionRepo, reopen: Reopen) -> None:
        # the writing process (and SQL labels / PostgreSQL search) holds the entry as it reads
        # back, not the caller's object
        s = await repo.create()
        root = await s.append_message(user("start"))
        narwhal = {"role": "user", "content": "narwhal", "timestamp": 1}
        m = await s.append_entry(OpaqueEntry(type="message", parent_id=root, message=narwhal))
        await s.append_entry(OpaqueEntry(type="label", parent_id=m, targetId=root, label="LBL"))
        g = MessageEntry(parent_id=m, message=UserMessage(content="x"))
        dicts = g.message.model_copy(update={"content": [{"type": "text", "text": "wombat"}]})
        await s.append_entry(g.model_copy(update={"message": dicts}))
        await s.set_leaf_id(g.id)

        searchable = "search" in self.capabilities

        async def seen(session: Session, store: SessionRepo) -> tuple[Any, ...]:
            texts = [message_text(x) for x in (await session.build_context()).messages]
            kinds = [type(e).__name__ for e in await session.get_entries()]
            hits = None  # not asked of a backend without search
            if searchable:
                hits = [len(await store.search(w)) for w in ("narwhal", "wombat")]
            return texts, kinds, await session.get_label(root), hits

        here = await seen(s, repo)
        assert here == (
            ["start", "narwhal", "wombat"],
            ["MessageEntry", "MessageEntry", "LabelEntry", "MessageEntry", "LeafEntry"],
            "LBL",
            [1, 1] if searchable else None,
        )
        async with reopen() as other:
            again = await other.open(s.id)
            assert await seen(again, other) == here

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
