"""One writer per running agent: the session writer lease (docs/harness.md "One writer per
session") on every backend — busy and wait, takeover after expiry (the old writer's writes
refused, nothing stored), renewal, two real processes racing, and kill -9 of the holder."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from _agent_support import close_models, harness, make_model
from backends import BACKENDS, shared_store_url
from llm_servers import FakeLLMServer, Say
from sessiontree import open_repo
from sessiontree.drafts import Draft
from sessiontree.entries import LabelEntry, MessageEntry
from sessiontree.errors import AgentHarnessError, LeaseLostError, SessionBusyError, StorageError
from sessiontree.harness import AgentHarness, LeasePolicy, hold_lease, tool
from sessiontree.messages import AssistantMessage, TextContent, UserMessage
from sessiontree.session import Session
from sessiontree.storage.lease import WRITER, Lease

__all__ = ["close_models"]

ALL = ["memory", "jsonl", "sqlite", "postgres"]
SHARED = ["jsonl", "sqlite", "postgres"]
T = TypeVar("T")


async def under(lease: Lease, write: Callable[[], Awaitable[T]]) -> T:
    """Run ``write`` in a task that writes under ``lease`` (as a harness run does)."""

    async def run() -> T:
        WRITER.set(lease)
        return await write()

    return await asyncio.create_task(run())


async def take_when_free(session: Session, owner: str, ttl_s: float) -> Lease:
    """Take the lease as soon as the holder's has expired (tries until it is granted)."""
    for _ in range(2000):
        try:
            return await session.acquire_lease(owner, ttl_s=ttl_s)
        except SessionBusyError:
            await asyncio.sleep(0.01)
    raise AssertionError("the lease never expired")


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def user_texts(session: Session) -> list[Any]:
    """The content of every user message of ``session``, in append order."""
    return [
        e.message.content
        for e in await session.get_entries()
        if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)
    ]


@pytest.mark.parametrize("backend", ALL)
async def test_a_second_writer_is_refused_or_waits(backend: str, tmp_path: Path) -> None:
    async with BACKENDS[backend].open(tmp_path) as repo:
        session = await repo.create()
        other = await repo.open(session.id)
        async with hold_lease(session, LeasePolicy(ttl_s=60), owner="first") as held:
            assert held.fence == 1
            with pytest.raises(SessionBusyError) as busy:
                await other.acquire_lease("second", ttl_s=60)
            assert (busy.value.owner, busy.value.fence) == ("first", 1)
            assert busy.value.session_id == session.id
            with pytest.raises(SessionBusyError):  # waiting, but not long enough
                async with hold_lease(other, LeasePolicy(mode="wait", wait_s=0.1)):
                    pytest.fail("the block ran without the lease")
            # a waiter gets the lease once the holder releases it
            waiting = asyncio.create_task(
                _hold_and_write(other, LeasePolicy(mode="wait", wait_s=60), "second")
            )
            await session.append_message(user("by the first"))
            await asyncio.sleep(0.05)
            assert not waiting.done()
        second = await waiting
        assert second.fence == 2
        assert await user_texts(session) == ["by the first", "by second"]
        record = await session.get_lease()
        assert record is not None and (record.owner, record.fence) == ("", 2)


async def _hold_and_write(session: Session, policy: LeasePolicy, owner: str) -> Lease:
    async with hold_lease(session, policy, owner=owner) as lease:
        await session.append_message(user(f"by {owner}"))
    return lease


