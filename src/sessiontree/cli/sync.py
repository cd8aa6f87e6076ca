"""``sessiontree sync``: bring in what the agents wrote since the last time (docs/interop.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import click
from rich.text import Text

from sessiontree.cli._common import App, echo_json, plural, repo_command

if TYPE_CHECKING:
    from sessiontree.interop.detect import Format
    from sessiontree.interop.locations import Source
    from sessiontree.interop.syncing import SourceRow, SyncReport

__all__ = ["parse_source", "sync_cmd"]

_MARKS = {"new": "+", "updated": "↑", "unchanged": "=", "gone": "-", "failed": "✗"}
_STYLES = {"new": "green", "updated": "cyan", "unchanged": "dim", "gone": "yellow", "failed": "red"}


def parse_source(text: str) -> Source:
    """A ``--source`` value: ``FORMAT=PATH``, or ``PATH`` alone (format detected per file).

    Raises:
        click.BadParameter: an unknown format, or an empty path.
    """
    from sessiontree.interop.detect import FORMATS
    from sessiontree.interop.locations import Source

    fmt, sep, path = text.partition("=")
    if not sep or fmt not in FORMATS:
        if sep and "/" not in fmt and fmt:
            raise click.BadParameter(
                f"unknown format {fmt!r} in {text!r}; use one of {', '.join(FORMATS)}",
                param_hint="--source",
            )
        fmt, path = "", text
    if not path.strip():
        raise click.BadParameter(f"{text!r} names no path", param_hint="--source")
    return Source(cast("Format", fmt) if fmt else None, Path(path).expanduser())


def _row_text(row: SourceRow) -> Text:
    text = Text()
    text.append(f"{_MARKS[row.status]} {row.status:<9} ", style=_STYLES[row.status])
    text.append(str(row.path))
    if row.source_session:
        text.append(f" [{row.source_session}]", style="dim")
    if row.entries_added:
        text.append(f"  +{plural(row.entries_added, 'entry')}", style="green")
    if row.session_id and row.status != "unchanged":
        text.append(f"  → {row.session_id}", style="dim")
    if row.error:
        text.append(f"\n    {row.error}", style="red")
    return text


def summary_line(report: SyncReport) -> str:
    """One line: the counts of a sync."""
    return (
        f"{report.new} new, {report.updated} updated, {report.unchanged} unchanged, "
        f"{report.gone} gone, {report.failed} failed ({plural(report.entries_added, 'entry')} added)"
    )


@click.command("sync")
@click.option(
    "--source",
    "sources",
    multiple=True,
    metavar="[FORMAT=]PATH",
    help="Also sync this file or directory (repeatable); FORMAT (e.g. aider) is the format of "
    "its files, detected from each file's content when left out.",
)
@click.option(
    "--no-defaults",
    is_flag=True,
    help="Only the --source places, not the agents' default session directories.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of lines.")
@click.option(
    "--watch",
    is_flag=True,
    help="After syncing, keep following the sources and sync each change as it is written.",
)
@click.option(
    "--quiet", "-q", is_flag=True, help="Print only new, updated, gone and failed sources."
)
@repo_command
async def sync_cmd(
    app: App,
    sources: tuple[str, ...],
    no_defaults: bool,
    as_json: bool,
    watch: bool,
    quiet: bool,
) -> int | None:
    """Import what is new in the agents' session directories.

    Looks in each agent's default place (Claude Code, Codex, pi, OpenClaw, Gemini CLI,
    Copilot CLI, OpenCode, Cline, Roo Code; the environment variables that move them are
    honoured) and in every --source. A file not stored yet is imported; a file that
    grew adds only its new entries to its session; a file whose size, time and inode are
    as last synced is not read at all. A session whose file was deleted stays (gone).
    Exit status 1 when a source failed.

    With --watch it keeps following the sources (the watch extra): one line per sync round
    that changed something (one JSON object per line with --json); Ctrl-C stops after the
    round in progress.
    """
    from sessiontree.interop.locations import default_sources
    from sessiontree.interop.syncing import sync_sources

    # a watcher also waits at the defaults that do not exist yet (an agent's first run)
    places = [] if no_defaults else default_sources(include_missing=watch)
    places += [parse_source(s) for s in sources]
    if not places:
        raise click.UsageError(
            "nothing to sync: no agent's default session directory exists here; "
            "name one with --source FORMAT=PATH"
        )

    if watch:
        from sessiontree.cli.sync_watch import watch_command

        return await watch_command(app, places, as_json=as_json, quiet=quiet)

    def show(row: SourceRow) -> None:
        if not as_json and not (quiet and row.status == "unchanged"):
            app.out.print(_row_text(row))

    report = await sync_sources(app.repo, places, progress=show)
    if as_json:
        echo_json(report.to_dict())
    else:
        app.err.print(summary_line(report))
    return 1 if report.failed else None
