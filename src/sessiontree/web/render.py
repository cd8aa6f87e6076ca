"""Turning messages into safe HTML pieces: Markdown, images, tool calls beside their results.

Every string that reaches a page passes through one of two escapers: Jinja2's autoescape
(templates) or :func:`markdown_html`, whose renderer has raw HTML, links and images turned
off, so message text can never add markup, load a resource or point anywhere. Images are
shown only from the message's own base64 data, as ``data:`` URLs of raster types.

The views (:class:`MessageView`, :class:`Block`) need only the base install, so the Markdown
export works without the ``web`` extra; Jinja2 and markdown-it-py are imported by
:func:`environment` and :func:`markdown_html`, the two functions that make HTML.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from sessiontree import _json as exact_json
from sessiontree.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
)
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    message_text,
)

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markupsafe import Markup

__all__ = [
    "Block",
    "MessageView",
    "clip_view",
    "image_url",
    "markdown_html",
    "message_views",
    "pretty_json",
    "redact",
    "short_id",
]


@functools.cache
def _markdown() -> MarkdownIt:
    """CommonMark without raw HTML, links or images: text can format, never inject or fetch."""
    from markdown_it import MarkdownIt

    return MarkdownIt(
        "commonmark", {"html": False, "linkify": False, "typographer": False}
    ).disable(["image", "link", "autolink", "html_inline", "html_block"])


RASTER_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Image types shown inline (SVG is left out: it is a document that can carry script)."""
_BASE64 = re.compile(r"[A-Za-z0-9+/\s]*={0,2}\s*")


def markdown_html(text: str) -> Markup:
    """``text`` rendered as CommonMark (no raw HTML, links or images), as safe markup.

    Needs markdown-it-py (the ``web`` extra).
    """
    from markupsafe import Markup

    return Markup(_markdown().render(text))


def image_url(block: ImageContent) -> str | None:
    """A ``data:`` URL for an image block of a raster type with valid base64, else ``None``."""
    if block.mime_type not in RASTER_TYPES or not _BASE64.fullmatch(block.data):
        return None
    return f"data:{block.mime_type};base64,{''.join(block.data.split())}"


ID_SHOWN_MAX = 13
"""Longest unique id prefix shown as such; longer ones are shown as head…tail."""


def short_id(entry_id: str, unique: int) -> str:
    """``entry_id`` shortened for display: its first ``unique`` characters, or, when that is
    more than :data:`ID_SHOWN_MAX` (UUID v7 ids written in the same millisecond share long
    prefixes), the first 8 and the last 4 (the random end) around an ellipsis."""
    if unique <= ID_SHOWN_MAX or len(entry_id) <= ID_SHOWN_MAX:
        return entry_id[:unique]
    return f"{entry_id[:8]}…{entry_id[-4:]}"


def pretty_json(value: Any) -> str:
    """``value`` as indented JSON text (non-JSON values through ``str``)."""
    return exact_json.dumps(value, indent=True, default=str).decode()


@dataclass
class Block:
    """One piece of a message as shown: ``kind`` is text, code, thinking, image, call or other.

    ``text`` holds text/thinking (or the JSON of an unknown block); ``image`` a data URL;
    ``call`` and ``result`` a tool call and the result paired with it (``None`` if none).
    """

    kind: str
    text: str = ""
    image: str | None = None
    call: ToolCall | None = None
    result: MessageView | None = None
    clipped: int = 0
    """Characters of ``text`` left out by :func:`clip_view`."""


@dataclass
class MessageView:
    """A message as shown on a page: its role, a title line and its blocks."""

    role: str
    title: str
    blocks: list[Block] = field(default_factory=list)
    error: bool = False
    model: str | None = None
    usage: str | None = None
    """The provider's token report for the call that wrote the message (assistant only)."""
    tokens: int | None = None
    """The message's estimated size in the context (tokens), where a page shows it."""


REDACTED = "[tool output redacted: {n:,} characters]"


def redact(text: str) -> str:
    """The placeholder shown instead of a tool output of ``text``'s length."""
    return REDACTED.format(n=len(text))


def _content_blocks(content: Any, *, redacted: bool = False) -> list[Block]:
    if isinstance(content, str):
        return [Block("text", redact(content) if redacted else content)]
    out: list[Block] = []
    for b in content or []:
        if isinstance(b, TextContent):
            out.append(Block("text", redact(b.text) if redacted else b.text))
        elif isinstance(b, ThinkingContent):
            out.append(Block("thinking", b.thinking))
        elif isinstance(b, ImageContent):
            url = None if redacted else image_url(b)
            if url is None:
                out.append(Block("other", f"[image {b.mime_type}, {len(b.data):,} base64 chars]"))
            else:
                out.append(Block("image", image=url))
        elif isinstance(b, ToolCall):
            out.append(Block("call", call=b))
        else:
            wire = b.to_wire() if hasattr(b, "to_wire") else b
            out.append(Block("other", pretty_json(wire)))
    return out


