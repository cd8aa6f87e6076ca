"""ExtractiveSummarizer: the offline default summariser (docs/compaction.md)."""

from __future__ import annotations

import re

import pytest

from _compaction_support import assistant, result, user, words
from sessiontree.messages import AgentMessage, parse_message
from sessiontree.summarizers.base import SUMMARY_SECTIONS, Summarizer, SummaryPurpose
from sessiontree.summarizers.extractive import ExtractiveSummarizer


def msgs(*objs: dict[str, object]) -> list[AgentMessage]:
    return [parse_message(o) for o in objs]


def section(text: str, name: str) -> str:
    match = re.search(rf"^## {re.escape(name)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"no section {name!r} in:\n{text}"
    return match.group(1)


CONVERSATION = msgs(
    user("Add a --json flag to the export command. You must not change the CSV output."),
    assistant(
        "I'll read the command first.",
        [("c1", "read", {"path": "src/cli/export.py"}), ("c2", "read", {"path": "missing.py"})],
    ),
    result("c1", "def export(): ...", name="read"),
    result("c2", "ENOENT: no such file", name="read", error=True),
    user("Also never print to stderr. Only use orjson for JSON."),
    assistant(
        "Let's use orjson instead of the json module.",
        [("c3", "edit", {"path": "src/cli/export.py"}), ("c4", "bash", {"command": "pytest -q"})],
    ),
    result("c3", "edited", name="edit"),
)


async def run(messages: list[AgentMessage], **kw: object) -> str:
    s = ExtractiveSummarizer(**kw)  # type: ignore[arg-type]
    r = await s.summarize(messages, previous_summary=None, instructions=None, purpose="compaction")
    assert r.usage is None
    return r.text


def test_it_is_a_summarizer() -> None:
    assert isinstance(ExtractiveSummarizer(), Summarizer)
    with pytest.raises(ValueError):
        ExtractiveSummarizer(max_tokens=10)


async def test_layout_has_every_section_in_order() -> None:
    text = await run(CONVERSATION)
    positions = [text.index(f"## {name}\n") for name in SUMMARY_SECTIONS]
    assert positions == sorted(positions)
    progress = section(text, "Progress")
    assert (
        progress.index("### Done")
        < progress.index("### In progress")
        < progress.index("### Blocked")
    )


async def test_sections_are_filled_from_the_messages() -> None:
    text = await run([parse_message(user("/model")), *CONVERSATION])
    assert "/model" not in text
    assert "Add a --json flag to the export command" in section(text, "Goal")
    constraints = section(text, "Constraints")
    assert "You must not change the CSV output." in constraints
    assert "Also never print to stderr." in constraints
    assert "Only use orjson for JSON." in constraints
    progress = section(text, "Progress")
    done = progress.split("### In progress")[0]
    in_progress, blocked = progress.split("### In progress")[1].split("### Blocked")
    assert "read `src/cli/export.py`" in done and "edit `src/cli/export.py`" in done
    assert "read `missing.py`: ENOENT: no such file" in blocked
    assert "bash `pytest -q`" in in_progress
    assert "Let's use orjson instead of the json module." in section(text, "Key decisions")
    nxt = section(text, "Next steps")
    assert "Latest user request: Also never print to stderr." in nxt
    assert "Awaiting the result of bash `pytest -q`" in nxt
    files = section(text, "Files")
    read, modified = files.split("### Modified")
    assert "`missing.py`" in read and "src/cli/export.py" not in read
    assert "`src/cli/export.py`" in modified


async def test_deterministic() -> None:
    assert await run(CONVERSATION) == await run(CONVERSATION)


async def test_bash_execution_and_model_errors() -> None:
    text = await run(
        msgs(
            user("build it"),
            {"role": "bashExecution", "command": "make", "output": "error: x\n", "exitCode": 2},
            {"role": "bashExecution", "command": "ls", "output": "a", "exitCode": 0},
            assistant("", stopReason="error", errorMessage="overloaded"),
        )
    )
    assert "shell `make`: exit 2 error: x" in section(text, "Progress")
    assert "shell `ls`" in section(text, "Progress")
    assert "Model call failed: overloaded" in section(text, "Critical context")


@pytest.mark.parametrize("budget", [200, 500, 1500])
async def test_stays_within_the_token_budget(budget: int) -> None:
    many = []
    for i in range(300):
        many.append(user(f"request {i}: you must keep {words(30)}"))
        many.append(assistant("ok", [(f"c{i}", "read", {"path": f"/src/file_{i}.py"})]))
        many.append(result(f"c{i}", "text", name="read"))
    text = await run(msgs(*many), max_tokens=budget)
    assert len(text) <= budget * 4
    assert "request 0" in section(text, "Goal")  # the original goal survives
    assert "earlier item(s) omitted" in text
    assert "request 299" in section(text, "Next steps")


async def test_iterative_update_merges_into_the_previous_summary() -> None:
    first = await run(CONVERSATION)
    later = msgs(
        user("Now write the docs for the flag; always use British spelling."),
        assistant("", [("d1", "write", {"path": "docs/export.md"})]),
        result("d1", "written", name="write"),
    )
    s = ExtractiveSummarizer()
    r = await s.summarize(later, previous_summary=first, instructions=None, purpose="compaction")
    text = r.text
    assert "Add a --json flag" in section(text, "Goal")
    assert "Now write the docs" not in section(text, "Goal")  # a goal is already known
    assert "You must not change the CSV output." in section(text, "Constraints")
    assert "always use British spelling" in section(text, "Constraints")
    assert "read `missing.py`: ENOENT" in section(text, "Progress")
    assert "write `docs/export.md`" in section(text, "Progress")
    assert "`docs/export.md`" in section(text, "Files").split("### Modified")[1]
    assert "`src/cli/export.py`" in section(text, "Files").split("### Modified")[1]
    assert "Latest user request: Now write the docs" in section(text, "Next steps")
    assert "Latest user request: Also never" not in text


async def test_a_foreign_previous_summary_is_kept_as_critical_context() -> None:
    s = ExtractiveSummarizer()
    r = await s.summarize(
        msgs(user("continue")),
        previous_summary="We refactored the parser.\nTests pass on CI.",
        instructions=None,
        purpose="compaction",
    )
    ctx = section(r.text, "Critical context")
    assert "We refactored the parser." in ctx and "Tests pass on CI." in ctx


async def test_instructions_keep_matching_items_under_a_tight_budget() -> None:
    many = [user("start")]
    for i in range(200):
        many.append(assistant("", [(f"c{i}", "read", {"path": f"/src/mod_{i}.py"})]))
        many.append(result(f"c{i}", "x", name="read"))
    s = ExtractiveSummarizer(max_tokens=300)
    r = await s.summarize(
        msgs(*many), previous_summary=None, instructions="focus on mod_7.py", purpose="compaction"
    )
    assert "read `/src/mod_7.py`" in section(r.text, "Progress")
    assert "read `/src/mod_8.py`" not in section(r.text, "Progress")


async def test_branch_and_turn_prefix_purposes_keep_the_layout() -> None:
    s = ExtractiveSummarizer()
    purposes: tuple[SummaryPurpose, ...] = ("branch", "turn_prefix")
    for purpose in purposes:
        r = await s.summarize(
            CONVERSATION, previous_summary=None, instructions=None, purpose=purpose
        )
        assert all(f"## {name}" in r.text for name in SUMMARY_SECTIONS)


async def test_later_requests_become_context_and_the_latest_answer_is_replaced() -> None:
    first = await run(
        msgs(
            user("goal one"),
            assistant("first answer"),
            *[user(f"goal {n}") for n in ("two", "three")],
            user("second ask"),
            user("third"),
        )
    )
    ctx = section(first, "Critical context")
    assert "User asked: second ask" in ctx and "Latest answer: first answer" in ctx
    assert "goal three" in section(first, "Goal") and "second ask" not in section(first, "Goal")
    assert "third" in section(first, "Next steps")
    s = ExtractiveSummarizer()
    r = await s.summarize(
        msgs(assistant("second answer")),
        previous_summary=first,
        instructions=None,
        purpose="compaction",
    )
    ctx = section(r.text, "Critical context")
    assert "Latest answer: second answer" in ctx and "first answer" not in ctx
    assert "third" in section(r.text, "Next steps")  # kept: no newer request
