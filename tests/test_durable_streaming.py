"""A streaming answer is saved as the session's draft while it arrives: a process killed
(SIGKILL) mid-stream loses at most the save interval of it, the partial answer is visible as
interrupted, and the next prompt stores it as an interrupted message no model is sent.

The kill test runs the harness in a child process against a local OpenAI/Anthropic-wire
server that streams slowly and logs when it sent each event; after the kill the saved draft
must be a prefix of what was sent, holding everything sent up to the interval (plus slack
for a loaded machine) before the kill.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from _agent_support import as_assistant, check_all, close_models, harness, make_model, message_of
from backends import BACKENDS
from llm_servers import FakeLLMServer, Say
from sessiontree.drafts import INTERRUPTED, Draft
from sessiontree.entries import MessageEntry
from sessiontree.errors import AgentHarnessError
from sessiontree.harness import AgentHarness
from sessiontree.messages import AssistantMessage, TextContent
from sessiontree.repos import MemoryRepo

__all__ = ["close_models"]

INTERVAL_S = 0.1
SLACK_S = 0.5
"""Beyond the interval: the child's receive, snapshot and write under a loaded machine."""

WORDS = "".join(f"w{i:04d} " for i in range(400))
"""The slow answer: 400 distinct words, 2 per event, so any prefix is recognisable."""

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from sessiontree import open_repo
    from sessiontree.harness import AgentHarness
    from sessiontree.models import resolve_model

    url, session_id, model, base_url = sys.argv[1:5]

    async def main():
        repo = open_repo(url)
        session = await repo.open(session_id)
        h = AgentHarness(session, model=resolve_model(model, base_url=base_url, api_key="k"),
                         draft_interval_s=0.1)
        await h.prompt("write the words")

    asyncio.run(main())
    """
)


def _delta_text(event: bytes) -> str:
    """The answer text an SSE event of either API carries."""
    for line in event.decode().splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        data = orjson.loads(line[6:])
        if data.get("type") == "content_block_delta":
            return str(data["delta"].get("text", ""))
        for choice in data.get("choices") or ():
            return str(choice["delta"].get("content") or "")
    return ""


def _run_and_kill(args: list[str], server: FakeLLMServer, events: int) -> float:
    """Start the child agent, SIGKILL it once the server has sent ``events`` events; the
    time of the kill."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, *args], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while len(server.sent) < events:
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the stream never got that far"
            time.sleep(0.005)
        killed_at = time.time()
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL
        return killed_at
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stderr:
            child.stderr.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("backend", ["jsonl", "sqlite", "postgres"])
