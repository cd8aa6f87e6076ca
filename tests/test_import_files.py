"""Every real session file in ../shared/data/sessions imports (docs/interop.md).

Each test counts what the file holds with its own small reading of the raw format (messages
by role, tool calls and results, compactions, roots, records kept as custom) and checks the
imported session against those counts, that the context builds and that it keeps the
tool-pair invariant. The source file must come out of the import unchanged.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sessiontree import MemoryRepo, import_session
from sessiontree.context import find_tool_pair_problems
from sessiontree.entries import MessageEntry
from sessiontree.interop import detect_format
from sessiontree.messages import AssistantMessage, OpaqueMessage

SESSIONS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "sessions"
FORMAT_OF_DIR = {
    "pi": "pi",
    "claude-code": "claude-code",
    "codex": "codex",
    "swe-agent-traj": "swe-agent",
}
FILES = sorted(p for p in SESSIONS.glob("*/*") if p.parent.name in FORMAT_OF_DIR)


@dataclass
class Expected:
    """What the raw file says the session must hold."""

    roles: Counter[str] = field(default_factory=Counter)
    tool_calls: int = 0
    compactions: int = 0
    roots: int = 0
    custom: int = 0
    entries: int = 0
    dangling: int = 0


def _fingerprint(path: Path) -> tuple[bytes, int]:
    """The bytes and modification time of a file, to prove an import left it alone."""
    return path.read_bytes(), path.stat().st_mtime_ns


def _jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for number, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        if raw.strip():
            rows.append((number, json.loads(raw)))
    return rows


def expect_pi(path: Path) -> Expected:
    rows = _jsonl(path)
    header = rows[0][1]
    exp = Expected()
    for _, obj in rows[1:]:
        exp.entries += 1
        if obj["type"] == "message":
            role = obj["message"]["role"]
            exp.roles["custom" if role == "hookMessage" else role] += 1
            if role == "assistant":
                exp.tool_calls += sum(
                    b.get("type") == "toolCall" for b in obj["message"]["content"]
                )
        elif obj["type"] == "compaction":
            exp.compactions += 1
        if "version" in header:
            exp.roots += obj.get("parentId") is None
    if "version" not in header:
        exp.roots = 1 if exp.entries else 0
    return exp


def expect_claude(path: Path) -> Expected:
    rows = _jsonl(path)
    uuids = {o["uuid"] for _, o in rows if o.get("uuid")}
    exp = Expected()
    for _, obj in rows:
        msg = obj.get("message")
        if obj.get("uuid"):
            parent = obj.get("parentUuid")
            exp.roots += parent is None or parent not in uuids
            exp.dangling += parent is not None and parent not in uuids
        if obj.get("type") not in ("user", "assistant") or not isinstance(msg, dict):
            exp.custom += 1
            exp.entries += 1
            continue
        content = msg["content"]
        if obj["type"] == "assistant":
            exp.roles["assistant"] += 1
            exp.tool_calls += sum(b.get("type") == "tool_use" for b in content)
            exp.entries += 1
            continue
        results = (
            [b for b in content if b.get("type") == "tool_result"]
            if isinstance(content, list)
            else []
        )
        exp.roles["toolResult"] += len(results)
        rest = len(content) - len(results) if isinstance(content, list) else 1
        exp.roles["user"] += 1 if rest or not results else 0
        exp.entries += len(results) + (1 if rest or not results else 0)
    return exp


def expect_codex(path: Path) -> Expected:
    exp = Expected(roots=1)
    for _, obj in _jsonl(path):
        exp.entries += 1
        payload = obj.get("payload") or {}
        kind = payload.get("type") if obj["type"] == "response_item" else None
        if kind == "message" and payload["role"] in ("user", "assistant", "developer", "system"):
            role = payload["role"]
            exp.roles[role if role in ("user", "assistant") else "custom"] += 1
        elif kind and "call_id" in payload and kind.endswith("_call"):
            exp.roles["assistant"] += 1
            exp.tool_calls += 1
        elif kind and "call_id" in payload and kind.endswith("_output"):
            exp.roles["toolResult"] += 1
        else:
            exp.custom += 1
    return exp


def expect_swe(path: Path) -> Expected:
    doc = json.loads(path.read_bytes())
    exp = Expected(roots=1)
    history = doc.get("history") or []
    used = "history" if history else "trajectory"
    exp.custom = sum(1 for key in doc if key != used)
    exp.entries = exp.custom
    for i, item in enumerate(history):
        role = item["role"]
        if role == "system" and i == 0:
            continue
        if role == "tool" and item.get("tool_call_ids"):
            exp.roles["toolResult"] += len(item["tool_call_ids"])
            exp.entries += len(item["tool_call_ids"])
            continue
        exp.roles[{"system": "custom", "tool": "user"}.get(role, role)] += 1
        exp.entries += 1
        exp.tool_calls += len(item.get("tool_calls") or [])
    if not history:
        for step in doc["trajectory"]:
            exp.roles["assistant"] += 1
            exp.roles["user"] += step.get("observation") is not None
            exp.entries += 1 + (step.get("observation") is not None)
    return exp


EXPECT = {
    "pi": expect_pi,
    "claude-code": expect_claude,
    "codex": expect_codex,
    "swe-agent": expect_swe,
}


def test_the_shared_files_are_there() -> None:
    assert len(FILES) == 14, FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:40])
async def test_real_file_imports(path: Path) -> None:
    fmt = FORMAT_OF_DIR[path.parent.name]
    before = _fingerprint(path)
    assert await detect_format(path) == fmt

    repo = MemoryRepo()
    session, report = await import_session(path, repo)
    exp = EXPECT[fmt](path)

    entries = await session.get_entries()
    leaf_entries = sum(e.type == "leaf" for e in entries)
    assert report.format == fmt
    assert report.entries_imported == len(entries) == exp.entries + leaf_entries
    assert report.unreadable_lines == []
    stats = await session.get_stats()
    assert Counter(stats.messages_by_role) == exp.roles
    assert stats.tool_calls == exp.tool_calls
    assert stats.messages_by_role.get("toolResult", 0) == exp.roles["toolResult"]
    assert stats.compactions == exp.compactions
    assert stats.roots == exp.roots
    assert len(report.custom_lines) == exp.custom == stats.entries_by_type.get("custom", 0)
    assert len(report.dangling_parents) == exp.dangling

    for e in entries:
        if isinstance(e, MessageEntry):
            assert not isinstance(e.message, OpaqueMessage)
            assert isinstance(e.message.timestamp, int)
            if fmt != "swe-agent":
                assert e.message.timestamp > 1_600_000_000_000

    ctx = await session.build_context()
    assert ctx.messages
    assert find_tool_pair_problems(ctx.messages) == []

    leaf = await session.get_leaf_id()
    assert leaf == report.leaf_id
    assert leaf is not None and (await session.get_entry(leaf)) is not None
    assert await repo.list() and (await repo.list())[0].id == session.id == report.session_id
    assert _fingerprint(path) == before


@pytest.mark.parametrize(
    "path", [p for p in FILES if p.suffix == ".jsonl"], ids=lambda p: p.name[:40]
)
async def test_no_line_is_dropped(path: Path) -> None:
    """Every non-blank line of a JSONL file is an entry: a message (``source.line``), a custom
    entry (``report.custom_lines``), or — pi — one entry per line after the header."""
    session, report = await import_session(path, MemoryRepo())
    lines = {n for n, _ in _jsonl(path)}
    entries = await session.get_entries()
    if report.format == "pi":
        assert len([e for e in entries if e.type != "leaf"]) == len(lines) - 1
        return
    covered = {c.line for c in report.custom_lines}
    for e in entries:
        source = getattr(e, "source", None)
        if isinstance(source, dict):
            covered.add(source["line"])
    assert covered == lines


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:40])
async def test_assistant_messages_name_their_model(path: Path) -> None:
    session, report = await import_session(path, MemoryRepo())
    ctx = await session.build_context()
    if report.format in ("claude-code", "pi") or (
        report.format == "codex" and any(isinstance(m, AssistantMessage) for m in ctx.messages)
    ):
        assert ctx.model is not None
