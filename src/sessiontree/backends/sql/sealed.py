"""An encrypted store's engine: the SQL engine with every stored body sealed and opened at its
boundary (docs/storage.md "Encryption at rest").

What is written is sealed where rows are planned (:func:`~sessiontree.backends.sql.plan.plan_append`
with the connection's :class:`~sessiontree.storage.encryption.Codec`, and
:func:`~sessiontree.backends.sql.plan.seal_rows` for a fork's rows here); what is read is
opened here, in :class:`SealedEngine`, before :class:`~sessiontree.backends.sql.SQLStorage`
or :class:`~sessiontree.backends.sql.repo.SQLRepo` sees it, so nothing above the engine knows
the store is encrypted. The ids, parent ids, types, timestamps, label/leaf targets, sequence
numbers and session rows (but their first message) stay in clear, so the tree is walked in
SQL as before.

A method of the inner engine that this class does not wrap (one added later that returns
stored bodies) is refused with :class:`AttributeError` rather than handing out ciphertext.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sessiontree.backends.sql.fork import ChainRow, ForkPlan
from sessiontree.backends.sql.plan import seal_rows
from sessiontree.entries import Entry
from sessiontree.metadata import SearchHit, SessionInfo, SessionMetadata
from sessiontree.storage.base import EntryCursor
from sessiontree.storage.encryption import Codec
from sessiontree.storage.lease import Lease

__all__ = ["SealedEngine"]

_PASS = frozenset(
    {
        "append",
        "append_if_leaf",
        "create_session",
        "set_modified",
        "load_metadata",
        "session_leaf",
        "entry_seq",
        "sync_positions",
        "delete_session",
        "trash_session",
        "list_trash",
        "purge_trash",
        "session_sizes",
        "session_size",
        "largest_entries",
        "search",
        "close",
        "get_store_meta",
        "put_store_meta",
        "rekey_count",
        "rekey_scan",
        "rekey_write",
        "scrub_after_rekey",
        "get_payloads",
        "payload_usage",
        "acquire_lease",
        "renew_lease",
        "release_lease",
        "get_lease",
    }
)
"""Inner methods that take or return no stored body as such (appends seal in the planner,
search opens its hits in the engine): handed through."""


class SealedEngine:
    """The :class:`~sessiontree.backends.sql.plan.SQLEngine` of an encrypted store: ``inner``
    (whose connection carries ``codec``) with the stored bodies opened on the way out and a
    fork's and a draft's sealed on the way in.

    Raises (every method): :class:`~sessiontree.errors.EncryptionKeyError` when a body is
    sealed under a key the ring lacks or that fails, besides what the inner engine raises.
    """

    def __init__(self, inner: Any, codec: Codec) -> None:
        inner.connection.codec = codec
        # each payload stays inline, sealed with its entry: one stored once by its SHA-256
        # would be in clear, and its hash would tell which entries hold the same content
        inner.payload_threshold = None
        self.inner = inner
        """The SQLite or PostgreSQL engine."""
        self.codec = codec
        """The store's cipher."""
        self.url: str = inner.url
        """The store's URL."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if name in _PASS or not inspect.iscoroutinefunction(value):
            return value
        raise AttributeError(
            f"{name!r} is not available on an encrypted store (SealedEngine does not open "
            "what it returns)"
        )

    def _open(self, text: str) -> str:
        return self.codec.open_text(text)

    async def fork_session(
        self, source_id: str, session_id: str, metadata: SessionMetadata, plan: ForkPlan
    ) -> None:
        """See :class:`SQLEngine`: the plan's written rows and first message sealed; its
        copies are copied sealed as they are."""
        rows, first = seal_rows(self.codec, plan.rows, plan.first_message)
        plan = dataclasses.replace(plan, rows=rows, first_message=first)
        await self.inner.fork_session(source_id, session_id, metadata, plan)

    async def get_fork_rows(
        self, session_id: str, leaf_id: str, *, metadata: bool = False
    ) -> tuple[list[ChainRow], list[tuple[str, str]], str | None]:
        """See :class:`SQLEngine`."""
        chain, labels, meta = await self.inner.get_fork_rows(session_id, leaf_id, metadata=metadata)
        o = self._open
        return (
            [r if r[3] is None else ChainRow(r[0], r[1], r[2], o(r[3]), r[4]) for r in chain],
            [(i, o(b)) for i, b in labels],
            meta,
        )

    async def get_bodies(self, session_id: str, entry_ids: Sequence[str]) -> dict[str, str]:
        """See :class:`SQLEngine`."""
        found = await self.inner.get_bodies(session_id, entry_ids)
        return {i: self._open(b) for i, b in found.items()}

    async def get_entry(self, session_id: str, entry_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        return self.codec.open_optional(await self.inner.get_entry(session_id, entry_id))

    async def get_entries(
        self, session_id: str, cursor: EntryCursor, after_seq: int | None
    ) -> list[tuple[str, str]]:
        """See :class:`SQLEngine`."""
        o = self._open
        return [(i, o(b)) for i, b in await self.inner.get_entries(session_id, cursor, after_seq)]

    async def get_chain(
        self, session_id: str, leaf_id: str | None
    ) -> list[tuple[str, str | None, str, str, int]]:
        """See :class:`SQLEngine`."""
        return _open_rows(self._open, await self.inner.get_chain(session_id, leaf_id))

    async def get_chain_until(
        self, session_id: str, leaf_id: str | None, stop_type: str | None, stop_id: str | None
    ) -> list[tuple[str, str | None, str, str, int, int]]:
        """See :class:`SQLEngine`."""
        rows = await self.inner.get_chain_until(session_id, leaf_id, stop_type, stop_id)
        return _open_rows(self._open, rows)

    async def get_label_body(self, session_id: str, entry_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        return self.codec.open_optional(await self.inner.get_label_body(session_id, entry_id))

    async def get_name_body(self, session_id: str) -> str | None:
        """See :class:`SQLEngine`."""
        return self.codec.open_optional(await self.inner.get_name_body(session_id))

    async def get_draft(self, session_id: str) -> str | None:
        """See :class:`SQLEngine`: the draft is sealed like an entry."""
        return self.codec.open_optional(await self.inner.get_draft(session_id))

    async def put_draft(
        self, session_id: str, body: str | None, updated_ms: int, lease: Lease | None = None
    ) -> bool:
        """See :class:`SQLEngine`."""
        sealed = None if body is None else self.codec.seal_text(body)
        return bool(await self.inner.put_draft(session_id, sealed, updated_ms, lease))

    async def trashed_bodies(self, session_id: str) -> tuple[Any, ...] | None:
        """See :class:`SQLEngine`: each line opened (a trashed session keeps its rows sealed)."""
        found = await self.inner.trashed_bodies(session_id)
        if found is None:
            return None
        meta, created, modified, text = found
        lines = "\n".join(self._open(line) for line in text.split("\n") if line)
        return meta, created, modified, lines

    async def list_sessions(
        self, limit: int | None, offset: int, where: Mapping[str, str]
    ) -> list[SessionInfo]:
        """See :class:`SQLEngine`: the first messages opened."""
        infos = await self.inner.list_sessions(limit, offset, where)
        o = self.codec.open_optional
        return [
            i
            if i.first_message is None
            else dataclasses.replace(i, first_message=o(i.first_message))
            for i in infos
        ]

    async def search(
        self, query: str, limit: int, where: Mapping[str, str] | None = None
    ) -> list[SearchHit]:
        """See :class:`SQLEngine`: only what the store indexes (nothing unless it indexes
        plaintext; the engine opens its hits)."""
        return list(await self.inner.search(query, limit, where))

    async def append(
        self,
        session_id: str,
        entries: Sequence[Entry],
        *,
        at_leaf: bool,
        bodies: Sequence[bytes] | None = None,
        lease: Lease | None = None,
    ) -> list[Entry]:
        """See :class:`SQLEngine` (sealed by the planner)."""
        return list(
            await self.inner.append(
                session_id, entries, at_leaf=at_leaf, bodies=bodies, lease=lease
            )
        )


def _open_rows(open_: Callable[[str], str], rows: list[Any]) -> list[Any]:
    """Chain rows with their JSON (index 3) opened; the session row (no JSON) kept."""
    return [r if r[3] is None else (*r[:3], open_(r[3]), *r[4:]) for r in rows]
