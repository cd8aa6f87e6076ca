"""The README stays honest: every fenced snippet runs as written in a fresh HOME (or is listed
in :data:`NEEDS_NETWORK_MODEL` with the reason), its two set-up commands are what CI runs."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from llm_servers import FakeLLMServer, ReceivedRequest, Say

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CI_RUN = (ROOT / ".ci" / "run").read_text()

FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
SNIPPETS = FENCE.findall(README)
"""Every fenced block of README: ``(language, text)``."""
PYTHON = [code for lang, code in SNIPPETS if lang == "python"]
SHELL = [code for lang, code in SNIPPETS if lang == "sh"]

AGENT_MARK = "# agent.py"
"""The first line of the README's agent example, which runs against a local model server."""

NEEDS_NETWORK_MODEL: dict[str, str] = {}
"""First line of a python snippet that cannot run here → why (it needs a model on the
network). Empty: the agent example runs against the local server of tests/llm_servers.py."""


def fresh_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a newcomer's shell: a fresh HOME, no store or model settings."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XDG_", "SESSIONTREE_", "OPENAI_", "ANTHROPIC_"))
    }
    env["HOME"] = str(home)
    env["PYTHONPATH"] = str(ROOT / "src")
    return env


def run_python(code: str, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "snippet.py"
    script.write_text(code)
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )


def test_every_snippet_is_python_or_sh_and_is_run_or_listed() -> None:
    assert SNIPPETS, "README has no fenced snippet"
    assert {lang for lang, _ in SNIPPETS} <= {"python", "sh"}, [lang for lang, _ in SNIPPETS]
    assert len(SHELL) == 2  # the two set-up commands, checked below
    firsts = [code.splitlines()[0] for code in PYTHON]
    for first in NEEDS_NETWORK_MODEL:  # no stale entry
        assert first in firsts, first
    assert sum(code.startswith(AGENT_MARK) for code in PYTHON) == 1


PLAIN = [code for code in PYTHON if not code.startswith(AGENT_MARK)]


