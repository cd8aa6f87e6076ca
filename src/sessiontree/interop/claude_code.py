"""Claude Code transcripts (``~/.claude/projects/<dir>/<session>.jsonl``) → a session (docs/interop.md).

Every line is a JSON object. Lines with a ``uuid`` are tree nodes linked by ``parentUuid``.
How they are imported (the messages themselves: :mod:`sessiontree.wire.claude_code`):

* ``user`` / ``assistant`` lines with a ``message`` become ``message`` entries; the entry id
  is the line's ``uuid``. A user line with ``tool_result`` blocks gives one ``toolResult``
  message per block; the extra entries get ids ``<uuid>:2``, ``<uuid>:3``, ... and the line's
  children hang under the last of them.
* One reply that Claude Code wrote over several ``assistant`` lines sharing ``message.id``
  (parallel tool calls, thinking then text) becomes one assistant message, with the id of its
  first line. The tool results of its calls follow it one after the other **in call order**
  (Claude Code writes parallel results in the order the tools finish), whichever line each
  names; a record that names any of them hangs under the last.
* Records are placed parents first: a line whose ``parentUuid`` names a line written later in
  the file (Claude Code writes an ``attachment`` before the tool result it hangs under) is
  placed right after that line, so the record it names stays on the branch.
* A ``system`` line of subtype ``compact_boundary`` becomes a ``compaction`` entry under its
  ``logicalParentUuid``; its summary is the text of the ``isCompactSummary`` user line that
  follows (that line is part of the compaction, not a message of its own).
* Every other line (``summary``, ``system``, ``attachment``, ``progress``, hook and
  ``file-history-snapshot`` lines, ``permission-mode``, ``ai-title``, ...) becomes a ``custom``
  entry of type ``claude-code:<type>`` whose ``data`` is the whole line. Such side records
  never fork the tree: each is chained after the newest record of its conversation in file
  order, and what would have hung under that record hangs under the side record instead.
* A ``parentUuid`` that names no line is re-attached to the nearest earlier record of the same
  conversation (main or sub-agent) in file order and reported; a record with no earlier
  record becomes a root.
* A second line with a ``uuid`` already used (Claude Code rewrites lines when a session is
  resumed) is kept whole as a ``claude-code:duplicate`` side record, with a warning.
* A record timestamp before 2000 (some snapshot records carry the Unix epoch) is replaced by
  the record's inner timestamp when it has one, else by the previous record's.
* The leaf is the newest message of the main conversation: side records and inline
  sub-agent (``isSidechain``) lines never end up as the leaf; when the file ends with one,
  a ``leaf`` entry moves the leaf back. A file made only of sidechain lines (a sub-agent's
  own ``agent-*.jsonl``) is its own main conversation.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from sessiontree.entries import CompactionEntry, Entry, MessageEntry, with_parent
from sessiontree.ids import iso_or, ms_or
from sessiontree.interop._common import Converted, Draft, IdMaker, Progress, custom_draft
from sessiontree.interop.jsonl_lines import line_objects, lines_backward, read_jsonl
from sessiontree.interop.links import POINTER_KEY
from sessiontree.interop.report import DanglingParent, ImportReport
from sessiontree.wire.claude_code import assistant_entry, line_record, user_entries

__all__ = ["convert_claude_code"]

_Y2000_MS = 946_684_800_000
_INNER_TIMES = ("snapshot", "data", "message", "attachment")
Row = tuple[int, dict[str, Any]]


def _uuid(obj: dict[str, Any]) -> str | None:
    value = obj.get("uuid")
    return value if isinstance(value, str) and value else None


def _record_ms(obj: dict[str, Any], previous: int) -> int:
    """The record's time (Unix ms): its ``timestamp``, else an inner one, else ``previous``."""
    ms = ms_or(obj.get("timestamp"), -1)
    if ms >= _Y2000_MS:
        return ms
    for key in _INNER_TIMES:
        inner = obj.get(key)
        if isinstance(inner, dict):
            ms = ms_or(inner.get("timestamp"), -1)
            if ms >= _Y2000_MS:
                return ms
    return previous


