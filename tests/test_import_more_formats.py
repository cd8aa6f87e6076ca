"""GitHub Copilot CLI, OpenCode and OpenClaw imports: each mapping rule on a small file that
shows it (docs/interop.md). The real Copilot CLI files are checked with the collection
(tests/test_import_files.py)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from backends import unavailable
from session_files import ROOT
from sessiontree.cli.importing import collect_files
from sessiontree.context import find_tool_pair_problems
from sessiontree.entries import CompactionEntry, CustomEntry, MessageEntry
from sessiontree.errors import CorruptSessionError
from sessiontree.interop import database_sessions, import_session
from sessiontree.messages import (
    AssistantMessage,
    CustomMessage,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from sessiontree.repos import MemoryRepo


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


# ----------------------------------------------------------------- OpenCode

SHARED_EXTRA = ROOT.parent / "shared" / "data" / "sessions-extra"
SES = "ses_18684d584ffe1JuGPUt8v6Igr8"
REAL_OPENCODE = SHARED_EXTRA / "set3" / "opencode" / "t8v6Igr8"


def _part(message: str, part_id: str, kind: str, **fields: Any) -> dict[str, Any]:
    return {"id": part_id, "sessionID": SES, "messageID": message, "type": kind, **fields}


def _opencode_session() -> dict[str, Any]:
    return {
        "id": SES,
        "slug": "cosmic-forest",
        "projectID": "abe31d5b",
        "directory": "/home/user/proj",
        "title": "Creating TEST_EDITS.md with poem",
        "version": "1.15.7",
        "time": {"created": 1780154575483, "updated": 1780154599686},
    }


def _opencode_messages() -> list[dict[str, Any]]:
    user, reply, answer = "msg_e797b2a8d001", "msg_e797b2ab1001", "msg_e797b5b42001"
    tokens = {"total": 12714, "input": 12550, "output": 144, "reasoning": 20, "cache": {}}
    assistant = {
        "sessionID": SES,
        "role": "assistant",
        "parentID": user,
        "modelID": "deepseek-v4-pro",
        "providerID": "opencode-go",
        "mode": "build",
    }
    return [
        {
            "info": {
                "id": user,
                "sessionID": SES,
                "role": "user",
                "time": {"created": 1780154575515},
            },
            "parts": [
                _part(user, "prt_u1", "text", text="Write a poem to TEST_EDITS.md"),
                _part(user, "prt_u2", "file", mime="image/png", url="data:image/png;base64,iVBO"),
            ],
        },
        {
            # one assistant message of two steps: a tool step, then the step that answers
            "info": {
                **assistant,
                "id": reply,
                "time": {"created": 1780154575537},
                "finish": "stop",
            },
            "parts": [
                _part(reply, "prt_s1", "step-start", snapshot="9b05"),
                _part(reply, "prt_r1", "reasoning", text="The user wants a poem."),
                _part(
                    reply,
                    "prt_t1",
                    "tool",
                    callID="call_00_write",
                    tool="write",
                    state={
                        "status": "completed",
                        "input": {"filePath": "TEST_EDITS.md", "content": "# A Poem"},
                        "output": "Wrote file successfully.",
                        "title": "TEST_EDITS.md",
                        "time": {"start": 1780154587879, "end": 1780154587894},
                    },
                ),
                _part(
                    reply,
                    "prt_t2",
                    "tool",
                    callID="call_01_bash",
                    tool="bash",
                    state={
                        "status": "error",
                        "input": {"command": "cat x"},
                        "error": "no such file",
                    },
                ),
                _part(
                    reply, "prt_f1", "step-finish", reason="tool-calls", cost=0.0224, tokens=tokens
                ),
                _part(
                    reply, "prt_p1", "patch", hash="9b05", files=["/home/user/proj/TEST_EDITS.md"]
                ),
                _part(reply, "prt_s2", "step-start", snapshot="af5b"),
                _part(reply, "prt_x2", "text", text="Created it.", time={"start": 1780154599366}),
                _part(reply, "prt_f2", "step-finish", reason="stop", cost=0.0004, tokens=tokens),
            ],
        },
        {
            "info": {
                **assistant,
                "id": answer,
                "time": {"created": 1780154599700},
                "error": {"name": "MessageAbortedError", "data": {"message": "Aborted"}},
            },
            "parts": [_part(answer, "prt_x3", "text", text="Stopp")],
        },
    ]


async def _check_opencode(session: Any, report: Any) -> None:
    assert report.format == "opencode" and session.id == SES
    meta = await session.get_metadata()
    assert meta.cwd == "/home/user/proj"
    assert (meta.model_extra or {})["opencode"]["title"] == "Creating TEST_EDITS.md with poem"
    entries = await session.get_entries()
    # OpenCode's own ids; both replies name the user message as parentID, yet they chain
    assert [e.id for e in entries] == [
        "msg_e797b2a8d001",
        "msg_e797b2ab1001",
        "prt_t1",
        "prt_t2",
        "prt_s2",
        "msg_e797b5b42001",
    ]
    assert [e.parent_id for e in entries[1:]] == [e.id for e in entries[:-1]]
    assert await session.get_leaf_id() == "msg_e797b5b42001"
    ctx = await session.build_context(repair_tool_pairs=False)
    assert find_tool_pair_problems(ctx.messages) == []
    user, step1, ok, failed, step2, aborted = ctx.messages
    assert isinstance(user, UserMessage) and not isinstance(user.content, str)
    assert [b.type for b in user.content] == ["text", "image"]
    assert isinstance(step1, AssistantMessage)
    assert [b.type for b in step1.content] == ["thinking", "toolCall", "toolCall"]
    assert (step1.provider, step1.model, step1.stop_reason) == (
        "opencode-go",
        "deepseek-v4-pro",
        "toolUse",
    )
    assert step1.usage is not None and step1.usage.output == 164  # reasoning tokens are output
    assert step1.usage.cost is not None and step1.usage.cost.total == 0.0224
    assert isinstance(ok, ToolResultMessage) and message_text(ok) == "Wrote file successfully."
    assert not ok.is_error and ok.details["title"] == "TEST_EDITS.md"
    assert isinstance(failed, ToolResultMessage) and failed.is_error
    assert message_text(failed) == "no such file"
    assert isinstance(step2, AssistantMessage) and message_text(step2) == "Created it."
    assert step2.stop_reason == "stop"
    assert isinstance(aborted, AssistantMessage) and aborted.stop_reason == "error"
    assert aborted.error_message == "Aborted"
    # bookkeeping parts stay on the entry's source
    first = entries[1]
    assert first.model_extra is not None
    kept = [p["type"] for p in first.model_extra["source"]["parts"]]
    assert kept == ["step-start", "step-finish", "patch"]


async def test_an_opencode_export_maps_steps_tools_and_usage(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    export = {"info": _opencode_session(), "messages": _opencode_messages(), "todos": []}
    path.write_text(json.dumps(export, indent=2))
    session, report = await import_session(path, MemoryRepo())
    await _check_opencode(session, report)


@pytest.mark.parametrize("name", ["session.json", "messages.json"])
async def test_either_file_of_an_opencode_share_pair_imports_the_session(
    tmp_path: Path, name: str
) -> None:
    (tmp_path / "session.json").write_text(json.dumps(_opencode_session(), indent=2))
    (tmp_path / "messages.json").write_text(json.dumps(_opencode_messages(), indent=2))
    session, report = await import_session(tmp_path / name, MemoryRepo())
    await _check_opencode(session, report)


async def test_an_opencode_session_info_without_its_messages_is_refused(tmp_path: Path) -> None:
    (tmp_path / "session.json").write_text(json.dumps(_opencode_session(), indent=2))
    repo = MemoryRepo()
    with pytest.raises(CorruptSessionError, match="without its messages") as caught:
        await import_session(tmp_path / "session.json", repo)
    assert caught.value.path == tmp_path / "session.json"
    assert await repo.list() == []


async def test_an_opencode_storage_session_file_reads_its_messages_and_parts(
    tmp_path: Path,
) -> None:
    storage = tmp_path / "storage"
    session_file = storage / "session" / "abe31d5b" / f"{SES}.json"
    session_file.parent.mkdir(parents=True)
    session_file.write_text(json.dumps(_opencode_session(), indent=2))
    for message in _opencode_messages():
        info = message["info"]
        folder = storage / "message" / SES
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{info['id']}.json").write_text(json.dumps(info, indent=2))
        parts = storage / "part" / info["id"]
        parts.mkdir(parents=True)
        for k, part in enumerate(message["parts"]):
            # part files are named by part id, which sorts in the order OpenCode made them
            (parts / f"prt_{k:04d}.json").write_text(json.dumps(part, indent=2))
    session, report = await import_session(session_file, MemoryRepo())
    await _check_opencode(session, report)
    # the CLI finds the session files of a storage directory
    assert session_file in collect_files([storage])


def _opencode_database(path: Path, sessions: list[dict[str, Any]]) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, workspace_id TEXT,
          parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL, path TEXT,
          title TEXT NOT NULL, version TEXT NOT NULL, share_url TEXT, summary_additions INTEGER,
          summary_deletions INTEGER, summary_files INTEGER, summary_diffs TEXT,
          cost REAL NOT NULL DEFAULT 0, tokens_input INTEGER NOT NULL DEFAULT 0,
          tokens_output INTEGER NOT NULL DEFAULT 0, tokens_reasoning INTEGER NOT NULL DEFAULT 0,
          tokens_cache_read INTEGER NOT NULL DEFAULT 0,
          tokens_cache_write INTEGER NOT NULL DEFAULT 0, revert TEXT, permission TEXT,
          agent TEXT, model TEXT, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
          time_compacting INTEGER, time_archived INTEGER);
        CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
          time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
        CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL,
          session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
          time_updated INTEGER NOT NULL, data TEXT NOT NULL);
        CREATE TABLE todo (session_id TEXT NOT NULL, content TEXT NOT NULL);
        """
    )
    for n, info in enumerate(sessions):
        conn.execute(
            "INSERT INTO session (id, project_id, slug, directory, title, version, model, "
            "time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                info["id"],
                info["projectID"],
                info["slug"],
                info["directory"],
                info["title"],
                info["version"],
                json.dumps({"id": "deepseek-v4-pro", "providerID": "opencode-go"}),
                info["time"]["created"] + n,
                info["time"]["updated"],
            ),
        )
        if n:
            continue  # the second session has no messages
        for message in _opencode_messages():
            m = message["info"]
            body = {k: v for k, v in m.items() if k not in ("id", "sessionID")}
            created = m["time"]["created"]
            conn.execute(
                "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                (m["id"], info["id"], created, created, json.dumps(body)),
            )
            for k, part in enumerate(message["parts"]):
                data = {
                    k2: v for k2, v in part.items() if k2 not in ("id", "sessionID", "messageID")
                }
                conn.execute(
                    "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        f"prt_{m['id'][4:]}{k:04d}",
                        m["id"],
                        info["id"],
                        created,
                        created,
                        json.dumps(data),
                    ),
                )
    conn.commit()
    conn.close()
    return path


