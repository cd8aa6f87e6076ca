"""The README stays honest: its Python example runs, its test command is what CI runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from llm_servers import FakeLLMServer, ReceivedRequest, Say

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


AGENT_MARK = "# agent.py"
"""The first line of the README's agent example, which runs against a model server."""


def test_readme_python_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    blocks = [b for b in blocks if not b.startswith(AGENT_MARK)]
    assert blocks, "README has no python example"
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})


def _agent_replies(request: ReceivedRequest) -> Say:
    """The model side of the README agent: a tool call for the question, then answers."""
    last = request.body["messages"][-1]
    if last["role"] == "tool":
        return Say(text=f"There are {last['content']} words.")
    if "French" in str(last["content"]):
        return Say(text="Il y a 4 mots.")
    return Say(tool_calls=(("call_1", "word_count", {"text": "the quick brown fox"}),))


def test_readme_agent_runs_resumes_and_forks(tmp_path: Path) -> None:
    [code] = [
        b for b in re.findall(r"```python\n(.*?)```", README, re.S) if b.startswith(AGENT_MARK)
    ]
    assert len(code.strip().splitlines()) <= 45
    script = tmp_path / "agent.py"
    script.write_text(code)
    with FakeLLMServer(_agent_replies) as server:
        env = {
            **os.environ,
            "SESSIONTREE_MODEL": "openai/fake-model",
            "OPENAI_BASE_URL": f"{server.url}/v1",
            "AGENT_STORE": f"sqlite:///{tmp_path / 'agent.db'}",
        }
        env.pop("OPENAI_API_KEY", None)
        outputs = []
        for _ in range(2):  # the second run is a restart: it resumes the same session
            done = subprocess.run(
                [sys.executable, str(script)],
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp_path,
                timeout=120,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            assert done.stderr == ""
            outputs.append(done.stdout)
    assert outputs[0] == ("[4 entries] There are 4 words.\n[fork of 6 entries] Il y a 4 mots.\n")
    assert outputs[1] == ("[8 entries] There are 4 words.\n[fork of 10 entries] Il y a 4 mots.\n")
    # the resumed run sent the first run's conversation (not the fork's) back to the model
    resumed = server.requests[3].body["messages"]
    assert [m["role"] for m in resumed] == ["user", "assistant", "tool", "assistant", "user"]


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
