"""GitHub Copilot CLI sessions → a session (docs/interop.md).

Copilot CLI has written two layouts:

* the **event log** (``~/.copilot/session-state/<id>/events.jsonl``, 2026): one event per
  line, ``{type, data, id, timestamp, parentId}``, chained by ``parentId``;
* the **legacy session state** (``~/.copilot/history-session-state/session_*.json``, 2025):
  one JSON document ``{sessionId, startTime, chatMessages, timeline}`` whose
  ``chatMessages`` are in the OpenAI chat format.

Event log, one entry per event (the entry id is the event's ``id``):

* ``session.start`` → a ``custom`` entry; its ``sessionId`` is the session's id, its
  ``context.cwd`` the metadata ``cwd`` and the rest of it the metadata under ``copilotCli``.
* ``system.message`` → a ``custom`` message ``copilot-cli:system`` (not displayed), as the
  Codex importer keeps developer instructions.
* ``user.message`` → a user message of ``content`` (``transformedContent`` when ``content`` is
  empty: a message the CLI wrote for the user); the event's other fields stay on the entry's
  ``source``.
* ``assistant.message`` → an assistant message: ``reasoningText`` a thinking block (signed
  with ``reasoningOpaque``), ``content`` text, each of ``toolRequests`` a tool call;
  ``outputTokens`` the usage's output. The model is the one its tool completions name, else
  the newest ``session.model_change``'s ``newModel``.
* ``tool.execution_complete`` → a toolResult (``result.content`` as text, ``isError`` unless
  ``success``, the rest of the event's data as ``details``).
* every other event (``tool.execution_start``, ``assistant.turn_start``, ``session.info``,
  ``session.shutdown``, …) → a ``custom`` entry ``copilot-cli:<type>``.

Parallel tool results arrive in the order the tools finish: they are stored in the order of
the calls of their assistant message, one under the other, and a record that names any
result of that run hangs under the run's last result. A ``parentId`` that names no earlier
event is re-attached to the previous event and reported. The leaf is the newest message.

Legacy state: the user message, then each model turn — consecutive assistant chat messages
with no user or tool message between them — as one assistant message, each ``tool`` message
as a toolResult. Times come from the ``timeline`` where a message can be matched (the user
message to ``user`` items in order, an assistant turn to the ``copilot`` item of its text,
a result to the ``tool_call_completed`` item of its call id), else the previous time (at
first ``startTime``); the entry id is the matched timeline item's ``id`` (so a grown file
gives the same ids), else ``<sessionId>:<index in chatMessages>``. The timeline is kept whole in
one ``custom`` entry ``copilot-cli:timeline`` at the start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from sessiontree import _json as exact_json
from sessiontree.entries import MessageEntry
from sessiontree.errors import CorruptSessionError
from sessiontree.ids import iso_or, ms_or
from sessiontree.interop._common import Converted, Draft, IdMaker, custom_draft
from sessiontree.interop.detect import strip_bom
from sessiontree.interop.jsonl_lines import lines_backward, read_jsonl
from sessiontree.interop.lenient_json import load_document
from sessiontree.interop.report import DanglingParent, ImportReport
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    CustomMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = ["convert_copilot_cli", "open_tail"]

PROVIDER = "github-copilot"
"""The provider of every Copilot CLI reply (Copilot routes to the model it names)."""

Row = tuple[int, dict[str, Any]]
Stamp = tuple[int, str | None]
"""A time (Unix ms) and the id of the timeline item it comes from."""


def _arguments(value: Any) -> dict[str, Any]:
    """Tool-call arguments: a dict, or a JSON object string (OpenAI chat format)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = exact_json.loads(value)
        except exact_json.JSONDecodeError:
            return {"arguments": value}
        return parsed if isinstance(parsed, dict) else {"arguments": parsed}
    return {} if value is None else {"arguments": value}


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else exact_json.dumps(value).decode()


def _data(obj: dict[str, Any]) -> dict[str, Any]:
    data = obj.get("data")
    return data if isinstance(data, dict) else {}


def _event_id(obj: dict[str, Any]) -> str | None:
    value = obj.get("id")
    return value if isinstance(value, str) and value else None


# ----------------------------------------------------------------- event log


