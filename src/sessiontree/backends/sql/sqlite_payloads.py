"""The SQLite engine's payload statements (:mod:`sessiontree.backends.sql.payloads`): storing
payloads with their references, reading them, and freeing them, each inside the caller's
transaction on the engine's connection."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import orjson

from sessiontree.backends.sql.payloads import (
    EXISTING_SQL_SQLITE,
    FETCH_SQL_SQLITE,
    INSERT_PAYLOAD_SQL,
    INSERT_REF_SQL,
    RELEASE_SQL,
    payload_rows,
    texts_of,
)

__all__ = ["fetch_payloads", "release_payloads", "store_payloads"]


def store_payloads(conn: sqlite3.Connection, session_id: str, payloads: dict[str, bytes]) -> None:
    """Store ``payloads`` (hash → bytes) unless stored, and ``session_id``'s references to
    them, inside the caller's write transaction."""
    if not payloads:
        return
    # the bytes of those stored already are not handed to SQLite again (a screenshot sent
    # every turn is a MB per append otherwise)
    stored = conn.execute(
        EXISTING_SQL_SQLITE, (orjson.dumps(sorted(payloads)).decode(),)
    ).fetchall()
    new = dict(payloads)
    for (h,) in stored:
        new.pop(h, None)
    conn.executemany(INSERT_PAYLOAD_SQL.format(p="?"), payload_rows(new))
    conn.executemany(INSERT_REF_SQL.format(p="?"), [(session_id, h) for h in sorted(payloads)])


def release_payloads(conn: sqlite3.Connection, owner: str) -> None:
    """Drop ``owner``'s references and every payload nothing else refers to (in the caller's
    write transaction)."""
    freeing, dropping = RELEASE_SQL
    conn.execute(freeing.format(p="?"), (owner, owner))
    conn.execute(dropping.format(p="?"), (owner,))


def fetch_payloads(conn: sqlite3.Connection, hashes: Sequence[str]) -> dict[str, str]:
    """hash → stored literal of each of ``hashes`` that is stored."""
    if not hashes:
        return {}
    rows = conn.execute(FETCH_SQL_SQLITE, (orjson.dumps(list(hashes)).decode(),)).fetchall()
    return texts_of(rows)
