"""``sessiontree sync`` benchmark (issue 26): the three speed targets, as ratios in one run.

1. **First sync** of real session files replicated to ``--mb`` MB (default 100, what fits
   in about two minutes on the team's machine; each copy with its own session id) into a SQLite store, against the floor measured in the same run: read each
   file's bytes, parse every record (orjson), validate every stored entry with the same
   models (``parse_entry_json``), and insert the same rows (sessions, entries, metadata
   pairs, copied from the synced store) in one transaction per file with raw ``sqlite3``.
   Goal ≤ 2×.
2. **Unchanged re-sync** of 2,000 files, against a bare ``os.scandir`` + ``stat`` walk of
   the same tree. Timed twice: in-process (``sync_sources`` vs the walk) and as processes
   (``sessiontree sync`` vs ``python -c <walk>`` plus the CLI's own start, ``sessiontree
   --version``). Goal ≤ 1.5×; no file content may be read (checked: every file's atime is
   set back to the epoch first, on a file system that updates atime on read, and must still
   be the epoch after; where atime is not kept the check says so).
3. **10 lines appended to a 100 MB file**, synced, against syncing a new 10-line file.
   Goal ≤ 2×.

The real files are the JSONL sessions of pi, Claude Code and Codex in the team's collection
beside the checkout (``../shared/data/sessions`` and ``sessions-extra/set*``) when present,
else the vendored ``data/sessions``.

Run: ``.venv/bin/python bench/bench_sync.py [--quick] [--mb 100] [--files 2000]
[--big-mb 100]``; ``--quick``: 50 MB, 300 files, a 20 MB file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from sessiontree.backends.memory.repo import MemoryRepo
from sessiontree.backends.sql.repo import SQLRepo
from sessiontree.entries import parse_entry_json
from sessiontree.interop import import_session
from sessiontree.interop.locations import Source
from sessiontree.interop.syncing import SyncReport, sync_sources

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
COLLECTIONS = (
    [SHARED / "sessions", *sorted((SHARED / "sessions-extra").glob("set*"))]
    if (SHARED / "sessions").is_dir()
    else [ROOT / "data" / "sessions"]
)
"""Where the real files come from: the team's collection when present, else the vendored one."""
FORMATS = ("pi", "claude-code", "codex")
"""The formats replicated: their files are JSONL and name their session id in the content."""
GOALS = {"first sync": 2.0, "unchanged re-sync": 1.5, "10 lines appended": 2.0}


# --------------------------------------------------------------------------- the corpus


def real_files() -> list[tuple[Path, str]]:
    """``(file, session id string in it)`` for every replicable real file, smallest first."""
    out: list[tuple[Path, str]] = []
    for collection in COLLECTIONS:
        for fmt in FORMATS:
            for path in sorted((collection / fmt).glob("*.jsonl")):
                sid = asyncio.run(_session_id_of(path))
                if sid is not None and sid.encode() in path.read_bytes():
                    out.append((path, sid))
    return sorted(out, key=lambda item: item[0].stat().st_size)


async def _session_id_of(path: Path) -> str | None:
    """The id ``path``'s imported session is named after (for a sub-agent file its parent
    session's id), ``None`` when the file does not import or the id is too short to replace
    safely."""
    repo = MemoryRepo()
    try:
        session, _ = await import_session(path, repo)
    except Exception:  # a file the importer refuses is left out of the corpus
        return None
    finally:
        await repo.close()
    sid = session.id.split("-agent-")[0]
    return sid if len(sid) >= 8 else None


def replicate(files: list[tuple[Path, str]], target: Path, total_bytes: int, count: int) -> int:
    """Copy the files round-robin into ``target`` (one sub-directory per copy round), each
    copy with a fresh id in place of its session id, until both ``total_bytes`` and ``count``
    files are reached; the bytes written."""
    written = 0
    made = 0
    round_no = 0
    while written < total_bytes or made < count:
        folder = target / f"r{round_no:04d}"
        folder.mkdir(parents=True)
        for path, sid in files:
            new = str(uuid.uuid4())
            data = path.read_bytes().replace(sid.encode(), new.encode())
            copy = folder / path.name.replace(sid, new)
            copy.write_bytes(data)
            # a finished session file, not one an agent is writing: no open turn held back
            os.utime(copy, (time.time() - 3600, time.time() - 3600))
            written += len(data)
            made += 1
            if written >= total_bytes and made >= count:
                break
        round_no += 1
    return written


# --------------------------------------------------------------------------- timing


def _sync(url: str, sources: list[Source]) -> tuple[float, SyncReport]:
    async def run() -> SyncReport:
        repo = SQLRepo(url)
        try:
            return await sync_sources(repo, sources)
        finally:
            await repo.close()

    started = time.perf_counter()
    report = asyncio.run(run())
    return time.perf_counter() - started, report


