"""Hand a session to another agent: write it where that agent keeps its sessions (docs/interop.md).

:func:`handoff` writes the session in the agent's own format (:mod:`sessiontree.interop.export`
for Claude Code and Codex, the pi v3 file for pi) under a new session id of that agent's form,
in the directory the agent reads, and returns the command that resumes it:

===============  ==========================================================  ===========================
agent            file                                                        resume
===============  ==========================================================  ===========================
``claude-code``  ``$CLAUDE_CONFIG_DIR`` (``~/.claude``) ``/projects/<cwd,    ``claude --resume ID``
                 every character but ASCII letters and digits as "-">/ID.jsonl``  (run in the project)
``codex``        ``$CODEX_HOME`` (``~/.codex``) ``/sessions/YYYY/MM/DD/       ``codex resume ID``
                 rollout-YYYY-MM-DDThh-mm-ss-ID.jsonl`` (local time)
``pi``           ``$PI_CODING_AGENT_DIR`` (``~/.pi/agent``) ``/sessions/--<cwd   ``pi --session PATH``
                 without its first "/", "/" "\\" ":" as "-">--/<time>_ID.jsonl``
===============  ==========================================================  ===========================

The file points back to the session (``handedOffFrom``) and the session records the file in
a ``leaf`` entry that changes nothing in its tree (:mod:`sessiontree.interop.links`), so a
later ``sync`` or ``import`` of the file appends only the turns the agent added, to this
session or a fork of it at the hand-off entry.

The pi file ends on the session's leaf (pi continues from the last line; see
:func:`_pi_entries`). The file is written atomically (a temporary name, fsync, rename), never
over an existing file.
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from sessiontree.entries import CompactionEntry, Entry, LabelEntry, MessageEntry
from sessiontree.errors import InvalidArgumentError, StorageError
from sessiontree.ids import now_iso
from sessiontree.interop import convert
from sessiontree.interop._common import finalize
from sessiontree.interop.export import claude_code_transcript, codex_rollout
from sessiontree.interop.links import (
    POINTER_KEY,
    HandoffRecord,
    align_ids,
    pointer,
    record_entry,
)
from sessiontree.interop.pi import pi_file_bytes, write_atomic
from sessiontree.interop.report import ImportReport
from sessiontree.messages import AssistantMessage, Cost, Usage
from sessiontree.session import Session
from sessiontree.tree import leaf_of_log

__all__ = ["AGENTS", "Agent", "HandedOff", "agent_session_path", "handoff", "project_dir"]

Agent = Literal["claude-code", "codex", "pi"]
AGENTS: tuple[Agent, ...] = ("claude-code", "codex", "pi")
"""The agents a session can be handed to."""


@dataclass
class HandedOff:
    """Where a handed-off session was written and how to resume it."""

    agent: Agent
    """The agent it was written for."""
    path: Path
    """The session file written."""
    session_id: str
    """Its id in that agent's form."""
    resume: str
    """The shell command that continues it (run in ``cwd``)."""
    cwd: str
    """The project directory the agent resumes in."""
    not_carried: dict[str, int] = field(default_factory=dict)
    """What the agent's format could not carry (:attr:`Exported.not_carried`)."""


def _home(env: Mapping[str, str], var: str, default: str) -> Path:
    value = env.get(var)
    return Path(value) if value else Path(env.get("HOME") or Path.home()) / default


