"""What is wrong with a session: dangling references, cycles, a broken branch or context.

``sessiontree verify`` prints what :func:`verify_session` finds; from Python::

    from sessiontree.verify import verify_session

    found = await verify_session(session)
    if found.problems:
        ...

Two kinds of findings. **Problems** are damage that context building cannot hide:
``parentId``/``targetId``/``fromId`` references that name no entry, ``parentId`` cycles, a
current branch that cannot be traced, a built context that breaks the tool-pair invariant,
and, for a session stored in a JSONL file, a torn final line left by a crash. **Warnings** are
faults that reading repairs on the fly: unpaired tool calls or results in the stored branch,
and a compaction whose ``firstKeptEntryId`` is not on the branch before it.

The checks over entries (:func:`check_entries`) are pure; :func:`verify_session` reads the
session once and adds the file check.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiontree.backends.jsonl.files import lock_path
from sessiontree.backends.jsonl.format import is_whole_line
from sessiontree.backends.jsonl.lockfile import no_append_running
from sessiontree.context import build_context_from_path, find_tool_pair_problems
from sessiontree.entries import CompactionEntry, Entry
from sessiontree.errors import CorruptSessionError, EntryNotFoundError
from sessiontree.tree import branch_of, entry_refs, find_cycles, trace_chain

if TYPE_CHECKING:
    from sessiontree.session import Session

__all__ = ["Findings", "check_entries", "find_cycles", "torn_final_line", "verify_session"]

_CYCLE_IDS_SHOWN = 6


@dataclass
class Findings:
    """What a verification found.

    Attributes:
        problems: damage; ``sessiontree verify`` fails on any.
        warnings: faults that reading repairs; ``verify --strict`` fails on them too.
        facts: counts worth showing (``entries``, ``entries on the branch``,
            ``context messages``).
    """

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    def add(self, other: Findings) -> None:
        """Append ``other``'s problems and warnings and take its facts."""
        self.problems.extend(other.problems)
        self.warnings.extend(other.warnings)
        self.facts.update(other.facts)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def torn_final_line(path: Path) -> int | None:
    """The 1-based number of a torn final line of a JSONL file, else ``None``.

    Torn: unterminated and not whole JSON (a whole line without its newline is read as a
    line, :func:`~sessiontree.backends.jsonl.format.is_whole_line`; a UTF-8 byte-order mark
    before a header is not part of it, as for storage), and not an append in progress: an
    unfinished line is checked again while no append to the file can run (a shared hold on
    its lock file, :func:`~sessiontree.backends.jsonl.lockfile.no_append_running`); a writer
    holding the lock, or a file that grew meanwhile, means a line still being written.

    Raises:
        OSError: the file cannot be read.
    """
    first = _unfinished_line(path)
    if first is None:
        return None
    with no_append_running(lock_path(path)) as quiet:
        if not quiet:
            return None  # a writer is appending: the line is being written
        again = _unfinished_line(path)
    return again[0] if again == first else None


def _unfinished_line(path: Path) -> tuple[int, int] | None:
    """``(line number, file size)`` when the file ends in a line that is not whole JSON."""
    with path.open("rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return None
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return None
        fh.seek(0)
        data = fh.read()
    last = data[data.rfind(b"\n") + 1 :].removeprefix(b"\xef\xbb\xbf")
    if is_whole_line(last):
        return None
    return data.count(b"\n") + 1, len(data)


def check_entries(
    entries: Sequence[Entry], leaf_id: str | None, *, session_id: str | None = None
) -> Findings:
    """Every check over a session's entries (append order) and its leaf. Pure.

    The branch and both contexts (as stored, and repaired) are built in memory from
    ``entries``, so the cost is linear in their number.

    Args:
        entries: every entry of the session, in append order.
        leaf_id: the session's current leaf (``None`` for an empty session).
        session_id: named in the findings about the branch.

    Returns:
        The findings; when the current branch cannot be traced, the checks of the branch and
        context are skipped (the problem says why).
    """
    found = _check_links(entries)
    by_id = {e.id: e for e in entries}
    try:
        path = branch_of(trace_chain(leaf_id, by_id.get, session_id=session_id))
    except (CorruptSessionError, EntryNotFoundError) as exc:
        found.problems.append(f"current branch: {_one_line(exc)}")
        return found
    found.add(_check_branch(path))
    return found


def _check_links(entries: Sequence[Entry]) -> Findings:
    """References that name no entry, and ``parentId`` cycles."""
    found = Findings()
    ids = {e.id for e in entries}
    found.facts["entries"] = len(entries)
    for e in entries:
        for name, ref in entry_refs(e):
            if ref not in ids:
                found.problems.append(f"entry {e.id}: {name} {ref!r} names no entry")
    for cycle in find_cycles(entries):
        shown = " → ".join(cycle[:_CYCLE_IDS_SHOWN])
        more = " → …" if len(cycle) > _CYCLE_IDS_SHOWN else ""
        found.problems.append(f"parentId cycle of {len(cycle)} entries: {shown}{more}")
    return found


def _check_branch(path: Sequence[Entry]) -> Findings:
    """The last compaction on the branch (root → leaf), and the context stored and built."""
    found = Findings()
    found.facts["entries on the branch"] = len(path)
    compactions = [i for i, e in enumerate(path) if isinstance(e, CompactionEntry)]
    if compactions:
        c = path[compactions[-1]]
        assert isinstance(c, CompactionEntry)
        before = {e.id for e in path[: compactions[-1]]}
        if c.retained_tail is None and c.first_kept_entry_id not in before:
            found.warnings.append(
                f"compaction {c.id}: firstKeptEntryId {c.first_kept_entry_id!r} is not on the "
                "branch before it (context keeps only what follows the summary)"
            )
    raw = build_context_from_path(path, repair=False)
    for p in find_tool_pair_problems(raw.messages):
        found.warnings.append(f"unpaired tool call/result in the stored branch: {p}")
    built = build_context_from_path(path)
    found.facts["context messages"] = len(built.messages)
    for p in find_tool_pair_problems(built.messages):
        found.problems.append(f"built context breaks the tool-pair invariant: {p}")
    return found


async def verify_session(session: Session) -> Findings:
    """Check one open session for damage (see the module docstring for what is checked).

    Reads every entry once (one ``get_entries``) and, when the session's storage is a file
    (a ``path`` attribute naming one, as JSONL storage has), checks its final line.

    Returns:
        The findings. A session that cannot be read at all is one problem, not an exception.

    Raises:
        OSError: the session's file cannot be read for the torn-line check.
    """
    found = Findings()
    file = getattr(session.storage, "path", None)
    if isinstance(file, Path) and file.is_file():
        torn = torn_final_line(file)
        if torn is not None:
            found.problems.append(
                f"{file}:{torn}: torn final line (a crash mid-write); it is ignored and "
                "cut off before the next append"
            )
    try:
        entries = await session.get_entries()
    except CorruptSessionError as exc:
        found.problems.append(_one_line(exc))
        return found
    try:
        leaf_id = await session.get_leaf_id()
    except (CorruptSessionError, EntryNotFoundError) as exc:
        found.add(_check_links(entries))
        found.problems.append(f"current branch: {_one_line(exc)}")
        return found
    found.add(check_entries(entries, leaf_id, session_id=session.id))
    return found
