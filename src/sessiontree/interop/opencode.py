"""OpenCode sessions → a session (docs/interop.md).

OpenCode keeps a session as ``Session.Info`` plus its messages, each ``{info, parts}``.
Three places hold them, all read here:

* **JSON**: the output of ``opencode export`` (one document ``{info, messages, todos}``), or the
  share API's pair ``session.json`` (the ``Session.Info``) + ``messages.json`` (the
  ``[{info, parts}]`` list) — either file of the pair can be imported, the other is read from
  beside it when it is there;
* the **storage directory** (``~/.local/share/opencode/storage/``, before 1.2):
  ``session/<project>/<session id>.json``, ``message/<session id>/<message id>.json`` and
  ``part/<message id>/<part id>.json``; import the session file, the messages and parts are
  read from the same storage root;
* the **SQLite database** (``~/.local/share/opencode/opencode.db``, 1.2 and later): tables
  ``session`` (one column per field), ``message`` and ``part`` (``data`` a JSON object of the
  info or part without its ids, ``time_created`` in Unix ms).

Mapping (entry ids are OpenCode's own message and part ids, so a grown session gives the
same ids):

* a ``user`` message → a user message of its ``text`` parts (``file`` parts holding an image
  as a ``data:`` URL become images, other parts stay opaque blocks);
* an ``assistant`` message → one assistant message per step (``step-start`` … ``step-finish``):
  ``reasoning`` parts as thinking blocks, ``text`` parts as text, ``tool`` parts as tool calls
  (``callID``, ``tool``, ``state.input``), each followed by its toolResult (``state.output``,
  or ``state.error`` with ``isError``; a call still ``pending``/``running`` gets no result);
  the step's ``step-finish`` tokens and cost as usage, ``modelID``/``providerID`` as model and
  provider, ``finish`` as the stop reason (``tool-calls`` → ``toolUse``) and ``error`` as the
  error message. The first step's entry id is the message id, a later step's its
  ``step-start`` part id, a result's its tool part id. ``patch``, ``snapshot`` and other
  bookkeeping parts stay on the entry's ``source``;
* a compaction — a user message with a ``compaction`` part answered by a finished
  ``summary`` assistant message — becomes a ``custom`` entry ``opencode:compaction`` (the
  request) and a ``compaction`` entry (the summary message's id and text; the request's
  ``tail_start_id``, when it names an earlier message, is the first kept entry, else nothing
  before it is kept), so the context after it is what OpenCode sends its model.

Messages are chained in order (``parentID`` names the user message a run of replies answers,
not the previous message; it is kept on ``source``). The leaf is the newest message. The
``Session.Info`` is kept in the metadata under ``opencode``; its ``directory`` is ``cwd``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sessiontree import _json as exact_json
from sessiontree.entries import CompactionEntry, MessageEntry
from sessiontree.errors import CorruptSessionError
from sessiontree.ids import iso_or, ms_or
from sessiontree.interop._common import Converted, Draft, IdMaker, custom_draft
from sessiontree.interop.detect import (
    SQLITE_HEADER,
    database_tables,
    is_opencode_messages,
    is_opencode_session_info,
    open_database,
    pick_database_session,
    strip_bom,
)
from sessiontree.interop.lenient_json import load_document
from sessiontree.interop.report import ImportReport
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    Cost,
    ImageContent,
    OpaqueBlock,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = ["convert_opencode", "opencode_database_sessions"]

Message = dict[str, Any]
"""One OpenCode message: ``{"info": {...}, "parts": [{...}, ...]}``."""

_STOP = {"tool-calls": "toolUse", "stop": "stop", "length": "length"}


# ----------------------------------------------------------------- SQLite


def opencode_database_sessions(data: bytes) -> list[str] | None:
    """The session ids of an OpenCode database (oldest first), ``None`` when ``data`` is not
    one (no ``session``/``message``/``part`` tables)."""
    if not data.startswith(SQLITE_HEADER):
        return None
    try:
        conn = open_database(data)
    except sqlite3.DatabaseError:
        return None
    try:
        if not {"session", "message", "part"} <= database_tables(conn):
            return None
        rows = conn.execute("SELECT id FROM session ORDER BY time_created, id").fetchall()
        return [str(r[0]) for r in rows]
    except sqlite3.DatabaseError:
        return None
    finally:
        conn.close()


def _json_column(value: Any) -> Any:
    if isinstance(value, str | bytes):
        try:
            return exact_json.loads(value)
        except exact_json.JSONDecodeError:
            return value
    return value


def _session_from_row(row: sqlite3.Row) -> dict[str, Any]:
    """A ``Session.Info`` from a row of the ``session`` table (its columns, camelCased)."""
    r = dict(row)
    info: dict[str, Any] = {
        "id": r.get("id"),
        "slug": r.get("slug"),
        "projectID": r.get("project_id"),
        "directory": r.get("directory"),
        "title": r.get("title"),
        "version": r.get("version"),
        "time": {"created": r.get("time_created"), "updated": r.get("time_updated")},
    }
    for key, column in (
        ("parentID", "parent_id"),
        ("workspaceID", "workspace_id"),
        ("path", "path"),
        ("agent", "agent"),
    ):
        if r.get(column) is not None:
            info[key] = r[column]
    if r.get("share_url"):
        info["share"] = {"url": r["share_url"]}
    if r.get("model") is not None:
        info["model"] = _json_column(r["model"])
    if "cost" in r:
        info["cost"] = r["cost"]
    tokens = {k: r[f"tokens_{k}"] for k in ("input", "output", "reasoning") if f"tokens_{k}" in r}
    if tokens:
        tokens["cache"] = {"read": r.get("tokens_cache_read"), "write": r.get("tokens_cache_write")}
        info["tokens"] = tokens
    return info


def _from_database(
    data: bytes, path: Path, source_session: str | None
) -> tuple[dict[str, Any] | None, list[Message]]:
    source_session = pick_database_session(
        opencode_database_sessions(data), source_session, path, "OpenCode"
    )
    conn = open_database(data)
    conn.row_factory = sqlite3.Row
    try:
        row = conn.execute("SELECT * FROM session WHERE id = ?", (source_session,)).fetchone()
        info = _session_from_row(row)
        parts: dict[str, list[dict[str, Any]]] = {}
        for p in conn.execute(
            "SELECT id, message_id, session_id, data FROM part WHERE session_id = ? "
            "ORDER BY message_id, id",
            (source_session,),
        ):
            body = _json_column(p["data"])
            body = body if isinstance(body, dict) else {"data": body}
            parts.setdefault(p["message_id"], []).append(
                {"id": p["id"], "sessionID": p["session_id"], "messageID": p["message_id"], **body}
            )
        messages: list[Message] = []
        for m in conn.execute(
            "SELECT id, session_id, time_created, data FROM message WHERE session_id = ? "
            "ORDER BY time_created, id",
            (source_session,),
        ):
            body = _json_column(m["data"])
            body = body if isinstance(body, dict) else {"data": body}
            info_m = {"id": m["id"], "sessionID": m["session_id"], **body}
            if not isinstance(info_m.get("time"), dict):
                info_m["time"] = {"created": m["time_created"]}
            messages.append({"info": info_m, "parts": parts.get(m["id"], [])})
    except sqlite3.DatabaseError as exc:
        raise CorruptSessionError(f"cannot read the OpenCode database: {exc}", path=path) from exc
    finally:
        conn.close()
    return info, messages


# ----------------------------------------------------------------- JSON


def _from_json(
    data: bytes, path: Path, report: ImportReport, companion: Any
) -> tuple[dict[str, Any] | None, list[Message]]:
    try:
        doc, repaired = load_document(strip_bom(data))
    except exact_json.JSONDecodeError as exc:
        raise CorruptSessionError(f"not a JSON document: {exc}", path=path) from exc
    if repaired:
        report.warnings.append(repaired)
    report.lines_read = strip_bom(data).count(b"\n") + 1
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list) and "info" in doc:
        info = doc["info"] if isinstance(doc["info"], dict) else None
        extra = {k: v for k, v in doc.items() if k not in ("info", "messages")}
        if info is not None and extra:
            info = {**info, "export": extra}  # e.g. the todos of ``opencode export``
        return info, [m for m in doc["messages"] if isinstance(m, dict)]
    if is_opencode_session_info(doc):
        if not isinstance(companion, list):
            raise CorruptSessionError(
                "an OpenCode Session.Info without its messages: no messages.json beside it "
                "and not in a storage directory (session/<project>/<id>.json with "
                "message/<id>/ next to session/)",
                path=path,
            )
        return doc, [m for m in companion if isinstance(m, dict)]
    if is_opencode_messages(doc):
        return (companion if isinstance(companion, dict) else None), doc
    raise CorruptSessionError(
        "not an OpenCode session: neither an export, a Session.Info nor a message list",
        path=path,
    )


# ----------------------------------------------------------------- mapping


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _usage(tokens: Any, cost: Any) -> Usage | None:
    if not isinstance(tokens, dict):
        return None
    cache = _dict(tokens.get("cache"))
    counts = {
        "input": _int(tokens.get("input")),
        "output": _int(tokens.get("output")) + _int(tokens.get("reasoning")),
        "cache_read": _int(cache.get("read")),
        "cache_write": _int(cache.get("write")),
    }
    priced = isinstance(cost, int | float) and not isinstance(cost, bool)
    return Usage(
        **counts,
        total_tokens=_int(tokens.get("total")) or sum(counts.values()),
        cost=Cost(total=float(cost)) if priced else None,
    )


def _user_blocks(parts: list[dict[str, Any]]) -> list[ContentBlock]:
    out: list[ContentBlock] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            out.append(TextContent(text=part["text"]))
        elif kind == "file" and str(part.get("mime", "")).startswith("image/"):
            url = str(part.get("url", ""))
            if url.startswith("data:") and "," in url:
                out.append(ImageContent(data=url.split(",", 1)[1], mime_type=str(part["mime"])))
            else:
                out.append(OpaqueBlock(type="opencode:file", part=part))
        elif kind not in ("step-start", "step-finish", "snapshot", "patch"):
            out.append(OpaqueBlock(type=f"opencode:{kind}", part=part))
    return out


def _tool_result(part: dict[str, Any], fallback_ms: int) -> ToolResultMessage | None:
    state = _dict(part.get("state"))
    status = state.get("status")
    if status not in ("completed", "error"):
        return None
    value = state.get("output") if status == "completed" else state.get("error")
    text = value if isinstance(value, str) else exact_json.dumps(value).decode()
    times = _dict(state.get("time"))
    details = {k: v for k, v in state.items() if k not in ("input", "output")}
    return ToolResultMessage(
        tool_call_id=str(part.get("callID", "")),
        tool_name=str(part.get("tool", "")),
        content=[TextContent(text=text)],
        details=details,
        is_error=status == "error",
        timestamp=ms_or(times.get("end"), fallback_ms),
    )


def _steps(parts: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The parts of an assistant message split at each ``step-start`` (after the first)."""
    steps: list[list[dict[str, Any]]] = [[]]
    for part in parts:
        if part.get("type") == "step-start" and any(
            p.get("type") not in ("step-start",) for p in steps[-1]
        ):
            steps.append([])
        steps[-1].append(part)
    return steps


