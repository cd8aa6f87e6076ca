"""What a real session file must import as, read from the file itself (not a test module).

Each reader is a small, separate reading of the raw format — it shares no code with the
importers — giving the counts an import must reproduce: messages by role, tool calls,
compactions, roots, records kept as custom, dangling parents, plus a ``marker`` (a string
the leaf message must hold: the newest message's last text or id) and the model the context
must name.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Expected:
    """What the raw file says the session must hold."""

    roles: Counter[str] = field(default_factory=Counter)
    tool_calls: int = 0
    compactions: int = 0
    roots: int = 0
    custom: int = 0
    dangling: int = 0
    marker: str | None = None
    model: str | None = None
    check_model: bool = True
    with_usage: int = 0


def jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for number, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        if raw.strip():
            rows.append((number, json.loads(raw)))
    return rows


def _tail(text: str) -> str | None:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][-40:] if lines else None


def _marker(content: Any) -> str | None:
    """The end of the last text or id of a message's content (its last non-blank line, at
    most 40 characters): something the leaf message must hold."""
    if isinstance(content, str):
        return _tail(content)
    for block in reversed(content or []):
        if not isinstance(block, dict):
            continue
        for key in ("text", "id", "tool_use_id", "call_id"):
            if isinstance(block.get(key), str) and block[key].strip():
                return _tail(block[key])
    return None


def expect_pi(path: Path) -> Expected:
    rows = jsonl(path)
    header = rows[0][1]
    exp = Expected(check_model=False)
    for _, obj in rows[1:]:
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
        exp.roots = 1 if len(rows) > 1 else 0
    return exp


def expect_claude(path: Path) -> Expected:
    rows = jsonl(path)
    uuids = [o["uuid"] for _, o in rows if o.get("uuid")]
    known = set(uuids)
    exp = Expected()
    replies: set[Any] = set()
    summary_after_boundary = False
    sidechain_only = all(o.get("isSidechain") for _, o in rows if o.get("uuid"))
    last_main: dict[str, Any] | None = None
    for _, obj in rows:
        msg = obj.get("message")
        if obj.get("type") == "system" and obj.get("subtype") == "compact_boundary":
            exp.compactions += 1
            summary_after_boundary = True
            continue
        if summary_after_boundary and obj.get("isCompactSummary"):
            summary_after_boundary = False
            continue
        if obj.get("uuid"):
            parent = obj.get("parentUuid")
            exp.roots += parent is None
            exp.dangling += parent is not None and parent not in known
        if obj.get("type") not in ("user", "assistant") or not isinstance(msg, dict):
            exp.custom += 1
            continue
        if sidechain_only or not obj.get("isSidechain"):
            last_main = obj
        content = msg["content"]
        if obj["type"] == "assistant":
            exp.tool_calls += sum(b.get("type") == "tool_use" for b in content)
            if msg.get("id") not in replies:
                exp.roles["assistant"] += 1
            replies.add(msg.get("id"))
            continue
        results = (
            [b for b in content if b.get("type") == "tool_result"]
            if isinstance(content, list)
            else []
        )
        exp.roles["toolResult"] += len(results)
        rest = len(content) - len(results) if isinstance(content, list) else 1
        exp.roles["user"] += 1 if rest or not results else 0
    if last_main is not None:
        exp.marker = _marker(last_main["message"]["content"])
    models = [
        o["message"].get("model")
        for _, o in rows
        if o.get("type") == "assistant"
        and (sidechain_only or not o.get("isSidechain"))
        and o["message"].get("model") not in (None, "<synthetic>")
        and not o.get("isApiErrorMessage")
    ]
    exp.model = models[-1] if models else None
    return exp


def _codex_items(path: Path) -> list[tuple[str, Any]]:
    rows = [o for _, o in jsonl(path)]
    if rows and "type" not in rows[0] and "instructions" in rows[0]:  # the 2025 layout
        return [("session_meta", rows[0])] + [
            ("record", None) if "record_type" in o else ("response_item", o) for o in rows[1:]
        ]
    return [(o["type"], o.get("payload")) for o in rows]


def expect_codex(path: Path) -> Expected:
    exp = Expected(roots=1)
    in_turn = False
    waiting_usage = False
    model = None
    marker = None
    for kind, payload in _codex_items(path):
        item = payload.get("type") if kind == "response_item" else None
        if kind == "turn_context" and payload.get("model"):
            model = payload["model"]
        if kind == "event_msg" and payload.get("type") == "token_count" and waiting_usage:
            exp.with_usage += isinstance(payload.get("info"), dict)
            waiting_usage = not isinstance(payload.get("info"), dict)
        is_call = isinstance(item, str) and "call_id" in payload and item.endswith("_call")
        summary = item == "reasoning" and (
            any(p.get("text") for key in ("summary", "content") for p in payload.get(key) or ())
            or (isinstance(payload.get("id"), str) and payload.get("encrypted_content") is not None)
        )
        if summary:  # reasoning with text, or that can be sent back: a thinking block
            if not in_turn:
                exp.roles["assistant"] += 1
                exp.model = model
                waiting_usage = True
            in_turn = True
            continue
        if (item == "message" and payload["role"] == "assistant") or is_call:
            if not in_turn:
                exp.roles["assistant"] += 1
                exp.model = model
                waiting_usage = True
            in_turn = True
            exp.tool_calls += is_call
            marker = payload.get("call_id") if is_call else _marker(payload.get("content"))
            continue
        if item == "message" and payload["role"] in ("user", "developer", "system"):
            exp.roles["user" if payload["role"] == "user" else "custom"] += 1
            in_turn = False
            marker = _marker(payload.get("content"))
        elif item and "call_id" in payload and item.endswith("_output"):
            exp.roles["toolResult"] += 1
            in_turn = False
            marker = None  # a tool output: the leaf holds its call id
        else:
            exp.custom += 1
    exp.marker = marker
    exp.with_usage = sum(
        1
        for k, p in _codex_items(path)
        if k == "event_msg" and p.get("type") == "token_count" and isinstance(p.get("info"), dict)
    )
    return exp


def expect_swe(path: Path) -> Expected:
    doc = json.loads(path.read_bytes())
    exp = Expected(roots=1)
    config = doc.get("replay_config")
    config = json.loads(config) if isinstance(config, str) else config or {}
    name = ((config.get("agent") or {}).get("model") or {}).get("name")
    exp.model = name.split("/")[-1] if name else None
    history = doc.get("history") or []
    used = "history" if history else "trajectory"
    exp.custom = sum(1 for key in doc if key != used)
    for i, item in enumerate(history):
        role = item["role"]
        if role == "system" and i == 0:
            continue
        if role == "tool" and item.get("tool_call_ids"):
            exp.roles["toolResult"] += len(item["tool_call_ids"])
            continue
        exp.roles[{"system": "custom", "tool": "user"}.get(role, role)] += 1
        exp.tool_calls += len(item.get("tool_calls") or [])
    if history:
        exp.marker = _marker(history[-1].get("content"))
    return exp


_CHAT = "# aider chat started at "


def expect_aider(path: Path) -> Expected:
    lines = path.read_text().split("\n")
    exp = Expected()
    exp.roots = sum(line.startswith(_CHAT) for line in lines)
    exp.custom = exp.roots  # each chat's header line
    kind = None
    fence = False
    model = None
    for line in lines:
        if line.startswith(_CHAT) and not fence:
            kind = None
            continue
        if fence or not (line.startswith(("#### ", "> ")) or line.rstrip() in ("####", ">")):
            new = "assistant" if line.strip() or kind == "assistant" else kind
            if line.lstrip().startswith("```"):
                fence = not fence
        else:
            new = "user" if line.startswith("####") else "console"
        if new != kind and new is not None:
            if new == "console":
                exp.custom += 1
            elif new == "user":
                exp.roles["user"] += 1
            else:
                exp.roles["assistant"] += 1
                exp.model = model
        if new == "console":
            m = re.match(r"> (?:Main model|Model): (\S+)", line)
            if m:
                model = m.group(1).rpartition("/")[2]
        kind = new
    last = [ln for ln in lines if ln.strip() and not ln.startswith((">", _CHAT))][-1]
    exp.marker = _tail(last.removeprefix("#### "))
    return exp


def expect_cline(path: Path) -> Expected:
    doc = json.loads(path.read_bytes())
    exp = Expected(roots=1)
    open_calls = 0
    for msg in doc:
        content = msg["content"] if isinstance(msg["content"], list) else [{"type": "text"}]
        if msg["role"] == "assistant":
            exp.roles["assistant"] += 1
            open_calls = sum(b["type"] == "tool_use" for b in content)
            exp.tool_calls += open_calls
            exp.model = (msg.get("modelInfo") or {}).get("modelId", exp.model)
            exp.with_usage += "metrics" in msg
            continue
        results = 0
        for b in content:
            text_result = b["type"] == "text" and re.match(
                r"\[[\w.-]+( for .*)?\] Result:", b.get("text", "")
            )
            if b["type"] == "tool_result" or (text_result and open_calls > results):
                results += 1
        exp.roles["toolResult"] += results
        exp.roles["user"] += len(content) > results
        open_calls = 0
    exp.marker = _marker(doc[-1]["content"])
    return exp


def _gemini_records(path: Path) -> list[dict[str, Any]]:
    """The message records of a Gemini CLI chat, one per id (the last copy, first place)."""
    data = path.read_bytes()
    try:
        rows = [o for _, o in jsonl(path)]
        records = [o for o in rows[1:] if "$set" not in o]
    except json.JSONDecodeError:  # one pretty-printed document
        records = json.loads(data)["messages"]
    by_id: dict[str, dict[str, Any]] = {}
    for record in records:
        by_id[record["id"]] = record  # a dict keeps the first place of a key
    return list(by_id.values())


def expect_gemini(path: Path) -> Expected:
    exp = Expected(roots=1)
    last: dict[str, Any] | None = None
    for record in _gemini_records(path):
        kind = record["type"]
        if kind not in ("user", "gemini"):
            exp.custom += 1
            continue
        last = record
        if kind == "user":
            exp.roles["user"] += 1
            continue
        exp.roles["assistant"] += 1
        calls = record.get("toolCalls") or []
        exp.tool_calls += len(calls)
        exp.roles["toolResult"] += len(calls)
        exp.model = record.get("model", exp.model)
        exp.with_usage += (record.get("tokens") or {}).get("total", 0) > 0
    if last is not None:
        calls = last.get("toolCalls") or []
        exp.marker = calls[-1]["id"] if calls else _marker(last.get("content"))
    return exp


def _expect_copilot_state(path: Path) -> Expected:
    doc = json.loads(path.read_bytes())
    exp = Expected(roots=1, custom=1)  # the timeline, kept whole
    previous = None
    for message in doc["chatMessages"]:
        role = message["role"]
        if role == "assistant":
            exp.tool_calls += len(message.get("tool_calls") or [])
            if previous != "assistant":
                exp.roles["assistant"] += 1
        else:
            exp.roles["toolResult" if role == "tool" else role] += 1
        previous = role
    exp.marker = _marker(doc["chatMessages"][-1].get("content"))
    return exp


def expect_copilot(path: Path) -> Expected:
    if path.suffix == ".json":
        return _expect_copilot_state(path)
    rows = [o for _, o in jsonl(path)]
    exp = Expected()
    known: set[str] = set()
    last: dict[str, Any] | None = None
    completion_models = {
        o["data"]["toolCallId"]: o["data"]["model"]
        for o in rows
        if o["type"] == "tool.execution_complete" and "model" in o["data"]
    }
    model_change = None
    for obj in rows:
        kind, data = obj["type"], obj["data"]
        parent = obj.get("parentId")
        exp.roots += parent is None
        exp.dangling += parent is not None and parent not in known
        known.add(obj["id"])
        if kind == "session.model_change":
            model_change = data["newModel"]
        role = {
            "user.message": "user",
            "assistant.message": "assistant",
            "tool.execution_complete": "toolResult",
            "system.message": "custom",
        }.get(kind)
        if role is None:
            exp.custom += 1
            continue
        exp.roles[role] += 1
        if role != "custom":
            last = obj
        if role == "assistant":
            calls = data.get("toolRequests") or []
            exp.tool_calls += len(calls)
            exp.with_usage += data.get("outputTokens", 0) > 0
            named = [
                completion_models[c["toolCallId"]]
                for c in calls
                if c["toolCallId"] in completion_models
            ]
            exp.model = named[0] if named else model_change
    if last is not None:
        content = last["data"].get("content")
        if isinstance(last["data"].get("result"), dict):
            content = last["data"]["result"].get("content")
        exp.marker = _marker(content)
    return exp


EXPECT = {
    "pi": expect_pi,
    "claude-code": expect_claude,
    "codex": expect_codex,
    "swe-agent": expect_swe,
    "aider": expect_aider,
    "cline": expect_cline,
    "gemini-cli": expect_gemini,
    "copilot-cli": expect_copilot,
}
