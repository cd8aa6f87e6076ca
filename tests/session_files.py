"""Where the tests find real agent session files (not a test module).

Two places, one lookup: the files vendored in the repository (``data/sessions/``, MIT or
Apache-2.0, attribution in its SOURCES.md) and the team's full collection beside the checkout
(``../shared/data/sessions/``), which also holds files whose licence does not allow copying.
:func:`session_file` prefers the vendored copy; a file only the collection has is read from
there, and when the collection is absent the test skips, and fails with ``SESSIONTREE_REQUIRE_ALL=1``.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from backends import unavailable
from sessiontree.interop.detect import Format

ROOT = Path(__file__).resolve().parents[1]
VENDORED = ROOT / "data" / "sessions"
"""Session files shipped in the repository."""
SHARED = ROOT.parent / "shared" / "data" / "sessions"
"""The full collection beside the checkout (present where ``.ci/run`` runs)."""

FORMAT_OF_DIR: dict[str, Format] = {
    "pi": "pi",
    "claude-code": "claude-code",
    "codex": "codex",
    "swe-agent-traj": "swe-agent",
    "aider": "aider",
    "cline": "cline",
    "gemini-cli": "gemini-cli",
    "copilot-cli": "copilot-cli",
}
"""The format of the files in each folder of the collection."""

COLLECTION = (
    "aider/mozgoslav.aider.chat.history.md",
    "claude-code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "claude-code/8a283a61-e3f0-4e8f-ba06-6711e2fcf2ed.jsonl",
    "claude-code/agent-a0294d5.jsonl",
    "claude-code/agent-a7c3dfb.jsonl",
    "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    "cline/api_conversation_history.json",
    "codex/legacy-rollout-example.jsonl",
    "copilot-cli/test_conversation_copilot.json",
    "copilot-cli/test_conversation_copilot.jsonl",
    "codex/rollout-2026-06-19T10-14-27-019edda8-7eca-7710-b78b-6ce7607beaa1.jsonl",
    "codex/rollout-2026-06-19T12-32-38-019ede26-ff03-7a82-bb34-cfab716a498a.jsonl",
    "codex/sample_codex_session_simonw.jsonl",
    "gemini-cli/entire-cli_12-cbfeaa512b-0_full.jsonl",
    "gemini-cli/entire-cli_9c-53780d06b7-0_full.jsonl",
    "gemini-cli/test_conversation_gemini.jsonl",
    "pi/agent-sessions_pi-small.v3.jsonl",
    "pi/pi-mono_before-compaction.v1.jsonl",
    "pi/pi-mono_large-session.v1.jsonl",
    "swe-agent-traj/6e44b9__sweagenttestrepo-1c2844.traj",
    "swe-agent-traj/function_calling_simple.traj",
    "swe-agent-traj/swe-agent__test-repo-i1.traj",
)
"""Every session file of the collection (relative paths), one import test each.
``cline/ui_messages.json`` belongs to the Cline task beside it and is read with it."""


def session_file(relative: str) -> Path:
    """The path of a collection file: the vendored copy, else the one in ``../shared``.

    Skips the test when neither exists (fails it with ``SESSIONTREE_REQUIRE_ALL=1``).
    """
    for base in (VENDORED, SHARED):
        path = base / relative
        if path.is_file():
            return path
    unavailable(f"{relative}: not vendored and {SHARED} is not beside the checkout")
    raise AssertionError("unreachable")


def format_of(relative: str) -> Format:
    """The format of a collection file, from its folder."""
    return FORMAT_OF_DIR[relative.split("/", 1)[0]]


def vendored_files() -> list[Path]:
    """The session files shipped in the repository (``SOURCES.md`` aside)."""
    return sorted(p for p in VENDORED.rglob("*") if p.is_file() and p.name != "SOURCES.md")


def file_times(path: Path) -> tuple[datetime, datetime]:
    """The first and newest record times of a JSONL session file, read from the file itself:
    every line's ``timestamp`` (a line without one, e.g. a Claude Code summary, has none to
    give) except a pi header's (the session line, not an entry), and a Codex
    ``session_meta``'s own ``payload.timestamp`` (when the session started)."""
    stamps = []
    for raw in path.read_bytes().splitlines():
        obj = json.loads(raw)
        if obj.get("type") != "session" and "timestamp" in obj:
            stamps.append(obj["timestamp"])
        if obj.get("type") == "session_meta":
            stamps.append(obj["payload"]["timestamp"])
    instants = [datetime.fromisoformat(s.replace("Z", "+00:00")) for s in stamps]
    return min(instants), max(instants)