def _assistant(
    info: dict[str, Any], step: list[dict[str, Any]], ms: int, last: bool
) -> tuple[AssistantMessage, list[ToolResultMessage]]:
    blocks: list[ContentBlock] = []
    results: list[ToolResultMessage] = []
    finish: dict[str, Any] | None = None
    for part in step:
        kind = part.get("type")
        if kind == "reasoning" and isinstance(part.get("text"), str):
            blocks.append(ThinkingContent(thinking=part["text"]))
        elif kind == "text" and isinstance(part.get("text"), str):
            blocks.append(TextContent(text=part["text"]))
        elif kind == "tool":
            state = _dict(part.get("state"))
            args = state.get("input")
            blocks.append(
                ToolCall(
                    id=str(part.get("callID", "")),
                    name=str(part.get("tool", "")),
                    arguments=args if isinstance(args, dict) else {},
                )
            )
            result = _tool_result(part, ms)
            if result is not None:
                results.append(result)
        elif kind == "step-finish":
            finish = part
    fields: dict[str, Any] = {"content": blocks, "timestamp": ms}
    if isinstance(info.get("providerID"), str):
        fields["provider"] = fields["api"] = info["providerID"]
    if isinstance(info.get("modelID"), str):
        fields["model"] = info["modelID"]
    reason = finish.get("reason") if finish is not None else (info.get("finish") if last else None)
    if reason is None and any(isinstance(b, ToolCall) for b in blocks):
        reason = "tool-calls"
    if isinstance(reason, str):
        fields["stop_reason"] = _STOP.get(reason, reason)
    usage = (
        _usage(finish.get("tokens"), finish.get("cost"))
        if finish is not None
        else (_usage(info.get("tokens"), info.get("cost")) if last else None)
    )
    if usage is not None:
        fields["usage"] = usage
    error = info.get("error")
    if last and isinstance(error, dict):
        body = _dict(error.get("data"))
        fields["stop_reason"] = "error"
        fields["error_message"] = str(body.get("message") or error.get("name") or "error")
    return AssistantMessage(**fields), results


