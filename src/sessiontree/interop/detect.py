"""Which agent wrote a file: the format is read from the content, never from the name (docs/interop.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import orjson

from sessiontree.errors import CorruptSessionError

__all__ = ["FORMATS", "Format", "detect_format_bytes"]

Format = Literal["pi", "claude-code", "codex", "swe-agent"]
FORMATS: tuple[Format, ...] = ("pi", "claude-code", "codex", "swe-agent")
"""The formats :func:`sessiontree.import_session` reads."""

_CODEX_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
_CLAUDE_TYPES = frozenset(
    {
        "user",
        "assistant",
        "summary",
        "system",
        "permission-mode",
        "file-history-snapshot",
        "attachment",
        "ai-title",
        "last-prompt",
        "progress",
        "queue-operation",
    }
)
_PROBE_LINES = 50


def _classify(obj: dict[str, Any]) -> Format | None:
    kind = obj.get("type")
    if kind == "session" and ("id" in obj or "version" in obj or "cwd" in obj):
        return "pi"
    if kind in _CODEX_TYPES and "payload" in obj:
        return "codex"
    if "uuid" in obj and "parentUuid" in obj:
        return "claude-code"
    if kind in _CLAUDE_TYPES and ("sessionId" in obj or "leafUuid" in obj or "message" in obj):
        return "claude-code"
    return None


UTF8_BOM = b"\xef\xbb\xbf"
"""The UTF-8 byte-order mark some editors (Windows ones mostly) put before the first line."""


def strip_bom(data: bytes) -> bytes:
    """``data`` without a leading UTF-8 byte-order mark (JSON forbids it; orjson rejects it)."""
    return data[len(UTF8_BOM) :] if data.startswith(UTF8_BOM) else data


def detect_format_bytes(data: bytes, path: Path) -> Format:
    """The format of a session file's bytes.

    * a single JSON document with a ``history`` or ``trajectory`` list: ``swe-agent``;
    * JSONL whose first line is ``{"type": "session", ...}``: ``pi``;
    * JSONL with ``session_meta``/``response_item``/``event_msg``/``turn_context`` lines
      carrying a ``payload``: ``codex``;
    * JSONL with ``uuid``/``parentUuid`` lines or Claude Code line kinds: ``claude-code``.

    A leading UTF-8 byte-order mark is ignored. Only the first 50 non-blank lines of a JSONL file are looked at; damaged lines among
    them are passed over (the importer then reports them).

    Raises:
        CorruptSessionError: the content is none of these (names the file).
    """
    data = strip_bom(data)
    stripped = data.lstrip()
    if stripped.startswith(b"{"):
        first_line = stripped.split(b"\n", 1)[0]
        try:
            orjson.loads(first_line)
            whole_document = False
        except orjson.JSONDecodeError:
            whole_document = True
        if whole_document:
            try:
                doc = orjson.loads(data)
            except orjson.JSONDecodeError:
                doc = None  # maybe JSONL with a damaged first line: probe the other lines
            if isinstance(doc, dict) and (
                isinstance(doc.get("history"), list) or isinstance(doc.get("trajectory"), list)
            ):
                return "swe-agent"
        fmt = _probe_lines(data)
        if fmt is not None:
            return fmt
    raise CorruptSessionError(
        "not a session file of a known format (pi, claude-code, codex, swe-agent)", path=path
    )


def _probe_lines(data: bytes) -> Format | None:
    """The format of the first classifiable line among the first 50 non-blank ones."""
    seen = 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        seen += 1
        if seen > _PROBE_LINES:
            break
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            if seen == 1 and isinstance(obj.get("history"), list):
                return "swe-agent"
            fmt = _classify(obj)
            if fmt is not None:
                return fmt
    return None
