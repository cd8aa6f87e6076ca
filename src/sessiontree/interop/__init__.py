"""Interoperability: import other agents' session files, export pi files (docs/interop.md).

:func:`import_session` reads a file written by the pi coding agent (versions 1-3), Claude
Code, the Codex CLI, SWE-agent, Aider, Cline / Roo Code, Gemini CLI, GitHub Copilot CLI or
OpenCode, or one session of an OpenCode or OpenClaw SQLite database — the format is
detected from the content — and creates one session in a repository. It never writes to the source file. Every entry is built and
checked first and appended in one batch, so an import that fails leaves nothing behind.
:class:`ImportReport` lists everything that was not a plain one-to-one copy.

:func:`export_pi_session` writes a session as a pi version 3 file; :func:`migrate_pi_file`
rewrites a pi version 1 or 2 file as version 3 in place, atomically.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

import orjson

from sessiontree.errors import CorruptSessionError, StorageError
from sessiontree.interop._common import AlreadyImportedError, Converted, Progress, store
from sessiontree.interop.detect import FORMATS, Format, detect_format_bytes, strip_bom
from sessiontree.interop.pi import export_pi_session, migrate_pi_file
from sessiontree.interop.positions import SyncPosition
from sessiontree.interop.report import CustomLine, DanglingParent, ImportReport, UnreadableLine
from sessiontree.repos.base import SessionRepo
from sessiontree.session import Session
from sessiontree.storage.private_files import file_kind

__all__ = [
    "AlreadyImportedError",
    "CustomLine",
    "DanglingParent",
    "FORMATS",
    "Format",
    "ImportReport",
    "UnreadableLine",
    "convert",
    "database_sessions",
    "detect_format",
    "export_pi_session",
    "import_data",
    "import_session",
    "migrate_pi_file",
]


def _read_sync(path: Path) -> tuple[bytes, int]:
    # a FIFO or a device would block or never end: only regular files are session files
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"not a regular file ({file_kind(st.st_mode)})")
        return f.read(), st.st_mtime_ns // 1_000_000


async def _read(path: Path) -> tuple[bytes, int]:
    """The file's bytes and its modification time (Unix ms). Opened read-only."""
    try:
        return await asyncio.to_thread(_read_sync, path)
    except OSError as exc:
        raise StorageError(f"{path}: cannot read the file: {exc}") from exc


async def _cline_ui(path: Path, report: ImportReport) -> object:
    """The parsed ``ui_messages.json`` beside a Cline task file, ``None`` when absent or bad."""
    from sessiontree.interop.cline import UI_MESSAGES

    ui_path = path.with_name(UI_MESSAGES)
    if not ui_path.is_file():
        return None
    data, _ = await _read(ui_path)
    try:
        return orjson.loads(strip_bom(data))
    except orjson.JSONDecodeError as exc:
        report.warnings.append(f"{ui_path}: not valid JSON ({exc}); message times not read")
        return None


def _read_json_sync(path: Path) -> Any:
    try:
        return orjson.loads(strip_bom(path.read_bytes()))
    except (OSError, orjson.JSONDecodeError):
        return None


def _opencode_storage_sync(path: Path, session_id: str) -> list[dict[str, Any]] | None:
    """The messages ``[{info, parts}]`` of a session file in OpenCode's storage directory
    (``storage/session/<project>/<id>.json``), read from ``storage/message/<id>/`` and
    ``storage/part/<message id>/`` in id order; ``None`` when ``path`` is not in such a
    directory."""
    if path.parent.parent.name != "session":
        return None
    root = path.parent.parent.parent
    folder = root / "message" / session_id
    if not folder.is_dir():
        return None
    out: list[dict[str, Any]] = []
    for message_file in sorted(folder.glob("*.json")):
        info = _read_json_sync(message_file)
        if not isinstance(info, dict):
            continue
        part_folder = root / "part" / str(info.get("id", message_file.stem))
        parts = [_read_json_sync(p) for p in sorted(part_folder.glob("*.json"))]
        out.append({"info": info, "parts": [p for p in parts if isinstance(p, dict)]})
    return out


def _opencode_companion_sync(path: Path, data: bytes) -> object:
    """What belongs with an OpenCode JSON file: for a ``Session.Info``, its messages (from
    the storage directory it sits in, else a ``messages.json`` beside it); for a message
    list, the ``session.json`` beside it; ``None`` otherwise."""
    from sessiontree.interop.detect import (
        SQLITE_HEADER,
        is_opencode_messages,
        is_opencode_session_info,
    )

    if data.startswith(SQLITE_HEADER):
        return None
    try:
        doc = orjson.loads(strip_bom(data))
    except orjson.JSONDecodeError:
        return None
    if is_opencode_session_info(doc):
        stored = _opencode_storage_sync(path, doc["id"])
        if stored is not None:
            return stored
        beside = path.with_name("messages.json")
        return _read_json_sync(beside) if beside.is_file() and beside != path else None
    if is_opencode_messages(doc):
        beside = path.with_name("session.json")
        return _read_json_sync(beside) if beside.is_file() else None
    return None


