"""Listing a JSONL repository: :meth:`JSONLRepo.list` over the listing index.

The order is newest log modification time first, then session id (a total order). The root is
listed once; the index (:mod:`sessiontree.backends.jsonl.listing_index`, which says whom it trusts) gives
each session's time and what it shows; a session the index does not know, or knows only in
part, is read from its own files: the header line, the listing sidecar
(:mod:`sessiontree.backends.jsonl.stats`) and the log bytes appended after the sidecar's
``covered`` offset — never every file whole. What a listing had to find out is written back
into the index (unless the repository is read-only).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from sessiontree.backends.jsonl.format import Header, created_at_of, parse_header
from sessiontree.backends.jsonl.layout import LOG_NAME, STATS_NAME
from sessiontree.backends.jsonl.listing_index import (
    VERIFY_AFTER_S,
    ListingIndex,
    Snapshot,
    State,
    now_ns,
    storable,
    writer_alive,
)
from sessiontree.backends.jsonl.stats import Stats, count_lines, read_stats, write_stats
from sessiontree.errors import CorruptSessionError, StorageError
from sessiontree.ids import is_session_id
from sessiontree.metadata import SessionInfo, SessionMetadata, matches_where

__all__ = ["list_sessions", "read_header"]

log = logging.getLogger("sessiontree.backends.jsonl.repo")

_HEADER_PROBE = 4096
"""Bytes read at first to find the header line (more only for a longer header)."""

_STATS_REWRITE_BYTES = 64 * 1024
"""Listing rewrites a sidecar when it had to scan at least this many new bytes."""

_NOTES_REWRITE = 64
"""A listing writes a new snapshot when the index has more notes than this (and than a
quarter of its sessions) after its snapshot line."""


def _read_header_line(fd: int) -> bytes:
    data = os.pread(fd, _HEADER_PROBE, 0)
    while b"\n" not in data:
        more = os.pread(fd, _HEADER_PROBE, len(data))
        if not more:
            break
        data += more
    end = data.find(b"\n")
    return data if end < 0 else data[: end + 1]


def read_header(path: Path) -> Header:
    """The parsed header line of the log at ``path``.

    Raises:
        CorruptSessionError: no valid header. OSError: the file cannot be read.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        return parse_header(_read_header_line(fd), path)
    finally:
        os.close(fd)


class _Listing:
    """One call of :func:`list_sessions`: the states it found, and what to write back."""

    def __init__(self, root: Path, snap: Snapshot, read_only: bool, verify: bool) -> None:
        self.root = root
        self.snap = snap
        self.read_only = read_only
        self.verify = verify
        self.found: dict[str, State] = {}  # states found out by this listing
        self.checked: set[str] = set()  # sessions stat-ed by this listing
        self.gone: set[str] = set()
        self._meta: dict[str, SessionMetadata] = {}

    def log_path(self, session_id: str) -> Path:
        return self.root / session_id / LOG_NAME

    def state(self, session_id: str) -> State | None:
        return self.found.get(session_id) or self.snap.states.get(session_id)

    def check(self, session_id: str) -> State | None:
        """The session's state after one ``stat`` of its log (``None``: no log there now)."""
        held = self.state(session_id)
        self.checked.add(session_id)
        try:
            st = os.stat(os.path.join(self.root, session_id, LOG_NAME))
        except OSError:
            self.gone.add(session_id)
            self.found.pop(session_id, None)
            return None
        if held is not None and held[1] == st.st_ino:
            if held[2] == st.st_size and held[3] == st.st_mtime_ns:
                return held
            # the header holds for the same file; the counts only for the same bytes
            header, counts = held[4], held[5] if held[2] == st.st_size else None
        else:
            header = counts = None
        state = [session_id, st.st_ino, st.st_size, st.st_mtime_ns, header, counts]
        self.found[session_id] = state
        return state

    def complete(self, state: State, *, counts: bool) -> State:
        """``state`` with its header (and its counts, if asked) read from the files.

        Raises:
            CorruptSessionError: no valid header. OSError: the files cannot be read.
        """
        if state[4] is not None and (state[5] is not None or not counts):
            return state
        session_id, ino, size = state[0], state[1], state[2]
        path = self.log_path(session_id)
        fd = os.open(path, os.O_RDONLY)
        try:
            header = parse_header(_read_header_line(fd), path)
            filled = [*state[:4], [header.created_ms, dict(header.wire_metadata)], state[5]]
            keep = storable(header.wire_metadata)
            if counts and filled[5] is None:
                stats_path = path.parent / STATS_NAME
                stats = read_stats(stats_path, ino, size)
                if stats is None or stats.covered < header.length:
                    stats = Stats(ino=ino, covered=header.length)
                before = stats.covered
                if size > stats.covered:
                    count_lines(stats, os.pread(fd, size - stats.covered, stats.covered))
                if stats.covered - before >= _STATS_REWRITE_BYTES and not self.read_only:
                    write_stats(stats_path, stats)
                filled[5] = [
                    stats.entry_count,
                    stats.message_count,
                    stats.first_message,
                    stats.name,
                ]
        finally:
            os.close(fd)
        if keep:  # else it is read from the file each time
            self.found[session_id] = filled
        return filled

    def metadata(self, state: State) -> SessionMetadata:
        meta = self._meta.get(state[0])
        if meta is None:
            meta = self._meta[state[0]] = SessionMetadata.model_validate(state[4][1])
        return meta

    def info(self, state: State) -> SessionInfo:
        meta = self.metadata(state)
        entry_count, message_count, first_message, name = state[5]
        return SessionInfo(
            id=state[0],
            name=name,
            created_at=created_at_of(state[4][0]),
            modified_at=datetime.fromtimestamp(state[3] / 1e9, UTC),
            entry_count=entry_count,
            message_count=message_count,
            first_message=first_message,
            parent_session_id=meta.parent_session_id,
            metadata=meta,
        )