def _source(info: dict[str, Any], step: list[dict[str, Any]]) -> dict[str, Any]:
    """What a message entry keeps that its message does not hold: the message's ``info`` and
    its bookkeeping parts (``step-start``, ``step-finish``, ``patch``, …)."""
    return {
        "format": "opencode",
        "info": info,
        "parts": [p for p in step if p.get("type") not in ("text", "reasoning", "tool")],
    }


def _compactions(messages: list[Message]) -> tuple[dict[str, str | None], dict[str, str]]:
    """OpenCode's compactions: the user messages holding a ``compaction`` part (id → the part's
    ``tail_start_id``) that a finished, error-free ``summary`` assistant message answers, and
    those summary messages (id → the request's id)."""
    asked: dict[str, str | None] = {}
    for message in messages:
        m_info = _dict(message.get("info"))
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "compaction":
                tail = part.get("tail_start_id")
                asked[str(m_info.get("id"))] = tail if isinstance(tail, str) else None
    summaries: dict[str, str] = {}
    for message in messages:
        m_info = _dict(message.get("info"))
        request = m_info.get("parentID")
        if (
            m_info.get("role") == "assistant"
            and m_info.get("summary") is True
            and m_info.get("finish")
            and not m_info.get("error")
            and request in asked
            and isinstance(m_info.get("id"), str)
        ):
            summaries[m_info["id"]] = str(request)
    done = set(summaries.values())
    return {k: v for k, v in asked.items() if k in done}, summaries


