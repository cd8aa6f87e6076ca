"""A sync reads a grown pi file on from its stored offset, and stores what one import of the
whole file stores (docs/interop.md, "sync"; :mod:`sessiontree.interop.resume`).

The property: a real pi file written by appends (the same inode) in pieces cut at random
line boundaries, synced after each piece, equals one fresh import of the whole file, and
every sync after the first read only the bytes the file gained (``read_from``). A file
rewritten in place, a torn last line and a file whose position predates the offset are
checked apart.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _growing_files import cut_points, line_ends, snapshot
from backends import BACKENDS
from session_files import SHARED, VENDORED
from sessiontree import SessionRepo
from sessiontree.interop import import_session
from sessiontree.interop.locations import Source
from sessiontree.interop.positions import POSITION_KEY, SyncPosition, position_entry
from sessiontree.interop.syncing import sync_sources
from sessiontree.repos import MemoryRepo


def _pi_files(base: Path) -> list[Path]:
    folder = base / "pi"
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        head = path.read_bytes().split(b"\n", 1)[0]
        try:
            header = orjson.loads(head)
        except orjson.JSONDecodeError:
            continue
        if isinstance(header, dict) and header.get("version", 1) >= 2:
            out.append(path)
    return out


PI_FILES = [*_pi_files(VENDORED), *_pi_files(SHARED)]


async def append_and_sync(
    source: Path, cuts: list[int], repo: SessionRepo, fresh_repo: SessionRepo, work: Path
) -> None:
    """Write ``source`` into ``work`` by appends up to each of ``cuts`` and then whole,
    syncing after each; every sync after the first reads from where the last one stopped;
    the session equals one import of the whole file."""
    data = await asyncio.to_thread(source.read_bytes)
    path = work / "pi" / source.name
    path.parent.mkdir(parents=True, exist_ok=True)
    sources = [Source("pi", path)]
    written = 0
    for n, cut in enumerate([*cuts, len(data)]):
        with path.open("ab") as f:
            f.write(data[written:cut])
        report = await sync_sources(repo, sources, quiet_s=0)
        assert report.failed == 0, report.to_dict()
        row = report.rows[0]
        assert row.read_from == (0 if n == 0 else written), (row, cuts)
        if n and cut > written:
            assert row.status == "updated", row
        written = cut
    fresh, _ = await import_session(path, fresh_repo, format="pi")
    stored = await repo.open(fresh.id)
    assert await snapshot(stored) == await snapshot(fresh), f"{source} cut at {cuts}"
    assert len(await repo.list()) == 1


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.sampled_from(PI_FILES),
    st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=5),
)
def test_appends_read_from_the_offset_equal_a_fresh_import(
    source: Path, fractions: list[float]
) -> None:
    cuts = cut_points(source.read_bytes(), fractions)
    cuts = [c for c in cuts if c < len(source.read_bytes())]

    async def run() -> None:
        with tempfile.TemporaryDirectory() as work:
            await append_and_sync(source, cuts, MemoryRepo(), MemoryRepo(), Path(work))

    asyncio.run(run())


@pytest.mark.parametrize("backend", ["jsonl", "sqlite", "postgres"])
async def test_appends_read_from_the_offset_on_each_backend(backend: str, tmp_path: Path) -> None:
    source = PI_FILES[0]
    ends = line_ends(source.read_bytes())
    cuts = [ends[len(ends) // 4], ends[len(ends) // 2], ends[3 * len(ends) // 4]]
    opener = BACKENDS[backend].open
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with opener(tmp_path / "a") as repo, opener(tmp_path / "b") as fresh:
        await append_and_sync(source, cuts, repo, fresh, tmp_path / "work")


def _pi(n: int, parent: str | None) -> bytes:
    entry = {
        "type": "message",
        "id": f"e{n:04d}",
        "parentId": parent,
        "timestamp": f"2026-05-12T01:02:{n % 60:02d}.000Z",
        "message": {"role": "user", "content": f"line {n}", "timestamp": 1778547747000 + n},
    }
    return orjson.dumps(entry) + b"\n"


HEADER = orjson.dumps(
    {"type": "session", "version": 3, "id": "resume-test", "timestamp": "2026-05-12T01:02:00Z"}
)


def _file(count: int) -> bytes:
    return HEADER + b"\n" + b"".join(_pi(n, f"e{n - 1:04d}" if n else None) for n in range(count))


async def test_a_file_rewritten_in_place_is_read_whole(tmp_path: Path) -> None:
    """The bytes before the stored offset changed (a line rewritten, same length) and lines
    were appended: the check fails, the file is read whole and reconciled by entry id."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(_file(5))
    repo = MemoryRepo()
    await sync_sources(repo, [Source("pi", path)], quiet_s=0)
    data = path.read_bytes().replace(b"line 4", b"LINE 4")
    path.write_bytes(data + _pi(5, "e0004"))
    report = await sync_sources(repo, [Source("pi", path)], quiet_s=0)
    row = report.rows[0]
    assert (row.status, row.read_from, row.entries_added) == ("updated", 0, 1), row


