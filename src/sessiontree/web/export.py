"""Single-file exports of a session: HTML (self-contained) and Markdown.

The HTML file has its CSS inline, no script, and a Content-Security-Policy that forbids
loading anything, so it shows the same offline as online and cannot call out. Every text is
escaped by Jinja2's autoescape or by the Markdown renderer with raw HTML off
(:mod:`sessiontree.web.render`). The Markdown file escapes ``<``, ``>``, ``&`` and ``[`` in
message text (no markup, no link, no image) and puts tool arguments and outputs in code fences longer than any backtick run inside,
so nothing in a message can turn into markup in a Markdown viewer.

The Markdown export needs only the base install; the HTML export needs the ``web`` extra
(Jinja2, markdown-it-py) and says so with :class:`~sessiontree.errors.MissingExtraError`.
"""

from __future__ import annotations

import asyncio
import html
import os
import tempfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from sessiontree.errors import StorageError
from sessiontree.session import Session
from sessiontree.web import require_web
from sessiontree.web.render import Block, MessageView, environment, pretty_json
from sessiontree.web.tree import Fold, Row, whole_tree
from sessiontree.web.views import stats_view

__all__ = ["ExportFormat", "export_html", "export_markdown", "write_export"]

ExportFormat = Literal["html", "markdown"]

EXPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
"""The export's Content-Security-Policy: its own inline style and ``data:`` images only."""


async def export_html(session: Session, *, redact_tool_output: bool = False) -> str:
    """The whole session as one self-contained HTML document (every entry, every branch).

    Reads every entry once.

    Raises:
        MissingExtraError: the ``web`` extra (Jinja2, markdown-it-py) is not installed.
    """
    require_web()
    runs, count, id_len = await whole_tree(session, redacted=redact_tool_output)
    env = environment()
    page: str = env.get_template("export.html").render(
        sid=session.id,
        name=await session.get_name(),
        meta=await session.get_metadata(),
        leaf_id=await session.get_leaf_id(),
        tree_runs=runs,
        id_len=id_len,
        count=count,
        stats=await stats_view(session),
        redacted=redact_tool_output,
        csp=EXPORT_CSP,
        exported=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        path_known=True,
        write=False,
        csrf="",
    )
    return page


def _fence(text: str, info: str = "") -> str:
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _md_text(text: str) -> str:
    """Message text for Markdown: HTML special characters escaped, and ``[`` too, so no
    link or image (which a viewer would fetch) can be formed."""
    return html.escape(text, quote=False).replace("[", "\\[")


def _md_blocks(blocks: Iterable[Block], indent: str = "") -> list[str]:
    out: list[str] = []
    for b in blocks:
        if b.kind == "text":
            out.append(_md_text(b.text))
        elif b.kind == "thinking":
            out.append("> *thinking:* " + _md_text(b.text).replace("\n", "\n> "))
        elif b.kind == "image":
            out.append("*[inline image omitted]*")
        elif b.kind == "call" and b.call is not None:
            out.append(f"**→ tool call `{b.call.name}`** ({_md_text(b.call.id)})")
            out.append(_fence(pretty_json(b.call.arguments), "json"))
            if b.result is not None:
                out.append(f"**← {_md_text(b.result.title)}**")
                out.append(_fence("\n".join(x.text for x in b.result.blocks)))
        else:
            out.append(_fence(b.text))
    return [indent + part for part in out]


def _md_message(view: MessageView) -> list[str]:
    if view.role in ("toolResult", "bashExecution"):
        return [_fence("\n".join(b.text for b in view.blocks))]
    return _md_blocks(view.blocks)


def _md_row(r: Row) -> list[str]:
    marks = []
    if r.is_leaf:
        marks.append("**◀ leaf**")
    if r.label:
        marks.append(f"**[{_md_text(r.label)}]**")
    head = f"#### {_md_text(r.kind)} · `{r.id}`" + (" " + " ".join(marks) if marks else "")
    if r.message is None:
        return [head, _md_text(r.gist)]
    title = r.message.title if r.message.role in ("toolResult", "bashExecution") else ""
    return [head, *([_md_text(title)] if title else []), *_md_message(r.message)]


async def export_markdown(session: Session, *, redact_tool_output: bool = False) -> str:
    """The whole session as Markdown: each run of the tree a section, each entry a heading."""
    runs, count, _ = await whole_tree(session, redacted=redact_tool_output)
    name = await session.get_name()
    leaf = await session.get_leaf_id()
    parts = [
        f"# {_md_text(name or 'session')} `{session.id}`",
        f"{count:,} entries · leaf `{leaf or '-'}`"
        + (" · tool outputs redacted" if redact_tool_output else ""),
    ]
    for run in runs:
        where = f" `{run.parent_id}`" if run.parent_id else ""
        current = " (current branch)" if run.current else ""
        parts.append(f"{'#' * min(3, 2 + run.depth)} ⎇ {_md_text(run.head)}{where}{current}")
        for item in run.items:
            rows = item.rows if isinstance(item, Fold) else [item]
            for r in rows:
                parts.extend(_md_row(r))
    return "\n\n".join(parts) + "\n"


async def write_export(
    session: Session,
    path: Path,
    fmt: ExportFormat,
    *,
    redact_tool_output: bool = False,
    overwrite: bool = False,
) -> int:
    """Write the ``fmt`` export of ``session`` to ``path``; returns the bytes written.

    Written to a temporary file beside ``path`` and renamed into place (never half a file).

    Raises:
        StorageError: ``path`` exists and not ``overwrite``, or it cannot be written.
    """
    if fmt == "html":
        text = await export_html(session, redact_tool_output=redact_tool_output)
    else:
        text = await export_markdown(session, redact_tool_output=redact_tool_output)
    data = text.encode("utf-8")

    def write() -> None:
        if not overwrite and path.exists():
            raise StorageError(f"{path}: file exists (pass --force to replace it)")
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    try:
        await asyncio.to_thread(write)
    except OSError as exc:
        raise StorageError(f"{path}: cannot write the export: {exc}") from exc
    return len(data)