def _models(rows: list[Row]) -> dict[int, str]:
    """The model of each ``assistant.message`` line: its tool completions' ``model``, else
    the newest ``session.model_change`` before it."""
    completion_model: dict[str, str] = {}
    for _, obj in rows:
        data = _data(obj)
        if obj.get("type") == "tool.execution_complete" and isinstance(data.get("model"), str):
            completion_model[str(data.get("toolCallId"))] = data["model"]
    out: dict[int, str] = {}
    current: str | None = None
    for line, obj in rows:
        data = _data(obj)
        if obj.get("type") == "session.model_change" and isinstance(data.get("newModel"), str):
            current = data["newModel"]
        elif obj.get("type") == "assistant.message":
            calls = [
                r.get("toolCallId") for r in data.get("toolRequests") or [] if isinstance(r, dict)
            ]
            named = next((completion_model[c] for c in calls if c in completion_model), None)
            model = named or current
            if model is not None:
                out[line] = model
    return out


def _runs(rows: list[Row]) -> tuple[list[Row], dict[str, str], dict[str, str]]:
    """Put the tool results of each assistant message in its call order.

    Returns the rows (each run's result lines moved into call order, in the places those
    lines had), the parent each result gets (the previous result of its run; the first keeps
    the parent of the run's first line), and for each result id the id of its run's last
    result (what a record naming it hangs under).
    """
    rank: dict[str, tuple[int, int]] = {}  # call id -> (line of the request, position)
    for line, obj in rows:
        if obj.get("type") == "assistant.message":
            requests = _data(obj).get("toolRequests") or []
            for k, request in enumerate(requests):
                if isinstance(request, dict) and isinstance(request.get("toolCallId"), str):
                    rank.setdefault(request["toolCallId"], (line, k))
    groups: dict[int, list[int]] = {}
    for i, (_, obj) in enumerate(rows):
        if obj.get("type") != "tool.execution_complete" or _event_id(obj) is None:
            continue
        call = _data(obj).get("toolCallId")
        if isinstance(call, str) and call in rank:
            groups.setdefault(rank[call][0], []).append(i)
    out = list(rows)
    result_parent: dict[str, str] = {}
    last_of_run: dict[str, str] = {}
    for places in groups.values():
        ordered = sorted(
            (rows[i] for i in places), key=lambda r: rank[_data(r[1])["toolCallId"]][1]
        )
        for i, row in zip(places, ordered, strict=True):
            out[i] = row
        ids = [str(_event_id(o)) for _, o in ordered]
        first_parent = rows[places[0]][1].get("parentId")
        for k, event_id in enumerate(ids):
            if k > 0:
                result_parent[event_id] = ids[k - 1]
            elif isinstance(first_parent, str) and first_parent not in ids:
                result_parent[event_id] = first_parent
            last_of_run[event_id] = ids[-1]
    return out, result_parent, last_of_run


def _event_message(
    obj: dict[str, Any], ms: int, model: str | None, tool_names: dict[str, str]
) -> AgentMessage | None:
    kind = obj.get("type")
    data = _data(obj)
    if kind == "system.message":
        return CustomMessage(
            custom_type="copilot-cli:system",
            content=[TextContent(text=_text(data.get("content")))],
            display=False,
            timestamp=ms,
        )
    if kind == "user.message":
        text = data.get("content")
        if not (isinstance(text, str) and text):
            text = data.get("transformedContent")
        return UserMessage(content=[TextContent(text=_text(text))], timestamp=ms)
    if kind == "assistant.message":
        blocks: list[ContentBlock] = []
        if isinstance(data.get("reasoningText"), str) and data["reasoningText"]:
            signature = data.get("reasoningOpaque")
            blocks.append(
                ThinkingContent(
                    thinking=data["reasoningText"],
                    thinking_signature=signature if isinstance(signature, str) else None,
                )
            )
        if isinstance(data.get("content"), str) and data["content"]:
            blocks.append(TextContent(text=data["content"]))
        for request in data.get("toolRequests") or []:
            if isinstance(request, dict):
                call_id = str(request.get("toolCallId", ""))
                blocks.append(
                    ToolCall(
                        id=call_id,
                        name=str(request.get("name", "")),
                        arguments=_arguments(request.get("arguments")),
                    )
                )
        fields: dict[str, Any] = {
            "content": blocks,
            "api": PROVIDER,
            "provider": PROVIDER,
            "timestamp": ms,
            "stop_reason": "toolUse" if data.get("toolRequests") else "stop",
        }
        if model is not None:
            fields["model"] = model
        tokens = data.get("outputTokens")
        if isinstance(tokens, int) and not isinstance(tokens, bool):
            fields["usage"] = Usage(output=tokens, total_tokens=tokens)
        return AssistantMessage(**fields)
    if kind == "tool.execution_complete":
        call_id = str(data.get("toolCallId", ""))
        result = data.get("result")
        content = result.get("content") if isinstance(result, dict) else result
        if content is None and isinstance(data.get("error"), dict | str):
            content = data["error"]
        details = {k: v for k, v in data.items() if k != "toolCallId"}
        return ToolResultMessage(
            tool_call_id=call_id,
            tool_name=tool_names.get(call_id, ""),
            content=[TextContent(text=_text(content))],
            details=details,
            is_error=data.get("success") is not True,
            timestamp=ms,
        )
    return None


