"""The files a store makes and meets: private modes, a database deleted or replaced under an
open store, read-only opens that never create a store, read-only media."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from backends import throwaway_pg_database, unavailable
from sessiontree import open_repo
from sessiontree.cli import cli
from sessiontree.errors import StorageError
from sessiontree.testing.builders import assistant, user


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def open_umask() -> object:
    """The common umask 022, which would leave new files 0644 and directories 0755."""
    old = os.umask(0o022)
    yield
    os.umask(old)


# ---------------------------------------------------------------------- private modes


@pytest.mark.usefixtures("open_umask")
async def test_sqlite_store_files_and_directories_are_private(tmp_path: Path) -> None:
    # SQLite files were created 0644 and their directories 0755
    db = tmp_path / "a" / "b" / "sessions.db"
    async with open_repo(f"sqlite:///{db}") as repo:
        s = await repo.create()
        await s.append_message(user("private"))
        files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
        assert all(f.exists() for f in files)
        assert {f.name: mode_of(f) for f in files} == {f.name: 0o600 for f in files}
    assert mode_of(tmp_path / "a") == 0o700
    assert mode_of(tmp_path / "a" / "b") == 0o700


@pytest.mark.usefixtures("open_umask")
async def test_jsonl_store_files_and_directories_are_private(tmp_path: Path) -> None:
    root = tmp_path / "x" / "store"
    async with open_repo(f"jsonl://{root}") as repo:
        s = await repo.create()
        await s.append_message(user("private"))
        fork = await s.fork(await s.get_leaf_id() or "")
    assert mode_of(tmp_path / "x") == 0o700 and mode_of(root) == 0o700
    made = [p for p in root.rglob("*")]
    assert len(made) >= 6  # two directories, two logs, a lock file, sidecars
    assert {str(p): mode_of(p) for p in made} == {
        str(p): 0o700 if p.is_dir() else 0o600 for p in made
    }
    assert (root / fork.id / "session.jsonl").exists()


# ---------------------------------------------------------------------- file identity


def remove_database(db: Path) -> None:
    """Delete a SQLite database and its WAL files, as a user's ``rm`` would."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


async def test_sqlite_file_deleted_under_an_open_store_refuses_appends(tmp_path: Path) -> None:
    # appends returned ids after the file was deleted, and the entries were lost
    db = tmp_path / "s.db"
    async with open_repo(f"sqlite:///{db}") as repo:
        s = await repo.create(id="kept")
        first = await s.append_message(user("before"))
        remove_database(db)
        with pytest.raises(StorageError, match="was deleted while the store was open"):
            await s.append_message(assistant("lost?"))
        with pytest.raises(StorageError, match="was deleted"):
            await repo.create(id="other")
        with pytest.raises(StorageError, match="was deleted"):
            await repo.delete("kept")
        assert await s.get_leaf_id() == first  # the refused append changed nothing
    assert not db.exists()


async def test_sqlite_file_replaced_under_an_open_store_refuses_appends(tmp_path: Path) -> None:
    db, other = tmp_path / "s.db", tmp_path / "other.db"
    async with open_repo(f"sqlite:///{other}") as repo:
        await repo.create(id="theirs")
    async with open_repo(f"sqlite:///{db}") as repo:
        s = await repo.create(id="mine")
        await s.append_message(user("before"))
        remove_database(db)
        shutil.copy(other, db)
        with pytest.raises(StorageError, match="replaced by another file"):
            await s.append_message(assistant("lost?"))
    async with open_repo(f"sqlite:///{db}") as repo:
        assert [i.id for i in await repo.list()] == ["theirs"]


# ---------------------------------------------------------------------- read-only opens


def invoke(store: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli, ["--store", store, *args], env={"COLUMNS": "200", "SESSIONTREE_URL": None}
    )
    return result.exit_code, result.stdout, result.stderr


READ_COMMANDS = [
    ["list"],
    ["show", "s1"],
    ["context", "s1"],
    ["search", "hello"],
    ["stats", "s1"],
    ["verify", "s1"],
    ["export", "s1", "-"],
]


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_read_only_commands_never_create_a_store(kind: str, tmp_path: Path) -> None:
    # `list` on a mistyped sqlite:/// path made directories and an empty database and said
    # "no sessions" with exit 0
    missing = tmp_path / "typo" / "dir"
    store = f"sqlite:///{missing / 's.db'}" if kind == "sqlite" else f"jsonl://{missing}"
    for args in READ_COMMANDS:
        code, out, err = invoke(store, *args)
        assert code == 1, (args, out, err)
        assert "no store here" in err and err.count("\n") == 1, err
        assert not (tmp_path / "typo").exists(), args


