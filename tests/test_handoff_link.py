"""A handed-off file synced back continues the session it came from (docs/interop.md, "Hand a
session to another agent").

A session S is handed off into a throwaway HOME; turns are appended to the written file the
way the agent appends them (the real agents in the last test, resumed non-interactively),
and ``sync`` reads that HOME. The agent's turns must land after the hand-off entry: in S
when its leaf is still there, else in exactly one fork of S at that entry (named after the
file's session, linked with ``parentSessionId``/``forkedFromEntryId``); each sync after more
turns extends the same session; no message is stored twice; a file whose session S is gone
imports as a new session.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from backends import shared_store_url, unavailable
from real_agents import AgentSandbox, missing
from sessiontree import open_repo
from sessiontree.entries import MessageEntry
from sessiontree.interop import import_session
from sessiontree.interop.handoff import HandedOff, handoff
from sessiontree.interop.links import POINTER_KEY, record_of
from sessiontree.interop.locations import default_sources
from sessiontree.interop.syncing import SyncReport, sync_sources
from sessiontree.messages import message_text
from sessiontree.repos import MemoryRepo
from sessiontree.repos.base import SessionRepo
from sessiontree.session import Session

AGENTS = ["claude-code", "codex", "pi"]
HISTORY = [("user", "first question"), ("assistant", "first answer")]


@asynccontextmanager
async def store(backend: str, tmp_path: Path) -> AsyncIterator[SessionRepo]:
    with shared_store_url(backend, tmp_path) as url:
        repo = open_repo(url)
        try:
            yield repo
        finally:
            await repo.close()


async def source_session(repo: SessionRepo) -> tuple[Session, str]:
    """A session of one question and its answer; its leaf (the answer)."""
    session = await repo.create(metadata={"cwd": "/p"})
    for role, text in HISTORY:
        message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}]}
        if role == "assistant":
            message |= {"model": "m", "provider": "p", "api": "x", "stopReason": "stop"}
        await session.append_message(message)
    leaf = await session.get_leaf_id()
    assert leaf is not None
    return session, leaf


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def append_turn(agent: str, done: HandedOff, question: str, answer: str) -> None:
    """Append a question and its answer to the handed-off file as ``agent`` writes them."""
    lines = _lines(done.path)
    now = "2030-01-01T00:00:00.000Z"
    new: list[dict[str, Any]]
    if agent == "claude-code":
        last = lines[-1]["uuid"]
        common = {"isSidechain": False, "userType": "external", "cwd": done.cwd}
        common |= {"sessionId": done.session_id, "version": "2.1.0", "timestamp": now}
        q, a = str(uuid.uuid4()), str(uuid.uuid4())
        body: dict[str, Any] = {
            "id": f"msg_{q[:8]}",
            "type": "message",
            "role": "assistant",
            "model": "m",
        }
        body |= {"content": [{"type": "text", "text": answer}], "stop_reason": "end_turn"}
        new = [
            {**common, "parentUuid": last, "type": "user", "uuid": q},
            {**common, "parentUuid": q, "type": "assistant", "uuid": a, "message": body},
        ]
        new[0]["message"] = {"role": "user", "content": question}
    elif agent == "codex":
        new = [
            {
                "timestamp": now,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": question}],
                },
            },
            {
                "timestamp": now,
                "type": "event_msg",
                "payload": {"type": "user_message", "message": question, "images": []},
            },
            {
                "timestamp": now,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": answer}],
                },
            },
        ]
    else:
        last = lines[-1]["id"]
        q, a = uuid.uuid4().hex[:8], uuid.uuid4().hex[:8]
        usage: dict[str, Any] = {
            "input": 1,
            "output": 1,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 2,
        }
        usage["cost"] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
        reply: dict[str, Any] = {"role": "assistant", "content": [{"type": "text", "text": answer}]}
        reply |= {"api": "x", "provider": "p", "model": "m", "usage": usage}
        reply |= {"stopReason": "stop", "timestamp": 1}
        new = [
            {
                "type": "message",
                "id": q,
                "parentId": last,
                "timestamp": now,
                "message": {"role": "user", "content": question, "timestamp": 1},
            },
            {"type": "message", "id": a, "parentId": q, "timestamp": now, "message": reply},
        ]
    with done.path.open("a") as f:
        f.writelines(json.dumps(line) + "\n" for line in new)


async def sync_home(repo: SessionRepo, home: Path) -> SyncReport:
    # the turns written here are whole: nothing is held back as an agent's open turn
    report = await sync_sources(repo, default_sources(env={"HOME": str(home)}), quiet_s=0)
    assert report.failed == 0, report.to_dict()
    return report


async def texts(repo: SessionRepo, session_id: str) -> list[str]:
    """The texts of the messages of the session's context, in order."""
    session = await repo.open(session_id)
    try:
        context = await session.build_context()
        return [" ".join(message_text(m).split()) for m in context.messages]
    finally:
        await session.close()


