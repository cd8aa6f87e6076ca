"""Claude Code transcripts as Claude Code 2.1 writes them (docs/interop.md): replies over several
lines, API-error lines, compaction boundaries, progress/hook/snapshot side records.

The files are built from the lines of a real sub-agent transcript (its ids, session and
message shapes), rearranged the way the newer Claude Code builds write them.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from session_files import VENDORED
from sessiontree.context import LOST_RESULT_TEXT, find_tool_pair_problems
from sessiontree.entries import CompactionEntry, CustomEntry, MessageEntry
from sessiontree.interop import import_session
from sessiontree.messages import AssistantMessage, CompactionSummaryMessage
from sessiontree.repos import MemoryRepo
from sessiontree.verify import verify_session

REAL = VENDORED / "claude-code" / "agent-a0294d5.jsonl"
BASE = json.loads(REAL.read_bytes().split(b"\n")[0])  # the Task prompt: sessionId, cwd, ...


def line(uuid: str, parent: str | None, kind: str, **fields: Any) -> dict[str, Any]:
    return {
        **{k: BASE[k] for k in ("sessionId", "cwd", "version", "gitBranch") if k in BASE},
        "isSidechain": False,
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "timestamp": f"2026-01-06T04:{len(uuid):02d}:00.000Z",
        **fields,
    }


def reply(uuid: str, parent: str, message_id: str, *blocks: dict[str, Any], **kw: Any) -> Any:
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": kw.pop("model", "claude-opus-4-5"),
        "content": list(blocks),
        "stop_reason": kw.pop("stop_reason", None),
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return line(uuid, parent, "assistant", message=message, **kw)


def result(uuid: str, parent: str, call: str) -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": call, "content": f"output of {call}"}]
    return line(uuid, parent, "user", message={"role": "user", "content": content})


def ask(uuid: str, parent: str | None, text: str) -> dict[str, Any]:
    return line(uuid, parent, "user", message={"role": "user", "content": text})


def call(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}}


def write(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in rows))
    return path


async def test_one_reply_over_several_lines_is_one_message_with_its_results(
    tmp_path: Path,
) -> None:
    # Claude Code 2.1: the second call's line hangs under the first call's line, beside the
    # first result; the conversation goes on from the second result
    rows = [
        ask("u1", None, "list both dirs"),
        reply("a1", "u1", "msg_1", {"type": "thinking", "thinking": "two calls", "signature": "s"}),
        reply("a2", "a1", "msg_1", call("c1")),
        result("r1", "a2", "c1"),
        reply("a3", "a2", "msg_1", call("c2"), stop_reason="tool_use"),
        result("r2", "a3", "c2"),
        reply("a4", "r2", "msg_2", {"type": "text", "text": "both listed"}, stop_reason="end_turn"),
    ]
    session, report = await import_session(write(tmp_path, rows), MemoryRepo())

    entries = [e for e in await session.get_entries() if e.type != "leaf"]
    assistants = [
        e for e in entries if isinstance(e, MessageEntry) and e.message.role == "assistant"
    ]
    assert [e.id for e in assistants] == ["a1", "a4"]
    first = assistants[0].message
    assert isinstance(first, AssistantMessage)
    assert [b.type for b in first.content] == ["thinking", "toolCall", "toolCall"]
    assert first.stop_reason == "toolUse" and first.usage is not None
    assert first.usage.input == 10  # one copy of the reply's usage, not three
    # no fork: each entry has at most one child, and the leaf's branch holds everything
    assert max(Counter(e.parent_id for e in entries).values()) == 1
    assert await session.get_leaf_id() == "a4"
    ctx = await session.build_context()
    assert [m.role for m in ctx.messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]
    assert not any(LOST_RESULT_TEXT in str(getattr(m, "content", "")) for m in ctx.messages)
    assert find_tool_pair_problems(ctx.messages) == []
    # every line is accounted for: merged lines are kept in the entry's source
    source = assistants[0].source  # type: ignore[attr-defined]
    assert [m["line"] for m in source["merged"]] == [3, 5]
    assert report.dangling_parents == []


async def test_api_error_lines_are_error_replies_that_do_not_set_the_model(tmp_path: Path) -> None:
    rows = [
        ask("u1", None, "hello"),
        reply("a1", "u1", "msg_1", {"type": "text", "text": "hi"}, stop_reason="end_turn"),
        ask("u2", "a1", "more"),
        reply(
            "a2",
            "u2",
            "msg_err",
            {"type": "text", "text": "API Error: 429 rate_limit_error"},
            model="<synthetic>",
            isApiErrorMessage=True,
            stop_reason="stop_sequence",
        ),
    ]
    session, _ = await import_session(write(tmp_path, rows), MemoryRepo())
    error = await session.get_entry("a2")
    assert isinstance(error, MessageEntry) and isinstance(error.message, AssistantMessage)
    assert error.message.stop_reason == "error"
    assert error.message.error_message == "API Error: 429 rate_limit_error"
    assert error.message.model is None
    ctx = await session.build_context()
    assert ctx.model is not None and ctx.model.model_id == "claude-opus-4-5"
    assert await session.get_leaf_id() == "a2"


async def test_a_compact_boundary_is_a_compaction_whose_summary_starts_the_context(
    tmp_path: Path,
) -> None:
    summary = "This session is being continued from a previous conversation. Summary: ls ran."
    rows = [
        ask("u1", None, "first question"),
        reply("a1", "u1", "msg_1", {"type": "text", "text": "first answer"}),
        line(
            "b1",
            None,
            "system",
            subtype="compact_boundary",
            content="Conversation compacted",
            logicalParentUuid="a1",
            compactMetadata={"trigger": "auto", "preTokens": 155000},
        ),
        {**ask("s1", "b1", summary), "isCompactSummary": True, "isVisibleInTranscriptOnly": True},
        ask("u2", "s1", "next question"),
        reply("a2", "u2", "msg_2", {"type": "text", "text": "next answer"}),
    ]
    session, report = await import_session(write(tmp_path, rows), MemoryRepo())
    compaction = await session.get_entry("b1")
    assert isinstance(compaction, CompactionEntry)
    assert compaction.parent_id == "a1" and compaction.summary == summary
    assert compaction.tokens_before == 155000
    u2 = await session.get_entry("u2")
    assert u2 is not None and u2.parent_id == "b1"
    assert await session.find_entry("s1") is None  # the summary line is part of the compaction
    stats = await session.get_stats()
    assert stats.roots == 1 and stats.compactions == 1
    ctx = await session.build_context()
    assert isinstance(ctx.messages[0], CompactionSummaryMessage)
    assert ctx.messages[0].summary == summary
    assert [m.role for m in ctx.messages[1:]] == ["user", "assistant"]
    assert report.custom_lines == []


async def test_progress_hook_and_snapshot_lines_chain_without_forks(tmp_path: Path) -> None:
    rows = [
        {
            "type": "file-history-snapshot",
            "messageId": "u1",
            "isSnapshotUpdate": False,
            "snapshot": {
                "messageId": "u1",
                "trackedFileBackups": {},
                "timestamp": "2026-01-06T04:00:05.000Z",
            },
            "timestamp": "1970-01-01T00:00:00.000Z",
        },
        ask("u1", None, "run it"),
        reply("a1", "u1", "msg_1", call("c1"), stop_reason="tool_use"),
        line(
            "p1",
            "a1",
            "progress",
            data={"type": "hook_progress", "hookEvent": "PreToolUse"},
            toolUseID="c1",
            parentToolUseID="c1",
        ),
        line(
            "p2",
            "p1",
            "progress",
            data={"type": "bash_progress", "output": "..."},
            toolUseID="c1",
            parentToolUseID="c1",
        ),
        result("r1", "a1", "c1"),
        line("h1", "a1", "system", subtype="stop_hook_summary", hookCount=1),
        {
            "type": "file-history-snapshot",
            "messageId": "r1",
            "isSnapshotUpdate": True,
            "snapshot": {
                "messageId": "r1",
                "trackedFileBackups": {},
                "timestamp": "2026-01-06T04:00:09.000Z",
            },
            "timestamp": "1970-01-01T00:00:00.000Z",
        },
        reply("a2", "r1", "msg_2", {"type": "text", "text": "done"}, stop_reason="end_turn"),
    ]
    session, report = await import_session(write(tmp_path, rows), MemoryRepo())
    entries = [e for e in await session.get_entries() if e.type != "leaf"]
    assert len(entries) == len(rows)
    assert max(Counter(e.parent_id for e in entries).values()) == 1  # one chain, no fork
    assert (await session.get_stats()).roots == 1
    branch = await session.get_branch()
    assert len(branch) == len(rows)
    assert await session.get_leaf_id() == "a2"
    snapshots = [e for e in entries if isinstance(e, CustomEntry) and "snapshot" in e.custom_type]
    assert [s.timestamp for s in snapshots] == [
        "2026-01-06T04:00:05.000Z",
        "2026-01-06T04:00:09.000Z",
    ]
    assert all(not e.timestamp.startswith("1970") for e in entries)
    ctx = await session.build_context()
    assert [m.role for m in ctx.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert find_tool_pair_problems(ctx.messages) == []
    assert len(report.custom_lines) == 5


async def test_results_of_one_reply_chain_whichever_line_they_name(tmp_path: Path) -> None:
    # the first results chain off each other, a late one names the reply's first line
    rows = [
        ask("u1", None, "three calls"),
        reply("a1", "u1", "msg_1", call("c1")),
        reply("a2", "a1", "msg_1", call("c2")),
        reply("a3", "a2", "msg_1", call("c3"), stop_reason="tool_use"),
        result("r1", "a3", "c1"),
        result("r2", "r1", "c2"),
        result("r3", "a1", "c3"),
        reply("a4", "r3", "msg_2", {"type": "text", "text": "done"}, stop_reason="end_turn"),
    ]
    session, _ = await import_session(write(tmp_path, rows), MemoryRepo())
    entries = [e for e in await session.get_entries() if e.type != "leaf"]
    assert max(Counter(e.parent_id for e in entries).values()) == 1
    ctx = await session.build_context(repair_tool_pairs=False)
    assert [m.role for m in ctx.messages] == ["user", "assistant", *["toolResult"] * 3, "assistant"]
    assert find_tool_pair_problems(ctx.messages) == []


async def test_parallel_results_written_out_of_call_order_are_stored_in_call_order(
    tmp_path: Path,
) -> None:
    # the second tool finished first: its result line comes first, and the conversation goes
    # on from the last result written, which answers the first call
    rows = [
        ask("u1", None, "two agents"),
        reply("a1", "u1", "msg_1", call("c1")),
        reply("a2", "a1", "msg_1", call("c2"), stop_reason="tool_use"),
        result("r2", "a2", "c2"),
        result("r1", "a1", "c1"),
        reply("a3", "r1", "msg_2", {"type": "text", "text": "both done"}, stop_reason="end_turn"),
    ]
    session, _ = await import_session(write(tmp_path, rows), MemoryRepo())
    entries = [e for e in await session.get_entries() if e.type != "leaf"]
    assert max(Counter(e.parent_id for e in entries).values()) == 1
    ctx = await session.build_context(repair_tool_pairs=False)
    assert [getattr(m, "tool_call_id", m.role) for m in ctx.messages] == [
        "user",
        "assistant",
        "c1",
        "c2",
        "assistant",
    ]
    assert find_tool_pair_problems(ctx.messages) == []
    found = await verify_session(session)
    assert (found.problems, found.warnings) == ([], [])


async def test_a_record_written_before_the_line_it_hangs_under_keeps_that_line_on_the_branch(
    tmp_path: Path,
) -> None:
    # an attachment line names the tool result written after it; the reply after names the
    # attachment: the result must stay on the branch, not become a side branch
    rows = [
        ask("u1", None, "run it"),
        reply("a1", "u1", "msg_1", {"type": "text", "text": "running"}),
        line("att", "r1", "attachment", attachment={"type": "task_reminder", "content": []}),
        reply("a2", "a1", "msg_1", call("c1"), stop_reason="tool_use"),
        result("r1", "a2", "c1"),
        reply("a3", "att", "msg_2", {"type": "text", "text": "ran"}, stop_reason="end_turn"),
    ]
    session, report = await import_session(write(tmp_path, rows), MemoryRepo())
    entries = [e for e in await session.get_entries() if e.type != "leaf"]
    assert max(Counter(e.parent_id for e in entries).values()) == 1
    assert [e.id for e in await session.get_branch()] == ["u1", "a1", "r1", "att", "a3"]
    assert await session.get_leaf_id() == "a3"
    ctx = await session.build_context(repair_tool_pairs=False)
    assert find_tool_pair_problems(ctx.messages) == []
    assert report.dangling_parents == []


async def test_results_chained_off_each_other_out_of_call_order_are_stored_in_call_order(
    tmp_path: Path,
) -> None:
    # Claude Code 2.0: each result line names the result written before it, and the second
    # call's result was written first
    rows = [
        ask("u1", None, "two reads"),
        reply("a1", "u1", "msg_1", call("c1")),
        reply("a2", "a1", "msg_1", call("c2"), stop_reason="tool_use"),
        result("r2", "a2", "c2"),
        result("r1", "r2", "c1"),
        reply("a3", "r1", "msg_2", {"type": "text", "text": "done"}, stop_reason="end_turn"),
    ]
    session, _ = await import_session(write(tmp_path, rows), MemoryRepo())
    entries = [e for e in await session.get_entries() if e.type != "leaf"]
    assert max(Counter(e.parent_id for e in entries).values()) == 1
    ctx = await session.build_context(repair_tool_pairs=False)
    assert [getattr(m, "tool_call_id", m.role) for m in ctx.messages] == [
        "user",
        "assistant",
        "c1",
        "c2",
        "assistant",
    ]
    assert (await verify_session(session)).warnings == []


async def test_every_vendored_claude_code_file_verifies_strictly() -> None:
    for path in sorted((VENDORED / "claude-code").glob("*.jsonl")):
        session, _ = await import_session(path, MemoryRepo())
        found = await verify_session(session)
        assert (found.problems, found.warnings) == ([], []), path.name


async def test_a_call_id_used_again_in_a_later_turn_belongs_to_the_later_reply(
    tmp_path: Path,
) -> None:
    # models and agents reuse call ids across turns: a result answers the newest reply that
    # made a call of its id, so the later turn stays on the branch
    rows = [
        ask("u1", None, "two reads"),
        reply("a1", "u1", "msg_1", call("c1"), call("c2"), stop_reason="tool_use"),
        result("r1", "a1", "c1"),
        result("r2", "r1", "c2"),
        reply("a2", "r2", "msg_2", {"type": "text", "text": "both read"}, stop_reason="end_turn"),
        ask("u2", "a2", "again"),
        reply("a3", "u2", "msg_3", call("c1"), stop_reason="tool_use"),
        result("r3", "a3", "c1"),
        reply("a4", "r3", "msg_4", {"type": "text", "text": "read again"}, stop_reason="end_turn"),
    ]
    session, _ = await import_session(write(tmp_path, rows), MemoryRepo())
    assert [e.id for e in await session.get_branch()] == [
        "u1",
        "a1",
        "r1",
        "r2",
        "a2",
        "u2",
        "a3",
        "r3",
        "a4",
    ]
    assert (await verify_session(session)).warnings == []
