"""Interoperability: import other agents' session files, export pi files (docs/interop.md).

:func:`import_session` reads a file written by the pi coding agent (versions 1-3), Claude
Code, the Codex CLI, SWE-agent, Aider, Cline / Roo Code or Gemini CLI — the format is
detected from the content — and creates one session in a repository. It never writes to the source file. Every entry is built and
checked first and appended in one batch, so an import that fails leaves nothing behind.
:class:`ImportReport` lists everything that was not a plain one-to-one copy.

:func:`export_pi_session` writes a session as a pi version 3 file; :func:`migrate_pi_file`
rewrites a pi version 1 or 2 file as version 3 in place, atomically.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import orjson

from sessiontree.errors import CorruptSessionError, StorageError
from sessiontree.interop._common import AlreadyImportedError, Converted, store
from sessiontree.interop.detect import FORMATS, Format, detect_format_bytes, strip_bom
from sessiontree.interop.pi import export_pi_session, migrate_pi_file
from sessiontree.interop.report import CustomLine, DanglingParent, ImportReport, UnreadableLine
from sessiontree.repos.base import SessionRepo
from sessiontree.session import Session

__all__ = [
    "AlreadyImportedError",
    "CustomLine",
    "DanglingParent",
    "FORMATS",
    "Format",
    "ImportReport",
    "UnreadableLine",
    "convert",
    "detect_format",
    "export_pi_session",
    "import_session",
    "migrate_pi_file",
]


def _read_sync(path: Path) -> tuple[bytes, int]:
    with path.open("rb") as f:
        mtime_ms = os.fstat(f.fileno()).st_mtime_ns // 1_000_000
        return f.read(), mtime_ms


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


async def detect_format(path: str | Path) -> Format:
    """The format of a session file, from its content (one of :data:`FORMATS`). Reads the
    whole file.

    Raises:
        CorruptSessionError: the file is not a session file of a known format.
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
) -> Converted:
    """Turn a file's bytes into draft entries and metadata (pure; nothing is stored).

    ``mtime_ms`` (Unix ms) dates the entries of formats without timestamps (SWE-agent, Cline
    without its UI log, Aider text before the first chat); ``ui`` is the parsed
    ``ui_messages.json`` of a Cline task.

    Raises:
        CorruptSessionError: an unreadable line and not ``lenient``; content that is not of
            format ``fmt``.
    """
    if fmt == "pi":
        from sessiontree.interop.pi import convert_pi

        return convert_pi(data, path, report, lenient=lenient)
    if fmt == "claude-code":
        from sessiontree.interop.claude_code import convert_claude_code

        return convert_claude_code(data, path, report, lenient=lenient)
    if fmt == "codex":
        from sessiontree.interop.codex import convert_codex

        return convert_codex(data, path, report, lenient=lenient)
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
    if fmt == "cline":
        from sessiontree.interop.cline import convert_cline

        return convert_cline(data, path, report, lenient=lenient, mtime_ms=mtime_ms, ui=ui)
    raise CorruptSessionError(f"unknown import format {fmt!r}; use one of {', '.join(FORMATS)}")


async def import_session(
    path: str | Path,
    repo: SessionRepo,
    *,
    format: Format | None = None,
    lenient: bool = False,
    session_id: str | None = None,
) -> tuple[Session, ImportReport]:
    """Import one session file into ``repo`` (docs/interop.md); returns the new session and a report.

    The source file is only read (for a Cline task also the ``ui_messages.json`` beside it,
    for the message times). The new session keeps the file's session id (for a Claude Code
    sub-agent file ``<sessionId>-agent-<agentId>``; for a SWE-agent trajectory or an Aider
    history ``swe-agent-``/``aider-<content hash>``; for a Cline task ``cline-<task id>``)
    when it is a valid id, else it gets a new UUID v7.
    Importing a file whose session is already in ``repo`` is refused, never merged or copied.

    Args:
        path: the file to read.
        repo: where to create the session.
        format: ``pi``, ``claude-code``, ``codex``, ``swe-agent``, ``aider``, ``cline`` or
            ``gemini-cli``; detected from the content when ``None``.
        lenient: go on past unreadable lines and list them in the report instead of failing.
        session_id: the id of the new session instead of the file's (e.g. for a second copy).

    Raises:
        CorruptSessionError: the file is not a session file of a known format, or (without
            ``lenient``) a line cannot be read; names the file and the line. Nothing is
            created in ``repo``.
        AlreadyImportedError: (a :class:`DuplicateEntryError`) the session id is already in
            ``repo`` (``session_id`` set on the error, ``entry_id`` ``None``, ``report`` what
            the file holds); nothing was created.
        InvalidEntryError: ``session_id`` is not of the form ``[A-Za-z0-9_-]{1,128}``.
        StorageError: the file cannot be read.
    """
    p = Path(path)
    data, mtime_ms = await _read(p)
    detected: Format | None
    try:
        detected = detect_format_bytes(data, p)
    except CorruptSessionError:
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
    converted = convert(data, p, fmt, report, lenient=lenient, mtime_ms=mtime_ms, ui=ui)
    session = await store(repo, converted, report, p, lenient=lenient, session_id=session_id)
    return session, report