def _convert_events(data: bytes, path: Path, report: ImportReport, *, lenient: bool) -> Converted:
    rows = list(read_jsonl(data, path, report, lenient=lenient))
    out = Converted()
    start = next((o for _, o in rows if o.get("type") == "session.start"), None)
    info = dict(_data(start)) if start is not None else {}
    meta: dict[str, Any] = {}
    context = info.get("context")
    if isinstance(context, dict) and isinstance(context.get("cwd"), str):
        meta["cwd"] = context["cwd"]
    session_id = info.get("sessionId")
    if isinstance(session_id, str):
        report.source_session_id = session_id
        out.session_id = session_id
    meta["copilotCli"] = info
    meta["importedFrom"] = {"format": "copilot-cli", "path": str(path), "sessionId": session_id}
    out.metadata = meta

    tool_names: dict[str, str] = {}
    for _, obj in rows:
        if obj.get("type") == "assistant.message":
            for r in _data(obj).get("toolRequests") or []:
                if isinstance(r, dict):
                    tool_names[str(r.get("toolCallId", ""))] = str(r.get("name", ""))
    models = _models(rows)
    rows, result_parent, last_of_run = _runs(rows)
    ids = IdMaker(data)
    seen: set[str] = set()
    previous: str | None = None
    last_ms = next((ms for _, o in rows if (ms := ms_or(o.get("timestamp"), 0)) > 0), 0)
    leaf: str | None = None
    for line, obj in rows:
        last_ms = ms_or(obj.get("timestamp"), last_ms)
        ts = iso_or(last_ms, last_ms)
        entry_id = _event_id(obj)
        if entry_id is None or entry_id in seen:
            entry_id = ids.make(last_ms, line)
        raw_parent = obj.get("parentId")
        parent: str | None = None
        if entry_id in result_parent:
            parent = result_parent[entry_id]
        elif isinstance(raw_parent, str) and raw_parent:
            parent = last_of_run.get(raw_parent, raw_parent)
        if parent is not None and parent not in seen and parent not in last_of_run:
            # names no earlier event: re-attached to the previous one (a root when first)
            report.dangling_parents.append(
                DanglingParent(line, entry_id, str(raw_parent), "names no entry", previous)
            )
            parent = previous
        kind = obj.get("type")
        message: AgentMessage | None = None
        try:
            message = _event_message(obj, last_ms, models.get(line), tool_names)
        except (ValidationError, ValueError, TypeError):
            report.warnings.append(
                f"line {line}: a {kind} event that could not be read as a message is kept as "
                "a custom entry"
            )
        if message is not None:
            source = {
                "format": "copilot-cli",
                "line": line,
                "event": {
                    **{k: v for k, v in obj.items() if k != "data"},
                    "data": {
                        k: v
                        for k, v in _data(obj).items()
                        if k not in ("content", "reasoningText", "toolRequests")
                    },
                },
            }
            out.drafts.append(
                Draft(
                    MessageEntry(
                        id=entry_id,
                        parent_id=parent,
                        timestamp=ts,
                        message=message,
                        source=source,
                    ),
                    line,
                )
            )
            leaf = entry_id
        else:
            out.drafts.append(
                custom_draft(
                    report,
                    f"copilot-cli:{kind}",
                    obj,
                    line=line,
                    entry_id=entry_id,
                    parent_id=parent,
                    timestamp=ts,
                )
            )
        seen.add(entry_id)
        previous = entry_id
    out.leaf_id = leaf
    return out


# ----------------------------------------------------------------- legacy state


