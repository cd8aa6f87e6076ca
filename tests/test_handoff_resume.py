"""A session handed to another agent resumes there whole (docs/interop.md, "Hand a session to
another agent").

Each case runs the real SOURCE agent (tests/real_agents.py) for one turn with one or two tool
calls, imports its session file, hands the session off with
:func:`sessiontree.interop.handoff.handoff` into the TARGET agent's sandbox home (the same
project directory), and runs the target's own non-interactive resume with a new prompt
(``claude -p --resume ID``, ``pi --session PATH -p``, ``codex exec resume ID``), in all six
directions. The target's first model request must carry every user message of the handed-off
context in order (each once), the new prompt last, and every tool call and tool result of the
context with their ids and the tool's output, and go to the target's own model; the file the
target appended to must import with the handed-off context and the new turn.

Without node or the installed packages the tests skip (and fail under
``SESSIONTREE_REQUIRE_ALL=1``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from backends import unavailable
from llm_servers import ReceivedRequest
from real_agents import MODELS, NOTE_TEXT, AgentSandbox, missing, tool_then_answer
from sessiontree import open_repo
from sessiontree.context import SessionContext, to_llm_messages
from sessiontree.interop import import_session
from sessiontree.interop.handoff import HandedOff, handoff
from sessiontree.messages import (
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    message_text,
)
from sessiontree.repos import MemoryRepo
from sessiontree.tool_pairs import find_tool_pair_problems

PROMPT = "read note.txt and tell me what it says"
NEW_PROMPT = "what did the note say?"
DIRECTIONS = [
    (s, t) for s in ("codex", "claude-code", "pi") for t in ("claude-code", "codex", "pi") if s != t
]


@dataclass
class Sent:
    """What a model request carried: the user texts (each user message's text blocks, in
    order), the tool call ids and the tool results (call id, output text), in order."""

    user_texts: list[str]
    calls: list[str]
    results: list[tuple[str, str]]


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    kinds = ("text", "input_text", "output_text")
    return [b["text"] for b in content if isinstance(b, dict) and b.get("type") in kinds]


def _output_text(output: Any) -> str:
    return output if isinstance(output, str) else "".join(_texts(output))


def sent_by(request: ReceivedRequest) -> Sent:
    """The user texts, tool calls and results of one model request, in any of the three wire
    formats (Anthropic messages, OpenAI Responses, OpenAI chat completions)."""
    body = request.body
    sent = Sent([], [], [])
    if "input" in body:  # OpenAI Responses (Codex)
        for item in body["input"]:
            kind = item.get("type", "message")
            if kind == "message" and item.get("role") == "user":
                sent.user_texts += _texts(item["content"])
            elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
                sent.calls.append(item["call_id"])
            elif kind in ("function_call_output", "custom_tool_call_output"):
                sent.results.append((item["call_id"], _output_text(item["output"])))
        return sent
    anthropic = request.path.split("?")[0].endswith("/messages")
    for message in body["messages"]:
        role, content = message["role"], message.get("content")
        if anthropic:
            blocks = content if isinstance(content, list) else []
            if role == "user":
                sent.user_texts += _texts(content)
                sent.results += [
                    (b["tool_use_id"], _output_text(b.get("content")))
                    for b in blocks
                    if b.get("type") == "tool_result"
                ]
            else:
                sent.calls += [b["id"] for b in blocks if b.get("type") == "tool_use"]
        elif role == "user":
            sent.user_texts += _texts(content)
        elif role == "assistant":
            sent.calls += [c["id"] for c in message.get("tool_calls") or []]
        elif role == "tool":
            sent.results.append((message["tool_call_id"], _output_text(content)))
    return sent


def _squeezed(text: str) -> str:
    return "".join(text.split())


def in_order(expected: list[str], texts: list[str]) -> bool:
    """Whether the texts of ``expected`` are among ``texts`` in order, each one text or a run
    of consecutive ones (an agent may send a message's text parts as separate blocks), compared
    without whitespace (Claude Code ends a text it joins to the next with a newline)."""
    position = 0
    for want in map(_squeezed, expected):
        while position < len(texts):
            joined = ""
            for end in range(position, len(texts)):
                joined += _squeezed(texts[end])
                if joined == want or not want.startswith(joined):
                    break
            position = end + 1 if joined == want else position + 1
            if joined == want:
                break
        else:
            return False
    return True


def user_texts_of(context: SessionContext) -> list[str]:
    """The text of every message of ``context`` a model is sent as a user message (prompts,
    and custom or summary messages as the user text they become)."""
    texts = []
    for message in to_llm_messages(context.messages):
        if message["role"] == "user":
            content = message["content"]
            parts = [content] if isinstance(content, str) else content
            texts.append("".join(p if isinstance(p, str) else p.get("text", "") for p in parts))
    return texts


async def context_of(path: Path) -> SessionContext:
    """The context of the session imported from ``path``."""
    session, report = await import_session(path, MemoryRepo())
    assert report.unreadable_lines == []
    context: SessionContext = await session.build_context()
    return context


async def import_and_hand_off(
    source_file: Path, target: AgentSandbox
) -> tuple[SessionContext, HandedOff]:
    """Import ``source_file`` and hand the session to ``target``'s agent in its home."""
    session, report = await import_session(source_file, MemoryRepo())
    assert report.unreadable_lines == []
    context = await session.build_context()
    done = await handoff(
        session,
        target.agent,  # type: ignore[arg-type]
        cwd=str(target.workdir),
        env=target.env(),
    )
    return context, done


@pytest.mark.parametrize("parallel", [1, 2])
@pytest.mark.parametrize(("source", "target"), DIRECTIONS)
def test_a_handed_off_session_resumes_whole_in_the_target_agent(
    source: str, target: str, parallel: int, tmp_path: Path
) -> None:
    for agent in (source, target):
        reason = missing(agent)
        if reason is not None:
            unavailable(f"{agent}: {reason}")
    workdir = tmp_path / "project"
    script = tool_then_answer(source, workdir, parallel=parallel)
    with AgentSandbox(source, tmp_path / source, script, workdir=workdir) as box:
        ran = box.run(PROMPT)
    with AgentSandbox(target, tmp_path / f"to-{target}", workdir=workdir) as box:
        context, done = asyncio.run(import_and_hand_off(ran.session_file, box))
        resumed = box.resume_session(NEW_PROMPT, done.session_id, done.path)
    assert resumed.session_file == done.path  # the target continued the handed-off file

    calls = [
        b.id
        for m in context.messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, ToolCall)
    ]
    results = [m for m in context.messages if isinstance(m, ToolResultMessage)]
    assert len(calls) == len(results) == parallel, context.messages  # the source turn's calls

    posts = [r for r in resumed.requests if r.method == "POST" and "count_tokens" not in r.path]
    assert posts, [(r.method, r.path) for r in resumed.requests]
    sent = sent_by(posts[0])
    expected = [*user_texts_of(context), NEW_PROMPT]
    assert PROMPT in expected[:-1]
    assert in_order(expected, sent.user_texts), (expected, sent.user_texts)
    assert _squeezed(sent.user_texts[-1]) == _squeezed(NEW_PROMPT)
    # each handed-off user message once (the target adds its own notes, never a second copy)
    everything = _squeezed("".join(sent.user_texts))
    for text in expected:
        assert everything.count(_squeezed(text)) == 1, text
    # the handed-off tool calls and their results, paired, with the ids and the tool's output
    assert sent.calls == calls
    assert sent.results == [(r.tool_call_id, message_text(r)) for r in results]
    assert all(NOTE_TEXT in text for _, text in sent.results), sent.results
    # the answer of the source turn went along; the target asked its own model
    assert "answer 1" in str(posts[0].body)
    assert posts[0].body["model"] == MODELS[target]
    # the target's file, the handed-off session with the new turn, imports whole
    back = asyncio.run(context_of(resumed.session_file))
    assert in_order(expected, user_texts_of(back))
    assert find_tool_pair_problems(back.messages) == []
    last = back.messages[-1]
    assert isinstance(last, AssistantMessage) and message_text(last) == "answer 1"


