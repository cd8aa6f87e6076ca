"""The real agents' session files import whole (docs/interop.md, "Tested against the real agents").

Claude Code, Codex and pi — the npm packages pinned in ``tests/node_agents/package.json`` — each run
non-interactively against a scripted model on 127.0.0.1 (tests/real_agents.py): one tool call
that reads a file, then an answer; the resume cases add a second turn to the same session
file. ``sessiontree import`` (the CLI, into a SQLite store) must bring in every prompt and
answer, each tool call with its result, the model name, and the leaf on the last answer.

Without node or the installed packages the tests skip (and fail under
``SESSIONTREE_REQUIRE_ALL=1``, as in ``.ci/run``, which installs them).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import pytest

from backends import unavailable
from real_agents import (
    AGENTS,
    ANSWER_INPUT_TOKENS,
    CACHED_TOKENS,
    CALL_INPUT_TOKENS,
    MODELS,
    NOTE_TEXT,
    OUTPUT_TOKENS,
    THINKING,
    AgentRun,
    AgentSandbox,
    TokenTotals,
    missing,
    pinned_versions,
    tool_then_answer,
)
from sessiontree import open_repo
from sessiontree.entries import MessageEntry
from sessiontree.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from sessiontree.tool_pairs import find_tool_pair_problems

each_agent = pytest.mark.parametrize("agent", AGENTS)
PROMPTS = ("read note.txt and tell me what it says", "read it once more")


@pytest.fixture
def sandbox(agent: str, tmp_path: Path) -> AgentSandbox:
    reason = missing(agent)
    if reason is not None:
        unavailable(f"{agent}: {reason}")
    return AgentSandbox(agent, tmp_path / agent)


def text_of(message: UserMessage | AssistantMessage | ToolResultMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))


def stats_of(path: Path, store: Path) -> TokenTotals:
    """Import ``path``; the token totals of ``sessiontree stats`` (Session.get_stats)."""
    session_id = import_with_cli(path, store)

    async def read() -> TokenTotals:
        repo = open_repo(f"sqlite:///{store}")
        try:
            stats = await (await repo.open(session_id)).get_stats()
        finally:
            await repo.close()
        return TokenTotals(
            stats.input_tokens,
            stats.cache_read_tokens,
            stats.cache_write_tokens,
            stats.output_tokens,
        )

    return asyncio.run(read())


def import_with_cli(path: Path, store: Path) -> str:
    """``sessiontree import PATH`` into a SQLite store; the new session's id."""
    done = subprocess.run(
        [sys.executable, "-m", "sessiontree", "--store", f"sqlite:///{store}", "import", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # every parent link of the file held; no line was unreadable (that fails the import)
    assert "missing parent" not in done.stdout, done.stdout
    match = re.search(r"→ (\S+) \(", done.stdout)
    assert match, done.stdout
    return match.group(1)


def imported_branch(path: Path, store: Path) -> tuple[list[MessageEntry], str | None, str | None]:
    """Import ``path``; the message entries on the imported session's branch, the leaf id and
    the model of its context."""
    session_id = import_with_cli(path, store)

    async def read() -> tuple[list[MessageEntry], str | None, str | None]:
        repo = open_repo(f"sqlite:///{store}")
        try:
            session = await repo.open(session_id)
            branch = await session.get_branch()
            leaf = await session.get_leaf_id()
            context = await session.build_context()
            model = context.model.model_id if context.model else None
            return [e for e in branch if isinstance(e, MessageEntry)], leaf, model
        finally:
            await repo.close()

    return asyncio.run(read())


def check_whole(
    agent: str,
    messages: list[MessageEntry],
    leaf: str | None,
    model: str | None,
    turns: int,
    parallel: int = 1,
) -> None:
    """Every prompt and answer of ``turns`` turns, each call (``parallel`` in one reply per
    turn) paired with its result, the model name, the leaf on the last answer."""
    said = [m.message for m in messages]
    prompts = [text_of(m) for m in said if isinstance(m, UserMessage)]
    # Codex sends its environment as a user message too; the prompts come in order, once each
    assert [p for p in prompts if p in PROMPTS] == list(PROMPTS[:turns])
    answers = [text_of(m) for m in said if isinstance(m, AssistantMessage)]
    assert [a for a in answers if a.startswith("answer")] == [
        f"answer {n}" for n in range(1, turns + 1)
    ]
    calls = [
        b
        for m in said
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, ToolCall)
    ]
    assert [c.id for c in calls] == [f"call_{n}" for n in range(1, parallel * turns + 1)]
    results = [m for m in said if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == [c.id for c in calls]
    assert all(NOTE_TEXT in text_of(r) for r in results), [text_of(r) for r in results]
    assert find_tool_pair_problems(said) == []
    replies = [m for m in said if isinstance(m, AssistantMessage)]
    assert len(replies) == 2 * turns  # the tool calls and the answer of each turn
    for reply in replies[::2]:  # each turn's calls are one message
        assert sum(isinstance(b, ToolCall) for b in reply.content) == parallel
    for n, message in enumerate(replies):
        assert message.model == MODELS[agent]
        usage = message.usage
        assert usage is not None
        expected_input = ANSWER_INPUT_TOKENS if n % 2 else CALL_INPUT_TOKENS
        assert (usage.input, usage.cache_read, usage.output) == (
            expected_input,
            CACHED_TOKENS,
            OUTPUT_TOKENS,
        )
    assert model == MODELS[agent]
    last = messages[-1]
    assert isinstance(last.message, AssistantMessage)
    assert text_of(last.message) == f"answer {turns}"
    assert leaf == last.id


def check_requests(run: AgentRun) -> None:
    """The turn asked the model twice: for the tool call, then with the tool's real output."""
    posts = [r for r in run.requests if r.method == "POST" and "count_tokens" not in r.path]
    assert len(posts) == 2, [(r.method, r.path) for r in run.requests]
    assert all(r.body.get("model") == MODELS[run.agent] for r in posts)
    assert NOTE_TEXT in str(posts[1].body), "the tool's output did not reach the model"


def thinking_of(messages: list[MessageEntry]) -> list[str]:
    return [
        block.thinking
        for entry in messages
        if isinstance(entry.message, AssistantMessage)
        for block in entry.message.content
        if isinstance(block, ThinkingContent)
    ]


@each_agent
def test_one_turn_imports_whole(agent: str, sandbox: AgentSandbox, tmp_path: Path) -> None:
    with sandbox:
        run = sandbox.run(PROMPTS[0])
    check_requests(run)
    messages, leaf, model = imported_branch(run.session_file, tmp_path / "store.db")
    check_whole(agent, messages, leaf, model, turns=1)


@each_agent
def test_resumed_session_imports_both_turns(
    agent: str, sandbox: AgentSandbox, tmp_path: Path
) -> None:
    with sandbox:
        first = sandbox.run(PROMPTS[0])
        second = sandbox.resume(PROMPTS[1])
    assert second.session_file == first.session_file
    check_requests(second)
    # the resumed turn sent the first turn's history to the model
    assert "answer 1" in str(second.requests[0].body)
    messages, leaf, model = imported_branch(second.session_file, tmp_path / "store.db")
    check_whole(agent, messages, leaf, model, turns=2)


@each_agent
def test_parallel_tool_calls_import_as_one_message_with_results_in_order(
    agent: str, tmp_path: Path
) -> None:
    # two calls in one reply: Claude Code writes a line per block, Codex an item per call
    reason = missing(agent)
    if reason is not None:
        unavailable(f"{agent}: {reason}")
    root = tmp_path / agent
    script = tool_then_answer(agent, root / "work", parallel=2)
    with AgentSandbox(agent, root, script) as box:
        run = box.run(PROMPTS[0])
    check_requests(run)
    messages, leaf, model = imported_branch(run.session_file, tmp_path / "store.db")
    check_whole(agent, messages, leaf, model, turns=1, parallel=2)


@pytest.mark.parametrize("agent", ["claude-code", "pi"])
def test_thinking_imports_as_thinking_blocks(
    agent: str, sandbox: AgentSandbox, tmp_path: Path
) -> None:
    with sandbox:
        run = sandbox.run(PROMPTS[0])
    messages, _, _ = imported_branch(run.session_file, tmp_path / "store.db")
    assert thinking_of(messages) == [THINKING, THINKING]


@pytest.mark.parametrize("agent", ["codex"])
def test_codex_reasoning_summary_imports_as_thinking(
    agent: str, sandbox: AgentSandbox, tmp_path: Path
) -> None:
    with sandbox:
        run = sandbox.run(PROMPTS[0])
    assert THINKING in run.session_file.read_text()  # Codex wrote the summary
    messages, _, _ = imported_branch(run.session_file, tmp_path / "store.db")
    assert thinking_of(messages) == [THINKING, THINKING]


@each_agent
def test_token_totals_agree_with_ccusage(agent: str, tmp_path: Path) -> None:
    # what the scripted model reported over two turns (a tool call and an answer each), what
    # ccusage reads from the agent's own files, and what the import adds up are the same
    reason = missing(agent, ccusage=True)
    if reason is not None:
        unavailable(f"{agent}: {reason}")
    with AgentSandbox(agent, tmp_path / agent) as box:
        box.run(PROMPTS[0])
        run = box.resume(PROMPTS[1])
        counted = box.ccusage()
    scripted = TokenTotals(
        input=2 * (CALL_INPUT_TOKENS + ANSWER_INPUT_TOKENS),
        cache_read=4 * CACHED_TOKENS,
        cache_write=0,
        output=4 * OUTPUT_TOKENS,
    )
    assert counted == scripted
    assert stats_of(run.session_file, tmp_path / "store.db") == scripted


def test_the_docs_name_the_pinned_versions() -> None:
    # docs/interop.md's table of the agents tested against states the versions that run
    docs = (Path(__file__).parent.parent / "docs" / "interop.md").read_text()
    section = docs.split("## Tested against the real agents", 1)[1]
    rows = {
        name: version
        for names, version in re.findall(r"^\| (`[^|]+`) \| ([\d.]+) \|", section, re.M)
        for name in re.findall(r"`([^`]+)`", names)
    }
    assert rows == pinned_versions()
