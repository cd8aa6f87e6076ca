"""What an append log folds into: the leaf, labels, name and listing counts. Pure, no I/O.

Every backend feeds its entries, in append order, through one :class:`LogFold` — validated
entries (:meth:`LogFold.add_entry`) or raw lines that are only JSON-parsed
(:meth:`LogFold.add`) — so the rules below are written once:

* the leaf: a ``leaf`` entry moves it to its ``targetId`` (``None`` unless a string), a path
  entry to itself; ``label`` and ``session_info`` leave it where it was;
* labels: the newest ``label`` entry of a target wins; a ``None`` or empty label clears it;
* the name: the newest ``session_info`` entry's string ``name``;
* the counts of :class:`~sessiontree.metadata.SessionInfo`: entries, ``message`` entries, and
  the first user message's text cut to :data:`FIRST_MESSAGE_CHARS` characters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sessiontree.entries import BOOKKEEPING_TYPES, Entry, MessageEntry
from sessiontree.messages import AgentMessage, UserMessage, message_text

__all__ = ["FIRST_MESSAGE_CHARS", "LogFold", "first_message_text"]

FIRST_MESSAGE_CHARS = 200
"""``SessionInfo.first_message`` is cut to this many characters."""

_ENTRY_FIELDS = {"targetId": "target_id", "label": "label", "name": "name"}


def first_message_text(message: AgentMessage) -> str | None:
    """The listing text of a message: a user message's text, cut to
    :data:`FIRST_MESSAGE_CHARS` characters; ``None`` for any other message."""
    if isinstance(message, UserMessage):
        return message_text(message)[:FIRST_MESSAGE_CHARS]
    return None


class LogFold:
    """The state of one session's append log, updated entry by entry (see the module).

    Attributes:
        leaf_id: the current leaf.
        labels: entry id → label.
        name: the session name, ``None`` until a ``session_info`` entry names it.
        entry_count: entries folded (including any the fold started from).
        message_count: ``message`` entries among them.
        first_message: the first user message's listing text, once one was seen.
        first_seen: whether a first user message was seen — a store that keeps the text
            elsewhere starts the fold with ``first_seen=True`` and no text.
    """

    __slots__ = (
        "entry_count",
        "first_message",
        "first_seen",
        "labels",
        "leaf_id",
        "message_count",
        "name",
    )

    def __init__(
        self,
        leaf_id: str | None = None,
        *,
        entry_count: int = 0,
        message_count: int = 0,
        first_message: str | None = None,
        first_seen: bool | None = None,
        name: str | None = None,
    ) -> None:
        self.leaf_id = leaf_id
        self.labels: dict[str, str] = {}
        self.name = name
        self.entry_count = entry_count
        self.message_count = message_count
        self.first_message = first_message
        self.first_seen = first_message is not None if first_seen is None else first_seen

    def add(
        self,
        kind: str,
        entry_id: str,
        field: Callable[[str], Any],
        first_text: Callable[[], str | None],
    ) -> None:
        """Fold one entry given by its parts.

        Args:
            kind: the entry's ``type``.
            entry_id: its ``id``.
            field: a top-level camelCase field of the entry (``targetId``, ``label``,
                ``name``), ``None`` when absent; only asked for the types that have them.
            first_text: for a ``message`` entry before the first user message was seen, its
                :func:`first_message_text` (``None`` when it is not a user message, or does
                not validate); not called otherwise.
        """
        self.entry_count += 1
        if kind == "message":
            self.message_count += 1
            if not self.first_seen:
                text = first_text()
                if text is not None:
                    self.first_message = text
                    self.first_seen = True
            self.leaf_id = entry_id
        elif kind == "label":
            target, label = field("targetId"), field("label")
            if isinstance(target, str):
                if isinstance(label, str) and label:
                    self.labels[target] = label
                else:
                    self.labels.pop(target, None)
        elif kind == "session_info":
            name = field("name")
            if isinstance(name, str):
                self.name = name
        elif kind == "leaf":
            target = field("targetId")
            self.leaf_id = target if isinstance(target, str) else None
        elif kind not in BOOKKEEPING_TYPES:
            self.leaf_id = entry_id

    def add_entry(self, entry: Entry) -> None:
        """Fold one validated entry."""
        if self.first_seen and entry.type == "message":
            # the common append: :meth:`add` asks a message for neither its fields nor its text
            self.add("message", entry.id, _never_asked, _never_asked)
            return

        def field(key: str) -> Any:
            return getattr(entry, _ENTRY_FIELDS[key], None)

        def first_text() -> str | None:
            return first_message_text(entry.message) if isinstance(entry, MessageEntry) else None

        self.add(entry.type, entry.id, field, first_text)


def _never_asked(*_args: Any) -> Any:
    """A :meth:`LogFold.add` argument it does not call for the entry given."""
    raise AssertionError("LogFold.add asked for what it never needs here")
