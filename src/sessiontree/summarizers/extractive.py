"""``ExtractiveSummarizer``: an offline, deterministic summariser, the default (docs/compaction.md).

No model is called. The summary is assembled from the messages themselves in the structured
layout of :data:`~sessiontree.summarizers.base.SUMMARY_SECTIONS`:

* **Goal** — the first user requests;
* **Constraints** — sentences in which the user states a rule (*must*, *never*, *don't*,
  *only*, *always*, ...), from the user's own words only: text pasted into a user message
  (code blocks, JSON, logs, error messages) and tool output never count;
* **Progress** — every tool call with its outcome: *Done* (a result), *Blocked* (an error
  result or a failed shell command), *In progress* (no result yet);
* **Key decisions** — assistant sentences that commit to a course (*I'll*, *let's*,
  *instead*, *decided*, ...);
* **Next steps** — the last user request and the tool calls still open;
* **Critical context** — model errors, earlier summaries inside the messages, the latest
  assistant answer;
* **Files** — files read and modified (tool calls ``read``, ``write``, ``edit``).

Given a ``previous_summary`` it parses its sections and merges the new items into them (an
iterative update, not a re-summary); text of another layout is kept under *Critical context*.
The result is trimmed to ``max_tokens``: every item list is capped at the same number of
items (the largest that fits), keeping items that mention a word of the ``instructions`` first,
then the newest (the oldest for *Goal*, the original request); the number of dropped items is
written in their place, so nothing disappears silently. *Goal*, *Next steps*, *In progress*
and the modified files are capped only when the rest alone cannot make room.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sessiontree import _json as exact_json
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from sessiontree.summarizers.base import (
    SUMMARY_SECTIONS,
    TURN_PREFIX_SEPARATOR,
    SummaryPurpose,
    SummaryResult,
    file_operations,
)

__all__ = ["ExtractiveSummarizer"]

_PROGRESS_PARTS = ("Done", "In progress", "Blocked")
_FILE_PARTS = ("Read", "Modified")
_NONE = "(none)"

_CONSTRAINT_RE = re.compile(
    r"\b(must|must not|never|don'?t|do not|only|always|should not|shouldn'?t|avoid|"
    r"make sure|ensure|without|required?|no more than|at most|at least)\b",
    re.IGNORECASE,
)
_DECISION_RE = re.compile(
    r"\b(i'?ll|i will|we'?ll|we will|decided|decision|instead|going to|switch(ed)? to|"
    r"chose|choose|use .+ rather than|plan is)\b",
    re.IGNORECASE,
)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_OMITTED_RE = re.compile(r"… (\d+) earlier item\(s\) omitted")
_COMMAND_RE = re.compile(r"/[A-Za-z][\w-]*")  # a bare slash command such as ``/mode``
_WORD_RE = re.compile(r"[A-Za-z0-9_./-]{4,}")
_FENCE_RE = re.compile(r"^\s*(```|~~~).*?(^\s*\1[^\n]*$|\Z)", re.MULTILINE | re.DOTALL)
_PARAGRAPH_RE = re.compile(r"\n\s*\n")
# Marks of pasted machine text (JSON, logs, error messages, tracebacks, shell/REPL lines,
# quotes): a user's paragraph with one of them is not the user's own words.
_PASTED_RE = re.compile(
    r"\{\"|\"\s*:\s*[\[{\"\d]|^\s*[\[{<>|]|Traceback \(most recent call last\)|"
    r"^\s*at \S+ \(|^\s*File \"|\b[A-Z]\w*(Error|Exception)\b\s*:|\b(error|warning)\s*:|"
    r"^\s*(\$|>>>|#!) |^\s*\d{4}-\d\d-\d\d[ T]\d\d:",
    re.MULTILINE | re.IGNORECASE,
)

_GOAL_COUNT = 3
_PROTECTED = frozenset({"Goal", "Next steps", "Progress/In progress", "Files/Modified"})
_ITEM_CHARS = 240
_ARG_CHARS = 80


def _clip(text: str, limit: int = _ITEM_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _sentences(text: str) -> list[str]:
    out = []
    for piece in _SENTENCE_RE.split(text):
        sentence = piece.strip().lstrip("-*• ").strip() if piece else ""
        if sentence:
            out.append(sentence)
    return out


def _user_prose(text: str) -> str:
    """What the user wrote themselves in ``text``: fenced blocks, indented blocks and
    paragraphs carrying pasted machine text (JSON, logs, error messages, tracebacks, quotes)
    are dropped, so a pasted API error is never read as the user's rule."""
    text = _FENCE_RE.sub("\n\n", text)
    kept = []
    for paragraph in _PARAGRAPH_RE.split(text):
        lines = [line for line in paragraph.splitlines() if line.strip()]
        if not lines or _PASTED_RE.search(paragraph):
            continue
        if all(line[:1] in (" ", "\t") for line in lines):  # an indented (code/output) block
            continue
        kept.append(paragraph)
    return "\n\n".join(kept)


