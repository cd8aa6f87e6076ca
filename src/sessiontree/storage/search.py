"""What ``search`` means, on every backend: a case-insensitive substring of the message text.

A ``message`` entry matches a query when the query, lower-cased (``str.lower``), occurs in the
lower-cased first :data:`SEARCH_MAX_CHARS` characters of the entry's message text
(:func:`sessiontree.messages.message_text`): whole words or not, inside a CJK run
(``状態`` in ``最新の状態``), across punctuation (``main.py``, ``tui-renderer.ts``), with any
spaces the query holds. A query that is blank (empty or only whitespace) finds nothing.
No other folding is done (``cafe`` does not find ``café``).

The memory and JSONL backends scan with :func:`matches`; the SQL backends keep
:func:`search_text` of each message in a trigram index (SQLite FTS5 ``trigram``, PostgreSQL
``pg_trgm``) that narrows the candidates, and check each with the same substring test, so
every backend returns the same set of entries.
"""

from __future__ import annotations

from sessiontree._args import check_count
from sessiontree.errors import InvalidArgumentError
from sessiontree.messages import AgentMessage, message_text

__all__ = ["SEARCH_MAX_CHARS", "check_search_args", "matches", "search_needle", "search_text"]

SEARCH_MAX_CHARS = 100_000
"""Only this many leading characters of a message's text are searched (PostgreSQL's index
entries are bounded; the same cap everywhere keeps results alike)."""


def search_text(message: AgentMessage) -> str | None:
    """What a search looks in for ``message``: its text, cut to :data:`SEARCH_MAX_CHARS`,
    lower-cased; ``None`` when blank (nothing can match)."""
    return text_for_search(message_text(message))


def text_for_search(text: str) -> str | None:
    """:func:`search_text` of a message whose :func:`message_text` is ``text``."""
    return text[:SEARCH_MAX_CHARS].lower() if text.strip() else None


def search_needle(query: str) -> str | None:
    """The lower-cased query, ``None`` for a blank one (which finds nothing)."""
    return query.lower() if query.strip() else None


def matches(needle: str, text: str) -> bool:
    """Whether a message whose :func:`message_text` is ``text`` matches ``needle``
    (from :func:`search_needle`)."""
    hay = text_for_search(text)
    return hay is not None and needle in hay


def check_search_args(query: object, limit: object) -> None:
    """The arguments every backend's ``search`` accepts.

    Raises:
        InvalidArgumentError: ``query`` is not a ``str``, or ``limit`` not an ``int`` from 0
            to :data:`~sessiontree._args.MAX_COUNT`.
    """
    if not isinstance(query, str):
        raise InvalidArgumentError(f"search query must be a str, not {type(query).__name__}")
    check_count(limit, "search limit")
