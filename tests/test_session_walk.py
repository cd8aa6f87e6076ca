"""The walk of a source directory (:func:`sessiontree.interop.locations.session_files`) finds
what :func:`is_session_file` accepts under it, sorted as paths sort. The walk judges names
from the parts it has at hand instead of a ``Path`` per file (``Path.relative_to`` was most
of an unchanged re-sync of 2,000 files); this checks it still finds what it found."""

from __future__ import annotations

import os
from pathlib import Path

from sessiontree.interop.detect import Format
from sessiontree.interop.locations import Source, is_session_file, session_files

NAMES = [
    "a.jsonl",
    "a-b.jsonl",
    "a/b.jsonl",
    "a/.hidden.jsonl",
    ".dot/c.jsonl",
    "notes.txt",
    "x.traj",
    "chats/session-1.json",
    "history-session-state/s.json",
    "session/proj/ses_1.json",
    "session/proj/other.json",
    "db/store.db",
    "z/.aider.chat.history.md",
    "z/y/x/w.jsonl",
    "a.b/c.jsonl",
    "trailing.",
]


def _reference(root: Path, fmt: Format | None) -> list[Path]:
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = Path(folder) / name
            if is_session_file(path.relative_to(root), fmt):
                out.append(path)
    return sorted(out)


def test_the_walk_finds_what_is_session_file_accepts_in_path_order(tmp_path: Path) -> None:
    for name in NAMES:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"{}\n")
    formats: list[Format | None] = [None, "gemini-cli", "copilot-cli"]
    for fmt in formats:
        found = [p for p, _ in session_files(Source(fmt, tmp_path))]
        assert found == _reference(tmp_path, fmt), fmt
        assert all(st.st_size == 3 for _, st in session_files(Source(fmt, tmp_path)))
    assert tmp_path / "a-b.jsonl" in found and tmp_path / "a" / ".hidden.jsonl" not in found
