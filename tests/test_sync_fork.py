"""sessiontree.sync in a child made by os.fork() (gunicorn --preload, multiprocessing's fork
start method): calls work there on a fresh loop thread and store connections, or raise a
clear error, and a child exits without waiting for anything of its parent's.

Each case runs a fresh interpreter (so the forked children exit the normal way, atexit hooks
included) under a timeout: a call or an exit that hangs fails the test instead of hanging it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends import throwaway_pg_database

SRC = str(Path(__file__).resolve().parents[1] / "src")

SCRIPT = r"""
import os, sys, time, traceback
import sessiontree.sync as st

url = sys.argv[1]
repo = st.open_repo(url)
shared = st.shared_repo(url)
session = repo.create("s1")
session.append_message({"role": "user", "content": "parent before the fork"})
shared.open("s1").get_branch()  # the shared repository has opened its store too
memory = st.open_repo("memory://")
memory.create("m1")


def uses_sessiontree():
    # objects made before the fork: opened again in this process on first use
    session.append_message({"role": "user", "content": "child: session from before"})
    repo.open("s1").append_message({"role": "user", "content": "child: repo from before"})
    shared.open("s1").append_message({"role": "user", "content": "child: shared from before"})
    st.shared_repo(url).open("s1").get_branch()
    fresh = st.open_repo(url)
    fresh.open("s1").append_message({"role": "user", "content": "child: repo opened after"})
    fresh.close()
    # a memory store lives in the parent only: a clear error, not a wait for ever
    try:
        memory.open("m1")
    except RuntimeError as exc:
        assert "os.fork()" in str(exc), exc
    else:
        raise AssertionError("a memory repository was used across a fork")


def never_uses_sessiontree():
    pass


children = {}
for name, work in [("uses", uses_sessiontree), ("idle", never_uses_sessiontree)]:
    pid = os.fork()
    if pid == 0:
        try:
            work()
        except BaseException:
            traceback.print_exc()
            os._exit(3)
        sys.exit(0)  # the normal way out: atexit hooks run (sessiontree.sync's included)
    children[name] = pid

for name, pid in children.items():
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            print(name, os.waitstatus_to_exitcode(status), flush=True)
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            print(name, "hung", flush=True)
            break
        time.sleep(0.02)

# the parent's own repository and connections still work
session.append_message({"role": "user", "content": "parent after the fork"})
texts = [e.message.content for e in repo.open("s1").get_branch()]
print("texts", texts, flush=True)
repo.close()
memory.close()
"""


@pytest.fixture(params=["sqlite", "jsonl", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
    elif request.param == "jsonl":
        yield f"jsonl://{tmp_path / 'store'}"
    else:
        with throwaway_pg_database() as pg_url:
            yield pg_url


def test_sync_calls_work_in_a_forked_child_and_children_exit_promptly(url: str) -> None:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, url],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "uses 0" in lines, run.stdout + run.stderr
    assert "idle 0" in lines, run.stdout + run.stderr
    (texts,) = [line for line in lines if line.startswith("texts ")]
    for text in [
        "parent before the fork",
        "child: session from before",
        "child: repo from before",
        "child: shared from before",
        "child: repo opened after",
        "parent after the fork",
    ]:
        assert repr(text) in texts


LEFT_OPEN = r"""
import sys
import sessiontree.sync as st

url = sys.argv[1]
shared = st.shared_repo(url)
shared.create("s1").append_message({"role": "user", "content": "hello"})
repo = st.open_repo(url)
session = repo.open("s1")
session.get_branch()
print("exiting", flush=True)
"""


def test_a_process_that_leaves_sync_repositories_open_exits(url: str) -> None:
    # closed at exit (docs: a repository dropped without close() is closed then), while the
    # threads their stores run on still run
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run(
        [sys.executable, "-c", LEFT_OPEN, url], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "exiting"
