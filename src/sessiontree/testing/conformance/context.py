"""Conformance: context building: derived state, compaction, projection, tool-pair repair (capability ``context``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from sessiontree.context import LOST_RESULT_TEXT, find_tool_pair_problems
from sessiontree.entries import (
    CustomEntry,
    Entry,
)
from sessiontree.errors import (
    EntryNotFoundError,
)
from sessiontree.messages import (
    CompactionSummaryMessage,
    CustomMessage,
    ToolResultMessage,
    message_text,
)
from sessiontree.repos.base import SessionRepo
from sessiontree.testing.builders import assistant, tool_call, tool_result, user
from sessiontree.testing.conformance._base import (
    Conformance,
)
from sessiontree.testing.conformance._base import (
    texts as _texts,
)

__all__ = ["ContextConformance"]


class ContextConformance(Conformance):
    """Context building: derived state, compaction, projection, tool-pair repair."""

    capability: ClassVar[str] = "context"

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
            retained_tail=[user("kept 1"), assistant("kept 2")],
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
        """A kept window that starts with a tool result must not reach the model."""
        s = await repo.create()
        await s.append_message(user("go"))
        await s.append_message(assistant("", tool_call("c1")))
        kept = await s.append_message(tool_result("c1"))
        await s.append_compaction("sum", 10, first_kept_entry_id=kept)
        await s.append_message(user("next"))
        ctx = await s.build_context()
        assert not isinstance(ctx.messages[1], ToolResultMessage)
        assert find_tool_pair_problems(ctx.messages) == []
