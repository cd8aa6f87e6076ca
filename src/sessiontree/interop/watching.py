"""Follow the agents' session files and sync what they write (``sessiontree sync --watch``).

:func:`watch_sources` syncs every source once, then waits for filesystem events (inotify on
Linux, FSEvents on macOS, ReadDirectoryChangesW on Windows, through `watchfiles
<https://watchfiles.helpmanual.io>`_) and syncs again only the files that changed, in rounds:
the events of one round are gathered until none came for :data:`STEP_MS` or
``debounce_ms`` have passed since the first, so an agent streaming a reply costs one sync
round per ``debounce_ms`` at most, and a record written by an agent is in the store well
within a second (docs/interop.md "Following the agents live").

A source directory that does not exist yet (an agent never run) is looked for again every
``rescan_ms``; when it appears, it is watched and synced whole. A source that is one file
(Aider's ``.aider.chat.history.md`` in a project) is watched by itself, not its whole
project; when the file is replaced (renamed over, deleted and written again), the watch is
set up again and the file synced.

watchfiles is the ``watch`` extra (``pip install 'sessiontree[watch]'``); it is imported
only when :func:`watch_sources` runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sessiontree.errors import InvalidArgumentError, MissingExtraError
from sessiontree.interop import convert
from sessiontree.interop._common import finalize
from sessiontree.interop.cline import UI_MESSAGES
from sessiontree.interop.locations import Source
from sessiontree.interop.report import ImportReport
from sessiontree.interop.syncing import DEFAULT_QUIET_S, SyncReport, sync_sources

if TYPE_CHECKING:
    from sessiontree.repos.base import SessionRepo

__all__ = [
    "DEFAULT_DEBOUNCE_MS",
    "DEFAULT_RESCAN_MS",
    "STEP_MS",
    "watch_sources",
]

DEFAULT_DEBOUNCE_MS = 200
"""The longest a round gathers events before it syncs, in ms (a steady stream of writes is
synced at least this often)."""
STEP_MS = 50
"""A round is synced once no new event came for this long, in ms."""
DEFAULT_RESCAN_MS = 250
"""How often sources that do not exist yet are looked for, in ms: an agent run for the first
time makes its directory, and its first record must still be in the store within 1 s (a
look costs one ``stat`` per missing source)."""

DATABASE_SIDE_FILES = ("-wal", "-journal", "-shm")
"""Suffixes of the files SQLite writes beside a database (OpenCode's, OpenClaw's): a change
to one is a change to the database."""

CLINE_TASK = "api_conversation_history.json"
"""A Cline / Roo Code task's session file, read with the ``ui_messages.json`` beside it."""

OnReport = Callable[[SyncReport], Awaitable[None] | None]
"""Called with the :class:`~sessiontree.interop.syncing.SyncReport` of each sync round (may
be a coroutine function)."""


def _import_watchfiles() -> object:
    try:
        import watchfiles
    except ImportError as exc:
        raise MissingExtraError("watch", "watchfiles") from exc
    return watchfiles


def _roots(sources: Sequence[Source]) -> tuple[list[Path], list[Path]]:
    """The paths to watch (every source that exists, directory or file) and those that do
    not exist yet, each once."""
    present: list[Path] = []
    missing: list[Path] = []
    for source in sources:
        path = source.path
        target = present if path.exists() else missing
        if path not in target:
            target.append(path)
    return present, missing


def _changed_files(raw: str) -> list[Path]:
    """The files to sync again for an event on ``raw``: the file itself, and the session
    file it belongs with when it is read with one — a SQLite side file's database, a Cline
    ``ui_messages.json``'s task file, an OpenCode storage message or part file's session
    file (``storage/session/<project>/<id>.json``)."""
    path = Path(raw)
    for suffix in DATABASE_SIDE_FILES:
        if raw.endswith(suffix):
            return [Path(raw[: -len(suffix)])]
    if path.name == UI_MESSAGES:
        return [path, path.with_name(CLINE_TASK)]
    return [path, *_opencode_session_files(path)]


def _opencode_session_files(path: Path) -> list[Path]:
    """For a file of OpenCode's storage directory ``storage/message/<session id>/<id>.json``
    or ``storage/part/<message id>/<id>.json``: the session files it belongs to."""
    if path.suffix != ".json" or len(path.parts) < 4:
        return []
    kind, folder = path.parent.parent.name, path.parent.name
    root = path.parent.parent.parent
    if kind == "part":
        # the message's file is message/<session id>/<message id>.json
        sessions = [m.parent.name for m in (root / "message").glob(f"*/{folder}.json")]
    elif kind == "message":
        sessions = [folder]
    else:
        return []
    return [f for sid in sessions for f in (root / "session").glob(f"*/{sid}.json")]