async def test_open_repo_read_only_refuses_a_missing_store_and_every_write(
    tmp_path: Path,
) -> None:
    with throwaway_pg_database() as pg:
        urls = [f"sqlite:///{tmp_path / 's.db'}", f"jsonl://{tmp_path / 'j'}", pg]
        for url in urls:
            async with open_repo(url, read_only=True) as ro:
                with pytest.raises(StorageError, match="no store here"):
                    await ro.list()
            assert not (tmp_path / "s.db").exists() and not (tmp_path / "j").exists()
        for url in urls:
            async with open_repo(url) as repo:  # for writing: created on first use
                s = await repo.create(id="s1")
                await s.append_message(user("hello"))
            async with open_repo(url, read_only=True) as ro:
                assert [i.id for i in await ro.list()] == ["s1"]
                assert [h.session_id for h in await ro.search("hello")] == ["s1"]
                opened = await ro.open("s1")
                assert len(await opened.get_branch()) == 1
                leaf = await opened.get_leaf_id()
                assert leaf is not None
                with pytest.raises(StorageError, match="read-only"):
                    await ro.create(id="s2")
                with pytest.raises(StorageError, match="read-only"):
                    await ro.delete("s1")
                with pytest.raises(StorageError, match="read-only"):
                    await opened.append_message(user("x"))
                with pytest.raises(StorageError, match="read-only"):
                    await opened.fork(leaf)
            async with open_repo(url) as repo:
                again = await repo.open("s1")
                assert len(await again.get_entries()) == 1


def test_sqlite_file_without_write_permission_reads_and_says_why_it_cannot_write(
    tmp_path: Path,
) -> None:
    db = tmp_path / "ro.db"

    async def build() -> None:
        async with open_repo(f"sqlite:///{db}") as repo:
            s = await repo.create(id="s1")
            await s.append_message(user("hello"))

    asyncio.run(build())
    before = db.read_bytes()
    db.chmod(0o444)
    try:
        store = f"sqlite:///{db}"
        code, out, err = invoke(store, "list")
        assert code == 0 and "s1" in out, err
        code, _, err = invoke(store, "name", "s1", "new name")
        assert code == 1
        assert "cannot write: the file is read-only (no write permission)" in err
        assert db.read_bytes() == before
    finally:
        db.chmod(0o644)


# ---------------------------------------------------------------------- read-only media

MEDIA_SCRIPT = r"""
set -e
mount --bind "$1" "$1"
mount -o remount,ro,bind "$1"
shift
exec "$@"
"""


def on_read_only_media(directory: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with ``directory`` mounted read-only (a private mount namespace)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        unavailable("unshare is not installed")
    assert unshare is not None
    probe = subprocess.run([unshare, "-rm", "true"], capture_output=True, text=True, check=False)
    if probe.returncode:
        unavailable(f"no user/mount namespaces here: {probe.stderr.strip()}")
    return subprocess.run(
        [unshare, "-rm", "sh", "-c", MEDIA_SCRIPT, "sh", str(directory), *argv],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "SESSIONTREE_URL": "", "COLUMNS": "200"},
    )


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_store_on_read_only_media_can_be_listed_and_says_why_it_cannot_be_written(
    kind: str, tmp_path: Path
) -> None:
    # "the database file is read-only" even for `list`
    media = tmp_path / "media"
    media.mkdir()
    store = f"sqlite:///{media / 's.db'}" if kind == "sqlite" else f"jsonl://{media / 'j'}"

    async def build() -> None:
        async with open_repo(store) as repo:
            s = await repo.create(id="s1")
            await s.append_message(user("hello from the archive"))

    asyncio.run(build())
    before = {p: p.read_bytes() for p in media.rglob("*") if p.is_file()}
    cli_argv = [sys.executable, "-m", "sessiontree", "--store", store]
    listed = on_read_only_media(media, *cli_argv, "list")
    assert listed.returncode == 0, listed.stderr
    assert "s1" in listed.stdout
    found = on_read_only_media(media, *cli_argv, "search", "archive")
    assert found.returncode == 0 and "s1" in found.stdout, found.stderr
    shown = on_read_only_media(media, *cli_argv, "show", "s1")
    assert shown.returncode == 0 and "hello from the archive" in shown.stdout, shown.stderr
    named = on_read_only_media(media, *cli_argv, "name", "s1", "renamed")
    assert named.returncode == 1
    assert "read-only file system" in named.stderr.lower(), named.stderr
    assert named.stderr.count("\n") == 1 and "Traceback" not in named.stderr
    assert {p: p.read_bytes() for p in media.rglob("*") if p.is_file()} == before
