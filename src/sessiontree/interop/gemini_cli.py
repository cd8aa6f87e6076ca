"""Gemini CLI chat recordings (``~/.gemini/tmp/<project hash>/chats/``) → a session (docs/interop.md).

Gemini CLI has written two layouts:

* **one JSON document** (``session-*.json``, rewritten whole after every message):
  ``{sessionId, projectHash, startTime, lastUpdated, messages: [...]}``;
* **JSONL** (2026): a header line ``{sessionId, projectHash, startTime, lastUpdated, kind}``,
  then one message record per line, ``{"$set": {...}}`` lines that update header fields, and
  a record written again with the same ``id`` when it changes (a reply gets its tool calls
  and their results): the last copy wins, in the place of the first.

Each message record is ``{id, timestamp, type, content, ...}``:

* ``user`` → a user message (``content`` a string or a list of parts: ``text``, ``inlineData``
  images; other parts stay opaque). ``displayContent`` (what the user typed, e.g. ``/init``,
  when the CLI expanded it) is kept on the entry's ``source``.
* ``gemini`` → an assistant message: ``thoughts`` (``subject``/``description``) become
  thinking blocks, ``content`` text, each of ``toolCalls`` a toolCall block (``args`` as its
  arguments); ``model`` and ``tokens`` (``input`` counts cached tokens, ``thoughts`` are
  output) give the model and usage. Then one toolResult message per call, from its
  ``result`` (``functionResponse.response.output``/``error``), ``isError`` unless ``status``
  is ``success``, with the call's record (``resultDisplay``, ``status``, ``displayName``, …)
  as ``details``. A result's entry id is ``<record id>:<call id>``.
* ``info``, ``error``, ``warning`` and other types → ``custom`` entries
  ``gemini-cli:<type>`` (shown to the user, never sent to the model).

Records are chained in order; the entry id is the record's ``id`` (a record without one gets
an id made from its place). The leaf is the newest message. The header (with every ``$set``
applied) is kept in metadata under ``geminiCli``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from sessiontree import _json as exact_json
from sessiontree.entries import Entry, MessageEntry
from sessiontree.errors import CorruptSessionError
from sessiontree.ids import iso_or, ms_or
from sessiontree.interop._common import Converted, Draft, IdMaker, custom_draft
from sessiontree.interop.detect import is_gemini_cli_header, strip_bom
from sessiontree.interop.jsonl_lines import lines_backward, read_jsonl
from sessiontree.interop.lenient_json import load_document
from sessiontree.interop.report import ImportReport
from sessiontree.messages import (
    AgentMessage,
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

__all__ = ["convert_gemini_cli", "settled"]

Record = tuple[int | None, dict[str, Any]]


def _records(
    data: bytes, path: Path, report: ImportReport, *, lenient: bool
) -> tuple[dict[str, Any], list[Record]]:
    """The header (``$set`` applied) and the message records, one per id, in first-seen order."""
    stripped = strip_bom(data).lstrip()
    try:
        first = exact_json.loads(stripped.split(b"\n", 1)[0])
    except exact_json.JSONDecodeError:
        first = None  # the first line of a document written over several lines
    header: dict[str, Any] = {}
    rows: list[Record] = []
    if not isinstance(first, dict) or isinstance(first.get("messages"), list):
        try:
            doc, repaired = load_document(strip_bom(data))
        except exact_json.JSONDecodeError as exc:
            raise CorruptSessionError(f"not a JSON document: {exc}", path=path) from exc
        if repaired:
            report.warnings.append(repaired)
        report.lines_read = stripped.count(b"\n") + 1
        if isinstance(doc, dict):
            header = {k: v for k, v in doc.items() if k != "messages"}
            messages = doc.get("messages")
            rows = [(None, m) for m in messages or [] if isinstance(m, dict)]
        return header, _last_copy_wins(rows)
    for line, obj in read_jsonl(data, path, report, lenient=lenient):
        if not header and is_gemini_cli_header(obj):
            header = dict(obj)
        elif isinstance(obj.get("$set"), dict) and len(obj) == 1:
            header.update(obj["$set"])
        else:
            rows.append((line, obj))
    return header, _last_copy_wins(rows)


def _last_copy_wins(rows: list[Record]) -> list[Record]:
    """One record per id: the last copy, in the place of the first. The lines of the copies
    it replaced are listed under the key ``_copies`` of the kept record (a new dict)."""
    place: dict[str, int] = {}
    out: list[Record] = []
    for line, obj in rows:
        record_id = obj.get("id")
        if isinstance(record_id, str) and record_id in place:
            earlier_line, earlier = out[place[record_id]]
            copies = [*earlier.get("_copies", ()), earlier_line]
            out[place[record_id]] = (line, {**obj, "_copies": copies})
            continue
        if isinstance(record_id, str):
            place[record_id] = len(out)
        out.append((line, obj))
    return out


def _parts(content: Any) -> list[ContentBlock]:
    if isinstance(content, str):
        return [TextContent(text=content)] if content else []
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return []
    out: list[ContentBlock] = []
    for part in content:
        if isinstance(part, str):
            out.append(TextContent(text=part))
        elif isinstance(part, dict) and isinstance(part.get("text"), str) and len(part) == 1:
            out.append(TextContent(text=part["text"]))
        elif isinstance(part, dict) and isinstance(part.get("inlineData"), dict):
            inline = part["inlineData"]
            out.append(
                ImageContent(
                    data=str(inline.get("data", "")), mime_type=str(inline.get("mimeType", ""))
                )
            )
        elif isinstance(part, dict):
            out.append(OpaqueBlock(type=f"gemini:{next(iter(part), 'part')}", part=part))
    return out


def _usage(tokens: Any) -> Usage | None:
    if not isinstance(tokens, dict):
        return None

    def count(key: str) -> int:
        value = tokens.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    cached = count("cached")
    return Usage(
        input=max(count("input") - cached, 0),
        output=count("output") + count("thoughts"),
        cache_read=cached,
        total_tokens=count("total"),
    )


def _result_text(call: dict[str, Any]) -> list[ContentBlock]:
    texts: list[str] = []
    for part in call.get("result") or []:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        body = response.get("response") if isinstance(response, dict) else None
        if isinstance(body, dict):
            value = body.get("output", body.get("error"))
            texts.append(value if isinstance(value, str) else exact_json.dumps(body).decode())
        elif part is not None:
            texts.append(part if isinstance(part, str) else exact_json.dumps(part).decode())
    return [TextContent(text="\n".join(texts))]


def _reply(obj: dict[str, Any], ms: int) -> tuple[AssistantMessage, list[ToolResultMessage]]:
    blocks: list[ContentBlock] = []
    for thought in obj.get("thoughts") or []:
        if isinstance(thought, dict):
            text = "\n".join(str(thought[k]) for k in ("subject", "description") if thought.get(k))
            blocks.append(ThinkingContent(thinking=text))
    blocks.extend(_parts(obj.get("content")))
    results: list[ToolResultMessage] = []
    for call in obj.get("toolCalls") or []:
        if not isinstance(call, dict):
            continue
        call_id, name = str(call.get("id", "")), str(call.get("name", ""))
        args = call.get("args")
        blocks.append(
            ToolCall(id=call_id, name=name, arguments=args if isinstance(args, dict) else {})
        )
        details = {k: v for k, v in call.items() if k not in ("args", "result")}
        results.append(
            ToolResultMessage(
                tool_call_id=call_id,
                tool_name=name,
                content=_result_text(call),
                details=details,
                is_error=call.get("status") != "success",
                timestamp=ms_or(call.get("timestamp"), ms),
            )
        )
    fields: dict[str, Any] = {
        "content": blocks,
        "api": "google-generative-ai",
        "provider": "google",
        "timestamp": ms,
        "stop_reason": "toolUse" if results else "stop",
    }
    if isinstance(obj.get("model"), str):
        fields["model"] = obj["model"]
    usage = _usage(obj.get("tokens"))
    if usage is not None:
        fields["usage"] = usage
    return AssistantMessage(**fields), results


def _source(obj: dict[str, Any], line: int | None) -> dict[str, Any]:
    """What a message entry keeps of its record: the keys the message does not hold, and the
    lines of the earlier copies of the record (``merged``)."""
    drop = ("content", "thoughts", "toolCalls", "_copies")
    source: dict[str, Any] = {
        "format": "gemini-cli",
        "line": line,
        "record": {k: v for k, v in obj.items() if k not in drop},
    }
    if obj.get("_copies"):
        source["merged"] = [{"line": n} for n in obj["_copies"]]
    return source


def convert_gemini_cli(
    data: bytes, path: Path, report: ImportReport, *, lenient: bool
) -> Converted:
    """Parse a Gemini CLI chat recording (either layout) into drafts and metadata. Pure, no I/O.

    Raises:
        CorruptSessionError: (JSONL) a line that is not a JSON object and not ``lenient``;
            (one document) the document does not parse.
    """
    header, records = _records(data, path, report, lenient=lenient)
    out = Converted()
    session_id = header.get("sessionId")
    if isinstance(session_id, str):
        report.source_session_id = session_id
        out.session_id = session_id
    out.metadata = {
        "geminiCli": header,
        "importedFrom": {"format": "gemini-cli", "path": str(path), "sessionId": session_id},
    }
    ids = IdMaker(data)
    parent: str | None = None
    last_ms = ms_or(header.get("startTime"), 0)
    leaf: str | None = None
    for index, (line, obj) in enumerate(records):
        last_ms = ms_or(obj.get("timestamp"), last_ms)
        ts = iso_or(obj.get("timestamp"), last_ms)
        record_id = obj.get("id")
        entry_id = record_id if isinstance(record_id, str) and record_id else None
        kind = obj.get("type")
        entries: list[Entry] = []
        try:
            messages: list[AgentMessage]
            if kind == "user":
                messages = [UserMessage(content=_parts(obj.get("content")), timestamp=last_ms)]
            elif kind == "gemini":
                reply, results = _reply(obj, last_ms)
                messages = [reply, *results]
            else:
                messages = []
            first_id = entry_id or ids.make(last_ms, line if line is not None else f"m{index}")
            for k, message in enumerate(messages):
                own_id = first_id
                if isinstance(message, ToolResultMessage):
                    own_id = f"{first_id}:{message.tool_call_id}"
                entries.append(
                    MessageEntry(
                        id=own_id,
                        parent_id=parent if k == 0 else entries[-1].id,
                        timestamp=ts,
                        message=message,
                        **({"source": _source(obj, line)} if k == 0 else {}),
                    )
                )
        except (ValidationError, ValueError, TypeError):
            report.warnings.append(
                f"{'line ' + str(line) if line is not None else f'message {index}'}: a {kind} "
                "record that could not be read as a message is kept as a custom entry"
            )
            entries = []
        if entries:
            out.drafts.extend(Draft(e, line) for e in entries)
            parent = leaf = entries[-1].id
            continue
        draft = custom_draft(
            report,
            f"gemini-cli:{kind}",
            {k: v for k, v in obj.items() if k != "_copies"},
            line=line,
            entry_id=entry_id or ids.make(last_ms, line if line is not None else f"m{index}"),
            parent_id=parent,
            timestamp=ts,
            where=None if line is not None else f"messages[{index}]",
        )
        out.drafts.append(draft)
        parent = draft.entry.id
    out.leaf_id = leaf
    return out


def settled(data: bytes) -> bytes:
    """What of a recording no later write can change, for
    :func:`sessiontree.interop.settling.settled`: ``data`` without its open turn.

    Gemini CLI changes only its newest message record once written: a ``gemini`` reply gets
    its usage (``tokens``) and its ``toolCalls`` (each call's status and result) after it is
    first written, until another message record follows it. So a recording whose newest
    message is a ``gemini`` reply has that reply open. In the JSONL layout it is held back
    from its first copy on (the bytes before it); the one-document layout is rewritten
    whole, so its settled part is the document without that message (written anew, compact).
    A recording that does not parse is returned whole (the import reports it).
    """
    stripped = strip_bom(data).lstrip()
    first = stripped.split(b"\n", 1)[0]
    try:
        head = exact_json.loads(first)
    except exact_json.JSONDecodeError:
        head = None
    if isinstance(head, dict) and not isinstance(head.get("messages"), list):
        return data[: _open_record(data)]
    try:
        doc, _ = load_document(strip_bom(data))
    except exact_json.JSONDecodeError:
        return data
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if not messages or not isinstance(messages[-1], dict) or messages[-1].get("type") != "gemini":
        return data
    return bytes(exact_json.dumps({**doc, "messages": messages[:-1]}))


def _open_record(data: bytes) -> int:
    """Where the newest message record of a JSONL recording first appears when it is a
    ``gemini`` reply (its earlier copies, ``$set`` lines between them, included), else
    ``len(data)``."""
    open_id: str | None = None
    start = len(data)
    for begin, line in lines_backward(data):
        if b'"id"' not in line:
            continue  # a $set line, the header
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        record_id = obj.get("id") if isinstance(obj, dict) else None
        if not isinstance(record_id, str) or "$set" in obj:
            continue
        if open_id is None:
            if obj.get("type") != "gemini":
                return len(data)
            open_id = record_id
        elif record_id != open_id:
            break
        start = begin
    return start
