"""Session-level records: metadata, listing rows, search hits, statistics (docs/storage.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from sessiontree._model import WireModel
from sessiontree.errors import InvalidMetadataError

__all__ = [
    "AGENTS",
    "SearchHit",
    "SessionInfo",
    "SessionMetadata",
    "SessionStats",
    "agent_of",
    "matches_where",
    "metadata_pairs",
    "project_name",
    "project_of",
    "session_time",
    "where_pairs",
]


class SessionMetadata(WireModel):
    """What a session was created with; immutable afterwards. camelCase on the wire.

    Unknown keys (e.g. a pi header's ``provider``/``modelId``) are kept.
    """

    system_prompt: str | None = None
    """Default system prompt for :meth:`Session.build_context`; ``None``: no default (``""``)."""
    cwd: str | None = None
    """Working directory of the agent that wrote the session; ``None`` when not known."""
    parent_session_id: str | None = None
    """For a fork: the session it was forked from; ``None`` for a session that is no fork."""
    forked_from_entry_id: str | None = None
    """For a fork: the entry of the parent session it was forked at; ``None`` otherwise."""
    user_id: str | None = None
    """The user the session belongs to (wire ``userId``), for a service serving many users
    from one store (:func:`sessiontree.repos.scoped`); ``None``: no user."""
    app: str | None = None
    """The application the session belongs to (wire ``app``); ``None``: no application."""
    project: str | None = None
    """The project the session belongs to; ``None``: its working directory (:attr:`cwd`) is
    its project (:func:`project_of`), as for imported agent sessions."""


@dataclass(frozen=True)
class SessionInfo:
    """One row of :meth:`SessionRepo.list` (docs/storage.md)."""

    id: str
    """The session id."""
    name: str | None
    """The name of the newest ``session_info`` entry; ``None`` for an unnamed session."""
    created_at: datetime
    """When the session was created, an aware UTC datetime; an imported session has its
    source's first entry time."""
    modified_at: datetime
    """When the session was last appended to, an aware UTC datetime; an imported session has
    its source's newest entry time until its next append."""
    entry_count: int
    """Entries of every type, bookkeeping entries included."""
    message_count: int
    """``message`` entries."""
    first_message: str | None
    """The first user message's text, at most 200 characters; ``None`` when there is none."""
    parent_session_id: str | None
    """For a fork, the session it was forked from; ``None`` otherwise."""
    metadata: SessionMetadata
    """What the session was created with."""


def session_time(value: object, what: str) -> datetime:
    """A session's ``created_at``/``modified_at`` argument as an aware UTC datetime.

    Raises:
        InvalidMetadataError: not a ``datetime``, or a naive one (no time zone: which instant
            it names is unknown); ``what`` names the argument.
    """
    if not isinstance(value, datetime):
        raise InvalidMetadataError(f"{what} must be a datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidMetadataError(f"{what} must be an aware datetime (with a time zone): {value}")
    return value.astimezone(UTC)


@dataclass(frozen=True)
class SearchHit:
    """A message whose text matched :meth:`SessionRepo.search`: where, and a snippet around it."""

    session_id: str
    """The session holding the matching message."""
    entry_id: str
    """The ``message`` entry whose text matched."""
    snippet: str
    """The message text around the first match, white space folded, about 160 characters, with
    ``…`` where it was cut."""


@dataclass
class SessionStats:
    """:meth:`Session.get_stats` (docs/storage.md).

    Token counts are tokens, ``cost`` US dollars, summed over assistant ``usage`` and
    compaction / branch-summary ``usage``.
    """

    entry_count: int = 0
    """Entries of every type."""
    entries_by_type: dict[str, int] = field(default_factory=dict)
    """Entry count per entry ``type``."""
    messages_by_role: dict[str, int] = field(default_factory=dict)
    """``message`` entry count per message ``role``."""
    tool_calls: int = 0
    """Tool-call blocks in assistant messages."""
    input_tokens: int = 0
    """Uncached input tokens, summed over every recorded ``usage``."""
    output_tokens: int = 0
    """Output tokens, summed over every recorded ``usage``."""
    cache_read_tokens: int = 0
    """Input tokens read from a prompt cache, summed."""
    cache_write_tokens: int = 0
    """Input tokens written to a prompt cache, summed."""
    cost: float = 0.0
    """US dollars, summed over every ``usage`` that carries a cost."""
    compactions: int = 0
    """``compaction`` entries."""
    branch_summaries: int = 0
    """``branch_summary`` entries."""
    roots: int = 0
    """Path entries with no parent (a session may have several roots)."""
    leaf_id: str | None = None
    """The current leaf; ``None`` for an empty session or one whose leaf was moved to a new root."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the statistics."""
        return dict(self.__dict__)


# --------------------------------------------------------------------------- scoping filters


def _scalar_json(value: Any) -> str | None:
    """The JSON text of a filterable value (string, integer, boolean, null), else ``None``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # any size: JSON integers are their decimal digits
    if value is None or isinstance(value, str | bool):
        return orjson.dumps(value).decode()
    return None


def metadata_pairs(metadata: SessionMetadata) -> dict[str, str]:
    """The filterable part of a session's metadata: each top-level key of its camelCase wire
    form whose value is a string, integer, boolean or null, mapped to the value's JSON text
    (so ``1``, ``"1"`` and ``true`` stay distinct), and ``project`` (:func:`project_of`) when
    the session has one. What SQL stores in ``session_meta``; what ``where`` filters on."""
    pairs: dict[str, str] = {}
    for key, value in metadata.to_wire().items():
        text = _scalar_json(value)
        if text is not None:
            pairs[key] = text
    project = project_of(metadata)
    if project is not None:
        pairs["project"] = _scalar_json(project) or "null"
    return pairs


def project_of(metadata: SessionMetadata) -> str | None:
    """A session's project: its ``project`` if it was given one, else its working directory
    (an imported agent session has only that); ``None`` when it has neither. The one notion
    of project that ``where={"project": ...}``, scoping, prune and the size report share."""
    return metadata.project if metadata.project is not None else metadata.cwd


def where_pairs(where: Mapping[str, Any] | None) -> dict[str, str]:
    """A ``repo.list(where=...)`` filter as key → JSON text of the wanted value.

    Keys are the metadata's camelCase wire keys (``userId``, ``cwd``, ``parentSessionId``).

    Raises:
        InvalidMetadataError: not a mapping, a key that is not a string, a value that is
            not a string, integer, boolean or ``None``, or a string with a lone surrogate.
    """
    if where is None:
        return {}
    if not isinstance(where, Mapping):
        raise InvalidMetadataError(
            f"where must be a mapping of metadata keys, not {type(where).__name__}"
        )
    pairs: dict[str, str] = {}
    for key, value in where.items():
        if not isinstance(key, str) or not (value is None or isinstance(value, str | int)):
            raise InvalidMetadataError(
                f"where filters on metadata keys (str) equal to a string, integer, boolean or "
                f"None; got {key!r}: {value!r}"
            )
        # a lone surrogate cannot be stored as metadata, so no session can match it
        if not _is_utf8(key) or (isinstance(value, str) and not _is_utf8(value)):
            raise InvalidMetadataError(
                f"where condition {key!r}: {value!r} holds a lone surrogate, which no stored "
                f"metadata can hold"
            )
        text = _scalar_json(value)
        assert text is not None  # a str, int, bool or None by the checks above
        pairs[key] = text
    return pairs


def _is_utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (no lone surrogates)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def matches_where(metadata: SessionMetadata, pairs: Mapping[str, str]) -> bool:
    """Whether every ``where_pairs`` condition holds for ``metadata`` (all keys, equal values)."""
    if not pairs:
        return True
    own = metadata_pairs(metadata)
    return all(own.get(k) == v for k, v in pairs.items())


AGENTS = {
    "claude-code": "claude-code",
    "codex": "codex",
    "pi": "pi",
    "gemini-cli": "gemini-cli",
    "copilot-cli": "copilot-cli",
    "opencode": "opencode",
    "aider": "aider",
    "cline": "cline",
    "swe-agent": "swe-agent",
}
"""The agent name of each import format; a session sessiontree made itself is ``sessiontree``."""


def agent_of(info: SessionInfo) -> str:
    """The agent that wrote a session: its import format's agent, else ``sessiontree``."""
    extra = info.metadata.model_extra or {}
    imported = extra.get("importedFrom")
    fmt = imported.get("format") if isinstance(imported, dict) else None
    return AGENTS.get(fmt, str(fmt)) if isinstance(fmt, str) else "sessiontree"


def project_name(cwd: str) -> str:
    """The last part of a working directory (``/home/u/code/app`` → ``app``); ``/`` stays."""
    stripped = cwd.rstrip("/\\")
    return re.split(r"[/\\]", stripped)[-1] if stripped else cwd