async def test_an_opencode_database_imports_the_session_it_is_asked_for(tmp_path: Path) -> None:
    other = {**_opencode_session(), "id": "ses_second", "title": "empty"}
    db = _opencode_database(tmp_path / "opencode.db", [_opencode_session(), other])
    before = db.read_bytes()
    assert database_sessions(before) == [SES, "ses_second"]
    with pytest.raises(CorruptSessionError, match=r"2 sessions.*ses_second"):
        await import_session(db, MemoryRepo())
    session, report = await import_session(db, MemoryRepo(), source_session=SES)
    assert report.format == "opencode" and db.read_bytes() == before
    assert [e.id for e in await session.get_entries()][:2] == [
        "msg_e797b2a8d001",
        "msg_e797b2ab1001",
    ]
    ctx = await session.build_context(repair_tool_pairs=False)
    assert len(ctx.messages) == 6 and find_tool_pair_problems(ctx.messages) == []
    meta = (await session.get_metadata()).model_extra or {}
    assert meta["opencode"]["model"] == {"id": "deepseek-v4-pro", "providerID": "opencode-go"}
    with pytest.raises(CorruptSessionError, match="no session 'ses_gone'"):
        await import_session(db, MemoryRepo(), source_session="ses_gone")


async def test_the_real_opencode_share_pair_imports() -> None:
    if not (REAL_OPENCODE / "session.json").is_file():
        unavailable(f"{REAL_OPENCODE} is not beside the checkout (licence: not vendored)")
    for name in ("session.json", "messages.json"):
        session, report = await import_session(REAL_OPENCODE / name, MemoryRepo())
        assert report.format == "opencode" and session.id == "ses_18684d584ffe1JuGPUt8v6Igr8"
        stats = await session.get_stats()
        assert stats.messages_by_role == {"user": 1, "assistant": 2, "toolResult": 1}
        ctx = await session.build_context()
        assert find_tool_pair_problems(ctx.messages) == []
        assert ctx.model is not None and ctx.model.model_id == "deepseek-v4-pro"
        assert message_text(ctx.messages[-1]).startswith("Created `TEST_EDITS.md`")


