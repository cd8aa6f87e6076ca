"""SessionTreeChatMessageHistory beside LangChain's own InMemoryChatMessageHistory, on every
backend, sync and async, and under RunnableWithMessageHistory with LangChain's fake chat model."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.chat_history import BaseChatMessageHistory, InMemoryChatMessageHistory
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.history import RunnableWithMessageHistory

from backends import BACKENDS, throwaway_pg_database
from sessiontree import (
    AssistantMessage,
    InvalidEntryError,
    MessageEntry,
    SessionRepo,
    ToolResultMessage,
    UserMessage,
)
from sessiontree.compaction import compact
from sessiontree.integrations.langchain import (
    SessionTreeChatMessageHistory,
    from_langchain,
    to_langchain,
)
from sessiontree.summarizers.extractive import ExtractiveSummarizer
from sessiontree.sync import SyncRepo
from sessiontree.sync import open_repo as sync_open_repo

# langchain-core 1.6.4 deprecated BaseChatMessageHistory (and 1.3.3 RunnableWithMessageHistory)
# in favour of LangGraph persistence; both still ship and are what this adapter implements.
pytestmark = pytest.mark.filterwarnings(
    "ignore::langchain_core._api.deprecation.LangChainDeprecationWarning"
)

PNG = "iVBORw0KGgo="

EVERY_KIND: list[BaseMessage] = [
    SystemMessage(content="you are terse"),
    HumanMessage(content='héllo 👋 "quoted" \'; DROP TABLE sessions; --'),
    HumanMessage(
        content=[
            {"type": "text", "text": "look"},
            {"type": "image", "base64": PNG, "mime_type": "image/png"},
        ]
    ),
    AIMessage(
        content="let me check",
        tool_calls=[
            {"id": "call_1", "name": "lookup", "args": {"q": "x", "n": 2}, "type": "tool_call"}
        ],
        id="run-1",
        response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
        usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
    ),
    ToolMessage(content="found it", tool_call_id="call_1", name="lookup"),
    ToolMessage(content="boom", tool_call_id="call_2", status="error", artifact={"trace": [1, 2]}),
    AIMessage(
        content=[{"type": "text", "text": "done"}, {"type": "reasoning", "reasoning": "because"}]
    ),
    ChatMessage(role="critic", content="meh"),
    HumanMessage(content="with extras", additional_kwargs={"source": "ui"}, name="alice"),
]


async def test_async_history_is_langchains_and_stored_as_messages(repo: SessionRepo) -> None:
    ours = SessionTreeChatMessageHistory("chat-1", repo=repo)
    theirs = InMemoryChatMessageHistory()
    assert isinstance(ours, BaseChatMessageHistory)
    for history in (ours, theirs):
        await history.aadd_messages(EVERY_KIND[:4])
        await history.aadd_messages(EVERY_KIND[4:])
    assert await ours.aget_messages() == await theirs.aget_messages() == EVERY_KIND
    session = await repo.open("chat-1")
    roles = [e.message.role for e in await session.get_branch() if isinstance(e, MessageEntry)]
    assert roles == [
        "custom",
        "user",
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
        "custom",
        "user",
    ]
    assert [h.session_id for h in await repo.search("DROP TABLE")] == ["chat-1"]
    for history in (ours, theirs):
        await history.aclear()
    assert await ours.aget_messages() == await theirs.aget_messages() == []
    await ours.aadd_messages([HumanMessage(content="again")])
    assert await ours.aget_messages() == [HumanMessage(content="again")]
    assert len(await session.get_tree()) == 2  # the cleared history is still in the tree


async def test_async_repo_refuses_sync_calls_clearly(repo: SessionRepo) -> None:
    ours = SessionTreeChatMessageHistory("chat-1", repo=repo)
    with pytest.raises(RuntimeError, match="sync calls need"):
        ours.add_messages([HumanMessage(content="x")])


@contextlib.contextmanager
def sync_repo(backend: str, tmp_path: Path) -> Iterator[SyncRepo]:
    urls: dict[str, contextlib.AbstractContextManager[str]] = {
        "memory": contextlib.nullcontext("memory://"),
        "jsonl": contextlib.nullcontext(f"jsonl://{tmp_path / 'store'}"),
        "sqlite": contextlib.nullcontext(f"sqlite:///{tmp_path / 'store.db'}"),
        "postgres": throwaway_pg_database(),
    }
    with urls[backend] as url, sync_open_repo(url) as repo:
        yield repo


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_sync_history_from_several_threads(backend: str, tmp_path: Path) -> None:
    with sync_repo(backend, tmp_path) as repo:
        ours = SessionTreeChatMessageHistory("chat-1", repo=repo)
        ours.add_messages(EVERY_KIND)
        ours.add_user_message("and one more")
        ours.add_ai_message("ok")
        assert ours.messages == [
            *EVERY_KIND,
            HumanMessage(content="and one more"),
            AIMessage(content="ok"),
        ]
        ours.clear()
        assert ours.messages == []

        def writer(n: int) -> None:
            history = SessionTreeChatMessageHistory(f"t{n}", repo=repo)
            for i in range(5):
                history.add_messages(
                    [HumanMessage(content=f"{n}-{i}"), AIMessage(content=f"re {n}-{i}")]
                )

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for n in range(4):
            got = SessionTreeChatMessageHistory(f"t{n}", repo=repo).messages
            assert [m.content for m in got[::2]] == [f"{n}-{i}" for i in range(5)]


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_runnable_with_message_history(backend: str, tmp_path: Path) -> None:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "be brief"), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    with sync_repo(backend, tmp_path) as repo:
        stores: dict[str, BaseChatMessageHistory] = {}

        def run(factory: Any) -> list[Any]:
            model = FakeListChatModel(responses=["first answer", "second answer", "other user"])
            chain = RunnableWithMessageHistory(
                prompt | model,
                factory,
                input_messages_key="question",
                history_messages_key="history",
            )
            cfg: RunnableConfig = {"configurable": {"session_id": "s1"}}
            a = chain.invoke({"question": "q1"}, config=cfg)
            b = chain.invoke({"question": "q2"}, config=cfg)
            c = chain.invoke({"question": "q3"}, config={"configurable": {"session_id": "s2"}})

            def runless(
                history: BaseChatMessageHistory,
            ) -> list[BaseMessage]:  # run ids differ per run
                return [m.model_copy(update={"id": None}) for m in history.messages]

            return [a.content, b.content, c.content, runless(factory("s1")), runless(factory("s2"))]

        ours = run(lambda sid: SessionTreeChatMessageHistory(sid, repo=repo))
        theirs = run(lambda sid: stores.setdefault(sid, InMemoryChatMessageHistory()))
        assert ours == theirs
        assert [m.content for m in ours[3]] == ["q1", "first answer", "q2", "second answer"]


async def test_async_runnable_and_compaction(repo: SessionRepo) -> None:
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{question}")]
    )
    model = FakeListChatModel(responses=[f"answer {n} " + "words " * 50 for n in range(6)])
    chain = RunnableWithMessageHistory(
        prompt | model,
        lambda sid: SessionTreeChatMessageHistory(sid, repo=repo),
        input_messages_key="question",
        history_messages_key="history",
    )
    for n in range(6):
        await chain.ainvoke(
            {"question": f"question {n} " + "pad " * 50},
            config={"configurable": {"session_id": "s1"}},
        )
    await compact(
        await repo.open("s1"),
        settings={"keep_recent_tokens": 120},
        summarizer=ExtractiveSummarizer(),
    )
    after = await SessionTreeChatMessageHistory("s1", repo=repo).aget_messages()
    assert isinstance(after[0], HumanMessage) and "compacted" in after[0].content
    last = after[-1].content
    assert isinstance(last, str) and last.startswith("answer 5")


def test_conversion_of_messages_other_code_appended() -> None:
    back = to_langchain([from_langchain(m) for m in EVERY_KIND[:6]])
    assert [type(m) for m in back] == [
        SystemMessage,
        HumanMessage,
        HumanMessage,
        AIMessage,
        ToolMessage,
        ToolMessage,
    ]
    with_calls, failed = back[3], back[5]
    assert isinstance(with_calls, AIMessage) and isinstance(failed, ToolMessage)
    assert with_calls.tool_calls[0]["args"] == {"q": "x", "n": 2}
    assert failed.status == "error"
    assert isinstance(from_langchain(EVERY_KIND[4]), ToolResultMessage)
    assert isinstance(from_langchain(EVERY_KIND[3]), AssistantMessage)
    assert isinstance(from_langchain(EVERY_KIND[2]), UserMessage)


text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)
call = st.builds(
    lambda i, n, a: {"id": i, "name": n, "args": a, "type": "tool_call"},
    text,
    text,
    st.dictionaries(text, st.integers() | text, max_size=2),
)
message = st.one_of(
    st.builds(HumanMessage, content=text),
    st.builds(SystemMessage, content=text),
    st.builds(
        lambda c, calls: AIMessage(content=c, tool_calls=calls), text, st.lists(call, max_size=2)
    ),
    st.builds(lambda c, i: ToolMessage(content=c, tool_call_id=i), text, text),
    st.builds(lambda r, c: ChatMessage(role=r or "x", content=c), text, text),
)


@pytest.mark.parametrize("backend", list(BACKENDS))
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(st.lists(message, min_size=1, max_size=4), min_size=1, max_size=3))
def test_messages_round_trip_exactly(
    backend: str, tmp_path: Path, batches: list[list[BaseMessage]]
) -> None:
    async def run() -> list[BaseMessage]:
        async with BACKENDS[backend].open(tmp_path / uuid.uuid4().hex) as repo:
            history = SessionTreeChatMessageHistory("prop", repo=repo)
            for batch in batches:
                await history.aadd_messages(batch)
            return await SessionTreeChatMessageHistory("prop", repo=repo).aget_messages()

    assert asyncio.run(run()) == [m for b in batches for m in b]


@pytest.mark.parametrize("item", ["not a message", None, {"role": "user", "content": "hi"}])
async def test_an_item_that_is_not_a_message_is_refused_naming_its_index(
    repo: SessionRepo, item: Any
) -> None:
    ours = SessionTreeChatMessageHistory("chat-1", repo=repo)
    await ours.aadd_messages([HumanMessage("kept")])
    with pytest.raises(InvalidEntryError, match="message 1 of the batch"):
        await ours.aadd_messages([HumanMessage("not kept"), item])
    assert [m.content for m in await ours.aget_messages()] == ["kept"]


def test_memory_url_histories_are_private_and_a_named_one_is_shared() -> None:
    first = SessionTreeChatMessageHistory("h", url="memory://")
    second = SessionTreeChatMessageHistory("h", url="memory://")
    first.add_user_message("only mine")
    assert second.messages == []
    assert [m.content for m in first.messages] == ["only mine"]
    name = f"memory://lc-{uuid.uuid4().hex}"
    SessionTreeChatMessageHistory("h", url=name).add_user_message("ours")
    assert [m.content for m in SessionTreeChatMessageHistory("h", url=name).messages] == ["ours"]


async def test_user_scoped_histories_are_separate(repo: SessionRepo) -> None:
    """Two users' "chat-1" are two sessions, each in its user's scope."""
    from sessiontree.repos import scoped

    alice = SessionTreeChatMessageHistory("chat-1", repo=repo, user_id="alice", app="a")
    bob = SessionTreeChatMessageHistory("chat-1", repo=repo, user_id="bob", app="a")
    await alice.aadd_messages([HumanMessage(content="from alice")])
    await bob.aadd_messages([HumanMessage(content="from bob")])
    assert await alice.aget_messages() == [HumanMessage(content="from alice")]
    assert await bob.aget_messages() == [HumanMessage(content="from bob")]
    (info,) = await scoped(repo, user_id="alice").list()
    assert info.id == alice.tree_id and info.metadata.app == "a"
    assert alice.tree_id != bob.tree_id and alice.tree_id.startswith("lc-")
