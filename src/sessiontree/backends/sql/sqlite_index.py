"""The SQLite search index, written after the append: the watermark and its catch-up.

An append writes the ``entries`` row and the session row only; the FTS5 table ``entries_fts``
is brought up to date later. Writing it in every append made each ``COMMIT`` flush a new FTS5
segment, which more than doubled the cost of an append (bench/README.md). Rows above the watermark ``search_index_state.indexed_upto`` are not indexed yet; a
search indexes them first (:func:`catch_up`, one write transaction, one ``executemany``), and
an append that leaves :data:`~sessiontree.backends.sql.sqlite_append.INDEX_BACKLOG` or more of them
does it before its own ``COMMIT`` (:func:`index_pending`, then with the text its plan already
holds for its own rows), so a search never has much to catch up. A search waits at most
:data:`CATCH_UP_WAIT_MS` for the write lock; while another process holds it, the lagging rows
are searched through a connection-private FTS5 table instead (:func:`search_pending`).
Indexed text is :func:`~sessiontree.backends.sql.plan.index_text` on every path: the
lower-cased message text, in an FTS5 ``trigram`` table (schema version 4), so a search finds
any substring (:mod:`sessiontree.storage.search`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from sessiontree.backends.sql.payloads import expand_all
from sessiontree.backends.sql.plan import row_index_text
from sessiontree.backends.sql.schema import SQLITE_TOKENIZER
from sessiontree.backends.sql.sqlite_open import is_busy, write_transaction
from sessiontree.backends.sql.sqlite_payloads import fetch_payloads
from sessiontree.storage.encryption import Codec

__all__ = [
    "ADVANCE_INDEX",
    "CATCH_UP_WAIT_MS",
    "INSERT_FTS",
    "catch_up",
    "index_pending",
    "match_clause",
    "pending_texts",
    "search_pending",
]

CATCH_UP_WAIT_MS = 50
"""How long a search waits for the write lock to bring the index up to date (ms); past
that it searches the lagging rows in a private table instead (see :func:`search_pending`)."""

INSERT_FTS = "INSERT INTO entries_fts (rowid, text) VALUES (?, ?)"
ADVANCE_INDEX = (
    "UPDATE search_index_state SET indexed_upto = (SELECT coalesce(max(rowid), 0) FROM entries)"
)


def match_clause(needle: str) -> tuple[str, tuple[str, ...]]:
    """The ``WHERE`` clause (over ``entries_fts``) and parameters that find ``needle``, a
    lower-cased query (:mod:`sessiontree.storage.search`): a trigram phrase lookup narrowed
    by ``instr`` for three characters or more; ``instr`` alone below that (a trigram index
    has nothing to look up then) and for a query holding NUL (which FTS5 cannot parse)."""
    if len(needle) >= 3 and "\x00" not in needle:  # FTS5's query syntax ends a phrase at NUL
        phrase = '"' + needle.replace('"', '""') + '"'
        return "entries_fts MATCH ? AND instr(entries_fts.text, ?) > 0", (phrase, needle)
    return "instr(entries_fts.text, ?) > 0", (needle,)


def catch_up(
    conn: sqlite3.Connection,
    timeout: float,
    *,
    can_write: bool = True,
    before_commit: Callable[[], None] | None = None,
    codec: Codec | None = None,
) -> int | None:
    """Index every entry above the watermark, if any, in one write transaction.

    Waits at most :data:`CATCH_UP_WAIT_MS` for the write lock, so a long write of another
    process does not make every search wait the whole busy timeout (``timeout``, seconds,
    restored afterwards) and then fail. Returns ``None`` when the index is complete, else the
    watermark it could not move (another writer holds the lock, or ``can_write`` is false:
    a read-only connection): the caller then searches the rows above it separately
    (:func:`search_pending`). ``before_commit`` runs before the ``COMMIT`` (the engine's
    file-identity check); ``codec``: the store's cipher (:func:`row_index_text`).

    Raises:
        sqlite3.Error: the database failed (the engine names the file).
    """
    row = conn.execute(
        "SELECT indexed_upto, indexed_upto < (SELECT coalesce(max(rowid), 0) FROM entries)"
        " FROM search_index_state"
    ).fetchone()
    if not row or not row[1]:
        return None
    if not can_write:
        return int(row[0])
    conn.execute(f"PRAGMA busy_timeout = {CATCH_UP_WAIT_MS}")
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            return int(row[0])
        raise
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    with write_transaction(conn, begun=True, before_commit=before_commit):
        # read again under the write lock: another process may have caught up
        (indexed_upto,) = conn.execute("SELECT indexed_upto FROM search_index_state").fetchone()
        index_pending(conn, indexed_upto, codec)
        conn.execute(ADVANCE_INDEX)
    return None


def search_pending(
    conn: sqlite3.Connection,
    where: str,
    params: tuple[str, ...],
    limit: int,
    indexed_upto: int,
    codec: Codec | None = None,
) -> list[Any]:
    """The search while the index lags and another writer holds the lock (or the connection
    cannot write).

    ``where`` and ``params`` come from :func:`match_clause`. The rows above ``indexed_upto``
    go into a connection-private (``temp``) FTS5 table with the same tokenizer — writing it
    takes no lock on the database. Its matches (the newest entries) come first, then the
    index's, newest first; no row twice (another process may have caught up meanwhile).
    Rows as ``(session_id, entry_id, body)``.

    Raises:
        sqlite3.Error: the database failed.
    """
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.pending_fts USING fts5"
        f" (text, tokenize = '{SQLITE_TOKENIZER}')"
    )
    conn.execute("DELETE FROM temp.pending_fts")
    pending_where = where.replace("entries_fts", "pending_fts")
    try:
        conn.executemany(
            "INSERT INTO temp.pending_fts (rowid, text) VALUES (?, ?)",
            pending_texts(conn, indexed_upto, codec),
        )
        return conn.execute(
            "SELECT e.session_id, e.id, e.body FROM"
            " (SELECT rowid, min(src) AS src FROM"
            f"   (SELECT rowid, 1 AS src FROM main.entries_fts WHERE {where}"
            f"    UNION ALL SELECT rowid, 0 AS src FROM temp.pending_fts WHERE {pending_where})"
            "  GROUP BY rowid ORDER BY src, rowid DESC LIMIT ?)"
            " AS f JOIN entries AS e ON e.rowid = f.rowid ORDER BY f.src, f.rowid DESC",
            (*params, *params, limit),
        ).fetchall()
    finally:
        conn.execute("DELETE FROM temp.pending_fts")


def pending_texts(
    conn: sqlite3.Connection, indexed_upto: int, codec: Codec | None = None
) -> list[tuple[int, str]]:
    """``(rowid, text)`` of every ``message`` row above ``indexed_upto`` with text to index
    (``codec``: the store's cipher, :func:`row_index_text`)."""
    rows = conn.execute(
        "SELECT rowid, body FROM entries WHERE rowid > ? AND type = 'message' ORDER BY rowid",
        (indexed_upto,),
    ).fetchall()
    bodies = expand_all([r[1] for r in rows], lambda hashes: fetch_payloads(conn, hashes))
    texts = []
    for (rowid, _), body in zip(rows, bodies, strict=True):
        text = row_index_text(body, codec)
        if text is not None:
            texts.append((rowid, text))
    return texts


def index_pending(conn: sqlite3.Connection, indexed_upto: int, codec: Codec | None = None) -> None:
    """Insert the search text of every ``message`` row above ``indexed_upto`` (in a write
    transaction; the caller then moves the watermark with :data:`ADVANCE_INDEX`)."""
    texts = pending_texts(conn, indexed_upto, codec)
    if texts:
        conn.executemany(INSERT_FTS, texts)