def _describe_call(name: str, arguments: dict[str, Any]) -> str:
    for key in ("path", "file_path", "command", "cmd", "pattern", "query", "url"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return f"{name} `{_clip(value, _ARG_CHARS)}`"
    if not arguments:
        return f"{name}()"
    return f"{name} {_clip(exact_json.dumps(arguments, default=str).decode(), _ARG_CHARS)}"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


@dataclass
class _Sections:
    """Items per section; Progress and Files have named parts."""

    items: dict[str, list[str]] = field(
        default_factory=lambda: {name: [] for name in SUMMARY_SECTIONS}
    )
    progress: dict[str, list[str]] = field(
        default_factory=lambda: {part: [] for part in _PROGRESS_PARTS}
    )
    files: dict[str, list[str]] = field(default_factory=lambda: {part: [] for part in _FILE_PARTS})
    omitted: dict[str, int] = field(default_factory=dict)

    def lists(self) -> list[tuple[str, list[str]]]:
        """Every item list by key (``Section`` or ``Section/Part``), in layout order."""
        out: list[tuple[str, list[str]]] = []
        for name in SUMMARY_SECTIONS:
            if name == "Progress":
                out.extend((f"Progress/{p}", self.progress[p]) for p in _PROGRESS_PARTS)
            elif name == "Files":
                out.extend((f"Files/{p}", self.files[p]) for p in _FILE_PARTS)
            else:
                out.append((name, self.items[name]))
        return out


class _Adder:
    """Appends an item to an item list unless it is already there, in O(1).

    ``item in list`` is O(n), which made extraction quadratic in the number of messages; the
    adder keeps a set per list (by identity, holding the list so the id is not reused).
    """

    def __init__(self) -> None:
        self._seen: dict[int, tuple[list[str], set[str]]] = {}

    def __call__(self, target: list[str], item: str) -> None:
        item = item.strip()
        if not item or item == _NONE:
            return
        known = self._seen.get(id(target))
        if known is None or known[0] is not target:
            known = (target, set(target))
            self._seen[id(target)] = known
        if item not in known[1]:
            known[1].add(item)
            target.append(item)

    def forget(self, target: list[str]) -> None:
        """Call after changing ``target`` other than through the adder."""
        self._seen.pop(id(target), None)


def _parse(summary: str) -> _Sections:
    """Read a summary in the structured layout back into sections (for an iterative update).

    Several parts joined by :data:`TURN_PREFIX_SEPARATOR` merge into one; text outside the
    known sections goes to *Critical context*.
    """
    out = _Sections()
    _add = _Adder()
    for part in summary.split(TURN_PREFIX_SEPARATOR):
        section: str | None = None
        foreign: str | None = None  # a heading of another layout, kept as a label
        sub: str | None = None
        for raw in part.splitlines():
            line = raw.strip()
            if not line or line.startswith("<!--"):
                continue
            if line.startswith("```"):
                continue
            if line.startswith("## "):
                name = line[3:].strip()
                section = name if name in SUMMARY_SECTIONS else None
                foreign = None if section else name
                sub = None
                continue
            if line.startswith("### "):
                sub = line[4:].strip()
                continue
            if line.startswith("#"):
                continue
            text = line[2:] if line.startswith(("- ", "* ")) else line
            omitted = _OMITTED_RE.fullmatch(text)
            if omitted and section is not None:
                key = f"{section}/{sub}" if section in ("Progress", "Files") else section
                out.omitted[key] = out.omitted.get(key, 0) + int(omitted.group(1))
                continue
            if section == "Progress" and sub in _PROGRESS_PARTS:
                _add(out.progress[sub], text)
            elif section == "Files" and sub in _FILE_PARTS:
                _add(out.files[sub], text.strip("`"))
            elif section is not None and section not in ("Progress", "Files"):
                _add(out.items[section], text)
            else:
                label = f"{foreign}/{sub}" if foreign and sub else foreign or sub
                _add(out.items["Critical context"], _clip(f"{label}: {text}" if label else text))
    return out


class ExtractiveSummarizer:
    """Offline, deterministic :class:`~sessiontree.summarizers.base.Summarizer` (docs/compaction.md).

    Args:
        max_tokens: budget of the summary text (tokens, estimated as characters / 4).

    The same input always gives the same text; ``usage`` is ``None`` (no model was called).
    """

    def __init__(self, max_tokens: int = 2000) -> None:
        if max_tokens < 64:
            raise ValueError("max_tokens must be at least 64")
        self.max_tokens = max_tokens

    def __repr__(self) -> str:
        return f"ExtractiveSummarizer(max_tokens={self.max_tokens})"

    async def summarize(
        self,
        messages: Sequence[AgentMessage],
        *,
        previous_summary: str | None,
        instructions: str | None,
        purpose: SummaryPurpose,
    ) -> SummaryResult:
        """Summarise ``messages`` (oldest first), merged into ``previous_summary`` when given.

        ``instructions`` (free text) rank items: those mentioning one of its words are the
        last to be dropped by the budget. Every ``purpose`` gets the same layout (the caller
        knows what it asked for; a split turn's parts are joined by the compaction).
        """
        return SummaryResult(self.summarize_sync(messages, previous_summary, instructions, purpose))

    def summarize_sync(
        self,
        messages: Sequence[AgentMessage],
        previous_summary: str | None = None,
        instructions: str | None = None,
        purpose: SummaryPurpose = "compaction",
    ) -> str:
        """The summary text; what :meth:`summarize` returns, without the event loop."""
        sections = _parse(previous_summary) if previous_summary else _Sections()
        self._extract(messages, sections)
        return self._render(sections, purpose, instructions)

    # ------------------------------------------------------------------ extraction

    def _extract(self, messages: Sequence[AgentMessage], out: _Sections) -> None:
        results: dict[str, ToolResultMessage] = {}
        for msg in messages:
            if isinstance(msg, ToolResultMessage):
                results.setdefault(msg.tool_call_id, msg)
        _add = _Adder()
        user_texts: list[str] = []
        last_assistant_text = ""
        open_calls: list[str] = []
        for msg in messages:
            if isinstance(msg, UserMessage):
                text = message_text(msg).strip()
                if text and not _COMMAND_RE.fullmatch(text):
                    user_texts.append(text)
                    for sentence in _sentences(_user_prose(text)):
                        if _CONSTRAINT_RE.search(sentence) and not sentence.endswith("?"):
                            _add(out.items["Constraints"], _clip(sentence))
            elif isinstance(msg, AssistantMessage):
                text = message_text(msg).strip()
                if text:
                    last_assistant_text = text
                    for sentence in _sentences(text):
                        if (
                            _DECISION_RE.search(sentence)
                            and len(sentence) > 20
                            and not sentence.endswith(":")  # narration before a tool call
                        ):
                            _add(out.items["Key decisions"], _clip(sentence))
                if msg.stop_reason in ("error", "aborted") or msg.error_message:
                    reason = msg.error_message or msg.stop_reason or "error"
                    _add(out.items["Critical context"], _clip(f"Model call failed: {reason}"))
                for call in msg.tool_calls():
                    what = _describe_call(call.name, call.arguments)
                    result = results.get(call.id)
                    if result is None:
                        open_calls.append(what)
                        _add(out.progress["In progress"], what)
                    elif result.is_error:
                        err = _first_line(message_text(result)) or "error"
                        _add(out.progress["Blocked"], _clip(f"{what}: {err}"))
                    else:
                        _add(out.progress["Done"], what)
            elif isinstance(msg, BashExecutionMessage):
                what = f"shell `{_clip(msg.command, _ARG_CHARS)}`"
                if msg.cancelled:
                    _add(out.progress["Blocked"], f"{what}: cancelled")
                elif msg.exit_code not in (None, 0):
                    err = _first_line(msg.output)
                    _add(out.progress["Blocked"], _clip(f"{what}: exit {msg.exit_code} {err}"))
                else:
                    _add(out.progress["Done"], what)
            elif isinstance(msg, BranchSummaryMessage | CompactionSummaryMessage):
                kind = "Abandoned branch" if isinstance(msg, BranchSummaryMessage) else "Summary"
                for line in msg.summary.splitlines():
                    line = line.strip().lstrip("-* ").strip()
                    if line and not line.startswith(("#", "<!--")) and line != _NONE:
                        _add(out.items["Critical context"], _clip(f"{kind}: {line}"))
            elif isinstance(msg, CustomMessage):
                text = message_text(msg).strip()
                if text:
                    _add(out.items["Critical context"], _clip(f"[{msg.custom_type}] {text}"))
        # The first requests are the goal; later ones (or all, once a goal is known from the
        # previous summary) are kept as context, the newest also as the next step.
        room = 0 if out.items["Goal"] else _GOAL_COUNT
        for text in user_texts[:room]:
            _add(out.items["Goal"], _clip(text))
        for text in user_texts[room:-1]:
            _add(out.items["Critical context"], _clip(f"User asked: {text}"))
        if user_texts or open_calls:
            out.items["Next steps"] = []
            if user_texts:
                _add(out.items["Next steps"], _clip(f"Latest user request: {user_texts[-1]}"))
            for what in open_calls:
                _add(out.items["Next steps"], f"Awaiting the result of {what}")
        # A call that finished in these messages is no longer in progress.
        # ``i`` is blocked when a Blocked item starts with ``f"{i}: "``: collect every such
        # prefix once (a scan of Blocked per item was quadratic).
        done = set(out.progress["Done"])
        for b in out.progress["Blocked"]:
            at = b.find(": ")
            while at != -1:
                done.add(b[:at])
                at = b.find(": ", at + 1)
        out.progress["In progress"] = [i for i in out.progress["In progress"] if i not in done]
        if last_assistant_text:
            ctx = out.items["Critical context"]
            ctx[:] = [i for i in ctx if not i.startswith("Latest answer: ")]  # superseded
            _add.forget(ctx)
            _add(ctx, _clip(f"Latest answer: {last_assistant_text}", 400))
        read, modified = file_operations(messages, out.files["Read"], out.files["Modified"])
        out.files["Read"], out.files["Modified"] = read, modified

    # ------------------------------------------------------------------ rendering

    def _render(
        self, sections: _Sections, purpose: SummaryPurpose, instructions: str | None
    ) -> str:
        """Render within ``max_tokens``: every list (the protected ones only if needed) is capped
        at the same number of items ``n`` (the largest that fits, found by bisection), keeping the items that mention an
        instruction keyword, then the newest (for *Goal*: the oldest); dropped items are
        counted in their place. If even ``n = 1`` is too long, items are shortened and finally
        the text is cut."""
        keywords = {w.lower() for w in _WORD_RE.findall(instructions or "")}
        budget_chars = self.max_tokens * 4
        text = self._text(sections, purpose)
        if len(text) <= budget_chars:
            return text

        def important(item: str) -> bool:
            low = item.lower()
            return any(k in low for k in keywords)

        # The keeping order of every list, ranked once (not once per bisection step).
        ranked: dict[str, list[int]] = {}
        for key, items in sections.lists():
            order = list(range(len(items)))
            if key != "Goal":
                order.reverse()  # newest first
            if keywords:  # those mentioning a keyword first, each group in its order
                flags = [important(item) for item in items]
                order = [i for i in order if flags[i]] + [i for i in order if not flags[i]]
            ranked[key] = order

        def capped(n: int, protected: frozenset[str]) -> _Sections:
            out = _Sections(omitted=dict(sections.omitted))
            capped_lists = dict(out.lists())
            for key, items in sections.lists():
                if key in protected:
                    capped_lists[key][:] = items
                    continue
                keep = sorted(ranked[key][:n])
                capped_lists[key][:] = [items[i] for i in keep]
                dropped = len(items) - len(keep)
                if dropped:
                    out.omitted[key] = out.omitted.get(key, 0) + dropped
            return out

        longest = max(len(items) for _, items in sections.lists())

        def fit(protected: frozenset[str]) -> tuple[_Sections, bool]:
            best, lo, hi = capped(1, protected), 1, longest
            fits = len(self._text(best, purpose)) <= budget_chars
            while fits and lo <= hi:
                mid = (lo + hi) // 2
                candidate = capped(mid, protected)
                if len(self._text(candidate, purpose)) <= budget_chars:
                    best, lo = candidate, mid + 1
                else:
                    hi = mid - 1
            return best, fits

        # What is open and what was changed are capped only when nothing else helps.
        best, fits = fit(_PROTECTED)
        if not fits:
            best, _ = fit(frozenset())
        text = self._text(best, purpose)
        if len(text) > budget_chars:
            for _, items in best.lists():
                items[:] = [_clip(i, 80) for i in items]
            text = self._text(best, purpose)
            if len(text) > budget_chars:
                text = text[: budget_chars - 1].rstrip() + "…"
        return text

    @staticmethod
    def _text(sections: _Sections, purpose: SummaryPurpose) -> str:
        lines: list[str] = []
        lists = dict(sections.lists())

        def emit(key: str) -> None:
            items = lists[key]
            omitted = sections.omitted.get(key, 0)
            if omitted:
                lines.append(f"- … {omitted} earlier item(s) omitted")
            if not items and not omitted:
                lines.append(f"- {_NONE}")
            fmt = "- `{}`" if key.startswith("Files/") else "- {}"
            lines.extend(fmt.format(i) for i in items)

        for name in SUMMARY_SECTIONS:
            if lines:
                lines.append("")
            lines.append(f"## {name}")
            if name == "Progress":
                for part in _PROGRESS_PARTS:
                    lines.append(f"### {part}")
                    emit(f"Progress/{part}")
            elif name == "Files":
                for part in _FILE_PARTS:
                    lines.append(f"### {part}")
                    emit(f"Files/{part}")
            else:
                emit(name)
        return "\n".join(lines) + "\n"
