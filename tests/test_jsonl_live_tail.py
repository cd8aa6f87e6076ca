"""A line being appended by a live writer is not a torn line (docs/storage.md "jsonl").

A reader or ``verify`` running while another process appends can see the file end inside a
line the writer is still copying in. That line is a write in progress, not damage: neither
``verify`` nor a reader may call it torn. A line left unfinished by a writer that was killed
is still reported.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.backends.jsonl.repo import JSONLRepo
from sessiontree.backends.jsonl.storage import JSONLStorage, create_session_file
from sessiontree.cli import cli
from sessiontree.metadata import SessionMetadata
from sessiontree.session import Session
from sessiontree.verify import torn_final_line, verify_session

SRC = str(Path(__file__).resolve().parents[1] / "src")

# Appends 64 KB lines (with a short pause, so the file stays small) until killed: a line of
# many pages is copied into the file page by page, so a reader sees its first pages before
# the last is in.
WRITER = """
import asyncio, sys, time
from sessiontree.entries import MessageEntry
from sessiontree.backends.jsonl.storage import JSONLStorage

async def main() -> None:
    storage = JSONLStorage(sys.argv[1], durability="none")
    text = "x" * 64_000
    i = 0
    print("ready", flush=True)
    while True:
        i += 1
        entry = MessageEntry.model_validate(
            {"message": {"role": "user", "content": f"{i} {text}", "timestamp": i}}
        )
        await storage.append_entry(entry, at_leaf=True)
        time.sleep(0.004)

asyncio.run(main())
"""


def _start_writer(path: Path, script: str = WRITER) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(path)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()


def test_a_live_append_is_neither_torn_for_verify_nor_for_readers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "live.jsonl"
    create_session_file(path, "live", SessionMetadata())
    caplog.set_level(logging.WARNING, logger="sessiontree")
    writer = _start_writer(path)
    reports: list[str] = []
    rounds = 0

    async def check() -> None:
        nonlocal rounds
        reader = JSONLStorage(path)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and writer.poll() is None:
            rounds += 1
            if torn_final_line(path) is not None:
                reports.append("torn_final_line")
            storage = JSONLStorage(path, read_only=True)
            found = await verify_session(Session(storage))
            await storage.close()
            reports.extend(p for p in found.problems if "torn" in p)
            await reader.get_leaf_id()  # picks up what was appended since
        await reader.close()

    try:
        asyncio.run(check())
        assert writer.poll() is None, "the writer died"
    finally:
        _stop(writer)
    assert rounds >= 5
    assert reports == []
    assert [r.getMessage() for r in caplog.records if "torn" in r.getMessage()] == []


# Takes the append lock as a writer does, writes the first half of an entry line, and stops
# there (as a writer would be, paused mid-copy) until killed.
HALF_WRITER = """
import os, sys, time
from sessiontree.backends.jsonl.storage import JSONLStorage

storage = JSONLStorage(sys.argv[1])
storage._acquire()
line = b'{"type":"message","id":"half0001","parentId":null,"message":{"role":"user",'
os.write(storage._open_write(), line)
print("ready", flush=True)
time.sleep(600)
"""


def test_a_line_being_written_is_not_torn_until_its_writer_is_killed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "half.jsonl"
    create_session_file(path, "half", SessionMetadata())
    caplog.set_level(logging.WARNING, logger="sessiontree")

    async def verify_problems() -> list[str]:
        storage = JSONLStorage(path, read_only=True)
        found = await verify_session(Session(storage))
        await storage.close()
        return [p for p in found.problems if "torn" in p]

    writer = _start_writer(path, HALF_WRITER)
    try:
        assert not path.read_bytes().endswith(b"\n")  # the file ends inside a line
        assert torn_final_line(path) is None
        assert asyncio.run(verify_problems()) == []
        asyncio.run(JSONLStorage(path, read_only=True).close())
        assert [r.getMessage() for r in caplog.records if "torn" in r.getMessage()] == []
    finally:
        _stop(writer)  # SIGKILL: the line stays half written, the lock is let go

    assert torn_final_line(path) == 2
    problems = asyncio.run(verify_problems())
    assert len(problems) == 1
    assert ":2: torn final line" in problems[0]
    asyncio.run(JSONLStorage(path, read_only=True).close())
    assert any("ignoring a torn final line" in r.getMessage() for r in caplog.records)


def test_the_verify_command_tells_a_line_being_written_from_a_torn_one(tmp_path: Path) -> None:
    root = tmp_path / "store"

    async def create() -> None:
        async with JSONLRepo(root) as repo:
            session = await repo.create("half")
            await session.append_message({"role": "user", "content": "hello"})

    asyncio.run(create())
    (path,) = root.glob("*/session.jsonl")

    def verify() -> tuple[int, str]:
        result = CliRunner().invoke(
            cli,
            ["--store", f"jsonl://{root}", "verify", "half"],
            env={"SESSIONTREE_URL": None, "COLUMNS": "300"},
        )
        return result.exit_code, result.output

    writer = _start_writer(path, HALF_WRITER)
    try:
        code, output = verify()
        assert code == 0, output
        assert "torn" not in output
    finally:
        _stop(writer)
    code, output = verify()
    assert code == 1, output
    assert "torn final line" in output