def agent_session_path(
    agent: Agent, session_id: str, cwd: str, when: datetime, env: Mapping[str, str]
) -> Path:
    """The file ``agent`` keeps session ``session_id`` of project ``cwd`` in (see the table
    above); ``when`` (aware) names Codex's date folders and pi's file, in local time."""
    local = when.astimezone()
    if agent == "claude-code":
        folder = re.sub(r"[^A-Za-z0-9]", "-", cwd)
        return (
            _home(env, "CLAUDE_CONFIG_DIR", ".claude") / "projects" / folder / f"{session_id}.jsonl"
        )
    if agent == "codex":
        day = local.strftime("%Y/%m/%d")
        stamp = local.strftime("%Y-%m-%dT%H-%M-%S")
        return (
            _home(env, "CODEX_HOME", ".codex")
            / "sessions"
            / day
            / f"rollout-{stamp}-{session_id}.jsonl"
        )
    folder = "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--"
    stamp = when.astimezone().isoformat(timespec="milliseconds").replace(":", "-").replace(".", "-")
    return (
        _home(env, "PI_CODING_AGENT_DIR", ".pi/agent")
        / "sessions"
        / folder
        / f"{stamp}_{session_id}.jsonl"
    )


def _zero_usage() -> Usage:
    """A usage of zero counts with every field written (pi reads each one)."""
    cost = Cost(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0, total=0.0)
    return Usage(input=0, output=0, cache_read=0, cache_write=0, total_tokens=0, cost=cost)


async def _pi_entries(session: Session) -> tuple[list[Entry], dict[str, int]]:
    """The session's entries as pi resumes them, and what was changed on the way.

    pi has no leaf pointer (it takes the file's last line as the leaf, walks its ``parentId``
    chain for the context and appends under it), so unless the last entry is the leaf itself
    a ``label`` entry under the leaf, restating its label, ends the file: pi and sessiontree
    both trace a path through a label entry, it changes no label, and sessiontree still reads
    the leaf from its ``leaf`` entries, which pi skips. pi reads the ``usage`` of every reply
    (it stops with a ``TypeError`` on one without), so a reply without one gets zero counts.

    Raises:
        InvalidArgumentError: the leaf is before the first entry (nothing to resume).
    """
    entries = list(await session.get_entries())
    leaf = await session.get_leaf_id()
    changed: dict[str, int] = {}
    entries = _tails_as_messages(entries, changed)
    for n, entry in enumerate(entries):
        if (
            isinstance(entry, MessageEntry)
            and isinstance(entry.message, AssistantMessage)
            and entry.message.usage is None
        ):
            message = entry.message.model_copy(update={"usage": _zero_usage()})
            entries[n] = entry.model_copy(update={"message": message})
            key = "replies without usage (written with zero counts)"
            changed[key] = changed.get(key, 0) + 1
    if not entries:
        return entries, changed
    if leaf is None:
        raise InvalidArgumentError(
            f"session {session.id}: the leaf is before the first entry: nothing to resume"
        )
    if entries[-1].id != leaf:
        label = await session.get_label(leaf)
        entries.append(LabelEntry(parent_id=leaf, target_id=leaf, label=label))
    return entries, changed


def _tails_as_messages(entries: list[Entry], changed: dict[str, int]) -> list[Entry]:
    """``entries`` with each retained-tail compaction written as pi reads one: pi keeps the
    messages from ``firstKeptEntryId`` and knows no ``retainedTail``, so the kept messages
    follow the compaction as message entries (ids derived from the compaction's) and what
    hung under the compaction hangs under the last of them. The context is the same for pi
    and for an import of the file: the summary, the kept messages, then what follows."""
    out: list[Entry] = []
    moved: dict[str, str] = {}  # compaction id -> the id of its last kept message
    for entry in entries:
        if entry.parent_id in moved:
            entry = entry.model_copy(update={"parent_id": moved[entry.parent_id]})
        if not isinstance(entry, CompactionEntry) or not entry.retained_tail:
            out.append(entry)
            continue
        out.append(entry.model_copy(update={"retained_tail": None, "first_kept_entry_id": None}))
        parent = entry.id
        for n, message in enumerate(entry.retained_tail):
            kept = MessageEntry(
                id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"sessiontree:{entry.id}:kept:{n}")),
                parent_id=parent,
                timestamp=entry.timestamp,
                message=message,
            )
            out.append(kept)
            parent = kept.id
        moved[entry.id] = parent
        key = "compactions keeping messages (written as messages after the compaction)"
        changed[key] = changed.get(key, 0) + 1
    return out


