"""OpenClaw's SQLite session store → a session (docs/interop.md).

OpenClaw (an agent gateway built on pi) keeps each agent's sessions in one SQLite database
(``~/.openclaw/agents/<agent>/…``). Its ``transcript_events`` table holds, per
``session_id``, the lines a pi v3 session file would hold — the ``session`` header, then
``message``, ``model_change``, ``custom``, ``compaction``, … entries — one JSON object per
row in ``event_json``, in ``seq`` order. A session is imported exactly as the pi importer
imports a pi v3 file of those lines (:mod:`sessiontree.interop.pi`): entry ids are the
events' own ``id``, so a session that grew gives the same ids. When the events start
without a ``session`` header one is made from the session's row (id, first event time).

The report's line numbers count the session's events in ``seq`` order (1 = the first; when
a header had to be made, it is line 1 and the events start at 2). The
session's row of the ``sessions`` table, when there is one, is kept in the metadata under
``openclaw``. A row whose ``event_json`` is empty (OpenClaw compresses some events with
zstd into ``event_zstd``, which this importer cannot read) is an unreadable line.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sessiontree import _json as exact_json
from sessiontree.errors import CorruptSessionError
from sessiontree.ids import iso_from_ms
from sessiontree.interop._common import Converted, unreadable
from sessiontree.interop.detect import (
    SQLITE_HEADER,
    database_tables,
    open_database,
    pick_database_session,
)
from sessiontree.interop.pi import convert_pi
from sessiontree.interop.report import ImportReport

__all__ = ["convert_openclaw", "openclaw_database_sessions"]


def openclaw_database_sessions(data: bytes) -> list[str] | None:
    """The session ids of an OpenClaw database (by their first event, oldest first), ``None``
    when ``data`` is not one (no ``transcript_events`` table)."""
    if not data.startswith(SQLITE_HEADER):
        return None
    try:
        conn = open_database(data)
    except sqlite3.DatabaseError:
        return None
    try:
        if "transcript_events" not in database_tables(conn):
            return None
        rows = conn.execute(
            "SELECT session_id FROM transcript_events GROUP BY session_id "
            "ORDER BY MIN(created_at), session_id"
        ).fetchall()
        return [str(r[0]) for r in rows]
    except sqlite3.DatabaseError:
        return None
    finally:
        conn.close()


def _session_row(conn: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    if "sessions" not in database_tables(conn):
        return None
    conn.row_factory = sqlite3.Row
    try:
        row = conn.execute("SELECT * FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    except sqlite3.DatabaseError:
        return None
    finally:
        conn.row_factory = None
    return dict(row) if row is not None else None


def convert_openclaw(
    data: bytes,
    path: Path,
    report: ImportReport,
    *,
    lenient: bool,
    source_session: str | None = None,
) -> Converted:
    """Parse one session of an OpenClaw database's bytes into drafts and metadata. Pure: the
    database is read from a copy in memory.

    Raises:
        CorruptSessionError: not an OpenClaw database; several sessions and no
            ``source_session``, or no session of that id; an unreadable event and not
            ``lenient`` (names the database and the event's place).
    """
    source_session = pick_database_session(
        openclaw_database_sessions(data), source_session, path, "OpenClaw"
    )
    conn = open_database(data)
    try:
        rows = conn.execute(
            "SELECT seq, event_json, created_at FROM transcript_events WHERE session_id = ? "
            "ORDER BY seq",
            (source_session,),
        ).fetchall()
        row = _session_row(conn, source_session)
    except sqlite3.DatabaseError as exc:
        raise CorruptSessionError(f"cannot read the OpenClaw database: {exc}", path=path) from exc
    finally:
        conn.close()
    lines: list[bytes] = []
    for number, (seq, event, _) in enumerate(rows, 1):
        if isinstance(event, str) and event.strip():
            lines.append(event.encode())
            continue
        unreadable(
            report,
            path,
            number,
            f"event seq {seq} of session {source_session!r} has no event_json (compressed?)",
            "",
            lenient=lenient,
        )
        lines.append(b"")
    header: dict[str, Any] | None = None
    if lines:
        try:
            first = exact_json.loads(lines[0]) if lines[0] else None
        except exact_json.JSONDecodeError:
            first = None
        header = first if isinstance(first, dict) and first.get("type") == "session" else None
    if header is None:
        created = rows[0][2] if rows and isinstance(rows[0][2], int) else 0
        made = {
            "type": "session",
            "version": 3,
            "id": source_session,
            "timestamp": iso_from_ms(created),
        }
        lines.insert(0, exact_json.dumps(made))
        report.warnings.append(
            f"session {source_session!r} has no session header event; one is made from its id"
        )
    out = convert_pi(b"\n".join(lines) + b"\n", path, report, lenient=lenient)
    meta = dict(out.metadata)
    imported = dict(meta.get("importedFrom") or {})
    imported.update(format="openclaw", sessionId=source_session)
    meta["importedFrom"] = imported
    if row is not None:
        meta["openclaw"] = row
    out.metadata = meta
    return out
