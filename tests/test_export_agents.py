"""A session written in Claude Code's and Codex's own formats (export, handoff) reads back as
the same context: every user message, answer, tool call and result, and the model
(docs/interop.md "Hand a session to another agent")."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from session_files import COLLECTION, session_file
from sessiontree import open_repo
from sessiontree.cli import cli
from sessiontree.context import SessionContext, to_llm_messages
from sessiontree.errors import InvalidArgumentError
from sessiontree.interop import import_session
from sessiontree.interop.export import claude_code_transcript, codex_rollout
from sessiontree.interop.handoff import agent_session_path, handoff
from sessiontree.messages import AgentMessage, AssistantMessage, ThinkingContent, parse_message
from sessiontree.repos import MemoryRepo
from sessiontree.wire import request_messages, safe_tool_id

WRITERS = {"claude-code": claude_code_transcript, "codex": codex_rollout}


def canonical(messages: Sequence[AgentMessage], fmt: str) -> list[dict[str, Any]]:
    """What a model is sent for ``messages``, as far as ``fmt`` can carry it: Codex has no
    error flag on a tool output and makes consecutive replies one turn."""
    wire_id = safe_tool_id if fmt == "claude-code" else None
    out: list[dict[str, Any]] = []
    for m in to_llm_messages(request_messages(messages, wire_id=wire_id)):
        m = dict(m)
        if fmt == "codex":
            m.pop("is_error", None)
            if m["role"] == "assistant" and out and out[-1]["role"] == "assistant":
                last = out[-1]
                texts = [t for t in (last["content"], m["content"]) if t]
                last["content"] = "\n".join(texts)
                calls = [*last.get("tool_calls", []), *m.get("tool_calls", [])]
                if calls:
                    last["tool_calls"] = calls
                continue
        out.append(m)
    return out


async def round_trip(context: SessionContext, fmt: str, tmp_path: Path) -> SessionContext:
    exported = WRITERS[fmt](context, cwd="/work/project")
    path = tmp_path / f"{fmt}-{exported.session_id}.jsonl"
    path.write_bytes(exported.data)
    session, report = await import_session(path, MemoryRepo())
    assert report.format == fmt and report.unreadable_lines == []
    back: SessionContext = await session.build_context()
    return back


@pytest.mark.parametrize("fmt", list(WRITERS))
@pytest.mark.parametrize("name", COLLECTION, ids=lambda n: n.split("/")[-1][:40])
async def test_every_real_session_reads_back_as_the_same_context(
    name: str, fmt: str, tmp_path: Path
) -> None:
    session, _ = await import_session(session_file(name), MemoryRepo(), lenient=True)
    context = await session.build_context()
    back = await round_trip(context, fmt, tmp_path)
    assert canonical(back.messages, fmt) == canonical(context.messages, fmt)
    if context.model is not None and any(isinstance(m, AssistantMessage) for m in back.messages):
        assert back.model is not None and back.model.model_id == context.model.model_id


_text = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FFF), min_size=1, max_size=30)
_ids = st.from_regex(r"[a-z0-9:.|_-]{1,12}", fullmatch=True)


@st.composite
def contexts(draw: st.DrawFn) -> SessionContext:
    """Turns of a user message, then replies with text and tool calls, each call answered."""
    messages: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 4))):
        messages.append({"role": "user", "content": draw(_text)})
        for _ in range(draw(st.integers(1, 3))):
            calls = [
                {
                    "type": "toolCall",
                    "id": draw(_ids),
                    "name": draw(st.sampled_from(["bash", "read"])),
                    "arguments": {"path": draw(_text)},
                }
                for _ in range(draw(st.integers(0, 2)))
            ]
            content = [{"type": "text", "text": draw(_text)}, *calls]
            messages.append(
                {
                    "role": "assistant",
                    "content": content,
                    "model": "claude-sonnet-4-5",
                    "provider": "anthropic",
                }
            )
            for call in calls:
                messages.append(
                    {
                        "role": "toolResult",
                        "toolCallId": call["id"],
                        "toolName": call["name"],
                        "content": [{"type": "text", "text": draw(_text)}],
                        "isError": draw(st.booleans()),
                    }
                )
            if not calls:
                break
    return SessionContext(system_prompt="", messages=[parse_message(m) for m in messages])


@pytest.mark.parametrize("fmt", list(WRITERS))
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(context=contexts())
async def test_generated_contexts_read_back_alike(
    context: SessionContext, fmt: str, tmp_path: Path
) -> None:
    back = await round_trip(context, fmt, tmp_path)
    assert canonical(back.messages, fmt) == canonical(context.messages, fmt)


def test_what_a_format_cannot_carry_is_listed() -> None:
    reply = AssistantMessage.model_validate(
        {
            "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "hi"}],
            "model": "m",
            "stopReason": "stop",
        }
    )
    failed = AssistantMessage.model_validate({"content": [], "stopReason": "error", "model": "m"})
    context = SessionContext(
        system_prompt="",
        messages=[
            parse_message({"role": "user", "content": "q"}),
            failed,
            reply,
            parse_message({"role": "branchSummary", "summary": "left", "fromId": "x"}),
        ],
    )
    cc = claude_code_transcript(context, cwd="/p").not_carried
    assert cc["thinking without a signature (left out)"] == 1
    assert cc["failed or aborted replies (left out)"] == 1
    assert cc["branchSummary messages (written as user text)"] == 1
    codex = codex_rollout(context, cwd="/p").not_carried
    assert codex["thinking of other providers than OpenAI (left out)"] == 1
    assert isinstance(reply.content[0], ThinkingContent)


def test_claude_code_gets_only_anthropics_thinking_back() -> None:
    # a signature is the provider's: Anthropic refuses another provider's on resume
    def reply(api: str) -> AssistantMessage:
        return AssistantMessage.model_validate(
            {
                "content": [
                    {"type": "thinking", "thinking": "t", "thinkingSignature": "sig"},
                    {"type": "text", "text": "a"},
                ],
                "api": api,
                "model": "m",
            }
        )

    context = SessionContext(
        system_prompt="",
        messages=[
            parse_message({"role": "user", "content": "q"}),
            reply("openai-responses"),
            parse_message({"role": "user", "content": "q2"}),
            reply("anthropic-messages"),
        ],
    )
    exported = claude_code_transcript(context, cwd="/p")
    lines = [json.loads(line) for line in exported.data.splitlines()]
    kinds = [
        [b["type"] for b in line["message"]["content"]]
        for line in lines
        if line["type"] == "assistant"
    ]
    assert kinds == [["text"], ["thinking", "text"]]
    assert exported.not_carried == {"thinking of other providers than Anthropic (left out)": 1}


def test_a_context_with_nothing_to_resume_is_refused() -> None:
    empty = SessionContext(system_prompt="", messages=[])
    for writer in WRITERS.values():
        with pytest.raises(InvalidArgumentError, match="nothing to resume"):
            writer(empty, cwd="/p")


def test_agent_session_paths_follow_each_agents_layout(tmp_path: Path) -> None:
    from datetime import datetime

    when = datetime(2026, 3, 1, 9, 30, 5, 123000, tzinfo=UTC)
    env = {"HOME": str(tmp_path)}
    cc = agent_session_path("claude-code", "S", "/home/u/my_app.v2", when, env)
    assert cc == tmp_path / ".claude/projects/-home-u-my-app-v2/S.jsonl"
    env_cc = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")}
    assert (
        agent_session_path("claude-code", "S", "/p", when, env_cc).parent.parent
        == tmp_path / "cc/projects"
    )
    codex = agent_session_path(
        "codex", "S", "/p", when, {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "cx")}
    )
    local = when.astimezone()
    assert codex.parent == tmp_path / "cx/sessions" / local.strftime("%Y/%m/%d")
    assert codex.name == f"rollout-{local.strftime('%Y-%m-%dT%H-%M-%S')}-S.jsonl"
    pi = agent_session_path("pi", "S", "/home/u/proj", when, env)
    assert pi.parent == tmp_path / ".pi/agent/sessions/--home-u-proj--"
    assert pi.name.endswith("_S.jsonl")


@pytest.mark.parametrize("agent", ["claude-code", "codex", "pi"])
async def test_handoff_writes_where_the_agent_looks_and_reads_back(
    agent: str, tmp_path: Path
) -> None:
    path = session_file("claude-code/agent-a0294d5.jsonl")
    async with open_repo("memory://") as repo:
        session, _ = await import_session(path, repo)
        context = await session.build_context()
        env = {"HOME": str(tmp_path)}
        done = await handoff(session, agent, cwd="/work/project", env=env)  # type: ignore[arg-type]
    assert done.path.is_file() and done.path.is_relative_to(tmp_path)
    assert done.session_id in done.resume and done.session_id != session.id
    assert (done.path.stat().st_mode & 0o777) == 0o600
    back_session, report = await import_session(done.path, MemoryRepo())
    assert report.format == ("pi" if agent == "pi" else agent)
    back = await back_session.build_context()
    fmt = "claude-code" if agent == "pi" else agent  # pi keeps every entry: the same context
    assert canonical(back.messages, fmt) == canonical(context.messages, fmt)
    if agent == "pi":
        assert done.resume == f"pi --session {done.path}"
        assert json.loads(done.path.read_bytes().split(b"\n")[0])["cwd"] == "/work/project"


def test_the_cli_exports_and_hands_off(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    runner = CliRunner()
    source = session_file("claude-code/agent-a0294d5.jsonl")
    assert runner.invoke(cli, ["--store", store, "import", str(source)]).exit_code == 0
    sid = "a6214a01-0396-4893-b5ef-eac084cb9ff6-agent-a0294d5"
    out = tmp_path / "out.jsonl"
    result = runner.invoke(cli, ["--store", store, "export", sid, str(out), "--format", "codex"])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_bytes().split(b"\n")[0])["type"] == "session_meta"
    result = runner.invoke(
        cli,
        ["--store", store, "handoff", sid, "--to", "claude-code", "--cwd", "/w/p", "--json"],
        env={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")},
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["resume"] == f"claude --resume {data['session_id']}"
    assert Path(data["path"]) == tmp_path / "claude/projects/-w-p" / f"{data['session_id']}.jsonl"


async def branched_session(repo: Any) -> tuple[Any, dict[str, str]]:
    """A session of two branches whose leaf was moved back to the first answer (labelled
    ``kept``): the ids of its messages by text."""
    session = await repo.create()
    ids: dict[str, str] = {}
    for text, role in [
        ("first question", "user"),
        ("first answer", "assistant"),
        ("abandoned question", "user"),
        ("abandoned answer", "assistant"),
    ]:
        message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}]}
        if role == "assistant":
            message |= {"model": "fake-pi", "provider": "fake", "stopReason": "stop"}
        ids[text] = await session.append_message(message)
    await session.append_label(ids["first answer"], "kept")
    await session.set_leaf_id(ids["first answer"])
    return session, ids


def pi_path_of(path: Path) -> list[dict[str, Any]]:
    """The entries pi resumes a file on: from its last line back along ``parentId`` (pi has no
    leaf pointer; it continues from the last line)."""
    entries = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    by_id = {e["id"]: e for e in entries}
    path_entries: list[dict[str, Any]] = []
    current = entries[-1]
    while current is not None:
        path_entries.insert(0, current)
        current = by_id.get(current["parentId"]) if current["parentId"] else None
    return path_entries


async def test_a_session_handed_to_pi_continues_from_its_leaf(tmp_path: Path) -> None:
    # pi has no leaf pointer: it continues from the file's last line, which must be the leaf
    # or a label under it (never the `leaf` entry that set_leaf_id wrote)
    async with open_repo("memory://") as repo:
        session, ids = await branched_session(repo)
        done = await handoff(session, "pi", cwd="/p", env={"HOME": str(tmp_path)})
    on_path = pi_path_of(done.path)
    texts = [e["message"]["content"][0]["text"] for e in on_path if e["type"] == "message"]
    assert texts == ["first question", "first answer"]
    assert on_path[-1]["type"] == "label"
    assert (on_path[-1]["targetId"], on_path[-1]["label"]) == (ids["first answer"], "kept")
    # pi reads every reply's usage: the replies without one get zero counts, and say so
    replies = [e["message"] for e in on_path if e["type"] == "message"][1::2]
    assert [r["usage"]["input"] for r in replies] == [0]
    assert done.not_carried == {"replies without usage (written with zero counts)": 2}
    # and sessiontree reads the same leaf, branch and label back
    back, _ = await import_session(done.path, MemoryRepo())
    assert await back.get_leaf_id() == ids["first answer"]
    assert await back.get_label(ids["first answer"]) == "kept"
    assert len(await back.get_tree()) == 1


async def test_a_retained_tail_compaction_reaches_pi_as_messages(tmp_path: Path) -> None:
    # found handing the collection's planetfall_b3 (a Codex `compacted` record) to the real
    # pi: pi knows no `retainedTail`, so it sent only the (empty) summary and lost the 14
    # user messages Codex had kept; the kept messages are now written after the compaction
    async with open_repo("memory://") as repo:
        session = await repo.create()
        await session.append_message({"role": "user", "content": "old question"})
        await session.append_compaction(
            "",
            1000,
            retained_tail=[
                {"role": "user", "content": "kept question", "timestamp": 1},
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "kept answer"}],
                    "timestamp": 2,
                },
            ],
        )
        await session.append_message({"role": "user", "content": "after the compaction"})
        before = await session.build_context()
        done = await handoff(session, "pi", cwd="/p", env={"HOME": str(tmp_path)})
    on_path = pi_path_of(done.path)
    assert [e["type"] for e in on_path] == [
        "message",
        "compaction",
        "message",
        "message",
        "message",
    ]
    assert on_path[1].get("retainedTail") is None
    # pi's context: the summary, then the messages after it, the kept ones first
    texts = [
        c["text"] if isinstance(c, dict) else c
        for e in on_path[2:]
        for c in (
            e["message"]["content"]
            if isinstance(e["message"]["content"], list)
            else [e["message"]["content"]]
        )
    ]
    assert texts == ["kept question", "kept answer", "after the compaction"]
    assert done.not_carried == {
        "compactions keeping messages (written as messages after the compaction)": 1,
        "replies without usage (written with zero counts)": 1,
    }
    back, _ = await import_session(done.path, MemoryRepo())
    assert canonical((await back.build_context()).messages, "pi") == canonical(
        before.messages, "pi"
    )


async def test_a_pi_handoff_ending_on_its_leaf_adds_nothing(tmp_path: Path) -> None:
    async with open_repo("memory://") as repo:
        session, ids = await branched_session(repo)
        await session.set_leaf_id(ids["abandoned answer"])
        await session.append_message({"role": "user", "content": "next"})
        entries = await session.get_entries()
        done = await handoff(session, "pi", cwd="/p", env={"HOME": str(tmp_path)})
    lines = [json.loads(line) for line in done.path.read_text().splitlines()[1:]]
    assert [e["id"] for e in lines] == [e.id for e in entries]
    assert lines[-1]["message"]["content"] == "next"


async def test_a_pi_handoff_of_a_leaf_before_the_first_entry_is_refused(tmp_path: Path) -> None:
    async with open_repo("memory://") as repo:
        session, _ = await branched_session(repo)
        await session.set_leaf_id(None)
        with pytest.raises(InvalidArgumentError, match="nothing to resume"):
            await handoff(session, "pi", cwd="/p", env={"HOME": str(tmp_path)})
    assert not (tmp_path / ".pi").exists()


def test_a_codex_rollout_names_no_model_provider() -> None:
    # Codex refuses to resume a thread of a provider its configuration lacks ("This chat uses
    # model provider “anthropic”, which is no longer configured"); without one it continues
    # with the provider and model it is configured for
    reply = AssistantMessage.model_validate(
        {
            "content": [{"type": "text", "text": "hi"}],
            "model": "claude-opus-4-5",
            "provider": "anthropic",
            "stopReason": "stop",
        }
    )
    context = SessionContext(
        system_prompt="", messages=[parse_message({"role": "user", "content": "q"}), reply]
    )
    meta = json.loads(codex_rollout(context, cwd="/p").data.split(b"\n")[0])
    assert meta["type"] == "session_meta" and "model_provider" not in meta["payload"]


@pytest.mark.parametrize("given", ["rel/dir", "rel/dir/", "./rel/../rel/dir", "~/rel/dir"])
async def test_handoff_writes_under_the_absolute_normalised_project(
    given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    path = session_file("claude-code/agent-a0294d5.jsonl")
    async with open_repo("memory://") as repo:
        session, _ = await import_session(path, repo)
        done = await handoff(session, "claude-code", cwd=given, env={"HOME": str(tmp_path)})
    assert done.cwd == str(tmp_path / "rel" / "dir")
    folder = "-" + str(tmp_path / "rel" / "dir").strip("/").replace("/", "-").replace("_", "-")
    assert done.path.parent.name == folder.replace(".", "-")


async def test_handoff_refuses_an_empty_cwd(tmp_path: Path) -> None:
    async with open_repo("memory://") as repo:
        session, _ = await import_session(session_file("claude-code/agent-a0294d5.jsonl"), repo)
        with pytest.raises(InvalidArgumentError, match="cwd is empty"):
            await handoff(session, "codex", cwd=" ", env={"HOME": str(tmp_path)})


def test_a_context_of_only_a_summary_can_be_handed_off() -> None:
    summary = parse_message(
        {"role": "compactionSummary", "summary": "we fixed the bug", "tokensBefore": 9}
    )
    context = SessionContext(system_prompt="", messages=[summary])
    for writer in WRITERS.values():
        assert b"we fixed the bug" in writer(context, cwd="/p").data
