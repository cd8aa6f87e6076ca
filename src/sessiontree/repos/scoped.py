"""Scoping: one store serving many users, applications and projects (docs/storage.md "Scoping").

A session's scope is three fields of its metadata: ``user_id`` (wire ``userId``), ``app`` and
``project`` (:func:`~sessiontree.metadata.project_of`: its ``project``, else its working
directory). They are ordinary ``where`` keys, so a listing filtered by them is indexed on SQL
(``session_meta``) and read from the listing index on JSONL.

:func:`scoped` gives a view of a repository restricted to one scope: every session it
creates carries the scope, and it never lists, opens, searches, forks, deletes, trashes,
restores, purges or sizes a session of another scope; an id of another scope is
:class:`~sessiontree.errors.SessionNotFoundError`, the same as an id that does not exist.
:func:`~sessiontree.repos.prune`, :func:`~sessiontree.repos.store_usage`,
:func:`~sessiontree.usage.collect_usage` and the exports given a view stay in its scope.
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sessiontree._args import check_count
from sessiontree.entries import Entry
from sessiontree.errors import InvalidArgumentError, InvalidMetadataError, SessionNotFoundError
from sessiontree.metadata import (
    SearchHit,
    SessionInfo,
    SessionMetadata,
    matches_where,
    where_pairs,
)
from sessiontree.repos.base import SessionRepo, check_list_args, coerce_metadata
from sessiontree.repos.retention import EntrySize, TrashedSession, as_trash_repo
from sessiontree.stored import PreparedEntry
from sessiontree.tree import ForkPosition

if TYPE_CHECKING:
    from sessiontree.session import Session

__all__ = ["Scope", "ScopedRepo", "scoped"]

_FIELDS = (("user_id", "userId"), ("app", "app"), ("project", "project"))
"""Each scope field and its metadata wire key."""


@dataclass(frozen=True)
class Scope:
    """Who a session belongs to; a field left ``None`` does not restrict."""

    user_id: str | None = None
    """The user (metadata ``userId``)."""
    app: str | None = None
    """The application (metadata ``app``)."""
    project: str | None = None
    """The project (metadata ``project``, else the working directory ``cwd``)."""

    def __post_init__(self) -> None:
        for name, _ in _FIELDS:
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise InvalidArgumentError(
                    f"scope {name} must be a non-empty string or None, not {value!r}"
                )
        if self.is_empty():
            raise InvalidArgumentError(
                "a scope needs user_id, app or project: an empty scope would see every session"
            )

    def is_empty(self) -> bool:
        """Whether no field is set."""
        return all(getattr(self, name) is None for name, _ in _FIELDS)

    def where(self) -> dict[str, str]:
        """The scope as a ``repo.list(where=...)`` filter (wire keys to values)."""
        return {key: getattr(self, name) for name, key in _FIELDS if getattr(self, name)}

    def matches(self, metadata: SessionMetadata) -> bool:
        """Whether a session with ``metadata`` is in this scope."""
        return matches_where(metadata, where_pairs(self.where()))

    def apply(self, metadata: SessionMetadata) -> SessionMetadata:
        """``metadata`` with the scope's fields set, for a session created in the scope.

        Raises:
            InvalidMetadataError: ``metadata`` names another user, app or project.
        """
        update: dict[str, str] = {}
        for name, key in _FIELDS:
            wanted = getattr(self, name)
            given = getattr(metadata, name)
            if wanted is None or given == wanted:
                continue
            if given is not None:
                raise InvalidMetadataError(
                    f"session metadata {key}={given!r} is outside the scope {key}={wanted!r}"
                )
            update[name] = wanted
        return metadata.model_copy(update=update) if update else metadata

    def describe(self) -> str:
        """``userId=u1 app=support``: the scope for messages."""
        return " ".join(f"{k}={v}" for k, v in self.where().items())


def scoped(
    repo: SessionRepo,
    *,
    user_id: str | None = None,
    app: str | None = None,
    project: str | None = None,
) -> ScopedRepo:
    """A view of ``repo`` restricted to one scope (module docstring); views nest.

    The view holds no resources: closing it (or leaving ``async with`` on it) leaves ``repo``
    open, so a service may make one view per request over one shared repository.

    Raises:
        InvalidArgumentError: no field given, or a field that is not a non-empty string.
    """
    return ScopedRepo(repo, Scope(user_id=user_id, app=app, project=project))


class ScopedRepo:
    """A :class:`~sessiontree.repos.SessionRepo` and
    :class:`~sessiontree.repos.TrashRepo` restricted to :attr:`scope` (:func:`scoped`).

    An id of another scope raises the very error of an id that does not exist. Cost over the
    repository: ``open``/``delete``/``fork``/``trash`` read the session's metadata first
    (``open``); ``search`` is the repository's, filtered in its query (over-fetched for a
    repository whose ``search`` takes no ``where``); ``session_sizes`` and
    ``largest_entries`` list the scope's sessions (one indexed listing), the latter asking
    for more entries while other scopes' come first; ``restore``/``purge`` read the trash
    listing.
    """

    def __init__(self, repo: SessionRepo, scope: Scope) -> None:
        self.repo = repo
        """The repository viewed."""
        self.scope = scope
        """The scope every call is restricted to."""
        self.url = repo.url
        """The viewed repository's URL."""
        self._search_filters = "where" in inspect.signature(repo.search).parameters

    def __repr__(self) -> str:
        return f"ScopedRepo({self.repo!r}, {self.scope.describe()})"

    async def __aenter__(self) -> ScopedRepo:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Nothing to release: the viewed repository stays open (:func:`scoped`)."""

    def _not_found(self, id: str, where: str = "") -> SessionNotFoundError:
        return SessionNotFoundError(
            id, f"session not found{where} in scope {self.scope.describe()}"
        )

    async def create(
        self,
        id: str | None = None,
        metadata: SessionMetadata | Mapping[str, Any] | None = None,
        *,
        entries: Sequence[Entry | PreparedEntry] = (),
        created_at: datetime | None = None,
    ) -> Session:
        """See :meth:`SessionRepo.create`; the session carries the scope's fields.

        Raises:
            InvalidMetadataError: ``metadata`` names another user, app or project; nothing
                is created. SessionExistsError: the id is taken (in any scope).
        """
        meta = self.scope.apply(coerce_metadata(metadata))
        return await self.repo.create(id, meta, entries=entries, created_at=created_at)

    async def open(self, id: str) -> Session:
        """See :meth:`SessionRepo.open`.

        Raises:
            SessionNotFoundError: no such session, or one of another scope.
        """
        try:
            session = await self.repo.open(id)
        except SessionNotFoundError:
            # the same error as for another scope's id: the caller cannot tell them apart
            raise self._not_found(id) from None
        if not self.scope.matches(session.storage.metadata):
            await session.close()
            raise self._not_found(id)
        return session

    async def _check(self, id: str) -> None:
        """Raise :class:`SessionNotFoundError` unless session ``id`` is in the scope."""
        session = await self.open(id)
        await session.close()

    async def list(
        self,
        *,
        limit: int | None = None,
        offset: int = 0,
        where: Mapping[str, str | int | bool | None] | None = None,
    ) -> builtins.list[SessionInfo]:
        """See :meth:`SessionRepo.list`: the scope's sessions (a ``where`` of its own narrows
        them further; one naming another user, app or project finds nothing)."""
        check_list_args(limit, offset)
        merged = self._merged(where)
        if merged is None:
            return []
        return await self.repo.list(limit=limit, offset=offset, where=merged)

    def _merged(self, where: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """``where`` with the scope's conditions added; ``None`` when it names another
        value of a scope key (no session can match both).

        Raises:
            InvalidMetadataError: a bad ``where``.
        """
        own = where_pairs(where)
        merged: dict[str, Any] = dict(where or {})
        for key, value in self.scope.where().items():
            if key in own and own[key] != where_pairs({key: value})[key]:
                return None
            merged[key] = value
        return merged

    async def _ids(self) -> set[str]:
        return {i.id for i in await self.list()}

    async def delete(self, id: str) -> None:
        """See :meth:`SessionRepo.delete`. Raises SessionNotFoundError (also for another scope's)."""
        await self._check(id)
        await self.repo.delete(id)

    async def fork(self, id: str, target_id: str, position: ForkPosition = "at") -> Session:
        """See :meth:`SessionRepo.fork`: the fork keeps the source's metadata, so its scope.
        Raises SessionNotFoundError (also for another scope's), EntryNotFoundError."""
        await self._check(id)
        return await self.repo.fork(id, target_id, position)

    async def search(
        self,
        query: str,
        limit: int = 20,
        *,
        where: Mapping[str, str | int | bool | None] | None = None,
    ) -> builtins.list[SearchHit]:
        """See :meth:`SessionRepo.search`: hits in the scope's sessions only (narrowed by a
        ``where`` of its own), in the repository's order.

        A repository whose ``search`` takes ``where`` (every shipped one) filters in its own
        query; for any other the view asks for 4× more hits each round while other scopes'
        hits fill the page.
        """
        check_count(limit, "limit")
        merged = self._merged(where)
        if self._search_filters:
            if merged is None:  # a where outside the scope: nothing, once the query is checked
                await self.repo.search(query, 0)
                return []
            return await self.repo.search(query, limit, where=merged)  # type: ignore[call-arg]
        await self.repo.search(query, 0)  # checks the query alike
        ids = {i.id for i in await self.list(where=where)}
        if not ids or limit <= 0:
            return []
        ask = limit
        while True:
            hits = await self.repo.search(query, ask)
            kept = [h for h in hits if h.session_id in ids]
            if len(kept) >= limit or len(hits) < ask:
                return kept[:limit]
            ask *= 4

    # ------------------------------------------------------------------ TrashRepo

    async def trash(self, id: str) -> TrashedSession:
        """See :meth:`TrashRepo.trash`. Raises SessionNotFoundError (also for another scope's)."""
        await self._check(id)
        return await as_trash_repo(self.repo).trash(id)

    async def list_trash(self) -> builtins.list[TrashedSession]:
        """See :meth:`TrashRepo.list_trash`: the scope's trashed sessions."""
        rows = await as_trash_repo(self.repo).list_trash()
        return [t for t in rows if self.scope.matches(t.metadata)]

    async def _check_trashed(self, id: str) -> None:
        if not any(t.id == id for t in await self.list_trash()):
            raise self._not_found(id, " in the trash")

    async def restore(self, id: str) -> Session:
        """See :meth:`TrashRepo.restore`. Raises SessionNotFoundError (also for another
        scope's), SessionExistsError."""
        await self._check_trashed(id)
        return await as_trash_repo(self.repo).restore(id)

    async def purge(self, id: str) -> None:
        """See :meth:`TrashRepo.purge`. Raises SessionNotFoundError (also for another scope's)."""
        await self._check_trashed(id)
        await as_trash_repo(self.repo).purge(id)

    async def session_sizes(self) -> dict[str, int]:
        """See :meth:`TrashRepo.session_sizes`: the scope's sessions."""
        sizes = await as_trash_repo(self.repo).session_sizes()
        ids = await self._ids()
        return {k: v for k, v in sizes.items() if k in ids}

    async def largest_entries(self, limit: int) -> builtins.list[EntrySize]:
        """See :meth:`TrashRepo.largest_entries`: entries of the scope's sessions."""
        check_count(limit, "limit")
        trash = as_trash_repo(self.repo)
        ids = await self._ids()
        if not ids or limit <= 0:
            return []
        ask = limit
        while True:
            rows = await trash.largest_entries(ask)
            kept = [r for r in rows if r.session_id in ids]
            if len(kept) >= limit or len(rows) < ask:
                return kept[:limit]
            ask *= 4
