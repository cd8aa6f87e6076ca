"""The listing index of a JSONL repository: what ``list`` shows of every session, in one file.

``<root>/.index/listing.jsonl`` (the directory 0700, the files 0600; ``.index`` is no session
id, so nothing else takes it for a session). Line 1 is a snapshot, written whole (temporary
file + rename) by a listing::

    ["listing", 1, verified_ns, [[id, ino, size, mtime_ns, header, counts], ...], {id: [writer, ...]}]

``header`` is ``[created_ms, wire metadata]`` (true of the log with that inode: a header is
never rewritten) or ``null``; ``counts`` is ``[entry_count, message_count, first_message,
name]`` (true of that inode at that size) or ``null``. The lines after it are notes appended
(under ``.index/lock``, one ``write`` each) by the sessiontree processes that change a
session: ``["s", state]`` (a state as above), ``["w", id, writer]`` (a storage object is
about to write the session: it may change at any time until its ``["d", id, writer]``
says it is done) and ``["x", id]`` (removed). Notes are only appended to an index that
exists; a missing one is built by the next listing.

Whom a listing trusts, and how it finds out what changed without it (the directory is listed
once; a log is ``stat``-ed only when asked):

* the session directories are the truth of which sessions exist: a name in the index without
  a directory is gone; a directory the index does not know (made by another tool or an older
  version) is read from its files;
* a session that a writer has announced and not settled (its process alive; a dead one's are
  dropped) is ``stat``-ed, and read again when its log changed;
* every session shown on the page is ``stat``-ed: one whose log changed behind the index (an
  append by another tool) is read again, and the page is sorted again if its time moved;
* the whole index is checked against every log (one ``stat`` each, as listing without an
  index costs) when the last such check is older than :data:`VERIFY_AFTER_S`, or its first
  line is not a snapshot; so an append by another tool to a session off the page moves that
  session into its place in the order within that time.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from sessiontree.backends.jsonl.index_files import INDEX_DIR, read_lines
from sessiontree.backends.jsonl.log import writer_in_process
from sessiontree.backends.jsonl.stats import ListingFacts
from sessiontree.storage.private_files import DIR_MODE, replace_private_file, write_all

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "INDEX_DIR",
    "VERIFY_AFTER_S",
    "ListingIndex",
    "Snapshot",
    "State",
    "now_ns",
    "state_of",
    "storable",
    "writer_alive",
]

log = logging.getLogger("sessiontree.backends.jsonl.listing_index")

VERIFY_AFTER_S = 60.0
"""A listing checks every log against the index when the last check is older than this."""

_FORMAT = 1
_HEAD = b'["listing",1,'
"""How the index file starts (its snapshot line), as orjson writes it."""

State = list[Any]
"""``[id, ino, size, mtime_ns, header, counts]`` (see the module docstring)."""


def state_of(session_id: str, facts: ListingFacts) -> State:
    """The index state of a session whose log shows ``facts``."""
    st = facts.stats
    return [
        session_id,
        st.ino,
        st.covered,
        facts.mtime_ns,
        [facts.created_ms, dict(facts.wire_metadata)],
        [st.entry_count, st.message_count, st.first_message, st.name],
    ]


class Snapshot:
    """The index as read: states by session id, unsettled writers, when last verified.

    Attributes:
        states: session id → state.
        writers: session id → writers announced and not settled.
        verified_ns: when every log was last checked against it (0: never).
        notes: lines after the snapshot line.
    """

    def __init__(self) -> None:
        self.states: dict[str, State] = {}
        self.writers: dict[str, set[str]] = {}
        self.verified_ns = 0
        self.notes = 0

    def note(self, item: Any) -> None:
        """Apply one note line (already parsed); anything malformed is ignored."""
        if type(item) is not list or not item:
            return
        kind = item[0]
        if kind == "s" and len(item) == 2 and _is_state(item[1]):
            self.put(item[1])
        elif kind == "w" and len(item) == 3:
            self.writers.setdefault(item[1], set()).add(item[2])
        elif kind == "d" and len(item) == 3:
            self.writers.get(item[1], set()).discard(item[2])
        elif kind == "x" and len(item) == 2:
            self.states.pop(item[1], None)

    def put(self, state: State) -> None:
        """Keep ``state`` unless the one held describes a later state of the same file."""
        held = self.states.get(state[0])
        if held is None or held[1] != state[1] or (held[3], held[2]) <= (state[3], state[2]):
            self.states[state[0]] = state


def _is_state(item: Any) -> bool:
    return (
        type(item) is list
        and len(item) == 6
        and type(item[0]) is str
        and all(type(v) is int for v in item[1:4])
    )


class ListingIndex:
    """The index file of one repository root (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.directory = root / INDEX_DIR
        self.path = self.directory / "listing.jsonl"
        self._lock_path = self.directory / "lock"

    # ------------------------------------------------------------------ notes (writers)

    def note(self, items: Iterable[Any]) -> None:
        """Append notes to the index; an index that is missing (or does not start with a
        snapshot) is started anew with an empty one never verified, which makes the next
        listing check every log. Best effort: an index that cannot be kept current is
        removed, so the next listing builds it anew."""
        data = b"".join(orjson.dumps(item) + b"\n" for item in items)
        try:
            self._make_directory()
            with self._locked():
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
                except FileNotFoundError:
                    fd = -1
                try:
                    if fd >= 0 and os.pread(fd, len(_HEAD), 0) == _HEAD:
                        write_all(fd, data)
                    else:
                        self._replace(orjson.dumps(["listing", _FORMAT, 0, [], {}]) + b"\n" + data)
                finally:
                    if fd >= 0:
                        os.close(fd)
        except OSError as exc:
            log.debug("cannot note %s in the listing index %s: %s", items, self.path, exc)
            with contextlib.suppress(OSError):
                self.path.unlink()

    def _make_directory(self) -> None:
        """Make ``.index`` (0700) in the root if missing — never the root itself.

        Raises:
            FileNotFoundError: the root is gone. OSError: it cannot be made.
        """
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.directory, DIR_MODE)

    def _replace(self, data: bytes) -> None:
        """Replace the index file by ``data`` (temporary file + rename), under the lock."""
        replace_private_file(self.path, data)

    def writing(self, session_id: str, writer: str) -> None:
        """Note that ``writer`` is about to change the session."""
        self.note([["w", session_id, writer]])

    def settled(self, session_id: str, writer: str | None, facts: ListingFacts | None) -> None:
        """Note the session's state (if known) and that ``writer`` is done with it."""
        items: list[Any] = []
        if facts is not None and storable(facts.wire_metadata):
            items.append(["s", state_of(session_id, facts)])
        if writer is not None:
            items.append(["d", session_id, writer])
        if items:
            self.note(items)

    def removed(self, session_id: str) -> None:
        """Note that the session is gone."""
        self.note([["x", session_id]])

    # ------------------------------------------------------------------ snapshot (listing)

    def read(self) -> Snapshot | None:
        """The index, or ``None`` when there is none (or its first line is not a snapshot)."""
        lines = read_lines(self.path)
        if not lines:
            return None
        head = lines[0]
        if not (
            type(head) is list
            and len(head) == 5
            and head[0] == "listing"
            and head[1] == _FORMAT
            and type(head[2]) is int
            and type(head[3]) is list
            and type(head[4]) is dict
        ):
            return None
        snap = Snapshot()
        snap.verified_ns = head[2]
        # the snapshot line is only ever written whole by write(): its states are not
        # checked one by one (a listing that meets a malformed one reads without the index)
        snap.states = {state[0]: state for state in head[3]}
        for sid, writers in head[4].items():
            if type(writers) is list:
                snap.writers[sid] = {w for w in writers if type(w) is str}
        snap.notes = len(lines) - 1
        for item in lines[1:]:
            snap.note(item)
        return snap

    def write(
        self,
        states: Mapping[str, State],
        gone: set[str],
        dead: set[str],
        verified_ns: int,
        *,
        fresh: bool = False,
    ) -> None:
        """Write a new snapshot: ``states`` (what this listing found) merged, under the lock,
        with the index as it is then (notes appended since the listing read it included),
        unless ``fresh`` (the listing found the index malformed: ``states`` is all of it);
        sessions in ``gone`` and writers in ``dead`` (their processes ended) are left out.
        Best effort (an ``OSError`` is logged).
        """
        try:
            self._make_directory()
            with self._locked():
                current = (None if fresh else self.read()) or Snapshot()
                for state in states.values():
                    current.put(state)
                for sid in gone:
                    current.states.pop(sid, None)
                    current.writers.pop(sid, None)
                writers = {
                    sid: sorted(w for w in ws if w not in dead)
                    for sid, ws in current.writers.items()
                    if sid in current.states or sid in states
                }
                head = [
                    "listing",
                    _FORMAT,
                    verified_ns,
                    sorted(current.states.values(), key=_mtime),  # oldest first
                    {sid: ws for sid, ws in writers.items() if ws},
                ]
                self._replace(orjson.dumps(head) + b"\n")
        except (OSError, TypeError, IndexError, ValueError) as exc:
            log.debug("cannot write the listing index %s: %s", self.path, exc)

    @contextlib.contextmanager
    def _locked(self) -> Any:
        """The index lock (``.index/lock``, made 0600 if missing) for a ``with`` block.

        Raises:
            FileNotFoundError: no index directory.
            OSError: the lock cannot be taken.
        """
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the flock


def _mtime(state: State) -> Any:
    return state[3]


def storable(wire_metadata: Mapping[str, Any]) -> bool:
    """Whether the index (orjson) writes ``wire_metadata`` and reads it back as it is: not an
    integer beyond 64 bits, nor a float read as infinity. A session whose metadata is not
    storable is left out of the index and read from its files."""
    try:
        return bool(orjson.loads(orjson.dumps(wire_metadata)) == wire_metadata)
    except (TypeError, ValueError):
        return False


def writer_alive(writer: str) -> bool:
    """Whether the writer named ``writer`` (``"<pid>.<id>"``) may still write: its process
    runs (in this process: the storage still exists)."""
    pid_text, _, _ = writer.partition(".")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getpid():
        return writer_in_process(writer)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists (not ours to signal)
    return True


def now_ns() -> int:
    """The wall-clock time in nanoseconds (when a verification happened)."""
    return time.time_ns()
