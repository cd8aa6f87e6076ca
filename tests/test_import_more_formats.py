"""GitHub Copilot CLI, OpenCode and OpenClaw imports: each mapping rule on a small file that
shows it (docs/interop.md). The real Copilot CLI files are checked with the collection
(tests/test_import_files.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sessiontree import MemoryRepo, import_session
from sessiontree.context import find_tool_pair_problems
from sessiontree.entries import CustomEntry, MessageEntry
from sessiontree.messages import (
    AssistantMessage,
    CustomMessage,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


# ----------------------------------------------------------------- Copilot CLI event log


def _event(
    kind: str, event_id: str, parent: str | None, second: int, **data: Any
) -> dict[str, Any]:
    return {
        "type": kind,
        "data": data,
        "id": event_id,
        "timestamp": f"2026-04-23T17:08:{second:02d}.000Z",
        "parentId": parent,
    }


def _copilot_log() -> list[dict[str, Any]]:
    calls = [
        {"toolCallId": "c1", "name": "view", "arguments": {"path": "a"}, "type": "function"},
        {"toolCallId": "c2", "name": "bash", "arguments": {"command": "ls"}, "type": "function"},
    ]
    return [
        _event(
            "session.start",
            "e01",
            None,
            0,
            sessionId="96ef38f0-9d09-45c3-8124-6448c36090ed",
            copilotVersion="1.0.34",
            context={"cwd": "/home/user/repo", "branch": "main"},
        ),
        _event("session.model_change", "e02", "e01", 1, newModel="claude-sonnet-4.6"),
        _event("system.message", "e03", "e02", 2, role="system", content="You are Copilot."),
        _event(
            "user.message",
            "e04",
            "e03",
            3,
            content="",
            transformedContent="<current_datetime>…</current_datetime> keep going",
            agentMode="autopilot",
        ),
        _event(
            "assistant.message",
            "e05",
            "e04",
            4,
            messageId="m1",
            content="",
            toolRequests=calls,
            reasoningText="Look first.",
            reasoningOpaque="c2lnbmF0dXJl",
            outputTokens=311,
        ),
        _event("tool.execution_start", "e06", "e05", 5, toolCallId="c1", toolName="view"),
        _event("tool.execution_start", "e07", "e06", 5, toolCallId="c2", toolName="bash"),
        # the tools finish in the other order: c2's result is written first
        _event(
            "tool.execution_complete",
            "e08",
            "e07",
            6,
            toolCallId="c2",
            model="claude-opus-4.7",
            success=False,
            result={"content": "ls: denied", "detailedContent": "exit 2"},
        ),
        _event(
            "tool.execution_complete",
            "e09",
            "e08",
            7,
            toolCallId="c1",
            model="claude-opus-4.7",
            success=True,
            result={"content": "file a"},
        ),
        # names the first-written result: hangs under the run's last result (c2's) instead
        _event("assistant.turn_end", "e10", "e08", 8, turnId="0"),
        _event("assistant.message", "e11", "gone", 9, messageId="m2", content="All done."),
        _event("session.shutdown", "e12", "e11", 10, shutdownType="routine"),
    ]


async def test_a_copilot_cli_event_log_maps_each_event_and_keeps_results_in_call_order(
    tmp_path: Path,
) -> None:
    path = _jsonl(tmp_path / "events.jsonl", _copilot_log())
    session, report = await import_session(path, MemoryRepo())
    assert report.format == "copilot-cli" and report.unreadable_lines == []
    assert session.id == "96ef38f0-9d09-45c3-8124-6448c36090ed"
    meta = await session.get_metadata()
    assert meta.cwd == "/home/user/repo"
    assert (meta.model_extra or {})["copilotCli"]["copilotVersion"] == "1.0.34"

    by_id = {e.id: e for e in await session.get_entries()}
    # results in call order (c1 then c2), one under the other; the turn end under the last
    assert by_id["e09"].parent_id == "e07" and by_id["e08"].parent_id == "e09"
    assert by_id["e10"].parent_id == "e08"
    # a parentId naming no earlier event: attached to the previous event, reported
    assert by_id["e11"].parent_id == "e10"
    [dangling] = report.dangling_parents
    assert (dangling.entry_id, dangling.parent_id, dangling.attached_to) == ("e11", "gone", "e10")
    assert {c.custom_type for c in report.custom_lines} == {
        "copilot-cli:session.start",
        "copilot-cli:session.model_change",
        "copilot-cli:tool.execution_start",
        "copilot-cli:assistant.turn_end",
        "copilot-cli:session.shutdown",
    }
    assert await session.get_leaf_id() == "e11"  # the newest message, not the shutdown

    ctx = await session.build_context(repair_tool_pairs=False)
    assert find_tool_pair_problems(ctx.messages) == []
    system, user, reply, first, second, answer = ctx.messages
    assert isinstance(system, CustomMessage) and system.display is False
    assert system.custom_type == "copilot-cli:system"
    # empty content: the text the CLI sent instead; the rest of the event stays on the entry
    assert isinstance(user, UserMessage) and message_text(user).endswith("keep going")
    user_entry = by_id["e04"]
    assert user_entry.model_extra is not None
    assert user_entry.model_extra["source"]["event"]["data"]["agentMode"] == "autopilot"
    assert isinstance(reply, AssistantMessage)
    thinking, call1, call2 = reply.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Look first."
    assert thinking.thinking_signature == "c2lnbmF0dXJl"
    assert isinstance(call1, ToolCall) and (call1.id, call1.arguments) == ("c1", {"path": "a"})
    assert isinstance(call2, ToolCall) and call2.id == "c2"
    assert reply.usage is not None and reply.usage.output == 311
    # the tool completions name the model that ran the turn; the newest model_change otherwise
    assert reply.model == "claude-opus-4.7"
    assert isinstance(answer, AssistantMessage) and answer.model == "claude-sonnet-4.6"
    assert isinstance(first, ToolResultMessage) and first.tool_call_id == "c1"
    assert not first.is_error and message_text(first) == "file a"
    assert isinstance(second, ToolResultMessage) and second.tool_call_id == "c2"
    assert second.is_error and message_text(second) == "ls: denied"
    assert second.tool_name == "bash" and second.details["result"]["detailedContent"] == "exit 2"


async def test_a_grown_copilot_cli_event_log_gives_the_same_entry_ids(tmp_path: Path) -> None:
    rows = _copilot_log()
    short = _jsonl(tmp_path / "short.jsonl", rows[:9])
    full = _jsonl(tmp_path / "full.jsonl", rows)
    s1, _ = await import_session(short, MemoryRepo())
    s2, _ = await import_session(full, MemoryRepo())
    ids1 = [e.id for e in await s1.get_entries() if e.type != "leaf"]
    ids2 = [e.id for e in await s2.get_entries() if e.type != "leaf"]
    assert ids2[: len(ids1)] == ids1


# ----------------------------------------------------------------- Copilot CLI legacy state


def _copilot_state() -> dict[str, Any]:
    def call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "function": {"arguments": json.dumps(args), "name": name},
            "id": call_id,
            "type": "function",
        }

    return {
        "sessionId": "06141331-92e8-4e9e-8bbb-9b7a729eb01a",
        "startTime": "2025-10-11T11:40:20.882Z",
        "chatMessages": [
            {"role": "user", "content": "optimise memory"},
            {"content": "Let me look.", "role": "assistant"},
            {"role": "assistant", "tool_calls": [call("t1", "view", {"path": "."})]},
            {"role": "assistant", "tool_calls": [call("t2", "bash", {"command": "ls"})]},
            {"role": "tool", "tool_call_id": "t1", "content": "src"},
            {"role": "tool", "tool_call_id": "t2", "content": "Cargo.toml"},
            {"content": "Done.", "role": "assistant"},
        ],
        "timeline": [
            {"id": "i1", "timestamp": "2025-10-11T11:40:22.635Z", "type": "info", "text": "hi"},
            {"id": "u1", "timestamp": "2025-10-11T11:40:24.449Z", "type": "user", "text": "x"},
            {
                "id": "a1",
                "timestamp": "2025-10-11T11:40:31.000Z",
                "type": "copilot",
                "text": "Let me look.",
            },
            {
                "type": "tool_call_completed",
                "id": "r2",
                "timestamp": "2025-10-11T11:40:33.000Z",
                "callId": "t2",
                "name": "bash",
                "result": "{'type': 'success'}",
            },
        ],
    }


async def test_copilot_cli_legacy_state_makes_one_turn_of_consecutive_assistant_messages(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session_state.json"
    path.write_text(json.dumps(_copilot_state(), indent=4))
    session, report = await import_session(path, MemoryRepo())
    assert report.format == "copilot-cli"
    assert session.id == "06141331-92e8-4e9e-8bbb-9b7a729eb01a"
    entries = await session.get_entries()
    timeline = entries[0]
    assert isinstance(timeline, CustomEntry) and timeline.custom_type == "copilot-cli:timeline"
    assert len(timeline.data) == 4  # kept whole
    ctx = await session.build_context(repair_tool_pairs=False)
    assert find_tool_pair_problems(ctx.messages) == []
    user, turn, r1, r2, answer = ctx.messages
    assert isinstance(user, UserMessage) and message_text(user) == "optimise memory"
    assert isinstance(turn, AssistantMessage)
    assert [b.type for b in turn.content] == ["text", "toolCall", "toolCall"]
    assert isinstance(turn.content[2], ToolCall) and turn.content[2].arguments == {"command": "ls"}
    assert isinstance(r1, ToolResultMessage) and r1.tool_name == "view"
    assert isinstance(r2, ToolResultMessage) and message_text(r2) == "Cargo.toml"
    assert isinstance(answer, AssistantMessage) and message_text(answer) == "Done."
    # times (and ids) from the timeline where it names the message; else the previous time
    by_message = {id(e.message): e for e in entries if isinstance(e, MessageEntry)}
    assert [by_message[id(m)].timestamp for m in ctx.messages] == [
        "2025-10-11T11:40:24.449Z",
        "2025-10-11T11:40:31.000Z",
        "2025-10-11T11:40:31.000Z",
        "2025-10-11T11:40:33.000Z",
        "2025-10-11T11:40:33.000Z",
    ]
    assert [by_message[id(m)].id for m in ctx.messages][:4:3] == ["u1", "r2"]
    assert await session.get_leaf_id() == by_message[id(answer)].id