def list_sessions(
    root: Path,
    index: ListingIndex,
    *,
    read_only: bool,
    limit: int | None,
    offset: int,
    pairs: Mapping[str, str],
    trust_index: bool = True,
) -> list[SessionInfo]:
    """A page of the sessions under ``root`` (see :meth:`SessionRepo.list`); with
    ``trust_index=False`` the index is not read, only written anew.

    Cost: one listing of ``root`` and one read of the index; then one ``stat`` for each
    session shown, passed over by ``where``, or that the index does not trust, and the files
    of each of those the index does not describe. A session whose log has no valid header is
    left out (and logged).

    Raises:
        StorageError: ``root`` cannot be listed.
    """
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StorageError(f"cannot list {root}: {exc}") from exc
    started = now_ns()
    read = index.read() if trust_index else None
    verify = read is None or started - read.verified_ns > VERIFY_AFTER_S * 1e9
    snap = read or Snapshot()
    run = _Listing(root, snap, read_only, verify)
    dead = {w for ws in snap.writers.values() for w in ws if not writer_alive(w)}
    busy = {sid for sid, ws in snap.writers.items() if ws}
    states = snap.states
    present = set(names)
    run.gone.update(states.keys() - present)
    if verify:
        rows = []
        unknown = [n for n in names if n in states or is_session_id(n)]
    else:
        skipped = busy | run.gone
        if skipped:
            rows = [(s[3], n) for n, s in states.items() if n not in skipped]
        else:
            rows = [(s[3], n) for n, s in states.items()]
        unknown = [n for n in present - states.keys() if is_session_id(n)]
        unknown.extend(n for n in busy if n in states and n in present)
    for name in unknown:
        state = run.check(name)
        if state is not None:
            rows.append((state[3], name))
    try:
        infos = _page(run, rows, limit, offset, pairs)
    except (TypeError, IndexError, KeyError, ValueError, AttributeError) as exc:
        if read is None:
            raise
        # an index line not as this module writes it: list from the files alone
        log.warning("listing ignores the malformed index %s: %s", index.path, exc)
        return list_sessions(
            root,
            index,
            read_only=read_only,
            limit=limit,
            offset=offset,
            pairs=pairs,
            trust_index=False,
        )
    if not read_only and rows and _worth_writing(run, read, dead):
        index.write(
            run.found,
            run.gone,
            dead,
            started if verify else snap.verified_ns,
            fresh=not trust_index,
        )
    return infos


def _worth_writing(run: _Listing, read: Snapshot | None, dead: set[str]) -> bool:
    if read is None or run.verify or run.found or run.gone or dead:
        return True
    return read.notes > max(_NOTES_REWRITE, len(read.states) // 4)


def _page(
    run: _Listing,
    rows: list[tuple[int, str]],
    limit: int | None,
    offset: int,
    pairs: Mapping[str, str],
) -> list[SessionInfo]:
    """Walk ``rows`` newest first to the page; every session looked at is ``stat``-ed, and
    when one's time moved the walk starts again in the corrected order."""
    while True:
        # the index keeps its states oldest first, so this sort meets long ordered runs
        rows.sort(reverse=True)
        ordered = rows if pairs else rows[offset:]
        infos: list[SessionInfo] = []
        skip = offset
        moved = False
        for mtime_ns, name in ordered:
            if limit is not None and len(infos) >= limit:
                break
            state: State | None = run.state(name)
            if name not in run.checked:
                state = run.check(name)
                if state is None:
                    moved = True
                    break
                if state[3] != mtime_ns:
                    moved = True
                    break
            assert state is not None
            try:
                if pairs:
                    state = run.complete(state, counts=False)
                    if not matches_where(run.metadata(state), pairs):
                        continue
                    if skip:
                        skip -= 1
                        continue
                infos.append(run.info(run.complete(state, counts=True)))
            except (CorruptSessionError, OSError) as exc:
                log.warning("listing skips %s: %s", run.log_path(name), exc)
                continue
        if not moved:
            return infos
        rows[:] = _rows(run, rows)


def _rows(run: _Listing, rows: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """``rows`` with the times this listing has found (and without sessions found gone)."""
    out = []
    for _, name in rows:
        if name in run.gone:
            continue
        state = run.state(name)
        if state is not None:
            out.append((state[3], name))
    return out
