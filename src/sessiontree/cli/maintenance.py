"""Integrity and upkeep: ``verify`` (what is wrong with a session) and ``compact``."""

from __future__ import annotations

import click
from rich.text import Text

from sessiontree.cli._common import (
    EXIT_ERROR,
    App,
    echo_json,
    error_line,
    open_summarizer,
    plural,
    read_command,
    repo_command,
    summarizer_options,
)
from sessiontree.errors import CorruptSessionError
from sessiontree.verify import Findings, find_cycles, torn_final_line, verify_session

__all__ = ["Findings", "compact_cmd", "find_cycles", "torn_final_line", "verify_cmd"]


@click.command("verify")
@click.argument("session")
@click.option(
    "--strict", is_flag=True, help="Also fail on tool-pair faults that context building repairs."
)
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@read_command
async def verify_cmd(app: App, session: str, strict: bool, as_json: bool) -> int | None:
    """Check a session for damage (exit 1 on problems).

    Problems: parentId / targetId / fromId references that name no entry (dangling
    parents), parentId cycles, a current branch that cannot be traced, a built context that
    breaks the tool-pair invariant, a file that cannot be read, and (JSONL stores) a torn
    final line left by a crash. Warnings, shown but not failing unless --strict: unpaired
    tool calls or results in the stored branch (context building repairs them) and a
    compaction whose firstKeptEntryId is not on the branch.
    """
    found = Findings()
    try:
        s = await app.session(session)
    except CorruptSessionError as exc:
        found.problems.append(error_line(exc)[7:])
        s = None
    if s is not None:
        found.add(await verify_session(s))
    failed = bool(found.problems) or (strict and bool(found.warnings))
    if as_json:
        echo_json(
            {
                "sessionId": session if s is None else s.id,
                "ok": not failed,
                "problems": found.problems,
                "warnings": found.warnings,
                "facts": found.facts,
            }
        )
        return EXIT_ERROR if failed else None
    for p in found.problems:
        app.out.print(Text("problem: ", style="bold red") + Text(p))
    for w in found.warnings:
        app.out.print(Text("warning: ", style="bold yellow") + Text(w))
    facts = ", ".join(f"{v:,} {k}" for k, v in found.facts.items())
    verdict = Text("FAILED" if failed else "OK", style="bold red" if failed else "bold green")
    summary = Text(f" {session if s is None else s.id}: {plural(len(found.problems), 'problem')}, ")
    summary.append(plural(len(found.warnings), "warning"))
    if facts:
        summary.append(f" ({facts})", style="dim")
    app.out.print(verdict + summary)
    return EXIT_ERROR if failed else None


@click.command("compact")
@click.argument("session")
@click.option(
    "--mode",
    type=click.Choice(["pointer", "retained_tail"]),
    default="pointer",
    show_default=True,
    help="pointer: keep entries by reference (pi-compatible); retained_tail: copy "
    "them into the compaction entry (a self-contained checkpoint).",
)
@click.option(
    "--keep-tokens",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Keep at least N tokens of recent messages (default 20000).",
)
@summarizer_options
@repo_command
async def compact_cmd(
    app: App,
    session: str,
    mode: str,
    keep_tokens: int | None,
    summarizer: str,
    model: str | None,
    base_url: str | None,
    instructions: str | None,
) -> None:
    """Compact a session's context with a summary.

    Summarises the older part of SESSION's context and appends a compaction entry.

    Prints the estimated context tokens before and after. The summary comes from the
    offline extractive summariser unless --summarizer openai|anthropic (with --model, and
    --base-url for other endpoints such as local model servers). If summarising fails the
    session is left exactly as it was.
    """
    from sessiontree.compaction import CompactionSettings, compact, estimate_context_tokens

    s = await app.session(session)
    settings = (
        CompactionSettings()
        if keep_tokens is None
        else CompactionSettings(keep_recent_tokens=keep_tokens)
    )
    before_ctx = await s.build_context()
    before = estimate_context_tokens(before_ctx.messages)
    async with open_summarizer(summarizer, model, base_url) as summ:
        entry = await compact(
            s,
            settings=settings,
            summarizer=summ,
            mode="retained_tail" if mode == "retained_tail" else "pointer",
            instructions=instructions,
        )
    after_ctx = await s.build_context()
    after = estimate_context_tokens(after_ctx.messages)
    text = Text(f"compacted {s.id} ({mode}): ")
    text.append(f"{before:,} → {plural(after, 'token')}", style="bold")
    text.append(f", {len(before_ctx.messages):,} → {plural(len(after_ctx.messages), 'message')}")
    text.append(f"\ncompaction entry {entry.id}", style="cyan")
    text.append(f" ({len(entry.summary):,} characters of summary)", style="dim")
    app.out.print(text)