def _chain(obj: dict[str, Any]) -> tuple[bool, Any]:
    """Which conversation a record belongs to: the main one or a sub-agent's."""
    return obj.get("isSidechain") is True, obj.get("agentId")


def _is_message_line(obj: dict[str, Any]) -> bool:
    return obj.get("type") in ("user", "assistant") and isinstance(obj.get("message"), dict)


def _only_tool_results(obj: dict[str, Any]) -> bool:
    content = obj["message"].get("content") if _is_message_line(obj) else None
    return (
        obj.get("type") == "user"
        and isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _text_of(obj: dict[str, Any]) -> str:
    msg = obj.get("message")
    content = msg.get("content") if isinstance(msg, dict) else obj.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and "text" in b
        )
    return ""


class _Tree:
    """Where each record of the file hangs: the state of one pass in file order."""

    def __init__(self, rows: list[Row], report: ImportReport) -> None:
        self.report = report
        self.uuids = {u for _, o in rows if (u := _uuid(o)) is not None}
        self.entry_of: dict[str, str] = {}  # line uuid -> id of the last entry made from it
        self.after: dict[str, str] = {}  # entry id -> the side record chained after it
        self.chain_last: dict[tuple[bool, Any], str] = {}  # conversation -> newest entry
        self.anchor: str | None = None  # the newest entry in file order
        self.reply_of: dict[str, str] = {}  # uuid of a line of a multi-line reply -> reply id
        self.reply_tail: dict[str, str] = {}  # reply id -> newest entry of its results run
        self.tail_owner: dict[str, str] = {}  # an entry of a results run -> its reply id
        self.reply_entry: dict[str, str] = {}  # reply id -> the entry holding the reply

    def extend_reply(self, reply: str, entry_id: str) -> None:
        """``entry_id`` is now the newest entry of ``reply``'s run of tool results."""
        self.reply_tail[reply] = entry_id
        self.tail_owner[entry_id] = reply

    def follow(self, entry_id: str) -> str:
        """``entry_id``, or the newest side record chained after it."""
        seen = 0
        while entry_id in self.after and seen <= len(self.after):
            entry_id = self.after[entry_id]
            seen += 1
        return entry_id

    def resolve(self, parent_uuid: str) -> str:
        """The entry a record naming ``parent_uuid`` hangs under.

        A line of a multi-line reply, or one of its tool results, stands for the reply's whole
        run of results: the record hangs under the newest of them.
        """
        reply = self.reply_of.get(parent_uuid)
        entry = self.entry_of.get(parent_uuid)
        if reply is None and entry is not None:
            reply = self.tail_owner.get(entry)
        if reply is not None and reply in self.reply_tail:
            return self.follow(self.reply_tail[reply])
        return self.follow(entry) if entry is not None else parent_uuid  # a later line: sorted

    def parent_for(self, obj: dict[str, Any], line: int, uuid: str) -> str | None:
        raw = obj.get("parentUuid")
        if not isinstance(raw, str) or not raw:
            return None
        if raw in self.uuids:
            return self.resolve(raw)
        last = self.chain_last.get(_chain(obj))
        substitute = self.follow(last) if last is not None else None
        self.report.dangling_parents.append(
            DanglingParent(line, uuid, raw, "names no entry", attached_to=substitute)
        )
        return substitute

    def side_parent(self, obj: dict[str, Any]) -> str | None:
        """Where a side record goes: after the newest record of its conversation."""
        last = self.chain_last.get(_chain(obj)) if "isSidechain" in obj else None
        last = last if last is not None else self.anchor
        return self.follow(last) if last is not None else None

    def placed(self, obj: dict[str, Any], entry_id: str, *, side: bool, parent: str | None) -> None:
        """Note an entry made from ``obj`` (``{}`` for a record of no conversation)."""
        if side and parent is not None:
            self.after[parent] = entry_id
        self.anchor = entry_id
        if obj:
            self.chain_last[_chain(obj)] = entry_id


def _replies(rows: list[Row], duplicate_lines: set[int]) -> dict[str, list[Row]]:
    """``message.id`` → the assistant lines of that reply, for replies over several lines and
    for one-line replies with parallel calls (their results make a run in call order too)."""
    by_id: dict[str, list[Row]] = {}
    for line, obj in rows:
        msg = obj.get("message")
        if line in duplicate_lines or obj.get("type") != "assistant" or not isinstance(msg, dict):
            continue
        if _uuid(obj) is not None and isinstance(msg.get("id"), str):
            by_id.setdefault(msg["id"], []).append((line, obj))
    return {k: v for k, v in by_id.items() if len(v) > 1 or _calls(v[0][1]) > 1}


