"""A test whose resource is missing skips with its reason, whatever ``CI`` says, and fails
only under the project's own switch ``SESSIONTREE_REQUIRE_ALL=1`` (what ``.ci/run`` sets)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

NEEDS_MISSING_FILE = """
from session_files import session_file


def test_needs_a_file_of_the_collection():
    session_file("pi/not-in-any-collection.v3.jsonl")
"""
"""A test needing a session file that is neither vendored nor in ``../shared``."""


def _run_pytest(tmp_path: Path, **env_vars: str) -> subprocess.CompletedProcess[str]:
    test = tmp_path / "test_needs_missing.py"
    test.write_text(NEEDS_MISSING_FILE)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "SESSIONTREE_REQUIRE_ALL")}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "tests"), str(ROOT / "src"), env.get("PYTHONPATH", "")]
    )
    env.update(env_vars)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-rs",
            "--rootdir",
            str(tmp_path),
            str(test),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "env", [{}, {"CI": "true"}, {"CI": "true", "SESSIONTREE_REQUIRE_ALL": "0"}]
)
def test_missing_resource_skips_with_its_reason_even_with_ci_true(
    tmp_path: Path, env: dict[str, str]
) -> None:
    done = _run_pytest(tmp_path, **env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout
    assert "not-in-any-collection.v3.jsonl: not vendored" in done.stdout


@pytest.mark.parametrize("value", ["1", "true", "YES"])
def test_require_all_turns_the_skip_into_a_failure(tmp_path: Path, value: str) -> None:
    done = _run_pytest(tmp_path, SESSIONTREE_REQUIRE_ALL=value)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed" in done.stdout
    assert "required resource unavailable" in done.stdout
    assert "not-in-any-collection.v3.jsonl" in done.stdout


def test_a_misspelt_require_all_value_is_an_error_not_off(tmp_path: Path) -> None:
    done = _run_pytest(tmp_path, SESSIONTREE_REQUIRE_ALL="on please")
    assert done.returncode != 0
    assert "SESSIONTREE_REQUIRE_ALL='on please'" in done.stdout + done.stderr
    assert "passed" not in done.stdout and "skipped" not in done.stdout


def test_no_test_code_reads_the_generic_ci_variable() -> None:
    # CI=true is set by GitHub Actions and most CI services: it must not change what a test does
    ci_name = re.compile(r"""environ(\.get)?\s*[\[(]\s*["']CI["']|getenv\(\s*["']CI["']""")
    sources = [*(ROOT / "tests").rglob("*.py"), *(ROOT / "src" / "sessiontree").rglob("*.py")]
    readers = [
        str(p)
        for p in sources
        if p != Path(__file__).resolve() and ci_name.search(p.read_text(encoding="utf-8"))
    ]
    assert readers == []
    assert ci_name.search('os.environ.get("CI", "")')  # the pattern finds the old reader
