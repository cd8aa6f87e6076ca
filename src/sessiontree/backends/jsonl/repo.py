"""A directory of JSONL sessions: ``<root>/<session_id>/session.jsonl`` (docs/storage.md "jsonl").

``open_repo("jsonl:///abs/dir")`` or ``open_repo("/abs/dir")``. Each session directory holds
the log (a pi v3 file, see :mod:`sessiontree.backends.jsonl.storage`), its lock file and a listing
sidecar (:mod:`sessiontree.backends.jsonl.stats`), as :mod:`sessiontree.backends.jsonl.layout` lays
them out.

* :meth:`JSONLRepo.list` reads the listing index ``<root>/.index``
  (:mod:`sessiontree.backends.jsonl.listing_index`) and lists the root once; it calls ``stat`` only for the
  sessions it shows and those the index does not trust, and reads a session's files (header
  line, sidecar, the bytes appended after the sidecar) only when the index does not describe
  it (:mod:`sessiontree.backends.jsonl.listing`).
* :meth:`JSONLRepo.search` scans the logs (SQL backends index); a line is only parsed when a
  substring pre-check on its raw text could match.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import heapq
import logging
import os
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from sessiontree import _json as exact_json
from sessiontree._args import check_count
from sessiontree.backends.jsonl.files import remove_session_log
from sessiontree.backends.jsonl.format import build_header, is_whole_line
from sessiontree.backends.jsonl.layout import LOG_NAME, STATS_NAME, TRASH_NAME, RepoLayout
from sessiontree.backends.jsonl.listing import list_sessions
from sessiontree.backends.jsonl.stats import write_stats
from sessiontree.backends.jsonl.storage import (
    Durability,
    JSONLStorage,
    check_session_log,
    create_session_file,
    entry_lines,
)
from sessiontree.entries import Entry
from sessiontree.errors import (
    SessionExistsError,
    SessionNotFoundError,
    StorageError,
)
from sessiontree.ids import check_session_id, is_session_id, new_id, now_iso
from sessiontree.messages import message_text, parse_message
from sessiontree.metadata import (
    SearchHit,
    SessionInfo,
    SessionMetadata,
    session_time,
    where_pairs,
)
from sessiontree.repos.base import (
    check_entries,
    check_list_args,
    coerce_metadata,
    fork_session,
    session_of,
)
from sessiontree.repos.retention import EntrySize, TrashedSession
from sessiontree.snippets import make_snippet
from sessiontree.storage.growth import check_max_session_bytes, refuse_growth, warn_growth
from sessiontree.storage.private_files import make_private_dirs
from sessiontree.storage.search import check_search_args, matches, search_needle
from sessiontree.storage.sync_index import newest_position
from sessiontree.stored import PreparedEntry
from sessiontree.tree import ForkPosition

if TYPE_CHECKING:
    from sessiontree.session import Session

__all__ = ["JSONLRepo"]

log = logging.getLogger("sessiontree.backends.jsonl.repo")


@dataclass(frozen=True)
class _Log:
    session_id: str
    path: Path
    size: int
    mtime_ns: int
    ino: int


class JSONLRepo:
    """Sessions as JSONL files under one root directory (created 0700 on first write).

    Attributes:
        root: the directory.
        url: ``jsonl://<absolute root>``.
        durability: passed to every :class:`JSONLStorage` (``none``, ``flush``, ``fsync``).
        max_session_bytes: the size limit of every session's log (``None``: none).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        durability: Durability = "flush",
        skip_bad_lines: bool = False,
        read_only: bool = False,
        max_session_bytes: int | None = None,
    ) -> None:
        """Remember the root; nothing is read or created until first use.

        Args:
            root: the directory holding one sub-directory per session.
            durability: ``none``, ``flush`` (default) or ``fsync``; see
                :mod:`sessiontree.backends.jsonl.storage`.
            skip_bad_lines: open sessions skipping (and reporting) bad lines instead of
                raising :class:`CorruptSessionError`.
            read_only: never create or write anything: a root that does not exist is a
                :class:`StorageError` on first use, and so is every write.
            max_session_bytes: refuse an append (or a ``create`` with entries) that would
                take a session's log over this many bytes
                (:class:`~sessiontree.errors.SessionTooLargeError`) and warn at 80%
                (:mod:`sessiontree.storage.growth`); ``None`` (default): no limit.

        Raises:
            InvalidArgumentError: ``max_session_bytes`` is not ``None`` or a whole number ≥ 1.
        """
        self.max_session_bytes = check_max_session_bytes(max_session_bytes)
        self.root = Path(root).expanduser().absolute()
        self._layout = RepoLayout(self.root)
        self.url = f"jsonl://{self.root}"
        self.durability: Durability = durability
        self.skip_bad_lines = skip_bad_lines
        self.read_only = read_only
        self._open: weakref.WeakSet[JSONLStorage] = weakref.WeakSet()

    async def __aenter__(self) -> JSONLRepo:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _log_path(self, session_id: str) -> Path:
        self._check_root()
        return self._layout.log_path(session_id)

    def _check_root(self) -> None:
        """Read-only: the root must be an existing directory (a mistyped path is an error,
        not an empty store)."""
        if self.read_only and not self.root.is_dir():
            raise StorageError(f"{self.root}: no store here (no such directory); check the path")

    def _writable(self) -> None:
        if self.read_only:
            raise StorageError(f"{self.root}: the store was opened read-only; nothing written")

    def _storage(self, session_id: str) -> JSONLStorage:
        path = self._log_path(session_id)
        try:
            storage = JSONLStorage(
                path,
                durability=self.durability,
                skip_bad_lines=self.skip_bad_lines,
                session_id=session_id,
                layout=self._layout,
                read_only=self.read_only,
                max_session_bytes=self.max_session_bytes,
            )
        except SessionNotFoundError:
            raise SessionNotFoundError(session_id) from None
        self._open.add(storage)
        return storage

    async def create(
        self,
        id: str | None = None,
        metadata: SessionMetadata | Mapping[str, Any] | None = None,
        *,
        entries: Sequence[Entry | PreparedEntry] = (),
        created_at: datetime | None = None,
    ) -> Session:
        """See :meth:`SessionRepo.create`: a new directory holding the log, which is linked
        into place whole (header and every entry line), so it never shows partly written
        (``created_at``: the header's ``timestamp`` and the log's modification time).

        Raises:
            InvalidSessionIdError: an id outside ``[A-Za-z0-9_-]{1,128}``.
            SessionExistsError: the id is taken.
            SessionTooLargeError: the log would take more than ``max_session_bytes``.
            StorageError: the directory cannot be written.
        """
        self._writable()
        session_id = new_id() if id is None else check_session_id(id)
        meta = coerce_metadata(metadata)
        lines, stored = entry_lines(check_entries(entries), session_id)
        limit = self.max_session_bytes
        size = 0
        if limit is not None:  # a header's timestamp has one length whatever the time
            size = len(build_header(session_id, meta, now_iso())) + sum(map(len, lines))
        refuse_growth(session_id, 0, size, limit)
        when = None if created_at is None else session_time(created_at, "created_at")
        directory = self.root / session_id
        duplicate = SessionExistsError(
            "a session with this id already exists", session_id=session_id
        )
        try:
            make_private_dirs(self.root)
            if not self.root.is_dir():
                raise NotADirectoryError(f"{self.root} is not a directory")
        except OSError as exc:  # incl. FileExistsError: the root is a regular file
            raise StorageError(f"cannot use {self.root} as a JSONL store: {exc}") from exc
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            # a directory left without its log by a crash mid-create is reused; the log's
            # exclusive creation below still refuses a session that exists
            if not directory.is_dir() or (directory / LOG_NAME).exists():
                raise duplicate from None
        except OSError as exc:
            raise StorageError(f"cannot create session directory {directory}: {exc}") from exc
        try:
            create_session_file(
                directory / LOG_NAME, session_id, meta, self.durability, lines, created_at=when
            )
            self._layout.created(directory / LOG_NAME, self.durability)
        except FileExistsError:
            raise duplicate from None
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.rmdir(directory)
            raise StorageError(f"cannot create session file in {directory}: {exc}") from exc
        position = newest_position(stored)
        if position is not None:
            self._layout.positioned(directory / LOG_NAME, position)
        storage = self._storage(session_id)
        write_stats(directory / STATS_NAME, storage.stats())
        self._layout.settled(directory / LOG_NAME, None, storage.listing_facts())
        warn_growth(session_id, 0, size, limit)
        return session_of(storage)

    async def open(self, id: str) -> Session:
        """See :meth:`SessionRepo.open`; reads the log once and indexes it.

        Raises:
            SessionNotFoundError: no such session. InvalidSessionIdError: an unsafe id.
            CorruptSessionError: the log has no valid header or a bad line.
        """
        return session_of(self._storage(id))

    def _logs(self) -> Iterator[_Log]:
        """Every session log under the root with its size and mtime (one ``stat`` each)."""
        for mtime_ns, name, path, size, ino in self._log_stats():
            yield _Log(name, Path(path), size, mtime_ns, ino)

    def _log_stats(self) -> list[tuple[int, str, str, int, int]]:
        """``(mtime_ns, session id, log path, size, inode)`` of every session log: plain
        tuples, as listing 10,000 sessions builds one per session and pages afterwards."""
        self._check_root()
        try:
            entries = os.scandir(self.root)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot list {self.root}: {exc}") from exc
        out: list[tuple[int, str, str, int, int]] = []
        stat, join, valid = os.stat, os.path.join, is_session_id
        with entries:
            for entry in entries:
                name = entry.name
                if not valid(name):
                    continue
                path = join(entry.path, LOG_NAME)
                try:
                    st = stat(path)
                except OSError:
                    continue
                out.append((st.st_mtime_ns, name, path, st.st_size, st.st_ino))
        return out

    async def list(
        self,
        *,
        limit: int | None = None,
        offset: int = 0,
        where: Mapping[str, str | int | bool | None] | None = None,
    ) -> list[SessionInfo]:
        """See :meth:`SessionRepo.list`: newest ``modified_at`` (log mtime) first.

        Over the listing index (:mod:`sessiontree.backends.jsonl.listing` says the cost): one
        listing of the root, one read of the index, a ``stat`` of each session shown (or
        passed over by ``where``) and of each the index does not trust. A session whose log
        has no valid header is left out (and logged).
        """
        check_list_args(limit, offset)
        pairs = where_pairs(where)
        self._check_root()
        return list_sessions(
            self.root,
            self._layout.index,
            read_only=self.read_only,
            limit=limit,
            offset=offset,
            pairs=pairs,
        )

    async def sync_positions(self) -> dict[str, dict[str, Any]]:
        """See :class:`~sessiontree.storage.sync_index.SyncPositionIndex`: the cache
        ``.index/sync-positions.jsonl``, each session's line trusted only while its log has
        the inode and size noted (:mod:`sessiontree.backends.jsonl.sync_index`)."""
        return await asyncio.to_thread(self._layout.sync_positions.read, self._log_path)

    async def delete(self, id: str) -> None:
        """See :meth:`SessionRepo.delete`: removes the session directory.

        Raises:
            SessionNotFoundError: no such session.
        """
        self._writable()
        path = self._log_path(id)
        if not path.exists():
            raise SessionNotFoundError(id)
        try:
            check_session_log(path)  # never remove what is not a session (a user's file)
        except OSError as exc:
            raise StorageError(f"cannot read session {id}: {exc}") from exc
        for storage in list(self._open):
            if storage.id == id:
                await storage.delete()  # later calls on it raise SessionNotFoundError
        try:
            self._layout.remove(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot delete session {id}: {exc}") from exc

    # ------------------------------------------------------------------ trash and sizes

    @property
    def _trash_dir(self) -> Path:
        return self.root / TRASH_NAME

    def _trashed_dirs(self) -> dict[str, tuple[int, Path]]:
        """Trashed session id → (Unix microseconds it was trashed, its directory)."""
        try:
            names = os.listdir(self._trash_dir)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise StorageError(f"cannot list the trash {self._trash_dir}: {exc}") from exc
        found: dict[str, tuple[int, Path]] = {}
        for name in names:
            session_id, _, stamp = name.rpartition(".")
            if is_session_id(session_id) and stamp.isdigit():
                found[session_id] = (int(stamp), self._trash_dir / name)
        return found

    def _trashed_row(self, session_id: str, trashed_us: int, directory: Path) -> TrashedSession:
        """The row of one trashed session (reads its log once)."""
        log_path = directory / LOG_NAME
        storage = JSONLStorage(log_path, session_id=session_id, read_only=True)
        try:
            stats = storage.stats()
            st = log_path.stat()
        except OSError as exc:
            raise StorageError(f"cannot read trashed session {log_path}: {exc}") from exc
        return TrashedSession(
            id=session_id,
            name=stats.name,
            trashed_at=_from_us(trashed_us),
            created_at=storage.created_at,
            modified_at=_from_us(st.st_mtime_ns // 1000),
            entry_count=stats.entry_count,
            size_bytes=st.st_size,
            metadata=storage.metadata,
        )

    async def trash(self, id: str) -> TrashedSession:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.trash`: the session directory
        is renamed into ``<root>/.trash/`` (one ``rename``: it is in one place or the other,
        never half moved). A process appending to it at that moment writes into the trashed
        log: nothing is lost.

        Raises:
            SessionNotFoundError, SessionExistsError (already in the trash), StorageError.
        """
        self._writable()
        path = self._log_path(id)
        if not path.exists():
            raise SessionNotFoundError(id)
        if id in self._trashed_dirs():
            raise SessionExistsError(
                "a session with this id is already in the trash; restore or purge it first",
                session_id=id,
            )
        try:
            check_session_log(path)  # never move what is not a session (a user's file)
        except OSError as exc:
            raise StorageError(f"cannot read session {id}: {exc}") from exc
        for storage in list(self._open):
            if storage.id == id:
                await storage.moved_away()
        trashed_us = time.time_ns() // 1000
        target = self._trash_dir / f"{id}.{trashed_us}"
        try:
            make_private_dirs(self._trash_dir)
            os.rename(path.parent, target)
        except OSError as exc:
            raise StorageError(f"cannot move session {id} to the trash: {exc}") from exc
        self._layout.index.removed(id)
        return self._trashed_row(id, trashed_us, target)

    async def list_trash(self) -> builtins.list[TrashedSession]:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.list_trash` (reads each trashed
        log once)."""
        rows = [self._trashed_row(sid, us, d) for sid, (us, d) in self._trashed_dirs().items()]
        return sorted(rows, key=lambda r: (r.trashed_at, r.id), reverse=True)

    async def restore(self, id: str) -> Session:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.restore`: the directory is
        renamed back, the log exactly as it was.

        Raises:
            SessionNotFoundError: not in the trash. SessionExistsError: ``<root>/<id>``
                exists; nothing changed.
        """
        self._writable()
        check_session_id(id)
        found = self._trashed_dirs().get(id)
        if found is None:
            raise SessionNotFoundError(id, "no such session in the trash")
        directory = self.root / id
        if directory.exists():
            raise SessionExistsError("a session with this id already exists", session_id=id)
        try:
            os.rename(found[1], directory)
        except OSError as exc:
            raise StorageError(f"cannot restore session {id}: {exc}") from exc
        storage = self._storage(id)
        self._layout.settled(directory / LOG_NAME, None, storage.listing_facts())
        return session_of(storage)

    async def purge(self, id: str) -> None:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.purge`: removes the trashed
        log and the files sessiontree keeps beside it (a file someone else put there stays).

        Raises:
            SessionNotFoundError: not in the trash. StorageError: a file cannot be removed.
        """
        self._writable()
        found = self._trashed_dirs().get(check_session_id(id))
        if found is None:
            raise SessionNotFoundError(id, "no such session in the trash")
        directory = found[1]
        try:
            remove_session_log(directory / LOG_NAME)
            (directory / STATS_NAME).unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                directory.rmdir()  # only when empty
        except OSError as exc:
            raise StorageError(f"cannot purge session {id}: {exc}") from exc

    async def session_sizes(self) -> dict[str, int]:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.session_sizes`: each log's size
        (one ``stat`` each)."""
        return {lg.session_id: lg.size for lg in self._logs()}

    async def largest_entries(self, limit: int) -> builtins.list[EntrySize]:
        """See :meth:`~sessiontree.repos.retention.TrashRepo.largest_entries`: reads every
        log line by line; only a line large enough to rank is parsed (for its id and type).
        A line's size excludes its newline."""
        check_count(limit, "limit")
        return _largest_in_logs(self._logs(), limit)

    def _opened(self, session_id: str) -> JSONLStorage | None:
        """A storage this repository has open on the session's current log, if any (it reads
        what others appended before it answers, so it serves as well as a fresh one)."""
        path = self._log_path(session_id)
        for storage in list(self._open):
            if storage.id == session_id and storage.path == path and storage.is_current():
                return storage
        return None

    async def fork(self, id: str, target_id: str, position: ForkPosition = "at") -> Session:
        """See :meth:`SessionRepo.fork` (from a storage of the session already open here, if
        any, else from a fresh one).

        Raises:
            SessionNotFoundError: no such session. EntryNotFoundError: unknown target.
        """
        self._writable()
        opened = self._opened(id)
        fork = await fork_session(opened or self._storage(id), target_id, position)
        if isinstance(fork.storage, JSONLStorage):
            self._open.add(fork.storage)
        return fork

    async def search(
        self,
        query: str,
        limit: int = 20,
        *,
        where: Mapping[str, str | int | bool | None] | None = None,
    ) -> builtins.list[SearchHit]:
        """See :meth:`SessionRepo.search`; newest sessions first.

        A linear scan of every log; a line is parsed only when its raw text, lower-cased,
        contains the query's longest run of characters that JSON never escapes. ``where``
        (as in :meth:`list`) scans only the logs of the sessions it keeps (one filtered
        listing first).

        Raises:
            InvalidMetadataError: a bad ``where`` (as :meth:`list`).
        """
        check_search_args(query, limit)
        pairs = where_pairs(where)
        wanted = {i.id for i in await self.list(where=where)} if pairs else None
        needle = search_needle(query)
        hits: list[SearchHit] = []
        if needle is None or limit <= 0:
            return hits
        probe = _probe_of(needle)
        logs = sorted(
            (lg for lg in self._logs() if wanted is None or lg.session_id in wanted),
            key=lambda lg: (lg.mtime_ns, lg.session_id),
            reverse=True,
        )
        for lg in logs:
            try:
                _search_log(lg, needle, probe, query, hits, limit)
            except OSError as exc:
                log.warning("search skips %s: %s", lg.path, exc)
            if len(hits) >= limit:
                break
        return hits

    async def close(self) -> None:
        """Close every storage this repository opened (writing their sidecars). Idempotent."""
        opened, self._open = list(self._open), weakref.WeakSet()
        for storage in opened:
            await storage.close()


def _from_us(us: int) -> datetime:
    """An aware UTC datetime from Unix microseconds."""
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)


def _largest_in_logs(logs: Iterator[_Log], limit: int) -> list[EntrySize]:
    """The ``limit`` largest entry lines of ``logs``, largest first (then in reading order)."""
    heap: list[tuple[int, int, EntrySize]] = []
    order = 0
    for lg in logs:
        try:
            with open(lg.path, "rb") as f:
                f.readline()  # the header
                for raw in f:
                    size = len(raw.rstrip(b"\n"))
                    if limit == 0 or (len(heap) >= limit and size <= heap[0][0]):
                        continue
                    try:
                        obj = exact_json.loads(raw)
                    except exact_json.JSONDecodeError:
                        continue  # a torn final line
                    if type(obj) is not dict:
                        continue
                    order += 1
                    item = (
                        size,
                        order,
                        EntrySize(lg.session_id, str(obj.get("id")), str(obj.get("type")), size),
                    )
                    if len(heap) < limit:
                        heapq.heappush(heap, item)
                    else:
                        heapq.heapreplace(heap, item)
        except OSError as exc:
            log.warning("size report skips %s: %s", lg.path, exc)
    return [e for _, _, e in sorted(heap, key=lambda t: (-t[0], t[1]))]


def _search_log(
    lg: _Log, needle: str, probe: str, query: str, hits: list[SearchHit], limit: int
) -> None:
    """Append the hits of one log to ``hits`` until there are ``limit``."""
    with open(lg.path, "rb") as f:
        f.readline()  # the header
        for raw in f:
            if not raw.endswith(b"\n") and not is_whole_line(raw):
                break  # a torn final line
            hit = _match_line(raw, needle, probe, query)
            if hit is not None:
                hits.append(SearchHit(lg.session_id, hit[0], hit[1]))
                if len(hits) >= limit:
                    return


def _probe_of(needle: str) -> str:
    """The longest run of ``needle`` that appears verbatim in raw JSON (no escapes needed)."""
    runs: list[str] = []
    current: list[str] = []
    for ch in needle:
        if ch in '"\\' or ord(ch) < 0x20 or ch in "\u2028\u2029":
            runs.append("".join(current))
            current = []
        else:
            current.append(ch)
    runs.append("".join(current))
    return max(runs, key=len)


def _match_line(raw: bytes, needle: str, probe: str, query: str) -> tuple[str, str] | None:
    text = raw.decode("utf-8", "replace")
    if probe and "\\u" not in text and probe not in text.lower():
        return None
    try:
        obj = exact_json.loads(raw)
    except exact_json.JSONDecodeError:
        try:  # read as storage reads it (its lone surrogates as U+FFFD)
            obj = exact_json.loads(exact_json.without_lone_surrogates(raw))
        except exact_json.JSONDecodeError:
            return None
    if type(obj) is not dict or obj.get("type") != "message":
        return None
    entry_id = obj.get("id")
    msg = obj.get("message")
    if not isinstance(entry_id, str) or not isinstance(msg, dict):
        return None
    try:
        body = message_text(parse_message(msg))
    except ValidationError:
        return None
    if not matches(needle, body):
        return None
    return entry_id, make_snippet(body, query)