def _calls(obj: dict[str, Any]) -> int:
    """How many ``tool_use`` blocks an assistant line holds."""
    content = obj["message"].get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_use")


def _result_calls(obj: dict[str, Any]) -> list[str]:
    """The ``tool_use_id`` of each block of a line made only of tool results, else ``[]``."""
    if not _only_tool_results(obj):
        return []
    return [str(b.get("tool_use_id", "")) for b in obj["message"]["content"]]


def _parents_first(rows: list[Row], duplicate_lines: set[int]) -> list[Row]:
    """``rows`` in file order, except that a record naming a later line comes right after it.

    Records that wait on a record that never comes (a cycle of forward references) keep
    their file order at the end.
    """
    position: dict[str, int] = {}
    for i, (line, obj) in enumerate(rows):
        uuid = _uuid(obj)
        if uuid is not None and line not in duplicate_lines:
            position.setdefault(uuid, i)
    waiting: dict[str, list[Row]] = {}
    out: list[Row] = []
    for i, row in enumerate(rows):
        parent = row[1].get("parentUuid")
        if isinstance(parent, str) and position.get(parent, -1) > i:
            waiting.setdefault(parent, []).append(row)
            continue
        stack = [row]
        while stack:
            placed = stack.pop()
            out.append(placed)
            uuid = _uuid(placed[1])
            if uuid is not None and placed[0] not in duplicate_lines:
                stack.extend(reversed(waiting.pop(uuid, [])))
    out.extend(sorted((r for rs in waiting.values() for r in rs), key=lambda r: r[0]))
    return out