@pytest.mark.parametrize("backend", ALL)
async def test_a_writer_taken_over_after_expiry_can_write_nothing(
    backend: str, tmp_path: Path
) -> None:
    async with BACKENDS[backend].open(tmp_path) as repo:
        session = await repo.create()
        first_id = await session.append_message(user("before"))
        old = await session.acquire_lease("old", ttl_s=0.05)
        await under(old, lambda: session.append_message(user("old writes while it holds")))
        draft = Draft("d1", first_id, AssistantMessage(content=[TextContent(text="mine")]), 1)
        assert await under(old, lambda: session.put_draft(draft))

        new = await take_when_free(await repo.open(session.id), "new", 60)
        assert new.fence == old.fence + 1
        before = [e.id for e in await session.get_entries()]
        stale_writes: list[Callable[[], Awaitable[Any]]] = [
            lambda: session.append_message(user("stale")),
            lambda: session.append_label(first_id, "stale"),
            lambda: session.set_leaf_id(first_id),
            lambda: session.append_entry_if(LabelEntry(target_id=first_id, label="x"), before[-1]),
            lambda: session.put_draft(None),
            lambda: session.storage.set_modified_at(datetime(2020, 1, 1, tzinfo=UTC)),
        ]
        for write in stale_writes:
            with pytest.raises(LeaseLostError) as lost:
                await under(old, write)
            assert (lost.value.fence, lost.value.current_fence) == (old.fence, new.fence)
            assert lost.value.current_owner == "new"
            assert lost.value.session_id == session.id
        # nothing stored: the entries and the draft are as they were
        assert [e.id for e in await session.get_entries()] == before
        kept = await session.get_draft()
        assert kept is not None and kept.message.content == [TextContent(text="mine")]
        with pytest.raises(LeaseLostError):
            await session.renew_lease(old, ttl_s=60)
        await session.release_lease(old)  # a stale release changes nothing
        record = await session.get_lease()
        assert record is not None and (record.owner, record.fence) == ("new", new.fence)

        # the new holder writes; a write under no lease is not checked (today's behaviour)
        await under(new, lambda: session.append_message(user("new")))
        await session.append_message(user("unleased"))
        await session.release_lease(new)
        assert len(await session.get_entries()) == len(before) + 2
        # released: the next holder's fence is higher still
        again = await session.acquire_lease("third", ttl_s=60)
        assert again.fence == new.fence + 1


@pytest.mark.parametrize("backend", ALL)
async def test_renewal_keeps_the_lease_past_its_expiry_while_held(
    backend: str, tmp_path: Path
) -> None:
    ttl = 0.4
    async with BACKENDS[backend].open(tmp_path) as repo:
        session = await repo.create()
        other = await repo.open(session.id)
        async with hold_lease(session, LeasePolicy(ttl_s=ttl, renew_s=0.05), owner="a") as lease:
            # wait until the lease as first granted has long expired
            await asyncio.sleep(max(0.0, lease.expires_ms / 1000 + 2 * ttl - time.time()))
            with pytest.raises(SessionBusyError):
                await other.acquire_lease("b", ttl_s=60)
            record = await session.get_lease()
            assert record is not None and record.expires_ms > lease.expires_ms
            await session.append_message(user("still mine"))
        assert [e.type for e in await session.get_entries()] == ["message"]


@pytest.mark.parametrize("backend", ALL)
async def test_a_harness_holds_the_lease_for_each_run(backend: str, tmp_path: Path) -> None:
    async with BACKENDS[backend].open(tmp_path) as repo:
        session = await repo.create()
        slow = Say(text="a slow answer " * 10, chunk=4, pace_s=0.02)
        with FakeLLMServer(slow, Say(text="second"), Say(text="third")) as server:
            first = harness(session, make_model("anthropic", server), lease="fail")
            second = harness(await repo.open(session.id), make_model("anthropic", server))
            second_fails = harness(
                await repo.open(session.id), make_model("anthropic", server), lease="fail"
            )
            second_waits = harness(
                await repo.open(session.id),
                make_model("anthropic", server),
                lease=LeasePolicy(mode="wait", wait_s=60),
            )
            streaming = asyncio.Event()
            first.subscribe(lambda e: streaming.set() if e.type == "message_update" else None)
            run = asyncio.create_task(first.prompt("one"))
            await streaming.wait()
            held = await session.get_lease()
            assert held is not None and held.owner == first.lease_owner
            count = len(await session.get_entries())
            with pytest.raises(SessionBusyError):
                await second_fails.prompt("refused")
            assert len(await session.get_entries()) == count  # nothing written
            waiting = asyncio.create_task(second_waits.prompt("two"))
            assert (await run).stop_reason == "stop"
            assert (await waiting).stop_reason == "stop"
            assert second.lease is None  # without a lease, a harness runs as before
            assert (await second.prompt("three")).stop_reason == "stop"
        roles = [e.message.role for e in await session.get_entries() if isinstance(e, MessageEntry)]
        # the waiting run started after the first had ended: nothing interleaved
        assert roles == ["user", "assistant"] * 3
        record = await session.get_lease()
        assert record is not None and record.owner == "" and record.fence == 2


