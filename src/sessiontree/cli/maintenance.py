"""Integrity and upkeep: ``verify`` (what is wrong with a session) and ``compact``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from sessiontree.entries import CompactionEntry, Entry
from sessiontree.errors import CorruptSessionError, EntryNotFoundError
from sessiontree.session import Session
from sessiontree.storage.jsonl.format import is_whole_line
from sessiontree.tree import entry_refs

__all__ = ["Findings", "compact_cmd", "find_cycles", "torn_final_line", "verify_cmd"]


@dataclass
class Findings:
    """What ``verify`` found: ``problems`` fail the command, ``warnings`` (repaired on the fly)
    only do with ``--strict``; ``facts`` are counts worth showing."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)


def find_cycles(entries: Sequence[Entry]) -> list[list[str]]:
    """Every ``parentId`` cycle among ``entries``, each as the list of ids on it.

    Iterative colouring walk, linear in the number of entries; a parent that names no entry
    ends a walk (that is a dangling parent, reported separately).
    """
    parent = {e.id: e.parent_id for e in entries}
    state: dict[str, int] = {}  # 1 = on the current walk, 2 = done
    cycles: list[list[str]] = []
    for start in parent:
        if state.get(start):
            continue
        walk: list[str] = []
        node: str | None = start
        while node is not None and node in parent and not state.get(node):
            state[node] = 1
            walk.append(node)
            node = parent[node]
        if node is not None and state.get(node) == 1:
            cycles.append(walk[walk.index(node) :])
        for n in walk:
            state[n] = 2
    return cycles


def torn_final_line(path: Path) -> int | None:
    """The 1-based number of a torn final line of a JSONL file, else ``None``.

    Torn: unterminated and not whole JSON (a whole line without its newline is read as a
    line, :func:`~sessiontree.storage.jsonl.format.is_whole_line`; a UTF-8 byte-order mark
    before a header is not part of it, as for storage).
    """
    size = path.stat().st_size
    if size == 0:
        return None
    with path.open("rb") as fh:
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return None
        fh.seek(0)
        data = fh.read()
    last = data[data.rfind(b"\n") + 1 :].removeprefix(b"\xef\xbb\xbf")
    if is_whole_line(last):
        return None
    return data.count(b"\n") + 1


async def check_session(session: Session) -> Findings:
    """Run every check of ``verify`` over one open session.

    Reads every entry once (one ``get_entries``); the branch and both contexts (as stored,
    and repaired) are built in memory from that list, so the cost is linear in the size.
    """
    from sessiontree.context import build_context_from_path, find_tool_pair_problems
    from sessiontree.tree import branch_of, trace_chain

    found = Findings()
    entries = await session.get_entries()
    by_id = {e.id: e for e in entries}
    ids = by_id.keys()
    found.facts["entries"] = len(entries)
    for e in entries:
        for name, ref in entry_refs(e):
            if ref not in ids:
                found.problems.append(f"entry {e.id}: {name} {ref!r} names no entry")
    for cycle in find_cycles(entries):
        shown = " → ".join(cycle[:6]) + (" → …" if len(cycle) > 6 else "")
        found.problems.append(f"parentId cycle of {len(cycle)} entries: {shown}")
    try:
        leaf_id = await session.get_leaf_id()
        path = branch_of(trace_chain(leaf_id, by_id.get, session_id=session.id))
    except (CorruptSessionError, EntryNotFoundError) as exc:
        found.problems.append(f"current branch: {error_line(exc)[7:]}")
        return found
    found.facts["entries on the branch"] = len(path)
    compactions = [i for i, e in enumerate(path) if isinstance(e, CompactionEntry)]
    if compactions:
        c = path[compactions[-1]]
        assert isinstance(c, CompactionEntry)
        before = {e.id for e in path[: compactions[-1]]}
        if c.retained_tail is None and c.first_kept_entry_id not in before:
            found.warnings.append(
                f"compaction {c.id}: firstKeptEntryId {c.first_kept_entry_id!r} is not on the "
                "branch before it (context keeps only what follows the summary)"
            )
    raw = build_context_from_path(path, repair=False)
    for p in find_tool_pair_problems(raw.messages):
        found.warnings.append(f"unpaired tool call/result in the stored branch: {p}")
    built = build_context_from_path(path)
    found.facts["context messages"] = len(built.messages)
    for p in find_tool_pair_problems(built.messages):
        found.problems.append(f"built context breaks the tool-pair invariant: {p}")
    return found


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
        file = getattr(s.storage, "path", None)
        if isinstance(file, Path) and file.is_file():
            torn = torn_final_line(file)
            if torn is not None:
                found.problems.append(
                    f"{file}:{torn}: torn final line (a crash mid-write); it is ignored and "
                    "cut off before the next append"
                )
        try:
            checked = await check_session(s)
        except CorruptSessionError as exc:
            found.problems.append(error_line(exc)[7:])
        else:
            found.problems.extend(checked.problems)
            found.warnings.extend(checked.warnings)
            found.facts.update(checked.facts)
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