def test_pi_resumes_a_handed_off_session_on_its_leaf_not_its_last_line(tmp_path: Path) -> None:
    # a session moved back to an earlier answer: pi continues on that branch, and the file it
    # appended to imports with the new turn on it
    reason = missing("pi")
    if reason is not None:
        unavailable(f"pi: {reason}")

    async def hand_off(box: AgentSandbox) -> HandedOff:
        # replies as a harness without token counts writes them (pi needs a usage on each)
        async with open_repo("memory://") as repo:
            session = await repo.create()
            ids = {}
            for role, text in [
                ("user", "first question"),
                ("assistant", "first answer"),
                ("user", "abandoned question"),
                ("assistant", "dropped"),
            ]:
                content = [{"type": "text", "text": text}]
                ids[text] = await session.append_message({"role": role, "content": content})
            await session.set_leaf_id(ids["first answer"])
            return await handoff(session, "pi", cwd=str(box.workdir), env=box.env())

    with AgentSandbox("pi", tmp_path / "pi") as box:
        done = asyncio.run(hand_off(box))
        resumed = box.resume_session(NEW_PROMPT, done.session_id, done.path)
    first = next(r for r in resumed.requests if r.method == "POST")
    assert sent_by(first).user_texts == ["first question", NEW_PROMPT]
    assert "abandoned" not in str(first.body) and "dropped" not in str(first.body)
    back = asyncio.run(context_of(resumed.session_file))
    assert user_texts_of(back) == ["first question", NEW_PROMPT]
    assert message_text(back.messages[1]) == "first answer"
