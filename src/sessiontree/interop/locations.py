"""Where the agents keep their sessions, and which files of a directory are session files (docs/interop.md).

:func:`default_sources` lists the directories each agent writes its sessions to by default,
with the environment variables that move them honoured; :func:`session_files` walks a
:class:`Source` and yields its session files with their ``os.stat`` (from the directory walk:
no file is opened). Aider and SWE-agent have no default place (Aider writes
``.aider.chat.history.md`` inside each project): name them with a source of their own.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from sessiontree.interop.detect import Format

__all__ = [
    "DIR_NAMES",
    "DIR_SUFFIXES",
    "DefaultLocation",
    "Source",
    "default_locations",
    "default_sources",
    "is_session_file",
    "session_files",
]

DIR_SUFFIXES = frozenset({".jsonl", ".traj"})
"""File name endings picked up when a directory is searched (a file named alone: any name)."""
DIR_NAMES = (".aider.chat.history.md", "api_conversation_history.json")
"""File names (or name endings) picked up in a directory besides :data:`DIR_SUFFIXES`: Aider
histories and Cline / Roo Code tasks (their ``ui_messages.json`` is read with the task)."""
_DATABASE_SUFFIXES = frozenset({".db", ".sqlite"})


@dataclass(frozen=True)
class Source:
    """A place to sync sessions from: a file, or a directory searched recursively."""

    format: Format | None
    """The format of its files; ``None``: detected from each file's content."""
    path: Path
    """The file or directory."""


@dataclass(frozen=True)
class DefaultLocation:
    """One default place of one agent, as docs/interop.md lists it."""

    agent: str
    """The agent's name (``Claude Code``, ``Roo Code``, ...)."""
    format: Format
    """The format its files are read as."""
    path: Path
    """The directory, the environment variables already applied."""
    variable: str | None
    """The environment variable that moves it, ``None`` when none does."""


def _home(env: Mapping[str, str], home: Path | None) -> Path:
    if home is not None:
        return home
    value = env.get("HOME")
    return Path(value) if value else Path.home()


def _dir(env: Mapping[str, str], name: str, default: Path) -> Path:
    value = env.get(name)
    return Path(value).expanduser() if value else default


def _editor_storage(env: Mapping[str, str], home: Path) -> list[Path]:
    """VS Code's ``User/globalStorage`` folders (Code, Insiders, VSCodium, Cursor, Windsurf)
    for this platform: where the Cline and Roo Code extensions keep their tasks."""
    if sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = _dir(env, "APPDATA", home / "AppData" / "Roaming")
    else:
        base = _dir(env, "XDG_CONFIG_HOME", home / ".config")
    editors = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
    return [base / editor / "User" / "globalStorage" for editor in editors]


def default_locations(
    env: Mapping[str, str] | None = None, home: Path | None = None
) -> list[DefaultLocation]:
    """Every default session directory of the ten agents, whether or not it exists.

    Args:
        env: the environment to read overrides from (default ``os.environ``).
        home: the home directory (default ``$HOME`` of ``env``, else the user's).
    """
    env = os.environ if env is None else env
    h = _home(env, home)
    claude = _dir(env, "CLAUDE_CONFIG_DIR", h / ".claude")
    codex = _dir(env, "CODEX_HOME", h / ".codex")
    pi = _dir(env, "PI_CODING_AGENT_DIR", h / ".pi" / "agent")
    openclaw = _dir(env, "OPENCLAW_STATE_DIR", h / ".openclaw")
    copilot = _dir(env, "COPILOT_HOME", h / ".copilot")
    data_home = _dir(env, "XDG_DATA_HOME", h / ".local" / "share")
    out = [
        DefaultLocation("Claude Code", "claude-code", claude / "projects", "CLAUDE_CONFIG_DIR"),
        DefaultLocation("Codex", "codex", codex / "sessions", "CODEX_HOME"),
        DefaultLocation("Codex", "codex", codex / "archived_sessions", "CODEX_HOME"),
        DefaultLocation("pi", "pi", pi / "sessions", "PI_CODING_AGENT_DIR"),
        # pi-format transcripts (agents/<agent>/sessions/*.jsonl) and the per-agent SQLite
        # store beside them: each file's content says which
        DefaultLocation("OpenClaw", "pi", openclaw / "agents", "OPENCLAW_STATE_DIR"),
        DefaultLocation("Gemini CLI", "gemini-cli", h / ".gemini" / "tmp", None),
        DefaultLocation("Copilot CLI", "copilot-cli", copilot / "session-state", "COPILOT_HOME"),
        DefaultLocation(
            "Copilot CLI", "copilot-cli", copilot / "history-session-state", "COPILOT_HOME"
        ),
        DefaultLocation("OpenCode", "opencode", data_home / "opencode", "XDG_DATA_HOME"),
        DefaultLocation("Cline", "cline", h / ".cline" / "data" / "tasks", None),
    ]
    for storage in _editor_storage(env, h):
        variable = "XDG_CONFIG_HOME" if sys.platform not in ("darwin", "win32") else None
        out.append(DefaultLocation("Cline", "cline", storage / "saoudrizwan.claude-dev", variable))
        out.append(
            DefaultLocation("Roo Code", "cline", storage / "rooveterinaryinc.roo-cline", variable)
        )
    return out