@pytest.mark.parametrize(
    "code", PLAIN, ids=[f"snippet{i}-{c.splitlines()[-1][:30]}" for i, c in enumerate(PLAIN)]
)
def test_readme_python_snippet_runs_in_a_fresh_home(code: str, tmp_path: Path) -> None:
    if code.splitlines()[0] in NEEDS_NETWORK_MODEL:
        pytest.skip(NEEDS_NETWORK_MODEL[code.splitlines()[0]])
    done = run_python(code, tmp_path, fresh_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def _agent_replies(request: ReceivedRequest) -> Say:
    """The model side of the README agent: a tool call for the question, then answers."""
    last = request.body["messages"][-1]
    if last["role"] == "tool":
        return Say(text=f"There are {last['content']} words.")
    if "French" in str(last["content"]):
        return Say(text="Il y a 4 mots.")
    return Say(tool_calls=(("call_1", "word_count", {"text": "the quick brown fox"}),))


def test_readme_agent_runs_resumes_and_forks(tmp_path: Path) -> None:
    [code] = [b for b in PYTHON if b.startswith(AGENT_MARK)]
    assert len(code.strip().splitlines()) <= 45
    # what README says the example needs: the openai extra (its default model is openai/...)
    intro = README[: README.index(AGENT_MARK)].rsplit("## Run an agent", 1)[1]
    assert "'.[openai]'" in intro and "'.[anthropic]'" in intro
    assert (
        "openai"
        in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    with FakeLLMServer(_agent_replies) as server:
        # the model as README's default gives it (openai/gpt-4.1-mini); the store named
        # absolutely (how the default sqlite:///agent.db resolves is the URL rule's business)
        env = {
            **fresh_env(tmp_path),
            "OPENAI_BASE_URL": f"{server.url}/v1",
            "AGENT_STORE": f"sqlite:///{tmp_path / 'agent.db'}",
        }
        outputs = []
        for _ in range(2):  # the second run is a restart: it resumes the same session
            done = run_python(code, tmp_path, env)
            assert done.returncode == 0, done.stderr
            assert done.stderr == ""
            outputs.append(done.stdout)
    assert (tmp_path / "agent.db").is_file()
    assert outputs[0] == ("[4 entries] There are 4 words.\n[fork of 6 entries] Il y a 4 mots.\n")
    assert outputs[1] == ("[8 entries] There are 4 words.\n[fork of 10 entries] Il y a 4 mots.\n")
    assert {r.body["model"] for r in server.requests} == {"gpt-4.1-mini"}
    # the resumed run sent the first run's conversation (not the fork's) back to the model
    resumed = server.requests[3].body["messages"]
    assert [m["role"] for m in resumed] == ["user", "assistant", "tool", "assistant", "user"]


def _parts(command: str) -> list[str]:
    return [part.strip() for part in command.split("&&")]


def test_main_job_runs_as_written_in_a_fresh_home(tmp_path: Path) -> None:
    main_job = SHELL[0].strip()
    install = _parts(main_job)[:2]
    assert install == ["python3 -m venv .venv", ".venv/bin/pip install -q -e ."]  # base only
    sync, listing = _parts(main_job)[2:]
    argv = shlex.split(sync)
    assert argv[:4] == [".venv/bin/sessiontree", "sync", "--source", "data/sessions"]
    assert shlex.split(listing) == [".venv/bin/sessiontree", "list"]
    env = fresh_env(tmp_path)

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sessiontree", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=300,
            check=False,
        )

    done = run(argv[1:])
    assert done.returncode == 0, done.stderr
    assert " 0 failed" in done.stderr and "0 new" not in done.stderr
    listed = run(["list"])
    assert listed.returncode == 0, listed.stderr
    assert "pi-mono" in listed.stdout or len(listed.stdout.splitlines()) >= 10
    again = run([*argv[1:], "--json"])
    assert again.returncode == 0 and '"new": 0' in again.stdout  # nothing read twice
    # the embedded default store, in the fresh HOME's user data directory
    assert (Path(env["HOME"]) / ".local/share/sessiontree/sessions.db").is_file()


def test_test_command_is_what_ci_runs() -> None:
    tests = SHELL[1].strip()
    parts = _parts(tests)
    assert parts[0] == "python3 -m venv .venv"
    assert parts[-1] == ".venv/bin/pytest"
    # dependency groups need pip >= 25.1; python3 -m venv bundles an older one
    upgrade = parts.index(".venv/bin/pip install -q --upgrade pip")
    assert upgrade < parts.index(".venv/bin/pip install -q -e . --group dev")
    ci_lines = [line.strip() for line in CI_RUN.splitlines()]
    for part in parts[:-1]:
        assert part in ci_lines, part
    assert any(line.startswith(parts[-1]) for line in ci_lines)
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    assert any(r.startswith("pytest") for r in groups["dev"])
    assert (ROOT / "data" / "sessions").is_dir()


def test_readme_says_what_the_test_command_runs() -> None:
    # the README said the test command ran ruff and mypy; it runs pytest only
    first = README.index("```sh\n")
    second = README.index("```sh\n", first + 1)
    intro = README[:second].rstrip().rsplit("\n\n", 1)[-1]  # the paragraph before it
    tests = README[second + len("```sh\n") : README.index("\n```", second)]
    for tool in ("ruff", "mypy"):
        assert (tool in intro) == (tool in tests), (tool, intro, tests)
    assert "pytest" in intro and "pytest" in tests


def _ci_tail(tmp_path: Path, pytest_status: int) -> subprocess.CompletedProcess[str]:
    """.ci/run from its ``export SESSIONTREE_REQUIRE_ALL=1`` on, with a stand-in pytest that
    records the switch it sees and exits with ``pytest_status``."""
    tail = CI_RUN[CI_RUN.index("export SESSIONTREE_REQUIRE_ALL=1") :]
    bindir = tmp_path / ".venv" / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    fake = bindir / "pytest"
    fake.write_text(f'#!/bin/sh\necho "switch=$SESSIONTREE_REQUIRE_ALL"\nexit {pytest_status}\n')
    fake.chmod(0o755)
    script = tmp_path / "tail.sh"
    script.write_text("set -euo pipefail\n" + tail)
    env = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_REQUIRE_ALL"}
    return subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("status", [0, 1, 5])
def test_ci_runs_pytest_with_require_all_and_reports_no_tests(tmp_path: Path, status: int) -> None:
    done = _ci_tail(tmp_path, status)
    assert done.stdout == "switch=1\n"
    assert done.returncode == status
    assert ("collected no tests" in done.stderr) == (status == 5)
