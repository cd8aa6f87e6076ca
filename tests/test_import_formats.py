"""Aider histories, Cline / Roo Code tasks, detection, and the JSONL faults real writers leave
(lone surrogate escapes, several JSON values on one line) (docs/interop.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from session_files import VENDORED, session_file
from sessiontree.context import LOST_RESULT_TEXT, find_tool_pair_problems
from sessiontree.entries import CompactionEntry, CustomEntry, MessageEntry
from sessiontree.errors import CorruptSessionError
from sessiontree.interop import FORMATS, import_session
from sessiontree.messages import (
    AssistantMessage,
    OpaqueMessage,
    ThinkingContent,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from sessiontree.repos import MemoryRepo

AIDER = VENDORED / "aider" / "mozgoslav.aider.chat.history.md"
PI_SMALL = VENDORED / "pi" / "agent-sessions_pi-small.v3.jsonl"


# ----------------------------------------------------------------- Aider


async def test_aider_chats_are_roots_and_console_output_is_kept(tmp_path: Path) -> None:
    text = AIDER.read_text()
    session, report = await import_session(AIDER, MemoryRepo())
    entries = await session.get_entries()
    roots = [e for e in entries if e.parent_id is None and e.type != "leaf"]
    headers = [line for line in text.split("\n") if line.startswith("# aider chat started at ")]
    assert len(roots) == len(headers) == 3
    assert [r.data["text"] for r in roots if isinstance(r, CustomEntry)] == headers
    assert roots[0].timestamp == "2026-04-22T22:40:12.000Z"
    # every user line of the file is in a user message, in order
    typed = [ln[5:].removesuffix("  ") for ln in text.split("\n") if ln.startswith("#### ")]
    users = [
        e.message
        for e in entries
        if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)
    ]
    joined = "\n".join(str(u.content) for u in users)
    pos = 0
    for line in typed:
        pos = joined.index(line, pos)
    # console output (the auth errors, the model line) is kept, never sent to the model
    console = [
        e for e in entries if isinstance(e, CustomEntry) and e.custom_type == "aider:console"
    ]
    assert any("AuthenticationError" in c.data["text"] for c in console)
    ctx = await session.build_context()
    assert not any("AuthenticationError" in str(getattr(m, "content", "")) for m in ctx.messages)
    assert ctx.model is not None and ctx.model.provider == "lm_studio"
    answers = [m for m in ctx.messages if isinstance(m, AssistantMessage)]
    assert answers and any(isinstance(b, ThinkingContent) for a in answers for b in a.content)
    assert report.unreadable_lines == []


async def test_aider_fenced_code_is_part_of_the_answer(tmp_path: Path) -> None:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(
        "\n# aider chat started at 2026-01-02 03:04:05\n\n"
        "> Model: openai/gpt-4o with diff edit format  \n\n"
        "#### fix the heading  \n#### and the list  \n\n"
        "Here is the change:\n\n```markdown\n#### not a user line\n> not console output\n```\n\n"
        "> Applied edit to README.md  \n"
    )
    session, _ = await import_session(path, MemoryRepo())
    ctx = await session.build_context()
    assert [m.role for m in ctx.messages] == ["user", "assistant"]
    assert isinstance(ctx.messages[0], UserMessage)
    assert ctx.messages[0].content == "fix the heading\nand the list"
    answer = ctx.messages[1]
    assert isinstance(answer, AssistantMessage) and "#### not a user line" in str(answer.content)
    assert ctx.model is not None and (ctx.model.provider, ctx.model.model_id) == (
        "openai",
        "gpt-4o",
    )
    assert await session.get_leaf_id() == (await session.get_branch())[3].id  # the answer


async def test_an_aider_answer_cut_off_mid_thought_is_thinking(tmp_path: Path) -> None:
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(
        "# aider chat started at 2026-01-02 03:04:05\n\n#### hi  \n\n"
        "<thinking-content-7bbe>\n\nLet me think about\n\n> ^C KeyboardInterrupt  \n"
    )
    session, _ = await import_session(path, MemoryRepo())
    answer = (await session.build_context()).messages[-1]
    assert isinstance(answer, AssistantMessage)
    assert [type(b) for b in answer.content] == [ThinkingContent]
    assert answer.content[0].thinking == "Let me think about"  # type: ignore[union-attr]


async def test_a_fence_left_open_by_a_cut_off_answer_ends_at_the_next_user_line(
    tmp_path: Path,
) -> None:
    # a whole-file edit cut off by ^C mid-line: its fence is never closed, and Aider goes on
    # writing the user's input after a blank line with its two-space line breaks
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(
        "\n# aider chat started at 2026-05-04 01:24:27\n\n"
        "> Model: openai/deepseek-v4-pro with whole edit format  \n\n"
        "#### make the greeting casual  \n\n"
        "Here's the updated file:\n\nlauncher.py\n```\n#!/usr/bin/env python3\nprint('hi'\n\n\n"
        "#### /undo  \n"
        "> The last commit was not made by aider in this chat session.  \n\n"
        "#### Please always respond in Thai.  \n\n"
        "Sure:\n\n```python\nx = 1\n```\n\n"
        "> Tokens: 7.0k sent, 160 received.  \n"
    )
    session, report = await import_session(path, MemoryRepo())
    messages = (await session.build_context()).messages
    assert [(m.role, message_text(m).splitlines()[0]) for m in messages] == [
        ("user", "make the greeting casual"),
        ("assistant", "Here's the updated file:"),
        ("user", "/undo"),
        ("user", "Please always respond in Thai."),
        ("assistant", "Sure:"),
    ]
    assert "x = 1" in message_text(messages[-1])
    assert any("line 16" in w and "line 11" in w for w in report.warnings), report.warnings


# ----------------------------------------------------------------- Cline / Roo Code


def _cline_task(tmp_path: Path, *, ui: bool) -> Path:
    folder = tmp_path / "1769053680585"
    folder.mkdir()
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nlist the files\n</task>"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Listing."},
                {"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": {"path": "."}},
            ],
            "modelInfo": {"modelId": "claude-sonnet-4-5", "providerId": "anthropic"},
            "metrics": {"tokens": {"prompt": 10, "completion": 5, "cached": 100}},
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[list_files for '.'] Result:\nREADME.md\nsrc/"},
                {"type": "text", "text": "<environment_details>\n...\n</environment_details>"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "read_file",
                    "input": {"path": "README.md"},
                }
            ],
            "modelInfo": {"modelId": "claude-sonnet-4-5", "providerId": "anthropic"},
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "# hi"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]
    (folder / "api_conversation_history.json").write_text(json.dumps(messages))
    if ui:
        events = [
            {
                "ts": 1769053680628 + 1000 * i,
                "type": "say",
                "say": "text",
                "conversationHistoryIndex": i - 1,
            }
            for i in range(7)
        ]
        (folder / "ui_messages.json").write_text(json.dumps(events))
    return folder / "api_conversation_history.json"


@pytest.mark.parametrize("ui", [True, False])
async def test_cline_text_results_answer_their_calls(tmp_path: Path, ui: bool) -> None:
    path = _cline_task(tmp_path, ui=ui)
    session, report = await import_session(path, MemoryRepo())
    assert report.format == "cline" and session.id == "cline-1769053680585"
    ctx = await session.build_context()
    assert [m.role for m in ctx.messages] == [
        "user",
        "assistant",
        "toolResult",
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    results = [m for m in ctx.messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["toolu_1", "toolu_2"]
    assert "README.md\nsrc/" in message_text(results[0]) and LOST_RESULT_TEXT not in str(results)
    assert find_tool_pair_problems(ctx.messages) == []
    first = ctx.messages[1]
    assert isinstance(first, AssistantMessage) and first.usage is not None
    assert (first.usage.input, first.usage.output, first.usage.cache_read) == (10, 5, 100)
    assert ctx.model is not None and ctx.model.model_id == "claude-sonnet-4-5"
    stamps: list[int] = [getattr(m, "timestamp", 0) for m in ctx.messages]
    assert all(isinstance(s, int) and s > 0 for s in stamps)
    assert stamps == sorted(stamps)
    if ui:
        assert stamps[0] == 1769053680628 and stamps[-1] > stamps[0]


async def test_a_cline_ui_log_names_the_file_to_import(tmp_path: Path) -> None:
    path = _cline_task(tmp_path, ui=True).with_name("ui_messages.json")
    with pytest.raises(CorruptSessionError, match=r"api_conversation_history\.json"):
        await import_session(path, MemoryRepo())


async def test_the_real_cline_task_keeps_every_tool_output() -> None:
    path = session_file("cline/api_conversation_history.json")
    session, _ = await import_session(path, MemoryRepo())
    ctx = await session.build_context()
    results = [m for m in ctx.messages if isinstance(m, ToolResultMessage)]
    assert results and not any(LOST_RESULT_TEXT in str(m.content) for m in results)


# ----------------------------------------------------------------- detection


def test_the_cli_offers_every_import_format() -> None:
    from sessiontree.cli.importing import FORMATS as CLI_FORMATS

    assert CLI_FORMATS == FORMATS


# ----------------------------------------------------------------- JSONL faults


async def test_a_lone_surrogate_escape_is_read_and_reported(tmp_path: Path) -> None:
    lines = PI_SMALL.read_bytes().rstrip(b"\n").split(b"\n")
    obj = json.loads(lines[3])
    assert obj["type"] == "message"
    raw = lines[3].decode()
    marker = '"content":'
    assert marker in raw
    # a string cut inside an emoji, as JavaScript writes it: a high surrogate with no low one
    lines[3] = raw.replace('"text":"', '"text":"cut here \\ud83d', 1).encode()
    path = tmp_path / "surrogate.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    session, report = await import_session(path, MemoryRepo())  # strict: no failure
    assert report.unreadable_lines == []
    assert any(w.startswith("line 4:") and "surrogate" in w for w in report.warnings)
    entry = await session.get_entry(obj["id"])
    assert isinstance(entry, MessageEntry) and not isinstance(entry.message, OpaqueMessage)
    assert "cut here \ufffd" in str(getattr(entry.message, "content", None))
    assert len(await session.get_entries()) == len(lines) - 1


async def test_two_objects_on_one_line_are_both_read_in_order(tmp_path: Path) -> None:
    lines = PI_SMALL.read_bytes().rstrip(b"\n").split(b"\n")
    ids = [json.loads(line)["id"] for line in lines[1:]]
    joined = [*lines[:3], lines[3] + lines[4], *lines[5:]]  # a writer died before a newline
    path = tmp_path / "joined.jsonl"
    path.write_bytes(b"\n".join(joined) + b"\n")

    session, report = await import_session(path, MemoryRepo())
    assert report.unreadable_lines == []
    assert any(w.startswith("line 4:") and "2 JSON values" in w for w in report.warnings)
    assert [e.id for e in await session.get_entries()] == ids
    assert find_tool_pair_problems((await session.build_context()).messages) == []


# ----------------------------------------------------------------- Codex


def _rollout(tmp_path: Path) -> Path:
    """The real CLI rollout's opening, then a turn with two parallel calls, as Codex writes."""
    head = (VENDORED / "codex" / "sample_codex_session_simonw.jsonl").read_bytes()
    ts = "2026-01-01T00:00:0{}.000Z"

    def item(i: int, payload: dict[str, object], kind: str = "response_item") -> bytes:
        return json.dumps({"timestamp": ts.format(i), "type": kind, "payload": payload}).encode()

    def call(i: int, call_id: str) -> bytes:
        return item(
            i,
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"cmd": ["ls"]}',
                "call_id": call_id,
            },
        )

    tokens = {
        "info": {
            "last_token_usage": {
                "input_tokens": 120,
                "cached_input_tokens": 100,
                "output_tokens": 7,
                "total_tokens": 127,
            }
        }
    }
    lines = [
        item(
            1,
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Looking."}],
            },
        ),
        call(2, "call_a"),
        call(3, "call_b"),
        item(4, {"type": "function_call_output", "call_id": "call_a", "output": "a.txt"}),
        item(5, {"type": "function_call_output", "call_id": "call_b", "output": "b.txt"}),
        item(6, {"type": "token_count", **tokens}, "event_msg"),
        item(
            7,
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Two files."}],
            },
        ),
        item(8, {"type": "task_complete", "last_agent_message": "Two files."}, "event_msg"),
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(head + b"\n".join(lines) + b"\n")
    return path


