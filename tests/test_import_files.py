"""Every real session file of the collection imports faithfully (docs/interop.md).

One test per file (vendored in ``data/sessions/``, or from ``../shared`` when it is there):
the imported session is checked against counts read from the file itself
(``_session_expectations``), the context keeps the tool-pair invariant, the leaf is on the
newest message, the context names the file's model, and ``show`` stays readable (no line
wider than the terminal, runs folded). The source file comes out of the import unchanged.
"""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from _session_expectations import EXPECT, jsonl
from session_files import COLLECTION, FORMAT_OF_DIR, format_of, session_file, vendored_files
from sessiontree import Session
from sessiontree.cli.render import render_tree
from sessiontree.context import find_tool_pair_problems
from sessiontree.entries import MessageEntry, dump_entry
from sessiontree.interop import detect_format, import_session
from sessiontree.messages import AssistantMessage, OpaqueMessage
from sessiontree.repos import MemoryRepo
from sessiontree.tree import branch_of, build_tree, trace_chain

WIDTH = 80
"""The terminal width ``show`` is rendered at."""
MAX_SHOW_LINES = 60
"""``show`` of any of these sessions fits a screen or so: runs and side records are folded."""


def _fingerprint(path: Path) -> tuple[bytes, int]:
    """The bytes and modification time of a file, to prove an import left it alone."""
    return path.read_bytes(), path.stat().st_mtime_ns


async def _show(session: Session) -> list[str]:
    entries = await session.get_entries()
    roots = build_tree(entries, session_id=session.id)
    leaf = await session.get_leaf_id()
    by_id = {e.id: e for e in entries}
    path_ids = {e.id for e in branch_of(trace_chain(leaf, by_id.get, session_id=session.id))}
    out = io.StringIO()
    console = Console(width=WIDTH, file=out, color_system=None)
    title = Text(f"session {session.id}")
    console.print(render_tree(title, roots, leaf_id=leaf, path_ids=path_ids, id_len=8))
    return out.getvalue().splitlines()


def test_every_format_has_a_vendored_real_file() -> None:
    formats = {FORMAT_OF_DIR[p.parent.name] for p in vendored_files()}
    # Cline: no task export under a licence that allows copying was found
    assert formats == set(FORMAT_OF_DIR.values()) - {"cline"}
    relative = {str(p.relative_to(p.parents[1])) for p in vendored_files()}
    assert relative <= set(COLLECTION)


@pytest.mark.parametrize("name", COLLECTION, ids=lambda n: n.split("/")[-1][:40])
async def test_real_file_imports(name: str) -> None:
    path = session_file(name)
    fmt = format_of(name)
    before = _fingerprint(path)
    assert await detect_format(path) == fmt

    repo = MemoryRepo()
    session, report = await import_session(path, repo)
    exp = EXPECT[fmt](path)

    entries = await session.get_entries()
    assert report.format == fmt
    assert report.entries_imported == len(entries)
    assert report.unreadable_lines == []
    stats = await session.get_stats()
    roles = Counter(stats.messages_by_role)
    assert roles == exp.roles
    assert stats.tool_calls == exp.tool_calls
    assert stats.compactions == exp.compactions
    assert stats.roots == exp.roots
    assert len(report.custom_lines) == exp.custom == stats.entries_by_type.get("custom", 0)
    assert len(report.dangling_parents) == exp.dangling
    assert all(d.attached_to is not None for d in report.dangling_parents)

    for e in entries:
        if isinstance(e, MessageEntry):
            assert not isinstance(e.message, OpaqueMessage)
            assert isinstance(e.message.timestamp, int)
            if fmt != "swe-agent":
                assert e.message.timestamp > 1_600_000_000_000
        assert not e.timestamp.startswith("19")

    ctx = await session.build_context()
    assert ctx.messages
    assert find_tool_pair_problems(ctx.messages) == []

    # the leaf is the newest message of the conversation (pi: the newest entry, as pi has it)
    leaf = await session.get_leaf_id()
    assert leaf == report.leaf_id
    leaf_entry = await session.get_entry(leaf) if leaf else None
    if fmt == "pi":
        assert leaf_entry == [e for e in entries if e.type != "leaf"][-1]
    else:
        assert isinstance(leaf_entry, MessageEntry)
    if exp.marker is not None:
        assert leaf_entry is not None and exp.marker in str(dump_entry(leaf_entry))
    if exp.check_model:
        assert (ctx.model.model_id if ctx.model else None) == exp.model
    if exp.with_usage:
        assistants = [
            e.message
            for e in entries
            if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
        ]
        assert sum(m.usage is not None and m.usage.total_tokens > 0 for m in assistants) == (
            exp.with_usage
        )

    lines = await _show(session)
    assert max(cell_len(line) for line in lines) <= WIDTH
    assert len(lines) <= MAX_SHOW_LINES
    assert await repo.list() and (await repo.list())[0].id == session.id == report.session_id
    assert _fingerprint(path) == before


@pytest.mark.parametrize(
    "name", [n for n in COLLECTION if n.endswith(".jsonl")], ids=lambda n: n.split("/")[-1][:40]
)
async def test_no_line_is_dropped(name: str) -> None:
    """Every non-blank line of a JSONL file is in an entry: a message or compaction
    (``source.line``, ``source.merged``), a custom entry (``report.custom_lines``), or — pi —
    one entry per line after the header."""
    path = session_file(name)
    session, report = await import_session(path, MemoryRepo())
    if report.format == "gemini-cli" and not path.read_bytes().lstrip().startswith(b'{"'):
        return  # one pretty-printed JSON document (Entire's name): no lines to account for
    lines = {n for n, _ in jsonl(path)}
    entries = await session.get_entries()
    if report.format == "pi":
        assert len([e for e in entries if e.type != "leaf"]) == len(lines) - 1
        return
    if report.format == "gemini-cli":
        # the header and its ``$set`` updates are the session's metadata (``geminiCli``)
        covered = {n for n, o in jsonl(path) if "$set" in o or "kind" in o}
    else:
        covered = set()
    assert all(c.line is not None for c in report.custom_lines)
    covered |= {c.line for c in report.custom_lines if c.line is not None}
    for e in entries:
        source = getattr(e, "source", None)
        if isinstance(source, dict):
            covered.add(source["line"])
            covered.update(m["line"] for m in source.get("merged", []))
    assert covered == lines
