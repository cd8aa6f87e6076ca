"""``sessiontree prune``, ``trash list|restore|empty`` and ``du`` on the file-backed stores."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from sessiontree import open_repo
from sessiontree.cli import cli
from sessiontree.testing.builders import assistant, tool_call, tool_result, user

OLD = datetime(2020, 1, 1, tzinfo=UTC)


def _run(store: str, *args: str, code: int = 0, input: str | None = None) -> Result:
    result = CliRunner().invoke(
        cli, ["--store", store, *args], input=input, env={"COLUMNS": "80", "SESSIONTREE_URL": None}
    )
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return result


def _json(store: str, *args: str) -> Any:
    return orjson.loads(_run(store, *args, "--json").stdout)


def _fill(store: str) -> dict[str, str]:
    """An old unnamed session, an old named one and a recent one holding a large output."""

    async def fill() -> dict[str, str]:
        async with open_repo(store) as repo:
            old = await repo.create(metadata={"cwd": "/w/app"})
            await old.append_message(user("old question"))
            await old.storage.set_modified_at(OLD)
            named = await repo.create()
            await named.append_message(user("named question"))
            await named.append_session_name("keep")
            await named.storage.set_modified_at(OLD)
            big = await repo.create(metadata={"cwd": "/w/big"})
            await big.append_message(user("read"))
            await big.append_message(assistant("", tool_call("c1")))
            out = await big.append_message(tool_result("c1", "y" * 20_000))
            return {"old": old.id, "named": named.id, "big": big.id, "out": out}

    return asyncio.run(fill())


@pytest.fixture(params=["sqlite", "jsonl"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return f"jsonl://{tmp_path / 'store'}"


def _ids(store: str) -> set[str]:
    return {r["id"] for r in _json(store, "list")}


def test_prune_dry_run_then_prune_then_restore(store: str) -> None:
    ids = _fill(store)
    dry = _run(store, "prune", "--older-than", "90d", "--dry-run").stdout
    assert "would move 1 session" in dry and "kept 1 named or labelled" in dry
    assert ids["old"][:8] in dry
    assert _ids(store) == {ids["old"], ids["named"], ids["big"]}

    report = _json(store, "prune", "--older-than", "90d")
    assert [t["id"] for t in report["trashed"]] == [ids["old"]]
    assert report["kept"] == [ids["named"]] and report["bytesTrashed"] > 0
    assert _ids(store) == {ids["named"], ids["big"]}
    trashed = _json(store, "trash", "list")
    assert [(t["id"], t["entryCount"]) for t in trashed] == [(ids["old"], 1)]

    assert "restored" in _run(store, "trash", "restore", ids["old"][:10]).stdout
    assert _ids(store) == {ids["old"], ids["named"], ids["big"]}
    assert _json(store, "trash", "list") == []


def test_trash_empty_asks_and_purges(store: str) -> None:
    ids = _fill(store)
    _run(store, "prune", "--older-than", "1d", "--include-named")
    assert len(_json(store, "trash", "list")) == 2
    assert "nothing deleted" in _run(store, "trash", "empty", input="n\n").stdout
    assert "nothing to purge" in _run(store, "trash", "empty", "--older-than", "1d").stdout
    assert "purged 2 sessions" in _run(store, "trash", "empty", "--yes").stdout
    assert _json(store, "trash", "list") == []
    assert _ids(store) == {ids["big"]}
    _run(store, "trash", "restore", ids["old"], code=1)


def test_prune_refuses_a_bad_age(store: str) -> None:
    result = _run(store, "prune", "--older-than", "soon", code=2)
    assert "not an age" in result.stderr


def test_du_names_the_largest_session_and_payload(store: str) -> None:
    ids = _fill(store)
    report = _json(store, "du")
    assert report["sessions"] == 3 and report["groups"][0]["key"] == ids["big"]
    assert report["groups"][0]["sizeBytes"] > 20_000
    assert report["largestEntries"][0]["entryId"] == ids["out"]
    by_project = _json(store, "du", "--by", "project")
    assert [g["key"] for g in by_project["groups"]][:2] == ["big", "(unknown)"]
    text = _run(store, "du").stdout
    assert ids["out"][:8] in text and ids["big"][:8] in text and "3 sessions" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    _run(store, "prune", "--older-than", "1d")
    assert "in the trash" in _run(store, "du").stdout