def _median(fn: Callable[[], float], repeat: int) -> float:
    return statistics.median(fn() for _ in range(repeat))


# --------------------------------------------------------------------------- 1. first sync


def _rows_by_file(db: Path) -> tuple[list[str], dict[str, dict[str, list[tuple[Any, ...]]]]]:
    """The DDL of the synced store's tables and, per source path, the rows of its session
    (``sessions``, ``entries`` and every other table keyed by session id)."""
    conn = sqlite3.connect(db)
    try:
        ddl = [
            sql
            for name, sql in conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL AND type IN "
                "('table', 'index') ORDER BY type DESC"
            )
            if not name.startswith(("entries_fts", "sqlite_"))
        ]
        tables = [
            (name, [c[1] for c in conn.execute(f'PRAGMA table_info("{name}")')])
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not name.startswith(("entries_fts", "sqlite_"))
        ]
        path_of: dict[str, str] = {}
        for sid, meta in conn.execute("SELECT id, metadata FROM sessions"):
            imported = orjson.loads(meta).get("importedFrom") or {}
            path_of[sid] = str(imported.get("path", ""))
        rows: dict[str, dict[str, list[tuple[Any, ...]]]] = {}
        for name, columns in tables:
            key = "id" if name == "sessions" else "session_id" if "session_id" in columns else None
            if key is None:
                continue
            for row in conn.execute(f'SELECT * FROM "{name}"'):
                sid = row[columns.index(key)]
                rows.setdefault(path_of.get(sid, ""), {}).setdefault(name, []).append(row)
        return ddl, rows
    finally:
        conn.close()


def _search_texts(db: Path) -> tuple[str, dict[str, list[str]]]:
    """The DDL of the synced store's search index and, per source path, the texts it indexed
    for that file's session."""
    conn = sqlite3.connect(db)
    try:
        (ddl,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'entries_fts'").fetchone()
        path_of: dict[str, str] = {}
        for sid, meta in conn.execute("SELECT id, metadata FROM sessions"):
            imported = orjson.loads(meta).get("importedFrom") or {}
            path_of[sid] = str(imported.get("path", ""))
        texts: dict[str, list[str]] = {}
        for sid, text in conn.execute(
            "SELECT e.session_id, f.text FROM entries e JOIN entries_fts f ON f.rowid = e.rowid"
        ):
            texts.setdefault(path_of.get(sid, ""), []).append(text)
        return ddl, texts
    finally:
        conn.close()


def floor_first_sync(
    files: list[Path], synced_db: Path, target_db: Path, *, search_index: bool = False
) -> float:
    """Read + parse + validate + insert the same rows, one transaction per file; seconds.
    ``search_index``: also index the same texts in the same FTS5 table (the store's search
    index, which the rows copied from the synced store leave out)."""
    ddl, rows = _rows_by_file(synced_db)
    fts_ddl, texts = _search_texts(synced_db) if search_index else ("", {})
    conn = sqlite3.connect(target_db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    for sql in [*ddl, *([fts_ddl] if fts_ddl else [])]:
        conn.execute(sql)
    started = time.perf_counter()
    for path in files:
        data = path.read_bytes()
        for line in data.splitlines():
            if line.strip():
                # a line holding two objects (a real file has one) is not one document
                with contextlib.suppress(orjson.JSONDecodeError):
                    orjson.loads(line)
        tables = rows.get(str(path), {})
        for row in tables.get("entries", []):
            parse_entry_json(row[7])
        conn.execute("BEGIN")
        for name, table_rows in tables.items():
            marks = ", ".join("?" * len(table_rows[0]))
            conn.executemany(f'INSERT INTO "{name}" VALUES ({marks})', table_rows)
        if search_index:
            conn.executemany(
                "INSERT INTO entries_fts (text) VALUES (?)",
                [(t,) for t in texts.get(str(path), [])],
            )
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed


def bench_first_sync(
    work: Path, real: list[tuple[Path, str]], mb: int
) -> tuple[float, float, float]:
    corpus = work / "corpus"
    size = replicate(real, corpus, mb * 1_000_000, 0)
    files = sorted(p for p in corpus.rglob("*.jsonl"))
    print(f"first sync: {len(files)} files, {size / 1e6:.0f} MB (from {len(real)} real files)")
    db = work / "first.db"
    took, report = _sync(f"sqlite:///{db}", [Source(None, corpus)])
    print(
        f"  sync_sources: {took:.2f} s  new {report.new}, failed {report.failed}, "
        f"{report.entries_added:,} entries"
    )
    if report.new != len(files) or report.failed:
        print(f"  WARNING: expected {len(files)} new sessions and no failures")
    floor = floor_first_sync(files, db, work / "floor.db")
    print(f"  floor (read + parse + validate + insert the same rows): {floor:.2f} s")
    indexed = floor_first_sync(files, db, work / "floor-fts.db", search_index=True)
    print(f"  floor with the search index (the same texts in the FTS5 table): {indexed:.2f} s")
    return took, floor, indexed


# --------------------------------------------------------------------------- 2. unchanged


WALK = """
import os, sys
def walk(path):
    with os.scandir(path) as it:
        for entry in it:
            if entry.is_dir(follow_symlinks=False):
                walk(entry.path)
            else:
                entry.stat()
walk(sys.argv[1])
"""


def _walk(path: str) -> None:
    with os.scandir(path) as it:
        for entry in it:
            if entry.is_dir(follow_symlinks=False):
                _walk(entry.path)
            else:
                entry.stat()


def _atimes_kept(folder: Path) -> bool:
    """Whether reading a file here updates its atime (so the no-read check can work)."""
    probe = folder / "atime-probe"
    probe.write_bytes(b"x")
    os.utime(probe, (0, probe.stat().st_mtime))
    probe.read_bytes()
    kept = probe.stat().st_atime != 0
    probe.unlink()
    return kept


def bench_unchanged(
    work: Path, real: list[tuple[Path, str]], count: int, repeat: int
) -> tuple[float, float, float, float, int | None]:
    tree = work / "tree"
    small = [item for item in real if item[0].stat().st_size < 200_000] or real
    replicate(small, tree, 0, count)
    files = sorted(tree.rglob("*.jsonl"))[:count]
    for extra in sorted(tree.rglob("*.jsonl"))[count:]:
        extra.unlink()
    url = f"sqlite:///{work / 'unchanged.db'}"
    _sync(url, [Source(None, tree)])
    checkable = _atimes_kept(work)
    for path in files:
        st = path.stat()
        os.utime(path, ns=(0, st.st_mtime_ns))
    in_sync = _median(lambda: _sync(url, [Source(None, tree)])[0], repeat)
    read = [p for p in files if p.stat().st_atime_ns != 0]
    in_walk = _median(lambda: _timed(lambda: _walk(str(tree))), repeat)
    argv = [sys.executable, "-m", "sessiontree", "--store", url, "sync", "--no-defaults"]
    argv += ["--source", str(tree), "--json"]
    cli = _median(lambda: _timed(lambda: subprocess.run(argv, check=True, capture_output=True)), 3)
    walk_process = _median(
        lambda: _timed(lambda: subprocess.run([sys.executable, "-c", WALK, str(tree)], check=True)),
        3,
    )
    start = [sys.executable, "-m", "sessiontree", "--version"]
    cli_start = _median(
        lambda: _timed(lambda: subprocess.run(start, check=True, capture_output=True)), 3
    )
    print(f"unchanged re-sync: {len(files)} files")
    print(
        f"  in-process: sync_sources {in_sync * 1e3:.1f} ms, scandir+stat walk {in_walk * 1e3:.1f} ms"
    )
    print(
        f"  processes: sessiontree sync {cli * 1e3:.0f} ms; walk process {walk_process * 1e3:.0f}"
        f" ms + CLI start {cli_start * 1e3:.0f} ms"
    )
    if checkable:
        print(f"  files whose content was read: {len(read)} (must be 0)")
    else:
        print("  (this file system does not keep atime: the no-read check cannot run here)")
    return in_sync, in_walk, cli, walk_process + cli_start, len(read) if checkable else None


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


# --------------------------------------------------------------------------- 3. appended


PI_HEADER = {"type": "session", "version": 3, "timestamp": "2026-05-12T01:02:27.657Z", "cwd": "/w"}


def _pi_line(n: int, parent: str | None, text: str) -> bytes:
    ms = 1778547747000 + n
    role = "user" if n % 2 == 0 else "assistant"
    message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}]}
    message["timestamp"] = ms
    if role == "assistant":
        message |= {"api": "openai-completions", "provider": "p", "model": "m"}
        message["usage"] = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0}
        message["stopReason"] = "stop"
    entry = {
        "type": "message",
        "id": f"e{n:08d}",
        "parentId": parent,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(ms / 1000)),
        "message": message,
    }
    return orjson.dumps(entry) + b"\n"


def _texts(real: list[tuple[Path, str]]) -> list[str]:
    """Real message texts (the largest real files' text blocks) to fill the big file with."""
    texts: list[str] = []
    for path, _ in real[-6:]:
        for line in path.read_bytes().splitlines():
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            blob = orjson.dumps(obj).decode()
            texts.append(blob[:4000])
    return texts or ["x" * 2000]


def _write_pi(path: Path, lines: int | None, size: int, texts: list[str]) -> int:
    """A pi v3 session at ``path`` of ``lines`` messages or ``size`` bytes; the messages."""
    header = {**PI_HEADER, "id": str(uuid.uuid4())}
    with path.open("wb") as f:
        f.write(orjson.dumps(header) + b"\n")
        n, written, parent = 0, 0, None
        while (lines is not None and n < lines) or (lines is None and written < size):
            line = _pi_line(n, parent, texts[n % len(texts)])
            f.write(line)
            written += len(line)
            parent = f"e{n:08d}"
            n += 1
    return n


def _append(path: Path, start: int, count: int) -> int:
    with path.open("ab") as f:
        for n in range(start, start + count):
            f.write(_pi_line(n, f"e{n - 1:08d}", f"appended line {n}"))
    return start + count


def bench_appended(
    work: Path, real: list[tuple[Path, str]], big_mb: int, repeat: int
) -> tuple[float, float]:
    texts = _texts(real)
    big_dir = work / "big"
    big_dir.mkdir()
    big = big_dir / "big.jsonl"
    n = _write_pi(big, None, big_mb * 1_000_000, texts)
    url = f"sqlite:///{work / 'appended.db'}"
    _sync(url, [Source("pi", big)])
    appended: list[float] = []
    for _ in range(repeat):
        n = _append(big, n, 10)
        took, report = _sync(url, [Source("pi", big)])
        assert report.updated == 1 and report.entries_added == 10, report
        assert report.rows[0].read_from > 0, "the append was not read from the stored offset"
        appended.append(took)
    fresh: list[float] = []
    for k in range(repeat):
        small = work / "small" / f"s{k}.jsonl"
        small.parent.mkdir(exist_ok=True)
        _write_pi(small, 10, 0, texts)
        took, report = _sync(url, [Source("pi", small)])
        assert report.new == 1 and report.entries_added == 10, report
        fresh.append(took)
    a, f = statistics.median(appended), statistics.median(fresh)
    print(f"10 lines appended to a {big.stat().st_size / 1e6:.0f} MB file ({n:,} messages)")
    print(f"  sync of the append {a * 1e3:.1f} ms; sync of a new 10-line file {f * 1e3:.1f} ms")
    return a, f


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 MB, 300 files, a 20 MB file")
    parser.add_argument("--mb", type=int, default=None, help="first-sync corpus size (MB)")
    parser.add_argument("--files", type=int, default=None, help="files of the re-sync tree")
    parser.add_argument("--big-mb", type=int, default=None, help="size of the big file (MB)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (median)")
    args = parser.parse_args(argv)
    mb = args.mb or (50 if args.quick else 100)
    count = args.files or (300 if args.quick else 2000)
    big_mb = args.big_mb or (20 if args.quick else 100)
    real = real_files()
    print(f"real files: {len(real)} ({', '.join(str(c) for c in COLLECTIONS)})")
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        work = Path(tmp)
        first, floor, floor_indexed = bench_first_sync(work, real, mb)
        in_sync, in_walk, cli, cli_base, read = bench_unchanged(work, real, count, args.repeat)
        appended, fresh = bench_appended(work, real, big_mb, args.repeat)
    table = [
        ("first sync", f"{mb} MB", first, floor, "read+parse+validate+insert"),
        ("  (with index)", f"{mb} MB", first, floor_indexed, "the same + FTS5 search index"),
        ("unchanged re-sync", f"{count} files", cli, cli_base, "walk + CLI start (processes)"),
        ("  (in-process)", f"{count} files", in_sync, in_walk, "scandir+stat walk"),
        ("10 lines appended", f"{big_mb} MB file", appended, fresh, "sync a 10-line file"),
    ]
    print()
    print(f"{'target':<19}{'size':>12}{'sync':>10}{'baseline':>10}{'ratio':>9}  goal")
    failed = 0
    for name, size, value, base, what in table:
        ratio = value / base
        goal = GOALS.get(name)
        verdict = "" if goal is None else ("PASS" if ratio <= goal else "FAIL")
        failed += verdict == "FAIL"
        goal_text = f"<= {goal:.1f}x {verdict}" if goal is not None else "(info)"
        print(f"{name:<19}{size:>12}{value:>9.3f}s{base:>9.3f}s{ratio:>8.2f}x  {goal_text}")
        print(f"{'':<19}baseline: {what}")
    if read:
        print(f"FAIL: the unchanged re-sync read {read} files")
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
