"""What the conformance cases share: a snapshot of a session and a fresh view of it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from sessiontree.entries import dump_entry
from sessiontree.repos import open_repo
from sessiontree.repos.base import SessionRepo
from sessiontree.session import Session

__all__ = ["reopened", "snapshot"]


async def snapshot(session: Session) -> tuple[list[dict[str, Any]], str | None]:
    """Every entry (wire dicts, append order) and the leaf: equal snapshots = nothing changed."""
    return [dump_entry(e) for e in await session.get_entries()], await session.get_leaf_id()


@contextlib.asynccontextmanager
async def reopened(repo: SessionRepo, session: Session) -> AsyncIterator[Session]:
    """The same session read back through a fresh repository object (same store)."""
    if repo.url.startswith("memory:"):
        yield await repo.open(session.id)
        return
    other = open_repo(repo.url)
    try:
        yield await other.open(session.id)
    finally:
        await other.close()
