"""A session written in another agent's own format, so that agent can resume it (docs/interop.md).

What is written is the session's **context** — what its next model call would be sent: the
current branch after compaction, failed and aborted replies left out, every tool call paired
with its result (:func:`sessiontree.wire._common.request_messages`, the rule every provider
request follows) — as a straight line of records, so the receiving agent continues exactly
where the session stands:

* **Claude Code** transcript (:func:`claude_code_transcript`): one line per message, chained
  by ``uuid``/``parentUuid`` under a new ``sessionId``, with ``cwd``; assistant lines carry
  ``message.id``, ``model``, ``usage`` and the blocks Anthropic accepts back (text,
  ``tool_use`` with ids made Anthropic-safe, thinking with its signature); each tool result is
  a user line with one ``tool_result`` block. A compaction summary at the start becomes a
  ``compact_boundary`` system line and the ``isCompactSummary`` user line after it.
* **Codex** rollout (:func:`codex_rollout`): ``session_meta`` (a new thread id, ``cwd``; no
  ``model_provider``: Codex refuses to resume a thread whose provider its configuration does
  not name, and without one it continues with the provider and model it is configured for),
  ``turn_context`` (the model the session used), then ``response_item`` lines (user and
  assistant ``message`` items, ``function_call`` and ``function_call_output``) with the ``event_msg`` lines Codex
  shows (``user_message``, ``agent_message``) and a ``token_count`` event after each reply
  with usage (cache writes are not a Codex count). A compaction summary is a user message worded
  as every provider request words it (what Codex itself puts in its history after ``/compact``).

What a format cannot carry is counted in :attr:`Exported.not_carried` (never dropped
silently): thinking without a signature or from another provider than Anthropic (Claude
Code) or than OpenAI (Codex), failed or aborted replies, results that were lost (written as errors), summaries,
custom and bash messages written as user text, messages of unknown roles, tool error flags and
consecutive replies (Codex has neither: the error text is kept, the replies make one turn).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sessiontree import _json as exact_json
from sessiontree.context import LOST_RESULT_TEXT, SessionContext, to_llm_messages
from sessiontree.errors import InvalidArgumentError
from sessiontree.ids import iso_from_ms, now_iso
from sessiontree.interop.links import POINTER_KEY
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    CompactionSummaryMessage,
    ImageContent,
    OpaqueMessage,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from sessiontree.wire import FAILED_STOP_REASONS, request_messages, safe_tool_id
from sessiontree.wire.anthropic import assistant_blocks, tool_result_block, user_blocks
from sessiontree.wire.openai_responses import to_openai_responses

__all__ = ["EXPORT_FORMATS", "ExportFormat", "Exported", "claude_code_transcript", "codex_rollout"]

ExportFormat = Literal["claude-code", "codex"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("claude-code", "codex")
"""The agent formats a session's context can be written in (``pi`` is the store's own)."""

ANTHROPIC_API = "anthropic-messages"
"""The ``api`` of messages whose thinking signatures Anthropic accepts back."""
CLAUDE_CODE_VERSION = "2.1.0"
"""The ``version`` written on Claude Code lines (the transcript layout of Claude Code 2.1)."""
CODEX_CLI_VERSION = "0.140.0"
"""The ``cli_version`` written in a Codex ``session_meta`` line."""


@dataclass
class Exported:
    """A session written in an agent's format."""

    data: bytes
    """The file's bytes (JSONL, one record a line)."""
    session_id: str
    """The new session's id in that agent's form (a UUID)."""
    not_carried: dict[str, int] = field(default_factory=dict)
    """What the format could not carry, by kind, with how many (see the module docstring)."""


def _plan(context: SessionContext, wire_id: Any) -> tuple[list[AgentMessage], Counter[str]]:
    """The messages to write and what was left out or changed on the way.

    Raises:
        InvalidArgumentError: the context holds no message an agent could resume.
    """
    lost: Counter[str] = Counter()
    for msg in context.messages:
        if isinstance(msg, AssistantMessage) and msg.stop_reason in FAILED_STOP_REASONS:
            lost["failed or aborted replies (left out)"] += 1
        elif isinstance(msg, OpaqueMessage):
            lost["messages of unknown roles (left out)"] += 1
    messages = request_messages(context.messages, wire_id=wire_id)
    if not any(
        isinstance(m, UserMessage | AssistantMessage | CompactionSummaryMessage) for m in messages
    ):
        raise InvalidArgumentError(
            "the session's context holds no user or assistant message nor a summary: nothing to "
            "resume"
        )
    lost["lost tool results (written as errors)"] += sum(
        1
        for m in messages
        if isinstance(m, ToolResultMessage) and m.is_error and LOST_RESULT_TEXT in message_text(m)
    )
    return messages, lost


