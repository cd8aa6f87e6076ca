"""``sessiontree sync --watch`` follows the agents' files live (docs/interop.md "Following the
agents live").

A real writer process writes a pi session file record by record, the way the agent does
(one ``write`` per line, flushed); ``sync --watch`` runs as its own process on a SQLite,
JSONL or PostgreSQL store. Every record must be in the store within 1 s of being written,
the session must end equal to a fresh import of the whole file, and Ctrl-C must stop the
watcher cleanly (exit 0, the round in progress finished). The library call
(:func:`watch_sources`) is checked in-process for what the command does not show: a source
directory that appears later, a file source replaced by a rename, a deleted file reported
``gone``, and the ``stop`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends import shared_store_url
from sessiontree import open_repo
from sessiontree.errors import InvalidArgumentError, SessionNotFoundError
from sessiontree.interop.locations import Source
from sessiontree.interop.syncing import SyncReport
from sessiontree.interop.watching import watch_sources

SRC = str(Path(__file__).resolve().parents[1] / "src")
LATENCY_S = 1.0
"""The promise: a record written by an agent is in the store within this many seconds."""
SESSION_ID = "019e19b4-eb48-746a-aa6b-8dfcfa37954c"

# Writes a pi v3 session file to argv[1]: the header and a first message at once, then one
# message per line, argv[2] of them, argv[3] seconds apart. After each flushed write it
# prints "<entry id> <time.time()>" so the reader knows when the record hit the file.
WRITER = r"""
import json, sys, time
path, count, pause, sid = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]

def record(n, parent):
    ms = 1778547747000 + n * 1000
    role = "user" if n % 2 == 0 else "assistant"
    message = {"role": role, "content": [{"type": "text", "text": f"line {n}"}], "timestamp": ms}
    if role == "assistant":
        message |= {"api": "openai-completions", "provider": "p", "model": "m",
                    "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                              "totalTokens": 2, "cost": {"input": 0, "output": 0,
                              "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                    "stopReason": "stop"}
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".000Z"
    return {"type": "message", "id": f"e{n:04d}", "parentId": parent, "timestamp": stamp,
            "message": message}

header = {"type": "session", "version": 3, "id": sid, "timestamp": "2026-05-12T01:02:27.657Z",
          "cwd": "/tmp/project"}
with open(path, "a", encoding="utf-8") as f:
    parent = None
    for n in range(count):
        line = json.dumps(record(n, parent)) + "\n"
        f.write((json.dumps(header) + "\n" + line) if n == 0 else line)
        f.flush()
        print(f"e{n:04d} {time.time()}", flush=True)
        parent = f"e{n:04d}"
        time.sleep(pause)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _start_writer(path: Path, count: int, pause: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(count), str(pause), SESSION_ID],
        env=_env(),
        stdout=subprocess.PIPE,
        text=True,
    )


async def _entry_ids(url: str, session_id: str) -> list[str]:
    """The ids of the session's entries in the store at ``url`` (none when it is not there),
    without ``leaf`` entries (each sync stores how far it read the file in one)."""
    repo = open_repo(url)
    try:
        try:
            session = await repo.open(session_id)
        except SessionNotFoundError:
            return []
        try:
            return [e.id for e in await session.get_entries() if e.type != "leaf"]
        finally:
            await session.close()
    finally:
        await repo.close()


