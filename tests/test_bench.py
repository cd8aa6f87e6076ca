"""The benchmarks run as README gives them: every script answers ``--help`` without starting a
run, the JSONL benchmark finds its real session in a fresh clone (``data/sessions``), and the
backend benchmark's raw search matches the PostgreSQL schema it runs on."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from backends import PG_ADMIN_URL, unavailable

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py"))


def _run(
    args: list[str], *, cwd: Path, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python args`` in its own process group; on timeout the whole group (a
    benchmark's children too) is killed and the test fails."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=cwd,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{args} still running after {timeout} s")
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def test_every_bench_script_is_covered() -> None:
    assert "run.py" in SCRIPTS and "bench_jsonl.py" in SCRIPTS and "bench_backends.py" in SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_prints_usage_and_runs_nothing(script: str) -> None:
    done = _run([str(BENCH / script), "--help"], cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {script}")
    assert "== " not in done.stdout  # bench/run.py prints "== name" as it starts each one


def test_run_refuses_an_unknown_option_before_starting(tmp_path: Path) -> None:
    done = _run([str(BENCH / "run.py"), "--quik"], cwd=ROOT, timeout=60)
    assert done.returncode == 2
    assert "unrecognized arguments: --quik" in done.stderr
    assert "== " not in done.stdout


def test_bench_jsonl_finds_the_shipped_session_in_a_fresh_clone(tmp_path: Path) -> None:
    # a clone with no ../shared beside it: only the repository's own data/sessions
    clone = tmp_path / "clone"
    (clone / "bench").mkdir(parents=True)
    shutil.copy(BENCH / "bench_jsonl.py", clone / "bench")
    real = "pi/pi-mono_before-compaction.v1.jsonl"
    (clone / "data" / "sessions" / "pi").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "sessions" / real, clone / "data" / "sessions" / real)
    assert not (tmp_path / "shared").exists()
    args = ["bench/bench_jsonl.py", "--sessions", "3", "--repeat", "1", "--session-kb", "2"]
    done = _run(args, cwd=clone, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cannot find" not in done.stdout + done.stderr
    assert "list 3 sessions" in done.stdout


def test_bench_backends_runs_on_postgresql(tmp_path: Path) -> None:
    try:
        import psycopg
    except ImportError:  # pragma: no cover
        unavailable("psycopg is not installed")
        raise
    try:
        psycopg.connect(PG_ADMIN_URL, connect_timeout=5).close()
    except psycopg.OperationalError as exc:
        unavailable(f"PostgreSQL at {PG_ADMIN_URL} is not reachable: {exc}")
    args = [
        "bench/bench_backends.py",
        "--backends",
        "postgres,sqlite",
        "--depths",
        "50",
        "--sessions",
        "20",
    ]
    done = _run(args, cwd=ROOT, timeout=300, env={"SESSIONTREE_BENCH_PG": PG_ADMIN_URL})
    assert done.returncode == 0, done.stdout + done.stderr
    searches = [line.split() for line in done.stdout.splitlines() if "search (20 hits)" in line]
    assert [s[0] for s in searches] == ["postgres", "sqlite"]
    for row in searches:
        assert row[-2] != "-", row  # the raw driver's search ran and was timed


def test_sync_bench_prints_its_table_on_a_tiny_corpus(tmp_path: Path) -> None:
    # the three targets measured end to end on a few MB (the figures themselves are not
    # checked here: speed is measured in bench/, never by timed tests)
    args = [str(BENCH / "bench_sync.py"), "--mb", "2", "--files", "20", "--big-mb", "1"]
    done = _run([*args, "--repeat", "1"], cwd=ROOT, timeout=600)
    assert "Traceback" not in done.stderr, done.stderr
    table = done.stdout.split("target", 1)[-1]
    for row in ("first sync", "unchanged re-sync", "10 lines appended"):
        assert row in table, done.stdout
    # every copy synced as its own session; no content read by the unchanged re-sync
    assert "WARNING" not in done.stdout
    assert "FAIL: the unchanged re-sync read" not in done.stdout


def test_encryption_bench_prints_its_ratios() -> None:
    # a few turns end to end (the figures are not checked: speed is measured in bench/)
    done = _run(
        [str(BENCH / "bench_encryption.py"), "--messages", "5", "--repeat", "1"],
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for op in ("append", "read: get_entries", "read: build_context"):
        assert f"sqlite     {op}" in done.stdout, done.stdout


def test_payload_bench_prints_its_table_on_a_tiny_session() -> None:
    # both dialects end to end on a few turns of small screenshots (the ratios themselves
    # are not checked here: they are measured in bench/, never by timed tests)
    try:
        import psycopg
    except ImportError:  # pragma: no cover
        unavailable("psycopg is not installed")
        raise
    try:
        psycopg.connect(PG_ADMIN_URL, connect_timeout=5).close()
    except psycopg.OperationalError as exc:
        unavailable(f"PostgreSQL at {PG_ADMIN_URL} is not reachable: {exc}")
    args = [str(BENCH / "bench_payloads.py"), "--turns", "6", "--mb", "0.02", "--repeat", "1"]
    done = _run(args, cwd=ROOT, timeout=600, env={"SESSIONTREE_BENCH_PG": PG_ADMIN_URL})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for store in ("SQLite", "PostgreSQL"):
        row = next((line for line in lines if line.startswith(f"| {store} |")), None)
        assert row is not None and "**" in row, done.stdout
