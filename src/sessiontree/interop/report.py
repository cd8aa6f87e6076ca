"""What an import did: :class:`ImportReport` and its records (docs/interop.md).

An importer never skips anything silently: every line it turned into a ``custom`` entry,
every parent link it had to cut, every line it could not read (only with ``lenient=True``;
by default such a line fails the import) and every other adjustment is listed here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CustomLine", "DanglingParent", "ImportReport", "UnreadableLine"]


@dataclass(frozen=True)
class CustomLine:
    """A source record kept as a ``custom`` entry because sessiontree does not model it.

    Attributes:
        line: 1-based line of the source file; ``None`` for single-document formats (SWE-agent).
        custom_type: the ``customType`` given to the entry, e.g. ``claude-code:file-history-snapshot``.
        entry_id: the id of the ``custom`` entry that holds the record.
        where: for single-document formats, the key of the record (e.g. ``info``).
    """

    line: int | None
    custom_type: str
    entry_id: str
    where: str | None = None


@dataclass(frozen=True)
class DanglingParent:
    """An entry whose parent could not be used: re-attached elsewhere, or imported as a root.

    Attributes:
        line: 1-based line of the source file (``None`` when the format has no lines).
        entry_id: the entry whose parent was replaced.
        parent_id: the parent id the source named.
        reason: why it could not be used (``names no entry``, ``is a leaf entry``, ``cycle``).
        attached_to: the substitute parent (Claude Code: the nearest earlier record of the
            same conversation); ``None``: the entry was imported as a root.
    """

    line: int | None
    entry_id: str
    parent_id: str
    reason: str = "names no entry"
    attached_to: str | None = None


@dataclass(frozen=True)
class UnreadableLine:
    """A line that could not be imported (listed only with ``lenient=True``).

    Attributes:
        line: 1-based line of the source file.
        reason: what was wrong (bad JSON, a torn final line, an invalid entry, a duplicate id).
        text: the start of the raw line (at most 200 characters) so a user can find it.
    """

    line: int | None
    reason: str
    text: str = ""


@dataclass
class ImportReport:
    """The outcome of :func:`sessiontree.import_session` (docs/interop.md).

    Attributes:
        source_path: the file that was read (never written to).
        format: the format read, one of :data:`sessiontree.interop.FORMATS`.
        session_id: the id of the session created in the repository.
        source_session_id: the session id the file itself names, if any.
        source_version: the format version when the file states one (pi ``version``; ``1`` for
            a pi file without it), else ``None``.
        lines_read: non-blank lines (JSONL), lines (Aider) or ``1`` for a single JSON document.
        entries_imported: entries appended to the session (a trailing ``leaf`` entry
            included when one was needed); for an extended session only the new ones.
        extended: the session was already stored (the file was imported before and has
            grown or been rewritten since): only the records it did not hold were appended.
        up_to_date: the session was already stored and the file holds nothing it lacks
            (:class:`~sessiontree.errors.AlreadyImportedError` was raised with this report).
        entries_changed: ids of stored entries the file now holds differently (an agent that
            rewrites its file in place changed a record); the stored entry is kept as it is.
        custom_lines: records kept as ``custom`` entries.
        dangling_parents: entries whose parent was unusable: re-attached (``attached_to``) or
            imported as roots.
        unreadable_lines: lines left out (``lenient=True`` only).
        warnings: every other adjustment, in words.
        leaf_id: the leaf of the new session.
    """

    source_path: Path
    format: str
    session_id: str = ""
    source_session_id: str | None = None
    source_version: int | None = None
    lines_read: int = 0
    entries_imported: int = 0
    custom_lines: list[CustomLine] = field(default_factory=list)
    dangling_parents: list[DanglingParent] = field(default_factory=list)
    unreadable_lines: list[UnreadableLine] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    leaf_id: str | None = None
    extended: bool = False
    up_to_date: bool = False
    entries_changed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no line was unreadable and no parent link was cut."""
        return not self.unreadable_lines and not self.dangling_parents

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``source_path`` as a string), e.g. for ``--json`` output."""
        out = asdict(self)
        out["source_path"] = str(self.source_path)
        return out

    def summary(self) -> str:
        """One line for humans: counts of entries, custom lines, dangling parents, unreadable lines."""
        return (
            f"{self.source_path}: {self.format} -> session {self.session_id}: "
            f"{self.entries_imported} entries, {len(self.custom_lines)} kept as custom, "
            f"{len(self.dangling_parents)} dangling parents, "
            f"{len(self.unreadable_lines)} unreadable lines, {len(self.warnings)} warnings"
        )
