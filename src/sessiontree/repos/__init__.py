"""Repositories and :func:`open_repo`, which picks a backend from a URL (docs/api.md)."""

from __future__ import annotations

import os

from sessiontree.errors import StorageError
from sessiontree.repos.base import SessionRepo
from sessiontree.repos.memory import MemoryRepo

__all__ = ["MemoryRepo", "SessionRepo", "default_url", "open_repo"]


def default_url() -> str:
    """``SESSIONTREE_URL`` if set, else a SQLite file in the user data directory (platformdirs)."""
    url = os.environ.get("SESSIONTREE_URL")
    if url:
        return url
    import platformdirs

    path = platformdirs.user_data_path("sessiontree", appauthor=False) / "sessions.db"
    return f"sqlite:///{path}"


def open_repo(url: str | None = None) -> SessionRepo:
    """Open a store by URL (not async; connections open lazily on first use).

    * ``memory://``
    * ``jsonl:///abs/dir`` or a plain directory path
    * ``sqlite:///abs/file.db`` (``sqlite:///:memory:`` too)
    * ``postgresql://user@host:port/db``
    * ``None``: :func:`default_url`.

    Raises:
        StorageError: an unknown scheme.
        MissingExtraError: the backend's optional driver is not installed.
    """
    if url is None:
        url = default_url()
    if not isinstance(url, str) or not url.strip():
        raise StorageError(
            "empty store URL: use memory://, jsonl:///dir, sqlite:///file.db or "
            "postgresql://user@host/db (or leave it unset for the default store)"
        )
    if url.startswith("memory:"):
        return MemoryRepo()
    if url.startswith(("sqlite:", "postgresql:", "postgres:")):
        from sessiontree.repos.sql import SQLRepo

        return SQLRepo(url)
    if url.startswith("jsonl:"):
        from sessiontree.repos.jsonl import JSONLRepo

        path = url[len("jsonl://") :] if url.startswith("jsonl://") else url[len("jsonl:") :]
        return JSONLRepo(path)
    if "://" in url or (":" in url.split("/")[0] and not os.path.isabs(url)):
        scheme = url.split(":", 1)[0]
        raise StorageError(
            f"unknown store URL scheme {scheme!r} in {url!r}: use memory://, jsonl:///dir, "
            "sqlite:///file.db or postgresql://user@host/db"
        )
    from sessiontree.repos.jsonl import JSONLRepo

    return JSONLRepo(url)
