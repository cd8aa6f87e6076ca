"""Shared fixtures: ``repo`` runs a test once per backend (memory, jsonl, sqlite, postgres)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from backends import BACKENDS
from sessiontree import SessionRepo

SELECTED = [b for b in os.environ.get("SESSIONTREE_BACKENDS", ",".join(BACKENDS)).split(",") if b]


@pytest.fixture(params=SELECTED)
async def repo(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionRepo]:
    """A fresh, empty repository of each backend."""
    async with BACKENDS[request.param](tmp_path) as r:
        yield r
