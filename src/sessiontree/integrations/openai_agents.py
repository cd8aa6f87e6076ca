"""The OpenAI Agents SDK ``Session`` protocol over a sessiontree session.

``Runner.run(agent, input, session=SessionTreeSession("chat-1", url="sqlite:///chats.db"))``
keeps the run's history in sessiontree. Each Responses item the SDK adds becomes one
``message`` entry holding the message converted by
:func:`sessiontree.wire.openai_responses.from_openai_responses` **and** the item itself under
the message key ``openaiItem``: ``sessiontree show``, search, compaction and fork see real
messages, and :meth:`SessionTreeSession.get_items` gives back each item equal to the one
added (every kind, including kinds sessiontree does not model).

The items are the current branch's context (:meth:`Session.build_context`, tool pairs left
as stored): after a compaction the SDK sees the summary and the kept items; a message other
code appended to the session is converted by
:func:`~sessiontree.wire.openai_responses.to_openai_responses`. Nothing is ever deleted:
:meth:`~SessionTreeSession.pop_item` moves the leaf to the popped item's parent (the item
stays in the tree as an abandoned branch) and :meth:`~SessionTreeSession.clear_session`
moves it to a new empty root; ``repo.delete(session_id)`` deletes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sessiontree.entries import MessageEntry
from sessiontree.errors import InvalidEntryError
from sessiontree.ids import now_ms
from sessiontree.integrations._common import (
    LoopLocks,
    RepoHandle,
    adapter_scope,
    append_chain,
    clear_leaf,
    holds_non_finite,
    import_extra,
    open_or_create,
    original_of,
    retry_leaf_move,
    tree_session_id,
    with_original,
)
from sessiontree.messages import AgentMessage
from sessiontree.repos import SessionRepo
from sessiontree.session import Session
from sessiontree.wire.openai_responses import read_items, to_openai_responses

import_extra("agents", "openai-agents")

from agents.memory.session_settings import SessionSettings, resolve_session_limit  # noqa: E402

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

    from sessiontree.sync import SyncRepo

__all__ = ["ITEM_KEY", "SessionTreeSession"]

ITEM_KEY = "openaiItem"
"""The message key that holds the Responses item exactly as the SDK added it."""

METADATA_KEY = "openaiAgentsSessionId"
"""Session metadata key holding the SDK's session id."""


