"""Shared fixtures: ``repo`` runs a test once per backend (memory, jsonl, sqlite, postgres);
``reopen`` opens a fresh repository object on the same store as ``repo``; ``store_url`` and
``sql_repo`` give an empty SQL store of each dialect."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from backends import BACKENDS, SELECTED, throwaway_pg_database
from sessiontree import SessionRepo
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.testing.conformance import Reopen

pytest_plugins = ["pytester"]


@pytest.fixture(params=SELECTED)
async def repo(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionRepo]:
    """A fresh, empty repository of each backend."""
    async with BACKENDS[request.param].open(tmp_path) as r:
        yield r


@pytest.fixture
def reopen(request: pytest.FixtureRequest, repo: SessionRepo) -> Reopen:
    """For ``repo``: a fresh repository object of its backend on the same store."""
    backend: str = request.node.callspec.params["repo"]
    return BACKENDS[backend].reopen(repo)


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty SQL store of each dialect."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
    else:
        with throwaway_pg_database() as url:
            yield url


@pytest.fixture
async def sql_repo(store_url: str) -> AsyncIterator[SQLRepo]:
    """A repository on ``store_url``."""
    async with SQLRepo(store_url) as repo:
        yield repo
