"""A newcomer's first hour with the CLI: store URLs (issue 24, item 1).

The CLI runs as a real process where the working directory, ``HOME`` or the terminal matter
(``TTY_COMPATIBLE=1`` makes rich treat a pipe as a terminal of ``COLUMNS`` characters), and
in-process through click's runner elsewhere.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from session_files import VENDORED
from sessiontree import open_repo
from sessiontree.errors import StorageError
from sessiontree.repos import default_store_path, default_url
from sessiontree.storage.sql.sqlite_open import sqlite_path_from_url

SRC = Path(__file__).resolve().parents[1] / "src"
PI_SMALL = VENDORED / "pi" / "agent-sessions_pi-small.v3.jsonl"
PI_SMALL_ID = "019e19b4-eb48-746a-aa6b-8dfcfa37954b"
PI_LARGE = VENDORED / "pi" / "pi-mono_before-compaction.v1.jsonl"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
TERMINAL_80 = {"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"}


def fresh_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a user who never ran sessiontree: an empty ``HOME`` and XDG dirs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "SESSIONTREE_"))}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    )
    env.update(extra)
    return env


def sessiontree(
    *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m sessiontree ARGS`` as a process; stdout without colour codes."""
    done = subprocess.run(
        [sys.executable, "-m", "sessiontree", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, ANSI.sub("", done.stdout), done.stderr
    )


def build(url: str, sessions: dict[str, list[dict[str, object]]]) -> None:
    """Create one session per key with these messages, appended one by one (UUID v7 ids)."""

    async def run() -> None:
        async with open_repo(url) as repo:
            for sid, messages in sessions.items():
                s = await repo.create(id=sid)
                for m in messages:
                    await s.append_message(m)
                await s.close()

    asyncio.run(run())


# ---------------------------------------------------------------- 1. sqlite:/// URLs


def test_sqlite_url_with_three_slashes_is_relative_to_the_working_directory(
    tmp_path: Path,
) -> None:
    # the README's agent example opened sqlite:///agent.db, which wrote /agent.db
    name = f"agent-{tmp_path.name}.db"
    (tmp_path / "home").mkdir()
    env = fresh_env(tmp_path / "home")
    done = sessiontree(
        "--store", f"sqlite:///{name}", "import", str(PI_SMALL), env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / name).is_file()
    assert not Path("/", name).exists()
    listed = sessiontree("--store", f"sqlite:///{name}", "list", "--json", env=env, cwd=tmp_path)
    assert [r["id"] for r in orjson.loads(listed.stdout)] == [PI_SMALL_ID]
    # four slashes: an absolute path, from any working directory
    absolute = f"sqlite:///{tmp_path / name}"
    assert absolute.startswith("sqlite:////")
    listed = sessiontree("--store", absolute, "list", "--json", env=env, cwd=tmp_path / "home")
    assert listed.returncode == 0, listed.stderr
    assert [r["id"] for r in orjson.loads(listed.stdout)] == [PI_SMALL_ID]


def test_sqlite_url_paths_follow_sqlalchemy() -> None:
    assert sqlite_path_from_url("sqlite:///agent.db")[0] == "agent.db"
    assert sqlite_path_from_url("sqlite:///data/agent.db")[0] == "data/agent.db"
    assert sqlite_path_from_url("sqlite:////abs/agent.db")[0] == "/abs/agent.db"
    assert sqlite_path_from_url("sqlite:///:memory:")[0] == ":memory:"
    assert sqlite_path_from_url("sqlite://")[0] == ":memory:"
    assert sqlite_path_from_url("sqlite:///a.db?timeout=3") == ("a.db", {"timeout": "3"})
    with pytest.raises(StorageError, match=r"sqlite:////absolute/path\.db"):
        sqlite_path_from_url("sqlite://somehost/agent.db")
    with pytest.raises(StorageError, match="no database file"):
        sqlite_path_from_url("sqlite:///")


def test_the_default_store_url_is_the_absolute_path_as_a_user_types_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SESSIONTREE_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    url = default_url()
    assert url == f"sqlite:///{tmp_path / 'data' / 'sessiontree' / 'sessions.db'}"
    assert url.startswith("sqlite:////")
    assert sqlite_path_from_url(url)[0] == str(default_store_path())


def test_a_missing_relative_store_names_the_file_it_looked_for(tmp_path: Path) -> None:
    done = sessiontree(
        "--store", "sqlite:///typo.db", "list", env=fresh_env(tmp_path / "h"), cwd=tmp_path
    )
    assert done.returncode == 1
    assert (
        done.stderr
        == f"error: {tmp_path / 'typo.db'}: no store here (the file does not exist); check the path\n"
    )
    assert not (tmp_path / "typo.db").exists()
