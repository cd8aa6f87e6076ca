"""SessionTreeSession under the OpenAI Agents SDK's own Runner, beside the SDK's SQLiteSession.

Every test runs on every backend (the ``repo`` fixture) and does the same to an
``agents.SQLiteSession``: what the SDK's own session returns is the expected value.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import Any, cast

import pytest
from agents import (
    Agent,
    Runner,
    SQLiteSession,
    TResponseInputItem,
    function_tool,
    set_tracing_disabled,
)
from agents.memory import Session as AgentsSession
from agents.memory import SessionSettings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents_scripted_model import ScriptedModel, call, text
from backends import BACKENDS
from sessiontree import InvalidEntryError, MessageEntry, SessionNotFoundError, SessionRepo
from sessiontree.compaction import compact
from sessiontree.integrations.openai_agents import SessionTreeSession
from sessiontree.repos import open_repo as open_repo_async
from sessiontree.summarizers.extractive import ExtractiveSummarizer
from sessiontree.sync import open_repo as sync_open_repo

set_tracing_disabled(True)


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent(model: ScriptedModel) -> Agent[Any]:
    return Agent(name="calc", instructions="be exact", model=model, tools=[add])


def two_turn_script() -> list[Any]:
    return [
        [call("add", '{"a": 2, "b": 3}', "call_1")],
        [text("5")],
        [text("you asked 2+3")],
    ]


# Items of every kind the Responses API puts in a session, with awkward text.
EVERY_KIND: list[TResponseInputItem] = [
    {"role": "user", "content": "héllo 👋 \"quoted\" 'single' ; DROP TABLE entries; --"},
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "part ✓"},
            {"type": "input_image", "image_url": "https://example.com/x.png", "detail": "high"},
        ],
    },
    {
        "type": "message",
        "role": "user",
        "content": [
            {
                "type": "input_image",
                "image_url": "data:image/png;base64,iVBORw0KGgo=",
                "detail": "auto",
            }
        ],
    },
    {"role": "system", "content": "system text"},
    {"role": "developer", "content": [{"type": "input_text", "text": "dev text"}]},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "thinking…"}],
        "encrypted_content": "gAAAA==",
    },
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": "answer", "annotations": [], "logprobs": []},
            {"type": "refusal", "refusal": "no"},
        ],
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "lookup",
        "arguments": '{"q": "x\' OR 1=1 --"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "result\nwith lines"},
    {"type": "function_call", "call_id": "call_2", "name": "raw", "arguments": "not json"},
    {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": [{"type": "input_text", "text": "t"}],
    },
    {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "q"},
    },
    {
        "type": "computer_call",
        "id": "cc_1",
        "call_id": "cc",
        "action": {"type": "click", "x": 1, "y": 2, "button": "left"},
        "pending_safety_checks": [],
        "status": "completed",
    },
    {"type": "item_reference", "id": "msg_0"},
    # no item type of the SDK: a kind it may add later, which a session must keep as it is
    cast(
        "TResponseInputItem",
        {"type": "a_kind_from_the_future", "payload": {"nested": [1, 2.5, None, True]}},
    ),
]


def as_json(items: list[TResponseInputItem]) -> list[dict[str, Any]]:
    """The same items (not copies) as the JSON objects they are, to read a field of an item
    kind the test knows: the SDK's item type is a union of TypedDicts, most without it."""
    return cast("list[dict[str, Any]]", items)


async def both(
    repo: SessionRepo, session_id: str = "chat-1", **kw: Any
) -> tuple[SessionTreeSession, SQLiteSession]:
    return SessionTreeSession(session_id, repo=repo, **kw), SQLiteSession(session_id, **kw)


async def test_is_the_sdks_session_protocol(repo: SessionRepo) -> None:
    session: AgentsSession = SessionTreeSession("x", repo=repo)  # statically too
    assert isinstance(session, AgentsSession)