async def detect_format(path: str | Path) -> Format:
    """The format of a session file, from its content (one of :data:`FORMATS`). Reads the
    whole file.

    Raises:
        UnknownFormatError: the file is not a session file of a known format.
        CorruptSessionError: a Cline ``ui_messages.json`` (names the file to import instead).
        StorageError: the file cannot be read.
    """
    p = Path(path)
    data, _ = await _read(p)
    return detect_format_bytes(data, p)


def convert(
    data: bytes,
    path: Path,
    fmt: Format,
    report: ImportReport,
    *,
    lenient: bool = False,
    mtime_ms: int = 0,
    ui: object = None,
    progress: Progress | None = None,
    companion: object = None,
    source_session: str | None = None,
) -> Converted:
    """Turn a file's bytes into draft entries and metadata (pure; nothing is stored).

    ``mtime_ms`` (Unix ms) dates the entries of formats without timestamps (SWE-agent, Cline
    without its UI log, Aider text before the first chat); ``ui`` is the parsed
    ``ui_messages.json`` of a Cline task; ``companion`` what belongs with an OpenCode JSON file
    (the other file of a share pair, or a storage session's messages ``[{info, parts}]``);
    ``source_session`` the session to read from a database holding several (OpenCode,
    OpenClaw). ``progress`` is called with the bytes of ``data`` parsed so far: line by line
    (every 256 KiB or so) for the JSONL formats, once at the end for the others; its last call
    is with ``len(data)``.

    Raises:
        CorruptSessionError: an unreadable line and not ``lenient``; content that is not of
            format ``fmt``.
    """
    if fmt == "pi":
        from sessiontree.interop.pi import convert_pi

        return convert_pi(data, path, report, lenient=lenient, progress=progress)
    if fmt == "claude-code":
        from sessiontree.interop.claude_code import convert_claude_code

        return convert_claude_code(data, path, report, lenient=lenient, progress=progress)
    if fmt == "codex":
        from sessiontree.interop.codex import convert_codex

        return convert_codex(data, path, report, lenient=lenient, progress=progress)
    converted = _convert_document(
        data,
        path,
        fmt,
        report,
        lenient=lenient,
        mtime_ms=mtime_ms,
        ui=ui,
        companion=companion,
        source_session=source_session,
    )
    if progress is not None:
        progress(len(data))
    return converted


def _convert_document(
    data: bytes,
    path: Path,
    fmt: Format,
    report: ImportReport,
    *,
    lenient: bool,
    mtime_ms: int,
    ui: object,
    companion: object,
    source_session: str | None,
) -> Converted:
    """:func:`convert` for the formats read as one document (no progress within the file)."""
    if fmt == "swe-agent":
        from sessiontree.interop.swe_agent import convert_swe_agent

        return convert_swe_agent(data, path, report, lenient=lenient, mtime_ms=mtime_ms)
    if fmt == "aider":
        from sessiontree.interop.aider import convert_aider

        return convert_aider(data, path, report, lenient=lenient, mtime_ms=mtime_ms)
    if fmt == "gemini-cli":
        from sessiontree.interop.gemini_cli import convert_gemini_cli

        return convert_gemini_cli(data, path, report, lenient=lenient)
    if fmt == "copilot-cli":
        from sessiontree.interop.copilot_cli import convert_copilot_cli

        return convert_copilot_cli(data, path, report, lenient=lenient)
    if fmt == "opencode":
        from sessiontree.interop.opencode import convert_opencode

        return convert_opencode(
            data,
            path,
            report,
            lenient=lenient,
            companion=companion,
            source_session=source_session,
        )
    if fmt == "openclaw":
        from sessiontree.interop.openclaw import convert_openclaw

        return convert_openclaw(data, path, report, lenient=lenient, source_session=source_session)
    if fmt == "cline":
        from sessiontree.interop.cline import convert_cline

        return convert_cline(data, path, report, lenient=lenient, mtime_ms=mtime_ms, ui=ui)
    from sessiontree.errors import InvalidArgumentError

    raise InvalidArgumentError(f"unknown import format {fmt!r}; use one of {', '.join(FORMATS)}")


def database_sessions(data: bytes) -> list[str] | None:
    """The session ids in a database file's bytes that :func:`import_session` reads (an
    OpenCode or OpenClaw SQLite database), oldest first; ``None`` for any other content."""
    from sessiontree.interop.openclaw import openclaw_database_sessions
    from sessiontree.interop.opencode import opencode_database_sessions

    found = opencode_database_sessions(data)
    return found if found is not None else openclaw_database_sessions(data)