async def message_count(repo: SessionRepo, session_id: str) -> int:
    session = await repo.open(session_id)
    try:
        return sum(isinstance(e, MessageEntry) for e in await session.get_entries())
    finally:
        await session.close()


async def session_ids(repo: SessionRepo) -> set[str]:
    return {info.id for info in await repo.list()}


@pytest.mark.parametrize("backend", ["sqlite", "jsonl"])
@pytest.mark.parametrize("agent", AGENTS)
async def test_the_agents_turns_extend_the_session_they_were_handed_from(
    agent: str, backend: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    async with store(backend, tmp_path) as repo:
        session, leaf = await source_session(repo)
        done = await handoff(session, agent, cwd=str(tmp_path / "project"), env={"HOME": str(home)})  # type: ignore[arg-type]
        records = [r for e in await session.get_entries() if (r := record_of(e)) is not None]
        assert [(r.agent, r.session_id, r.path, r.entry_id) for r in records] == [
            (agent, done.session_id, str(done.path), leaf)
        ]
        assert await session.get_leaf_id() == leaf  # the record changes nothing in the tree
        before = await session_ids(repo)

        # synced before the agent added anything: nothing is stored twice
        report = await sync_home(repo, home)
        assert report.new == 0 and report.entries_added == 0
        assert await session_ids(repo) == before
        assert await message_count(repo, session.id) == 2

        append_turn(agent, done, "second question", "second answer")
        report = await sync_home(repo, home)
        assert (report.new, report.updated) == (0, 1), report.to_dict()
        assert report.rows[0].session_id == session.id
        assert await session_ids(repo) == before
        want = ["first question", "first answer", "second question", "second answer"]
        assert await texts(repo, session.id) == want
        assert await message_count(repo, session.id) == 4
        branch = [e for e in await session.get_branch() if isinstance(e, MessageEntry)]
        assert branch[2].parent_id == leaf  # under the hand-off entry

        append_turn(agent, done, "third question", "third answer")
        await sync_home(repo, home)
        assert await session_ids(repo) == before
        assert await texts(repo, session.id) == [*want, "third question", "third answer"]
        assert await message_count(repo, session.id) == 6
        report = await sync_home(repo, home)  # nothing new
        assert report.entries_added == 0 and await message_count(repo, session.id) == 6


@pytest.mark.parametrize("backend", ["sqlite", "jsonl"])
@pytest.mark.parametrize("agent", AGENTS)
async def test_a_session_that_moved_on_gets_one_fork_linked_to_it(
    agent: str, backend: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    async with store(backend, tmp_path) as repo:
        session, leaf = await source_session(repo)
        done = await handoff(session, agent, cwd=str(tmp_path / "project"), env={"HOME": str(home)})  # type: ignore[arg-type]
        await session.append_message({"role": "user", "content": "meanwhile"})
        before = await session_ids(repo)
        await sync_home(repo, home)  # the agent added nothing yet: no fork
        assert await session_ids(repo) == before

        append_turn(agent, done, "second question", "second answer")
        report = await sync_home(repo, home)
        forks = await session_ids(repo) - before
        assert len(forks) == 1 and report.new == 1
        fork_id = forks.pop()
        fork = await repo.open(fork_id)
        metadata = await fork.get_metadata()
        await fork.close()
        assert (metadata.parent_session_id, metadata.forked_from_entry_id) == (session.id, leaf)
        assert (metadata.model_extra or {})[POINTER_KEY] == {"session": session.id, "entry": leaf}
        want = ["first question", "first answer", "second question", "second answer"]
        assert await texts(repo, fork_id) == want
        assert await texts(repo, session.id) == ["first question", "first answer", "meanwhile"]

        append_turn(agent, done, "third question", "third answer")
        report = await sync_home(repo, home)
        assert report.updated == 1 and report.rows[0].session_id == fork_id
        assert await session_ids(repo) - before == {fork_id}
        assert await texts(repo, fork_id) == [*want, "third question", "third answer"]
        assert await message_count(repo, fork_id) == 6
        assert await message_count(repo, session.id) == 3


@pytest.mark.parametrize("agent", AGENTS)
async def test_a_file_handed_off_from_a_deleted_session_imports_as_a_new_one(
    agent: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    async with store("sqlite", tmp_path) as repo:
        session, _ = await source_session(repo)
        done = await handoff(session, agent, cwd=str(tmp_path / "project"), env={"HOME": str(home)})  # type: ignore[arg-type]
        append_turn(agent, done, "second question", "second answer")
        await repo.delete(session.id)
        report = await sync_home(repo, home)
        assert report.new == 1 and await session_ids(repo) == {done.session_id}
        want = ["first question", "first answer", "second question", "second answer"]
        assert await texts(repo, done.session_id) == want


async def test_import_with_a_session_id_makes_a_copy_not_a_continuation(tmp_path: Path) -> None:
    # import_session(session_id=...) asks for a second copy: the link is not followed
    async with store("sqlite", tmp_path) as repo:
        session, _ = await source_session(repo)
        done = await handoff(session, "claude-code", cwd="/p", env={"HOME": str(tmp_path)})
        append_turn("claude-code", done, "second question", "second answer")
        copy, _ = await import_session(done.path, repo, session_id="copy")
        assert await texts(repo, "copy") == [t for _, t in HISTORY] + [
            "second question",
            "second answer",
        ]
        assert await message_count(repo, session.id) == 2
        await copy.close()


async def test_the_pointer_is_in_the_file_where_the_agent_ignores_it(tmp_path: Path) -> None:
    repo = MemoryRepo()
    session, leaf = await source_session(repo)
    pointer = {"session": session.id, "entry": leaf}
    for agent in AGENTS:
        done = await handoff(session, agent, cwd="/p", env={"HOME": str(tmp_path)})  # type: ignore[arg-type]
        first = _lines(done.path)[0]
        where: dict[str, Any] = {
            "claude-code": first,
            "codex": first.get("payload"),
            "pi": first.get("metadata"),
        }
        assert where[agent][POINTER_KEY] == pointer, first


@pytest.mark.parametrize("agent", AGENTS)
def test_a_real_agents_turns_sync_back_into_the_session_handed_to_it(
    agent: str, tmp_path: Path
) -> None:
    reason = missing(agent)
    if reason is not None:
        unavailable(f"{agent}: {reason}")
    backend = {"claude-code": "sqlite", "codex": "jsonl", "pi": "sqlite"}[agent]

    async def hand_off(repo: SessionRepo, box: AgentSandbox) -> tuple[Session, str, HandedOff]:
        session, leaf = await source_session(repo)
        done = await handoff(session, agent, cwd=str(box.workdir), env=box.env())  # type: ignore[arg-type]
        return session, leaf, done

    async def synced(repo: SessionRepo, box: AgentSandbox) -> SyncReport:
        report = await sync_sources(repo, default_sources(env=box.env()))
        assert report.failed == 0, report.to_dict()
        return report

    with (
        shared_store_url(backend, tmp_path) as url,
        AgentSandbox(agent, tmp_path / agent) as box,
    ):
        repo = open_repo(url)
        loop = asyncio.new_event_loop()
        try:
            session, leaf, done = loop.run_until_complete(hand_off(repo, box))
            before = loop.run_until_complete(session_ids(repo))
            resumed = box.resume_session("read the note", done.session_id, done.path)
            assert resumed.session_file == done.path
            loop.run_until_complete(synced(repo, box))
            assert loop.run_until_complete(session_ids(repo)) == before
            got = loop.run_until_complete(texts(repo, session.id))
            # the history once, then the agent's turn (Codex adds its own notes before it)
            assert got[:2] == ["first question", "first answer"], got
            assert got.count("first question") == got.count("first answer") == 1, got
            assert got.count("read the note") == 1 and got[-1] == "answer 1", got
            count = loop.run_until_complete(message_count(repo, session.id))

            box.resume_session("and again", done.session_id, done.path)
            loop.run_until_complete(synced(repo, box))
            assert loop.run_until_complete(session_ids(repo)) == before
            again = loop.run_until_complete(texts(repo, session.id))
            assert again[: len(got)] == got and again[-1] == "answer 2"
            assert again.count("read the note") == 1 and again.count("and again") == 1
            assert loop.run_until_complete(message_count(repo, session.id)) > count
            branch = loop.run_until_complete(session.get_branch())
            assert [e.id for e in branch].count(leaf) == 1
            assert branch[[e.id for e in branch].index(leaf) + 1].parent_id == leaf
        finally:
            loop.run_until_complete(repo.close())
            loop.close()
