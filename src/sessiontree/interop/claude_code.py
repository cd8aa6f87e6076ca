"""Claude Code transcripts (``~/.claude/projects/<dir>/<session>.jsonl``) → a session (docs/interop.md).

Every line is a JSON object. Lines with a ``uuid`` are tree nodes linked by ``parentUuid``.
How they are imported:

* ``user`` / ``assistant`` lines with a ``message`` become ``message`` entries; the entry id
  is the line's ``uuid``. Assistant ``text`` / ``thinking`` / ``tool_use`` blocks become
  text / thinking / toolCall blocks (``signature`` → ``thinkingSignature``, ``input`` →
  ``arguments``); other block types are kept as opaque blocks. A user line whose content
  holds ``tool_result`` blocks becomes one ``toolResult`` message per block (the tool name
  looked up from the call, ``toolUseResult`` as ``details``), followed by a user message
  for any other blocks; the extra entries get ids ``<uuid>:2``, ``<uuid>:3``, ... and the
  line's children hang under the last of them.
* One API response that Claude Code split over several ``assistant`` lines (one content
  block per line, same ``message.id``) stays one entry per line, so every ``uuid`` keeps its
  place in the tree; the response's ``usage`` is put on the last of those lines only, so
  token statistics are not counted several times.
* Every other line (``summary``, ``system``, ``attachment``, ``permission-mode``,
  ``file-history-snapshot``, ``ai-title``, ``last-prompt``, ``progress``, ...) becomes a
  ``custom`` entry of type ``claude-code:<type>`` whose ``data`` is the whole line. With a
  ``uuid`` it keeps its place in the tree; without one it hangs under the entry of the
  nearest earlier node line (lines before the first node hang under the first node).
* A ``parentUuid`` that names no line makes its entry a root, listed in the report.
* A second line with a ``uuid`` already used (Claude Code rewrites lines when a session is
  resumed) is kept whole as a ``claude-code:duplicate`` custom entry, with a warning.
* What a line carries besides the translated message (``cwd``, ``gitBranch``, ``isMeta``,
  ``requestId``, the raw ``message`` fields, ...) is kept on the entry under
  ``source = {"format": "claude-code", "line": n, "record": {...}}``.
* The leaf is the newest message of the main conversation: side records and inline
  sub-agent (``isSidechain``) lines never end up as the leaf; when the file ends with one,
  a ``leaf`` entry moves the leaf back. A file made only of sidechain lines (a sub-agent's
  own ``agent-*.jsonl``) is its own main conversation.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sessiontree.entries import Entry, MessageEntry
from sessiontree.interop._common import (
    Converted,
    Draft,
    IdMaker,
    custom_draft,
    iso_or,
    ms_or,
    read_jsonl,
)
from sessiontree.interop.report import ImportReport
from sessiontree.messages import (
    AssistantMessage,
    ContentBlock,
    ImageContent,
    OpaqueBlock,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = ["convert_claude_code"]

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
    "pause_turn": "stop",
    "refusal": "error",
}


def _uuid(obj: dict[str, Any]) -> str | None:
    value = obj.get("uuid")
    return value if isinstance(value, str) and value else None


def _image(block: dict[str, Any]) -> ContentBlock:
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        extra = {k: v for k, v in block.items() if k not in ("type", "source")}
        return ImageContent(
            data=str(source.get("data", "")),
            mime_type=str(source.get("media_type", "")),
            **extra,
        )
    return OpaqueBlock(**block)


def _block(block: Any) -> ContentBlock:
    """One Claude content block as ours; unknown kinds stay opaque with every key."""
    if not isinstance(block, dict):
        return TextContent(text=str(block))
    kind = block.get("type")
    rest = {k: v for k, v in block.items() if k != "type"}
    if kind == "text":
        return TextContent(**rest)
    if kind == "thinking":
        signature = rest.pop("signature", None)
        if signature:
            rest["thinking_signature"] = signature
        return ThinkingContent(**rest)
    if kind == "tool_use":
        args = rest.pop("input", None)
        return ToolCall(arguments=args if isinstance(args, dict) else {"input": args}, **rest)
    if kind == "image":
        return _image(block)
    return OpaqueBlock(**block)


def _result_content(content: Any) -> list[ContentBlock]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextContent(text=content)]
    if isinstance(content, list):
        return [_block(b) for b in content]
    return [TextContent(text=str(content))]


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    counts = {
        "input": raw.get("input_tokens"),
        "output": raw.get("output_tokens"),
        "cache_read": raw.get("cache_read_input_tokens"),
        "cache_write": raw.get("cache_creation_input_tokens"),
    }
    ints = {
        k: v if isinstance(v, int) and not isinstance(v, bool) else 0 for k, v in counts.items()
    }
    return Usage(**ints, total_tokens=sum(ints.values()))


def _record(obj: dict[str, Any], line: int, *, drop: tuple[str, ...]) -> dict[str, Any]:
    record = {k: v for k, v in obj.items() if k not in ("message", *drop)}
    msg = obj.get("message")
    if isinstance(msg, dict):
        record["message"] = {k: v for k, v in msg.items() if k != "content"}
    return {"format": "claude-code", "line": line, "record": record}


def _user_entries(
    obj: dict[str, Any], line: int, uuid: str, ts: str, ms: int, tool_names: dict[str, str]
) -> list[Entry]:
    content = obj["message"].get("content")
    source = _record(obj, line, drop=("toolUseResult",))
    if not isinstance(content, list):
        text = content if isinstance(content, str) else ("" if content is None else str(content))
        message = UserMessage(content=text, timestamp=ms)
        return [MessageEntry(id=uuid, timestamp=ts, message=message, source=source)]
    messages: list[Any] = []
    other: list[ContentBlock] = []
    details = obj.get("toolUseResult")
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            call_id = str(block.get("tool_use_id", ""))
            extra = {
                k: v
                for k, v in block.items()
                if k not in ("type", "tool_use_id", "content", "is_error")
            }
            fields: dict[str, Any] = {
                "tool_call_id": call_id,
                "tool_name": tool_names.get(call_id, ""),
                "content": _result_content(block.get("content")),
                "is_error": bool(block.get("is_error", False)),
                "timestamp": ms,
                **extra,
            }
            if details is not None and not any(isinstance(m, ToolResultMessage) for m in messages):
                fields["details"] = details
            messages.append(ToolResultMessage(**fields))
        else:
            other.append(_block(block))
    if other or not messages:
        messages.append(UserMessage(content=other, timestamp=ms))
    if details is not None and not any(isinstance(m, ToolResultMessage) for m in messages):
        source["record"]["toolUseResult"] = details
    entries: list[Entry] = []
    for i, msg in enumerate(messages):
        if i == 0:
            entries.append(MessageEntry(id=uuid, timestamp=ts, message=msg, source=source))
        else:
            entries.append(MessageEntry(id=f"{uuid}:{i + 1}", timestamp=ts, message=msg))
    return entries


def _assistant_entry(
    obj: dict[str, Any], line: int, uuid: str, ts: str, ms: int, with_usage: bool
) -> Entry:
    msg = obj["message"]
    content = msg.get("content")
    blocks = (
        [_block(b) for b in content]
        if isinstance(content, list)
        else ([TextContent(text=content)] if isinstance(content, str) and content else [])
    )
    fields: dict[str, Any] = {
        "content": blocks,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "timestamp": ms,
    }
    if isinstance(msg.get("model"), str):
        fields["model"] = msg["model"]
    raw_stop = msg.get("stop_reason")
    if isinstance(raw_stop, str):
        fields["stop_reason"] = _STOP_REASONS.get(raw_stop, raw_stop)
    elif any(isinstance(b, ToolCall) for b in blocks):
        fields["stop_reason"] = "toolUse"
    if with_usage:
        usage = _usage(msg.get("usage"))
        if usage is not None:
            fields["usage"] = usage
    message = AssistantMessage(**fields)
    return MessageEntry(id=uuid, timestamp=ts, message=message, source=_record(obj, line, drop=()))


def convert_claude_code(
    data: bytes, path: Path, report: ImportReport, *, lenient: bool
) -> Converted:
    """Parse a Claude Code transcript into drafts and metadata. Pure, no I/O.

    Raises:
        CorruptSessionError: a line that is not a JSON object and not ``lenient``.
    """
    rows = list(read_jsonl(data, path, report, lenient=lenient))
    tool_names: dict[str, str] = {}
    last_line_of_response: dict[str, int] = {}
    first_node: dict[str, Any] | None = None
    for line, obj in rows:
        msg = obj.get("message")
        if obj.get("type") == "assistant" and isinstance(msg, dict):
            if isinstance(msg.get("id"), str):
                last_line_of_response[msg["id"]] = line
            for b in msg.get("content") or []:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    tool_names[str(b.get("id", ""))] = str(b.get("name", ""))
        if first_node is None and _uuid(obj) is not None:
            first_node = obj
    nodes = [obj for _, obj in rows if _uuid(obj) is not None]
    sidechain_only = bool(nodes) and all(obj.get("isSidechain") is True for obj in nodes)

    out = Converted()
    _fill_metadata(out, report, path, first_node, sidechain_only)

    ids = IdMaker(data)
    tail_of: dict[str, str] = {}  # line uuid -> id of the last entry made from that line
    anchor: str | None = None  # where the next line without a uuid hangs
    pending: list[Draft] = []  # uuid-less lines before the first node
    last_ms = 0
    main_leaf: str | None = None
    for line, obj in rows:
        last_ms = ms_or(obj.get("timestamp"), last_ms)
        ts = iso_or(obj.get("timestamp"), last_ms)
        kind = obj.get("type")
        uuid = _uuid(obj)
        custom_type = f"claude-code:{kind}"
        if uuid is not None and uuid in tail_of:
            # Claude Code rewrites lines on resume: a second line with a known uuid is kept
            # whole, beside the first, and never replaces it
            report.warnings.append(
                f"line {line}: uuid {uuid!r} was already used by an earlier line; "
                "this line is kept as a claude-code:duplicate custom entry"
            )
            uuid, custom_type = None, "claude-code:duplicate"
        if uuid is None:
            draft = custom_draft(
                report,
                custom_type,
                obj,
                line=line,
                entry_id=ids.make(last_ms, line),
                parent_id=anchor,
                timestamp=ts,
            )
            if anchor is None:
                pending.append(draft)
            out.drafts.append(draft)
            continue
        raw_parent = obj.get("parentUuid")
        parent = tail_of.get(raw_parent, raw_parent) if isinstance(raw_parent, str) else None
        entries = _line_entries(obj, line, uuid, ts, last_ms, tool_names, last_line_of_response)
        if entries is None:
            if kind in ("user", "assistant"):
                report.warnings.append(
                    f"line {line}: a {kind} line whose message could not be read as a message "
                    f"is kept as a custom entry"
                )
            entries = [
                custom_draft(
                    report, f"claude-code:{kind}", obj, line=line, entry_id=uuid, timestamp=ts
                ).entry
            ]
        for i, entry in enumerate(entries):
            link = parent if i == 0 else entries[i - 1].id
            entry = entry.model_copy(update={"parent_id": link})
            entry.__pydantic_fields_set__.add("parent_id")
            entries[i] = entry
            out.drafts.append(Draft(entry, line))
        tail_of[uuid] = entries[-1].id
        anchor = entries[-1].id
        if pending:
            for d in pending:
                d.entry = d.entry.model_copy(update={"parent_id": anchor})
            pending.clear()
        is_main = sidechain_only or obj.get("isSidechain") is not True
        if is_main and isinstance(entries[-1], MessageEntry):
            main_leaf = entries[-1].id
    # uuid-less lines and no node at all: chain them so they still form one tree
    for prev, d in itertools.pairwise(pending):
        d.entry = d.entry.model_copy(update={"parent_id": prev.entry.id})
    out.leaf_id = main_leaf
    return out


def _line_entries(
    obj: dict[str, Any],
    line: int,
    uuid: str,
    ts: str,
    ms: int,
    tool_names: dict[str, str],
    last_line_of_response: dict[str, int],
) -> list[Entry] | None:
    """The message entries of a user/assistant line, ``None`` when it is kept as custom."""
    kind = obj.get("type")
    msg = obj.get("message")
    if kind not in ("user", "assistant") or not isinstance(msg, dict):
        return None
    try:
        if kind == "user":
            return _user_entries(obj, line, uuid, ts, ms, tool_names)
        response_id = msg.get("id")
        with_usage = (
            not isinstance(response_id, str) or last_line_of_response.get(response_id) == line
        )
        return [_assistant_entry(obj, line, uuid, ts, ms, with_usage)]
    except (ValidationError, ValueError, TypeError):
        return None


def _fill_metadata(
    out: Converted,
    report: ImportReport,
    path: Path,
    first: dict[str, Any] | None,
    sidechain_only: bool,
) -> None:
    meta: dict[str, Any] = {}
    info: dict[str, Any] = {}
    if first is not None:
        if isinstance(first.get("cwd"), str):
            meta["cwd"] = first["cwd"]
        for key in ("sessionId", "version", "gitBranch", "agentId", "slug", "entrypoint"):
            if first.get(key) is not None:
                info[key] = first[key]
    session_id = info.get("sessionId")
    if isinstance(session_id, str):
        report.source_session_id = session_id
    agent = info.get("agentId")
    if sidechain_only and isinstance(agent, str):
        # a sub-agent's own file names its parent's session: keep both apart
        out.session_id = f"{session_id}-agent-{agent}" if session_id else f"agent-{agent}"
    elif isinstance(session_id, str):
        out.session_id = session_id
    meta["claudeCode"] = info
    meta["importedFrom"] = {"format": "claude-code", "path": str(path), "sessionId": session_id}
    out.metadata = meta