async def test_a_run_killed_mid_stream_keeps_all_but_the_last_interval_of_the_answer(
    backend: str, seed: int, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    api = "openai" if seed % 2 else "anthropic"
    async with BACKENDS[backend].open(tmp_path) as repo:
        session = await repo.create()
        slow = Say(text=WORDS, chunk=12, pace_s=0.01)
        with FakeLLMServer(slow, Say(text="continuing")) as server:
            model = "openai/fake-model" if api == "openai" else "anthropic/fake-claude"
            base = f"{server.url}/v1" if api == "openai" else server.url
            args = [repo.url, session.id, model, base]
            killed_at = await asyncio.to_thread(_run_and_kill, args, server, rng.randint(20, 150))

            sent = [(at, _delta_text(event)) for at, event in server.sent]
            everything = "".join(text for _, text in sent)
            due = "".join(text for at, text in sent if at <= killed_at - INTERVAL_S - SLACK_S)

            reopened = await repo.open(session.id)
            draft = await reopened.get_draft()
            assert draft is not None
            saved = "".join(b.text for b in draft.message.content if isinstance(b, TextContent))
            assert everything.startswith(saved)
            assert saved.startswith(due), (len(saved), len(due))
            assert len(saved) > 0
            # the draft is no entry: the log holds the prompt only, the tree shows the draft
            entries = await reopened.get_entries()
            assert [type(e).__name__ for e in entries] == ["MessageEntry"]
            (root,) = await reopened.get_tree()
            (node,) = root.children
            assert node.draft and node.entry.id == draft.entry_id
            assert as_assistant(message_of(node.entry)).stop_reason == "aborted"

            h = harness(reopened, make_model(api, server))
            reply = await h.prompt("go on")
            assert reply.stop_reason == "stop"
            assert await reopened.get_draft() is None
            stored = [e.message for e in await reopened.get_branch() if isinstance(e, MessageEntry)]
            assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
            interrupted = as_assistant(stored[1])
            assert interrupted.stop_reason == "aborted"
            assert interrupted.error_message == INTERRUPTED
            assert [b.text for b in interrupted.content if isinstance(b, TextContent)] == [saved]
            if api == "anthropic":  # its usage so far, reported when the stream started
                assert interrupted.usage is not None and interrupted.usage.input == 100
            # never sent to a model as if complete
            assert len(server.requests) == 2
            check_all(api, server)
            assert "w0000" not in str(server.requests[1].body["messages"])


async def test_a_complete_answer_leaves_no_draft_and_one_entry(tmp_path: Path) -> None:
    async with BACKENDS["sqlite"].open(tmp_path) as repo:
        session = await repo.create()
        with FakeLLMServer(Say(text=WORDS[:600], chunk=6, pace_s=0.002)) as server:
            h = harness(session, make_model("openai", server), draft_interval_s=0.01)
            saves: list[Draft | None] = []

            async def watch(event: object) -> None:
                if getattr(event, "type", "") == "message_update" and len(saves) < 5:
                    await asyncio.sleep(0.02)
                    saves.append(await session.get_draft())

            h.subscribe(watch)
            reply = await h.prompt("write")
        assert reply.stop_reason == "stop"
        assert any(d is not None for d in saves)  # saved while it streamed
        assert await session.get_draft() is None
        entries = await session.get_entries()
        assert [e.type for e in entries] == ["message", "message"]
        kept = next(d for d in saves if d is not None)
        assert entries[1].id == kept.entry_id  # the answer is stored under the draft's id


@pytest.mark.parametrize("backend", ["memory", "jsonl", "sqlite", "postgres"])
async def test_the_draft_slot_is_one_overwritten_value_outside_the_log(
    backend: str, tmp_path: Path
) -> None:
    async with BACKENDS[backend].open(tmp_path) as repo:
        session = await repo.create()
        first = await session.append_message({"role": "user", "content": "hi"})
        assert await session.get_draft() is None
        for text in ("par", "partial"):
            draft = Draft("d1", first, AssistantMessage(content=[TextContent(text=text)]), 1)
            assert await session.put_draft(draft)
        got = await session.get_draft()
        assert got is not None and got.entry_id == "d1" and got.parent_id == first
        assert got.message.content == [TextContent(text="partial")]
        assert len(await session.get_entries()) == 1

        # settling twice stores one interrupted message under the draft's parent
        assert await session.settle_draft() == "d1"
        assert await session.settle_draft() is None
        branch = await session.get_branch()
        assert [e.id for e in branch] == [first, "d1"]
        assert await session.get_draft() is None

        # a draft whose entry is stored already (died before clearing) is only cleared
        await session.put_draft(draft)
        assert await session.settle_draft() == "d1"
        assert len(await session.get_entries()) == 2

        await session.put_draft(draft)
        await session.delete()
        again = await repo.create(id=session.id)
        assert await again.get_draft() is None


async def test_settling_keeps_a_leaf_that_moved_elsewhere() -> None:
    async with BACKENDS["memory"].open(Path(".")) as repo:
        session = await repo.create()
        a = await session.append_message({"role": "user", "content": "a"})
        msg = AssistantMessage(content=[TextContent(text="half")])
        await session.put_draft(Draft("d2", a, msg, 1))
        b = await session.append_message({"role": "user", "content": "b"})
        assert await session.settle_draft() == "d2"
        assert await session.get_leaf_id() == b
        entry = await session.find_entry("d2")
        assert entry is not None and entry.parent_id == a


async def test_a_bad_draft_interval_is_refused() -> None:
    session = await MemoryRepo().create()
    for bad in (0, -1.0, "fast"):
        with pytest.raises(AgentHarnessError) as info:
            AgentHarness(session, draft_interval_s=bad)  # type: ignore[arg-type]
        assert info.value.code == "invalid_argument"
    assert await session.get_entries() == []