async def _record_ids(
    session: Session, agent: Agent, path: Path, data: bytes, leaf: str
) -> dict[str, str]:
    """The map of the session's :class:`~sessiontree.interop.links.HandoffRecord`: the ids an
    import of ``data`` (the file written to ``path``) gives its records → the session's
    entries they stand for (:func:`~sessiontree.interop.links.align_ids`)."""
    report = ImportReport(source_path=path, format=agent)
    converted = convert(data, path, agent, report)
    written = finalize(converted.drafts, report, path, lenient=False)
    by_id = {e.id for e in written}
    written_leaf = converted.leaf_id if converted.leaf_id in by_id else leaf_of_log(written)
    source = await session.get_branch(leaf)
    return align_ids(written, written_leaf, source, leaf)


def project_dir(path: str) -> str:
    """``path`` as the agents key their session folders: absolute (from the working
    directory), ``~`` expanded, normalised (no ``..``, no trailing ``/``)."""
    return os.path.normpath(os.path.abspath(os.path.expanduser(path)))


async def handoff(
    session: Session,
    agent: Agent,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
) -> HandedOff:
    """Write ``session`` where ``agent`` finds it, under a new id; return how to resume it.

    Args:
        session: the session to hand over (its context: the current branch after compaction).
        agent: ``claude-code``, ``codex`` or ``pi``.
        cwd: the project directory (default: the session's ``cwd``, else the working
            directory); made absolute and normalised (``~`` expanded, no trailing ``/``), as
            the agents key their session folders by it.
        env: the environment that locates the agent's directories (default ``os.environ``).

    The session gets one ``leaf`` entry recording the hand-off (its leaf stays where it is);
    when that append fails the file is removed again.

    Raises:
        InvalidArgumentError: the context has no message to resume (Claude Code, Codex), or
            the leaf is before the first entry (pi).
        StorageError: the file cannot be written, or the record cannot be stored.
    """
    env = os.environ if env is None else env
    metadata = await session.get_metadata()
    leaf = await session.get_leaf_id()
    if cwd is not None and not cwd.strip():
        raise InvalidArgumentError("cwd is empty: give the project directory, or leave it out")
    project = project_dir(cwd or metadata.cwd or os.getcwd())
    when = datetime.now().astimezone()
    not_carried: dict[str, int] = {}
    link = None if leaf is None else pointer(session.id, leaf)
    if agent == "pi":
        session_id = str(uuid.uuid4())
        entries, not_carried = await _pi_entries(session)
        data, _ = await pi_file_bytes(
            session,
            session_id=session_id,
            timestamp=now_iso(),
            cwd=project,
            entries=entries,
            extra=None if link is None else {POINTER_KEY: link},
        )
    else:
        context = await session.build_context()
        write = claude_code_transcript if agent == "claude-code" else codex_rollout
        exported = write(context, cwd=project, link=link)
        session_id, data, not_carried = exported.session_id, exported.data, exported.not_carried
    path = agent_session_path(agent, session_id, project, when, env)
    record = None  # an empty session (pi only) has nothing to continue
    if leaf is not None:
        ids = await _record_ids(session, agent, path, data, leaf)
        record = HandoffRecord(agent, session_id, str(path), leaf, ids)
    try:
        await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise StorageError(f"{path.parent}: cannot make the directory: {exc}") from exc
    await asyncio.to_thread(write_atomic, path, data, False)
    if record is not None:
        try:
            await session.storage.append_entries([record_entry(record)])
        except BaseException:
            path.unlink(missing_ok=True)  # no record, no file: the hand-off did not happen
            raise
    resume = {
        "claude-code": f"claude --resume {session_id}",
        "codex": f"codex resume {session_id}",
        "pi": f"pi --session {path}",
    }[agent]
    return HandedOff(agent, path, session_id, resume, project, not_carried)