def _ms_iso(msg: AgentMessage, fallback: str) -> str:
    ms = getattr(msg, "timestamp", 0)
    return iso_from_ms(int(ms)) if isinstance(ms, int | float) and ms > 0 else fallback


def _as_user_text(msg: AgentMessage, lost: Counter[str]) -> str | list[Any] | None:
    """A summary, custom or bash message as the user text a model is sent for it."""
    plain = to_llm_messages([msg])
    if not plain:
        return None
    lost[f"{msg.role} messages (written as user text)"] += 1
    return plain[0]["content"]  # type: ignore[no-any-return]


def _summary_first(messages: list[AgentMessage]) -> tuple[str | None, list[AgentMessage]]:
    if messages and isinstance(messages[0], CompactionSummaryMessage):
        return messages[0].summary, messages[1:]
    return None, messages


# --------------------------------------------------------------------------- Claude Code


def claude_code_transcript(
    context: SessionContext,
    *,
    cwd: str,
    session_id: str | None = None,
    link: Mapping[str, str] | None = None,
) -> Exported:
    """A Claude Code transcript of ``context`` (``~/.claude/projects/<dir>/<sessionId>.jsonl``).

    Args:
        context: the session's context (:meth:`Session.build_context`).
        cwd: the project directory written on every line (Claude Code resumes in it).
        session_id: the transcript's ``sessionId`` (default: a new UUID v4).
        link: a handoff's pointer back to its session (:func:`~sessiontree.interop.links.pointer`),
            written as ``handedOffFrom`` on the first line (Claude Code ignores the field).
    """
    sid = session_id or str(uuid.uuid4())
    messages, lost = _plan(context, safe_tool_id)
    summary, messages = _summary_first(messages)
    lines: list[dict[str, Any]] = []
    first_fields: dict[str, Any] = {}
    parent: str | None = None
    now = now_iso()

    def line(kind: str, when: str, **fields: Any) -> dict[str, Any]:
        nonlocal parent
        record = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": cwd,
            "sessionId": sid,
            "version": CLAUDE_CODE_VERSION,
            "gitBranch": "",
            "type": kind,
            **fields,
            "uuid": str(uuid.uuid4()),
            "timestamp": when,
        }
        if not lines:
            record.update(first_fields)
        lines.append(record)
        parent = record["uuid"]
        return record

    if link is not None:
        first_fields[POINTER_KEY] = dict(link)
    if summary is not None:
        boundary = line(
            "system",
            now,
            subtype="compact_boundary",
            content="Conversation compacted" if summary else "",
            isMeta=False,
            level="info",
            compactMetadata={"trigger": "manual", "preTokens": 0},
        )
        boundary["logicalParentUuid"] = None
        line(
            "user",
            now,
            message={"role": "user", "content": summary},
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        )
    for msg in messages:
        when = _ms_iso(msg, now)
        if isinstance(msg, AssistantMessage):
            blocks = assistant_blocks(msg, None)
            thinking = [b for b in msg.content if isinstance(b, ThinkingContent)]
            if msg.api not in (None, ANTHROPIC_API):  # another provider's signature
                blocks = [b for b in blocks if b["type"] not in ("thinking", "redacted_thinking")]
                if thinking:
                    lost["thinking of other providers than Anthropic (left out)"] += len(thinking)
            elif unsigned := sum(1 for b in thinking if not b.thinking_signature):
                lost["thinking without a signature (left out)"] += unsigned
            if not blocks:
                blocks = [{"type": "text", "text": ""}]
            has_calls = any(b["type"] == "tool_use" for b in blocks)
            body: dict[str, Any] = {
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "type": "message",
                "role": "assistant",
                "model": msg.model or (context.model.model_id if context.model else "unknown"),
                "content": blocks,
                "stop_reason": "tool_use" if has_calls else "end_turn",
                "stop_sequence": None,
            }
            if msg.usage is not None:
                body["usage"] = {
                    "input_tokens": msg.usage.input,
                    "output_tokens": msg.usage.output,
                    "cache_read_input_tokens": msg.usage.cache_read,
                    "cache_creation_input_tokens": msg.usage.cache_write,
                }
            line("assistant", when, message=body, requestId=f"req_{uuid.uuid4().hex[:24]}")
        elif isinstance(msg, ToolResultMessage):
            block = tool_result_block(msg)
            if not any(
                (isinstance(b, TextContent) and b.text) or isinstance(b, ImageContent)
                for b in msg.content
            ):
                block["content"] = ""  # Claude Code writes an empty output as ""
            line(
                "user",
                when,
                message={"role": "user", "content": [block]},
                toolUseResult=message_text(msg),
            )
        elif isinstance(msg, UserMessage):
            content: Any = msg.content if isinstance(msg.content, str) else user_blocks(msg.content)
            line("user", when, message={"role": "user", "content": content})
        else:
            text = _as_user_text(msg, lost)
            if text is not None:
                content = text if isinstance(text, str) else _plain_blocks(text)
                line("user", when, message={"role": "user", "content": content})
    data = b"".join(exact_json.dumps(r) + b"\n" for r in lines)
    return Exported(data, sid, {k: v for k, v in lost.items() if v})


