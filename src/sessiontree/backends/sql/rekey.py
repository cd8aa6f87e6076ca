"""``rekey``: every sealed value of an encrypted store sealed again under the current key, in
batches, crash-safe (docs/storage.md "Encryption at rest").

What is sealed (:data:`REKEY_TABLES`): entries' bodies, drafts, sessions' first messages and
the trash's bodies (one sealed body per line). Each batch is one transaction of
compare-and-set updates (a row changed meanwhile, a draft say, is left to its writer, which
seals under the current key anyway), so a process killed at any moment leaves every value
whole, under the old key or the new, and a second run seals what the first did not. Values
still in clear (written before the store was encrypted) are sealed too. Once no value is
under another key, the search index loses any plaintext (unless the store indexes it), SQLite
rewrites its file and empties its WAL (no free page keeps an old value), and the store's
``encryption`` row keeps the current key id alone: the old keys may leave the ring.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from sessiontree.storage.encryption import META_KEY, Codec, keys_only_current

__all__ = ["REKEY_TABLES", "RekeyTable", "rekey_sql", "rekey_store", "scan_params"]


@dataclass(frozen=True)
class RekeyTable:
    """A column holding sealed values, and the primary key its rows are paged by."""

    name: str
    """The table."""
    keys: tuple[str, ...]
    """Its primary key columns, the order rows are read in."""
    column: str
    """The sealed column (``NULL`` rows are skipped)."""
    json: bool = False
    """A ``json`` column on PostgreSQL (compared and read as text, written as JSON)."""
    lines: bool = False
    """Holds sealed values one per line (the trash): every row is read and checked line by
    line, since the first line's key id does not tell the others'."""


REKEY_TABLES = (
    RekeyTable("entries", ("session_id", "seq"), "body", json=True),
    RekeyTable("drafts", ("session_id",), "body"),
    RekeyTable("sessions", ("id",), "first_message"),
    RekeyTable("trash", ("session_id",), "bodies", lines=True),
)
"""Every sealed column of the schema, in the order ``rekey`` goes through them."""


def rekey_sql(
    table: RekeyTable, dialect: Literal["sqlite", "postgres"], prefix_len: int
) -> dict[str, str]:
    """The statements of ``rekey`` over ``table``, for sealed values under the current key
    starting with a prefix of ``prefix_len`` characters: ``count`` and ``first`` / ``next``
    (a page of ``(key..., value)`` rows not under the current key; parameters from
    :func:`scan_params`) and ``update`` (parameters: new value, the key, old value)."""
    p = "?" if dialect == "sqlite" else "%s"
    col = table.column
    text = f"{col}::text" if table.json and dialect == "postgres" else col
    n = int(prefix_len)
    head = f"substr({text}, 1, {n})" if dialect == "sqlite" else f"left({text}, {n})"
    keys = ", ".join(table.keys)
    where = f"{col} IS NOT NULL" + ("" if table.lines else f" AND {head} <> {p}")
    after = (
        f"({keys}) > ({', '.join([p] * len(table.keys))})"
        if len(table.keys) > 1
        else f"{keys} > {p}"
    )
    page = f"SELECT {keys}, {text} FROM {table.name} WHERE {where}"
    order = f" ORDER BY {keys} LIMIT {p}"
    cast = f"{p}::json" if table.json and dialect == "postgres" else p
    match = " AND ".join(f"{k} = {p}" for k in table.keys)
    return {
        "count": f"SELECT count(*) FROM {table.name} WHERE {where}",
        "first": page + order,
        "next": f"{page} AND {after}{order}",
        "update": f"UPDATE {table.name} SET {col} = {cast} WHERE {match} AND {text} = {p}",
    }


def scan_params(
    table: RekeyTable, prefix: str, after: tuple[Any, ...] | None, limit: int | None
) -> tuple[str, list[Any]]:
    """Which :func:`rekey_sql` statement reads the next page (``count`` when ``limit`` is
    ``None``) and its parameters."""
    params: list[Any] = [] if table.lines else [prefix]
    if limit is None:
        return "count", params
    if after is not None:
        params.extend(after)
    params.append(limit)
    return ("first" if after is None else "next"), params


Progress = Callable[[str, int, int], None]
"""``progress(table, rows done, rows to do)``, called after each batch."""


async def rekey_store(
    engine: Any, codec: Codec, *, batch: int = 500, progress: Progress | None = None
) -> int:
    """Seal every value of the store again under ``codec``'s current key; the number of
    values sealed again.

    ``engine`` is the inner SQL engine of a :class:`~sessiontree.backends.sql.sealed.SealedEngine`
    (``rekey_count``, ``rekey_scan``, ``rekey_write``, ``scrub_after_rekey``,
    ``get_store_meta``, ``put_store_meta``). Safe to run while other processes use the store, provided they seal
    under the same current key; safe to kill at any moment and run again.

    Raises:
        EncryptionKeyError: a value is sealed under a key the ring lacks or that fails.
        StorageError: the database failed or is read-only.
    """
    prefix = codec.text_prefix
    changed = 0

    def again(value: str) -> str:
        return codec.seal_text(codec.open_text(value))

    def again_lines(value: str) -> str:
        return "\n".join(
            line if line.startswith(prefix) else again(line) for line in value.split("\n") if line
        )

    for table in REKEY_TABLES:
        total = await engine.rekey_count(table, prefix)
        done = 0
        after: tuple[Any, ...] | None = None
        if progress is not None:
            progress(table.name, 0, total)
        while True:
            rows = await engine.rekey_scan(table, prefix, after, batch)
            if not rows:
                break
            updates = []
            for row in rows:
                key, old = tuple(row[:-1]), row[-1]
                new = again_lines(old) if table.lines else again(old)
                if new != old:
                    updates.append((new, *key, old))
            changed += await engine.rekey_write(table, updates)
            done += len(rows)
            after = tuple(rows[-1][:-1])
            if progress is not None:
                progress(table.name, done, max(done, total))
    await engine.scrub_after_rekey(not codec.index_text)
    stored = await engine.get_store_meta(META_KEY)
    if stored is not None:
        await engine.put_store_meta(META_KEY, keys_only_current(codec, stored))
    return changed