def default_sources(
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    *,
    include_missing: bool = False,
) -> list[Source]:
    """The :class:`Source` of every default location (:func:`default_locations`) that is a
    directory now (``include_missing``: of every one, for a watcher that waits for an agent's
    first run to make its directory). OpenClaw's are detected per file (its folder holds
    pi-format JSONL and SQLite databases)."""
    out: list[Source] = []
    for loc in default_locations(env, home):
        if include_missing or loc.path.is_dir():
            out.append(Source(None if loc.agent == "OpenClaw" else loc.format, loc.path))
    return out


def is_session_file(relative: Path, fmt: Format | None = None) -> bool:
    """Whether a file found in a directory (``relative`` to it) is a session file to read.

    Files ending in ``.jsonl`` or ``.traj``, Aider histories (``*.aider.chat.history.md``,
    the hidden ``.aider.chat.history.md`` too), Cline tasks (``api_conversation_history.json``),
    OpenCode storage session files (``session/<project>/ses*.json``) and SQLite databases
    (``*.db``, ``*.sqlite``); for ``fmt`` ``gemini-cli`` also ``*.json`` in a ``chats``
    folder, for ``copilot-cli`` in a ``history-session-state`` folder. Files in hidden
    folders and other hidden files are skipped.
    """
    return _is_session_parts(relative.parts, fmt)


def _is_session_parts(parts: tuple[str, ...], fmt: Format | None) -> bool:
    """:func:`is_session_file` of the relative path whose parts are ``parts`` (what a walk
    has at hand, without building a :class:`~pathlib.Path` per file)."""
    name = parts[-1]
    if any(part.startswith(".") for part in parts[:-1]):
        return False
    if name.endswith(DIR_NAMES):
        return True
    if name.startswith("."):
        return False
    if parts[-3:-2] == ("session",) and name.startswith("ses") and name.endswith(".json"):
        return True  # an OpenCode storage session file: session/<project>/<id>.json
    dot = name.rfind(".")
    suffix = name[dot:] if 0 < dot < len(name) - 1 else ""  # PurePath.suffix
    if suffix in DIR_SUFFIXES or suffix in _DATABASE_SUFFIXES:
        return True
    if suffix == ".json" and len(parts) > 1:
        folder = parts[-2]
        # Gemini CLI's chats/session-*.json; Copilot CLI's legacy history-session-state/*.json
        return (fmt, folder) in (("gemini-cli", "chats"), ("copilot-cli", "history-session-state"))
    return False


def session_files(source: Source) -> Iterator[tuple[Path, os.stat_result]]:
    """The session files of ``source`` (absolute paths) with their ``os.stat``, in sorted
    order: the file itself, or every :func:`is_session_file` under the directory. Reads
    directory entries only, never a file's content. A missing path yields nothing; an
    unreadable sub-directory is passed over."""
    root = source.path.absolute()
    try:
        st = root.stat()
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode):
        yield root, st
        return
    # (folder, its parts relative to root); files sort by their relative parts, as Paths do
    stack: list[tuple[str, tuple[str, ...]]] = [(str(root), ())]
    found: list[tuple[tuple[str, ...], str, os.stat_result]] = []
    while stack:
        folder, parts = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            try:
                name = entry.name
                if entry.is_dir(follow_symlinks=False):
                    if not name.startswith("."):
                        stack.append((entry.path, (*parts, name)))
                    continue
                relative = (*parts, name)
                if entry.is_file() and _is_session_parts(relative, source.format):
                    found.append((relative, entry.path, entry.stat()))
            except OSError:
                continue
    found.sort(key=lambda item: item[0])
    for _, path, st in found:
        yield Path(path), st
