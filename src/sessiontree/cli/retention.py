"""Retention and size: ``prune``, ``trash list|restore|empty`` and ``du`` (docs/storage.md "Retention").

Nothing is deleted unless the user runs one of these: ``prune`` moves old sessions to the
trash (and purges what has been there longer than the keep period), ``trash empty`` purges,
``du`` only reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Literal

import click
from rich.table import Table
from rich.text import Text

from sessiontree.cli._common import (
    App,
    echo_json,
    plural,
    read_command,
    repo_command,
    scope_options,
)
from sessiontree.describe import printable
from sessiontree.errors import PrefixError, SessionNotFoundError
from sessiontree.lookup import short_id_length
from sessiontree.repos.retention import (
    TRASH_KEEP_DAYS,
    TrashedSession,
    as_trash_repo,
    prune,
    store_usage,
)

__all__ = ["du_cmd", "prune_cmd", "size_text", "trash_group"]

_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def _age(ctx: click.Context, param: click.Parameter, value: str | None) -> timedelta | None:
    """An age option: a whole number and a unit, ``m`` (minutes), ``h``, ``d`` or ``w``."""
    if value is None:
        return None
    found = re.fullmatch(r"\s*(\d{1,7})\s*([mhdw])\s*", value)
    if found is None:
        raise click.BadParameter(f"{value!r} is not an age such as 90d, 12h, 2w or 30m")
    return timedelta(seconds=int(found[1]) * _UNITS[found[2]])


def size_text(n: int) -> str:
    """Bytes for a column: ``812 B``, ``4.1 kB``, ``12.0 MB``, ``1.3 GB`` (powers of 1000)."""
    if n < 1000:
        return f"{n} B"
    for unit in ("kB", "MB", "GB", "TB"):
        n_f = n / 1000
        if n_f < 1000 or unit == "TB":
            return f"{n_f:.1f} {unit}"
        n = int(n_f)
    return f"{n} B"  # pragma: no cover


def _day(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d")


def _shortener(ids: list[str]) -> tuple[int, Callable[[str], str]]:
    """The width of the unique prefixes of ``ids`` (which `show` and `trash restore` take)
    and the function cutting an id to it."""
    n = short_id_length(ids) if ids else 8
    return n, lambda i: i[:n]


def _table() -> Table:
    return Table(box=None, header_style="bold", padding=(0, 1), pad_edge=False)


def _label(name: str | None, first: str | None) -> str:
    return printable(name or first or "").replace("\n", " ")


# ---------------------------------------------------------------------- prune


@click.command("prune")
@click.option(
    "--older-than",
    callback=_age,
    required=True,
    metavar="AGE",
    help="Sessions not modified for this long: 90d, 12h, 2w, 30m.",
)
@click.option("--agent", default=None, help="Only sessions written by this agent (codex, ...).")
@click.option(
    "--project",
    default=None,
    help="Only sessions whose working directory is this path, under it, or ends in this name.",
)
@click.option(
    "--include-named", is_flag=True, help="Also named and labelled sessions (kept by default)."
)
@click.option("--dry-run", is_flag=True, help="Only list what would be moved and purged.")
@click.option(
    "--trash-days",
    type=click.IntRange(min=0),
    default=TRASH_KEEP_DAYS,
    show_default=True,
    help="Purge sessions that have been in the trash longer than this many days.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@repo_command
@scope_options(project=False)
async def prune_cmd(
    app: App,
    older_than: timedelta,
    agent: str | None,
    project: str | None,
    include_named: bool,
    dry_run: bool,
    trash_days: int,
    as_json: bool,
) -> None:
    """Move old sessions to the trash.

    Sessions not modified for --older-than go to the trash, where `sessiontree trash
    restore` brings them back whole; sessions trashed more than --trash-days ago are
    purged for good. Named and labelled sessions are kept unless --include-named. Nothing
    is changed with --dry-run. The store never prunes by itself.
    """
    report = await prune(
        app.repo,
        older_than,
        agent=agent,
        project=project,
        include_named=include_named,
        dry_run=dry_run,
        trash_days=trash_days,
    )
    if as_json:
        echo_json(
            {
                "dryRun": dry_run,
                "trashed": [
                    {
                        "id": c.info.id,
                        "modifiedAt": c.info.modified_at.isoformat(),
                        "sizeBytes": c.size_bytes,
                    }
                    for c in report.trashed
                ],
                "kept": [c.info.id for c in report.kept],
                "purged": [{"id": t.id, "sizeBytes": t.size_bytes} for t in report.purged],
                "bytesTrashed": report.bytes_trashed,
                "bytesFreed": report.bytes_freed,
            }
        )
        return
    if report.trashed:
        width, short = _shortener([c.info.id for c in report.trashed])
        table = _table()
        table.add_column("session", no_wrap=True, style="cyan", width=max(width, 7))
        table.add_column("modified", no_wrap=True, width=10)
        table.add_column("size", no_wrap=True, justify="right", width=8)
        table.add_column("name / first message", no_wrap=True, overflow="ellipsis", max_width=45)
        for c in report.trashed:
            i = c.info
            table.add_row(
                short(i.id),
                _day(i.modified_at),
                size_text(c.size_bytes),
                _label(i.name, i.first_message),
            )
        app.out.print(table)
    would = "would move" if dry_run else "moved"
    line = Text(f"{would} {plural(len(report.trashed), 'session')} ")
    line.append(f"({size_text(report.bytes_trashed)})", style="bold")
    line.append(" to the trash")
    if report.kept:
        line.append(f"; kept {len(report.kept):,} named or labelled (--include-named)")
    if report.purged:
        verb = "would purge" if dry_run else "purged"
        line.append(f"; {verb} {plural(len(report.purged), 'session')} from the trash, ")
        line.append(f"freeing {size_text(report.bytes_freed)}", style="bold")
    app.out.print(line)


# ---------------------------------------------------------------------- trash


@click.group("trash")
def trash_group() -> None:
    """The trash: sessions `sessiontree prune` moved aside.

    A trashed session is out of list, show and search until restored; `trash empty`
    deletes for good.
    """


def _trash_table(rows: list[TrashedSession]) -> Table:
    width, short = _shortener([t.id for t in rows])
    table = _table()
    table.add_column("session", no_wrap=True, style="cyan", width=max(width, 7))
    table.add_column("trashed", no_wrap=True, width=10)
    table.add_column("modified", no_wrap=True, width=10)
    table.add_column("size", no_wrap=True, justify="right", width=8)
    table.add_column("name", no_wrap=True, overflow="ellipsis", max_width=34)
    for t in rows:
        table.add_row(
            short(t.id),
            _day(t.trashed_at),
            _day(t.modified_at),
            size_text(t.size_bytes),
            _label(t.name, None),
        )
    return table


@trash_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the trashed sessions as JSON.")
@read_command
async def trash_list_cmd(app: App, as_json: bool) -> None:
    """List the trashed sessions, most recently trashed first."""
    rows = await as_trash_repo(app.repo).list_trash()
    if as_json:
        echo_json(
            [
                {
                    "id": t.id,
                    "name": t.name,
                    "trashedAt": t.trashed_at.isoformat(),
                    "modifiedAt": t.modified_at.isoformat(),
                    "entryCount": t.entry_count,
                    "sizeBytes": t.size_bytes,
                }
                for t in rows
            ]
        )
        return
    if rows:
        app.out.print(_trash_table(rows))
    total = sum(t.size_bytes for t in rows)
    app.out.print(f"{plural(len(rows), 'session')} in the trash ({size_text(total)})")


async def _trashed(app: App, ref: str) -> TrashedSession:
    """The trashed session whose id is ``ref`` or starts with it (unique)."""
    rows = await as_trash_repo(app.repo).list_trash()
    exact = [t for t in rows if t.id == ref]
    found = exact or [t for t in rows if t.id.startswith(ref)]
    if not found:
        raise SessionNotFoundError(ref, "no such session in the trash")
    if len(found) > 1:
        raise PrefixError(f"{ref!r} names {len(found)} trashed sessions; give more of the id")
    return found[0]


@trash_group.command("restore")
@click.argument("session")
@repo_command
async def trash_restore_cmd(app: App, session: str) -> None:
    """Bring SESSION (an id or a unique prefix) back from the trash, exactly as it was."""
    t = await _trashed(app, session)
    await as_trash_repo(app.repo).restore(t.id)
    app.out.print(f"restored {t.id} ({plural(t.entry_count, 'entry')})")


@trash_group.command("empty")
@click.option(
    "--older-than",
    callback=_age,
    default=None,
    metavar="AGE",
    help="Only sessions trashed longer ago than this (default: all).",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@repo_command
async def trash_empty_cmd(app: App, older_than: timedelta | None, yes: bool) -> None:
    """Delete trashed sessions for good (asks first unless --yes)."""
    trash = as_trash_repo(app.repo)
    rows = await trash.list_trash()
    if older_than is not None:
        cutoff = datetime.now(UTC) - older_than
        rows = [t for t in rows if t.trashed_at < cutoff]
    total = sum(t.size_bytes for t in rows)
    if not rows:
        app.out.print("nothing to purge")
        return
    what = f"{plural(len(rows), 'session')} ({size_text(total)})"
    if not yes and not click.confirm(f"delete {what} for good?", default=False):
        app.out.print("nothing deleted")
        return
    for t in rows:
        await trash.purge(t.id)
    app.out.print(f"purged {what}")


# ---------------------------------------------------------------------- du


@click.command("du")
@click.option(
    "--by",
    type=click.Choice(["session", "agent", "project"]),
    default="session",
    show_default=True,
    help="Group the sizes by session, agent or project.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Rows of each table.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@read_command
@scope_options()
async def du_cmd(
    app: App, by: Literal["session", "agent", "project"], limit: int, as_json: bool
) -> None:
    """Show what the store's sessions take: the largest sessions (or agents, projects), the
    largest single entries (tool outputs, images, summaries) and, on SQL stores, the large
    payloads stored once (unique bytes, references, the largest)."""
    usage = await store_usage(app.repo, by=by, limit=limit)
    payloads = usage.payloads
    if as_json:
        echo_json(
            {
                "totalBytes": usage.total_bytes,
                "sessions": usage.sessions,
                "trashBytes": usage.trash_bytes,
                "trashSessions": usage.trash_sessions,
                "by": by,
                "groups": [
                    {
                        "key": g.key,
                        "sizeBytes": g.size_bytes,
                        "sessions": g.sessions,
                        "name": g.name,
                    }
                    for g in usage.groups
                ],
                "largestEntries": [
                    {
                        "sessionId": e.session_id,
                        "entryId": e.entry_id,
                        "type": e.type,
                        "sizeBytes": e.size_bytes,
                    }
                    for e in usage.largest_entries
                ],
                "payloads": None
                if payloads is None
                else {
                    "payloads": payloads.payloads,
                    "uniqueBytes": payloads.unique_bytes,
                    "references": payloads.references,
                    "largest": [
                        {"hash": p.hash, "sizeBytes": p.size_bytes, "references": p.references}
                        for p in payloads.largest
                    ],
                },
            }
        )
        return
    total = max(usage.total_bytes, 1)
    _, short = _shortener([g.key for g in usage.groups] if by == "session" else [])
    table = _table()
    table.add_column(by, no_wrap=True, style="cyan", overflow="ellipsis", max_width=24)
    table.add_column("size", no_wrap=True, justify="right", width=8)
    table.add_column("share", no_wrap=True, justify="right", width=5)
    if by == "session":
        table.add_column("name / first message", no_wrap=True, overflow="ellipsis", max_width=38)
    else:
        table.add_column("sessions", no_wrap=True, justify="right", width=8)
    for g in usage.groups:
        last = _label(g.name, None) if by == "session" else f"{g.sessions:,}"
        key = short(g.key) if by == "session" else printable(g.key)
        table.add_row(key, size_text(g.size_bytes), f"{100 * g.size_bytes / total:.0f}%", last)
    app.out.print(table)
    if usage.largest_entries:
        _, short_entry = _shortener([e.entry_id for e in usage.largest_entries])
        _, short_session = _shortener(list({e.session_id for e in usage.largest_entries}))
        entries = _table()
        entries.add_column("largest entry", no_wrap=True, style="cyan", max_width=24)
        entries.add_column("session", no_wrap=True, style="cyan", max_width=24)
        entries.add_column("type", no_wrap=True, max_width=14, overflow="ellipsis")
        entries.add_column("size", no_wrap=True, justify="right", width=8)
        for e in usage.largest_entries:
            entries.add_row(
                printable(short_entry(e.entry_id)),
                short_session(e.session_id),
                printable(e.type),
                size_text(e.size_bytes),
            )
        app.out.print()
        app.out.print(entries)
    if payloads is not None and payloads.largest:
        table = _table()
        table.add_column("largest payload", no_wrap=True, style="cyan", max_width=24)
        table.add_column("size", no_wrap=True, justify="right", width=8)
        table.add_column("sessions", no_wrap=True, justify="right", width=8)
        for p in payloads.largest:
            table.add_row(p.hash[:12], size_text(p.size_bytes), f"{p.references:,}")
        app.out.print()
        app.out.print(table)
    line = Text(f"{plural(usage.sessions, 'session')}, ")
    line.append(size_text(usage.total_bytes), style="bold")
    if usage.trash_sessions:
        line.append(
            f"; {plural(usage.trash_sessions, 'session')} in the trash "
            f"({size_text(usage.trash_bytes)}, `sessiontree trash empty` frees it)"
        )
    if payloads is not None and payloads.payloads:
        line.append(
            f"; payloads stored once: {plural(payloads.payloads, 'payload')}, "
            f"{size_text(payloads.unique_bytes)}, {plural(payloads.references, 'reference')}"
        )
    app.out.print(line)
