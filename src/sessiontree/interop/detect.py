"""Which agent wrote a file: the format is read from the content, never from the name (docs/interop.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Literal

import orjson

from sessiontree import _json as exact_json
from sessiontree.errors import CorruptSessionError, UnknownFormatError
from sessiontree.interop.lenient_json import load_document

__all__ = [
    "FORMATS",
    "SQLITE_HEADER",
    "Format",
    "database_tables",
    "detect_format_bytes",
    "is_gemini_cli_header",
    "is_opencode_messages",
    "is_opencode_session_info",
    "open_database",
]

Format = Literal[
    "pi",
    "claude-code",
    "codex",
    "swe-agent",
    "aider",
    "cline",
    "gemini-cli",
    "copilot-cli",
    "opencode",
    "openclaw",
]
FORMATS: tuple[Format, ...] = (
    "pi",
    "claude-code",
    "codex",
    "swe-agent",
    "aider",
    "cline",
    "gemini-cli",
    "copilot-cli",
    "opencode",
    "openclaw",
)
"""The formats :func:`sessiontree.interop.import_session` reads."""

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


def is_gemini_cli_header(obj: Any) -> bool:
    """Whether a JSON object is a Gemini CLI session header, or a whole one-document chat file:
    string ``sessionId`` and ``projectHash``, no ``type``."""
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("sessionId"), str)
        and isinstance(obj.get("projectHash"), str)
        and "type" not in obj
    )


def is_opencode_session_info(doc: Any) -> bool:
    """Whether a JSON value is an OpenCode ``Session.Info``: an ``id`` starting ``ses``, a
    ``time`` object and a ``projectID`` or ``version``."""
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("id"), str)
        and doc["id"].startswith("ses")
        and isinstance(doc.get("time"), dict)
        and ("projectID" in doc or "version" in doc)
    )


def is_opencode_messages(doc: Any) -> bool:
    """Whether a JSON value is a list of OpenCode messages ``[{info, parts}]``."""
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(
            isinstance(m, dict)
            and isinstance(m.get("info"), dict)
            and isinstance(m.get("parts"), list)
            for m in doc[:20]
        )
    )


SQLITE_HEADER = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""


def open_database(data: bytes) -> sqlite3.Connection:
    """An in-memory SQLite database holding a copy of a database file's bytes (nothing on
    disk is opened or locked). The caller closes it.

    Raises:
        sqlite3.DatabaseError: the bytes are not a database SQLite can read.
    """
    conn = sqlite3.connect(":memory:")
    try:
        conn.deserialize(data)
    except sqlite3.DatabaseError:
        conn.close()
        raise
    return conn


def pick_database_session(
    sessions: list[str] | None, source_session: str | None, path: Path, agent: str
) -> str:
    """The session to import from a database of ``agent`` holding ``sessions``: the one
    ``source_session`` names, else the only one.

    Raises:
        CorruptSessionError: not such a database (``sessions`` is ``None``), several sessions
            and no ``source_session`` (the message lists them), or no session of that id.
    """
    if sessions is None:
        raise CorruptSessionError(f"not an {agent} database", path=path)
    if source_session is None:
        if len(sessions) != 1:
            raise CorruptSessionError(
                f"an {agent} database with {len(sessions)} sessions; name the one to import "
                f"(source_session=, import --session): {', '.join(sessions[:20])}",
                path=path,
            )
        return sessions[0]
    if source_session not in sessions:
        raise CorruptSessionError(
            f"no session {source_session!r} in this {agent} database", path=path
        )
    return source_session


def database_tables(conn: sqlite3.Connection) -> set[str]:
    """The names of the tables of a SQLite database."""
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _database_format(data: bytes) -> Format | None:
    """``opencode`` for a database with OpenCode's ``session``/``message``/``part`` tables,
    ``openclaw`` for one with OpenClaw's ``transcript_events(session_id, seq, event_json)``;
    else ``None``."""
    try:
        conn = open_database(data)
    except sqlite3.DatabaseError:
        return None
    try:
        tables = database_tables(conn)
        events = (
            {r[1] for r in conn.execute("PRAGMA table_info(transcript_events)")}
            if "transcript_events" in tables
            else set()
        )
    except sqlite3.DatabaseError:
        return None
    finally:
        conn.close()
    if {"session", "message", "part"} <= tables:
        return "opencode"
    if {"session_id", "seq", "event_json"} <= events:
        return "openclaw"
    return None


def _classify(obj: dict[str, Any]) -> Format | None:
    kind = obj.get("type")
    if not (kind is None or isinstance(kind, str)):  # a damaged line: only uuids can tell
        kind = ""
    if kind == "session" and ("id" in obj or "version" in obj or "cwd" in obj):
        return "pi"
    if kind in _CODEX_TYPES and "payload" in obj:
        return "codex"
    if kind is None and ("record_type" in obj or ("id" in obj and "instructions" in obj)):
        return "codex"  # the 2025 rollout layout: a bare header, then record_type lines
    if (
        isinstance(kind, str)
        and kind.split(".", 1)[0] in ("session", "user", "assistant", "system", "tool")
        and "." in kind
        and isinstance(obj.get("data"), dict)
        and "id" in obj
    ):
        return "copilot-cli"  # an event of Copilot CLI's log: session.start, user.message, ...
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


AIDER_CHAT_STARTED = b"# aider chat started at "
"""How every Aider chat history begins (after blank lines)."""


def _is_cline(doc: Any) -> bool:
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(m, dict) for m in doc[:20])
        and all(m.get("role") in ("user", "assistant") and "content" in m for m in doc[:20])
    )


def _is_cline_ui(doc: Any) -> bool:
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(
            isinstance(m, dict) and "ts" in m and m.get("type") in ("say", "ask") for m in doc[:20]
        )
    )


def _document(data: bytes) -> Any:
    """The JSON document ``data`` holds (lone surrogates read as U+FFFD), else ``None``."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            return load_document(data)[0]
        except ValueError:
            return None