async def test_a_bad_lease_argument_is_refused() -> None:
    from sessiontree.repos import MemoryRepo

    session = await MemoryRepo().create()
    with pytest.raises(AgentHarnessError, match="lease must be"):
        AgentHarness(session, lease="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="renew_s"):
        LeasePolicy(ttl_s=1, renew_s=2)
    with pytest.raises(ValueError, match="ttl_s"):
        await session.acquire_lease("x", ttl_s=0)


async def test_a_storage_without_leases_says_so(tmp_path: Path) -> None:
    from sessiontree.repos import MemoryRepo

    session = await MemoryRepo().create()

    class Bare:  # a storage that keeps no lease: only the methods a session reads
        id = session.id

    bare = Session(session.storage)
    bare.storage = Bare()  # type: ignore[assignment]
    with pytest.raises(StorageError, match="keeps no writer lease"):
        await bare.acquire_lease("x", ttl_s=1)
    assert await bare.get_lease() is None


# ---------------------------------------------------------------- two real processes

RACER = textwrap.dedent(
    """
    import asyncio, os, sys, time
    from sessiontree import open_repo
    from sessiontree.errors import SessionBusyError
    from sessiontree.harness import LeasePolicy, hold_lease

    url, session_id, name, go = sys.argv[1:5]

    async def main():
        repo = open_repo(url)
        session = await repo.open(session_id)
        while not os.path.exists(go):
            time.sleep(0.001)
        try:
            async with hold_lease(session, LeasePolicy(ttl_s=60), owner=name) as lease:
                await session.append_message({"role": "user", "content": name})
                print(f"won {lease.fence}", flush=True)
                sys.stdin.readline()  # hold it until the parent says
        except SessionBusyError as exc:
            print(f"busy {exc.owner}", flush=True)
        await repo.close()

    asyncio.run(main())
    """
)


def _race(url: str, session_id: str, tmp_path: Path) -> list[str]:
    go = tmp_path / "go"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, url, session_id, name, str(go)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("racer-a", "racer-b")
    ]
    try:
        time.sleep(0.3)  # both started and waiting for the go
        go.touch()
        lines = [c.stdout.readline().strip() for c in children if c.stdout]
        for c in children:
            if c.stdin:
                c.stdin.close()
            assert c.wait(60) == 0
        return lines
    finally:
        for c in children:
            if c.poll() is None:
                c.kill()
                c.wait()
            if c.stdout:
                c.stdout.close()


@pytest.mark.parametrize("backend", SHARED)
async def test_two_processes_racing_for_the_lease_one_writes(backend: str, tmp_path: Path) -> None:
    with shared_store_url(backend, tmp_path) as url:
        async with open_repo(url) as repo:
            session = await repo.create()
            lines = await asyncio.to_thread(_race, url, session.id, tmp_path)
            won = [line for line in lines if line.startswith("won")]
            busy = [line for line in lines if line.startswith("busy")]
            assert len(won) == 1 and len(busy) == 1, lines
            winner = "racer-a" if lines[0].startswith("won") else "racer-b"
            assert busy == [f"busy {winner}"]
            reopened = await repo.open(session.id)
            assert await user_texts(reopened) == [winner]


HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from sessiontree import open_repo
    from sessiontree.harness import LeasePolicy, hold_lease

    url, session_id = sys.argv[1:3]

    async def main():
        repo = open_repo(url)
        session = await repo.open(session_id)
        async with hold_lease(session, LeasePolicy(ttl_s=2.0), owner="holder") as lease:
            await session.append_message({"role": "user", "content": "holder"})
            print(f"holding {lease.fence}", flush=True)
            await asyncio.sleep(3600)

    asyncio.run(main())
    """
)


def _hold_then_kill(url: str, session_id: str) -> int:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url, session_id], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        assert line.startswith("holding"), line
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL
        return int(line.split()[1])
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout:
            child.stdout.close()


@pytest.mark.parametrize("backend", SHARED)
async def test_a_killed_holders_lease_is_taken_over_after_it_expires(
    backend: str, tmp_path: Path
) -> None:
    with shared_store_url(backend, tmp_path) as url:
        async with open_repo(url) as repo:
            session = await repo.create()
            fence = await asyncio.to_thread(_hold_then_kill, url, session.id)
            # killed unreleased: held until it expires
            with pytest.raises(SessionBusyError) as busy:
                await session.acquire_lease("next", ttl_s=60)
            assert (busy.value.owner, busy.value.fence) == ("holder", fence)
            policy = LeasePolicy(mode="wait", wait_s=60)
            async with hold_lease(session, policy, owner="next") as lease:
                assert lease.fence == fence + 1
                await session.append_message(user("next"))
            # the dead holder's lease, were it used again, writes nothing
            dead = Lease(session.id, "holder", fence, 0)
            with pytest.raises(LeaseLostError):
                await under(dead, lambda: session.append_message(user("zombie")))
            assert await user_texts(session) == ["holder", "next"]


@pytest.mark.parametrize("backend", SHARED)
async def test_a_harness_paused_past_its_lease_writes_nothing_after_a_takeover(
    backend: str, tmp_path: Path
) -> None:
    """The run's process stalls (a tool blocks the event loop, so nothing renews) longer
    than the lease lasts; another process takes the session over meanwhile. The stalled
    run's next write, the tool's result, is refused and nothing of it is stored."""
    stalled, over = threading.Event(), threading.Event()
    taken: list[Lease] = []

    @tool
    async def stall() -> str:
        """Block the whole event loop for a while."""
        stalled.set()
        # blocks the loop (the renewer cannot run) until the other process has taken over
        assert over.wait(60)
        return "done"

    def take_over(url: str, session_id: str) -> None:
        async def run() -> None:
            async with open_repo(url) as repo:
                other = await repo.open(session_id)
                taken.append(await take_when_free(other, "intruder", 60))
                over.set()

        stalled.wait(60)
        asyncio.run(run())

    with shared_store_url(backend, tmp_path) as url:
        async with open_repo(url) as repo:
            session = await repo.create()
            script = Say(tool_calls=(("c1", "stall", {}),))
            with FakeLLMServer(script, Say(text="never")) as server:
                h = harness(
                    session,
                    make_model("anthropic", server),
                    tools=[stall],
                    lease=LeasePolicy(ttl_s=0.3, renew_s=0.1),
                )
                thief = threading.Thread(target=take_over, args=(url, session.id))
                thief.start()
                try:
                    with pytest.raises(LeaseLostError) as lost:
                        await h.prompt("stall")
                finally:
                    thief.join(60)
            assert taken and lost.value.current_fence == taken[0].fence
            assert lost.value.fence == taken[0].fence - 1
            stored = [e.message for e in await session.get_entries() if isinstance(e, MessageEntry)]
            # the prompt and the answer holding the call; no result, no second answer
            assert [m.role for m in stored] == ["user", "assistant"]
            record = await session.get_lease()
            assert record is not None and record.owner == "intruder"
