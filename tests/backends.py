"""Factories for every backend the conformance suite runs on.

Each backend has two parts: ``open`` is an async context manager yielding a fresh, empty
``SessionRepo``; ``reopen`` gives, for that repository, the conformance suite's ``reopen``: a
fresh repository object of the same class on the same store (the memory store returns itself).
PostgreSQL uses one throwaway database per test run (created from the ``test`` database on
127.0.0.1:5432 and dropped at exit) and one fresh schema in it per repo.

A test whose resource is missing (a backend that cannot start, the session collection beside
the checkout, the browser) calls :func:`unavailable`: it skips with the reason, and fails
instead when ``SESSIONTREE_REQUIRE_ALL=1`` (set by ``.ci/run``, where no test may skip). The
generic ``CI`` variable, which GitHub Actions and most CI services set, changes nothing.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sessiontree import SessionRepo
from sessiontree.backends.jsonl.repo import JSONLRepo
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.repos import MemoryRepo
from sessiontree.testing.conformance import Reopen, same_repo

PG_ADMIN_URL = os.environ.get("SESSIONTREE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
REQUIRE_ALL_VARIABLE = "SESSIONTREE_REQUIRE_ALL"
"""The environment variable that turns every "resource unavailable" skip into a failure."""


def _require_all(value: str) -> bool:
    """``SESSIONTREE_REQUIRE_ALL``'s value as a switch: ``1``/``true``/``yes`` on, empty,
    ``0``/``false``/``no`` off (any case); anything else is a usage error, so a typo cannot
    quietly turn the switch off."""
    word = value.strip().lower()
    if word in ("1", "true", "yes"):
        return True
    if word in ("", "0", "false", "no"):
        return False
    raise pytest.UsageError(f"{REQUIRE_ALL_VARIABLE}={value!r}: expected 1 or 0")


REQUIRE_ALL = _require_all(os.environ.get(REQUIRE_ALL_VARIABLE, ""))
"""Whether no test may skip for a missing resource (``SESSIONTREE_REQUIRE_ALL=1``)."""


def unavailable(reason: str) -> None:
    """Skip the test for a missing resource, with ``reason``; with
    ``SESSIONTREE_REQUIRE_ALL=1`` fail it instead (no test may skip there)."""
    if REQUIRE_ALL:
        pytest.fail(f"required resource unavailable ({REQUIRE_ALL_VARIABLE}=1): {reason}")
    pytest.skip(reason)


@contextlib.asynccontextmanager
async def memory_repo(tmp_path: Path) -> AsyncIterator[SessionRepo]:
    repo = MemoryRepo()
    yield repo
    await repo.close()


@contextlib.asynccontextmanager
async def jsonl_repo(tmp_path: Path) -> AsyncIterator[SessionRepo]:
    repo = JSONLRepo(tmp_path / "jsonl-store")
    yield repo
    await repo.close()


@contextlib.asynccontextmanager
async def sqlite_repo(tmp_path: Path) -> AsyncIterator[SessionRepo]:
    repo = SQLRepo(f"sqlite:///{tmp_path / 'store.db'}")
    yield repo
    await repo.close()


_RUN_DATABASE: str | None = None
"""The throwaway database of this test run (created on first use, dropped at exit)."""


def _drop_run_database(name: str) -> None:
    import psycopg

    with (
        contextlib.suppress(psycopg.Error),
        psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as admin,
    ):
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _run_database(psycopg: Any) -> str:
    """Create this run's database once (CREATE DATABASE takes seconds; a schema takes ms)."""
    global _RUN_DATABASE
    if _RUN_DATABASE is None:
        import atexit

        name = f"sessiontree_t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        atexit.register(_drop_run_database, name)
        _RUN_DATABASE = name
    return _RUN_DATABASE


@contextlib.contextmanager
def throwaway_pg_database() -> Any:
    """Yield the URL of an empty PostgreSQL store; drop it afterwards.

    One throwaway database per test run; each store is a fresh schema in it, selected by the
    URL (``options=-csearch_path=<schema>``), so every test starts empty in milliseconds.
    """
    try:
        import psycopg
    except ImportError:  # pragma: no cover
        unavailable("psycopg is not installed")
        raise
    try:
        database = _run_database(psycopg)
    except psycopg.OperationalError as exc:
        unavailable(f"PostgreSQL at {PG_ADMIN_URL} is not reachable: {exc}")
        raise
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    db_url = f"{base}/{database}"
    schema = f"s_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(db_url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield f"{db_url}?options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(db_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextlib.contextmanager
def shared_store_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty store of ``backend`` (``sqlite``, ``jsonl`` or ``postgres``) that
    several processes can open at once."""
    if backend == "postgres":
        with throwaway_pg_database() as url:
            yield url
    elif backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
    else:
        yield f"jsonl://{tmp_path / 'store'}"


@contextlib.asynccontextmanager
async def postgres_repo(tmp_path: Path) -> AsyncIterator[SessionRepo]:
    with throwaway_pg_database() as url:
        repo = SQLRepo(url)
        try:
            yield repo
        finally:
            await repo.close()


def reopen_memory(repo: SessionRepo) -> Reopen:
    """The memory store lives in its one object: reopening returns it."""
    return lambda: same_repo(repo)


def reopen_jsonl(repo: SessionRepo) -> Reopen:
    assert isinstance(repo, JSONLRepo)
    return lambda: JSONLRepo(repo.root)


def reopen_sql(repo: SessionRepo) -> Reopen:
    assert isinstance(repo, SQLRepo)
    return lambda: SQLRepo(repo.url)


@dataclass(frozen=True)
class Backend:
    """How to open a fresh store of one backend, and how to reopen it."""

    open: Callable[[Path], contextlib.AbstractAsyncContextManager[SessionRepo]]
    reopen: Callable[[SessionRepo], Reopen]


BACKENDS: dict[str, Backend] = {
    "memory": Backend(memory_repo, reopen_memory),
    "jsonl": Backend(jsonl_repo, reopen_jsonl),
    "sqlite": Backend(sqlite_repo, reopen_sql),
    "postgres": Backend(postgres_repo, reopen_sql),
}

SELECTED = [b for b in os.environ.get("SESSIONTREE_BACKENDS", ",".join(BACKENDS)).split(",") if b]
"""The backends the tests run on: ``SESSIONTREE_BACKENDS`` (comma-separated), default all."""


def pg_exec(url: str, *statements: str) -> list[Any]:
    """Run ``statements`` on the PostgreSQL database at ``url`` (autocommit); the rows of the
    last one (``[]`` when it returns none)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows: list[Any] = []
        for sql in statements:
            cur = conn.execute(sql)
            rows = cur.fetchall() if cur.description else []
        return rows
