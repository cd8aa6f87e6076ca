"""Commands that change a session or the store: ``checkout``, ``fork``, ``label``, ``name``,
``export``, ``rm``.

Every change goes through :class:`~sessiontree.session.Session`, so it is an append (a ``leaf``,
``label``, ``session_info`` or ``branch_summary`` entry) and the history stays intact.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import click
from rich.text import Text

from sessiontree.cli._common import (
    App,
    echo_json,
    open_summarizer,
    plural,
    read_command,
    repo_command,
    resolve_entry,
    scope_options,
    summarizer_options,
)
from sessiontree.cli.render import describe_entry
from sessiontree.errors import StorageError
from sessiontree.storage.private_files import file_kind

__all__ = ["checkout_cmd", "export_cmd", "fork_cmd", "label_cmd", "name_cmd", "rm_cmd"]


def _entry_line(entry_id: str | None, kind: str, gist: str) -> Text:
    text = Text(entry_id or "-", style="cyan")
    text.append(f" {kind}", style="bold")
    if gist:
        text.append(": " + gist)
    return text


@click.command("checkout")
@click.argument("session")
@click.argument("entry")
@click.option(
    "--summarize",
    is_flag=True,
    help="Summarise the branch being left and append the summary under ENTRY.",
)
@summarizer_options
@repo_command
async def checkout_cmd(
    app: App,
    session: str,
    entry: str,
    summarize: bool,
    summarizer: str,
    model: str | None,
    base_url: str | None,
    instructions: str | None,
) -> None:
    """Move the leaf to an entry.

    The leaf of SESSION moves to ENTRY (an id, a unique prefix or the short id `show`
    prints); the next append goes there.

    The move is recorded as a `leaf` entry, so it survives restarts; nothing is deleted.
    With --summarize the abandoned branch (below the common ancestor down to the old leaf)
    is summarised and a branch_summary entry is appended under ENTRY; it becomes the leaf.
    If summarising fails nothing is changed. When ENTRY is already the
    leaf nothing is written.
    """
    s = await app.session(session)
    target = await resolve_entry(s, entry)
    old_leaf = await s.get_leaf_id()
    if old_leaf == target.id:
        app.out.print(Text(f"the leaf is already at {target.id}: nothing changed"))
        return
    if summarize:
        async with open_summarizer(summarizer, model, base_url) as summ:
            summary_id = await s.navigate(
                target.id, summarize=True, summarizer=summ, instructions=instructions
            )
    else:
        if summarizer != "extractive" or model or base_url or instructions:
            raise click.UsageError(
                "--summarizer/--model/--base-url/--instructions need --summarize"
            )
        summary_id = await s.navigate(target.id)
    app.out.print(Text(f"leaf moved: {old_leaf or '-'} → {target.id}"))
    if summary_id is not None:
        summary = await s.find_entry(summary_id)
        gist = describe_entry(summary)[1] if summary is not None else ""
        app.out.print(_entry_line(summary_id, "branch_summary", gist))
    elif summarize:
        app.out.print("nothing abandoned: no branch summary made")


@click.command("fork")
@click.argument("session")
@click.argument("entry")
@click.option(
    "--before",
    is_flag=True,
    help="Copy the path up to ENTRY's parent (to ask a user message again).",
)
@repo_command
async def fork_cmd(app: App, session: str, entry: str, before: bool) -> None:
    """Fork a session into a new one.

    Copies the path root → ENTRY of SESSION into a new session and prints its id.

    The new session keeps the entry ids, content and labels, records parentSessionId and
    forkedFromEntryId, and its leaf is ENTRY (its parent with --before). The original is
    untouched. A branch summary on the copied path keeps its text; the
    branch it summarised stays in SESSION only, so in the new session it names none
    (fromId null).
    """
    s = await app.session(session)
    target = await resolve_entry(s, entry)
    child = await app.repo.fork(s.id, target.id, "before" if before else "at")
    app.sessions.append(child)
    count = len(await child.get_entries())
    app.out.print(Text(child.id, style="bold cyan"))
    app.err.print(
        f"forked {s.id} at {target.id}{' (before)' if before else ''}: "
        f"{plural(count, 'entry')} copied, "
        f"leaf {await child.get_leaf_id() or '-'}"
    )


@click.command("label")
@click.argument("session")
@click.argument("entry")
@click.argument("text", required=False)
@click.option("--clear", is_flag=True, help="Remove the label of ENTRY instead.")
@repo_command
async def label_cmd(app: App, session: str, entry: str, text: str | None, clear: bool) -> None:
    """Label an entry (or --clear its label).

    Labels ENTRY of SESSION with TEXT, a bookmark shown by `show`.

    Appends a label entry; the leaf does not move.
    """
    if clear == (text is not None):
        raise click.UsageError("give either TEXT or --clear")
    s = await app.session(session)
    target = await resolve_entry(s, entry)
    await s.append_label(target.id, None if clear else text)
    if clear:
        app.out.print(Text(f"label of {target.id} cleared"))
    else:
        app.out.print(Text(f"{target.id} labelled {text!r}"))


@click.command("name")
@click.argument("session")
@click.argument("name")
@repo_command
async def name_cmd(app: App, session: str, name: str) -> None:
    """Name a session.

    The name is shown by `list`; `show` and the other commands accept it for SESSION.

    Appends a session_info entry; the leaf does not move.
    """
    if not name.strip():
        raise click.UsageError("the name must not be empty")
    s = await app.session(session)
    await s.append_session_name(name)
    app.out.print(Text(f"{s.id} named {name!r}"))


@click.command("export")
@click.argument("session")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite PATH if it is an existing regular file.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["pi", "claude-code", "codex", "html", "markdown"]),
    default="pi",
    show_default=True,
    help="pi: a pi v3 session file (JSONL, importable again); claude-code, codex: the "
    "session's context as that agent's transcript; html: one self-contained page (needs "
    "sessiontree[web]); markdown: one Markdown file.",
)
@click.option(
    "--redact-tool-output",
    is_flag=True,
    help="html/markdown: replace tool results and shell output with their length.",
)
@read_command
@scope_options()
async def export_cmd(
    app: App, session: str, path: Path, force: bool, fmt: str, redact_tool_output: bool
) -> None:
    """Export a session as a pi v3 file, or as HTML or Markdown to read and share.

    Writes SESSION to PATH as a pi version-3 session file (JSONL) by default.

    Every entry is written (all branches), so `sessiontree import PATH` gives it back.
    With --format claude-code or codex the file is that agent's transcript of the session's
    context (the current branch after compaction) under a new id; what the format cannot
    carry is listed. To put it where the agent finds it, use handoff.
    With --format html the file is one page with the tree and every message (CSS inline,
    no script, nothing loaded from anywhere, every text escaped); --format markdown writes
    the same as Markdown. PATH `-` writes the pi file to standard output. An existing PATH
    is refused unless --force, and anything but a regular file (a symbolic link, FIFO,
    device or directory) is refused even with --force. The file is written under a
    temporary name and renamed into place, so a crash never leaves half a file.
    """
    from sessiontree.interop.pi import export_pi_session, pi_file_bytes

    if redact_tool_output and fmt == "pi":
        raise click.UsageError("--redact-tool-output needs --format html or markdown")
    s = await app.session(session)
    if str(path) == "-":
        if fmt != "pi":
            raise click.UsageError("standard output (PATH -) takes --format pi only")
        payload, count = await pi_file_bytes(s)
        sys.stdout.flush()
        sys.stdout.buffer.write(payload)
        sys.stdout.buffer.flush()
        app.err.print(Text(f"wrote {plural(count, 'entry')} to standard output"))
        return
    kind = await asyncio.to_thread(_existing_kind, path)
    if kind not in (None, "a regular file"):
        # a symbolic link, FIFO or device is never replaced (run as root, `export --force`
        # replaced /dev/full), whatever the format
        raise StorageError(f"{path}: is {kind}, not a regular file; refusing to replace it")
    if not force and kind is not None:  # the library says overwrite=, the command --force
        raise StorageError(f"{path}: file exists (pass --force to replace it)")
    if fmt in ("claude-code", "codex"):
        from sessiontree.interop.export import claude_code_transcript, codex_rollout
        from sessiontree.interop.pi import write_atomic

        write = claude_code_transcript if fmt == "claude-code" else codex_rollout
        metadata = await s.get_metadata()
        exported = write(await s.build_context(), cwd=metadata.cwd or os.getcwd())
        await asyncio.to_thread(write_atomic, path, exported.data, force)
        app.out.print(
            Text(
                f"wrote {path}: {fmt} session {exported.session_id} ({len(exported.data):,} bytes)"
            )
        )
        _print_not_carried(app, exported.not_carried)
        return
    if fmt != "pi":
        from sessiontree.web import require_web

        if fmt == "html":  # the Markdown export is text and needs only the base install
            require_web()
        from sessiontree.web.export import write_export

        size = await write_export(
            s,
            path,
            "html" if fmt == "html" else "markdown",
            redact_tool_output=redact_tool_output,
            overwrite=force,
        )
        app.out.print(Text(f"wrote {path}: {fmt} export ({size:,} bytes)"))
        return
    count = await export_pi_session(s, path, overwrite=force)
    size = (await asyncio.to_thread(path.stat)).st_size
    app.out.print(Text(f"wrote {path}: {plural(count, 'entry')} ({plural(size, 'byte')})"))


def _print_not_carried(app: App, not_carried: dict[str, int]) -> None:
    for what, count in sorted(not_carried.items()):
        app.err.print(Text(f"not carried: {count} {what}"))


@click.command("handoff")
@click.argument("session")
@click.option(
    "--to",
    "agent",
    type=click.Choice(["claude-code", "codex", "pi"]),
    required=True,
    help="The agent that continues the session.",
)
@click.option("--cwd", help="The project directory (default: the session's, else this one).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: path, session_id, resume.")
@repo_command
async def handoff_cmd(app: App, session: str, agent: str, cwd: str | None, as_json: bool) -> None:
    """Write SESSION where another agent keeps its sessions, and print how to resume it.

    The session's context (the current branch after compaction) is written in the agent's
    own format, under a new id of that agent's form, in its session directory for the
    project (CLAUDE_CONFIG_DIR, CODEX_HOME and PI_CODING_AGENT_DIR are honoured). Then run
    the printed command in the project: claude --resume ID, codex resume ID, or
    pi --session PATH. What the format cannot carry is listed. The session records the
    hand-off, so a later sync appends only the agent's turns to it (or to a fork of it when
    it has moved on).
    """
    from sessiontree.interop.handoff import handoff

    s = await app.session(session)
    done = await handoff(s, agent, cwd=cwd)  # type: ignore[arg-type]  # a click.Choice of AGENTS
    if as_json:
        echo_json(
            {
                "path": str(done.path),
                "session_id": done.session_id,
                "resume": done.resume,
                "cwd": done.cwd,
                "not_carried": done.not_carried,
            }
        )
        return
    app.out.print(Text(f"wrote {done.path}"))
    app.out.print(Text(f"resume in {done.cwd}: {done.resume}"))
    _print_not_carried(app, done.not_carried)


def _existing_kind(path: Path) -> str | None:
    """What is at ``path`` itself (a symbolic link is not followed), ``None`` for nothing."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    return file_kind(mode)


@click.command("rm")
@click.argument("session")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@repo_command
async def rm_cmd(app: App, session: str, yes: bool) -> None:
    """Delete a session.

    Deletes SESSION and all its entries from the store (asks first unless --yes).
    """
    s = await app.session(session)
    if not yes:
        info = f"{s.id} ({plural(len(await s.get_entries()), 'entry')})"
        click.confirm(f"delete session {info}?", abort=True, err=True)
    await s.close()
    await app.repo.delete(s.id)
    app.out.print(Text(f"deleted {s.id}"))
