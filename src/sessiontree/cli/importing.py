"""``sessiontree import``: session files of pi, Claude Code, Codex, SWE-agent, Aider, Cline and
Gemini CLI into the store."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click
from rich.text import Text

from sessiontree.cli._common import App, error_line, plural, repo_command, stderr_is_terminal
from sessiontree.errors import SessionTreeError
from sessiontree.interop.locations import DIR_SUFFIXES, is_session_file

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from sessiontree.interop import AlreadyImportedError, Format, ImportReport

__all__ = ["DIR_SUFFIXES", "PROGRESS_MIN_BYTES", "collect_files", "import_cmd"]

PROGRESS_MIN_BYTES = 4 * 1024 * 1024
"""Inputs at least this large (bytes, all files together) get a progress bar on a terminal."""
NAME_WIDTH = 32
"""Most characters of the file name shown beside the progress bar."""
FORMATS = (
    "pi",
    "claude-code",
    "codex",
    "swe-agent",
    "aider",
    "cline",
    "gemini-cli",
    "copilot-cli",
    "opencode",
    "openclaw",
)
_PARENT_PROBLEMS = {
    "names no entry": "is not in the file",
    "is a leaf entry": "is a leaf-move record, which cannot be a parent",
    "cycle": "leads back to this entry (a cycle)",
}
"""How a dangling-parent reason of the import report reads in a sentence about the parent."""
MAX_LISTED = 10
"""Unreadable lines, dangling parents and warnings listed per file (the rest are counted)."""


def collect_files(paths: Iterable[Path]) -> list[Path]:
    """The files to import: each file as given, each directory searched recursively.

    Directories contribute files ending in ``.jsonl`` or ``.traj``, Aider histories
    (``*.aider.chat.history.md``, the hidden ``.aider.chat.history.md`` too), Cline tasks
    (``api_conversation_history.json``) and OpenCode storage session files
    (``session/<project>/ses*.json``); other hidden files are skipped. Sorted order; a file
    named twice is imported once.

    Raises:
        click.BadParameter: a path that does not exist.
    """
    out: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        if path.is_dir():
            found = sorted(
                p for p in path.rglob("*") if p.is_file() and is_session_file(p.relative_to(path))
            )
        elif path.exists():
            found = [path]
        else:
            raise click.BadParameter(f"{path} does not exist", param_hint="PATH")
        for p in found:
            key = p.resolve()
            if key not in seen:
                seen.add(key)
                out.append(p)
    return out


def _jobs(files: list[Path]) -> list[tuple[Path, str | None, bool]]:
    """``(file, session, last job of that file)`` for each import to run: one per file, and
    one per session of a database file (OpenCode, OpenClaw) holding several."""
    from sessiontree.interop import database_sessions
    from sessiontree.interop.detect import SQLITE_HEADER

    out: list[tuple[Path, str | None, bool]] = []
    for path in files:
        sessions: list[str] | None = None
        try:
            with path.open("rb") as f:
                is_database = f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
            if is_database:
                sessions = database_sessions(path.read_bytes())
        except OSError:
            sessions = None  # import_session reports the unreadable file
        if not sessions:
            out.append((path, None, True))
            continue
        out.extend((path, s, k == len(sessions) - 1) for k, s in enumerate(sessions))
    return out


@dataclass
class Outcome:
    """What happened to one file."""

    path: Path
    session_id: str | None = None
    report: ImportReport | None = None
    skipped: str | None = None
    error: str | None = None


def _report_text(outcome: Outcome) -> Text:
    text = Text()
    if outcome.error is not None:
        text.append("✗ ", style="bold red")
        text.append(str(outcome.path))
        text.append(f"  {outcome.error}", style="red")
        return text
    if outcome.skipped is not None:
        text.append("= ", style="bold yellow")
        text.append(str(outcome.path))
        text.append(f"  {outcome.skipped}", style="yellow")
        return text
    report = outcome.report
    assert report is not None
    text.append("✓ ", style="bold green")
    text.append(str(outcome.path))
    text.append(" → ")
    text.append(str(outcome.session_id), style="bold cyan")
    text.append(f" ({report.format}): {plural(report.entries_imported, 'entry')}")
    facts = [
        (len(report.custom_lines), "line", "lines", " kept as custom entries"),
        (len(report.dangling_parents), "entry", "entries", " with a missing parent"),
        (len(report.unreadable_lines), "unreadable line", "unreadable lines", ""),
    ]
    for count, word, many, what in facts:
        if count:
            text.append(f", {plural(count, word, many)}{what}", style="yellow")
    for item in report.unreadable_lines[:MAX_LISTED]:
        text.append(f"\n    unreadable line {item.line}: {item.reason}", style="yellow")
    for d in report.dangling_parents[:MAX_LISTED]:
        where = f"line {d.line}: " if d.line is not None else ""
        placed = f"re-attached to {d.attached_to}" if d.attached_to else "imported as a root"
        text.append(
            f"\n    {where}entry {d.entry_id}: its parent {d.parent_id!r} "
            f"{_PARENT_PROBLEMS.get(d.reason, d.reason)}; {placed}",
            style="dim",
        )
    for w in report.warnings[:MAX_LISTED]:
        text.append(f"\n    {w}", style="dim")
    hidden = sum(
        max(0, len(x) - MAX_LISTED)
        for x in (report.unreadable_lines, report.dangling_parents, report.warnings)
    )
    if hidden:
        text.append(f"\n    … and {hidden} more (see --json)", style="dim")
    return text


async def _already_present(app: App, outcome: Outcome, exc: AlreadyImportedError) -> None:
    """Classify a refused import: the store really holds the session (skipped, with the
    entry counts of both sides), or it could not be opened, so the store is broken or is not
    what the URL says (an error, e.g. a JSONL store URL naming a regular file)."""
    sid = exc.session_id
    if sid is None:
        outcome.error = error_line(exc)[len("error: ") :]
        return
    try:
        stored = await app.repo.open(sid)
        try:
            count = len(await stored.get_entries())
        finally:
            await stored.close()
    except SessionTreeError as opened:
        outcome.error = (
            f"the store refused session {sid} as already present, but it cannot be opened: "
            + error_line(opened)[len("error: ") :]
        )
        return
    outcome.session_id = sid
    if getattr(exc.report, "up_to_date", False):
        outcome.skipped = (
            f"already in the store as session {sid} ({plural(count, 'entry')} stored; "
            "the file holds nothing new)"
        )
        return
    in_file = exc.report.entries_imported
    outcome.skipped = (
        f"already in the store as session {sid} ({plural(count, 'entry')} stored, "
        f"{in_file:,} in the file; that session was not imported from this format: "
        "--as-new imports the file as a copy)"
    )


def _bar_advancer(
    bar: Progress, task: TaskID, before: int, size: int, name: str
) -> Callable[[int], None]:
    """The ``progress`` callback of one file's import: moves the bar to ``before`` plus the
    bytes of the file parsed so far (at most ``size``, the file's size when the import
    began); once the whole file is parsed it says the session is being stored."""

    def advance(read: int) -> None:
        bar.update(task, completed=before + min(read, size))
        if read >= size:
            bar.update(task, name=f"storing {name}")

    return advance


@click.command("import")
@click.argument(
    "paths",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, path_type=Path),
    metavar="PATH...",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="The files' format; detected from each file's content when not given.",
)
@click.option(
    "--lenient",
    is_flag=True,
    help="Skip unreadable lines (each is listed) instead of failing the file.",
)
@click.option(
    "--show", "show", is_flag=True, help="Afterwards show the tree of the first session imported."
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Force the progress bar on or off (default: on a terminal, for inputs of 4 MB or "
    "more). It moves as each file is read, then waits while its session is stored.",
)
@click.option(
    "--as-new",
    is_flag=True,
    help="Import each file as a new session with a new id, even if it was imported before.",
)
@repo_command
async def import_cmd(
    app: App,
    paths: tuple[Path, ...],
    fmt: str | None,
    lenient: bool,
    show: bool,
    progress: bool | None,
    as_new: bool,
) -> int | None:
    """Import session files of pi, Claude Code, Codex, SWE-agent, Aider, Cline and more.

    Formats: pi v1-v3, Claude Code transcripts, Codex rollouts, SWE-agent trajectories,
    Aider chat histories, Cline / Roo Code tasks, Gemini CLI chats, GitHub Copilot CLI
    sessions, OpenCode sessions (export JSON, share pair, storage session files, the
    opencode.db database) and OpenClaw databases; a database gives one import per session
    it holds.

    PATH may be a file or a directory (searched recursively for *.jsonl, *.traj,
    *.aider.chat.history.md, api_conversation_history.json and OpenCode storage
    session/*/ses*.json files). Prints
    one line per file: the new session id, the detected format, entries imported, lines
    kept as custom entries, dangling parents (re-attached or made roots) and unreadable lines.
    A file that fails is reported on its line and the others still import; the exit
    status is 1 if any file failed. A file whose session is already in the store is
    reported (with the entry counts of the stored session and of the file) and left alone;
    --as-new imports it again as a copy with a new id.
    """
    from sessiontree.ids import new_id
    from sessiontree.interop import AlreadyImportedError, import_session

    files = collect_files(paths)
    if not files:
        app.err.print(
            "no session files found (directories are searched for *.jsonl, *.traj, "
            "*.aider.chat.history.md, api_conversation_history.json)"
        )
        return 1
    sizes = [p.stat().st_size for p in files]
    total = sum(sizes)
    outcomes: list[Outcome] = []
    if progress is None:
        progress = total >= PROGRESS_MIN_BYTES and stderr_is_terminal()
    bar = None
    task = None
    if progress:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.table import Column

        bar = Progress(
            TextColumn("[bold]importing"),
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            # the file name gives way first on a narrow terminal, not the bar or the sizes
            TextColumn(
                "{task.fields[name]}",
                table_column=Column(no_wrap=True, overflow="ellipsis", max_width=NAME_WIDTH),
            ),
            console=app.err,
            transient=True,
        )
        bar.start()
        task = bar.add_task("import", total=total, name="")
    done_bytes = 0
    try:
        size_of = dict(zip(files, sizes, strict=True))
        for path, source_session, last_of_file in _jobs(files):
            size = size_of[path]
            on_bytes = None
            if bar is not None and task is not None:
                bar.update(task, name=path.name)
                on_bytes = _bar_advancer(bar, task, done_bytes, size, path.name)
            outcome = Outcome(path)
            try:
                session, report = await import_session(
                    path,
                    app.repo,
                    format=cast("Format | None", fmt),
                    lenient=lenient,
                    session_id=new_id() if as_new else None,
                    progress=on_bytes,
                    source_session=source_session,
                )
                outcome.session_id = session.id
                outcome.report = report
                await session.close()
            except AlreadyImportedError as exc:
                if app.state.debug:
                    raise
                await _already_present(app, outcome, exc)
            except SessionTreeError as exc:
                if app.state.debug:
                    raise
                outcome.error = error_line(exc)[len("error: ") :]
            outcomes.append(outcome)
            if last_of_file:
                done_bytes += size
                if bar is not None and task is not None:
                    bar.update(task, completed=done_bytes)
            # on a terminal, print above the live bar (its console) so the two do not garble
            printer = bar.console if bar is not None and app.out.is_terminal else app.out
            printer.print(_report_text(outcome))
    finally:
        if bar is not None:
            bar.stop()
    done = [o for o in outcomes if o.report is not None]
    failed = [o for o in outcomes if o.error is not None]
    skipped = [o for o in outcomes if o.skipped is not None]
    entries = sum(o.report.entries_imported for o in done if o.report is not None)
    app.err.print(
        f"{len(done)} imported ({plural(entries, 'entry')}), {len(skipped)} already present, "
        f"{len(failed)} failed"
    )
    if show:
        first = next((o.session_id for o in outcomes if o.session_id is not None), None)
        if first is not None:
            from sessiontree.cli.browse import print_tree

            app.out.print()
            shown = await app.repo.open(first)
            app.sessions.append(shown)
            await print_tree(app, shown, full=False)
    return 1 if failed else None
