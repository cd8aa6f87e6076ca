"""SWE-agent trajectories (``*.traj``, one JSON document) → a linear session (docs/interop.md).

The messages come from ``history`` (what was sent to the model):

* the first ``system`` item becomes the session's ``systemPrompt``; later ``system`` items
  become ``custom`` messages (``swe-agent:system``, not displayed);
* ``user`` → a user message; ``assistant`` → an assistant message whose ``tool_calls``
  (OpenAI function-call shape) become toolCall blocks; ``tool`` → one toolResult message per
  id in ``tool_call_ids`` (a ``tool`` item without ids becomes a user message);
* the item's other keys (``agent``, ``message_type``, ``thought``, ``action``, ``is_demo``,
  ...) are kept on the entry under ``source``.

Without ``history`` the steps of ``trajectory`` are used: each step's ``response`` (else
``thought`` and ``action``) as an assistant message and its ``observation`` as a user
message. Assistant messages name the model of ``replay_config.agent.model.name`` when the
trajectory has it (provider ``litellm`` unless the name has a ``provider/`` prefix). Every
other top-level key (``info``, ``environment``, ``replay_config``, and
``trajectory`` when ``history`` was used) is kept as a ``custom`` entry
``swe-agent:<key>`` at the start of the chain; ``environment`` and ``info.exit_status`` are
also put in the metadata under ``sweAgent``.

The session id is ``swe-agent-`` and 32 hex digits of the file's SHA-256 (trajectories have
no id and the same file name recurs across runs), so importing one file twice is refused.
A trajectory carries no timestamps: every entry gets the file's modification time (passed in
by the caller), so the order of the chain, not the clock, tells the sequence.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sessiontree import _json as exact_json
from sessiontree.entries import MessageEntry
from sessiontree.errors import CorruptSessionError
from sessiontree.ids import iso_from_ms
from sessiontree.interop._common import Converted, Draft, IdMaker, custom_draft, unreadable
from sessiontree.interop.detect import strip_bom
from sessiontree.interop.lenient_json import load_document
from sessiontree.interop.report import ImportReport
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    CustomMessage,
    OpaqueBlock,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

__all__ = ["convert_swe_agent"]

_MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_ids"})


def _text_blocks(content: Any) -> list[ContentBlock]:
    if isinstance(content, str):
        return [TextContent(text=content)]
    if isinstance(content, list):
        out: list[ContentBlock] = []
        for item in content:
            if (
                isinstance(item, dict)
                and item.get("type") == "text"
                and isinstance(item.get("text"), str)
            ):
                out.append(TextContent(text=item["text"]))
            elif isinstance(item, dict) and isinstance(item.get("type"), str):
                out.append(OpaqueBlock(**item))
            else:
                out.append(TextContent(text=str(item)))
        return out
    return [] if content is None else [TextContent(text=str(content))]


def _tool_call(raw: Any) -> ToolCall:
    if not isinstance(raw, dict):
        raise ValueError("a tool call is not an object")
    function = raw.get("function")
    fn: dict[str, Any] = function if isinstance(function, dict) else {}
    args: Any = fn.get("arguments", {})
    if isinstance(args, str):
        try:
            args = exact_json.loads(args) if args.strip() else {}
        except exact_json.JSONDecodeError:
            args = {"_raw": args}
    if not isinstance(args, dict):
        args = {"_raw": args}
    return ToolCall(id=str(raw.get("id", "")), name=str(fn.get("name", "")), arguments=args)


def _history_messages(
    item: dict[str, Any], ms: int, tool_names: dict[str, str]
) -> list[AgentMessage]:
    role = item.get("role")
    content = item.get("content")
    if role == "assistant":
        blocks = _text_blocks(content)
        calls = [_tool_call(c) for c in item.get("tool_calls") or []]
        for call in calls:
            tool_names[call.id] = call.name
        fields: dict[str, Any] = {"content": [*blocks, *calls], "timestamp": ms}
        if calls:
            fields["stop_reason"] = "toolUse"
        return [AssistantMessage(**fields)]
    if role == "tool" and item.get("tool_call_ids"):
        return [
            ToolResultMessage(
                tool_call_id=str(call_id),
                tool_name=tool_names.get(str(call_id), ""),
                content=_text_blocks(content),
                timestamp=ms,
            )
            for call_id in item["tool_call_ids"]
        ]
    if role in ("user", "tool"):
        return [UserMessage(content=_text_blocks(content), timestamp=ms)]
    if role == "system":
        return [
            CustomMessage(
                custom_type="swe-agent:system",
                content=_text_blocks(content),
                display=False,
                timestamp=ms,
            )
        ]
    raise ValueError(f"unknown role {role!r}")


def _trajectory_messages(step: dict[str, Any], ms: int) -> list[AgentMessage]:
    said = step.get("response")
    if not isinstance(said, str) or not said:
        parts = [p for p in (step.get("thought"), step.get("action")) if isinstance(p, str) and p]
        said = "\n\n".join(parts)
    out: list[AgentMessage] = [AssistantMessage(content=_text_blocks(said), timestamp=ms)]
    if step.get("observation") is not None:
        out.append(UserMessage(content=_text_blocks(step["observation"]), timestamp=ms))
    return out


def _model_of(doc: dict[str, Any]) -> tuple[str, str] | None:
    """``(provider, model)`` from ``replay_config.agent.model.name`` (a JSON object or a
    string of one), else ``None``. SWE-agent calls models through litellm: a name
    ``anthropic/claude-…`` names its provider, a bare one (``gpt-4o``) gets ``litellm``."""
    config = doc.get("replay_config")
    if isinstance(config, str):
        try:
            config = exact_json.loads(config)
        except exact_json.JSONDecodeError:
            return None
    agent = config.get("agent") if isinstance(config, dict) else None
    model = agent.get("model") if isinstance(agent, dict) else None
    name = model.get("name") if isinstance(model, dict) else None
    if not isinstance(name, str) or not name:
        return None
    provider, _, model_id = name.rpartition("/")
    return provider or "litellm", model_id


def convert_swe_agent(
    data: bytes, path: Path, report: ImportReport, *, lenient: bool, mtime_ms: int = 0
) -> Converted:
    """Parse a SWE-agent trajectory into a linear chain of drafts plus metadata. Pure, no I/O.

    Args:
        mtime_ms: the timestamp (Unix ms) given to every entry, e.g. the file's mtime.

    Raises:
        CorruptSessionError: the document is not a trajectory (no ``history`` or
            ``trajectory`` list); without ``lenient``, an item that cannot be read.
    """
    try:
        doc, repaired = load_document(strip_bom(data))
    except exact_json.JSONDecodeError as exc:
        raise CorruptSessionError(f"not a JSON document: {exc}", path=path) from exc
    if repaired is not None:
        report.warnings.append(repaired)
    history = doc.get("history") if isinstance(doc, dict) else None
    trajectory = doc.get("trajectory") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or not (isinstance(history, list) or isinstance(trajectory, list)):
        raise CorruptSessionError(
            "not a SWE-agent trajectory: no 'history' or 'trajectory' list", path=path
        )
    report.lines_read = 1
    # the history, unless it is empty and a trajectory list is there to read instead
    use_history = isinstance(history, list) and (bool(history) or not isinstance(trajectory, list))
    ts = iso_from_ms(mtime_ms)
    out = Converted()
    meta: dict[str, Any] = {}
    swe: dict[str, Any] = {"file": path.name}
    if isinstance(doc.get("environment"), str):
        swe["environment"] = doc["environment"]
    info = doc.get("info")
    if isinstance(info, dict) and isinstance(info.get("exit_status"), str):
        swe["exitStatus"] = info["exit_status"]
    meta["sweAgent"] = swe
    meta["importedFrom"] = {"format": "swe-agent", "path": str(path)}
    # trajectories carry no id and share names across runs: the id is the content's hash
    out.session_id = "swe-agent-" + hashlib.sha256(data).hexdigest()[:32]

    ids = IdMaker(data)
    parent: str | None = None
    used_key = "history" if use_history else "trajectory"
    for key, value in doc.items():
        if key == used_key:
            continue
        draft = custom_draft(
            report,
            f"swe-agent:{key}",
            value,
            line=None,
            parent_id=parent,
            timestamp=ts,
            where=key,
            entry_id=ids.make(mtime_ms, key),
        )
        out.drafts.append(draft)
        parent = draft.entry.id

    named = _model_of(doc)
    tool_names: dict[str, str] = {}
    items = history if use_history else trajectory
    assert isinstance(items, list)
    if not items:
        report.warnings.append(f"'{used_key}' is an empty list: the session holds no messages")
    for index, item in enumerate(items):
        where = f"{used_key}[{index}]"
        if not isinstance(item, dict):
            unreadable(report, path, None, f"{where} is not an object", str(item), lenient=lenient)
            continue
        first_system = use_history and index == 0 and item.get("role") == "system"
        if first_system and isinstance(item.get("content"), str):
            meta["systemPrompt"] = item["content"]
            rest = {k: v for k, v in item.items() if k != "content"}
            if rest:
                swe["systemPromptItem"] = rest
            continue
        try:
            if use_history:
                messages = _history_messages(item, mtime_ms, tool_names)
            else:
                messages = _trajectory_messages(item, mtime_ms)
        except (ValidationError, ValueError, TypeError) as exc:
            unreadable(report, path, None, f"{where}: {exc}", str(item)[:200], lenient=lenient)
            continue
        record = {k: v for k, v in item.items() if k not in _MESSAGE_KEYS}
        source = {"format": "swe-agent", "where": where, "record": record}
        for i, msg in enumerate(messages):
            if named is not None and isinstance(msg, AssistantMessage):
                msg = msg.model_copy(update={"provider": named[0], "model": named[1]})
            extra: dict[str, Any] = {"source": source} if i == 0 else {}
            entry_id = ids.make(mtime_ms, where, i)
            entry = MessageEntry(id=entry_id, parent_id=parent, timestamp=ts, message=msg, **extra)
            out.drafts.append(Draft(entry, None))
            parent = entry.id
    out.metadata = meta
    return out
