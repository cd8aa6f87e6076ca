"""``sessiontree sync --watch``: follow the sources and print one line per sync round.

The first round syncs everything; later rounds sync only the files that changed
(:func:`~sessiontree.interop.watching.watch_sources`). A round is printed as one line of at
most 80 characters (``HH:MM:SS  +12 entries  1 updated …``) when it added, changed or failed
something; with ``--json``, every round is one JSON object on one line (JSON Lines), the
same object ``sync --json`` prints. Ctrl-C (or SIGTERM) stops after the round in progress
and exits 0; a second Ctrl-C stops at once (exit 130).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from rich.text import Text

from sessiontree import _json as exact_json
from sessiontree.cli._common import App, plural

if TYPE_CHECKING:
    from sessiontree.interop.locations import Source
    from sessiontree.interop.syncing import SyncReport

__all__ = ["round_line", "watch_command"]

STATUSES = ("new", "updated", "gone", "failed")
"""The counts of a round's line, in this order (``unchanged`` sources are not shown)."""


def round_line(report: SyncReport, when: datetime, width: int) -> Text:
    """The line printed for one sync round: the time, the entries added, then each count of
    :data:`STATUSES` that is not 0 (``HH:MM:SS  +12 entries  2 new  1 updated``), then the
    name of the file that changed (``N files, first <name>`` when several did).

    At most ``width`` characters (the console's): the end is cut with an ellipsis, so a
    round is always one line.
    """
    text = Text(when.strftime("%H:%M:%S"), style="dim")
    text.append(f"  +{plural(report.entries_added, 'entry')}", style="bold")
    for status in STATUSES:
        count = getattr(report, status)
        if count:
            text.append(f"  {count} {status}", style="red" if status == "failed" else "")
    changed = [row for row in report.rows if row.status in STATUSES]
    if len(changed) > 1:
        text.append(f"  {len(changed)} files, first")
    if changed:
        text.append(f"  {changed[0].path.name}", style="cyan")
    text.truncate(width, overflow="ellipsis")
    return text


def _changed(report: SyncReport) -> bool:
    return any(getattr(report, status) for status in STATUSES) or bool(report.entries_added)


@contextlib.contextmanager
def _stop_on_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop`` (the round in progress finishes); a second SIGINT
    interrupts at once. Where the loop cannot take signal handlers (Windows), Ctrl-C
    interrupts at once."""
    installed: list[signal.Signals] = []

    def first(signum: signal.Signals) -> None:
        stop.set()
        # the next Ctrl-C is Python's own again: KeyboardInterrupt, exit 130
        loop.remove_signal_handler(signum)
        if signum == signal.SIGINT:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, first, signum)
        except (NotImplementedError, RuntimeError, ValueError):
            continue
        installed.append(signum)
    try:
        yield
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


async def watch_command(
    app: App,
    sources: Sequence[Source],
    *,
    as_json: bool,
    quiet: bool = False,
    debounce_ms: int | None = None,
) -> int | None:
    """Run ``sync --watch`` in ``app``'s store until Ctrl-C or SIGTERM; the exit status
    (``None``: 0). ``quiet``: the first round is printed only when it changed something, as
    every later one.

    Raises:
        MissingExtraError: watchfiles is not installed (the ``watch`` extra).
        StorageError: the store failed.
    """
    from sessiontree.interop.watching import DEFAULT_DEBOUNCE_MS, watch_sources

    stop = asyncio.Event()
    rounds = 0
    entries = 0

    def on_report(report: SyncReport) -> None:
        nonlocal rounds, entries
        rounds += 1
        entries += report.entries_added
        if as_json:
            app.out.print(
                exact_json.dumps(report.to_dict()).decode(),
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        elif (rounds == 1 and not quiet) or _changed(report):
            app.out.print(round_line(report, datetime.now(), app.out.width))
        if rounds == 1:
            places = plural(len(sources), "place")
            app.err.print(f"watching {places} for changes (Ctrl-C stops)", highlight=False)

    loop = asyncio.get_running_loop()
    with _stop_on_signals(loop, stop):
        await watch_sources(
            app.repo,
            sources,
            debounce_ms=debounce_ms if debounce_ms is not None else DEFAULT_DEBOUNCE_MS,
            on_report=on_report,
            stop=stop,
        )
    app.err.print(
        f"stopped after {plural(rounds, 'round')}, {plural(entries, 'entry')} added",
        highlight=False,
    )
    return None