def _timeline_times(
    timeline: list[Any],
) -> tuple[list[Stamp], dict[str, list[Stamp]], dict[str, Stamp]]:
    """From the timeline, ``(Unix ms, item id)`` of the ``user`` items in order, of the
    ``copilot`` items by text and of the ``tool_call_completed`` items by call id."""
    users: list[Stamp] = []
    replies: dict[str, list[Stamp]] = {}
    results: dict[str, Stamp] = {}
    for item in timeline:
        if not isinstance(item, dict):
            continue
        ms = ms_or(item.get("timestamp"), -1)
        if ms < 0:
            continue
        item_id = item.get("id") if isinstance(item.get("id"), str) and item["id"] else None
        stamp = (ms, item_id)
        kind = item.get("type")
        if kind == "user":
            users.append(stamp)
        elif kind == "copilot" and isinstance(item.get("text"), str):
            replies.setdefault(item["text"], []).append(stamp)
        elif kind == "tool_call_completed" and isinstance(item.get("callId"), str):
            results.setdefault(item["callId"], stamp)
    return users, replies, results


def _later(ms: int, stamp: tuple[int | None, str | None]) -> int:
    """``ms``, or the stamp's time when it is later (message times never go back)."""
    return ms if stamp[0] is None else max(ms, stamp[0])


def _turns(messages: list[Any]) -> list[list[dict[str, Any]]]:
    """Chat messages grouped: consecutive assistant messages are one model turn."""
    out: list[list[dict[str, Any]]] = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "assistant" and out and out[-1][0].get("role") == "assistant":
            out[-1].append(m)
        else:
            out.append([m])
    return out


def _chat_text(content: Any) -> list[ContentBlock]:
    if isinstance(content, str):
        return [TextContent(text=content)] if content else []
    if isinstance(content, list):
        out: list[ContentBlock] = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(TextContent(text=part["text"]))
            elif isinstance(part, str):
                out.append(TextContent(text=part))
        return out
    return []