async def test_runner_run_carries_history_like_sqlite_session(repo: SessionRepo) -> None:
    ours, theirs = await both(repo)
    runs = []
    for session in (ours, theirs):
        model = ScriptedModel(two_turn_script())
        first = await Runner.run(agent(model), "what is 2+3?", session=session)
        second = await Runner.run(agent(model), "what did I ask?", session=session)
        runs.append(
            (model.inputs, first.final_output, second.final_output, await session.get_items())
        )
    assert runs[0] == runs[1]
    inputs, first, second, items = runs[0]
    assert (first, second) == ("5", "you asked 2+3")
    assert inputs[2][0] == {"role": "user", "content": "what is 2+3?"}  # history replayed
    assert [i.get("type", "message") for i in items] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
        "message",
        "message",
    ]


async def test_run_streamed_stores_what_the_stream_produced(repo: SessionRepo) -> None:
    ours, theirs = await both(repo)
    got = []
    for session in (ours, theirs):
        model = ScriptedModel(two_turn_script())
        for prompt in ("what is 2+3?", "what did I ask?"):
            result = Runner.run_streamed(agent(model), prompt, session=session)
            async for _ in result.stream_events():
                pass
        got.append((model.inputs, await session.get_items()))
    assert got[0] == got[1]
    assert len(got[0][1]) == 6


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_run_sync_with_a_store_url(backend: str, tmp_path: Path) -> None:
    url = {
        "memory": lambda: contextlib.nullcontext(None),
        "jsonl": lambda: contextlib.nullcontext(f"jsonl://{tmp_path / 'store'}"),
        "sqlite": lambda: contextlib.nullcontext(f"sqlite:///{tmp_path / 'store.db'}"),
        "postgres": lambda: __import__("backends").throwaway_pg_database(),
    }[backend]
    policy = asyncio.get_event_loop_policy()
    loop = policy.new_event_loop()
    policy.set_event_loop(loop)  # run_sync runs every call on this thread's default loop
    try:
        with url() as store_url:
            from sessiontree.repos import MemoryRepo

            repo = MemoryRepo() if store_url is None else None
            ours = SessionTreeSession("sync-chat", url=store_url, repo=repo)
            theirs = SQLiteSession("sync-chat")
            results = []
            for session in (ours, theirs):
                model = ScriptedModel(two_turn_script())
                a = Runner.run_sync(agent(model), "what is 2+3?", session=session)
                b = Runner.run_sync(agent(model), "and again?", session=session)
                results.append((a.final_output, b.final_output, model.inputs))
            expected = loop.run_until_complete(theirs.get_items())
            assert results[0] == results[1]
            assert _items_fresh(store_url, repo) == expected
    finally:
        policy.set_event_loop(None)
        loop.close()


def _items_fresh(url: str | None, repo: Any) -> list[Any]:
    """The items read back through a new SessionTreeSession on a fresh repository of the URL
    (on the fresh repository's own loop: run_sync shut down the async generators of this one)."""
    if repo is not None:
        return asyncio.run(SessionTreeSession("sync-chat", repo=repo).get_items())
    with sync_open_repo(url) as fresh:
        return fresh.call(SessionTreeSession("sync-chat", repo=fresh.aio).get_items)


async def test_every_item_kind_comes_back_equal_and_is_a_real_message(repo: SessionRepo) -> None:
    ours, theirs = await both(repo)
    for session in (ours, theirs):
        await session.add_items(EVERY_KIND[:5])
        await session.add_items(EVERY_KIND[5:])
    assert await ours.get_items() == await theirs.get_items() == EVERY_KIND
    tree = await repo.open("chat-1")
    entries = [e for e in await tree.get_branch() if isinstance(e, MessageEntry)]
    assert [e.message.role for e in entries][:3] == ["user", "user", "user"]
    assert entries[5].message.role == "assistant"
    assert entries[8].message.role == "toolResult"
    hits = await repo.search("DROP TABLE")
    assert [h.session_id for h in hits] == ["chat-1"]
    # what comes back is a copy: changing it changes nothing stored
    items = as_json(await ours.get_items())
    items[0]["content"] = "changed"
    assert (await ours.get_items())[0] == EVERY_KIND[0]


