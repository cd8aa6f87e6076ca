"""Codex CLI / Codex Desktop rollout files (``rollout-*.jsonl``) → a linear session (docs/interop.md).

Each line is ``{"timestamp", "type", "payload"}``. Rollouts have no parent pointers, so every
line becomes one entry and each entry's parent is the previous one (file order).

* ``response_item`` ``message``: ``user`` → a user message, ``assistant`` → an assistant
  message (``output_text`` → text blocks), ``developer``/``system`` → a ``custom`` message
  (``customType`` ``codex:developer``, not displayed) so the instructions stay in the context.
* ``response_item`` ``*_call`` items with a ``call_id`` (``function_call``,
  ``custom_tool_call``, ``local_shell_call``, ``tool_search_call``, ...) → an assistant message
  with one toolCall block (``function_call`` arguments decoded from JSON); the matching
  ``*_output`` items → toolResult messages.
* Everything else — ``session_meta``, ``turn_context``, ``event_msg`` (which repeat the
  messages for the UI), ``reasoning`` (encrypted), ``compacted`` — becomes a ``custom`` entry
  ``codex:<type>[:<payload type>]`` holding the whole line.

Assistant messages get ``api = "openai-responses"``, the ``model_provider`` of
``session_meta`` (else ``openai``) and the ``model`` of the newest ``turn_context``. The
metadata gets ``cwd`` and the small fields of ``session_meta`` (``originator``,
``cli_version``, ``model_provider``, ``parent_thread_id``, ``source``, ...) under ``codex``;
the long instruction texts stay in the ``codex:session_meta`` entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sessiontree import _json as exact_json
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
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    CustomMessage,
    ImageContent,
    OpaqueBlock,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

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


class _State:
    def __init__(self) -> None:
        self.provider = "openai"
        self.model: str | None = None
        self.tool_names: dict[str, str] = {}


def _message(payload: dict[str, Any], ms: int, state: _State) -> AgentMessage | None:
    """The message a ``response_item`` stands for, ``None`` when it is kept as custom."""
    kind = payload.get("type")
    call_id = payload.get("call_id")
    if kind == "message":
        role = payload.get("role")
        blocks = _blocks(payload.get("content"))
        if role == "user":
            return UserMessage(content=blocks, timestamp=ms)
        if role == "assistant":
            return _assistant(blocks, ms, state)
        if role in ("developer", "system"):
            return CustomMessage(
                custom_type=f"codex:{role}", content=blocks, display=False, timestamp=ms
            )
        return None
    if not isinstance(kind, str) or not isinstance(call_id, str):
        return None
    if kind.endswith("_call"):
        name = payload.get("name")
        name = name if isinstance(name, str) and name else kind[: -len("_call")]
        state.tool_names[call_id] = name
        call = ToolCall(id=call_id, name=name, arguments=_arguments(payload))
        return _assistant([call], ms, state, stop_reason="toolUse")
    if kind.endswith("_output"):
        blocks, is_error = _output(payload)
        return ToolResultMessage(
            tool_call_id=call_id,
            tool_name=state.tool_names.get(call_id, kind[: -len("_output")].removesuffix("_call")),
            content=blocks,
            is_error=is_error,
            timestamp=ms,
        )
    return None


def _assistant(
    blocks: list[ContentBlock], ms: int, state: _State, stop_reason: str | None = None
) -> AssistantMessage:
    fields: dict[str, Any] = {
        "content": blocks,
        "api": "openai-responses",
        "provider": state.provider,
        "timestamp": ms,
    }
    if state.model is not None:
        fields["model"] = state.model
    if stop_reason is not None:
        fields["stop_reason"] = stop_reason
    return AssistantMessage(**fields)


def _custom_type(obj: dict[str, Any]) -> str:
    payload = obj.get("payload")
    sub = payload.get("type") if isinstance(payload, dict) else None
    base = f"codex:{obj.get('type')}"
    return f"{base}:{sub}" if isinstance(sub, str) else base


def _record(obj: dict[str, Any], line: int) -> dict[str, Any]:
    record = dict(obj)
    payload = obj.get("payload")
    if isinstance(payload, dict):
        record["payload"] = {
            k: v for k, v in payload.items() if k not in ("content", "arguments", "output")
        }
    return {"format": "codex", "line": line, "record": record}


def convert_codex(data: bytes, path: Path, report: ImportReport, *, lenient: bool) -> Converted:
    """Parse a Codex rollout into a linear chain of drafts plus metadata. Pure, no I/O.

    Raises:
        CorruptSessionError: a line that is not a JSON object and not ``lenient``.
    """
    rows = list(read_jsonl(data, path, report, lenient=lenient))
    out = Converted()
    state = _State()
    meta: dict[str, Any] = {}
    for _, obj in rows:
        payload = obj.get("payload")
        if obj.get("type") == "session_meta" and isinstance(payload, dict):
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
    for line, obj in rows:
        last_ms = ms_or(obj.get("timestamp"), last_ms)
        ts = iso_or(obj.get("timestamp"), last_ms)
        payload = obj.get("payload")
        if (
            obj.get("type") == "turn_context"
            and isinstance(payload, dict)
            and isinstance(payload.get("model"), str)
        ):
            state.model = payload["model"]
        msg: AgentMessage | None = None
        if obj.get("type") == "response_item" and isinstance(payload, dict):
            try:
                msg = _message(payload, last_ms, state)
            except (ValidationError, ValueError, TypeError):
                report.warnings.append(
                    f"line {line}: a response item that could not be read as a message "
                    "is kept as a custom entry"
                )
        draft: Draft
        if msg is not None:
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
                _custom_type(obj),
                obj,
                line=line,
                entry_id=ids.make(last_ms, line),
                parent_id=parent,
                timestamp=ts,
            )
        out.drafts.append(draft)
        parent = draft.entry.id
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
    meta["codex"] = {k: v for k, v in payload.items() if k not in _LONG_META}
    if isinstance(payload.get("model_provider"), str):
        state.provider = payload["model_provider"]
    session_id = payload.get("id")
    if isinstance(session_id, str):
        report.source_session_id = session_id
        out.session_id = session_id