async def test_a_torn_last_line_waits_and_is_read_from_the_offset(tmp_path: Path) -> None:
    """Half a line appended stores nothing (its bytes are read again next time); once the
    line is whole, it is read from the offset and stored."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(_file(3))
    repo = MemoryRepo()
    await sync_sources(repo, [Source("pi", path)], quiet_s=0)
    size = path.stat().st_size
    line = _pi(3, "e0002")
    with path.open("ab") as f:
        f.write(line[:20])
    report = await sync_sources(repo, [Source("pi", path)], quiet_s=0)
    row = report.rows[0]
    assert (row.status, row.read_from, row.entries_added) == ("unchanged", size, 0), row
    with path.open("ab") as f:
        f.write(line[20:])
    report = await sync_sources(repo, [Source("pi", path)], quiet_s=0)
    row = report.rows[0]
    assert (row.status, row.read_from, row.entries_added) == ("updated", size, 1), row
    fresh = MemoryRepo()
    imported, _ = await import_session(path, fresh, format="pi")
    stored = await repo.open(imported.id)
    assert await snapshot(stored) == await snapshot(imported)


async def test_a_position_without_a_line_count_reads_the_file_whole(tmp_path: Path) -> None:
    """A position stored before positions counted lines (no ``lines``): the grown file is
    read whole, and the position then stored has its count, so the next growth is read from
    the offset."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(_file(3))
    repo = MemoryRepo()
    await sync_sources(repo, [Source("pi", path)], quiet_s=0)
    # the position as an older sessiontree stored it: the same, without ``lines``
    session = await repo.open("resume-test")
    position = SyncPosition.of(path, path.stat(), path.read_bytes())
    old = position_entry(position, await session.get_leaf_id())
    wire = {**old.to_wire(), "id": str(uuid.uuid4())}
    wire[POSITION_KEY] = {k: v for k, v in position.to_json().items() if k != "lines"}
    await session.append_entry(wire)
    for n in (3, 4):
        size = path.stat().st_size
        with path.open("ab") as f:
            f.write(_pi(n, f"e{n - 1:04d}"))
        row = (await sync_sources(repo, [Source("pi", path)], quiet_s=0)).rows[0]
        assert (row.status, row.entries_added) == ("updated", 1), row
        assert row.read_from == (0 if n == 3 else size), row


async def test_a_duplicate_id_in_the_new_lines_fails_as_a_whole_read_does(tmp_path: Path) -> None:
    """A new line repeating an id the file held before: the store refuses it as a duplicate,
    the file is read whole, and that fails on the line as a fresh import does; nothing new
    is stored."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(_file(3))
    repo = MemoryRepo()
    await sync_sources(repo, [Source("pi", path)], quiet_s=0)
    before = len(await (await repo.open("resume-test")).get_entries())
    with path.open("ab") as f:
        f.write(_pi(1, "e0002"))
    row = (await sync_sources(repo, [Source("pi", path)], quiet_s=0)).rows[0]
    assert row.status == "failed" and "e0001" in (row.error or ""), row
    assert len(await (await repo.open("resume-test")).get_entries()) == before
