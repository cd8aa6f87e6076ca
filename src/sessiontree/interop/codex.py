"""Codex CLI / Codex Desktop rollout files (``rollout-*.jsonl``) → a linear session (docs/interop.md).

Two layouts. The current one: each line is ``{"timestamp", "type", "payload"}``. The 2025 one:
a bare ``{id, timestamp, instructions, git}`` header line, then ``{"record_type": "state"}``
lines and bare response items (no ``payload`` wrapper, no timestamps). Rollouts have no parent
pointers, so entries are chained in file order.

* ``response_item`` ``message``: ``user`` → a user message; ``developer``/``system`` → a
  ``custom`` message (``customType`` ``codex:developer``, not displayed) so the instructions
  stay in the context.
* One model turn — ``reasoning`` items with a summary (a thinking block), ``assistant``
  messages and ``*_call`` items with a ``call_id``
  (``function_call``, ``custom_tool_call``, ``local_shell_call``, ``tool_search_call``, ...)
  up to the next user message, tool output or ``task_complete`` — is **one** assistant message (text blocks,
  then a toolCall block per call; ``function_call`` arguments decoded from JSON), with the
  id and place of its first item; the other items' records are kept in ``source.merged``.
  The matching ``*_output`` items → toolResult messages.
* An ``event_msg`` ``token_count`` gives the newest turn before it its ``usage``
  (``last_token_usage``: input without the cached part, cached input as ``cacheRead``).
* A ``compacted`` line (Codex replaced the model's history: ``/compact`` or an automatic
  compaction) becomes a ``compaction`` entry in retained-tail mode: its ``summary`` is the
  line's ``message`` (often empty), its ``retained_tail`` the messages of the
  ``replacement_history`` (model items grouped into assistant messages as above; items that
  are no message, such as hidden ``reasoning``, stay only in the entry's ``source``), and
  ``tokens_before`` the context size of the newest ``token_count`` before it. So the context
  after it is what Codex's model saw: the replacement history, then what follows.
* Everything else — ``session_meta``, ``turn_context``, the other ``event_msg`` lines (which
  repeat the messages for the UI), ``reasoning`` without a summary (hidden), ``state`` —
  becomes a ``custom`` entry ``codex:<type>[:<payload type>]`` holding the whole line.
* The leaf is the newest message or compaction, not a trailing bookkeeping line such as
  ``task_complete``.

Assistant messages get ``api = "openai-responses"``, the ``model_provider`` of
``session_meta`` (else ``openai``) and the ``model`` of the newest ``turn_context``. The
metadata gets ``cwd`` and the small fields of ``session_meta`` (``originator``,
``cli_version``, ``model_provider``, ``parent_thread_id``, ``source``, ...) under ``codex``;
the long instruction texts stay in the ``codex:session_meta`` entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sessiontree import _json as exact_json
from sessiontree.entries import CompactionEntry, Entry, MessageEntry
from sessiontree.ids import iso_or, ms_or
from sessiontree.interop._common import Converted, Draft, IdMaker, Progress, custom_draft
from sessiontree.interop.jsonl_lines import line_objects, lines_backward, read_jsonl
from sessiontree.interop.links import POINTER_KEY
from sessiontree.interop.report import ImportReport
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    CustomMessage,
    ImageContent,
    OpaqueBlock,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from sessiontree.wire.openai_responses import thinking_from_reasoning

__all__ = ["convert_codex"]

_LONG_META = frozenset({"instructions", "base_instructions", "user_instructions"})


def _blocks(content: Any) -> list[ContentBlock]:
    if isinstance(content, str):
        return [TextContent(text=content)]
    if not isinstance(content, list):
        return []
    out: list[ContentBlock] = []
    for item in content:
        if not isinstance(item, dict):
            out.append(TextContent(text=str(item)))
            continue
        kind = item.get("type")
        if kind in ("input_text", "output_text", "text") and isinstance(item.get("text"), str):
            extra = {k: v for k, v in item.items() if k not in ("type", "text")}
            out.append(TextContent(text=item["text"], **extra))
        elif kind == "input_image" and isinstance(item.get("image_url"), str):
            url: str = item["image_url"]
            if url.startswith("data:") and ";base64," in url:
                mime, data = url[len("data:") :].split(";base64,", 1)
                out.append(ImageContent(data=data, mime_type=mime))
            else:
                out.append(OpaqueBlock(**item))
        else:
            out.append(OpaqueBlock(**item))
    return out


def _arguments(payload: dict[str, Any]) -> dict[str, Any]:
    if "arguments" in payload:
        raw = payload["arguments"]
        if isinstance(raw, str):
            try:
                raw = exact_json.loads(raw)
            except exact_json.JSONDecodeError:
                return {"_raw": payload["arguments"]}
        return raw if isinstance(raw, dict) else {"_raw": raw}
    for key in ("input", "action"):
        if key in payload:
            return {key: payload[key]}
    return {}


def _output(payload: dict[str, Any]) -> tuple[list[ContentBlock], bool]:
    out = payload.get("output")
    if out is None and "tools" in payload:
        out = payload["tools"]
    is_error = False
    if isinstance(out, dict):
        if out.get("success") is False:
            is_error = True
        if isinstance(out.get("content"), str | list):
            out = out["content"]
    if isinstance(out, str):
        return [TextContent(text=out)], is_error
    if isinstance(out, list) and all(isinstance(i, dict) and "type" in i for i in out):
        blocks = _blocks(out)
        if blocks and not all(isinstance(b, OpaqueBlock) for b in blocks):
            return blocks, is_error
    return [TextContent(text=exact_json.dumps(out).decode())], is_error


def _assistant(
    blocks: list[ContentBlock],
    calls: int,
    provider: str,
    model: str | None,
    ms: int,
    usage: Usage | None = None,
) -> AssistantMessage:
    """The assistant message of one model turn (``calls``: how many blocks are tool calls)."""
    fields: dict[str, Any] = {
        "content": blocks,
        "api": "openai-responses",
        "provider": provider,
        "timestamp": ms,
        "stop_reason": "toolUse" if calls else "stop",
    }
    if model is not None:
        fields["model"] = model
    if usage is not None:
        fields["usage"] = usage
    return AssistantMessage(**fields)


class _State:
    def __init__(self) -> None:
        self.provider = "openai"
        self.model: str | None = None
        self.tool_names: dict[str, str] = {}


@dataclass
class _Turn:
    """The items of one model turn, made into one assistant message at the end."""

    index: int  # its place in the drafts
    entry_id: str
    parent_id: str | None
    ts: str
    ms: int
    line: int
    record: dict[str, Any]
    provider: str
    model: str | None
    blocks: list[ContentBlock] = field(default_factory=list)
    calls: int = 0
    merged: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage | None = None

    def message(self) -> AssistantMessage:
        return _assistant(self.blocks, self.calls, self.provider, self.model, self.ms, self.usage)

    def draft(self) -> Draft:
        source = {"format": "codex", "line": self.line, "record": self.record}
        if self.merged:
            source["merged"] = self.merged
        entry = MessageEntry(
            id=self.entry_id,
            parent_id=self.parent_id,
            timestamp=self.ts,
            message=self.message(),
            source=source,
        )
        return Draft(entry, self.line)


def _turn_blocks(payload: dict[str, Any], state: _State) -> tuple[list[ContentBlock], int] | None:
    """The blocks a model item adds to its turn and how many calls, ``None`` if not one."""
    kind = payload.get("type")
    if kind == "message":
        return (_blocks(payload.get("content")), 0) if payload.get("role") == "assistant" else None
    if kind == "reasoning":  # reasoning with a summary is a thinking block of the turn
        thinking = thinking_from_reasoning(payload)
        return ([thinking], 0) if thinking is not None else None
    call_id = payload.get("call_id")
    if not isinstance(kind, str) or not isinstance(call_id, str) or not kind.endswith("_call"):
        return None
    name = payload.get("name")
    name = name if isinstance(name, str) and name else kind[: -len("_call")]
    state.tool_names[call_id] = name
    return [ToolCall(id=call_id, name=name, arguments=_arguments(payload))], 1


def _message(payload: dict[str, Any], ms: int, state: _State) -> AgentMessage | None:
    """The user, custom or tool-result message an item stands for, ``None`` for custom."""
    kind = payload.get("type")
    call_id = payload.get("call_id")
    if kind == "message":
        role = payload.get("role")
        blocks = _blocks(payload.get("content"))
        if role == "user":
            return UserMessage(content=blocks, timestamp=ms)
        if role in ("developer", "system"):
            return CustomMessage(
                custom_type=f"codex:{role}", content=blocks, display=False, timestamp=ms
            )
        return None
    if isinstance(kind, str) and isinstance(call_id, str) and kind.endswith("_output"):
        blocks, is_error = _output(payload)
        return ToolResultMessage(
            tool_call_id=call_id,
            tool_name=state.tool_names.get(call_id, kind[: -len("_output")].removesuffix("_call")),
            content=blocks,
            is_error=is_error,
            timestamp=ms,
        )
    return None


def _history(items: list[Any], ms: int, state: _State) -> list[AgentMessage]:
    """The messages of a ``compacted`` line's ``replacement_history``, in order.

    Model items up to the next user message or tool output make one assistant message, as in
    the file itself; items that stand for no message (hidden ``reasoning``, newer item kinds)
    are left out. Raises ``ValidationError``/``ValueError``/``TypeError`` for an item that is not
    readable as the message its kind says.
    """
    out: list[AgentMessage] = []
    blocks: list[ContentBlock] | None = None
    calls = 0
    for item in items:
        if not isinstance(item, dict):
            continue
        part = _turn_blocks(item, state)
        if part is not None:
            blocks = [*(blocks or []), *part[0]]
            calls += part[1]
            continue
        msg = _message(item, ms, state)
        if msg is None:
            continue
        if blocks is not None:
            out.append(_assistant(blocks, calls, state.provider, state.model, ms))
            blocks, calls = None, 0
        out.append(msg)
    if blocks is not None:
        out.append(_assistant(blocks, calls, state.provider, state.model, ms))
    return out


def _token_usage(payload: dict[str, Any]) -> Usage | None:
    info = payload.get("info")
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    if not isinstance(last, dict):
        return None

    def count(key: str) -> int:
        value = last.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    cached = count("cached_input_tokens")
    return Usage(
        input=max(count("input_tokens") - cached, 0),
        output=count("output_tokens"),
        cache_read=cached,
        total_tokens=count("total_tokens"),
    )


def _custom_type(kind: str, payload: Any) -> str:
    sub = payload.get("type") if isinstance(payload, dict) else None
    return f"codex:{kind}:{sub}" if isinstance(sub, str) else f"codex:{kind}"


def _record(obj: dict[str, Any], line: int) -> dict[str, Any]:
    def slim(d: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if k not in ("content", "arguments", "output")}

    record = dict(obj)
    if isinstance(obj.get("payload"), dict):
        record["payload"] = slim(obj["payload"])
    elif "payload" not in obj:
        record = slim(record)
    return {"format": "codex", "line": line, "record": record}


def _is_legacy_header(obj: dict[str, Any]) -> bool:
    return "type" not in obj and "id" in obj and ("instructions" in obj or "git" in obj)


def _items(rows: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, str, Any, dict[str, Any]]]:
    """``(line, kind, payload, line object)`` in both layouts (``kind`` as in the current one)."""
    legacy = bool(rows) and _is_legacy_header(rows[0][1])
    out: list[tuple[int, str, Any, dict[str, Any]]] = []
    for i, (line, obj) in enumerate(rows):
        if not legacy:
            out.append((line, str(obj.get("type")), obj.get("payload"), obj))
        elif i == 0:
            out.append((line, "session_meta", obj, obj))
        elif "record_type" in obj:
            out.append((line, str(obj["record_type"]), None, obj))
        else:
            out.append((line, "response_item", obj, obj))
    return out


def convert_codex(
    data: bytes,
    path: Path,
    report: ImportReport,
    *,
    lenient: bool,
    progress: Progress | None = None,
) -> Converted:
    """Parse a Codex rollout (either layout) into a linear chain of drafts plus metadata.
    Pure, no I/O.

    Raises:
        CorruptSessionError: a line that is not a JSON object and not ``lenient``.
    """
    items = _items(list(read_jsonl(data, path, report, lenient=lenient, progress=progress)))
    out = Converted()
    state = _State()
    meta: dict[str, Any] = {}
    for _, kind, payload, _ in items:
        if kind == "session_meta" and isinstance(payload, dict):
            _fill_metadata(out, meta, report, payload, state)
            break
    meta["importedFrom"] = {
        "format": "codex",
        "path": str(path),
        "sessionId": report.source_session_id,
    }
    out.metadata = meta

    ids = IdMaker(data)
    parent: str | None = None
    last_ms = 0
    turns: list[_Turn] = []
    open_turn: _Turn | None = None
    context_tokens = 0  # the context size of the newest token_count (tokens)
    for line, kind, payload, obj in items:
        last_ms = ms_or(obj.get("timestamp"), last_ms)
        ts = iso_or(obj.get("timestamp"), last_ms)
        if kind == "turn_context" and isinstance(payload, dict):
            if isinstance(payload.get("model"), str):
                state.model = payload["model"]
        elif kind == "session_meta" and isinstance(payload, dict) and "timestamp" in payload:
            last_ms = ms_or(payload.get("timestamp"), last_ms)
            ts = iso_or(payload.get("timestamp"), last_ms)
        if (
            kind == "event_msg"
            and isinstance(payload, dict)
            and payload.get("type") == "token_count"
        ):
            usage = _token_usage(payload)
            if usage is not None:
                context_tokens = usage.context_tokens()
            target = next((t for t in reversed(turns) if t.usage is None), None)
            if usage is not None and turns and target is turns[-1]:
                target.usage = usage
        if (
            kind == "event_msg"
            and isinstance(payload, dict)
            and payload.get("type") == "task_complete"
        ):
            open_turn = None  # the task is done: the next model item is a new turn
        if kind == "compacted" and isinstance(payload, dict):
            try:
                compaction = CompactionEntry(
                    id=ids.make(last_ms, line),
                    parent_id=parent,
                    timestamp=ts,
                    summary=str(payload.get("message") or ""),
                    tokens_before=context_tokens,
                    retained_tail=_history(
                        payload.get("replacement_history") or [], last_ms, state
                    ),
                    source=_record(obj, line),
                )
            except (ValidationError, ValueError, TypeError):
                report.warnings.append(
                    f"line {line}: a compacted record whose replacement history could not be "
                    "read is kept as a custom entry"
                )
            else:
                open_turn = None  # the model's history was replaced: a new turn starts
                out.drafts.append(Draft(compaction, line))
                parent = compaction.id
                continue
        msg: AgentMessage | None = None
        if kind == "response_item" and isinstance(payload, dict):
            try:
                part = _turn_blocks(payload, state)
                if part is not None:
                    if open_turn is None:
                        open_turn = _Turn(
                            index=len(out.drafts),
                            entry_id=ids.make(last_ms, line),
                            parent_id=parent,
                            ts=ts,
                            ms=last_ms,
                            line=line,
                            record=_record(obj, line)["record"],
                            provider=state.provider,
                            model=state.model,
                        )
                        turns.append(open_turn)
                        out.drafts.append(open_turn.draft())
                        parent = open_turn.entry_id
                    else:
                        open_turn.merged.append(_record(obj, line))
                    open_turn.blocks.extend(part[0])
                    open_turn.calls += part[1]
                    continue
                msg = _message(payload, last_ms, state)
            except (ValidationError, ValueError, TypeError):
                report.warnings.append(
                    f"line {line}: a response item that could not be read as a message "
                    "is kept as a custom entry"
                )
        draft: Draft
        if msg is not None:
            open_turn = None  # a user message or a tool output ends the model's turn
            entry: Entry = MessageEntry(
                id=ids.make(last_ms, line),
                parent_id=parent,
                timestamp=ts,
                message=msg,
                source=_record(obj, line),
            )
            draft = Draft(entry, line)
        else:
            draft = custom_draft(
                report,
                _custom_type(kind, payload),
                obj,
                line=line,
                entry_id=ids.make(last_ms, line),
                parent_id=parent,
                timestamp=ts,
            )
        out.drafts.append(draft)
        parent = draft.entry.id
    for turn in turns:
        out.drafts[turn.index] = turn.draft()
    messages = [
        d.entry.id for d in out.drafts if isinstance(d.entry, MessageEntry | CompactionEntry)
    ]
    out.leaf_id = messages[-1] if messages else None
    return out


def _fill_metadata(
    out: Converted,
    meta: dict[str, Any],
    report: ImportReport,
    payload: dict[str, Any],
    state: _State,
) -> None:
    if isinstance(payload.get("cwd"), str):
        meta["cwd"] = payload["cwd"]
    meta["codex"] = {k: v for k, v in payload.items() if k not in _LONG_META and k != POINTER_KEY}
    if isinstance(payload.get(POINTER_KEY), dict):
        meta[POINTER_KEY] = payload[POINTER_KEY]  # a session handed off to Codex
    if isinstance(payload.get("model_provider"), str):
        state.provider = payload["model_provider"]
    session_id = payload.get("id")
    if isinstance(session_id, str):
        report.source_session_id = session_id
        out.session_id = session_id


def open_tail(data: bytes) -> int:
    """Where the open turn of a rollout starts (bytes; ``len(data)`` when none is open), for
    :func:`sessiontree.interop.settling.settled`.

    The newest model turn can still change while it lacks its usage (a ``token_count`` after
    it gives it) or while it takes more items (until a user message, a tool output, a
    compaction or ``task_complete``). Read from the newest ``turn_context`` on (a turn's
    usage is written before the next one's context).
    """
    start = 0
    for begin, line in lines_backward(data):
        if b'"turn_context"' in line and b'"type":"turn_context"' in line.replace(b" ", b""):
            start = begin
            break
    found = list(line_objects(data, start))
    starts = [begin for begin, _, _ in found]
    rows = [(i, obj) for i, (_, _, obj) in enumerate(found)]
    if start == 0:
        items = _items(rows)
    else:  # the current layout: a turn_context line is never in the legacy one
        items = [(i, str(obj.get("type")), obj.get("payload"), obj) for i, obj in rows]
    state = _State()
    turn: int | None = None  # the byte offset of the newest turn's first item
    usage = taking = False
    for i, kind, payload, _ in items:
        if not isinstance(payload, dict):
            continue
        if kind == "event_msg" and payload.get("type") == "token_count":
            usage = usage or _token_usage(payload) is not None
        elif kind == "compacted" or (
            kind == "event_msg" and payload.get("type") == "task_complete"
        ):
            taking = False
        elif kind == "response_item":
            try:
                if _turn_blocks(payload, state) is not None:
                    if not taking:
                        turn, usage, taking = starts[i], False, True
                elif _message(payload, 0, state) is not None:
                    taking = False
            except (ValidationError, ValueError, TypeError):
                pass  # kept as a custom entry, which ends no turn
    if turn is None or (usage and not taking):
        return len(data)
    return turn