def _under(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


async def _tell(on_report: OnReport | None, report: SyncReport) -> None:
    if on_report is None:
        return
    result = on_report(report)
    if inspect.isawaitable(result):
        await result


class _Rounds:
    """Runs the rounds of a watch and reports them; remembers the files whose open turn was
    held back, to sync them again once they have been left alone for ``quiet_s``."""

    def __init__(
        self,
        repo: SessionRepo,
        sources: Sequence[Source],
        on_report: OnReport | None,
        quiet_s: float,
    ) -> None:
        self.repo, self.sources, self.on_report, self.quiet_s = repo, sources, on_report, quiet_s
        self.held: dict[Path, float] = {}  # file -> when to sync it again (time.monotonic())

    async def run(self, sources: Sequence[Source], only: set[Path] | None = None) -> None:
        report = await sync_sources(self.repo, sources, only=only, quiet_s=self.quiet_s)
        for row in report.rows:
            if row.held:
                self.held[row.path] = time.monotonic() + self.quiet_s
            else:
                self.held.pop(row.path, None)
        await _tell(self.on_report, report)

    def due(self) -> set[Path]:
        """The held-back files whose quiet period is over (forgotten from now on)."""
        now = time.monotonic()
        due = {p for p, at in self.held.items() if at <= now}
        for p in due:
            del self.held[p]
        return due


async def watch_sources(
    repo: SessionRepo,
    sources: Sequence[Source],
    *,
    debounce_ms: int = DEFAULT_DEBOUNCE_MS,
    on_report: OnReport | None = None,
    stop: asyncio.Event | None = None,
    rescan_ms: int = DEFAULT_RESCAN_MS,
    quiet_s: float = DEFAULT_QUIET_S,
) -> None:
    """Sync ``sources`` into ``repo`` now, then again each time their files change, until
    ``stop`` is set or the task is cancelled.

    Every round is one :func:`~sessiontree.interop.syncing.sync_sources` call: the first
    over every source, the later ones with ``only`` = the files that changed in the round,
    or over every source again when one of them was deleted (so it is reported ``gone``;
    unchanged files cost a ``stat``). ``on_report`` gets each round's
    report. A round that has begun is finished before ``stop`` is looked at, so stopping
    never leaves a source half synced (and a cancelled round leaves nothing half stored
    either: each source is stored in one transaction).

    Args:
        repo: the store to sync into.
        sources: the files and directories to follow (:func:`default_sources` and
            ``--source`` places); a directory is followed with everything below it.
        debounce_ms: the longest a round gathers events before syncing, in ms (≥ 1).
        on_report: called with every round's report.
        stop: set it to return after the round in progress.
        rescan_ms: how often sources that do not exist yet are looked for, in ms (≥ 1).
        quiet_s: a file whose open turn a round held back (it was modified less than this
            many seconds ago, :func:`~sessiontree.interop.syncing.sync_sources`) is synced
            again once it has been left alone this long.

    Raises:
        MissingExtraError: watchfiles is not installed (the ``watch`` extra).
        InvalidArgumentError: ``debounce_ms`` or ``rescan_ms`` below 1.
        StorageError: the store failed (a source that cannot be read fails only its row of
            the round's report).
    """
    if debounce_ms < 1 or rescan_ms < 1:
        raise InvalidArgumentError(
            f"debounce_ms and rescan_ms must be at least 1 (got {debounce_ms}, {rescan_ms})"
        )
    watchfiles = _import_watchfiles()
    stop = stop if stop is not None else asyncio.Event()
    await asyncio.to_thread(_warm_up)
    # the sources to sync whole in the next round: all of them at first, later those that
    # appeared or were replaced; always synced after their watch is set up, so a change
    # made while they are being read is a change of the next round, never lost
    whole: list[Source] = list(sources)
    first = True
    rounds = _Rounds(repo, sources, on_report, quiet_s)
    while not stop.is_set():
        present, missing = _roots(sources)
        if not present:
            if first or whole:
                await rounds.run(whole)
            first = False
            # nothing to watch yet: look again after rescan_ms (or return on stop)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), rescan_ms / 1000)
            whole = [s for s in sources if s.path in missing and s.path.exists()]
            continue
        whole = await _follow(
            watchfiles, rounds, whole, first, present, missing, debounce_ms, rescan_ms, stop
        )
        first = False


async def _follow(
    watchfiles: object,
    rounds: _Rounds,
    whole: list[Source],
    first: bool,
    present: list[Path],
    missing: list[Path],
    debounce_ms: int,
    rescan_ms: int,
    stop: asyncio.Event,
) -> list[Source]:
    """Watch ``present``, sync ``whole`` (and report it when ``first`` or not empty), then
    sync each round of changes, until ``stop`` is set, a missing source appears or a file
    source watched by itself is replaced; the sources to sync whole next (appeared or
    replaced)."""
    sources = rounds.sources
    # a file watched by itself is watched by inode: replaced, it must be watched anew
    files = {p: _inode(p) for p in present if not p.is_dir()}
    changes_of = watchfiles.awatch(  # type: ignore[attr-defined]
        *present,
        watch_filter=None,
        debounce=debounce_ms,
        step=min(STEP_MS, debounce_ms),
        stop_event=_Either(stop),
        rust_timeout=rescan_ms,
        yield_on_timeout=True,
        ignore_permission_denied=True,
    )
    next_changes = asyncio.ensure_future(anext(changes_of))
    try:
        # let the generator run up to its wait: the watch is set up from then on
        await asyncio.sleep(0)
        if first or whole:
            await rounds.run(whole)
        while True:
            try:
                changes = await next_changes
            except StopAsyncIteration:  # stop was set
                return []
            # the files changed in the round, and those held back that are quiet now (the
            # watch yields no change every rescan_ms, so they are looked at that often)
            changed = {p for _, raw in changes for p in _changed_files(raw)}
            only = {p for p in changed if _under(p, present)} | rounds.due()
            if any(not p.exists() for p in only):
                # a file was deleted (or renamed away): a whole round reports it gone
                await rounds.run(sources)
            elif only:
                await rounds.run(sources, only=only)
            if stop.is_set():
                return []
            replaced = [p for p, inode in files.items() if _inode(p) != inode]
            appeared = [p for p in missing if p.exists()]
            if replaced or appeared:
                # a replaced file is watched anew and synced whole; a deleted one is looked
                # for again from now on (its session stays, reported gone)
                again = set(appeared) | {p for p in replaced if p.exists()}
                return [s for s in sources if s.path in again]
            next_changes = asyncio.ensure_future(anext(changes_of))
    finally:
        if not next_changes.done():
            next_changes.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await next_changes
        await changes_of.aclose()


_WARM_UP = (
    b'{"type":"session","version":3,"id":"warm-up","timestamp":"2026-01-01T00:00:00.000Z",'
    b'"cwd":"/"}\n'
    b'{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",'
    b'"message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}}\n'
    b'{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:00.000Z",'
    b'"message":{"role":"assistant","content":[{"type":"thinking","thinking":"t"},'
    b'{"type":"toolCall","id":"c","name":"read","arguments":{"path":"x"}}],'
    b'"api":"a","provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,'
    b'"cacheWrite":0,"totalTokens":2},"stopReason":"toolUse","timestamp":2}}\n'
    b'{"type":"message","id":"d","parentId":"b","timestamp":"2026-01-01T00:00:00.000Z",'
    b'"message":{"role":"toolResult","toolCallId":"c","toolName":"read",'
    b'"content":[{"type":"text","text":"x"}],"isError":false,"timestamp":3}}\n'
)
"""A small pi session converted once before watching begins (:func:`_warm_up`)."""


def _warm_up() -> None:
    """Load the importers of the agents' formats and build the entry models now, so the
    first round after an agent writes is not the one that pays for it (about half a
    second of imports and pydantic schema building in a fresh process)."""
    for name in ("claude_code", "codex", "pi", "gemini_cli", "opencode", "cline", "aider"):
        importlib.import_module(f"sessiontree.interop.{name}")
    path = Path("warm-up.jsonl")
    report = ImportReport(source_path=path, format="pi")
    converted = convert(_WARM_UP, path, "pi", report, lenient=True)
    finalize(converted.drafts, report, path, lenient=True)


class _Either:
    """The stop event handed to watchfiles: set when the caller's ``stop`` is, or when
    watchfiles sets it itself (it does on cancellation, which restarting a watch is; the
    caller's ``stop`` must not be set then)."""

    def __init__(self, stop: asyncio.Event) -> None:
        self._stop = stop
        self._own = False

    def is_set(self) -> bool:
        return self._own or self._stop.is_set()

    def set(self) -> None:
        self._own = True


def _inode(path: Path) -> tuple[int, int] | None:
    """``(device, inode)`` of ``path``; ``None`` when it is gone."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino
