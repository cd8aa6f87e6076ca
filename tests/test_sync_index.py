"""The sync-position index (:mod:`sessiontree.storage.sync_index`): an unchanged re-sync
opens no session and reads no source file, on every backend; an index that is missing or
stale costs only a lookup in the session's entries."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, cast

import pytest

from backends import BACKENDS
from session_files import VENDORED
from sessiontree import Session
from sessiontree.interop.locations import Source
from sessiontree.interop.syncing import sync_sources
from sessiontree.repos.base import SessionRepo


class CountingRepo:
    """A store as the caller's code sees it, counting the sessions ``open`` hands out."""

    def __init__(self, repo: SessionRepo) -> None:
        self.repo = repo
        self.opened = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.repo, name)

    async def open(self, id: str) -> Session:
        self.opened += 1
        return await self.repo.open(id)


def _sources(tmp_path: Path) -> tuple[list[Source], list[Path]]:
    src = tmp_path / "src"
    shutil.copytree(VENDORED / "pi", src / "pi")
    shutil.copytree(VENDORED / "codex", src / "codex")
    files = sorted(p for p in src.rglob("*") if p.is_file())
    return [Source(None, src)], files


def _scramble(path: Path) -> None:
    """Overwrite ``path`` in place with bytes no importer reads, keeping its ``os.stat``
    (size, inode, modification time): only a sync that reads it can tell."""
    st = path.stat()
    with path.open("r+b") as f:
        f.write(b"\0" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    path.chmod(0)


@pytest.mark.parametrize("backend", list(BACKENDS))
async def test_unchanged_resync_opens_no_session_and_reads_no_file(
    backend: str, tmp_path: Path
) -> None:
    sources, files = _sources(tmp_path)
    (tmp_path / "store").mkdir()
    async with BACKENDS[backend].open(tmp_path / "store") as inner:
        first = await sync_sources(inner, sources, quiet_s=0)
        assert (first.new, first.failed) == (len(files), 0)
        # one more line, so the index must follow an append to an existing session too
        grown = next(p for p in files if p.parent.name == "pi")
        last = json.loads(grown.read_bytes().splitlines()[-1])["id"]
        line = {
            "type": "message",
            "id": "more-1",
            "parentId": last,
            "timestamp": "2026-01-01T00:00:05.000Z",
            "message": {"role": "user", "content": "one more", "timestamp": 1767225605000},
        }
        with grown.open("ab") as f:
            f.write(json.dumps(line).encode() + b"\n")
        second = await sync_sources(inner, sources, quiet_s=0)
        assert (second.updated, second.entries_added) == (1, 1)

        for path in files:
            _scramble(path)
        repo = CountingRepo(inner)
        again = await sync_sources(cast(SessionRepo, repo), sources, quiet_s=0)
        assert (again.unchanged, again.failed, again.entries_added) == (len(files), 0, 0)
        assert all(r.format is None for r in again.rows)  # decided by stat alone
        assert repo.opened == 0


async def test_jsonl_cache_missing_or_stale_falls_back_to_the_session(tmp_path: Path) -> None:
    sources, files = _sources(tmp_path)
    (tmp_path / "store").mkdir()
    async with BACKENDS["jsonl"].open(tmp_path / "store") as inner:
        await sync_sources(inner, sources, quiet_s=0)
        root = tmp_path / "store" / "jsonl-store"
        cache = root / ".index" / "sync-positions.jsonl"
        assert len(cache.read_bytes().splitlines()) == len(files)

        # a note of a log that has changed since (another size) is not trusted
        stale = [json.loads(raw) for raw in cache.read_bytes().splitlines()]
        for row in stale:
            row[2] -= 1  # as if noted before the log's last append
        cache.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in stale))
        repo = CountingRepo(inner)
        again = await sync_sources(cast(SessionRepo, repo), sources, quiet_s=0)
        assert (again.unchanged, again.failed) == (len(files), 0)
        assert repo.opened == len(files)  # every position read from its session

        cache.unlink()
        repo = CountingRepo(inner)
        again = await sync_sources(cast(SessionRepo, repo), sources, quiet_s=0)
        assert (again.unchanged, again.failed) == (len(files), 0)
        assert repo.opened == len(files)


async def test_sql_index_row_goes_with_its_session(tmp_path: Path) -> None:
    sources, files = _sources(tmp_path)
    (tmp_path / "store").mkdir()
    async with BACKENDS["sqlite"].open(tmp_path / "store") as repo:
        await sync_sources(repo, sources, quiet_s=0)
        index = await repo.sync_positions()  # type: ignore[attr-defined]
        assert sorted(p["path"] for p in index.values()) == sorted(str(p) for p in files)
        gone = next(iter(index))
        await repo.delete(gone)
        assert gone not in await repo.sync_positions()  # type: ignore[attr-defined]
        again = await sync_sources(repo, sources, quiet_s=0)
        assert (again.new, again.unchanged) == (1, len(files) - 1)
        assert len(await repo.sync_positions()) == len(files)  # type: ignore[attr-defined]