def detect_format_bytes(data: bytes, path: Path) -> Format:
    """The format of a session file's bytes.

    * a single JSON document with a ``history`` or ``trajectory`` list: ``swe-agent``;
    * JSONL whose first line is ``{"type": "session", ...}``: ``pi``;
    * JSONL with ``session_meta``/``response_item``/``event_msg``/``turn_context`` lines
      carrying a ``payload``: ``codex``;
    * JSONL with ``uuid``/``parentUuid`` lines or Claude Code line kinds: ``claude-code``;
    * the 2025 Codex layout (a bare ``{id, timestamp, instructions}`` line, ``record_type``
      lines): ``codex``;
    * Markdown that begins with ``# aider chat started at``: ``aider``;
    * a JSON array of ``{role, content}`` messages: ``cline`` (Cline / Roo Code);
    * a Gemini CLI chat: a JSON document, or a JSONL header line, with ``sessionId`` and
      ``projectHash``: ``gemini-cli``;
    * OpenCode: ``opencode export`` output (``{info, messages}``), a ``Session.Info``
      (``session.json``, a storage ``session/<project>/<id>.json``), a message list
      ``[{info, parts}]`` (``messages.json``), or a SQLite database with ``session``,
      ``message`` and ``part`` tables: ``opencode``;
    * an OpenClaw SQLite database (a ``transcript_events`` table): ``openclaw``;
    * GitHub Copilot CLI: JSONL events ``{type: "session.start" | "user.message" | …, data,
      id}``, or a JSON document with ``chatMessages`` (the legacy session state):
      ``copilot-cli``.

    A leading UTF-8 byte-order mark is ignored. Only the first 50 non-blank lines of a JSONL file are looked at; damaged lines among
    them are passed over (the importer then reports them).

    Raises:
        UnknownFormatError: the content is none of these (names the file, the formats
            tried, and the line of a JSON document that does not parse or of the first byte
            that is not UTF-8).
        CorruptSessionError: a Cline ``ui_messages.json`` (names the file to import instead).
    """
    if data.startswith(SQLITE_HEADER):
        fmt = _database_format(data)
        if fmt is not None:
            return fmt
        raise CorruptSessionError(
            "a SQLite database of no known agent (OpenCode: session/message/part tables; "
            "OpenClaw: transcript_events)",
            path=path,
        )
    data = strip_bom(data)
    stripped = data.lstrip()
    if stripped.startswith(AIDER_CHAT_STARTED):
        return "aider"
    if stripped.startswith(b"["):
        doc = _document(data)
        if _is_cline(doc):
            return "cline"
        if is_opencode_messages(doc):
            return "opencode"
        if _is_cline_ui(doc):
            raise CorruptSessionError(
                "a Cline / Roo Code UI log; import the api_conversation_history.json of the "
                "same task (its times are read from this file)",
                path=path,
            )
    whole_document = False
    if stripped.startswith(b"{"):
        first_line = stripped.split(b"\n", 1)[0]
        try:
            orjson.loads(first_line)
        except orjson.JSONDecodeError:
            whole_document = True
        if whole_document:
            doc = _document(data)  # None: maybe JSONL with a damaged first line
            if isinstance(doc, dict) and (
                isinstance(doc.get("history"), list) or isinstance(doc.get("trajectory"), list)
            ):
                return "swe-agent"
            if is_gemini_cli_header(doc) and isinstance(doc.get("messages"), list):
                return "gemini-cli"
            if isinstance(doc, dict) and isinstance(doc.get("chatMessages"), list):
                return "copilot-cli"
            if is_opencode_session_info(doc) or (
                isinstance(doc, dict)
                and is_opencode_session_info(doc.get("info"))
                and isinstance(doc.get("messages"), list)
            ):
                return "opencode"
        fmt = _probe_lines(data)
        if fmt is not None:
            return fmt
    reason, line = _why_unknown(data, whole_document)
    raise UnknownFormatError(path, FORMATS, reason=reason, line_number=line)


def _why_unknown(data: bytes, whole_document: bool) -> tuple[str, int | None]:
    """What is visibly wrong with bytes of no known format (``""`` when nothing is), and the
    1-based line at fault: UTF-16 text, bytes that are not UTF-8, or a JSON document (a
    SWE-agent trajectory, say) that does not parse (torn, or lines doubled by hand)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 text (session files are UTF-8)", None
    try:
        data.decode()
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return f"not UTF-8 (byte 0x{data[exc.start]:02x})", line
    if whole_document:
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            return f"a JSON document that does not parse ({exc.msg}, column {exc.colno})", (
                exc.lineno
            )
    return "", None


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
            try:  # a lone surrogate escape (import reads it as U+FFFD)
                obj = orjson.loads(exact_json.without_lone_surrogates(raw))
            except orjson.JSONDecodeError:
                continue
        if isinstance(obj, dict):
            if seen == 1 and isinstance(obj.get("history"), list):
                return "swe-agent"
            if seen == 1 and is_gemini_cli_header(obj):
                return "gemini-cli"
            if seen == 1 and (
                is_opencode_session_info(obj) or is_opencode_session_info(obj.get("info"))
            ):
                return "opencode"  # a Session.Info or an export written on one line
            fmt = _classify(obj)
            if fmt is not None:
                return fmt
    return None