async def test_limits_match_the_sdk(repo: SessionRepo) -> None:
    ours, theirs = await both(repo)
    for session in (ours, theirs):
        await session.add_items(EVERY_KIND)
    for limit in (None, 0, 1, 3, len(EVERY_KIND), 100):
        assert await ours.get_items(limit) == await theirs.get_items(limit), limit
    capped_ours, capped_theirs = await both(
        repo, "capped", session_settings=SessionSettings(limit=2)
    )
    for session in (capped_ours, capped_theirs):
        await session.add_items(EVERY_KIND)
    assert await capped_ours.get_items() == await capped_theirs.get_items() == EVERY_KIND[-2:]
    assert await capped_ours.get_items(4) == EVERY_KIND[-4:]


async def test_pop_item_moves_the_leaf_and_keeps_the_entry(repo: SessionRepo) -> None:
    ours, theirs = await both(repo)
    for session in (ours, theirs):
        await session.add_items(EVERY_KIND[:3])
    assert await ours.pop_item() == await theirs.pop_item() == EVERY_KIND[2]
    assert await ours.get_items() == await theirs.get_items() == EVERY_KIND[:2]
    tree = await repo.open("chat-1")
    assert len(await tree.get_entries(types={"message"})) == 3  # the popped one is still there
    for session in (ours, theirs):
        await session.add_items([{"role": "user", "content": "instead"}])
    assert await ours.get_items() == await theirs.get_items()
    roots = await tree.get_tree()
    assert len(roots) == 1 and len(roots[0].children[0].children) == 2  # a real branch
    for _ in range(3):
        assert await ours.pop_item() == await theirs.pop_item()
    assert await ours.pop_item() is None and await theirs.pop_item() is None


async def test_clear_session_starts_an_empty_root(repo: SessionRepo) -> None:
    ours, theirs = await both(repo)
    for session in (ours, theirs):
        await session.add_items(EVERY_KIND[:2])
        await session.clear_session()
        await session.clear_session()
    assert await ours.get_items() == await theirs.get_items() == []
    for session in (ours, theirs):
        await session.add_items([{"role": "user", "content": "fresh"}])
    assert (
        await ours.get_items() == await theirs.get_items() == [{"role": "user", "content": "fresh"}]
    )
    tree = await repo.open("chat-1")
    assert len(await tree.get_tree()) == 2  # the cleared history is browsable


async def test_sessions_are_isolated_and_odd_ids_are_kept(repo: SessionRepo) -> None:
    a = SessionTreeSession("user@example.com/chat 1", repo=repo)
    b = SessionTreeSession("user@example.com/chat 2", repo=repo)
    await a.add_items([{"role": "user", "content": "for a"}])
    await b.add_items([{"role": "user", "content": "for b"}])
    assert await a.get_items() == [{"role": "user", "content": "for a"}]
    assert await b.get_items() == [{"role": "user", "content": "for b"}]
    assert a.tree_id != b.tree_id and a.tree_id.startswith("oa-")
    meta = await (await repo.open(a.tree_id)).get_metadata()
    assert meta.model_extra == {"openaiAgentsSessionId": "user@example.com/chat 1"}
    again = SessionTreeSession("user@example.com/chat 1", repo=repo)
    assert await again.get_items() == [{"role": "user", "content": "for a"}]


async def test_concurrent_runs_lose_nothing(repo: SessionRepo) -> None:
    sessions = [SessionTreeSession(f"c{n}", repo=repo) for n in range(4)]
    shared = SessionTreeSession("shared", repo=repo)

    async def one(n: int) -> None:
        model = ScriptedModel([[text(f"answer {n}")]])
        await Runner.run(agent(model), f"question {n}", session=sessions[n])
        await shared.add_items(
            [{"role": "user", "content": f"q{n}"}, {"role": "assistant", "content": f"a{n}"}]
        )

    await asyncio.gather(*(one(n) for n in range(4)))
    for n, session in enumerate(sessions):
        items = as_json(await session.get_items())
        assert items[0] == {"role": "user", "content": f"question {n}"}
        assert items[1]["content"][0]["text"] == f"answer {n}"
    items = as_json(await shared.get_items())
    assert len(items) == 8
    for i in range(0, 8, 2):  # each add_items batch stayed contiguous
        assert items[i]["content"][1:] == items[i + 1]["content"][1:]


