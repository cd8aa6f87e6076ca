"""LangChain chat history (``langchain_core.chat_history.BaseChatMessageHistory``) in sessiontree.

``RunnableWithMessageHistory(chain, lambda sid: SessionTreeChatMessageHistory(sid, url=...))``
keeps each conversation as a sessiontree session. Every LangChain message becomes one
``message`` entry holding the message converted by :func:`from_langchain` **and** LangChain's
own serialisation of it (``message_to_dict``) under the message key ``langchainMessage``, so
``messages`` gives back objects equal to those added while ``show``, search, compaction and
fork see real messages (human → user, AI → assistant with tool calls, tool → tool result,
system → a ``custom`` message of type ``langchain.system``). Messages other code appended
are converted by :func:`to_langchain`.

``clear()`` starts a new empty root; the earlier messages stay in the tree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sessiontree.context import to_llm_messages
from sessiontree.ids import now_ms
from sessiontree.integrations._common import (
    LoopLocks,
    RepoHandle,
    adapter_scope,
    append_chain,
    check_batch,
    clear_leaf,
    import_extra,
    open_or_create,
    original_of,
    tree_session_id,
    with_original,
)
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    CustomMessage,
    ImageContent,
    OpaqueBlock,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from sessiontree.repos import SessionRepo
from sessiontree.session import Session

import_extra("langchain_core", "langchain")

from langchain_core.chat_history import BaseChatMessageHistory  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

if TYPE_CHECKING:
    from sessiontree.sync import SyncRepo

__all__ = [
    "MESSAGE_KEY",
    "SYSTEM_CUSTOM_TYPE",
    "SessionTreeChatMessageHistory",
    "from_langchain",
    "to_langchain",
]

MESSAGE_KEY = "langchainMessage"
"""The message key holding LangChain's ``message_to_dict`` of the message as added."""

SYSTEM_CUSTOM_TYPE = "langchain.system"
"""``custom_type`` of the :class:`CustomMessage` a ``SystemMessage`` becomes."""

METADATA_KEY = "langchainSessionId"