class Poller(threading.Thread):
    """Reads the store every 20 ms in a thread of its own; :attr:`seen` maps each entry id of
    the session to the time (``time.time()``) it was first there."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.seen: dict[str, float] = {}
        self.done = threading.Event()

    def run(self) -> None:
        asyncio.run(self._poll())

    async def _poll(self) -> None:
        while not self.done.is_set():
            ids = await _entry_ids(self.url, SESSION_ID)
            now = time.time()
            for entry_id in ids:
                self.seen.setdefault(entry_id, now)
            await asyncio.sleep(0.02)


@pytest.fixture(params=["sqlite", "jsonl", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with shared_store_url(request.param, tmp_path) as url:
        yield url


def _start_watch(url: str, source: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "sessiontree", "--store", url, "sync", "--no-defaults"]
    argv += ["--source", f"pi={source}", "--watch", "--json"]
    process = subprocess.Popen(
        argv, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    first = process.stdout.readline()  # the first round: everything already there
    assert first, process.stderr.read() if process.stderr else ""
    assert json.loads(first)["failed"] == 0
    return process


def test_records_reach_the_store_within_a_second_and_ctrl_c_stops(
    store: str, tmp_path: Path
) -> None:
    source = tmp_path / "sessions"
    source.mkdir()
    watcher = _start_watch(store, source)
    try:
        poller = Poller(store)
        poller.start()
        with _start_writer(source / "live.jsonl", count=6, pause=0.4) as writer:
            out, _ = writer.communicate(timeout=60)
        assert writer.returncode == 0
        written = {entry_id: float(t) for entry_id, t in map(str.split, out.splitlines())}
        deadline = time.time() + 10
        while len(poller.seen) < len(written) and time.time() < deadline:
            time.sleep(0.05)
        poller.done.set()
        poller.join()
        assert poller.seen.keys() == written.keys()
        latencies = [poller.seen[e] - t for e, t in written.items()]
        print("latencies (s):", [round(t, 3) for t in latencies])
        assert max(latencies) < LATENCY_S, latencies
        watcher.send_signal(signal.SIGINT)
        out, err = watcher.communicate(timeout=30)
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
    assert watcher.returncode == 0, err
    assert "stopped after" in err
    rounds = [json.loads(line) for line in out.splitlines()]
    assert all(r["failed"] == 0 for r in rounds), rounds
    # the first record made the session (new); every later one extended it (updated)
    assert sum(r["new"] for r in rounds) == 1
    assert sum(r["entries_added"] for r in rounds) == 6
    assert asyncio.run(_entry_ids(store, SESSION_ID)) == [f"e{n:04d}" for n in range(6)]


# --------------------------------------------------------------------------- the library call


class Rounds:
    """Collects the reports of :func:`watch_sources` and lets a test wait for one."""

    def __init__(self) -> None:
        self.reports: list[SyncReport] = []
        self._changed = asyncio.Event()

    def __call__(self, report: SyncReport) -> None:
        self.reports.append(report)
        self._changed.set()

    async def until(self, test: object, within: float = 10.0) -> SyncReport:
        """The first report (old or new) for which ``test(report)`` holds."""
        assert callable(test)
        deadline = time.monotonic() + within
        while True:
            for report in self.reports:
                if test(report):
                    return report
            self._changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no such round in {self.reports}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)


def _write_session(path: Path, count: int) -> None:
    subprocess.run(
        [sys.executable, "-c", WRITER, str(path), str(count), "0", SESSION_ID],
        env=_env(),
        check=True,
        capture_output=True,
    )


async def test_a_source_directory_that_appears_later_is_followed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    later = tmp_path / "not-yet" / "sessions"
    rounds = Rounds()
    stop = asyncio.Event()
    repo = open_repo(url)
    task = asyncio.create_task(
        watch_sources(repo, [Source("pi", later)], on_report=rounds, stop=stop, rescan_ms=100)
    )
    try:
        first = await rounds.until(lambda r: True)
        assert (first.new, first.entries_added) == (0, 0)
        later.mkdir(parents=True)
        await asyncio.to_thread(_write_session, later / "a.jsonl", 3)
        await rounds.until(lambda r: r.new == 1)
        await rounds.until(lambda r: sum(x.entries_added for x in rounds.reports) == 3)
        assert await _entry_ids(url, SESSION_ID) == ["e0000", "e0001", "e0002"]
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await repo.close()


async def test_a_file_source_replaced_by_a_rename_is_still_followed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    project = tmp_path / "project"
    project.mkdir()
    path = project / "session.jsonl"
    await asyncio.to_thread(_write_session, path, 2)
    rounds = Rounds()
    stop = asyncio.Event()
    repo = open_repo(url)
    task = asyncio.create_task(
        watch_sources(repo, [Source("pi", path)], on_report=rounds, stop=stop, rescan_ms=100)
    )
    try:
        await rounds.until(lambda r: r.new == 1)
        # an editor-style save: the whole file written beside, then renamed over it
        await asyncio.to_thread(_write_session, project / "tmp.jsonl", 4)
        os.replace(project / "tmp.jsonl", path)
        await rounds.until(lambda r: r.updated == 1)
        assert await _entry_ids(url, SESSION_ID) == [f"e{n:04d}" for n in range(4)]
        # the watch was set up again on the new file: a plain append is seen too
        with path.open("a") as f:
            f.write(
                json.dumps(
                    {
                        "type": "message",
                        "id": "e0004",
                        "parentId": "e0003",
                        "timestamp": "2026-05-12T01:03:00.000Z",
                        "message": {"role": "user", "content": "more", "timestamp": 1778547780000},
                    }
                )
                + "\n"
            )
        await rounds.until(lambda r: r.entries_added == 1 and r.updated == 1)
        assert (await _entry_ids(url, SESSION_ID))[-1] == "e0004"
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await repo.close()


async def test_a_deleted_file_is_reported_gone_and_its_session_kept(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    source = tmp_path / "sessions"
    source.mkdir()
    await asyncio.to_thread(_write_session, source / "a.jsonl", 2)
    rounds = Rounds()
    stop = asyncio.Event()
    repo = open_repo(url)
    task = asyncio.create_task(
        watch_sources(repo, [Source("pi", source)], on_report=rounds, stop=stop)
    )
    try:
        await rounds.until(lambda r: r.new == 1)
        (source / "a.jsonl").unlink()
        await rounds.until(lambda r: r.gone == 1)
        assert await _entry_ids(url, SESSION_ID) == ["e0000", "e0001"]
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await repo.close()


async def test_stop_returns_and_bad_arguments_are_refused(tmp_path: Path) -> None:
    repo = open_repo(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        with pytest.raises(InvalidArgumentError, match="debounce_ms"):
            await watch_sources(repo, [], debounce_ms=0)
        stop = asyncio.Event()
        rounds = Rounds()
        task = asyncio.create_task(
            watch_sources(repo, [Source("pi", tmp_path)], on_report=rounds, stop=stop)
        )
        await rounds.until(lambda r: True)
        stop.set()
        await asyncio.wait_for(task, 10)
        assert len(rounds.reports) == 1
    finally:
        await repo.close()


def test_import_sessiontree_does_not_load_watchfiles() -> None:
    code = (
        "import sys, sessiontree, sessiontree.interop, sessiontree.cli\n"
        "import sessiontree.interop.watching\n"
        "print('watchfiles' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


def test_without_watchfiles_the_error_names_the_extra(tmp_path: Path) -> None:
    # a Python where the package cannot be imported (None in sys.modules blocks it)
    code = (
        "import asyncio, sys\n"
        "sys.modules['watchfiles'] = None\n"
        "from sessiontree import open_repo\n"
        "from sessiontree.errors import MissingExtraError\n"
        "from sessiontree.interop.watching import watch_sources\n"
        "async def main():\n"
        f"    repo = open_repo('sqlite:///{tmp_path / 'store.db'}')\n"
        "    try:\n"
        "        await watch_sources(repo, [])\n"
        "    except MissingExtraError as exc:\n"
        "        print(exc)\n"
        "    finally:\n"
        "        await repo.close()\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=True
    )
    assert "pip install 'sessiontree[watch]'" in done.stdout


async def test_a_round_is_one_line_that_fits_80_columns(tmp_path: Path) -> None:
    from datetime import datetime

    from rich.console import Console

    from sessiontree.cli.sync_watch import round_line
    from sessiontree.interop.syncing import sync_sources

    source = tmp_path / "sessions"
    source.mkdir()
    long_name = "rollout-2026-06-19T12-32-38-" + "x" * 80 + ".jsonl"
    await asyncio.to_thread(_write_session, source / long_name, 3)
    repo = open_repo(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        report = await sync_sources(repo, [Source("pi", source)])
    finally:
        await repo.close()
    console = Console(width=80, record=True, color_system=None)
    console.print(round_line(report, datetime(2026, 1, 2, 3, 4, 5), console.width))
    lines = console.export_text().splitlines()
    assert len(lines) == 1 and len(lines[0]) <= 80, lines
    assert lines[0].startswith("03:04:05  +3 entries  1 new  rollout-2026"), lines
    assert lines[0].endswith("…")
