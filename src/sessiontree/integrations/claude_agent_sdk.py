"""The Claude Agent SDK ``SessionStore`` over a sessiontree repository.

``ClaudeAgentOptions(session_store=SessionTreeStore(url="postgresql://…"))`` mirrors every
transcript the ``claude`` CLI writes into sessiontree. Each store key (``project_key``,
``session_id``, optional ``subpath``) is one sessiontree session, id ``claude-<sha256 of the
key>``, with the key in its metadata (``claudeProjectKey``, ``claudeSessionId``,
``claudeSubpath``), so listing a project is ``repo.list(where=...)``, indexed on SQL.

Each transcript line is one entry that keeps the line verbatim under the entry key
``claudeLine`` (so :meth:`SessionTreeStore.load` returns lines deep-equal to those appended),
and the entries form the transcript's own tree: a line's ``uuid`` is the entry id, its
``parentUuid`` the entry's parent. A ``user`` or ``assistant`` line becomes a ``message``
entry (text, thinking, tool calls; a user line holding one tool result a ``toolResult``),
so ``sessiontree show``, ``search`` and fork read it; any other line a ``custom`` entry of
type ``claude_code.<type>``. A line whose ``uuid`` is already stored is skipped (the SDK
retries batches; ``uuid`` is its idempotency key); a line without one gets a new id and
hangs under the previous line.

``list_session_summaries`` folds each session's lines with the SDK's own
``fold_session_summary`` when asked (the fold is deterministic, so this equals a persisted
sidecar) and stamps ``mtime`` with the session's modification time, the clock
``list_sessions`` uses.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sessiontree.entries import CustomEntry, Entry, MessageEntry
from sessiontree.errors import DuplicateEntryError, InvalidEntryError, SessionNotFoundError
from sessiontree.ids import entry_id_problem, iso_or, ms_or, new_id, now_ms
from sessiontree.integrations._common import (
    LoopLocks,
    RepoHandle,
    adapter_scope,
    check_batch,
    import_extra,
    open_or_create,
)
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ToolResultMessage,
    UserMessage,
)
from sessiontree.metadata import SessionInfo
from sessiontree.repos import Scope, SessionRepo
from sessiontree.session import Session
from sessiontree.wire.claude_code import block as _block
from sessiontree.wire.claude_code import result_content as _result_content

import_extra("claude_agent_sdk", "claude-agent-sdk")

if TYPE_CHECKING:
    from claude_agent_sdk.types import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )

    from sessiontree.sync import SyncRepo

__all__ = ["LINE_KEY", "SessionTreeStore", "store_session_id"]

LINE_KEY = "claudeLine"
"""The entry key holding the transcript line exactly as appended."""

PROJECT_KEY = "claudeProjectKey"
SESSION_KEY = "claudeSessionId"
SUBPATH_KEY = "claudeSubpath"


def store_session_id(key: Mapping[str, Any], scope: Scope | None = None) -> str:
    """The sessiontree session id of a store key: ``claude-`` + 40 hex digits of SHA-256
    (of the scope too when given: two users' keys never name one session).

    Raises:
        InvalidEntryError: ``project_key`` or ``session_id`` missing or not a string.
    """
    project, session = key.get("project_key"), key.get("session_id")
    subpath = key.get("subpath") or ""
    if not isinstance(project, str) or not isinstance(session, str) or not isinstance(subpath, str):
        raise InvalidEntryError(f"not a Claude session store key: {dict(key)!r}")
    parts: tuple[str, ...] = (project, session, subpath)
    if scope is not None:
        parts = (*parts, *(f"{k}={v}" for k, v in scope.where().items()))
    raw = "\x00".join(parts).encode("utf-8", "surrogatepass")
    return "claude-" + hashlib.sha256(raw).hexdigest()[:40]


def _key_metadata(key: Mapping[str, Any]) -> dict[str, Any]:
    meta = {PROJECT_KEY: key["project_key"], SESSION_KEY: key["session_id"]}
    if key.get("subpath"):
        meta[SUBPATH_KEY] = key["subpath"]
    return meta


def _mtime_ms(info: SessionInfo) -> int:
    return int(info.modified_at.timestamp() * 1000)


def _meta(info: SessionInfo) -> dict[str, Any]:
    return info.metadata.model_extra or {}


class SessionTreeStore:
    """A Claude Agent SDK ``SessionStore`` (append, load, list_sessions,
    list_session_summaries, delete, list_subkeys) stored in sessiontree.

    Args:
        url: a store URL for :func:`sessiontree.open_repo` (``None``: the default store); the
            store then runs on the URL's shared loop thread (:func:`sessiontree.sync.shared_repo`).
        repo: an open async repository instead of ``url`` (calls run on the caller's loop),
            or a :class:`sessiontree.sync.SyncRepo` (calls run on its loop thread).
        user_id, app: the store's scope (docs/storage.md "Scoping"; the SDK's own
            ``project_key`` stays a key of the store): its sessions are created with them,
            :attr:`repo` is the view restricted to them, and session ids hash them with the
            key, so one store object per user sees that user's transcripts only.

    Raises:
        ValueError: both ``url`` and ``repo``.
        InvalidArgumentError: ``user_id`` or ``app`` not a non-empty string.
    """

    def __init__(
        self,
        url: str | None = None,
        repo: SessionRepo | SyncRepo | None = None,
        *,
        user_id: str | None = None,
        app: str | None = None,
    ) -> None:
        self._scope = adapter_scope(user_id, app)
        self._handle = RepoHandle(url, repo, self._scope)
        self.repo = self._handle.repo
        self._locks = LoopLocks()

    def __repr__(self) -> str:
        return f"SessionTreeStore(repo={self.repo.url!r})"

    # ------------------------------------------------------------------ required

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Append transcript lines in order; lines whose ``uuid`` is stored already are skipped.

        Idempotent per ``uuid``, also when the same batch is appended by several writers at
        once (the SDK retries; another process may mirror the same transcript): a line is
        stored once, by whichever writer gets there first, and the others skip it as they
        skip a line stored before.

        Raises:
            InvalidEntryError: a line that is not a JSON object JSON can carry, or whose
                ``uuid`` or ``parentUuid`` cannot be an entry id (a NUL character, a lone
                surrogate); the error names the line's index. Nothing of the batch is stored.
        """
        if not entries:
            return
        check_batch(entries, Mapping, item="transcript line", expected="a JSON object")
        lines = [dict(e) for e in entries]
        _check_line_ids(lines, store_session_id(key, self._scope))
        await self._handle.run(self._append(key, lines))

    async def _append(self, key: Mapping[str, Any], lines: list[dict[str, Any]]) -> None:
        async with self._locks.get():
            session = await open_or_create(
                self.repo, store_session_id(key, self._scope), _key_metadata(key)
            )
            # a DuplicateEntryError means another writer stored a line of this batch since it
            # was planned: plan again (that line is skipped now, so this ends)
            for attempt in range(len(lines) + 1):
                batch = await _plan_lines(session, lines)
                try:
                    await session.storage.append_entries(batch)
                    return
                except DuplicateEntryError:
                    if attempt == len(lines):
                        raise

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """The lines of ``key`` in append order, deep-equal to those appended; ``None`` for a
        key never written. Cost: reads every entry of the session."""
        return await self._handle.run(self._load(key))

    async def _load(self, key: Mapping[str, Any]) -> list[Any] | None:
        try:
            session = await self.repo.open(store_session_id(key, self._scope))
        except SessionNotFoundError:
            return None
        return [
            copy.deepcopy(line)
            for e in await session.get_entries()
            if isinstance(line := (e.model_extra or {}).get(LINE_KEY), dict)
        ]

    # ------------------------------------------------------------------ optional

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """Main transcripts of a project: ``session_id`` and ``mtime`` (Unix ms)."""
        return await self._handle.run(self._list_sessions(project_key))

    async def _mains(self, project_key: str) -> list[SessionInfo]:
        infos = await self.repo.list(where={PROJECT_KEY: project_key})
        return [i for i in infos if SUBPATH_KEY not in _meta(i)]

    async def _list_sessions(self, project_key: str) -> list[Any]:
        return [
            {"session_id": _meta(i)[SESSION_KEY], "mtime": _mtime_ms(i)}
            for i in await self._mains(project_key)
        ]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """One summary per main transcript of a project, folded by the SDK's
        ``fold_session_summary`` and stamped with the session's ``mtime``.
        Cost: reads every entry of the project's main sessions."""
        return await self._handle.run(self._summaries(project_key))

    async def _summaries(self, project_key: str) -> list[Any]:
        from claude_agent_sdk._internal.session_summary import fold_session_summary

        out: list[Any] = []
        for info in await self._mains(project_key):
            key = {"project_key": project_key, "session_id": _meta(info)[SESSION_KEY]}
            lines = await self._load(key)
            if not lines:
                continue
            summary = dict(fold_session_summary(None, key, lines))  # type: ignore[arg-type]
            summary["mtime"] = _mtime_ms(info)
            out.append(summary)
        return out

    async def delete(self, key: SessionKey) -> None:
        """Delete a transcript; a main key deletes its subagent transcripts too. A key never
        written is no error."""
        await self._handle.run(self._delete(key))

    async def _delete(self, key: Mapping[str, Any]) -> None:
        ids = [store_session_id(key, self._scope)]
        if not key.get("subpath"):
            ids += [
                store_session_id({**key, "subpath": s}, self._scope)
                for s in await self._subkeys(key)
            ]
        for session_id in ids:
            with contextlib.suppress(SessionNotFoundError):
                await self.repo.delete(session_id)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """The ``subpath`` of every subagent transcript under a main key."""
        return await self._handle.run(self._subkeys(key))

    async def _subkeys(self, key: Mapping[str, Any]) -> list[str]:
        where = {PROJECT_KEY: key["project_key"], SESSION_KEY: key["session_id"]}
        return [
            _meta(i)[SUBPATH_KEY]
            for i in await self.repo.list(where=where)
            if SUBPATH_KEY in _meta(i)
        ]


def _check_line_ids(lines: list[dict[str, Any]], session_id: str) -> None:
    """Refuse a line whose ``uuid`` or ``parentUuid`` no backend can hold as an entry id."""
    for index, line in enumerate(lines):
        for field in ("uuid", "parentUuid"):
            value = line.get(field)
            if isinstance(value, str) and value:
                problem = entry_id_problem(value)
                if problem is not None:
                    raise InvalidEntryError(
                        f"transcript line {index}: {field} {value!r} cannot be an entry id: it "
                        f"{problem}; nothing of the batch was stored",
                        session_id=session_id,
                    )


async def _plan_lines(session: Session, lines: list[dict[str, Any]]) -> list[Entry]:
    """The entries for ``lines`` not stored yet: a stored ``uuid`` (or one earlier in the
    batch) is skipped; a line's parent is its ``parentUuid`` when that is stored or earlier
    in the batch (else it is a root); a line without ``uuid`` hangs under the previous line."""
    previous = await _last_line_entry(session)
    seen: set[str] = set()
    batch: list[Entry] = []
    for line in lines:
        uuid = line.get("uuid")
        if isinstance(uuid, str) and uuid:
            if uuid in seen or await session.find_entry(uuid) is not None:
                continue
            seen.add(uuid)
            entry_id = uuid
            parent = line.get("parentUuid")
            parent_id = (
                parent
                if isinstance(parent, str)
                and parent
                and (parent in seen or await session.find_entry(parent) is not None)
                else None
            )
        else:
            entry_id, parent_id = new_id(), previous
        batch.append(_line_entry(line, entry_id, parent_id))
        previous = entry_id
    return batch


async def _last_line_entry(session: Session) -> str | None:
    """The id of the newest entry holding a transcript line (what an uuid-less line hangs under)."""
    for entry in await session.get_entries(reverse=True, limit=64):
        if LINE_KEY in (entry.model_extra or {}):
            return entry.id
    leaf = await session.get_leaf_id()
    return leaf


def _line_entry(line: dict[str, Any], entry_id: str, parent_id: str | None) -> Entry:
    """The entry of one transcript line: a message for user/assistant lines, else custom."""
    now = now_ms()
    stamp = ms_or(line.get("timestamp"), now)
    message = _line_message(line)
    extra = {LINE_KEY: copy.deepcopy(line)}
    when = iso_or(line.get("timestamp"), now)
    if message is not None:
        message = message.model_copy(update={"timestamp": stamp})
        message.__pydantic_fields_set__.add("timestamp")
        return MessageEntry(
            id=entry_id, parent_id=parent_id, timestamp=when, message=message, **extra
        )
    kind = line.get("type")
    return CustomEntry(
        id=entry_id,
        parent_id=parent_id,
        timestamp=when,
        custom_type=f"claude_code.{kind if isinstance(kind, str) else 'line'}",
        **extra,
    )


def _line_message(line: Mapping[str, Any]) -> AgentMessage | None:
    kind, payload = line.get("type"), line.get("message")
    if kind not in ("user", "assistant") or not isinstance(payload, Mapping):
        return None
    content = payload.get("content")
    try:
        if kind == "assistant":
            blocks = (
                content
                if isinstance(content, list)
                else [{"type": "text", "text": str(content or "")}]
            )
            return AssistantMessage(
                content=[_block(b) for b in blocks],
                model=payload.get("model") if isinstance(payload.get("model"), str) else None,
                provider="anthropic",
            )
        if isinstance(content, str):
            return UserMessage(content=content)
        if isinstance(content, list):
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if len(results) == 1 and len(content) == 1:
                result = results[0]
                return ToolResultMessage(
                    tool_call_id=str(result.get("tool_use_id", "")),
                    content=_result_content(result.get("content")),
                    is_error=bool(result.get("is_error", False)),
                )
            if not results:
                return UserMessage(content=[_block(b) for b in content])
    except (ValueError, TypeError):
        return None
    return None