class SessionTreeChatMessageHistory(BaseChatMessageHistory):
    """A LangChain ``BaseChatMessageHistory`` stored in sessiontree (sync and async).

    Args:
        session_id: LangChain's session id; a valid sessiontree id is used as it is, any
            other string maps to ``lc-<sha256>`` (original in the metadata).
        url: a store URL (``None``: the default store). Histories of one URL share one
            repository on its own loop thread, so the sync methods work anywhere.
        repo: an async repository (then only the ``a*`` methods work: the sync ones would
            have to run on the caller's loop) or a :class:`sessiontree.sync.SyncRepo`.
        metadata: extra session metadata written at creation.
        user_id, app, project: the history's scope (docs/storage.md "Scoping"): the session
            is created with them, reached only through the store's view restricted to them,
            and its id is ``lc-<sha256>`` of the scope and ``session_id`` (two users'
            ``chat-1`` are two sessions).

    Raises:
        ValueError: both ``url`` and ``repo``.
        InvalidArgumentError: a scope field that is not a non-empty string.
    """

    def __init__(
        self,
        session_id: str,
        *,
        url: str | None = None,
        repo: SessionRepo | SyncRepo | None = None,
        metadata: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        app: str | None = None,
        project: str | None = None,
    ) -> None:
        self.session_id = session_id
        scope = adapter_scope(user_id, app, project)
        self._handle = RepoHandle(url, repo, scope)
        self.tree_id = tree_session_id(session_id, "lc", scope)
        self._metadata = {METADATA_KEY: session_id, **(metadata or {})}
        self._session: Session | None = None
        self._locks = LoopLocks()

    async def _tree(self) -> Session:
        if self._session is None:
            self._session = await open_or_create(self._handle.repo, self.tree_id, self._metadata)
        return self._session

    # ------------------------------------------------------------------ async

    async def aget_messages(self) -> list[BaseMessage]:
        """The current branch's context as LangChain messages, oldest first."""
        return await self._handle.run(self._get())

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages under the leaf, one entry each, all or nothing.

        Raises:
            InvalidEntryError: an item that is not a ``BaseMessage``, or a message JSON
                cannot carry (nothing appended).
        """
        if messages:
            await self._handle.run(self._add(list(messages)))

    async def aclear(self) -> None:
        """Start a new empty root (the old messages stay in the tree)."""
        await self._handle.run(self._clear())

    # ------------------------------------------------------------------ sync

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """See :meth:`aget_messages`. Raises RuntimeError for an async ``repo``."""
        return self._handle.run_sync(self._get())

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """See :meth:`aadd_messages`. Raises RuntimeError for an async ``repo``."""
        if messages:
            self._handle.run_sync(self._add(list(messages)))

    def clear(self) -> None:
        """See :meth:`aclear`. Raises RuntimeError for an async ``repo``."""
        self._handle.run_sync(self._clear())

    # ------------------------------------------------------------------ on the repo's loop

    async def _get(self) -> list[BaseMessage]:
        async with self._locks.get():
            context = await (await self._tree()).build_context(repair_tool_pairs=False)
        return [m for message in context.messages for m in _langchain_of(message)]

    async def _add(self, messages: list[BaseMessage]) -> None:
        check_batch(messages, BaseMessage, item="message", expected="a langchain-core BaseMessage")
        stamp = now_ms()
        stored = [
            with_original(from_langchain(m), MESSAGE_KEY, message_to_dict(m), stamp)
            for m in messages
        ]
        async with self._locks.get():
            await append_chain(await self._tree(), stored)

    async def _clear(self) -> None:
        async with self._locks.get():
            await clear_leaf(await self._tree())


def _langchain_of(message: AgentMessage) -> list[BaseMessage]:
    original = original_of(message, MESSAGE_KEY)
    if isinstance(original, dict):
        return messages_from_dict([original])
    return to_langchain([message])


# --------------------------------------------------------------------------- conversion


def _content_blocks(content: str | list[str | dict[str, Any]]) -> str | list[ContentBlock]:
    if isinstance(content, str):
        return content
    blocks: list[ContentBlock] = []
    for part in content:
        if isinstance(part, str):
            blocks.append(TextContent(text=part))
        elif part.get("type") == "text" and isinstance(part.get("text"), str):
            blocks.append(TextContent(text=part["text"]))
        elif part.get("type") == "image" and isinstance(part.get("base64"), str):
            blocks.append(ImageContent(data=part["base64"], mime_type=part.get("mime_type") or ""))
        else:
            blocks.append(
                OpaqueBlock.model_validate({**part, "type": f"langchain.{part.get('type')}"})
            )
    return blocks


def from_langchain(message: BaseMessage) -> AgentMessage:
    """One LangChain message → an AgentMessage.

    Human → :class:`UserMessage`; AI → :class:`AssistantMessage` (text blocks, then
    ``tool_calls`` as tool calls; other content parts kept as opaque blocks); tool → :class:`ToolResultMessage`
    (``status="error"`` → ``is_error``); system → :class:`CustomMessage`
    (:data:`SYSTEM_CUSTOM_TYPE`); any other kind → a custom message of type
    ``langchain.<type>`` with its text.
    """
    if isinstance(message, HumanMessage):
        return UserMessage(content=_content_blocks(message.content))
    if isinstance(message, AIMessage):
        body = _content_blocks(message.content)
        blocks: list[ContentBlock] = (
            ([TextContent(text=body)] if body else []) if isinstance(body, str) else list(body)
        )
        blocks += [
            ToolCall(id=c.get("id") or "", name=c["name"], arguments=dict(c.get("args") or {}))
            for c in message.tool_calls
        ]
        return AssistantMessage(
            content=blocks, stop_reason="toolUse" if message.tool_calls else "stop"
        )
    if isinstance(message, ToolMessage):
        body = _content_blocks(message.content)
        return ToolResultMessage(
            tool_call_id=message.tool_call_id,
            tool_name=message.name or "",
            content=[TextContent(text=body)] if isinstance(body, str) else body,
            is_error=message.status == "error",
        )
    return CustomMessage(
        custom_type=SYSTEM_CUSTOM_TYPE
        if isinstance(message, SystemMessage)
        else f"langchain.{message.type}",
        content=_content_blocks(message.content),
        display=False,
    )


def _text(content: str | list[ContentBlock]) -> str | list[str | dict[str, Any]]:
    if isinstance(content, str):
        return content
    parts: list[str | dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextContent):
            parts.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageContent):
            parts.append({"type": "image", "base64": b.data, "mime_type": b.mime_type})
    if all(isinstance(p, dict) and p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts if isinstance(p, dict))
    return parts


def to_langchain(messages: Sequence[AgentMessage]) -> list[BaseMessage]:
    """AgentMessages → LangChain messages (the inverse of :func:`from_langchain` for the
    kinds it makes; summaries and bash executions become human messages worded as in
    :func:`sessiontree.context.to_llm_messages`; thinking is left out)."""
    out: list[BaseMessage] = []
    for m in messages:
        if isinstance(m, UserMessage):
            out.append(HumanMessage(content=_text(m.content)))
        elif isinstance(m, AssistantMessage):
            text = "\n".join(b.text for b in m.content if isinstance(b, TextContent))
            calls = [
                {"id": c.id, "name": c.name, "args": c.arguments, "type": "tool_call"}
                for c in m.content
                if isinstance(c, ToolCall)
            ]
            out.append(AIMessage(content=text, tool_calls=calls))
        elif isinstance(m, ToolResultMessage):
            out.append(
                ToolMessage(
                    content=_text(m.content),
                    tool_call_id=m.tool_call_id,
                    name=m.tool_name or None,
                    status="error" if m.is_error else "success",
                )
            )
        elif isinstance(m, CustomMessage) and m.custom_type == SYSTEM_CUSTOM_TYPE:
            out.append(SystemMessage(content=_text(m.content)))
        else:
            for plain in to_llm_messages([m]):
                content = plain["content"]
                out.append(
                    HumanMessage(content=content if isinstance(content, str) else str(content))
                )
    return out