def _convert_state(data: bytes, path: Path, report: ImportReport) -> Converted:
    try:
        doc, repaired = load_document(strip_bom(data))
    except exact_json.JSONDecodeError as exc:
        raise CorruptSessionError(f"not a JSON document: {exc}", path=path) from exc
    if repaired:
        report.warnings.append(repaired)
    if not isinstance(doc, dict) or not isinstance(doc.get("chatMessages"), list):
        raise CorruptSessionError("not a Copilot CLI session state: no chatMessages", path=path)
    report.lines_read = strip_bom(data).count(b"\n") + 1
    out = Converted()
    session_id = doc.get("sessionId")
    if isinstance(session_id, str):
        report.source_session_id = session_id
        out.session_id = session_id
    info = {k: v for k, v in doc.items() if k not in ("chatMessages", "timeline")}
    out.metadata = {
        "copilotCli": info,
        "importedFrom": {"format": "copilot-cli", "path": str(path), "sessionId": session_id},
    }
    ids = IdMaker(data)
    last_ms = ms_or(doc.get("startTime"), 0)
    timeline = doc.get("timeline")
    users, replies, results = _timeline_times(timeline if isinstance(timeline, list) else [])
    parent: str | None = None
    if isinstance(timeline, list):
        draft = custom_draft(
            report,
            "copilot-cli:timeline",
            timeline,
            line=None,
            entry_id=f"{session_id}:timeline"
            if isinstance(session_id, str)
            else ids.make(last_ms, "timeline"),
            timestamp=iso_or(last_ms, last_ms),
            where="timeline",
        )
        out.drafts.append(draft)
        parent = draft.entry.id
    tool_names: dict[str, str] = {}
    used: set[str] = set()
    user_index = 0
    index = 0
    leaf: str | None = None
    for turn in _turns(doc["chatMessages"]):
        first = turn[0]
        role = first.get("role")
        where = f"chatMessages[{index}]"
        message: AgentMessage | None = None
        stamp: tuple[int | None, str | None] = (None, None)
        try:
            if role == "user":
                if user_index < len(users):
                    stamp = users[user_index]
                user_index += 1
                last_ms = _later(last_ms, stamp)
                message = UserMessage(content=_chat_text(first.get("content")), timestamp=last_ms)
            elif role == "assistant":
                blocks: list[ContentBlock] = []
                for m in turn:
                    text_blocks = _chat_text(m.get("content"))
                    for b in text_blocks:
                        times = replies.get(b.text) if isinstance(b, TextContent) else None
                        if times and stamp == (None, None):
                            stamp = times.pop(0)
                    blocks.extend(text_blocks)
                    for call in m.get("tool_calls") or []:
                        if not isinstance(call, dict):
                            continue
                        function = call.get("function")
                        function = function if isinstance(function, dict) else {}
                        call_id, name = str(call.get("id", "")), str(function.get("name", ""))
                        tool_names[call_id] = name
                        blocks.append(
                            ToolCall(
                                id=call_id,
                                name=name,
                                arguments=_arguments(function.get("arguments")),
                            )
                        )
                last_ms = _later(last_ms, stamp)
                has_calls = any(isinstance(b, ToolCall) for b in blocks)
                message = AssistantMessage(
                    content=blocks,
                    api=PROVIDER,
                    provider=PROVIDER,
                    timestamp=last_ms,
                    stop_reason="toolUse" if has_calls else "stop",
                )
            elif role == "tool":
                call_id = str(first.get("tool_call_id", ""))
                stamp = results.get(call_id, stamp)
                last_ms = _later(last_ms, stamp)
                message = ToolResultMessage(
                    tool_call_id=call_id,
                    tool_name=tool_names.get(call_id, ""),
                    content=_chat_text(first.get("content")) or [TextContent(text="")],
                    timestamp=last_ms,
                )
        except (ValidationError, ValueError, TypeError):
            report.warnings.append(
                f"{where}: a {role} message that could not be read is kept as a custom entry"
            )
            message = None
        if stamp[1] and stamp[1] not in used:
            entry_id = stamp[1]
        elif isinstance(session_id, str):
            entry_id = f"{session_id}:{index}"  # chat messages are only ever appended
        else:
            entry_id = ids.make(last_ms, where)
        used.add(entry_id)
        ts = iso_or(last_ms, last_ms)
        if message is not None:
            source = {
                "format": "copilot-cli",
                "where": where,
                "messages": len(turn),
            }
            out.drafts.append(
                Draft(
                    MessageEntry(
                        id=entry_id, parent_id=parent, timestamp=ts, message=message, source=source
                    )
                )
            )
            leaf = entry_id
        else:
            out.drafts.append(
                custom_draft(
                    report,
                    f"copilot-cli:{role}",
                    turn,
                    line=None,
                    entry_id=entry_id,
                    parent_id=parent,
                    timestamp=ts,
                    where=where,
                )
            )
        parent = entry_id
        index += len(turn)
    out.leaf_id = leaf
    return out


def convert_copilot_cli(
    data: bytes, path: Path, report: ImportReport, *, lenient: bool
) -> Converted:
    """Parse a Copilot CLI event log or legacy session state into drafts and metadata. Pure.

    Raises:
        CorruptSessionError: (event log) a line that is not a JSON object and not
            ``lenient``; (legacy state) the document does not parse or has no
            ``chatMessages``.
    """
    stripped = strip_bom(data).lstrip()
    first = stripped.split(b"\n", 1)[0]
    try:
        head = exact_json.loads(first)
    except exact_json.JSONDecodeError:
        head = None  # the first line of a document written over several lines
    if isinstance(head, dict) and "data" in head and not isinstance(head.get("chatMessages"), list):
        return _convert_events(data, path, report, lenient=lenient)
    return _convert_state(data, path, report)


_TURN_EVENTS = (b'"assistant.turn_start"', b'"assistant.turn_end"', b'"user.message"')


def open_tail(data: bytes) -> int:
    """Where the open turn of an event log starts (bytes; ``len(data)`` when none is open),
    for :func:`sessiontree.interop.settling.settled`.

    A model turn runs from ``assistant.turn_start`` to ``assistant.turn_end``; until the
    end is written a later event can still change what is read before it: the reply's model
    comes from its tool completions, and its parallel results are put in call order once
    they have all finished. A turn is over at its ``turn_end``, or at the next
    ``user.message`` (a turn cut off). The legacy session state (one JSON document,
    rewritten whole) has no rule: it is settled whole.
    """
    for begin, line in lines_backward(data):
        if not any(marker in line for marker in _TURN_EVENTS):
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind == "assistant.turn_start":
            return begin
        if kind in ("assistant.turn_end", "user.message"):
            return len(data)
    return len(data)
