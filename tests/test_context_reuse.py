"""A SQL storage that read a context before reads only the new rows of the next one, and the
context is always what a fresh reader of the store gets.

``SQLStorage.get_context_branch`` keeps the last context it read; when the next walk from the
leaf reaches that context's leaf (no compaction in between), the new context is the old one
plus the rows walked. Generated histories mix appends, compactions (with and without a kept
entry, and state snapshots), leaf moves onto earlier entries and roots, labels, and appends by
a second writer on its own connection; after each step the storage's context must equal a
fresh storage's on the same store.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree import MessageEntry, SessionContext, SQLRepo
from sessiontree.backends.sql.storage import SQLStorage
from sessiontree.context import build_context_from_path

FULL_STATE = {"model": None, "thinkingLevel": "off", "activeToolNames": None}
"""A compaction's complete state snapshot: the context then starts at its kept entry, so the
second walk (on to that start) runs."""

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 3)),
        st.tuples(st.just("compact"), st.integers(0, 40)),
        st.tuples(st.just("move"), st.integers(-1, 40)),
        st.tuples(st.just("label"), st.integers(0, 40)),
        st.tuples(st.just("other"), st.integers(0, 3)),
    ),
    min_size=1,
    max_size=25,
)


def _message(kind: int, n: int) -> dict[str, Any]:
    if kind == 0:
        return {"role": "user", "content": f"question {n}", "timestamp": n}
    if kind == 1:
        return {"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}]}
    if kind == 2:
        call = {"type": "toolCall", "id": f"c{n}", "name": "bash", "arguments": {"n": n}}
        return {"role": "assistant", "content": [call], "stopReason": "toolUse"}
    return {"role": "toolResult", "toolCallId": f"c{n - 1}", "content": [], "timestamp": n}


async def _fresh_context(url: str, session_id: str) -> list[Any]:
    async with SQLRepo(url) as other:
        session = await other.open(session_id)
        return await session.storage.get_context_branch()  # type: ignore[attr-defined,no-any-return]


async def _run(url: str, steps: list[tuple[str, int]]) -> None:
    async with SQLRepo(url) as repo, SQLRepo(url) as writer:
        session = await repo.create()
        storage = session.storage
        assert isinstance(storage, SQLStorage)
        other = await writer.open(session.id)
        await session.append_message(_message(0, 0))
        for n, (op, arg) in enumerate(steps, start=1):
            path = await session.get_branch()
            if op == "append":
                await session.append_message(_message(arg, n))
            elif op == "other":
                await other.append_message(_message(arg, n))
            elif op == "compact" and path:
                kept = path[arg % len(path)].id if arg % 3 else None
                details = {"state": FULL_STATE} if arg % 2 else None
                await session.append_compaction(
                    f"summary {n}", 10 * n, first_kept_entry_id=kept, details=details
                )
            elif op == "move":
                entries = [e for e in await session.get_entries() if e.type == "message"]
                await session.set_leaf_id(entries[arg % len(entries)].id if arg >= 0 else None)
            elif op == "label" and path:
                await session.append_label(path[arg % len(path)].id, f"l{n}")
            mine = await storage.get_context_branch()
            assert mine == await _fresh_context(url, session.id), (n, op, arg)
            built: SessionContext = await session.build_context()
            whole = build_context_from_path(
                await session.get_branch(), metadata_system_prompt=storage.metadata.system_prompt
            )
            assert built == whole, (n, op, arg)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_a_reused_context_equals_a_fresh_readers(
    store_url: str, steps: list[tuple[str, int]]
) -> None:
    asyncio.run(_run(store_url, steps))


def test_the_next_context_after_appends_reads_only_the_new_rows(store_url: str) -> None:
    async def run() -> None:
        async with SQLRepo(store_url) as repo:
            session = await repo.create()
            storage = session.storage
            assert isinstance(storage, SQLStorage)
            for n in range(30):
                await session.append_message(_message(n % 2, n))
            await session.build_context()
            walked: list[int] = []
            engine = storage._engine
            real = engine.get_chain_until

            async def counting(*args: Any) -> Any:
                rows = await real(*args)
                walked.append(len(rows))
                return rows

            engine.get_chain_until = counting  # type: ignore[method-assign,assignment]
            try:
                await session.append_message(_message(0, 31))
                await session.append_message(_message(1, 32))
                context = await session.build_context()
            finally:
                engine.get_chain_until = real  # type: ignore[method-assign]
            assert walked == [3], "the two new rows and the last context's leaf"
            assert len(context.messages) == 32

    asyncio.run(run())


def test_a_session_deleted_and_made_again_under_the_same_ids_is_read_anew(store_url: str) -> None:
    """Another repository deletes the session and makes it again with the same id and the
    same leaf id, under other ancestors (one case keeps the leaf's JSON byte for byte and only
    changes the parent's parent and text): the open storage reads the new session, not its
    last context or its parsed entries."""

    def entry(entry_id: str, parent: str | None, text: str) -> MessageEntry:
        message = {"role": "user", "content": text, "timestamp": 1}
        return MessageEntry(
            id=entry_id, parent_id=parent, timestamp="2026-01-01T00:00:00.000Z", message=message
        )

    async def run() -> None:
        async with SQLRepo(store_url) as repo, SQLRepo(store_url) as other:
            kept = await repo.create("s1", entries=[entry("a", None, "A"), entry("b", "a", "B")])
            assert [e.id for e in await kept.storage.get_context_branch()] == ["a", "b"]  # type: ignore[attr-defined]
            await other.delete("s1")
            await other.create("s1", entries=[entry("z", None, "Z"), entry("b", "z", "B")])
            again = await kept.storage.get_context_branch()  # type: ignore[attr-defined]
            assert again == await _fresh_context(store_url, "s1")
            assert [e.id for e in again] == ["z", "b"]

            old = [entry("a", None, "A"), entry("p", "a", "P"), entry("b", "p", "B")]
            kept = await repo.create("s2", entries=old)
            await kept.build_context()
            await other.delete("s2")
            new = [entry("z", None, "Z"), entry("p", "z", "P2"), entry("b", "p", "B")]
            await other.create("s2", entries=new)
            again = await kept.storage.get_context_branch()  # type: ignore[attr-defined]
            assert again == await _fresh_context(store_url, "s2") == new

    asyncio.run(run())
