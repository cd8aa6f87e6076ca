"""Context building reads the branch from the newest compaction's start, on every backend,
and builds exactly the context the whole branch gives."""

from __future__ import annotations

from typing import Any

import pytest

from _compaction_support import tool_rounds
from sessiontree import CompactionEntry, Session, SessionRepo
from sessiontree.compaction import CompactionSettings, compact
from sessiontree.context import SessionContext, build_context_from_path, context_start
from sessiontree.entries import CompactionDetails

KEEP = CompactionSettings(keep_recent_tokens=600)
FULL_STATE = {"model": None, "thinkingLevel": "off", "activeToolNames": None}


async def whole_branch_context(session: Session) -> SessionContext:
    """The context built from the whole branch, as before the partial read."""
    path = await session.storage.get_branch()
    return build_context_from_path(
        path, metadata_system_prompt=session.storage.metadata.system_prompt
    )


async def assert_same_context(session: Session) -> tuple[int, int]:
    """Same context both ways (also after a reopen); returns (entries read, whole branch)."""
    built = await session.build_context()
    assert built == await whole_branch_context(session)
    partial = await session.storage.get_context_branch()  # type: ignore[attr-defined]
    return len(partial), len(await session.storage.get_branch())


@pytest.mark.parametrize("mode", ["pointer", "retained_tail"])
async def test_a_compaction_with_a_snapshot_limits_what_is_read(
    repo: SessionRepo, mode: str
) -> None:
    s = await repo.create()
    await s.append_model_change("anthropic", "claude-sonnet-4-5")
    await s.append_thinking_level_change("high")
    await s.append_active_tools_change(["bash", "read"])
    await tool_rounds(s, 8)
    await s.append_label((await s.get_branch())[5].id, "early")
    await s.append_custom_entry("note", {"x": 1})
    first = await compact(s, settings=KEEP, mode=mode)  # type: ignore[arg-type]
    assert first.details is not None and "state" in (first.details.model_extra or {})
    await tool_rounds(s, 4, prefix="q")
    await s.append_thinking_level_change("low")
    read, whole = await assert_same_context(s)
    assert read < whole
    second = await compact(s, settings=KEEP, mode=mode)  # type: ignore[arg-type]
    await tool_rounds(s, 2, prefix="z")
    read, whole = await assert_same_context(s)
    assert read < whole
    start = context_start(second)
    assert start is not None
    partial = await s.storage.get_context_branch()  # type: ignore[attr-defined]
    assert partial[0].id == start
    reopened = await repo.open(s.id)
    assert await reopened.build_context() == await whole_branch_context(reopened)
    ctx = await reopened.build_context()
    assert ctx.thinking_level == "low"
    assert ctx.active_tool_names == ["bash", "read"]


async def add_compaction(s: Session, **fields: Any) -> CompactionEntry:
    c = CompactionEntry(parent_id=await s.get_leaf_id(), summary="earlier work", **fields)
    await s.append_entry(c)
    return c


@pytest.mark.parametrize(
    "state",
    [
        None,  # no snapshot: everything is read
        {"thinkingLevel": "off", "activeToolNames": None},  # no model key: older one counts
        {"model": None, "thinkingLevel": "bogus", "activeToolNames": None},
        {"model": {"provider": "p"}, "thinkingLevel": "off", "activeToolNames": None},
        {"model": None, "thinkingLevel": "off"},
    ],
)
async def test_an_incomplete_snapshot_reads_the_whole_branch(
    repo: SessionRepo, state: dict[str, Any] | None
) -> None:
    s = await repo.create()
    await s.append_model_change("openai", "gpt-5")
    await s.append_active_tools_change(["bash"])
    await tool_rounds(s, 3)
    kept = (await s.get_branch())[-4].id
    details = CompactionDetails() if state is None else CompactionDetails(state=state)
    await add_compaction(s, first_kept_entry_id=kept, details=details)
    await tool_rounds(s, 1, prefix="q")
    read, whole = await assert_same_context(s)
    assert read == whole


@pytest.mark.parametrize(
    "fields",
    [
        {"first_kept_entry_id": "not-on-the-path"},  # warning case: nothing older kept
        {"retained_tail": []},
        {"first_kept_entry_id": None},
    ],
)
async def test_unusual_compactions_build_the_same_context(
    repo: SessionRepo, fields: dict[str, Any]
) -> None:
    s = await repo.create()
    await s.append_thinking_level_change("medium")
    await tool_rounds(s, 3)
    await add_compaction(s, details=CompactionDetails(state=FULL_STATE), **fields)
    await tool_rounds(s, 1, prefix="q")
    await assert_same_context(s)


async def test_a_compaction_at_the_root_and_an_explicit_leaf(repo: SessionRepo) -> None:
    s = await repo.create()
    root = CompactionEntry(
        summary="s",
        first_kept_entry_id="gone",
        details=CompactionDetails(state=FULL_STATE),
    )
    await s.append_entry(root)
    await tool_rounds(s, 2)
    await assert_same_context(s)
    leaf = (await s.get_branch())[3].id
    assert await s.build_context(leaf_id=leaf) == build_context_from_path(
        await s.storage.get_branch(leaf)
    )
