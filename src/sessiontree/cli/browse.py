"""Read-only commands: ``list``, ``show``, ``context``, ``search``, ``stats``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import click
from rich.table import Table
from rich.text import Text

from sessiontree.cli._common import (
    App,
    ShortIds,
    echo_json,
    plural,
    read_command,
    resolve_entry,
    scope_options,
    short_ids,
)
from sessiontree.cli.render import (
    entry_json,
    flatten_tree,
    message_pieces,
    one_line,
    render_tree,
    write_pieces,
)
from sessiontree.describe import printable
from sessiontree.errors import InvalidArgumentError
from sessiontree.lookup import where_conditions
from sessiontree.metadata import project_of

if TYPE_CHECKING:
    from sessiontree.session import Session

__all__ = [
    "context_cmd",
    "list_cmd",
    "parse_where",
    "print_tree",
    "search_cmd",
    "sessions_table",
    "show_cmd",
    "stats_cmd",
]


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def _id_text(session_id: str, short: ShortIds) -> Text:
    """The whole id, its short form (what can be typed instead) in bold."""
    cut = len(session_id) - short.length if short.suffix else short.length
    cut = max(0, min(cut, len(session_id)))
    head, tail = session_id[:cut], session_id[cut:]
    text = Text(head, style="dim cyan" if short.suffix else "bold cyan")
    text.append(tail, style="bold cyan" if short.suffix else "dim cyan")
    return text


LIST_COLUMNS = ("id", "name", "modified", "entries", "messages", "first message")
"""The columns of ``list``, left to right."""
NAME_WIDTH = 24
"""Most characters of a session name shown by ``list``."""
MIN_NAME = 8
"""Fewest characters a cut name keeps before ``list`` leaves the name column out."""
FIRST_MESSAGE_WIDTH = 60
"""Most characters of the first user message shown by ``list``."""
MIN_FIRST_MESSAGE = 20
"""Narrower than this, ``list`` shows short ids, then cuts the name, then drops the name and
the modified column, to make room for the first message."""
GAP = 2
"""Spaces between two columns of ``list`` and ``search``."""
MIN_SNIPPET = 30
"""Fewest characters of snippet beside the ids in the ``search`` table; narrower, each hit
is printed as two lines (the ids, then the snippet)."""


def sessions_table(
    rows: Sequence[Sequence[Text]], width: int, short_ids: Sequence[Text] | None = None
) -> Table:
    """The ``list`` table fitted to ``width`` characters (a terminal's, or wide on a pipe).

    Every column gets exactly the width of its longest cell (name capped at
    :data:`NAME_WIDTH`, first message at :data:`FIRST_MESSAGE_WIDTH`), so rich never shrinks
    a column to nothing. Columns are :data:`GAP` spaces apart, without rules. The entries and
    messages columns always show in full. While the first message would get fewer than
    :data:`MIN_FIRST_MESSAGE` characters, room is made step by step: the id column shows
    ``short_ids`` (one per row, each a unique short form of the id) instead of whole ids, the
    name is cut (down to :data:`MIN_NAME`), then the name column and then the modified
    column are left out. The first message takes what is left (cut with ``…``).

    Args:
        rows: one tuple of cells per session, in :data:`LIST_COLUMNS` order.
        width: the console width in characters.
        short_ids: the short id cell of each row, used when whole ids leave too little room.
    """
    need = {
        col: max([len(col), *(r[k].cell_len for r in rows)]) for k, col in enumerate(LIST_COLUMNS)
    }
    need["name"] = min(need["name"], NAME_WIDTH)
    need["first message"] = min(need["first message"], FIRST_MESSAGE_WIDTH)
    shown = list(LIST_COLUMNS)
    want = min(MIN_FIRST_MESSAGE, need["first message"])

    def room() -> int:  # characters left for the first message
        fixed = [c for c in shown if c != "first message"]
        return width - sum(need[c] for c in fixed) - GAP * (len(shown) - 1)

    ids: Sequence[Text] = [r[0] for r in rows]
    if room() < want and short_ids is not None:
        ids = short_ids
        need["id"] = max([len("id"), *(t.cell_len for t in short_ids)])
    if room() < want and "name" in shown:
        need["name"] = max(min(need["name"], MIN_NAME), need["name"] - (want - room()))
    for optional in ("name", "modified"):
        if room() >= want:
            break
        shown.remove(optional)
    table = Table(box=None, header_style="bold", padding=(0, GAP // 2), pad_edge=False)
    for col in shown:
        size = need[col] if col != "first message" else max(1, min(need[col], room()))
        justify: Literal["left", "right"] = "right" if col in ("entries", "messages") else "left"
        table.add_column(col, no_wrap=True, width=size, overflow="ellipsis", justify=justify)
    for r, id_cell in zip(rows, ids, strict=True):
        cells = [id_cell, *r[1:]]
        table.add_row(*(cells[LIST_COLUMNS.index(col)] for col in shown))
    return table


def parse_where(conditions: tuple[str, ...]) -> dict[str, Any]:
    """:func:`sessiontree.lookup.where_conditions` for ``--where``.

    Raises:
        click.BadParameter: a condition that does not parse.
    """
    try:
        return where_conditions(conditions)
    except InvalidArgumentError as exc:
        raise click.BadParameter(str(exc), param_hint="--where") from exc


@click.command("list")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Show at most this many sessions (newest first).",
)
@click.option("--offset", type=click.IntRange(min=0), default=0, help="Skip this many first.")
@click.option(
    "--where",
    "where",
    multiple=True,
    metavar="KEY=VALUE",
    help="Only sessions whose metadata KEY equals the string VALUE (KEY:=JSON for a number, "
    "true/false or null). Repeat to require several.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@read_command
@scope_options()
async def list_cmd(
    app: App, limit: int, offset: int, where: tuple[str, ...], as_json: bool
) -> None:
    """List sessions, most recently modified first.

    Columns: id (the bold part is a unique short form you can type instead; a narrow
    terminal shows only that part), name, last modified (UTC), entries, messages and the
    first user message. --where userId=u1 keeps the sessions
    created with that metadata (indexed on SQL stores).
    """
    infos = await app.repo.list(limit=limit, offset=offset, where=parse_where(where))
    if as_json:
        echo_json(
            [
                {
                    "id": i.id,
                    "name": i.name,
                    "createdAt": i.created_at.isoformat(),
                    "modifiedAt": i.modified_at.isoformat(),
                    "entryCount": i.entry_count,
                    "messageCount": i.message_count,
                    "firstMessage": i.first_message,
                    "parentSessionId": i.parent_session_id,
                    "userId": i.metadata.user_id,
                    "app": i.metadata.app,
                    "project": project_of(i.metadata),
                }
                for i in infos
            ]
        )
        return
    if not infos:
        if where:  # a filter that keeps nothing: the store need not be empty
            conditions = " ".join(f"--where {c}" for c in where)
            skipped = f" after the first {offset:,}" if offset else ""
            app.err.print(f"no sessions match {conditions}{skipped}", markup=False)
        elif offset:  # past the end of a store that has sessions: not "the store is empty"
            app.err.print(f"no sessions after the first {offset:,}")
        else:
            app.err.print("no sessions in this store (import some with `sessiontree import PATH`)")
        return
    every = infos
    if offset or where or len(infos) == limit:  # the short ids must be unique in the store
        every = await app.repo.list()
    short = short_ids(i.id for i in every)
    rows = [
        (
            _id_text(i.id, short),
            Text(printable(i.name or "")),
            Text(_when(i.modified_at)),
            Text(f"{i.entry_count:,}"),
            Text(f"{i.message_count:,}"),
            Text(one_line(i.first_message or "", FIRST_MESSAGE_WIDTH)),
        )
        for i in infos
    ]
    table = sessions_table(
        rows, app.out.width, [Text(short(i.id), style="bold cyan") for i in infos]
    )
    app.out.print(table)
    if len(infos) == limit:
        app.err.print(
            f"showing {plural(limit, 'session')} from #{offset + 1}; use --limit/--offset for more"
        )


@click.command("show")
@click.argument("session")
@click.option("--full", is_flag=True, help="Show every entry; do not collapse long linear runs.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the tree as JSON: a flat list of nodes with parentId and children.",
)
@read_command
async def show_cmd(app: App, session: str, full: bool, as_json: bool) -> None:
    """Show the tree of a session.

    Branches, labels, the leaf, compactions and branch summaries.

    SESSION is an id, a unique id prefix or suffix, or a session name. One line per entry:
    its short id (the shortest unique prefix or suffix, at least 8 characters; every
    command taking an ENTRY accepts it), role or type, and its first text or tool call. Linear runs are collapsed to
    "… N entries …" unless --full; the leaf, labelled entries, compactions and branch
    summaries always show. Entries off the current branch are dim.

    With --json: {"sessionId", "name", "leafId", "roots": [ids], "nodes": [{"id",
    "parentId", "type", "kind", "text", "label", "children", "onCurrentBranch", "isLeaf"}]}
    in depth-first order; with --full each node also carries the whole stored "entry".
    """
    s = await app.session(session)
    await print_tree(app, s, full=full, as_json=as_json)


async def print_tree(app: App, s: Session, *, full: bool, as_json: bool = False) -> None:
    """Print the tree of ``s`` (rich tree, or JSON with ``as_json``).

    Reads every entry once (one ``get_entries``); the tree, the current branch and the labels
    are worked out in memory from that list, so the cost is linear in the session size.

    Raises:
        CorruptSessionError: a ``parentId`` cycle, or a current branch that cannot be traced.
    """
    from sessiontree.tree import branch_of, build_tree, trace_chain

    entries = await s.get_entries()
    roots = build_tree(entries, session_id=s.id)
    leaf_id = await s.get_leaf_id()
    by_id = {e.id: e for e in entries}
    path_ids = {e.id for e in branch_of(trace_chain(leaf_id, by_id.get, session_id=s.id))}
    del by_id, entries
    name = await s.get_name()
    lines = flatten_tree(roots)
    if as_json:
        echo_json(
            {
                "sessionId": s.id,
                "name": name,
                "leafId": leaf_id,
                "roots": [r.entry.id for r in roots],
                "nodes": [
                    entry_json(line, leaf_id=leaf_id, path_ids=path_ids, full=full)
                    for line in lines
                ],
            }
        )
        return
    short = short_ids(line.entry.id for line in lines)
    title = Text("session ", style="bold")
    title.append(s.id, style="bold cyan")
    if name:
        title.append(f"  “{printable(name)}”", style="bold")
    branches = sum(max(0, len(line.children) - 1) for line in lines)
    title.append(
        f"  ({plural(len(lines), 'entry')}, {plural(len(roots), 'root')}, "
        f"{plural(branches, 'fork')}, leaf {short(leaf_id)})",
        style="dim",
    )
    if not roots:
        app.out.print(title)
        app.out.print("(empty session)")
        return
    app.out.print(
        render_tree(title, roots, leaf_id=leaf_id, path_ids=path_ids, full=full, short_id=short)
    )


@click.command("context")
@click.argument("session")
@click.option(
    "--leaf",
    "leaf",
    default=None,
    metavar="ENTRY",
    help="Build the context as seen from this entry (its id, a prefix or the short id "
    "show prints) instead of the leaf.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON; messages as AgentMessage wire dicts (camelCase, as stored).",
)
@click.option(
    "--llm",
    is_flag=True,
    help="With --json: messages as provider-neutral chat messages (to_llm_messages).",
)
@click.option("--full", is_flag=True, help="Do not shorten long message texts.")
@read_command
async def context_cmd(
    app: App, session: str, leaf: str | None, as_json: bool, llm: bool, full: bool
) -> None:
    """Show the context the next model call gets.

    The system prompt, model, thinking level, active tools and the messages after
    compaction and tool-pair repair.

    --json prints {"sessionId", "leafId", "systemPrompt", "model": {"provider", "modelId"} or
    null, "thinkingLevel", "activeToolNames", "contextTokens", "messages"}. "messages" are
    AgentMessage wire dicts (lossless, the stored format); with --llm they are the
    user/assistant/tool chat messages of to_llm_messages instead.
    """
    from sessiontree.context import to_llm_messages

    if llm and not as_json:
        raise click.UsageError("--llm needs --json")
    s = await app.session(session)
    leaf_id = (await resolve_entry(s, leaf)).id if leaf is not None else await s.get_leaf_id()
    ctx = await s.build_context(leaf_id)
    tokens = _context_tokens(ctx.messages)
    if as_json:
        messages: list[dict[str, Any]] = (
            to_llm_messages(ctx.messages) if llm else [m.to_wire() for m in ctx.messages]
        )
        echo_json(
            {
                "sessionId": s.id,
                "leafId": leaf_id,
                "systemPrompt": ctx.system_prompt,
                "model": None
                if ctx.model is None
                else {"provider": ctx.model.provider, "modelId": ctx.model.model_id},
                "thinkingLevel": ctx.thinking_level,
                "activeToolNames": ctx.active_tool_names,
                "contextTokens": tokens,
                "messages": messages,
            }
        )
        return
    head = Text()
    head.append("session ", style="bold")
    head.append(s.id, style="cyan")
    head.append(f"  leaf {leaf_id or '-'}\n", style="dim")
    model = f"{ctx.model.provider}/{ctx.model.model_id}" if ctx.model else "-"
    head.append(f"model {model}  thinking {ctx.thinking_level}  ")
    head.append(f"{plural(len(ctx.messages), 'message')}  ~{plural(tokens, 'token')}")
    if ctx.active_tool_names is not None:
        head.append(f"\nactive tools: {', '.join(ctx.active_tool_names) or '(none)'}")
    app.out.print(head)
    prompt = ctx.system_prompt
    if prompt:
        shown = prompt if full or len(prompt) <= 400 else prompt[:400] + "…"
        app.out.print(Text("system: ", style="bold") + Text(printable(shown)))
    write_pieces(app.out, message_pieces(ctx.messages, full=full))


def _context_tokens(messages: Any) -> int:
    """The context-token estimate of docs/compaction.md; characters / 4 if compaction is absent."""
    try:
        from sessiontree.compaction import estimate_context_tokens
    except ImportError:  # pragma: no cover - the compaction module ships with the package
        from sessiontree.messages import message_text

        return sum(-(-len(message_text(m)) // 4) for m in messages)
    return int(estimate_context_tokens(messages))


@click.command("search")
@click.argument("query")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="At most this many hits.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@read_command
@scope_options()
async def search_cmd(app: App, query: str, limit: int, as_json: bool) -> None:
    """Search message text in every session.

    Finds every message whose text contains QUERY, ignoring case: any part of a word, a
    file name such as main.py, words inside Chinese or Japanese text, spaces included.

    Prints the session id, the entry id and a snippet around the match (an index on SQL
    stores, a scan elsewhere; the same messages are found either way): a table, or on a
    terminal too narrow for that, the ids on one line and the snippet under them.
    """
    hits = await app.repo.search(query, limit=limit)
    if as_json:
        echo_json(
            [{"sessionId": h.session_id, "entryId": h.entry_id, "snippet": h.snippet} for h in hits]
        )
        return
    if not hits:
        app.err.print(f"no message matches {query!r}")
        return
    ids_width = max(len(h.session_id) for h in hits) + max(len(h.entry_id) for h in hits)
    if app.out.width - ids_width - 2 * GAP >= MIN_SNIPPET:
        table = Table(box=None, header_style="bold", padding=(0, GAP // 2), pad_edge=False)
        table.add_column("session", no_wrap=True, style="cyan")
        table.add_column("entry", no_wrap=True, style="cyan")
        table.add_column("snippet", overflow="fold")
        for h in hits:
            table.add_row(h.session_id, printable(h.entry_id), Text(printable(h.snippet)))
        app.out.print(table)
        return
    # too narrow for the two ids and a snippet side by side: one block per hit
    for h in hits:
        block = Text(h.session_id, style="cyan")
        fits = len(h.session_id) + GAP + len(h.entry_id) <= app.out.width
        block.append(" " * GAP if fits else "\n")
        block.append(printable(h.entry_id), style="cyan")
        block.append("\n  " + one_line(h.snippet, len(h.snippet)))
        app.out.print(block, overflow="fold")


STATS_LABELS = {
    "sessionId": "session",
    "name": "name",
    "leafId": "leaf",
    "entryCount": "entries",
    "entriesByType": "entries by type",
    "messagesByRole": "messages by role",
    "toolCalls": "tool calls",
    "roots": "roots",
    "compactions": "compactions",
    "branchSummaries": "branch summaries",
    "inputTokens": "input tokens",
    "outputTokens": "output tokens",
    "cacheReadTokens": "cache read tokens",
    "cacheWriteTokens": "cache write tokens",
    "costUsd": "cost (USD)",
    "contextMessages": "context messages",
    "contextTokens": "context tokens",
}
"""The row label of each ``stats --json`` key in the ``stats`` table."""


@click.command("stats")
@click.argument("session")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@read_command
async def stats_cmd(app: App, session: str, as_json: bool) -> None:
    """Show counts and token use of SESSION.

    Entries by type, messages by role, tool calls, roots, compactions, branch summaries, the
    input/output/cache tokens and cost (USD) summed from recorded usage, and the estimated
    tokens of the current context.
    """
    s = await app.session(session)
    stats = await s.get_stats()
    ctx = await s.build_context()
    data: dict[str, Any] = {
        "sessionId": s.id,
        "name": await s.get_name(),
        "leafId": stats.leaf_id,
        "entryCount": stats.entry_count,
        "entriesByType": stats.entries_by_type,
        "messagesByRole": stats.messages_by_role,
        "toolCalls": stats.tool_calls,
        "roots": stats.roots,
        "compactions": stats.compactions,
        "branchSummaries": stats.branch_summaries,
        "inputTokens": stats.input_tokens,
        "outputTokens": stats.output_tokens,
        "cacheReadTokens": stats.cache_read_tokens,
        "cacheWriteTokens": stats.cache_write_tokens,
        "costUsd": round(stats.cost, 6),
        "contextMessages": len(ctx.messages),
        "contextTokens": _context_tokens(ctx.messages),
    }
    if as_json:
        echo_json(data)
        return
    table = Table(show_header=False, show_edge=False, box=None)
    table.add_column(style="bold")
    table.add_column()
    for key, value in data.items():
        if isinstance(value, dict):
            shown = ", ".join(f"{k} {v:,}" for k, v in sorted(value.items())) or "-"
        elif isinstance(value, float):
            shown = f"${value:,.4f}"
        elif isinstance(value, int):
            shown = f"{value:,}"
        else:
            shown = "-" if value is None else str(value)
        table.add_row(STATS_LABELS.get(key, key), Text(shown))
    app.out.print(table)