async def test_bad_items_are_refused_and_nothing_is_stored(repo: SessionRepo) -> None:
    ours = SessionTreeSession("chat-1", repo=repo)
    await ours.add_items([{"role": "user", "content": "kept"}])
    with pytest.raises(InvalidEntryError, match="item 1"):
        await ours.add_items(
            [{"role": "user", "content": "x"}, {"type": "function_call", "name": "no call id"}]  # type: ignore[list-item]
        )
    with pytest.raises(InvalidEntryError):
        await ours.add_items([{"role": "user", "content": "x"}, {"type": "x", "v": float("nan")}])  # type: ignore[list-item]
    assert await ours.get_items() == [{"role": "user", "content": "kept"}]


async def test_compaction_and_fork_work_on_an_sdk_session(repo: SessionRepo) -> None:
    ours = SessionTreeSession("chat-1", repo=repo)
    for n in range(6):
        model = ScriptedModel([[text(f"answer number {n} " + "words " * 40)]])
        await Runner.run(agent(model), f"question {n} " + "padding " * 40, session=ours)
    tree = await repo.open("chat-1")
    await compact(tree, settings={"keep_recent_tokens": 120}, summarizer=ExtractiveSummarizer())
    items = as_json(await ours.get_items())
    assert "compacted" in items[0]["content"] and len(items) < 12
    assert items[-1]["content"][0]["text"].startswith("answer number 5")
    model = ScriptedModel([lambda inp: [text(f"saw {len(inp)} items")]])
    await Runner.run(agent(model), "next", session=ours)
    assert model.inputs[0][0] == items[0]
    first_answer = (await tree.get_entries(types={"message"}))[1]
    fork = await tree.fork(first_answer.id)
    forked = SessionTreeSession(fork.id, repo=repo)
    assert [i.get("role") for i in await forked.get_items()] == ["user", "assistant"]


item_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    item_text,
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(item_text, inner, max_size=3),
    max_leaves=8,
)
any_item = st.one_of(
    st.builds(lambda t: {"role": "user", "content": t}, item_text),
    st.builds(lambda t: {"role": "assistant", "content": t}, item_text),
    st.builds(
        lambda c, n, a: {"type": "function_call", "call_id": c, "name": n, "arguments": a},
        item_text,
        item_text,
        item_text,
    ),
    st.builds(
        lambda c, o: {"type": "function_call_output", "call_id": c, "output": o},
        item_text,
        item_text,
    ),
    st.builds(
        lambda i, t: {
            "type": "reasoning",
            "id": i,
            "summary": [{"type": "summary_text", "text": t}],
        },
        item_text,
        item_text,
    ),
    st.builds(lambda k, v: {"type": "x_" + k, "value": v}, item_text, json_value),
)


@pytest.mark.parametrize("backend", list(BACKENDS))
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(st.lists(any_item, min_size=1, max_size=4), min_size=1, max_size=3))
def test_items_round_trip_exactly(
    backend: str, tmp_path: Path, batches: list[list[dict[str, Any]]]
) -> None:
    async def run() -> list[Any]:
        async with BACKENDS[backend].open(tmp_path / uuid.uuid4().hex) as repo:
            session = SessionTreeSession("prop", repo=repo)
            for batch in batches:
                await session.add_items(cast("list[TResponseInputItem]", batch))
            return await SessionTreeSession("prop", repo=repo).get_items()

    assert asyncio.run(run()) == [i for b in batches for i in b]


