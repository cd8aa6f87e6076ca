"""Repositories and :func:`open_repo`, which picks a backend from a URL (docs/api.md); the
trash, :func:`prune` and :func:`store_usage` (:mod:`sessiontree.repos.retention`); scoped views
(:func:`scoped`, :mod:`sessiontree.repos.scoped`)."""

from __future__ import annotations

import os
from pathlib import Path

from sessiontree.backends.memory.repo import MemoryRepo
from sessiontree.backends.sql.payloads import PAYLOAD_THRESHOLD, check_threshold
from sessiontree.errors import StorageError
from sessiontree.repos.base import SessionRepo
from sessiontree.repos.retention import (
    TRASH_KEEP_DAYS,
    EntrySize,
    PayloadSize,
    PayloadStore,
    PayloadUsage,
    PruneCandidate,
    PruneReport,
    SizeGroup,
    StoreUsage,
    TrashedSession,
    TrashRepo,
    as_trash_repo,
    prune,
    store_usage,
)
from sessiontree.repos.scoped import Scope, ScopedRepo, scoped
from sessiontree.storage.encryption import KeyRing
from sessiontree.storage.growth import check_max_session_bytes

__all__ = [
    "TRASH_KEEP_DAYS",
    "EntrySize",
    "PayloadSize",
    "PayloadStore",
    "PayloadUsage",
    "MemoryRepo",
    "PruneCandidate",
    "PruneReport",
    "Scope",
    "ScopedRepo",
    "SessionRepo",
    "SizeGroup",
    "StoreUsage",
    "TrashRepo",
    "TrashedSession",
    "as_trash_repo",
    "default_store_path",
    "default_url",
    "is_private_url",
    "open_repo",
    "prune",
    "scoped",
    "store_usage",
]


def default_store_path() -> Path:
    """The SQLite file of the default store: ``sessions.db`` in the user data directory
    (platformdirs; ``~/.local/share/sessiontree/sessions.db`` on Linux), absolute. It may
    not exist yet: it is created by the first write."""
    import platformdirs

    return (platformdirs.user_data_path("sessiontree", appauthor=False) / "sessions.db").absolute()


def default_url() -> str:
    """``SESSIONTREE_URL`` if set, else a SQLite file in the user data directory (platformdirs):
    ``sqlite:////home/me/.local/share/sessiontree/sessions.db`` on Linux (four slashes: an
    absolute path)."""
    url = os.environ.get("SESSIONTREE_URL")
    if url:
        return url
    return f"sqlite:///{default_store_path()}"  # an absolute path: sqlite:////home/…


def is_private_url(url: str) -> bool:
    """Whether ``url`` names a store that lives only in the object that opens it:
    ``memory://`` (or ``memory:``) and SQLite's in-memory ``sqlite://`` and ``sqlite:///:memory:``.

    Code that shares one repository per URL (the framework adapters) opens such a URL anew
    for each user instead, as the OpenAI Agents SDK's ``SQLiteSession(":memory:")`` is
    private to its instance; a named ``memory://NAME`` is shared by all who give that name.
    """
    if url in ("memory:", "memory://"):
        return True
    if url.startswith("sqlite:"):
        rest = url.split(":", 1)[1].partition("?")[0]
        return rest in ("", "//", ":memory:", "///:memory:", "//:memory:")
    return False