# ----------------------------------------------------------------- OpenClaw


def _pi_events(session_id: str, header: bool = True) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    if header:
        events.append(
            {
                "type": "session",
                "version": 3,
                "id": session_id,
                "timestamp": "2026-02-12T10:00:00.000Z",
                "cwd": "/home/node",
            }
        )
    events += [
        {
            "type": "model_change",
            "id": "a1",
            "parentId": None,
            "timestamp": "2026-02-12T10:00:00.001Z",
            "provider": "cli-proxy",
            "modelId": "gemini-3-pro-preview",
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "a1",
            "timestamp": "2026-02-12T10:00:01.000Z",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "hi"}],
                "timestamp": 1,
            },
        },
        {
            "type": "message",
            "id": "a3",
            "parentId": "a2",
            "timestamp": "2026-02-12T10:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "hello"}],
                "provider": "cli-proxy",
                "model": "gemini-3-pro-preview",
                "stopReason": "stop",
                "timestamp": 2,
            },
        },
    ]
    return events


def _openclaw_database(path: Path, sessions: dict[str, list[dict[str, Any]]]) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE sessions (session_id TEXT NOT NULL PRIMARY KEY, session_key TEXT NOT NULL,
          created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, channel TEXT,
          model_provider TEXT, model TEXT, display_name TEXT) STRICT;
        CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL,
          event_json TEXT NOT NULL, created_at INTEGER NOT NULL,
          PRIMARY KEY (session_id, seq)) STRICT;
        """
    )
    for n, (session_id, events) in enumerate(sessions.items()):
        conn.execute(
            "INSERT INTO sessions VALUES (?, ?, ?, ?, 'telegram', 'cli-proxy', 'gemini', NULL)",
            (session_id, f"agent:main:{session_id}", 1770890400000 + n, 1770890400000 + n),
        )
        # seq order, not insertion order, is the order of the events
        for seq, event in reversed(list(enumerate(events))):
            conn.execute(
                "INSERT INTO transcript_events VALUES (?, ?, ?, ?)",
                (session_id, seq, json.dumps(event), 1770890400000 + n),
            )
    conn.commit()
    conn.close()
    return path


async def test_an_openclaw_database_session_imports_as_its_pi_lines(tmp_path: Path) -> None:
    db = _openclaw_database(
        tmp_path / "openclaw.sqlite",
        {"s-one": _pi_events("s-one"), "s-two": _pi_events("s-two", header=False)},
    )
    assert database_sessions(db.read_bytes()) == ["s-one", "s-two"]
    with pytest.raises(CorruptSessionError, match="2 sessions"):
        await import_session(db, MemoryRepo())
    session, report = await import_session(db, MemoryRepo(), source_session="s-one")
    assert report.format == "openclaw" and session.id == "s-one"
    entries = await session.get_entries()
    assert [e.id for e in entries] == ["a1", "a2", "a3"]  # the events' own ids
    assert await session.get_leaf_id() == "a3"
    meta = await session.get_metadata()
    assert meta.cwd == "/home/node"
    extra = meta.model_extra or {}
    assert extra["openclaw"]["channel"] == "telegram"
    assert extra["importedFrom"]["format"] == "openclaw"
    ctx = await session.build_context()
    assert ctx.model is not None and ctx.model.model_id == "gemini-3-pro-preview"
    # events without a session header: one is made from the session's id, with a warning
    second, report2 = await import_session(db, MemoryRepo(), source_session="s-two")
    assert second.id == "s-two" and [e.id for e in await second.get_entries()] == ["a1", "a2", "a3"]
    assert any("no session header" in w for w in report2.warnings)


async def test_the_cli_imports_every_session_of_a_database(tmp_path: Path) -> None:
    db = _openclaw_database(
        tmp_path / "openclaw.sqlite", {"s-one": _pi_events("s-one"), "s-two": _pi_events("s-two")}
    )
    store = tmp_path / "store"
    done = subprocess.run(  # noqa: ASYNC221 - the CLI as a user runs it
        [sys.executable, "-m", "sessiontree", "--store", str(store), "import", str(db)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "s-one" in done.stdout and "s-two" in done.stdout
    assert "2 imported" in done.stderr


async def test_a_grown_copilot_cli_legacy_state_gives_the_same_entry_ids(tmp_path: Path) -> None:
    state = _copilot_state()
    short = {**state, "chatMessages": state["chatMessages"][:5], "timeline": state["timeline"][:3]}
    ids = []
    for name, doc in (("short", short), ("full", state)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc, indent=4))
        session, _ = await import_session(path, MemoryRepo())
        ids.append([e.id for e in await session.get_entries()])
    assert ids[1][: len(ids[0])] == ids[0]


async def test_a_sqlite_database_of_another_program_is_no_session(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    # a table of the same name and another shape (other programs use the name too)
    conn.execute("CREATE TABLE transcript_events (id INTEGER PRIMARY KEY, text TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(CorruptSessionError, match="SQLite database of no known agent"):
        await import_session(path, MemoryRepo())
    assert database_sessions(path.read_bytes()) is None


def _opencode_compacted(tail: str | None) -> list[dict[str, Any]]:
    def message(msg_id: str, role: str, *parts: dict[str, Any], **info: Any) -> dict[str, Any]:
        return {
            "info": {"id": msg_id, "sessionID": SES, "role": role, "time": {"created": 1}, **info},
            "parts": [{"id": f"prt_{msg_id}_{k}", **p} for k, p in enumerate(parts)],
        }

    def text(value: str) -> dict[str, Any]:
        return {"type": "text", "text": value}

    reply = {"modelID": "deepseek-v4-pro", "providerID": "opencode-go", "finish": "stop"}
    compaction: dict[str, Any] = {"type": "compaction", "auto": True}
    if tail is not None:
        compaction["tail_start_id"] = tail
    return [
        message("msg_a", "user", text("q1")),
        message("msg_b", "assistant", text("a1"), parentID="msg_a", **reply),
        message("msg_c", "user", text("q2")),
        message("msg_d", "assistant", text("a2"), parentID="msg_c", **reply),
        message("msg_e", "user", compaction),
        message(
            "msg_f",
            "assistant",
            text("Summary: q1 and q2 answered."),
            parentID="msg_e",
            summary=True,
            tokens={"input": 900, "output": 40, "cache": {"read": 100}},
            **reply,
        ),
        message("msg_g", "user", text("q3")),
        message("msg_h", "assistant", text("a3"), parentID="msg_g", **reply),
    ]


@pytest.mark.parametrize(("tail", "kept"), [("msg_c", ["q2", "a2"]), (None, [])])
async def test_an_opencode_compaction_leaves_the_context_opencode_sends(
    tmp_path: Path, tail: str | None, kept: list[str]
) -> None:
    path = tmp_path / "export.json"
    path.write_text(
        json.dumps({"info": _opencode_session(), "messages": _opencode_compacted(tail)})
    )
    session, report = await import_session(path, MemoryRepo())
    entries = {e.id: e for e in await session.get_entries()}
    request, summary = entries["msg_e"], entries["msg_f"]
    assert isinstance(request, CustomEntry) and request.custom_type == "opencode:compaction"
    assert isinstance(summary, CompactionEntry)
    assert summary.summary == "Summary: q1 and q2 answered." and summary.tokens_before == 1000
    assert [c.custom_type for c in report.custom_lines] == ["opencode:compaction"]
    ctx = await session.build_context()
    assert ctx.messages[0].role == "compactionSummary"
    assert [message_text(m) for m in ctx.messages[1:]] == [*kept, "q3", "a3"]
    assert await session.get_leaf_id() == "msg_h"


async def test_an_openclaw_session_imports_as_the_pi_file_of_its_lines(tmp_path: Path) -> None:
    pi_file = ROOT / "data" / "sessions" / "pi" / "agent-sessions_pi-small.v3.jsonl"
    events = [json.loads(line) for line in pi_file.read_text().splitlines() if line.strip()]
    session_id = events[0]["id"]
    db = _openclaw_database(tmp_path / "agent.sqlite", {session_id: events})
    from_db, _ = await import_session(db, MemoryRepo())
    from_file, _ = await import_session(pi_file, MemoryRepo())
    assert from_db.id == from_file.id == session_id
    assert await from_db.get_entries() == await from_file.get_entries()
    assert await from_db.get_leaf_id() == await from_file.get_leaf_id()