@pytest.mark.parametrize("backend", ["jsonl", "sqlite", "postgres"])
async def test_two_writers_on_one_store_lose_no_item(backend: str, tmp_path: Path) -> None:
    """Two repository objects on one store stand for two processes: each writer's items hang
    under the stored leaf, so neither writer's items end up on an abandoned branch."""
    from sessiontree.repos import open_repo

    with contextlib.ExitStack() as stack:
        url = {
            "jsonl": lambda: f"jsonl://{tmp_path / 'store'}",
            "sqlite": lambda: f"sqlite:///{tmp_path / 'store.db'}",
            "postgres": lambda: stack.enter_context(__import__("backends").throwaway_pg_database()),
        }[backend]()
        first, second = open_repo(url), open_repo(url)
        try:
            await SessionTreeSession("shared", repo=first).add_items(
                [{"role": "user", "content": "start"}]
            )
            a = SessionTreeSession("shared", repo=first)
            b = SessionTreeSession("shared", repo=second)

            async def write(session: SessionTreeSession, who: str) -> None:
                for n in range(8):
                    await session.add_items(
                        [
                            {"role": "user", "content": f"{who}{n}"},
                            {"role": "assistant", "content": f"re {who}{n}"},
                        ]
                    )

            await asyncio.gather(write(a, "a"), write(b, "b"))
            contents = [
                i["content"]
                for i in as_json(await SessionTreeSession("shared", repo=second).get_items())
            ]
            assert sorted(contents[1:]) == sorted(
                [f"{w}{n}" for w in "ab" for n in range(8)]
                + [f"re {w}{n}" for w in "ab" for n in range(8)]
            )
        finally:
            await first.close()
            await second.close()


async def test_the_sdks_responses_model_over_http_replays_the_stored_history(
    repo: SessionRepo,
) -> None:
    """The SDK's own OpenAIResponsesModel, through the official client, against a local
    server speaking the Responses API: the second request carries the first turn's items."""
    import openai
    from agents import OpenAIResponsesModel

    from llm_servers import Reply, fake_server
    from test_wire_openai_responses import responses_body

    def said(text: str, id: str) -> dict[str, Any]:
        return {
            "type": "message",
            "id": id,
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }

    with fake_server(
        Reply(responses_body(said("first", "msg_a"))),
        Reply(responses_body(said("second", "msg_b"))),
    ) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
        model = OpenAIResponsesModel(model="gpt-test", openai_client=client)
        calc = Agent(name="calc", model=model)
        session = SessionTreeSession("http-chat", repo=repo)
        assert (await Runner.run(calc, "hello", session=session)).final_output == "first"
        assert (await Runner.run(calc, "again", session=session)).final_output == "second"
        await client.close()
    second_input = server.requests[1].body["input"]
    stored = as_json(await session.get_items())
    assert second_input == stored[:3]
    assert [i.get("role") for i in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[1]["content"][0]["text"] == "first"


async def test_limit_counts_items_of_messages_other_code_appended(repo: SessionRepo) -> None:
    session = SessionTreeSession("mixed", repo=repo)
    await session.add_items([{"role": "user", "content": "q"}])
    tree = await repo.open("mixed")
    await tree.append_message(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "two calls"},
                {"type": "toolCall", "id": "c1", "name": "f", "arguments": {}},
                {"type": "toolCall", "id": "c2", "name": "g", "arguments": {"x": 1}},
            ],
        }
    )
    items = await session.get_items()
    assert [i.get("type", "message") for i in items] == [
        "message",
        "message",
        "function_call",
        "function_call",
    ]
    assert await session.get_items(2) == items[-2:]
    assert await session.get_items(3) == items[-3:]


