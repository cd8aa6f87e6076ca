"""Session files that grow, written a piece at a time and compared with one import of the
whole (not a test module): shared by the tests of importing a grown file again
(test_import_incremental.py) and of syncing a file mid-write (test_sync_exact.py)."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from session_files import SHARED
from sessiontree import Session, SessionRepo
from sessiontree.interop import import_session
from sessiontree.interop.detect import Format

EXTRA = SHARED.parent / "sessions-extra"
"""The extra sets of real files beside the checkout (``set1`` … ``set3``)."""

GROWABLE = (".jsonl", ".md")
"""Files an agent appends to (JSONL records, Aider's Markdown history)."""


def growable_files(base: Path, formats: Collection[str] | None = None) -> list[Path]:
    """The files under ``base`` an agent writes a record at a time (see :func:`by_lines`),
    those in a folder named as one of ``formats`` only when given; ``[]`` when ``base`` is
    missing."""
    if not base.is_dir():
        return []
    return sorted(
        p
        for p in base.rglob("*")
        if p.is_file()
        and p.suffix in GROWABLE
        and p.name != "SOURCES.md"
        and (formats is None or set(formats) & set(p.relative_to(base).parts))
        and by_lines(p)
    )


def by_lines(path: Path) -> bool:
    """Whether the file is written a record at a time: Markdown, or JSONL whose first line
    is a whole JSON value (some ``.jsonl`` files hold one pretty-printed document)."""
    if path.suffix == ".md":
        return True
    first = path.read_bytes().lstrip().split(b"\n", 1)[0]
    try:
        json.loads(first)
    except ValueError:
        return False
    return True


def line_ends(data: bytes) -> list[int]:
    """The byte offset after every line of ``data`` (the end of a last line without a
    newline too)."""
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    return ends if data.endswith(b"\n") or not data else [*ends, len(data)]


def work_copy(source: Path, work: Path) -> Path:
    """Where a test writes ``source`` piece by piece: a folder per file named as the source's
    (converters read names: Claude Code sub-agents), made if missing."""
    path = work / source.parent.name / source.name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


async def snapshot(session: Session) -> dict[str, Any]:
    """What a fresh import and a grown one must agree on. ``leaf`` entries are left out: an
    import of a prefix may have needed one to put its leaf where the prefix ended."""
    entries = await session.get_entries()
    return {
        "entries": [e.to_wire() for e in entries if e.type != "leaf"],
        "leaf": await session.get_leaf_id(),
        "branch": [e.id for e in await session.get_branch()],
        "compactions": [e.id for e in entries if e.type == "compaction"],
        "context": [m.to_wire() for m in (await session.build_context()).messages],
    }


async def assert_equals_a_fresh_import(
    repo: SessionRepo, path: Path, fresh_repo: SessionRepo, fmt: Format, what: str
) -> None:
    """``repo`` holds one session, and it is what one import of ``path`` (as it is now)
    into ``fresh_repo`` gives: the same entries (ids, parents, content), leaf, branch,
    compactions and context."""
    fresh, _ = await import_session(path, fresh_repo, format=fmt, lenient=True)
    stored = await repo.open(fresh.id)
    assert await snapshot(stored) == await snapshot(fresh), what
    assert len(await repo.list()) == 1, what


def cut_points(data: bytes, fractions: list[float]) -> list[int]:
    """The line ends of ``data`` nearest below each fraction of its lines, sorted, without
    repeats: where a hypothesis test cuts a file."""
    ends = line_ends(data)
    return sorted({ends[min(int(f * len(ends)), len(ends) - 1)] for f in fractions})