def _reply_calls(replies: dict[str, list[Row]]) -> dict[str, list[str]]:
    """``message.id`` of each reply → the ids of its tool calls, in call order."""
    return {
        message_id: [
            str(b.get("id", ""))
            for _, o in lines
            if isinstance(content := o["message"].get("content"), list)
            for b in content
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        for message_id, lines in replies.items()
    }


class _CallOwners:
    """Which reply a tool result answers: the newest reply before it that made a call of that
    id (agents and models reuse call ids across turns, so the first reply is not enough)."""

    def __init__(self, calls: dict[str, list[str]]) -> None:
        self.calls = calls
        self.latest: dict[str, tuple[str, int]] = {}  # call id -> (reply id, call position)

    def saw_reply(self, message_id: str) -> None:
        """A line of reply ``message_id`` was read: its calls are the newest of their ids."""
        for k, call_id in enumerate(self.calls.get(message_id, ())):
            self.latest[call_id] = (message_id, k)

    def saw_line(self, obj: dict[str, Any], message_id: str | None) -> None:
        """An assistant line was read: of reply ``message_id`` (a run), or, when ``None``, a
        reply of its own whose calls now answer their ids instead of any earlier run's."""
        if message_id is not None:
            self.saw_reply(message_id)
        elif obj.get("type") == "assistant" and isinstance(obj.get("message"), dict):
            content = obj["message"].get("content")
            for b in content if isinstance(content, list) else ():
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    self.latest.pop(str(b.get("id", "")), None)

    def of(self, obj: dict[str, Any]) -> tuple[str, int] | None:
        """``(reply id, first call position)`` of a results line answering one reply's calls."""
        found = [self.latest[c] for c in _result_calls(obj) if c in self.latest]
        if not found or len({reply for reply, _ in found}) != 1:
            return None
        return found[0][0], min(k for _, k in found)


def _results_in_call_order(
    rows: list[Row], replies: dict[str, list[Row]], calls: dict[str, list[str]]
) -> list[Row]:
    """``rows`` with the tool-result lines of each reply put in its call order.

    The result lines keep the places they had in ``rows``; only which result stands in which
    of those places changes.
    """
    reply_of_line = {line: mid for mid, lines in replies.items() for line, _ in lines}
    owners = _CallOwners(calls)
    groups: dict[str, list[tuple[int, int]]] = {}  # reply id -> (row index, call position)
    for i, (line, obj) in enumerate(rows):
        owners.saw_line(obj, reply_of_line.get(line))
        if line in reply_of_line:
            continue
        owner = owners.of(obj)
        if owner is not None:
            groups.setdefault(owner[0], []).append((i, owner[1]))
    out = list(rows)
    for members in groups.values():
        places = [i for i, _ in members]
        ordered = [rows[i] for i, _ in sorted(members, key=lambda m: m[1])]
        for i, row in zip(places, ordered, strict=True):
            out[i] = row
    return out


def _summaries(rows: list[Row]) -> dict[int, Row]:
    """Line of each ``compact_boundary`` → the ``isCompactSummary`` line that follows it."""
    out: dict[int, Row] = {}
    boundary: int | None = None
    for line, obj in rows:
        if obj.get("type") == "system" and obj.get("subtype") == "compact_boundary":
            boundary = line
        elif boundary is not None and obj.get("isCompactSummary") is True:
            out[boundary] = (line, obj)
            boundary = None
    return out


def convert_claude_code(
    data: bytes,
    path: Path,
    report: ImportReport,
    *,
    lenient: bool,
    progress: Progress | None = None,
) -> Converted:
    """Parse a Claude Code transcript into drafts and metadata. Pure, no I/O.

    Raises:
        CorruptSessionError: a line that is not a JSON object and not ``lenient``.
    """
    rows = list(read_jsonl(data, path, report, lenient=lenient, progress=progress))
    tool_names: dict[str, str] = {}
    seen: set[str] = set()
    duplicates: set[int] = set()
    first_node: dict[str, Any] | None = None
    for line, obj in rows:
        msg = obj.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        if obj.get("type") == "assistant" and isinstance(content, list):
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    tool_names[str(b.get("id", ""))] = str(b.get("name", ""))
        uuid = _uuid(obj)
        if uuid is not None:
            if uuid in seen:
                duplicates.add(line)
            seen.add(uuid)
            first_node = first_node or obj
    nodes = [obj for _, obj in rows if _uuid(obj) is not None]
    sidechain_only = bool(nodes) and all(obj.get("isSidechain") is True for obj in nodes)

    out = Converted()
    _fill_metadata(out, report, path, first_node, sidechain_only)
    summaries = _summaries(rows)
    rows = _parents_first(rows, duplicates)
    replies = _replies(rows, duplicates)
    calls = _reply_calls(replies)
    rows = _results_in_call_order(rows, replies, calls)
    owners = _CallOwners(calls)
    summary_lines = {line for line, _ in summaries.values()}
    tree = _Tree(rows, report)
    for message_id, lines in replies.items():
        for _, o in lines:
            tree.reply_of[o["uuid"]] = message_id

    ids = IdMaker(data)
    # records before the first dated one take the first date of the file
    last_ms = next((ms for _, o in rows if (ms := _record_ms(o, 0)) > 0), 0)
    main_leaf: str | None = None
    roots_seen = False
    for line, obj in rows:
        last_ms = _record_ms(obj, last_ms)
        ts = iso_or(last_ms, last_ms)
        kind = obj.get("type")
        uuid = _uuid(obj)
        custom_type = f"claude-code:{kind}"
        if line in duplicates:
            report.warnings.append(
                f"line {line}: uuid {uuid!r} was already used by an earlier line; "
                "this line is kept as a claude-code:duplicate custom entry"
            )
            uuid, custom_type = None, "claude-code:duplicate"
        if line in summary_lines:
            continue  # the summary of the compaction made from the boundary before it
        if uuid is None:
            parent = tree.side_parent({})
            draft = custom_draft(
                report,
                custom_type,
                obj,
                line=line,
                entry_id=ids.make(last_ms, line),
                parent_id=parent,
                timestamp=ts,
            )
            out.drafts.append(draft)
            tree.placed({}, draft.entry.id, side=True, parent=parent)
            continue

        reply_id = tree.reply_of.get(uuid)
        if line not in duplicates:
            owners.saw_line(obj, reply_id)
        if reply_id is not None and reply_id in tree.reply_entry:
            continue  # a later line of a reply already imported whole with its first line
        entries = _line_entries(obj, line, uuid, ts, last_ms, tool_names, replies, summaries)
        side = entries is None
        if entries is None:
            if kind in ("user", "assistant"):
                report.warnings.append(
                    f"line {line}: a {kind} line whose message could not be read as a message "
                    f"is kept as a custom entry"
                )
            entries = [
                custom_draft(report, custom_type, obj, line=line, entry_id=uuid, timestamp=ts).entry
            ]
        answered = owners.of(obj)
        run = answered[0] if answered is not None else None
        if isinstance(entries[0], CompactionEntry):
            logical = obj.get("logicalParentUuid")
            parent = tree.resolve(logical) if isinstance(logical, str) and logical else None
        elif run is not None and run in tree.reply_tail:
            # a result of a reply's calls joins the reply's run, whichever line it names
            parent = tree.follow(tree.reply_tail[run])
            raw = obj.get("parentUuid")
            if isinstance(raw, str) and raw and raw not in tree.uuids:
                report.dangling_parents.append(
                    DanglingParent(line, uuid, raw, "names no entry", attached_to=parent)
                )
        elif side and obj.get("parentUuid") in tree.uuids:
            parent = tree.side_parent(obj)
        else:
            parent = tree.parent_for(obj, line, uuid)
        if parent is None and not roots_seen and tree.anchor is not None:
            parent = tree.follow(tree.anchor)  # the side records before the first record
        roots_seen = True
        for i, entry in enumerate(entries):
            link = parent if i == 0 else entries[i - 1].id
            entry = with_parent(entry, link)
            entries[i] = entry
            out.drafts.append(Draft(entry, line))
        last_id = entries[-1].id
        tree.entry_of[uuid] = last_id
        if line in summaries:
            tree.entry_of[summaries[line][1].get("uuid", "")] = last_id
        if reply_id is not None:
            tree.reply_entry[reply_id] = last_id
            tree.extend_reply(reply_id, last_id)
        raw_parent = obj.get("parentUuid")
        owner = tree.reply_of.get(raw_parent) if isinstance(raw_parent, str) else None
        owner = owner or tree.tail_owner.get(parent or "")
        if owner is not None and _only_tool_results(obj):
            tree.extend_reply(owner, last_id)  # the results of a reply follow one another
        tree.placed(obj, last_id, side=side, parent=parent)
        is_main = sidechain_only or obj.get("isSidechain") is not True
        if is_main and isinstance(entries[-1], MessageEntry | CompactionEntry):
            main_leaf = last_id
    out.leaf_id = main_leaf
    return out


def _line_entries(
    obj: dict[str, Any],
    line: int,
    uuid: str,
    ts: str,
    ms: int,
    tool_names: dict[str, str],
    replies: dict[str, list[Row]],
    summaries: dict[int, Row],
) -> list[Entry] | None:
    """The entries of a message or compaction line, ``None`` when it is kept as custom."""
    kind = obj.get("type")
    if kind == "system" and obj.get("subtype") == "compact_boundary":
        return [_compaction(obj, line, uuid, ts, summaries.get(line))]
    msg = obj.get("message")
    if kind not in ("user", "assistant") or not isinstance(msg, dict):
        return None
    try:
        if kind == "user":
            return user_entries(obj, line, uuid, ts, ms, tool_names)
        lines = (
            replies.get(msg.get("id", ""), [(line, obj)])
            if isinstance(msg.get("id"), str)
            else [(line, obj)]
        )
        return [assistant_entry(lines, uuid, ts, ms)]
    except (ValidationError, ValueError, TypeError):
        return None


def _compaction(
    obj: dict[str, Any], line: int, uuid: str, ts: str, summary: Row | None
) -> CompactionEntry:
    meta = obj.get("compactMetadata")
    tokens = meta.get("preTokens") if isinstance(meta, dict) else None
    source = line_record(obj, line, drop=())
    text = _text_of(obj)
    if summary is not None:
        text = _text_of(summary[1]) or text
        source["merged"] = [line_record(summary[1], summary[0], drop=())]
    return CompactionEntry(
        id=uuid,
        timestamp=ts,
        summary=text,
        tokens_before=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else 0,
        retained_tail=[],
        source=source,
    )


def _fill_metadata(
    out: Converted,
    report: ImportReport,
    path: Path,
    first: dict[str, Any] | None,
    sidechain_only: bool,
) -> None:
    meta: dict[str, Any] = {}
    info: dict[str, Any] = {}
    if first is not None:
        if isinstance(first.get("cwd"), str):
            meta["cwd"] = first["cwd"]
        for key in ("sessionId", "version", "gitBranch", "agentId", "slug", "entrypoint"):
            if first.get(key) is not None:
                info[key] = first[key]
    session_id = info.get("sessionId")
    if isinstance(session_id, str):
        report.source_session_id = session_id
    agent = info.get("agentId")
    if sidechain_only and isinstance(agent, str):
        # a sub-agent's own file names its parent's session: keep both apart
        out.session_id = f"{session_id}-agent-{agent}" if session_id else f"agent-{agent}"
    elif isinstance(session_id, str):
        out.session_id = session_id
    elif _is_uuid(path.stem):
        # no line names the session yet (a file that holds only a summary or a snapshot so
        # far): Claude Code names the file after the session, so the file grows into the
        # same session when its first message comes
        out.session_id = path.stem
    if first is not None and isinstance(first.get(POINTER_KEY), dict):
        meta[POINTER_KEY] = first[POINTER_KEY]  # a session handed off to Claude Code
    meta["claudeCode"] = info
    meta["importedFrom"] = {"format": "claude-code", "path": str(path), "sessionId": session_id}
    out.metadata = meta


def _is_uuid(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text.lower()
    except ValueError:
        return False


def _is_prompt(obj: dict[str, Any], sidechain: bool) -> bool:
    """Whether a line is a prompt of the file's own conversation: a user line that holds no
    tool result and is not a compaction's summary."""
    if not _is_message_line(obj) or obj.get("type") != "user" or obj.get("isCompactSummary"):
        return False
    if (obj.get("isSidechain") is True) != sidechain:
        return False
    content = obj["message"].get("content")
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def open_tail(data: bytes) -> int:
    """Where the open turn of a transcript starts (bytes; ``len(data)`` when none is open),
    for :func:`sessiontree.interop.settling.settled`.

    A turn runs from a prompt to the next one: until then a later line can add a block to a
    reply or a result of its parallel calls. A turn is finished once its newest reply has
    ``stop_reason`` ``end_turn`` and a line of another kind follows that reply's lines; then
    everything up to that reply is settled, with the records without a ``uuid`` right after
    it (the other side records after it wait for the next turn). The conversation is the file's own: the main one, or a sub-agent's in its own
    ``agent-*.jsonl``. Records before the file's first dated one take that one's date, so
    none of them is settled while no dated record is.
    """
    cut = _open_turn(data)
    dated = next((end for _, end, obj in line_objects(data) if _record_ms(obj, 0) > 0), None)
    return cut if dated is not None and dated <= cut else 0


def _open_turn(data: bytes) -> int:
    """Where the open turn starts, by :func:`open_tail`'s rule of prompts and replies."""
    sidechain = next(
        (
            obj.get("isSidechain") is True
            for _, _, obj in line_objects(data)
            if _is_message_line(obj)
        ),
        False,
    )
    start = 0
    for begin, line in lines_backward(data):
        if b'"user"' not in line:
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and _is_prompt(obj, sidechain):
            start = begin
            break
    reply_end: int | None = None
    ended = follows = False
    settled = 0  # the reply's end, then past the records without a uuid right after it
    extending = False
    for _, end, obj in line_objects(data, start):
        if (
            _is_message_line(obj)
            and obj.get("type") == "assistant"
            and (obj.get("isSidechain") is True) == sidechain
        ):
            reply_end, ended, follows = end, obj["message"].get("stop_reason") == "end_turn", False
            settled, extending = end, True
        elif reply_end is not None:
            follows = True
            # a record without a uuid (cost-state, last-prompt, …) hangs under the record
            # before it: only earlier lines decide where, so it is settled with the reply
            if extending and _uuid(obj) is None and not _is_message_line(obj):
                settled = end
            else:
                extending = False
    return settled if reply_end is not None and ended and follows else start