def test_sessiontree_show_reads_an_sdk_session(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sessiontree.cli import cli

    url = f"sqlite:///{tmp_path / 'cli.db'}"

    async def fill() -> None:
        async with open_repo_async(url) as repo:
            session = SessionTreeSession("cli-chat", repo=repo)
            model = ScriptedModel(two_turn_script())
            await Runner.run(agent(model), "what is 2+3?", session=session)
            await session.pop_item()  # the last answer becomes an abandoned branch

    asyncio.run(fill())
    result = CliRunner().invoke(
        cli, ["--store", url, "show", "cli-chat", "--json"], env={"SESSIONTREE_URL": None}
    )
    assert result.exit_code == 0, result.output
    import orjson

    nodes = orjson.loads(result.stdout)["nodes"]
    kinds = [n["kind"] for n in nodes if n["type"] == "message"]
    assert kinds[:3] == ["user", "assistant", "toolResult"] and len(kinds) == 4
    assert [n["onCurrentBranch"] for n in nodes if n["type"] == "message"] == [
        True,
        True,
        True,
        False,
    ]


async def test_memory_url_sessions_are_private_like_sqlite_memory_sessions() -> None:
    """Two ``SessionTreeSession(..., url="memory://")`` shared one process-wide store; each
    is private now, as two ``SQLiteSession(sid, ":memory:")`` are. A named
    ``memory://NAME`` is shared by every session given that name."""
    item: TResponseInputItem = {"role": "user", "content": "hi"}
    for make in (
        lambda: SQLiteSession("s"),
        lambda: SessionTreeSession("s", url="memory://"),
        lambda: SessionTreeSession("s", url="sqlite:///:memory:"),
    ):
        first, second = make(), make()
        await first.add_items([item])
        assert await second.get_items() == []
        assert await first.get_items() == [item]
    name = f"memory://oa-{uuid.uuid4().hex}"
    await SessionTreeSession("s", url=name).add_items([item])
    assert await SessionTreeSession("s", url=name).get_items() == [item]


async def test_a_model_item_holding_inf_is_refused_not_stored_as_null(repo: SessionRepo) -> None:
    from openai.types.responses import ResponseFunctionToolCall

    session = SessionTreeSession("inf", repo=repo)
    item: Any = {"role": "user", "content": "before"}
    await session.add_items([item])

    class Scored(ResponseFunctionToolCall):
        score: float = 0.0

    call = Scored(arguments="{}", call_id="c1", name="f", type="function_call", score=float("inf"))
    with pytest.raises(InvalidEntryError, match=r"item 1 .*non-finite"):
        await session.add_items([item, call])  # type: ignore[list-item]
    assert await session.get_items() == [item]


async def test_user_scoped_sessions_are_separate_and_listed_per_user(repo: SessionRepo) -> None:
    """openai-agents-python#2808: sessions tied to a user. Two users' "chat-1" under the SDK's
    Runner are two sessions; each user's view lists and opens only their own."""
    from sessiontree.repos import scoped

    alice = SessionTreeSession("chat-1", repo=repo, user_id="alice", app="calc")
    bob = SessionTreeSession("chat-1", repo=repo, user_id="bob", app="calc")
    for session, prompt in ((alice, "what is 2+3?"), (bob, "hello")):
        model = ScriptedModel([[text(f"reply to {prompt}")]])
        await Runner.run(agent(model), prompt, session=session)
        assert model.inputs[0][0] == {"role": "user", "content": prompt}  # no other history
    assert (await alice.get_items())[0] == {"role": "user", "content": "what is 2+3?"}
    assert (await bob.get_items())[0] == {"role": "user", "content": "hello"}
    assert alice.tree_id != bob.tree_id

    assert [i.id for i in await alice.repo.list()] == [alice.tree_id]
    assert [i.id for i in await scoped(repo, user_id="bob").list()] == [bob.tree_id]
    (info,) = await alice.repo.list()
    assert (info.metadata.user_id, info.metadata.app) == ("alice", "calc")
    assert (info.metadata.model_extra or {})["openaiAgentsSessionId"] == "chat-1"
    with pytest.raises(SessionNotFoundError):
        await alice.repo.open(bob.tree_id)
    assert {h.session_id for h in await alice.repo.search("hello")} == set()
    # the same user and id again: the same session, from another object
    again = SessionTreeSession("chat-1", repo=repo, user_id="alice", app="calc")
    assert await again.get_items() == await alice.get_items()
    # an unscoped adapter keeps the id as it is
    assert SessionTreeSession("chat-1", repo=repo).tree_id == "chat-1"
