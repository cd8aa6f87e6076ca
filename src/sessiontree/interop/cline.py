"""Cline / Roo Code task exports (``api_conversation_history.json``) → a session (docs/interop.md).

The task file is one JSON array of Anthropic-format messages (``role``, ``content`` blocks:
``text``, ``image``, ``thinking``, ``tool_use``, ``tool_result``), the conversation exactly as
sent to the model. Imported as a linear session:

* assistant messages: text / thinking / toolCall blocks, ``modelInfo`` (``providerId``,
  ``modelId``) as provider and model, ``metrics.tokens`` (``prompt``, ``completion``,
  ``cached``) as ``usage``;
* user messages: ``tool_result`` blocks become toolResult messages. Cline versions that answer
  a native ``tool_use`` with a text block ``[<tool> for '<arg>'] Result: …`` instead of a
  ``tool_result`` block: that text is the call's result (a toolResult message), so the real
  output is in the context, not a "result lost" placeholder. The other blocks of the message
  (environment details, the user's words) follow as a user message.

Times: Roo Code stamps each message (``ts``, Unix ms). Cline does not; when the task's
``ui_messages.json`` is beside the file, a message gets the time of the first UI event of its
place in the conversation (``conversationHistoryIndex``), else the file's modification time.
The session id is ``cline-<task folder name>`` when the folder's name is a task id (digits),
else ``cline-<hash of the content>``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sessiontree import _json as exact_json
from sessiontree.entries import Entry, MessageEntry
from sessiontree.errors import CorruptSessionError
from sessiontree.ids import is_ms, iso_from_ms
from sessiontree.interop._common import Converted, Draft, IdMaker, unreadable
from sessiontree.interop.detect import strip_bom
from sessiontree.interop.lenient_json import load_document
from sessiontree.interop.report import ImportReport
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from sessiontree.wire.claude_code import block, result_content

__all__ = ["UI_MESSAGES", "convert_cline", "ui_times"]

UI_MESSAGES = "ui_messages.json"
"""The UI log Cline writes beside ``api_conversation_history.json``."""
_TEXT_RESULT = re.compile(r"^\[(?P<tool>[\w.-]+)(?: for (?:'.*?'|[^\]]*))?\] Result:", re.S)


def ui_times(ui: Any) -> dict[int, int]:
    """``conversation index → time (Unix ms)`` of the first UI event at each index."""
    times: dict[int, int] = {}
    if not isinstance(ui, list):
        return times
    for event in ui:
        if not isinstance(event, dict):
            continue
        ts, index = event.get("ts"), event.get("conversationHistoryIndex")
        if not (isinstance(ts, int) and is_ms(ts)):
            continue
        if isinstance(index, int) and index + 1 not in times:
            times[index + 1] = ts
        if 0 not in times:
            times[0] = ts
    return times


def _usage(msg: dict[str, Any]) -> Usage | None:
    metrics = msg.get("metrics")
    tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
    if not isinstance(tokens, dict):
        return None

    def count(key: str) -> int:
        v = tokens.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else 0

    return Usage(
        input=count("prompt"),
        output=count("completion"),
        cache_read=count("cached"),
        total_tokens=count("prompt") + count("completion") + count("cached"),
    )


def _assistant(msg: dict[str, Any], ms: int) -> AssistantMessage:
    content = msg.get("content")
    blocks = [block(b) for b in content] if isinstance(content, list) else []
    if isinstance(content, str) and content:
        blocks = [TextContent(text=content)]
    info = msg.get("modelInfo")
    fields: dict[str, Any] = {"content": blocks, "api": "anthropic-messages", "timestamp": ms}
    if isinstance(info, dict):
        if isinstance(info.get("providerId"), str):
            fields["provider"] = info["providerId"]
        if isinstance(info.get("modelId"), str):
            fields["model"] = info["modelId"]
    fields["stop_reason"] = "toolUse" if any(isinstance(b, ToolCall) for b in blocks) else "stop"
    usage = _usage(msg)
    if usage is not None:
        fields["usage"] = usage
    return AssistantMessage(**fields)


def _user(msg: dict[str, Any], ms: int, open_calls: list[ToolCall]) -> list[AgentMessage]:
    """The toolResult messages, then the user message, one Cline user message stands for."""
    content = msg.get("content")
    if not isinstance(content, list):
        return [UserMessage(content=content if isinstance(content, str) else "", timestamp=ms)]
    names = {c.id: c.name for c in open_calls}
    out: list[AgentMessage] = []
    rest: list[ContentBlock] = []
    for b in content:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            call_id = str(b.get("tool_use_id", ""))
            out.append(
                ToolResultMessage(
                    tool_call_id=call_id,
                    tool_name=names.get(call_id, ""),
                    content=result_content(b.get("content")),
                    is_error=bool(b.get("is_error", False)),
                    timestamp=ms,
                )
            )
            open_calls[:] = [c for c in open_calls if c.id != call_id]
            continue
        text = b.get("text") if isinstance(b, dict) and b.get("type") == "text" else None
        m = _TEXT_RESULT.match(text) if isinstance(text, str) else None
        if m and open_calls:
            wanted = m.group("tool")
            call = next((c for c in open_calls if c.name == wanted), open_calls[0])
            open_calls.remove(call)
            out.append(
                ToolResultMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=[TextContent(text=str(text))],
                    timestamp=ms,
                )
            )
            continue
        rest.append(block(b))
    if rest or not out:
        out.append(UserMessage(content=rest, timestamp=ms))
    return out


def _session_id(path: Path, data: bytes) -> str:
    folder = path.parent.name
    if folder.isdigit():
        return f"cline-{folder}"
    return "cline-" + hashlib.sha256(data).hexdigest()[:32]


def convert_cline(
    data: bytes,
    path: Path,
    report: ImportReport,
    *,
    lenient: bool,
    mtime_ms: int = 0,
    ui: Any = None,
) -> Converted:
    """Parse a Cline / Roo Code task into a linear chain of drafts. Pure, no I/O.

    ``ui`` is the parsed ``ui_messages.json`` of the task (or ``None``); ``mtime_ms`` dates
    messages that have no other time.

    Raises:
        CorruptSessionError: the file is not a JSON array; a message that cannot be read and
            not ``lenient``.
    """
    try:
        doc, repaired = load_document(strip_bom(data))
    except exact_json.JSONDecodeError as exc:
        raise CorruptSessionError(f"not a JSON document: {exc}", path=path) from exc
    if repaired is not None:
        report.warnings.append(repaired)
    if not isinstance(doc, list):
        raise CorruptSessionError("a Cline task is a JSON array of messages", path=path)
    report.lines_read = 1
    times = ui_times(ui)
    if times:
        report.warnings.append(f"message times taken from {UI_MESSAGES} of the task")
    out = Converted()
    ids = IdMaker(data)
    parent: str | None = None
    ms = times.get(0, mtime_ms)
    open_calls: list[ToolCall] = []
    for index, msg in enumerate(doc):
        where = f"message {index}"
        stamp = msg.get("ts") if isinstance(msg, dict) else None
        ms = max(ms, stamp if isinstance(stamp, int) and is_ms(stamp) else times.get(index, ms))
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            unreadable(
                report,
                path,
                None,
                f"{where}: not a user or assistant message",
                exact_json.dumps(msg).decode(),
                lenient=lenient,
            )
            continue
        try:
            if msg["role"] == "assistant":
                reply = _assistant(msg, ms)
                open_calls = reply.tool_calls()
                messages: list[AgentMessage] = [reply]
            else:
                messages = _user(msg, ms, open_calls)
        except (ValidationError, ValueError, TypeError) as exc:
            unreadable(
                report,
                path,
                None,
                f"{where}: {exc}",
                exact_json.dumps(msg).decode(),
                lenient=lenient,
            )
            continue
        extra = {k: v for k, v in msg.items() if k not in ("role", "content")}
        for part, message in enumerate(messages):
            fields: dict[str, Any] = {
                "id": ids.make(ms, index, part),
                "parent_id": parent,
                "timestamp": iso_from_ms(ms),
                "message": message,
            }
            if part == 0:
                fields["source"] = {"format": "cline", "index": index, "record": extra}
            entry: Entry = MessageEntry(**fields)
            out.drafts.append(Draft(entry, None))
            parent = entry.id
    out.leaf_id = parent
    out.session_id = _session_id(path, data)
    out.metadata = {"importedFrom": {"format": "cline", "path": str(path)}}
    return out