def _compaction(
    info: dict[str, Any],
    parts: list[dict[str, Any]],
    entry_id: str,
    parent: str | None,
    ms: int,
    placed: set[str],
    tail: str | None,
) -> CompactionEntry:
    """The ``compaction`` entry of a summary message: its text is the summary; the request's
    ``tail_start_id``, when it names a message already placed, is the first kept entry."""
    text = "\n".join(
        p["text"] for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str)
    )
    tokens = _dict(info.get("tokens"))
    before = _int(tokens.get("input")) + _int(_dict(tokens.get("cache")).get("read"))
    fields: dict[str, Any] = {}
    if tail is not None and tail in placed:
        fields["first_kept_entry_id"] = tail
    else:
        fields["retained_tail"] = []
    usage = _usage(info.get("tokens"), info.get("cost"))
    if usage is not None:
        fields["usage"] = usage
    return CompactionEntry(
        id=entry_id,
        parent_id=parent,
        timestamp=iso_or(ms, ms),
        summary=text,
        tokens_before=before,
        source=_source(info, parts),
        **fields,
    )


def convert_opencode(
    data: bytes,
    path: Path,
    report: ImportReport,
    *,
    lenient: bool,
    companion: Any = None,
    source_session: str | None = None,
) -> Converted:
    """Parse an OpenCode session (export JSON, share pair, storage session file or database
    bytes) into drafts and metadata. Pure, no I/O.

    ``companion`` is what the caller read beside the file: the other file of a share pair
    (``Session.Info`` or the message list) or, for a storage session file, its messages
    ``[{info, parts}]``. ``source_session`` names the session of a database holding several.

    Raises:
        CorruptSessionError: the JSON does not parse or is no OpenCode session; a
            ``Session.Info`` without its messages (no ``companion`` list); a database
            with several sessions and no ``source_session``, or without that session.
    """
    del lenient  # one document or one database: nothing to skip line by line
    if data.startswith(SQLITE_HEADER):
        info, messages = _from_database(data, path, source_session)
    else:
        info, messages = _from_json(data, path, report, companion)
    out = Converted()
    meta: dict[str, Any] = {}
    session_id = info.get("id") if info is not None else None
    if session_id is None and messages:
        session_id = _dict(messages[0].get("info")).get("sessionID")
    if isinstance(session_id, str):
        report.source_session_id = session_id
        out.session_id = session_id
    if info is not None:
        if isinstance(info.get("directory"), str):
            meta["cwd"] = info["directory"]
        meta["opencode"] = info
    meta["importedFrom"] = {"format": "opencode", "path": str(path), "sessionId": session_id}
    out.metadata = meta

    ids = IdMaker(data)
    requests, summaries = _compactions(messages)
    placed: set[str] = set()
    parent: str | None = None
    leaf: str | None = None
    created = _dict(info.get("time")).get("created") if info is not None else None
    last_ms = ms_or(created, 0)
    for index, message in enumerate(messages):
        m_info = _dict(message.get("info"))
        parts = [p for p in message.get("parts") or [] if isinstance(p, dict)]
        times = _dict(m_info.get("time"))
        last_ms = ms_or(times.get("created"), last_ms)
        message_id = m_info.get("id") if isinstance(m_info.get("id"), str) else None
        base_id = message_id or ids.make(last_ms, f"messages[{index}]")
        role = m_info.get("role")
        if message_id in summaries:
            tail = requests[summaries[message_id]]
            compaction = _compaction(m_info, parts, base_id, parent, last_ms, placed, tail)
            out.drafts.append(Draft(compaction))
            parent = leaf = base_id
            placed.add(base_id)
            continue
        made: list[tuple[str, AgentMessage, dict[str, Any] | None]] = []
        try:
            if message_id in requests:
                made = []  # a compaction request: kept as a custom entry below
            elif role == "user":
                made.append(
                    (
                        base_id,
                        UserMessage(content=_user_blocks(parts), timestamp=last_ms),
                        _source(m_info, parts),
                    )
                )
            elif role == "assistant":
                steps = _steps(parts)
                for k, step in enumerate(steps):
                    started = [
                        p["time"]["start"]
                        for p in step
                        if isinstance(p.get("time"), dict) and "start" in p["time"]
                    ]
                    step_ms = ms_or(started[0], last_ms) if started and k > 0 else last_ms
                    reply, results = _assistant(m_info, step, step_ms, k == len(steps) - 1)
                    own = base_id if k == 0 else str(step[0].get("id") or f"{base_id}:{k}")
                    made.append((own, reply, _source(m_info, step)))
                    tool_parts = {str(p.get("callID")): p for p in step if p.get("type") == "tool"}
                    for result in results:
                        part_id = tool_parts[result.tool_call_id].get("id")
                        made.append(
                            (
                                str(part_id) if part_id else f"{own}:{result.tool_call_id}",
                                result,
                                None,
                            )
                        )
        except (ValidationError, ValueError, TypeError):
            report.warnings.append(
                f"messages[{index}]: a {role} message that could not be read is kept as a "
                "custom entry"
            )
            made = []
        if made:
            for entry_id, msg, source in made:
                fields: dict[str, Any] = {}
                if source is not None:
                    fields["source"] = source
                out.drafts.append(
                    Draft(
                        MessageEntry(
                            id=entry_id,
                            parent_id=parent,
                            timestamp=iso_or(getattr(msg, "timestamp", last_ms), last_ms),
                            message=msg,
                            **fields,
                        )
                    )
                )
                parent = leaf = entry_id
                placed.add(entry_id)
            continue
        draft = custom_draft(
            report,
            "opencode:compaction" if message_id in requests else f"opencode:{role}",
            message,
            line=None,
            entry_id=base_id,
            parent_id=parent,
            timestamp=iso_or(last_ms, last_ms),
            where=f"messages[{index}]",
        )
        out.drafts.append(draft)
        parent = draft.entry.id
        placed.add(parent)
    out.leaf_id = leaf
    return out
