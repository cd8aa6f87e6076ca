"""The PostgreSQL engine's payload statements (:mod:`sessiontree.backends.sql.payloads`):
storing payloads with their references, copying a fork's, and freeing them, each inside the
caller's transaction.

Writers of references hold the shared transaction-level advisory lock
:data:`~sessiontree.backends.sql.payloads.PG_LOCK_KEY`, a release holds it exclusively: the
release's ``NOT EXISTS`` then runs after every transaction that wrote a reference has
committed (or rolled back), and sees its rows; a writer that comes after a release finds the
payloads it needs gone and stores them again (it has their bytes), or, for a fork's copies,
finds the source's rows gone and fails whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sessiontree.backends.sql.payloads import (
    COPY_REFS_SQL,
    EXISTING_SQL_POSTGRES,
    FETCH_SQL_POSTGRES,
    INSERT_PAYLOAD_SQL,
    INSERT_REF_SQL,
    PG_LOCK_KEY,
    RELEASE_SQL,
    payload_rows,
    texts_of,
)

__all__ = ["copy_refs", "fetch_payloads", "release_payloads", "store_payloads"]

_SHARED = "SELECT pg_advisory_xact_lock_shared(%s)"
_EXCLUSIVE = "SELECT pg_advisory_xact_lock(%s)"


async def store_payloads(conn: Any, session_id: str, payloads: Mapping[str, bytes]) -> None:
    """Store ``payloads`` (hash → bytes) unless stored, and ``session_id``'s references to
    them (in the caller's transaction; hashes in sorted order, so two writers never wait on
    each other's rows in a cycle)."""
    if not payloads:
        return
    await conn.execute(_SHARED, (PG_LOCK_KEY,))
    # under the lock, a payload stored already stays: its bytes are not sent again (a
    # screenshot sent every turn is a MB per append otherwise)
    cur = await conn.execute(EXISTING_SQL_POSTGRES, (sorted(payloads),))
    new = dict(payloads)
    for (h,) in await cur.fetchall():
        new.pop(h, None)
    async with conn.cursor() as cur:
        if new:
            await cur.executemany(INSERT_PAYLOAD_SQL.format(p="%s"), payload_rows(new))
        await cur.executemany(
            INSERT_REF_SQL.format(p="%s"), [(session_id, h) for h in sorted(payloads)]
        )


async def copy_refs(conn: Any, session_id: str, source_id: str) -> None:
    """``session_id`` (a fork) refers to every payload ``source_id`` refers to (in the caller's
    transaction, before the fork reads the source's rows)."""
    await conn.execute(_SHARED, (PG_LOCK_KEY,))
    await conn.execute(COPY_REFS_SQL.format(p="%s"), (session_id, source_id))


async def release_payloads(conn: Any, owner: str) -> None:
    """Drop ``owner``'s references and every payload nothing else refers to (in the caller's
    transaction; nothing is locked when it has none)."""
    cur = await conn.execute("SELECT 1 FROM payload_refs WHERE session_id = %s LIMIT 1", (owner,))
    if await cur.fetchone() is None:
        return
    await conn.execute(_EXCLUSIVE, (PG_LOCK_KEY,))
    freeing, dropping = RELEASE_SQL
    await conn.execute(freeing.format(p="%s"), (owner, owner))
    await conn.execute(dropping.format(p="%s"), (owner,))


async def fetch_payloads(conn: Any, hashes: Sequence[str]) -> dict[str, str]:
    """hash → stored literal of each of ``hashes`` that is stored."""
    if not hashes:
        return {}
    cur = await conn.execute(FETCH_SQL_POSTGRES, (list(hashes),))
    return texts_of(await cur.fetchall())
