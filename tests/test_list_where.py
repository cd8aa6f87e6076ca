"""``repo.list(where=...)`` beyond the conformance suite: the SQL index and its migration,
and ``sessiontree list --where``."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends import BACKENDS
from sessiontree import SessionRepo, open_repo
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.backends.sql.schema import MIGRATIONS, SCHEMA_VERSION
from sessiontree.cli import cli
from sessiontree.errors import InvalidMetadataError
from test_sql import _exec

META_VERSION = 1 + next(i for i, m in enumerate(MIGRATIONS) if "session_meta" in m.description)
"""The schema version whose step made ``session_meta``."""


async def test_the_filter_reads_the_session_meta_index(store_url: str) -> None:
    async with SQLRepo(store_url) as repo:
        s = await repo.create(metadata={"userId": "u1", "nested": {"x": 1}, "n": 3, "f": 1.5})
    rows = sorted(_exec(store_url, "SELECT key, value, session_id FROM session_meta"))
    # nested objects and floats are not filterable; the rest is stored as JSON text
    assert rows == [("n", "3", s.id), ("userId", '"u1"', s.id)]
    if store_url.startswith("sqlite:"):
        plan = _exec(
            store_url,
            "EXPLAIN QUERY PLAN SELECT session_id FROM session_meta WHERE key = 'userId' AND value = '\"u1\"'",
        )
        assert any("USING PRIMARY KEY" in str(r) or "COVERING INDEX" in str(r) for r in plan), plan


async def test_a_store_of_the_previous_version_is_migrated_and_filled(store_url: str) -> None:
    async with SQLRepo(store_url) as repo:
        a = await repo.create(metadata={"userId": "u1", "appName": 'ünï "q"', "flag": False})
        b = await repo.create(metadata={"userId": "u2", "none": None, "big": 12345678901234})
    # back to the version before session_meta: the table and the stamps from its step on gone
    # (later steps run again and must not mind finding their own work done)
    _exec(
        store_url,
        "DROP TABLE session_meta",
        f"DELETE FROM schema_version WHERE version >= {META_VERSION}",
    )
    async with SQLRepo(store_url) as repo:
        assert [i.id for i in await repo.list(where={"userId": "u1"})] == [a.id]
        assert [i.id for i in await repo.list(where={"appName": 'ünï "q"'})] == [a.id]
        assert [i.id for i in await repo.list(where={"flag": False})] == [a.id]
        assert [i.id for i in await repo.list(where={"none": None})] == [b.id]
        assert [i.id for i in await repo.list(where={"big": 12345678901234})] == [b.id]
    versions = _exec(store_url, "SELECT version FROM schema_version ORDER BY version")
    assert versions[-1] == (SCHEMA_VERSION,)


# 20,000 characters that do not compress (a B-tree index row holds about 2,700 bytes)
LONG_TEXT = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(20000))


async def test_where_on_a_long_system_prompt_or_key(repo: SessionRepo) -> None:
    """A long string value (a system prompt) or key is stored and filtered on like any other."""
    s = await repo.create(metadata={"systemPrompt": LONG_TEXT, LONG_TEXT: "v"})
    other = await repo.create(metadata={"systemPrompt": LONG_TEXT[:-1] + "x"})
    assert [i.id for i in await repo.list(where={"systemPrompt": LONG_TEXT})] == [s.id]
    assert [i.id for i in await repo.list(where={LONG_TEXT: "v"})] == [s.id]
    assert {i.id for i in await repo.list()} == {s.id, other.id}


async def test_where_with_nul_in_a_key_finds_the_session(repo: SessionRepo) -> None:
    s = await repo.create(metadata={"a\x00b": "x", "userId": "u\x00"})
    await repo.create(metadata={"userId": "u"})
    assert [i.id for i in await repo.list(where={"a\x00b": "x"})] == [s.id]
    assert [i.id for i in await repo.list(where={"userId": "u\x00"})] == [s.id]


@pytest.mark.parametrize("where", [{"userId": "\ud83d"}, {"\ud83d": "x"}])
async def test_where_with_a_lone_surrogate_is_a_typed_error(
    repo: SessionRepo, where: dict[str, Any]
) -> None:
    await repo.create(metadata={"userId": "u1"})
    with pytest.raises(InvalidMetadataError, match="surrogate"):
        await repo.list(where=where)


async def test_a_previous_version_store_with_a_long_value_is_migrated(store_url: str) -> None:
    async with SQLRepo(store_url) as repo:
        s = await repo.create(metadata={"systemPrompt": LONG_TEXT, "userId": "u1"})
    _exec(
        store_url,
        "DROP TABLE session_meta",
        f"DELETE FROM schema_version WHERE version >= {META_VERSION}",
    )
    async with SQLRepo(store_url) as repo:
        assert [i.id for i in await repo.list(where={"systemPrompt": LONG_TEXT})] == [s.id]
        assert [i.id for i in await repo.list(where={"userId": "u1"})] == [s.id]


def test_cli_list_where(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"

    async def fill() -> list[str]:
        async with open_repo(url) as repo:
            ids = []
            for meta in (
                {"userId": "u1", "tier": 2},
                {"userId": "u2", "tier": 2},
                {"userId": "u1"},
            ):
                s = await repo.create(metadata=meta)
                await s.append_message({"role": "user", "content": f"hi {meta}"})
                ids.append(s.id)
            return ids

    ids = asyncio.run(fill())
    runner = CliRunner()

    def listed(*where: str) -> list[str]:
        result = runner.invoke(
            cli, ["--store", url, "list", "--json", *where], env={"SESSIONTREE_URL": None}
        )
        assert result.exit_code == 0, result.output
        return [r["id"] for r in orjson.loads(result.stdout)]

    assert listed("--where", "userId=u1") == [ids[2], ids[0]]
    assert listed("--where", "userId=u1", "--where", "tier:=2") == [ids[0]]
    assert listed("--where", "tier=2") == []  # the string "2" is not the number 2
    none = runner.invoke(
        cli, ["--store", url, "list", "--where", "userId=[u9]"], env={"SESSIONTREE_URL": None}
    )
    assert none.exit_code == 0
    assert "no sessions match --where userId=[u9]" in none.stderr
    assert "no sessions in this store" not in none.stderr
    bad = runner.invoke(
        cli, ["--store", url, "list", "--where", "userId"], env={"SESSIONTREE_URL": None}
    )
    assert bad.exit_code == 2 and "KEY=VALUE" in bad.output
    bad = runner.invoke(
        cli, ["--store", url, "list", "--where", "tier:=1.5"], env={"SESSIONTREE_URL": None}
    )
    assert bad.exit_code != 0 and "where" in bad.output


scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "b", "1", "", 'ü "q"'])
)
# free keys: userId, app and project are typed (strings) since scoping, tests/test_scoping.py
metadata = st.dictionaries(st.sampled_from(["owner", "appName", "tier", "x"]), scalar, max_size=3)


@pytest.mark.parametrize("backend", list(BACKENDS))
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(metas=st.lists(metadata, min_size=1, max_size=5), where=metadata)
def test_where_keeps_exactly_the_matching_sessions(
    backend: str, tmp_path: Path, metas: list[dict[str, Any]], where: dict[str, Any]
) -> None:
    """The filter on every backend equals a plain Python filter: every key present, values
    equal as JSON (so 1, True and "1" differ)."""

    def matches(meta: dict[str, Any]) -> bool:
        return all(
            k in meta and type(meta[k]) is type(v) and meta[k] == v for k, v in where.items()
        )

    async def run() -> tuple[set[str], set[str]]:
        async with BACKENDS[backend].open(tmp_path / uuid.uuid4().hex) as repo:
            made = [(await repo.create(metadata=m)).id for m in metas]
            expected = {sid for sid, m in zip(made, metas, strict=True) if matches(m)}
            return {i.id for i in await repo.list(where=where)}, expected

    got, expected = asyncio.run(run())
    assert got == expected
