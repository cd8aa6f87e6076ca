"""The README stays honest: its Python example runs, its test command is what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_readme_python_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert blocks, "README has no python example"
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})


def test_readme_gives_two_setup_commands_and_ci_runs_the_test_one() -> None:
    commands = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    assert len(commands) == 2
    main_job, tests = commands
    assert "sessiontree import data/sessions" in main_job
    ci = (ROOT / ".ci" / "run").read_text()
    test_runner = tests.split("&&")[-1].strip()
    assert test_runner in ci
    assert "pip install -q -e '.[dev]'" in ci
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
