"""PostgreSQL search: the trigram query, with the search text of fork copies filled first.

Every ``message`` row carries its search text (``search_text``, :func:`~sessiontree.backends.sql.plan.index_text`)
in a ``pg_trgm`` GIN index, written by the row's own ``INSERT`` — except the rows a fork
copied: they are inserted with none, and their session gets a ``search_pending`` row naming the
source (schema version 5; inserting the copies' text would put its every trigram in the index
again, two thirds of a fork's time). A search first resolves every pending session
(:func:`catch_up`, one transaction): the text of each copy is the source row's (same id and
same JSON), or, for a row the source no longer has, computed from the copy's JSON. Sessions are
resolved oldest first, so the copies of a fork of a fork find their source filled. An engine
that may not write (``read_only``, or a role without the privilege) searches the pending rows'
text in Python instead (:func:`pending_hits`).
"""

from __future__ import annotations

from typing import Any

from sessiontree.backends.sql.payloads import expand_all_async
from sessiontree.backends.sql.plan import row_index_text
from sessiontree.backends.sql.postgres_payloads import fetch_payloads
from sessiontree.backends.sql.postgres_pool import clean_text as clean
from sessiontree.storage.encryption import Codec

__all__ = ["SEARCH_SQL", "catch_up", "like_pattern", "pending_hits", "scoped_search_sql"]

SEARCH_SQL = (
    "SELECT e.session_id, e.id, e.body::text, s.modified_us, e.seq FROM entries AS e"
    " JOIN sessions AS s ON s.id = e.session_id"
    " WHERE e.search_text LIKE %s ESCAPE '\\'"
    " ORDER BY s.modified_us DESC, e.session_id, e.seq LIMIT %s"
)
"""Hits as ``(session id, entry id, JSON, session modified_us, seq)``, in hit order."""


def scoped_search_sql(condition: str) -> str:
    """:data:`SEARCH_SQL` with ``condition`` (over ``e``, e.g. a ``session_meta`` lookup on
    ``e.session_id``) added to its ``WHERE``; its parameters go between the pattern and the
    limit."""
    return SEARCH_SQL.replace(" ORDER BY", f" AND {condition} ORDER BY", 1)


_PENDING = (
    "SELECT p.session_id, p.source_id FROM search_pending AS p"
    " JOIN sessions AS s ON s.id = p.session_id ORDER BY s.created_us, p.session_id"
)
_FILL_FROM_SOURCE = (
    "UPDATE entries AS c SET search_text = s.search_text FROM entries AS s"
    " WHERE c.session_id = %(sid)s AND c.type = 'message' AND c.search_text IS NULL"
    " AND s.session_id = %(src)s AND s.id = c.id AND s.search_text IS NOT NULL"
    " AND s.body::text = c.body::text"
)
_UNFILLED = (
    "SELECT seq, body::text FROM entries"
    " WHERE session_id = %s AND type = 'message' AND search_text IS NULL"
)
# the pending rows' text where the source still has it, else their JSON to compute it from
_PENDING_ROWS = (
    "SELECT c.session_id, c.id, c.body::text, s.modified_us, c.seq, src.search_text"
    " FROM search_pending AS p JOIN sessions AS s ON s.id = p.session_id"
    " JOIN entries AS c ON c.session_id = p.session_id AND c.type = 'message'"
    " AND c.search_text IS NULL"
    " LEFT JOIN entries AS src ON src.session_id = p.source_id AND src.id = c.id"
    " AND src.body::text = c.body::text"
)


def like_pattern(needle: str) -> str:
    """The ``LIKE`` pattern (escape ``\\``) of a substring search for ``needle``."""
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return "%" + (clean(escaped) or "") + "%"


async def catch_up(conn: Any, codec: Codec | None = None) -> None:
    """Fill the search text of every pending session's copies, in one transaction on
    ``conn`` (an autocommit connection), and drop their ``search_pending`` rows (``codec``:
    the store's cipher, :func:`row_index_text`).

    Each pending row is locked first (``FOR UPDATE``), in the same order by every caller, so
    concurrent searches resolve each session once and never deadlock; one that another search
    resolved meanwhile is skipped.

    Raises:
        psycopg.Error: the database failed or refused the writes.
    """
    cur = await conn.execute(_PENDING)
    pending = await cur.fetchall()
    if not pending:
        return
    async with conn.transaction():
        for session_id, source_id in pending:
            cur = await conn.execute(
                "SELECT 1 FROM search_pending WHERE session_id = %s FOR UPDATE", (session_id,)
            )
            if await cur.fetchone() is None:
                continue
            await conn.execute(_FILL_FROM_SOURCE, {"sid": session_id, "src": source_id})
            cur = await conn.execute(_UNFILLED, (session_id,))
            unfilled = await cur.fetchall()
            bodies = await expand_all_async(
                [r[1] for r in unfilled], lambda hashes: fetch_payloads(conn, hashes)
            )
            updates = []
            for (seq, _), body in zip(unfilled, bodies, strict=True):
                text = row_index_text(body, codec)
                if text is not None:
                    updates.append((clean(text), session_id, seq))
            if updates:
                async with conn.cursor() as c:
                    await c.executemany(
                        "UPDATE entries SET search_text = %s WHERE session_id = %s AND seq = %s",
                        updates,
                    )
            await conn.execute("DELETE FROM search_pending WHERE session_id = %s", (session_id,))


async def pending_hits(
    conn: Any, needle: str, codec: Codec | None = None
) -> list[tuple[str, str, str, int, int]]:
    """The pending copies whose text holds ``needle``, as :data:`SEARCH_SQL` rows (unsorted):
    what :func:`catch_up` would index, matched here without writing anything.

    Raises:
        psycopg.Error: the database failed.
    """
    want = clean(needle) or ""
    cur = await conn.execute(_PENDING_ROWS)
    hits = []
    for session_id, entry_id, body, modified_us, seq, text in await cur.fetchall():
        if text is None:
            (whole,) = await expand_all_async([body], lambda hashes: fetch_payloads(conn, hashes))
            text = clean(row_index_text(whole, codec))
        if text is not None and want in text:
            hits.append((session_id, entry_id, body, modified_us, seq))
    return hits