def message_view(msg: AgentMessage, *, redacted: bool = False) -> MessageView:
    """One message as a :class:`MessageView` (tool outputs replaced when ``redacted``)."""
    role = str(getattr(msg, "role", "?"))
    if isinstance(msg, AssistantMessage):
        view = MessageView(role, "assistant", _content_blocks(msg.content))
        view.model = "/".join(p for p in (msg.provider, msg.model) if p) or None
        if msg.usage is not None and (msg.usage.input or msg.usage.output):
            u = msg.usage
            cost = f" · ${u.cost.total:,.4f}" if u.cost is not None and u.cost.total else ""
            view.usage = f"call: {u.input:,} in · {u.output:,} out{cost}"
        if msg.error_message:
            view.error = True
            view.blocks.append(Block("text", f"[{msg.stop_reason}] {msg.error_message}"))
        return view
    if isinstance(msg, ToolResultMessage):
        title = f"{msg.tool_name or 'tool'} result" + (" (error)" if msg.is_error else "")
        view = MessageView(role, title, _content_blocks(msg.content, redacted=redacted))
        view.error = msg.is_error
        return view
    if isinstance(msg, BashExecutionMessage):
        code = "" if msg.exit_code is None else f" (exit {msg.exit_code})"
        out = redact(msg.output) if redacted else msg.output
        return MessageView(role, f"$ {msg.command}{code}", [Block("code", out)])
    content = getattr(msg, "content", None)
    if content is not None and not isinstance(msg, ToolResultMessage):
        title = role if role != "custom" else f"custom [{getattr(msg, 'custom_type', '')}]"
        return MessageView(role, title, _content_blocks(content))
    text = message_text(msg)
    titles = {"compactionSummary": "compaction summary", "branchSummary": "branch summary"}
    return MessageView(role, titles.get(role, role), [Block("text", text)])


def clip_view(view: MessageView, limit: int) -> MessageView:
    """Cut every text of ``view`` (and of the results beside its calls) to ``limit``
    characters, in place, recording what was left out in :attr:`Block.clipped`."""
    for block in view.blocks:
        if len(block.text) > limit:
            block.clipped = len(block.text) - limit
            block.text = block.text[:limit]
        if block.result is not None:
            clip_view(block.result, limit)
    return view


def message_views(
    messages: Sequence[AgentMessage], *, redacted: bool = False, pair: bool = True
) -> list[MessageView]:
    """Messages as views, each tool result placed beside the call it answers.

    A result pairs with the nearest earlier call of its ``toolCallId`` that has none yet;
    paired results are not listed again on their own. Results with no call stay in place.
    """
    views = [message_view(m, redacted=redacted) for m in messages]
    if not pair:
        return views
    open_calls: dict[str, list[Block]] = {}
    shown: list[MessageView] = []
    for msg, view in zip(messages, views, strict=True):
        if isinstance(msg, ToolResultMessage):
            waiting = open_calls.get(msg.tool_call_id)
            if waiting:
                waiting.pop().result = view
                continue
        for block in view.blocks:
            if block.kind == "call" and block.call is not None:
                open_calls.setdefault(block.call.id, []).append(block)
        shown.append(view)
    return shown


def entry_message(entry: Entry) -> AgentMessage | None:
    """The message an entry shows (a message, a custom message, a summary), else ``None``."""
    if isinstance(entry, MessageEntry):
        return entry.message
    if isinstance(entry, CustomMessageEntry):
        return CustomMessage(
            custom_type=entry.custom_type, content=entry.content, display=entry.display
        )
    if isinstance(entry, CompactionEntry):
        return CompactionSummaryMessage(summary=entry.summary, tokens_before=entry.tokens_before)
    if isinstance(entry, BranchSummaryEntry):
        return BranchSummaryMessage(summary=entry.summary, from_id=entry.from_id)
    return None


def environment() -> Any:
    """The Jinja2 environment of the pages and the export: autoescape on for every template,
    with the ``markdown`` and ``tojson_pretty`` filters and the inline ``css``.

    Needs Jinja2 and markdown-it-py (the ``web`` extra).
    """
    from jinja2 import Environment, PackageLoader, StrictUndefined
    from markupsafe import Markup

    env = Environment(
        loader=PackageLoader("sessiontree.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=False,
    )
    env.filters["markdown"] = markdown_html
    env.filters["tojson_pretty"] = pretty_json
    env.filters["short_id"] = short_id
    env.globals["css"] = Markup(
        files("sessiontree.web").joinpath("templates/style.css").read_text("utf-8")
    )
    return env
