"""JSONL storage: one append-only pi v3 session file per session (docs/storage.md "jsonl").

Design:

* **Format** (:mod:`sessiontree.backends.jsonl.format`): a header line, then one entry per line,
  each written with a single ``os.write`` of the whole line and its newline. The file is a
  valid pi v3 session file, and ``JSONLStorage(path)`` opens any pi v3 file in place.
* **Index**: the file is read once; each line is orjson-parsed into a light
  :class:`~sessiontree.backends.jsonl.format.LineRecord` (id, parent, type, targets). Entries are
  validated into pydantic models lazily, only when returned, so building the context of a
  branch validates the branch and nothing else, and never re-reads the file.
* **Several processes**: appends are serialised by a lock file beside the log
  (``<file>.lock``, held open between appends: :mod:`~sessiontree.backends.jsonl.lockfile`). Under the lock a writer first reads the bytes other processes appended
  since its last read (it tracks the byte offset it has consumed), so ``at_leaf`` appends hang
  under the true current leaf and ids are checked against the whole log. Reads pick up
  appended lines the same way (one ``fstat`` per call), without the lock.
* **Crashes**: a torn final line (no newline, or a final line that does not parse) is ignored
  and cut off (``ftruncate`` to the end of the last whole line) under the lock before the
  next append — except a final line that is one whole valid entry lacking only its newline
  (another tool wrote the file so): it is read, and the newline is added before the next
  append; a bad line anywhere else raises :class:`CorruptSessionError` naming file and
  line, unless ``skip_bad_lines=True`` (then every skipped line is listed in
  :attr:`JSONLStorage.skipped_lines` and logged). A file without a valid header is refused
  before anything is written, so it is never rewritten or truncated.
* **Durability** (``durability=``): ``none`` never fsyncs; ``flush`` (default) hands every
  line to the OS before the append returns (it survives a crash of the process), fsyncs a
  new file (and its directory) when it is created and fsyncs on :meth:`close`; ``fsync``
  also fsyncs after every append (each append then survives a power loss).
* Files are created 0600 (a repository's layout makes its session directories 0700).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import cast

from sessiontree.backends.jsonl.files import (
    STANDALONE,
    Durability,
    LogLayout,
    check_session_log,
    create_session_file,
    fsync_dir,
    read_draft,
    read_lease,
    remove_session_log,
    set_mtime,
    write_draft,
    write_lease,
)
from sessiontree.backends.jsonl.fork import RecordSource
from sessiontree.backends.jsonl.format import (
    LineRecord,
    entries_of,
    parse_header,
)
from sessiontree.backends.jsonl.log import _WRITERS, SessionLog
from sessiontree.backends.jsonl.stats import REFRESH_BYTES, ListingFacts, Stats, write_stats
from sessiontree.context import ContextStart
from sessiontree.entries import Entry, LeafEntry
from sessiontree.errors import LeafMovedError, SessionNotFoundError, StorageError
from sessiontree.ids import new_id, now_ms
from sessiontree.metadata import SessionMetadata, session_time
from sessiontree.storage.base import EntryCursor, SessionStorage, fork_storage, select_entries
from sessiontree.storage.growth import check_max_session_bytes, refuse_growth, warn_growth
from sessiontree.storage.lease import (
    Lease,
    LeaseRecord,
    check_fence,
    grant,
    record_from_json,
    release,
    renew,
    writing_under,
)
from sessiontree.storage.sync_index import newest_position
from sessiontree.stored import Prepared, prepare_entry
from sessiontree.tree import ForkPosition, TreeIndex, branch_of, check_append, trace_chain

__all__ = [
    "STANDALONE",
    "Durability",
    "JSONLStorage",
    "LogLayout",
    "check_session_log",
    "create_session_file",
    "entry_lines",
    "fsync_dir",
    "remove_session_log",
]

_ANY_LEAF = object()
"""An append that holds whatever the leaf is (not a conditional leaf move)."""


def entry_lines(
    entries: Sequence[Entry | Prepared], session_id: str
) -> tuple[list[bytes], list[Entry]]:
    """The lines (with newlines) of ``entries`` as the first entries of a new session file,
    each checked as an append to an empty session, and the entries as stored.

    Raises:
        DuplicateEntryError, EntryNotFoundError, InvalidEntryError: an entry is refused.
    """
    stored = [prepare_entry(e) for e in entries]
    index = TreeIndex.checked((p.entry for p in stored), session_id=session_id)
    return [p.body() + b"\n" for p in stored], index.entries


class JSONLStorage(SessionLog):
    """One session stored as an append-only pi v3 JSONL file (docs/storage.md "jsonl").

    ``JSONLStorage(path)`` opens an existing file in place: a repository's
    ``<root>/<id>/session.jsonl`` or any pi v3 session file. Nothing is written until an
    append. Every method is async but does plain, short, blocking file I/O.

    Attributes:
        path: the session file.
        skipped_lines: with ``skip_bad_lines=True``, every line left out (line number, reason).
        max_session_bytes: the size limit of the file (``None``: none).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: Durability = "flush",
        skip_bad_lines: bool = False,
        session_id: str | None = None,
        layout: LogLayout = STANDALONE,
        read_only: bool = False,
        max_session_bytes: int | None = None,
    ) -> None:
        """Open a session file and index its entries (reads the whole file once).

        Args:
            path: the session file.
            durability: ``none``, ``flush`` or ``fsync``.
            skip_bad_lines: skip bad lines (listed in :attr:`skipped_lines`) instead of raising;
                every line is then validated at open.
            session_id: the session id (a repository passes the directory name); default the
                header's ``id``.
            layout: where the files beside the log and a fork's log go (a repository passes
                its own); by default none are kept and forks are sibling files
                ``<new id>.jsonl``.
            read_only: never write (appends, forks and ``delete`` raise
                :class:`StorageError`; no lock file or sidecar is made).
            max_session_bytes: refuse an append that would take the file over this many
                bytes (:class:`~sessiontree.errors.SessionTooLargeError`, checked under the
                append lock) and warn at 80% (:mod:`sessiontree.storage.growth`); ``None``
                (default): no limit. A fork keeps it.

        Raises:
            SessionNotFoundError: no file at ``path``.
            CorruptSessionError: no valid header (the file is left untouched), or a bad line
                other than the last one.
            StorageError: the file cannot be read.
            InvalidArgumentError: ``max_session_bytes`` is not ``None`` or a whole number ≥ 1.
        """
        limit = check_max_session_bytes(max_session_bytes)
        self._setup(Path(path).absolute(), durability, skip_bad_lines, layout, read_only)
        self.max_session_bytes = limit
        fd = self._open_read()
        try:
            data = self._read_from(fd, 0)
        except OSError as exc:
            raise StorageError(f"cannot read session file {self.path}: {exc}") from exc
        newline = data.find(b"\n")
        header = parse_header(data if newline < 0 else data[: newline + 1], self.path)
        # a whole header without its newline (a file with no entries that another tool
        # wrote so; listing showed it, opening refused it): read, finished before an append
        self._unterminated = newline < 0
        self._id = session_id or header.session_id
        self._header = header
        self._metadata = header.metadata
        self.created_at = header.created_at
        self._offset = header.length
        self._stats_offset = self._offset
        self._ingest(data[header.length :], cut=False)
        self._ino = self._rino

    def _setup(
        self,
        path: Path,
        durability: Durability,
        skip_bad_lines: bool,
        layout: LogLayout,
        read_only: bool,
    ) -> None:
        SessionLog.__init__(self, path, durability, skip_bad_lines)
        self._layout = layout
        self._stats_path = layout.stats_path(self.path)
        self.read_only = read_only
        self._stats_offset = 0
        self._writer: str | None = None  # names this storage's writes to the layout
        self._writer_pid = -1
        self.max_session_bytes = None

    def _begin_writing(self) -> None:
        """Before the first write of this storage (in this process): tell the layout."""
        self._writer_pid = os.getpid()
        self._writer = f"{self._writer_pid}.{new_id()}"
        _WRITERS[self._writer] = self
        self._layout.writing(self.path, self._writer)

    def listing_facts(self) -> ListingFacts | None:
        """What listing shows of the log now, if this storage has read all of it (one
        ``fstat``), else ``None``."""
        if self._rfd is None or self._deleted or self._unterminated:
            return None
        try:
            st = os.fstat(self._rfd)
        except OSError:
            return None
        if st.st_size != self._offset or st.st_ino != self._ino:
            return None
        return ListingFacts(
            self.stats(), st.st_mtime_ns, self._header.created_ms, self._header.wire_metadata
        )

    @classmethod
    def _written(
        cls,
        path: Path,
        header_line: bytes,
        lines: Sequence[bytes],
        records: list[LineRecord],
        *,
        durability: Durability,
        session_id: str,
        layout: LogLayout,
    ) -> JSONLStorage:
        """The storage of a log this process has just created holding ``header_line`` and
        ``lines`` (``records[i]`` is line ``i``): indexed from what was written, not re-read.

        Raises:
            SessionNotFoundError, StorageError: the new file cannot be opened.
        """
        self = cls.__new__(cls)
        self._setup(path.absolute(), durability, False, layout, False)
        header = parse_header(header_line, self.path)
        self._id = session_id
        self._header = header
        self._metadata = header.metadata
        self.created_at = header.created_at
        offset = header.length
        for number, (record, line) in enumerate(zip(records, lines, strict=True), start=2):
            record.line_number = number
            record.start = offset
            offset += len(line)
            record.end = offset - 1
        self._offset = self._stats_offset = offset
        self._next_line = 2 + len(records)
        self._add_all(records, [])
        self._open_read()
        self._ino = self._rino
        return self

    def _writable(self) -> None:
        """Raise if this storage was opened read-only."""
        if self.read_only:
            raise StorageError(
                f"{self.path}: the session was opened read-only; nothing written",
            )

    def _after_write(self, records: list[LineRecord], total: int) -> None:
        self._add_all(records, [])
        self._offset += total
        self._next_line += len(records)
        if self._offset - self._stats_offset >= REFRESH_BYTES:
            self._save_stats()

    def _save_stats(self) -> None:
        if self._stats_path is None or self._deleted:
            return
        write_stats(self._stats_path, self.stats())
        self._stats_offset = self._offset

    def stats(self) -> Stats:
        """The listing counts of what this storage has read (see :mod:`.stats`)."""
        return Stats(
            ino=self._ino,
            covered=self._offset,
            entry_count=len(self._index.records),
            message_count=self._index.fold.message_count,
            first_message=self._index.fold.first_message,
            name=self._index.fold.name,
        )

    # ------------------------------------------------------------------ SessionStorage

    @property
    def id(self) -> str:
        """The session id."""
        return self._id

    @property
    def metadata(self) -> SessionMetadata:
        """The session metadata, from the header line."""
        return self._metadata

    async def get_leaf_id(self) -> str | None:
        """See :meth:`SessionStorage.get_leaf_id`."""
        self._refresh()
        return self._index.fold.leaf_id

    async def set_leaf_id(self, target_id: str | None) -> Entry:
        """See :meth:`SessionStorage.set_leaf_id`."""
        return await self.append_entry(LeafEntry(target_id=target_id), at_leaf=True)

    async def set_leaf_id_if(self, target_id: str | None, expected_id: str | None) -> Entry:
        """See :meth:`SessionStorage.set_leaf_id_if`: the leaf is checked under the file
        lock, after reading what other processes appended.

        Raises:
            LeafMovedError: the leaf is not ``expected_id``; nothing written.
            StorageError: as :meth:`append_entry`.
        """
        return self._append_one(LeafEntry(target_id=target_id), True, expected_id)

    async def append_entry_if(
        self, entry: Entry | Prepared, expected_leaf: str | None, *, at_leaf: bool = False
    ) -> Entry:
        """See :meth:`SessionStorage.append_entry_if`: the leaf is checked under the file
        lock, after reading what other processes appended.

        Raises:
            LeafMovedError: the leaf is not ``expected_leaf``; nothing written.
            StorageError: as :meth:`append_entry`.
        """
        return self._append_one(entry, at_leaf, expected_leaf)

    async def get_entry(self, entry_id: str) -> Entry | None:
        """See :meth:`SessionStorage.get_entry`.

        Raises:
            CorruptSessionError: the entry's line is not a valid entry (names file and line).
        """
        self._refresh()
        return self._entry(entry_id)

    async def get_entries(self, cursor: EntryCursor | None = None) -> list[Entry]:
        """See :meth:`SessionStorage.get_entries`; validates only the entries returned."""
        self._refresh()
        by_id = self._index.by_id

        def seq_of(entry_id: str) -> int | None:
            record = by_id.get(entry_id)
            return None if record is None else record.seq

        # select_entries only reads ``.type`` of the items, which records have.
        chosen = select_entries(
            cast(Sequence[Entry], self._index.records), seq_of, cursor, session_id=self._id
        )
        return entries_of(cast(list[LineRecord], chosen), self.path, self._id)

    async def get_branch(
        self, leaf_id: str | None = None, *, include_bookkeeping: bool = False
    ) -> list[Entry]:
        """See :meth:`SessionStorage.get_branch`. Cost grows with the path, not the file."""
        self._refresh()
        records = trace_chain(
            self._index.fold.leaf_id if leaf_id is None else leaf_id,
            cast(Callable[[str], Entry | None], self._index.by_id.get),  # records have id/parent_id
            session_id=self._id,
        )
        chain = entries_of(cast(list[LineRecord], records), self.path, self._id)
        return chain if include_bookkeeping else branch_of(chain)

    async def get_context_branch(self, leaf_id: str | None = None) -> list[Entry]:
        """See :class:`~sessiontree.storage.base.ContextBranchReader`: only the records from
        the context's start are validated."""
        self._refresh()
        records = trace_chain(
            self._index.fold.leaf_id if leaf_id is None else leaf_id,
            cast(Callable[[str], Entry | None], self._index.by_id.get),
            session_id=self._id,
            stop=ContextStart(lambda r: r.entry_of(self.path, self._id)),
        )
        return branch_of(entries_of(cast(list[LineRecord], records), self.path, self._id))

    async def append_entry(self, entry: Entry | Prepared, *, at_leaf: bool = False) -> Entry:
        """See :meth:`SessionStorage.append_entry`: one ``os.write`` of one line, under the lock.

        Raises:
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: docs/tree.md; nothing written.
            StorageError: the file or its lock cannot be written, or the storage is read-only.
        """
        return self._append_one(entry, at_leaf, _ANY_LEAF)

    def _append_one(self, entry: Entry | Prepared, at_leaf: bool, expected_leaf: object) -> Entry:
        """:meth:`append_entry`; unless ``expected_leaf`` is ``_ANY_LEAF``, only while the
        leaf under the lock is ``expected_leaf`` (else :class:`LeafMovedError`)."""
        if self.read_only:
            self._writable()
        self._open_read()
        prepared = prepare_entry(entry)
        if at_leaf:
            # written under the leaf this process saw last; under the lock it is moved only
            # when another writer appended since
            prepared = prepared.under(self._index.fold.leaf_id)
        prepared = prepared.serialised()
        data = prepared.body()
        self._acquire()
        try:
            self._catch_up_locked()
            self._check_lease_locked()
            if self._writer_pid != os.getpid():
                self._begin_writing()
            index = self._index
            if expected_leaf is not _ANY_LEAF and index.fold.leaf_id != expected_leaf:
                raise LeafMovedError(
                    self._id, cast("str | None", expected_leaf), index.fold.leaf_id
                )
            if at_leaf and prepared.entry.parent_id != index.fold.leaf_id:
                prepared = prepared.under(index.fold.leaf_id)
                data = prepared.body()
            entry = prepared.entry
            check_append(entry, index.type_of, session_id=self._id)
            line = data + b"\n"
            before = self._offset
            refuse_growth(self._id, before, len(line), self.max_session_bytes)
            self._write_line(line)  # after a newline that finished the last line, if needed
            start = self._offset
            index.add_appended(
                LineRecord.of_entry(entry, self._next_line, start, start + len(data))
            )
            self._offset = start + len(line)
            self._next_line += 1
            if self._offset - self._stats_offset >= REFRESH_BYTES:
                self._save_stats()
        finally:
            self._release()
        warn_growth(self._id, before, self._offset, self.max_session_bytes)
        return entry

    async def append_entries(self, entries: Sequence[Entry]) -> None:
        """See :meth:`SessionStorage.append_entries`: all checked first, then appended.

        Each entry is one ``os.write`` of its line; if a write fails the file is cut back to
        where the batch started.

        Raises:
            DuplicateEntryError, EntryNotFoundError, InvalidEntryError: nothing appended.
            StorageError: the file or its lock cannot be written (nothing appended), or the
                storage is read-only.
        """
        self._writable()
        self._open_read()
        stored = [prepare_entry(e).serialised() for e in entries]
        parsed = [p.entry for p in stored]
        if not parsed:
            return
        with self._locked():
            self._catch_up_locked()
            self._check_lease_locked()
            if self._writer_pid != os.getpid():
                self._begin_writing()
            staged: dict[str, str] = {}

            def type_of(entry_id: str) -> str | None:
                return staged.get(entry_id) or self._index.type_of(entry_id)

            for e in parsed:
                check_append(e, type_of, session_id=self._id)
                staged[e.id] = e.type
            lines = [p.body() + b"\n" for p in stored]
            before = self._offset
            refuse_growth(self._id, before, sum(map(len, lines)), self.max_session_bytes)
            self._write_lines(lines)  # after a newline that finished the last line, if needed
            records = []
            start = self._offset
            for i, p in enumerate(stored):
                end = start + len(p.body())
                records.append(LineRecord.of_entry(p.entry, self._next_line + i, start, end))
                start = end + 1
            self._after_write(records, start - self._offset)
            position = newest_position(parsed)
            if position is not None:
                self._layout.positioned(self.path, position)
        warn_growth(self._id, before, self._offset, self.max_session_bytes)

    async def set_modified_at(self, modified_at: datetime) -> None:
        """See :meth:`SessionStorage.set_modified_at`: the log's modification time, which
        listing reads as ``modified_at`` (set under the append lock, so it never lands in the
        middle of an append).

        Raises:
            StorageError: the file's time cannot be set.
        """
        when = session_time(modified_at, "modified_at")
        self._open_read()
        with self._locked():
            self._check_lease_locked()
            if self._writer_pid != os.getpid():
                self._begin_writing()
            try:
                set_mtime(self.path, when)
            except OSError as exc:
                raise StorageError(
                    f"cannot set the modification time of {self.path}: {exc}"
                ) from exc

    async def get_label(self, entry_id: str) -> str | None:
        """See :meth:`SessionStorage.get_label`."""
        self._refresh()
        return self._index.fold.labels.get(entry_id)

    async def get_name(self) -> str | None:
        """See :meth:`SessionStorage.get_name`."""
        self._refresh()
        return self._index.fold.name

    async def fork(self, target_id: str, position: ForkPosition = "at") -> SessionStorage:
        """See :meth:`SessionStorage.fork`: the new log goes where the layout puts it.

        A repository's layout puts it into the same repository; a log opened on its own (a pi
        file opened in place) gets a sibling file ``<new id>.jsonl`` in the same directory.
        The stored lines of the path are copied as bytes; only entries the fork changes or adds
        are written from JSON (:mod:`~sessiontree.backends.jsonl.fork`), and the new storage is
        indexed from what it wrote, without reading the file again.
        """
        self._writable()
        self._refresh()
        source = RecordSource(self)

        async def create(meta: SessionMetadata, entries: list[Entry]) -> SessionStorage:
            session_id = new_id()
            lines, records = source.fork_lines(entries, session_id)
            path = self._layout.new_log(session_id, self.path)
            header = create_session_file(path, session_id, meta, self.durability, lines)
            self._layout.created(path, self.durability)
            fork = JSONLStorage._written(
                path,
                header,
                lines,
                records,
                durability=self.durability,
                session_id=session_id,
                layout=self._layout,
            )
            fork.max_session_bytes = self.max_session_bytes
            fork._save_stats()  # the listing sidecar, as an append would have left it
            self._layout.settled(path, None, fork.listing_facts())
            return fork

        try:
            return await fork_storage(cast(SessionStorage, source), target_id, position, create)
        except OSError as exc:
            raise StorageError(f"cannot create the fork of {self._id}: {exc}") from exc

    async def get_draft(self) -> bytes | None:
        """See :class:`~sessiontree.storage.base.DraftSlot`: reads the draft sidecar
        (:func:`~sessiontree.backends.jsonl.files.draft_path`).

        Raises:
            SessionNotFoundError: the session was deleted.
            StorageError: the sidecar cannot be read.
        """
        if self._deleted:
            raise SessionNotFoundError(self._id, "session was deleted")
        try:
            return read_draft(self.path)
        except OSError as exc:
            raise StorageError(f"cannot read the draft of session {self._id}: {exc}") from exc

    async def put_draft(self, body: bytes | None) -> None:
        """See :class:`~sessiontree.storage.base.DraftSlot`: the sidecar is replaced by a
        rename (fsynced first with ``durability="fsync"``).

        Raises:
            SessionNotFoundError: the session was deleted.
            StorageError: opened read-only, or the sidecar cannot be written.
        """
        if self._deleted:
            raise SessionNotFoundError(self._id, "session was deleted")
        self._writable()
        try:
            if writing_under(self._id) is None:
                write_draft(self.path, body, self.durability)
                return
            self._open_read()
            with self._locked():
                self._check_lease_locked()
                write_draft(self.path, body, self.durability)
        except OSError as exc:
            raise StorageError(f"cannot write the draft of session {self._id}: {exc}") from exc

    # ------------------------------------------------------------------ the writer lease

    def _lease_record(self) -> LeaseRecord | None:
        """The lease file's record (read under the lock by the callers that act on it).

        Raises:
            CorruptSessionError: the file is not a lease record.
            StorageError: it cannot be read.
        """
        try:
            body = read_lease(self.path)
        except OSError as exc:
            raise StorageError(f"cannot read the lease of session {self._id}: {exc}") from exc
        return None if body is None else record_from_json(body, session_id=self._id)

    def _store_lease(self, record: LeaseRecord) -> None:
        try:
            write_lease(self.path, record.to_json(), self.durability)
        except OSError as exc:
            raise StorageError(f"cannot write the lease of session {self._id}: {exc}") from exc

    def _check_lease_locked(self) -> None:
        """Under the lock: the lease the write is under, if any, is still the current one.

        Raises:
            LeaseLostError: it was taken over or released; the caller writes nothing.
        """
        lease = writing_under(self._id)
        if lease is not None:
            check_fence(lease, self._lease_record())

    async def acquire_lease(self, owner: str, ttl_ms: int) -> Lease:
        """See :class:`~sessiontree.storage.lease.LeaseSlot`: the lease file read and
        replaced under the append lock."""
        if self._deleted:
            raise SessionNotFoundError(self._id, "session was deleted")
        self._writable()
        self._open_read()
        with self._locked():
            lease, record = grant(self._id, self._lease_record(), owner, now_ms(), ttl_ms)
            self._store_lease(record)
        return lease

    async def renew_lease(self, lease: Lease, ttl_ms: int) -> Lease:
        """See :class:`~sessiontree.storage.lease.LeaseSlot` (under the append lock)."""
        self._writable()
        self._open_read()
        with self._locked():
            renewed = renew(lease, self._lease_record(), now_ms(), ttl_ms)
            self._store_lease(LeaseRecord(renewed.owner, renewed.fence, renewed.expires_ms))
        return renewed

    async def release_lease(self, lease: Lease) -> None:
        """See :class:`~sessiontree.storage.lease.LeaseSlot` (under the append lock)."""
        if self._deleted or self.read_only:
            return
        self._open_read()
        with self._locked():
            record = release(lease, self._lease_record())
            if record is not None:
                self._store_lease(record)

    async def get_lease(self) -> LeaseRecord | None:
        """See :class:`~sessiontree.storage.lease.LeaseSlot`."""
        if self._deleted:
            raise SessionNotFoundError(self._id, "session was deleted")
        return self._lease_record()

    async def delete(self) -> None:
        """Delete the session: its log, lock file and what the layout keeps (its directory in a
        repository).

        Raises:
            StorageError: the files cannot be removed.
        """
        if self._deleted:
            return
        self._writable()
        await self.close()
        self._deleted = True
        try:
            self._layout.remove(self.path)
        except OSError as exc:
            raise StorageError(f"cannot delete session {self._id}: {exc}") from exc

    async def moved_away(self) -> None:
        """The repository moved this session's files aside (into its trash): close them and
        answer every later call with :class:`SessionNotFoundError`; nothing is removed."""
        if not self._deleted:
            await self.close()
            self._deleted = True

    async def close(self) -> None:
        """Write the listing sidecar, fsync (``flush``/``fsync``) and close the files. Idempotent.

        The storage reopens its files if used again.
        """
        if self._deleted:
            return
        if self._dirty:
            if self._wfd is not None and self.durability != "none":
                with contextlib.suppress(OSError):
                    os.fsync(self._wfd)
            self._save_stats()
            self._dirty = False
        if self._writer is not None and self._writer_pid == os.getpid():
            self._layout.settled(self.path, self._writer, self.listing_facts())
            _WRITERS.pop(self._writer, None)
        self._writer, self._writer_pid = None, -1
        for fd in (self._rfd, self._wfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._rfd = self._wfd = None
        self._lock.close()

    def __del__(self) -> None:
        for fd in (getattr(self, "_rfd", None), getattr(self, "_wfd", None)):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        lock = getattr(self, "_lock", None)
        if lock is not None:
            lock.close()