def _plain_blocks(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`to_llm_messages` content parts as Anthropic blocks."""
    out: list[dict[str, Any]] = []
    for part in content:
        if part["type"] == "text":
            out.append({"type": "text", "text": part["text"]})
        else:
            out.append(
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": part["mime_type"],
                        "data": part["data"],
                    },
                }
            )
    return out


# --------------------------------------------------------------------------- Codex


def _codex_item(item: dict[str, Any]) -> dict[str, Any]:
    """A Responses input item in the full form Codex writes: ``message`` items typed, their
    content a list of ``input_text``/``output_text`` parts."""
    if "type" in item:
        return item
    role = item["role"]
    content = item["content"]
    kind = "output_text" if role == "assistant" else "input_text"
    if isinstance(content, str):
        content = [{"type": kind, "text": content}]
    return {"type": "message", "role": role, "content": content}


def _text_of(item: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in item.get("content", []) if isinstance(p, dict))


def codex_rollout(
    context: SessionContext,
    *,
    cwd: str,
    session_id: str | None = None,
    link: Mapping[str, str] | None = None,
) -> Exported:
    """A Codex rollout of ``context`` (``~/.codex/sessions/YYYY/MM/DD/rollout-…-<id>.jsonl``).

    Args:
        context: the session's context (:meth:`Session.build_context`).
        cwd: the project directory recorded in ``session_meta`` and ``turn_context``.
        session_id: the thread id (default: a new UUID v4).
        link: a handoff's pointer back to its session (:func:`~sessiontree.interop.links.pointer`),
            written as ``handedOffFrom`` in the ``session_meta`` payload (Codex ignores it).
    """
    sid = session_id or str(uuid.uuid4())
    messages, lost = _plan(context, None)
    now = now_iso()
    model = context.model.model_id if context.model else None
    records: list[dict[str, Any]] = []

    def record(kind: str, payload: dict[str, Any], when: str = now) -> None:
        records.append({"timestamp": when, "type": kind, "payload": payload})

    meta: dict[str, Any] = {
        "id": sid,
        "timestamp": now,
        "cwd": cwd,
        "originator": "sessiontree",
        "cli_version": CODEX_CLI_VERSION,
        "source": "exec",
    }
    if link is not None:
        meta[POINTER_KEY] = dict(link)
    record("session_meta", meta)
    turn: dict[str, Any] = {"cwd": cwd, "approval_policy": "never", "summary": "auto"}
    if model is not None:
        turn["model"] = model
    record("turn_context", turn)

    previous: AgentMessage | None = None
    for msg in messages:
        if isinstance(msg, AssistantMessage) and isinstance(previous, AssistantMessage):
            lost["consecutive replies (one turn in Codex)"] += 1
        if isinstance(msg, ToolResultMessage) and msg.is_error:
            lost["tool error flags (Codex keeps the error text only)"] += 1
        previous = msg
        if isinstance(msg, AssistantMessage):
            items = to_openai_responses([msg])
            thinking = sum(1 for b in msg.content if isinstance(b, ThinkingContent))
            reasoning = sum(1 for i in items if i.get("type") == "reasoning")
            if thinking > reasoning:
                lost["thinking of other providers than OpenAI (left out)"] += thinking - reasoning
        elif isinstance(msg, UserMessage | ToolResultMessage):
            items = to_openai_responses([msg])
        else:
            text = _as_user_text(msg, lost)
            items = to_openai_responses([UserMessage(content=text)]) if text is not None else []
        when = _ms_iso(msg, now)
        for item in map(_codex_item, items):
            record("response_item", item, when)
            if item.get("type") == "message" and item.get("role") in ("user", "assistant"):
                kind = "user_message" if item["role"] == "user" else "agent_message"
                shown: dict[str, Any] = {"type": kind, "message": _text_of(item)}
                if kind == "user_message":
                    shown["images"] = []
                record("event_msg", shown, when)
        if isinstance(msg, AssistantMessage) and msg.usage is not None:
            u = msg.usage
            last = {
                "input_tokens": u.input + u.cache_read,
                "cached_input_tokens": u.cache_read,
                "output_tokens": u.output,
                "reasoning_output_tokens": 0,
                "total_tokens": u.total_tokens or u.input + u.cache_read + u.output,
            }
            record("event_msg", {"type": "token_count", "info": {"last_token_usage": last}}, when)
    data = b"".join(exact_json.dumps(r) + b"\n" for r in records)
    return Exported(data, sid, {k: v for k, v in lost.items() if v})