def open_repo(
    url: str | None = None,
    *,
    read_only: bool = False,
    max_session_bytes: int | None = None,
    keys: KeyRing | None = None,
    index_plaintext: bool | None = None,
    payload_threshold: int | None = PAYLOAD_THRESHOLD,
) -> SessionRepo:
    """Open a store by URL (not async; connections open lazily on first use).

    * ``memory://`` (a ``memory://NAME`` too): a new, empty store in this object
    * ``jsonl:///abs/dir`` or a plain directory path
    * ``sqlite:///rel/file.db`` (relative to the working directory) or
      ``sqlite:////abs/file.db`` (absolute), as in SQLAlchemy; ``sqlite:///:memory:`` too
    * ``postgresql://user@host:port/db``
    * ``None``: :func:`default_url`.

    For writing (the default) a store that does not exist is created on first use (files
    ``0600``, directories ``0700``). With ``read_only`` nothing is ever created or written: a
    missing store (file, directory or schema) raises :class:`StorageError` on first use, and
    so does every write (SQLite is opened with ``mode=ro``). A store that cannot be written
    (read-only media, no write permission) can still be read when opened for writing; its
    writes raise :class:`StorageError` saying why.

    ``max_session_bytes`` is the store's size limit per session (docs/storage.md "Size
    limit"; off by default): an append (or a ``create`` with entries) that would take a
    session over that many bytes raises :class:`~sessiontree.errors.SessionTooLargeError`
    and writes nothing; the append that takes it past 80% issues a
    :class:`~sessiontree.errors.SessionSizeWarning`.

    ``keys`` encrypts a SQLite or PostgreSQL store at rest (docs/storage.md "Encryption at
    rest"); ``None`` takes the ring of ``$SESSIONTREE_KEYS`` or of the file
    ``$SESSIONTREE_KEY_FILE`` names, if either is set. ``index_plaintext``: see
    :class:`~sessiontree.backends.sql.repo.SQLRepo`. A store opened without the keys it was
    encrypted under raises :class:`~sessiontree.errors.EncryptionKeyError` on first use.
    JSONL stores are not encrypted (keys given for one are refused); a ``memory://`` store
    keeps nothing at rest and ignores them.

    ``payload_threshold`` (SQLite and PostgreSQL): every string of entry JSON of this many
    bytes or more (images, tool outputs) is stored once for the whole store (docs/storage.md
    "Large payloads stored once"); ``None`` stores new entries whole. JSONL and memory keep
    every payload inline (a JSONL store stays pi's format) and take no other value than the
    default; so does an encrypted store (each payload sealed with its entry).

    Raises:
        StorageError: an unknown scheme; keys for a JSONL store; a ``payload_threshold``
            that is not ``None`` or ≥ 64, or not the default on JSONL or memory.
        MissingExtraError: the backend's optional driver is not installed (``cryptography``
            for keys: ``sessiontree[encryption]``).
        InvalidArgumentError: ``max_session_bytes`` is not ``None`` or a whole number ≥ 1; a
            malformed key ring in the environment.
    """
    if url is None:
        url = default_url()
    if not isinstance(url, str) or not url.strip():
        raise StorageError(
            "empty store URL: use memory://, jsonl:///dir, sqlite:///file.db or "
            "postgresql://user@host/db (or leave it unset for the default store)"
        )
    limit = check_max_session_bytes(max_session_bytes)
    threshold = check_threshold(payload_threshold)
    if threshold != PAYLOAD_THRESHOLD and not url.startswith(("sqlite:", "postgres")):
        raise StorageError(
            f"payload_threshold is a setting of the SQL stores; {url!r} keeps payloads inline"
        )
    if url.startswith("memory:"):
        return MemoryRepo(max_session_bytes=limit)
    if url.startswith(("sqlite:", "postgresql:", "postgres:")):
        from sessiontree.backends.sql.repo import SQLRepo

        return SQLRepo(
            url,
            read_only=read_only,
            max_session_bytes=limit,
            keys=KeyRing.from_env() if keys is None else keys,
            index_plaintext=index_plaintext,
            payload_threshold=threshold,
        )
    if keys is not None or KeyRing.from_env() is not None:
        raise StorageError(
            f"{url}: encryption at rest is for SQLite and PostgreSQL stores; a JSONL store "
            "stays plain pi-compatible files (unset $SESSIONTREE_KEYS / $SESSIONTREE_KEY_FILE)"
        )
    if url.startswith("jsonl:"):
        from sessiontree.backends.jsonl.repo import JSONLRepo

        path = url[len("jsonl://") :] if url.startswith("jsonl://") else url[len("jsonl:") :]
        return JSONLRepo(path, read_only=read_only, max_session_bytes=limit)
    if "://" in url or (":" in url.split("/")[0] and not os.path.isabs(url)):
        scheme = url.split(":", 1)[0]
        raise StorageError(
            f"unknown store URL scheme {scheme!r} in {url!r}: use memory://, jsonl:///dir, "
            "sqlite:///file.db or postgresql://user@host/db"
        )
    from sessiontree.backends.jsonl.repo import JSONLRepo

    return JSONLRepo(url, read_only=read_only, max_session_bytes=limit)
