"""PostgreSQL search needs the pg_trgm extension: a role that may not create it gets a clear
error naming the extension and what to do, and nothing half-made is left behind."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import pytest

from backends import PG_ADMIN_URL, unavailable
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.errors import StorageError


@contextlib.contextmanager
def database_without_pg_trgm() -> Iterator[tuple[str, str]]:
    """A fresh database (no extensions) and a role that may create tables in its own schema
    but not extensions; yields (admin URL of the database, the role's URL)."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover
        unavailable("psycopg is not installed")
        raise
    name = f"sessiontree_noext_{uuid.uuid4().hex[:10]}"
    role = f"st_plain_{uuid.uuid4().hex[:10]}"
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        unavailable(f"PostgreSQL at {PG_ADMIN_URL} is not reachable: {exc}")
        raise
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
        try:
            with psycopg.connect(f"{base}/{name}", autocommit=True) as db:
                db.execute(f'CREATE SCHEMA "{role}" AUTHORIZATION "{role}"')
            host = base.split("@", 1)[1]
            yield (
                f"{base}/{name}",
                f"postgresql://{role}@{host}/{name}?options=-csearch_path%3D{role}",
            )
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')


async def test_missing_pg_trgm_that_the_role_cannot_create_is_a_clear_error() -> None:
    import psycopg

    with database_without_pg_trgm() as (admin_url, role_url):
        async with SQLRepo(role_url) as repo:
            with pytest.raises(StorageError) as err:
                await repo.list()
        message = str(err.value)
        assert "pg_trgm" in message and "CREATE EXTENSION pg_trgm" in message
        assert "\n" not in message
        with psycopg.connect(admin_url) as conn:
            tables = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname NOT IN"
                " ('pg_catalog', 'information_schema')"
            ).fetchall()
        assert tables == []  # the migration's transaction was rolled back whole
        # once an administrator has created it, the same role's store works
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_trgm")
        async with SQLRepo(role_url) as repo:
            s = await repo.create()
            await s.append_message({"role": "user", "content": "find tui-renderer.ts"})
            assert [h.session_id for h in await repo.search("renderer.ts")] == [s.id]
