"""The integrations are optional extras: importing sessiontree (or its sync API, its wire
converters, the integrations package) imports no framework; a missing framework is a
MissingExtraError naming the extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("agents", "claude_agent_sdk", "langchain_core", "pydantic_ai")


def run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_importing_sessiontree_imports_no_framework() -> None:
    code = (
        "import sys, sessiontree, sessiontree.sync, sessiontree.wire, sessiontree.integrations\n"
        "sessiontree.wire.to_openai_responses([]); sessiontree.sync.open_repo('memory://').close()\n"
        f"print([m for m in {FRAMEWORKS!r} if m in sys.modules])"
    )
    assert run(code) == "[]"


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("openai_agents", "agents", "openai-agents"),
        ("claude_agent_sdk", "claude_agent_sdk", "claude-agent-sdk"),
        ("langchain", "langchain_core", "langchain"),
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
    ],
)
def test_a_missing_framework_names_its_extra(module: str, framework: str, extra: str) -> None:
    code = (
        f"import sys; sys.modules[{framework!r}] = None\n"
        "from sessiontree.errors import MissingExtraError\n"
        "try:\n"
        f"    import sessiontree.integrations.{module}\n"
        "except MissingExtraError as exc:\n"
        "    print(exc)\n"
    )
    assert f"pip install 'sessiontree[{extra}]'" in run(code)