async def import_session(
    path: str | Path,
    repo: SessionRepo,
    *,
    format: Format | None = None,
    lenient: bool = False,
    session_id: str | None = None,
    progress: Progress | None = None,
    source_session: str | None = None,
) -> tuple[Session, ImportReport]:
    """Import one session file into ``repo`` (docs/interop.md); returns the new session and a report.

    The source file is only read (for a Cline task also the ``ui_messages.json`` beside it,
    for the message times; for an OpenCode ``session.json``/``messages.json`` the other file
    of the pair beside it, for an OpenCode storage session file its message and part files). The new session keeps the file's session id (for a Claude Code
    sub-agent file ``<sessionId>-agent-<agentId>``; for a SWE-agent trajectory or an Aider
    history ``swe-agent-``/``aider-<content hash>``; for a Cline task ``cline-<task id>``)
    when it is a valid id, else ``import-<SHA-256 of that id>`` (the same file, the same id).
    Importing a file whose session is already in ``repo`` (imported from the same format)
    appends only what the file holds that the session lacks, matched by entry id: a file
    that grew, or that its agent rewrote, extends its session, which then equals a fresh
    import of the whole file for formats whose records do not change once written
    (docs/interop.md, "Importing again"). A file that adds nothing is refused.

    Args:
        path: the file to read.
        repo: where to create the session.
        format: one of :data:`FORMATS` (``pi``, ``claude-code``, ``codex``, ``swe-agent``,
            ``aider``, ``cline``, ``gemini-cli``, ``copilot-cli``, ``opencode``,
            ``openclaw``); detected from the content when ``None``.
        lenient: go on past unreadable lines and list them in the report instead of failing.
        session_id: the id of the new session instead of the file's (e.g. for a second copy).
        progress: called with the number of bytes of the file parsed so far, as it is
            parsed (about every 256 KiB for the JSONL formats); the last call is with the
            file's size, before the session is stored.
        source_session: for a database holding several sessions (OpenCode, OpenClaw; see
            :func:`database_sessions`), the id of the one to import; ``None`` for a database
            holding one session, and for every other format.

    Raises:
        UnknownFormatError: ``format`` is ``None`` and the file is not a session file of
            a known format (names the file and the formats tried). Nothing is created.
        CorruptSessionError: (without ``lenient``) a line cannot be read; names the file
            and the line. A database holding several sessions and no ``source_session`` (the
            message lists them), or without the session ``source_session`` names. Nothing is
            created in ``repo``.
        AlreadyImportedError: (a :class:`DuplicateEntryError`) the session is already in
            ``repo`` and the file holds nothing it lacks, or it was not imported from this
            format (``session_id`` set on the error, ``entry_id`` ``None``, ``report`` what
            the file holds); nothing was written.
        InvalidEntryError: ``session_id`` is not of the form ``[A-Za-z0-9_-]{1,128}``.
        StorageError: the file cannot be read.
    """
    p = Path(path)
    data, mtime_ms = await _read(p)
    return await import_data(
        p,
        data,
        repo,
        mtime_ms=mtime_ms,
        format=format,
        lenient=lenient,
        session_id=session_id,
        progress=progress,
        source_session=source_session,
    )


async def import_data(
    path: Path,
    data: bytes,
    repo: SessionRepo,
    *,
    mtime_ms: int = 0,
    format: Format | None = None,
    lenient: bool = False,
    session_id: str | None = None,
    progress: Progress | None = None,
    source_session: str | None = None,
    position: SyncPosition | None = None,
) -> tuple[Session, ImportReport]:
    """:func:`import_session` of bytes already read from ``path`` (``mtime_ms``: its
    modification time, Unix ms). Files beside it (a Cline task's UI log, an OpenCode pair)
    are read from disk. ``position`` is stored with the entries, in the same append
    (:mod:`sessiontree.interop.positions`). Raises what :func:`import_session` raises."""
    from sessiontree.errors import UnknownFormatError

    p = path
    detected: Format | None
    try:
        detected = detect_format_bytes(data, p)
    except (CorruptSessionError, UnknownFormatError):
        if format is None:
            raise
        detected = None
    fmt = format if format is not None else detected
    assert fmt is not None
    report = ImportReport(source_path=p, format=fmt)
    if detected != fmt:
        looks = f"looks like {detected}" if detected else "matches no known format"
        report.warnings.append(f"the content {looks}; read as {fmt} as asked")
    ui = await _cline_ui(p, report) if fmt == "cline" else None
    companion = (
        await asyncio.to_thread(_opencode_companion_sync, p, data) if fmt == "opencode" else None
    )
    converted = convert(
        data,
        p,
        fmt,
        report,
        lenient=lenient,
        mtime_ms=mtime_ms,
        ui=ui,
        companion=companion,
        source_session=source_session,
        progress=progress,
    )
    session = await store(
        repo, converted, report, p, lenient=lenient, session_id=session_id, position=position
    )
    return session, report
