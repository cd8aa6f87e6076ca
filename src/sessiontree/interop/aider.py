"""Aider chat histories (``.aider.chat.history.md``) → a session (docs/interop.md).

Aider appends every chat to one Markdown file:

* ``# aider chat started at YYYY-MM-DD HH:MM:SS`` opens a chat (local time, no zone; read as
  UTC). Each chat becomes its own root, so the file's chats are siblings, in file order.
* lines starting ``#### `` are what the user typed (a multi-line input: one such line each);
* lines starting ``> `` (or a lone ``>``) are console output: commands, warnings, errors,
  token reports. Each run of them becomes a ``custom`` entry ``aider:console`` (``data`` =
  ``{"text", "lines"}``) so nothing is lost and nothing reaches the model;
* everything else is the assistant's answer (Markdown; inside a ``` fence every line is
  the answer's). ``<thinking-content-…>`` sections become thinking blocks (an answer cut off
  mid-thought: the rest of it). An answer cut off (^C) inside a fence leaves the fence open:
  a line inside a fence that is written as only Aider writes user input — ``#### `` after a
  blank line and ending in Aider's two-space line break — closes the fence and is the user's
  (reported as a warning naming both lines).

The model is read from the chat's ``Model: <name> with <format> edit format`` (or ``Main
model:``) console line: ``lm_studio/qwen3`` → provider ``lm_studio``, model ``qwen3``. Every
entry of a chat carries the chat's start time. Entries keep their source lines as
``source = {"format": "aider", "line": first, "lastLine": last}``. The file names no session:
the session id is ``aider-<hash of the content>``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sessiontree.entries import Entry, MessageEntry
from sessiontree.ids import iso_from_ms
from sessiontree.interop._common import Converted, Draft, IdMaker, custom_draft, first_record
from sessiontree.interop.detect import strip_bom
from sessiontree.interop.report import ImportReport
from sessiontree.messages import (
    AssistantMessage,
    ContentBlock,
    TextContent,
    ThinkingContent,
    UserMessage,
)

__all__ = ["CHAT_STARTED", "convert_aider", "open_tail"]

CHAT_STARTED = "# aider chat started at "
"""The line that opens each chat of an Aider history."""
_USER = "#### "
_THINKING = re.compile(
    r"<thinking-content-([0-9a-f]+)>(.*?)(?:</thinking-content-\1>|\Z)", re.S
)  # an answer cut off (^C) mid-thought has no closing tag: the rest is thinking
_MODEL = re.compile(r"^(?:Main model|Model): (\S+)")


@dataclass
class _Run:
    kind: str  # "user", "console" or "assistant"
    first: int
    lines: list[str] = field(default_factory=list)
    last: int = 0


def _kind(line: str, in_fence: bool) -> str:
    if in_fence:
        return "assistant"
    if line.startswith(_USER) or line.rstrip() == "####":
        return "user"
    if line.startswith("> ") or line.rstrip() == ">":
        return "console"
    return "assistant"


def _strip(line: str, kind: str) -> str:
    text = line[2:] if kind == "console" else line[len(_USER) :] if kind == "user" else line
    # Aider ends its user and console lines with two spaces (a Markdown line break)
    return text.removesuffix("  ") if kind != "assistant" else text


def _answer_blocks(text: str) -> list[ContentBlock]:
    blocks: list[ContentBlock] = []
    pos = 0
    for m in _THINKING.finditer(text):
        before = text[pos : m.start()].strip()
        if before:
            blocks.append(TextContent(text=before))
        blocks.append(ThinkingContent(thinking=m.group(2).strip()))
        pos = m.end()
    rest = text[pos:].strip()
    if rest:
        blocks.append(TextContent(text=rest))
    return blocks


def _chat_ms(line: str, default: int) -> int:
    try:
        when = datetime.strptime(line[len(CHAT_STARTED) :].strip(), "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return default
    return int(when.replace(tzinfo=UTC).timestamp() * 1000)


def _user_input_line(line: str, previous: str) -> bool:
    """Whether ``line`` is written as Aider writes what the user typed: after a blank line,
    ``#### `` first and its two-space Markdown line break last (a code block rarely is)."""
    return not previous.strip() and line.startswith(_USER) and line.endswith("  ")


