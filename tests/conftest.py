"""Shared fixtures: ``repo`` runs a test once per backend (memory, jsonl, sqlite, postgres);
``reopen`` opens a fresh repository object on the same store as ``repo``."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from backends import BACKENDS
from sessiontree import SessionRepo
from sessiontree.testing.conformance import Reopen

pytest_plugins = ["pytester"]

SELECTED = [b for b in os.environ.get("SESSIONTREE_BACKENDS", ",".join(BACKENDS)).split(",") if b]


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