async def test_codex_parallel_calls_are_one_message_with_usage_and_the_leaf_is_the_answer(
    tmp_path: Path,
) -> None:
    session, _ = await import_session(_rollout(tmp_path), MemoryRepo())
    ctx = await session.build_context(repair_tool_pairs=False)
    assert find_tool_pair_problems(ctx.messages) == []  # valid before any repair
    turn = [m for m in ctx.messages if isinstance(m, AssistantMessage)]
    assert len(turn) == 2
    assert [c.id for c in turn[0].tool_calls()] == ["call_a", "call_b"]
    assert turn[0].usage is not None
    assert (turn[0].usage.input, turn[0].usage.cache_read, turn[0].usage.output) == (20, 100, 7)
    leaf = await session.get_entry(await session.get_leaf_id() or "")
    assert isinstance(leaf, MessageEntry) and message_text(leaf.message) == "Two files."


async def test_a_codex_reasoning_summary_is_a_thinking_block_of_its_turn(tmp_path: Path) -> None:
    head = (VENDORED / "codex" / "sample_codex_session_simonw.jsonl").read_bytes()

    def item(payload: dict[str, object]) -> bytes:
        line = {
            "timestamp": "2026-01-01T00:00:01.000Z",
            "type": "response_item",
            "payload": payload,
        }
        return json.dumps(line).encode()

    lines = [
        item(
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
        ),
        item({"type": "reasoning", "summary": []}),  # hidden reasoning: nothing to show
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "read it first"}]}),
        item({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
        item({"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        item({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}),
        item(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "done"}],
            }
        ),
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(head + b"\n".join(lines) + b"\n")
    session, report = await import_session(path, MemoryRepo())
    replies = [
        m for m in (await session.build_context()).messages if isinstance(m, AssistantMessage)
    ]
    assert [[b.type for b in r.content] for r in replies[-2:]] == [
        ["thinking", "toolCall"],
        ["thinking", "text"],
    ]
    first, second = replies[-2].content[0], replies[-1].content[0]
    assert isinstance(first, ThinkingContent) and first.thinking == "read it first"
    assert first.thinking_signature is None  # no id: nothing to send back
    assert isinstance(second, ThinkingContent) and second.thinking_signature is not None
    assert "rs_1" in second.thinking_signature and "gAAA" in second.thinking_signature
    assert sum(c.custom_type == "codex:response_item:reasoning" for c in report.custom_lines) == 1


async def test_a_codex_compacted_record_replaces_the_context_with_its_replacement_history(
    tmp_path: Path,
) -> None:
    # as Codex writes /compact: a `compacted` line whose replacement history is what its model
    # sees from then on (the user messages here), then a `context_compacted` event
    head = (VENDORED / "codex" / "sample_codex_session_simonw.jsonl").read_bytes()

    def item(payload: dict[str, object], kind: str = "response_item") -> bytes:
        return json.dumps(
            {"timestamp": "2026-01-01T00:00:01.000Z", "type": kind, "payload": payload}
        ).encode()

    def said(role: str, text: str) -> dict[str, object]:
        kind = "input_text" if role == "user" else "output_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    usage = {
        "input_tokens": 900,
        "cached_input_tokens": 800,
        "output_tokens": 40,
        "total_tokens": 940,
    }
    lines = [
        item(said("user", "first")),
        item(said("assistant", "one")),
        item({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
        item({"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        item(said("user", "second")),
        item(said("assistant", "two")),
        item({"type": "token_count", "info": {"last_token_usage": usage}}, "event_msg"),
        item(
            {
                "message": "",
                "replacement_history": [
                    said("user", "first"),
                    said("user", "second"),
                    {"type": "reasoning", "encrypted_content": "gAAA"},
                ],
            },
            "compacted",
        ),
        item({"type": "context_compacted"}, "event_msg"),
        item(said("user", "third")),
        item(said("assistant", "three")),
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(head + b"\n".join(lines) + b"\n")
    session, report = await import_session(path, MemoryRepo())
    ctx = await session.build_context(repair_tool_pairs=False)
    texts = [(m.role, message_text(m)) for m in ctx.messages if m.role != "custom"]
    assert texts == [
        ("compactionSummary", ""),
        ("user", "first"),
        ("user", "second"),
        ("user", "third"),
        ("assistant", "three"),
    ]
    compaction = next(e for e in await session.get_entries() if e.type == "compaction")
    assert isinstance(compaction, CompactionEntry) and compaction.tokens_before == 940
    assert compaction.model_extra is not None
    assert compaction.model_extra["source"]["record"]["type"] == "compacted"
    assert report.warnings == []
    leaf = (await session.get_branch())[-1]
    assert isinstance(leaf, MessageEntry) and message_text(leaf.message) == "three"


# ----------------------------------------------------------------- Gemini CLI


async def test_a_gemini_cli_record_written_twice_is_imported_once_as_its_last_copy(
    tmp_path: Path,
) -> None:
    # Gemini CLI's JSONL layout: a reply is written first without its tool calls, then again
    # (same id) with the calls and their results; $set lines update the header
    header = {"sessionId": "0ab84937", "projectHash": "9da8", "startTime": "2026-04-23T12:52:52Z"}
    reply = {
        "id": "r1",
        "timestamp": "2026-04-23T12:53:06.000Z",
        "type": "gemini",
        "content": "",
        "thoughts": [{"subject": "Reading", "description": "the README first"}],
        "tokens": {"input": 900, "output": 40, "cached": 800, "thoughts": 10, "total": 950},
        "model": "gemini-3-flash-preview",
    }
    call = {
        "id": "c1",
        "name": "read_file",
        "args": {"file_path": "README.md"},
        "result": [{"functionResponse": {"id": "c1", "response": {"error": "not found"}}}],
        "status": "error",
        "resultDisplay": "File not found",
    }
    rows = [
        header,
        {
            "id": "u1",
            "timestamp": "2026-04-23T12:53:05.000Z",
            "type": "user",
            "content": [{"text": "read it"}],
            "displayContent": [{"text": "/init"}],
        },
        {"$set": {"lastUpdated": "2026-04-23T12:53:05.283Z"}},
        reply,
        {"$set": {"lastUpdated": "2026-04-23T12:53:11.257Z", "summary": "reading"}},
        {**reply, "toolCalls": [call]},
        {
            "id": "i1",
            "timestamp": "2026-04-23T12:54:00.000Z",
            "type": "info",
            "content": "Request cancelled.",
        },
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    session, report = await import_session(path, MemoryRepo())
    assert report.format == "gemini-cli" and report.unreadable_lines == []
    entries = await session.get_entries()
    assert [e.id for e in entries if e.type != "leaf"] == ["u1", "r1", "r1:c1", "i1"]
    ctx = await session.build_context(repair_tool_pairs=False)
    assert find_tool_pair_problems(ctx.messages) == []
    answer = ctx.messages[1]
    assert isinstance(answer, AssistantMessage) and answer.model == "gemini-3-flash-preview"
    assert [b.type for b in answer.content] == ["thinking", "toolCall"]
    assert answer.usage is not None
    assert (answer.usage.input, answer.usage.cache_read, answer.usage.output) == (100, 800, 50)
    result = ctx.messages[2]
    assert isinstance(result, ToolResultMessage) and result.is_error
    assert (
        message_text(result) == "not found" and result.details["resultDisplay"] == "File not found"
    )
    assert await session.get_leaf_id() == "r1:c1"  # the info record is not a message
    meta = (await session.get_metadata()).model_extra or {}
    assert meta["geminiCli"]["summary"] == "reading"
    assert meta["geminiCli"]["lastUpdated"] == "2026-04-23T12:53:11.257Z"
    first = next(e for e in entries if e.id == "r1")
    assert first.model_extra is not None and first.model_extra["source"]["merged"] == [{"line": 4}]


# ----------------------------------------------------------------- source times


@pytest.mark.parametrize(
    "name", ["claude-code/agent-a7c3dfb.jsonl", "aider/mozgoslav.aider.chat.history.md"]
)
async def test_an_import_keeps_the_sources_own_dates(name: str) -> None:
    path = VENDORED / name
    session, _ = await import_session(path, MemoryRepo())
    imported = (await session.get_metadata()).to_wire()["importedFrom"]
    if name.endswith(".jsonl"):
        stamps = sorted(json.loads(line)["timestamp"] for line in path.read_text().splitlines())
        assert (imported["createdAt"], imported["modifiedAt"]) == (stamps[0], stamps[-1])
    else:
        headers = [ln for ln in path.read_text().splitlines() if ln.startswith("# aider chat")]
        assert imported["createdAt"].startswith(headers[0][-19:-9])  # the first chat's day
        assert imported["modifiedAt"].startswith(headers[-1][-19:-9])


async def test_a_lone_surrogate_in_a_whole_document_is_read_and_reported(tmp_path: Path) -> None:
    task = _cline_task(tmp_path, ui=False)
    task.write_text(task.read_text().replace("Listing.", "Listing \\ud83d"))
    session, report = await import_session(task, MemoryRepo())
    assert report.format == "cline"
    assert any("surrogate" in w for w in report.warnings)
    assert "Listing \ufffd" in str((await session.build_context()).messages[1])

    traj = tmp_path / "cut.traj"
    src = (VENDORED / "swe-agent-traj" / "function_calling_simple.traj").read_text()
    traj.write_text(src.replace('"content": "', '"content": "\\udc00', 1))
    _, report = await import_session(traj, MemoryRepo())
    assert report.format == "swe-agent" and any("surrogate" in w for w in report.warnings)