class SessionTreeSession:
    """An OpenAI Agents SDK ``Session`` (``agents.memory.Session``) stored in sessiontree.

    Args:
        session_id: the SDK's session id. A valid sessiontree id (``[A-Za-z0-9_-]{1,128}``)
            is the sessiontree session id too; any other string maps to ``oa-<sha256>`` with
            the original in the metadata under ``openaiAgentsSessionId``.
        url: a store URL for :func:`sessiontree.open_repo` (``None``: the default store).
            Sessions built from one URL share one repository, run on its own loop thread
            (:func:`sessiontree.sync.shared_repo`), so they work under ``Runner.run_sync``
            and from any thread or loop.
        repo: an open async repository instead of ``url`` (calls run on the caller's loop),
            or a :class:`sessiontree.sync.SyncRepo` (calls run on its loop thread).
        session_settings: the SDK's ``SessionSettings`` (``limit`` caps ``get_items``).
        metadata: extra session metadata written when the session is created.
        user_id, app, project: the session's scope (docs/storage.md "Scoping"): it is created
            with them, :attr:`repo` is the store's view restricted to them
            (``session.repo.list()``: this user's sessions), and the sessiontree id is
            ``oa-<sha256>`` of the scope and ``session_id``, so two users' ``chat-1`` are
            two sessions and neither reaches the other's.

    The session is opened (or created) on first use. Calls from one process are serialised
    per event loop, so the items of one ``add_items`` stay contiguous on the branch.
    """

    def __init__(
        self,
        session_id: str,
        *,
        url: str | None = None,
        repo: SessionRepo | SyncRepo | None = None,
        session_settings: SessionSettings | None = None,
        metadata: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        app: str | None = None,
        project: str | None = None,
    ) -> None:
        self.session_id = session_id
        # typed as the SDK's Session protocol declares it (a mutable attribute must match exactly)
        self.session_settings: SessionSettings | None = session_settings or SessionSettings()
        scope = adapter_scope(user_id, app, project)
        self._handle = RepoHandle(url, repo, scope)
        self.repo = self._handle.repo
        self.tree_id = tree_session_id(session_id, "oa", scope)
        self._metadata = {METADATA_KEY: session_id, **(metadata or {})}
        self._session: Session | None = None
        self._locks = LoopLocks()

    def __repr__(self) -> str:
        return f"SessionTreeSession({self.session_id!r}, repo={self.repo.url!r})"

    async def _tree(self) -> Session:
        """The sessiontree :class:`Session` behind this SDK session (created on first use)."""
        if self._session is None:
            self._session = await open_or_create(self.repo, self.tree_id, self._metadata)
        return self._session

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The current branch's items, oldest first; the newest ``limit`` when given (else
        ``session_settings.limit``). Each is a fresh copy, equal to the item added.

        Cost: reads the branch root → leaf.
        """
        context = await self._handle.run(self._context())
        wanted = resolve_session_limit(limit, self.session_settings)
        items: list[Any] = []
        for message in context.messages:  # one item each, or several (or none) converted
            items.extend(_items_of(message))
        if wanted is not None:
            items = items[-wanted:] if wanted > 0 else []
        return items

    async def _context(self) -> Any:
        async with self._locks.get():
            session = await self._tree()
            return await session.build_context(repair_tool_pairs=False)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append the items under the leaf in order, one ``message`` entry each.

        Every item is checked before the first is written; each entry hangs under the stored
        leaf atomically, so a writer in another process never leaves these items (or its own)
        on an abandoned branch; calls from this process keep a batch contiguous.

        Raises:
            InvalidEntryError: an item that is not a Responses item (nothing is appended).
        """
        if not items:
            return
        stamp = now_ms()
        messages = [_stored_message(item, index, stamp) for index, item in enumerate(items)]
        await self._handle.run(self._append(messages))

    async def _append(self, messages: list[AgentMessage]) -> None:
        async with self._locks.get():
            await append_chain(await self._tree(), messages)

    async def pop_item(self) -> TResponseInputItem | None:
        """Move the leaf to the newest message's parent and return that message's item;
        ``None`` when the branch holds no message. The entry stays in the tree.

        The leaf moves only if it is still the one the branch was read from (else the read
        is made again), so across processes an item is popped once, and an item another
        writer added in between is never dropped with it.
        """
        return await self._handle.run(self._pop())

    async def _pop(self) -> Any:
        async with self._locks.get():
            session = await self._tree()
            return await retry_leaf_move(lambda: _pop_once(session))

    async def clear_session(self) -> None:
        """Start a new empty root: ``get_items`` returns ``[]``; the old items stay in the tree."""
        await self._handle.run(self._clear())

    async def _clear(self) -> None:
        async with self._locks.get():
            await clear_leaf(await self._tree())


async def _pop_once(session: Session) -> Any:
    """One try of :meth:`SessionTreeSession.pop_item`: the leaf moves only if it is still the
    one the branch was read from (:class:`LeafMovedError` otherwise, nothing written)."""
    leaf = await session.get_leaf_id()
    branch = [] if leaf is None else await session.get_branch(leaf)
    for entry in reversed(branch):
        if isinstance(entry, MessageEntry):
            await session.set_leaf_id_if(entry.parent_id, leaf)
            items = _items_of(entry.message)
            return items[-1] if items else None
    return None


def _stored_message(item: Any, index: int, stamp: int) -> AgentMessage:
    """The message stored for one item: its conversion, plus the item under :data:`ITEM_KEY`."""
    if not isinstance(item, Mapping):
        dump = getattr(item, "model_dump", None)
        if not callable(dump):
            raise InvalidEntryError(f"item {index} is a {type(item).__name__}, not a mapping")
        if holds_non_finite(dump(exclude_unset=True)):  # mode="json" would write it as null
            raise InvalidEntryError(
                f"item {index} holds a non-finite number (inf or nan), which JSON cannot carry"
            )
        item = dump(mode="json", exclude_unset=True)
    original = copy.deepcopy(dict(item))
    (message,) = read_items([original], first_index=index)
    return with_original(message, ITEM_KEY, original, stamp)


def _items_of(message: AgentMessage) -> list[Any]:
    original = original_of(message, ITEM_KEY)
    if isinstance(original, dict):
        return [original]
    return to_openai_responses([message])
