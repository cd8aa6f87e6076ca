"""Property: whatever the model does — text, tool calls (parallel, invalid, unknown), thinking,
transient failures, cut streams, overflows — every request the harness sends is a valid
request for its provider (tool calls and results paired, Anthropic roles alternating), and
each prompt ends with its reply persisted as the leaf."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _agent_support import APIS, FAST_RETRY, add, check_request, overflow
from llm_servers import Fail, FakeLLMServer, ReceivedRequest, Say
from sessiontree.entries import MessageEntry
from sessiontree.harness import AgentHarness
from sessiontree.models import resolve_model
from sessiontree.repos import MemoryRepo

CALLS = st.sampled_from(
    [("add", {"a": 1, "b": 2}), ("add", {"a": "x"}), ("missing", {}), ("add", {"b": 5, "a": -1})]
)

STEP = st.one_of(
    st.builds(lambda t: ("text", t), st.text(min_size=0, max_size=30)),
    st.builds(
        lambda calls, thinking: ("tools", calls, thinking),
        st.lists(CALLS, min_size=1, max_size=3),
        st.booleans(),
    ),
    st.builds(lambda s: ("fail", s), st.sampled_from([500, 503, 429])),
    st.just(("cut",)),
    st.just(("overflow",)),
    st.just(("length",)),
)


def responder(api: str, steps: list[Any]) -> Any:
    counter = iter(range(10_000))

    def answer(request: ReceivedRequest) -> Any:
        n = next(counter)
        if not steps:
            return Say(text="done")
        step = steps.pop(0)
        kind = step[0]
        if kind == "text":
            return Say(text=step[1])
        if kind == "tools":
            calls = tuple((f"c{n}_{i}", name, args) for i, (name, args) in enumerate(step[1]))
            return Say(text="", thinking="hmm" if step[2] else "", tool_calls=calls)
        if kind == "fail":
            return Fail(step[1], "try later", headers={"retry-after": "0"})
        if kind == "cut":
            return Say(text="a reply that is cut", cut_after=2, chunk=2)
        if kind == "length":
            return Say(
                text="cut at the cap",
                tool_calls=((f"c{n}_0", "add", {"a": 1}),),
                stop="length" if api == "openai" else "max_tokens",
            )
        return overflow(api)

    return answer


async def scenario(api: str, history: int, prompts: list[list[Any]]) -> None:
    session = await MemoryRepo().create()
    for i in range(history):
        await session.append_message({"role": "user", "content": f"old question {i} " + "w " * 200})
        await session.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "old answer " + "w " * 200}],
                "stopReason": "stop",
            }
        )
    with FakeLLMServer(Say(text="unused")) as server:
        name = "openai/fake-model" if api == "openai" else "anthropic/fake-claude"
        base = f"{server.url}/v1" if api == "openai" else server.url
        model: Any = resolve_model(name, base_url=base, api_key="k")
        try:
            h = AgentHarness(
                session,
                model=model,
                tools=[add],
                retry=FAST_RETRY,
                settings={"keep_recent_tokens": 300, "reserve_tokens": 200},
                context_window=4000,
            )
            for steps in prompts:
                server.script(responder(api, list(steps)))
                reply = await h.prompt("next")
                leaf = await session.get_entry(await session.get_leaf_id() or "")
                assert isinstance(leaf, MessageEntry) and leaf.message == reply
            for request in server.requests:
                check_request(api, request)
        finally:
            await model.aclose()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    api=st.sampled_from(APIS),
    history=st.integers(0, 6),
    prompts=st.lists(st.lists(STEP, max_size=6), min_size=1, max_size=3),
)
def test_every_request_is_valid_whatever_the_model_does(
    api: str, history: int, prompts: list[list[Any]]
) -> None:
    asyncio.run(scenario(api, history, prompts))
