"""Drafts: the part of an assistant reply that has arrived while it streams (docs/harness.md).

A session has at most one draft, held in its storage's draft slot
(:class:`~sessiontree.storage.base.DraftSlot`), which is not the entry log: overwriting it as a
reply streams adds no entry. The draft names the entry it will become (``entryId``) and the
entry that entry hangs under (``parentId``). When the reply is complete its message is
appended with that id and the draft cleared; a draft left behind by a process that died is
turned into an *interrupted* message entry with the same id
(:meth:`sessiontree.Session.settle_draft`). Because the id is fixed in advance, settling is
idempotent: a draft whose entry already exists (the process died between the append and the
clearing) is only cleared.

While the tool calls of a stored answer run, the slot holds a :class:`ToolRun` instead: the
ids of the calls that have started, so a process that dies mid-tool leaves a record of which
calls may have done their work (the harness answers each with a result on its next prompt).

The slot holds the draft's JSON::

    {"entryId": "...", "parentId": "..." | null, "updatedAt": <Unix ms>,
     "message": {<an assistant AgentMessage, camelCase>}}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from sessiontree.errors import CorruptSessionError
from sessiontree.messages import AssistantMessage

__all__ = [
    "INTERRUPTED",
    "TOOL_INTERRUPTED",
    "TOOL_NOT_STARTED",
    "Draft",
    "ToolRun",
    "interrupted_message",
    "read_slot",
]

INTERRUPTED = (
    "interrupted: the process ended while this reply was streaming; this is the part saved"
)
"""The ``errorMessage`` of a reply settled from a draft (its ``stopReason`` is ``aborted``)."""


TOOL_INTERRUPTED = (
    "interrupted: the process ended while this tool call was running; it may or may not have "
    "done its work"
)
"""The text of the ``isError`` result a tool call gets when its run was cut short by the
process ending (and the tool is not safe to replay)."""

TOOL_NOT_STARTED = (
    "not run: the process ended before this tool call started; call it again if it is still needed"
)
"""The text of the ``isError`` result a tool call gets when its process ended before the call
started (and the tool is not safe to replay)."""


@dataclass(frozen=True, slots=True)
class Draft:
    """The saved part of a reply that is streaming (or was, when its process died)."""

    entry_id: str
    """The id of the message entry the reply becomes (complete or interrupted)."""
    parent_id: str | None
    """The entry the reply hangs under: the leaf when the reply started."""
    message: AssistantMessage
    """What had arrived when the draft was last saved (text, thinking, tool calls; a tool
    call's incomplete arguments are kept as ``rawArguments`` text)."""
    updated_at_ms: int
    """When the draft was last saved (Unix ms)."""

    def to_json(self) -> bytes:
        """The JSON the draft slot holds (camelCase keys)."""
        return orjson.dumps(
            {
                "entryId": self.entry_id,
                "parentId": self.parent_id,
                "updatedAt": self.updated_at_ms,
                "message": self.message.model_dump(mode="json", by_alias=True, exclude_none=True),
            }
        )

    @classmethod
    def from_json(cls, body: bytes | str, *, session_id: str | None = None) -> Draft:
        """Read a draft slot's JSON.

        Raises:
            CorruptSessionError: the JSON is not a draft (names the session).
        """
        try:
            obj: Any = orjson.loads(body)
            return cls(
                entry_id=str(obj["entryId"]),
                parent_id=None if obj.get("parentId") is None else str(obj["parentId"]),
                message=AssistantMessage.model_validate(obj["message"]),
                updated_at_ms=int(obj.get("updatedAt") or 0),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise CorruptSessionError(
                f"the saved draft reply is not readable: {exc}", session_id=session_id
            ) from exc


@dataclass(frozen=True, slots=True)
class ToolRun:
    """The tool calls of one assistant message that have started running (docs/harness.md
    "Tool calls across a crash"). Held in the draft slot while the calls run, cleared once
    their results are stored, so one left behind names calls a dead process was running."""

    entry_id: str
    """The id of the assistant message entry that holds the calls."""
    started: tuple[str, ...]
    """The ids of the calls that have started, in the order they started."""
    updated_at_ms: int
    """When the record was last saved (Unix ms)."""

    def to_json(self) -> bytes:
        """The JSON the draft slot holds: ``{"kind": "toolRun", "entryId": ..., "started":
        [...], "updatedAt": ...}``."""
        return orjson.dumps(
            {
                "kind": "toolRun",
                "entryId": self.entry_id,
                "started": list(self.started),
                "updatedAt": self.updated_at_ms,
            }
        )


def read_slot(body: bytes | str, *, session_id: str | None = None) -> Draft | ToolRun:
    """What a draft slot holds: a streaming reply (:class:`Draft`) or the tool calls running
    (:class:`ToolRun`, whose JSON has ``"kind": "toolRun"``).

    Raises:
        CorruptSessionError: the JSON is neither (names the session).
    """
    try:
        obj: Any = orjson.loads(body)
        if isinstance(obj, dict) and obj.get("kind") == "toolRun":
            started = obj["started"]
            if not isinstance(started, list):
                raise TypeError("started is not a list")
            return ToolRun(
                entry_id=str(obj["entryId"]),
                started=tuple(str(c) for c in started),
                updated_at_ms=int(obj.get("updatedAt") or 0),
            )
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptSessionError(
            f"the saved tool-run record is not readable: {exc}", session_id=session_id
        ) from exc
    return Draft.from_json(body, session_id=session_id)


def interrupted_message(draft: Draft) -> AssistantMessage:
    """The message a leftover draft becomes: its content, ``stopReason: "aborted"`` and
    ``errorMessage`` :data:`INTERRUPTED`, so wire converters leave it out of requests (it
    is never sent to a model as if it were complete)."""
    return draft.message.model_copy(update={"stop_reason": "aborted", "error_message": INTERRUPTED})