def _runs(text: str, report: ImportReport) -> list[tuple[int, str, list[_Run]]]:
    """``(line, header, runs)`` per chat; text before the first header is a chat of its own."""
    chats: list[tuple[int, str, list[_Run]]] = []
    runs: list[_Run] = []
    in_fence = False
    fence_line = 0  # where the open fence was opened
    previous = ""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # after the final newline: no line (else a file's last run took it)
    for number, line in enumerate(lines, 1):
        line = line.removesuffix("\r")
        line_before, previous = previous, line
        if in_fence and _user_input_line(line, line_before):
            in_fence = False
            report.warnings.append(
                f"line {number}: the code fence opened on line {fence_line} was never closed "
                "(the answer was cut off); it ends at this user line"
            )
        if not in_fence and line.startswith(CHAT_STARTED):
            runs = []
            chats.append((number, line, runs))
            continue
        if not chats:
            if not line.strip():
                continue
            chats.append((number, "", runs))
        kind = _kind(line, in_fence)
        if kind == "assistant" and line.lstrip().startswith("```"):
            in_fence, fence_line = not in_fence, number
        if not line.strip() and kind == "assistant" and (not runs or runs[-1].kind != "assistant"):
            continue  # a blank line between user or console runs
        if not runs or runs[-1].kind != kind:
            runs.append(_Run(kind, number))
        runs[-1].lines.append(_strip(line, kind))
        runs[-1].last = number
    return chats


def _model(runs: list[_Run]) -> tuple[str, str | None]:
    for run in runs:
        if run.kind != "console":
            continue
        for line in run.lines:
            m = _MODEL.match(line)
            if m:
                provider, _, model = m.group(1).rpartition("/")
                return provider or "aider", model
    return "aider", None


def convert_aider(
    data: bytes, path: Path, report: ImportReport, *, lenient: bool, mtime_ms: int = 0
) -> Converted:
    """Parse an Aider chat history into drafts and metadata. Pure, no I/O.

    ``mtime_ms`` (Unix ms) dates text before the first chat header. Every line is text, so
    nothing is unreadable (bytes that are not UTF-8 become U+FFFD, with a warning).
    """
    raw = strip_bom(data)
    text = raw.decode("utf-8", "replace")
    if "\ufffd" in text and "\ufffd" not in raw.decode("utf-8", "ignore"):
        report.warnings.append("bytes that are not UTF-8 were read as U+FFFD")
    out = Converted()
    ids = IdMaker(data)
    chats = _runs(text, report)
    report.lines_read = text.count("\n") + (0 if text.endswith("\n") else 1)
    last_message: str | None = None
    ms = mtime_ms
    for header_line, header, runs in chats:
        ms = _chat_ms(header, ms) if header else ms
        ts = iso_from_ms(ms)
        provider, model = _model(runs)
        parent: str | None = None
        if header:
            draft = custom_draft(
                report,
                "aider:chat_started",
                {"text": header},
                line=header_line,
                entry_id=ids.make(ms, header_line),
                timestamp=ts,
            )
            out.drafts.append(draft)
            parent = draft.entry.id
        for run in runs:
            entry_id = ids.make(ms, run.first)
            body = "\n".join(run.lines).strip("\n")
            source = {"format": "aider", "line": run.first, "lastLine": run.last}
            entry: Entry
            if run.kind == "console":
                data_: dict[str, Any] = {"text": body, **source}
                draft = custom_draft(
                    report,
                    "aider:console",
                    data_,
                    line=run.first,
                    entry_id=entry_id,
                    parent_id=parent,
                    timestamp=ts,
                )
                out.drafts.append(draft)
                parent = entry_id
                continue
            if run.kind == "user":
                message: Any = UserMessage(content=body, timestamp=ms)
            else:
                blocks = _answer_blocks(body)
                if not blocks:
                    continue
                fields: dict[str, Any] = {
                    "content": blocks,
                    "api": "aider",
                    "provider": provider,
                    "timestamp": ms,
                    "stop_reason": "stop",
                }
                if model is not None:
                    fields["model"] = model
                message = AssistantMessage(**fields)
            entry = MessageEntry(
                id=entry_id, parent_id=parent, timestamp=ts, message=message, source=source
            )
            out.drafts.append(Draft(entry, run.first))
            parent = entry_id
            last_message = entry_id
    out.leaf_id = last_message
    out.metadata = {"importedFrom": {"format": "aider", "path": str(path)}}
    # the history names no session: the id is the hash of its first line (the header of the
    # chat that started it), which stays the same as aider appends to the file
    out.session_id = "aider-" + hashlib.sha256(first_record(data)).hexdigest()[:32]
    return out


def open_tail(data: bytes) -> int:
    """Where the open turn of a history starts (bytes; ``len(data)`` when none is open), for
    :func:`sessiontree.interop.settling.settled`.

    Each line is read by what came before it (a fence, the line above), so a later line
    never changes the runs before the newest one; the newest run can still grow (more
    console output, the rest of a multi-line input, a reply's next lines) and is held back
    from its first line. A chat header with no run after it is settled; a file of blank
    lines is not (its first record, which names the session, is yet to come).
    """
    report = ImportReport(source_path=Path(), format="aider")  # its warnings are not wanted
    chats = _runs(strip_bom(data).decode("utf-8", "replace"), report)
    if not chats:
        return 0  # not a record yet: the first one names the session
    if not chats[-1][2]:
        return len(data)
    pos = len(data) - len(strip_bom(data))  # the byte-order mark
    for _ in range(chats[-1][2][-1].first - 1):
        pos = data.index(b"\n", pos) + 1
    return pos
