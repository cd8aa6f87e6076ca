"""A process killed (SIGKILL) between a tool call and its result leaves a session whose next
prompt — from a new process, over the reopened session — stores an interrupted result for the
call and sends a valid request.

Runs on the backends that outlive a process (JSONL, SQLite, PostgreSQL) and both APIs.
"""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from _agent_support import (
    APIS,
    as_assistant,
    check_all,
    close_models,
    harness,
    kill_once_flagged,
    make_model,
)
from backends import BACKENDS
from llm_servers import FakeLLMServer, Say
from sessiontree.drafts import TOOL_INTERRUPTED
from sessiontree.entries import MessageEntry
from sessiontree.messages import message_text

__all__ = ["close_models"]

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from sessiontree import open_repo
    from sessiontree.harness import AgentHarness, tool
    from sessiontree.models import resolve_model

    url, session_id, model, base_url, marker = sys.argv[1:6]

    @tool
    async def deploy(target: str) -> str:
        '''Deploy, slowly.

        Args:
            target: where to.
        '''
        Path(marker).write_text("running")
        await asyncio.sleep(600)
        return "deployed"

    async def main():
        repo = open_repo(url)
        session = await repo.open(session_id)
        h = AgentHarness(session, model=resolve_model(model, base_url=base_url, api_key="k"),
                         tools=[deploy])
        await h.prompt("deploy to staging")

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("backend", ["jsonl", "sqlite", "postgres"])
async def test_a_run_killed_between_tool_call_and_result_resumes_with_a_valid_request(
    backend: str, api: str, tmp_path: Path
) -> None:
    async with BACKENDS[backend].open(tmp_path) as repo:
        session = await repo.create()
        marker = tmp_path / "tool-started"
        with FakeLLMServer(
            Say(text="deploying", tool_calls=(("k1", "deploy", {"target": "staging"}),)),
            Say(text="the deploy was interrupted; retrying is safe"),
        ) as server:
            model = "openai/fake-model" if api == "openai" else "anthropic/fake-claude"
            base = f"{server.url}/v1" if api == "openai" else server.url
            args = [repo.url, session.id, model, base, str(marker)]
            await asyncio.to_thread(kill_once_flagged, CHILD, args, marker)

            reopened = await repo.open(session.id)
            stored = [e.message for e in await reopened.get_branch() if isinstance(e, MessageEntry)]
            assert [m.role for m in stored] == ["user", "assistant"]
            assert as_assistant(stored[1]).tool_calls()[0].id == "k1"

            h = harness(reopened, make_model(api, server))
            reply = await h.prompt("what happened?")
            assert reply.stop_reason == "stop"
            assert len(server.requests) == 2
            check_all(api, server)  # the interrupted call is paired in the request
            sent = str(server.requests[1].body["messages"])
            assert TOOL_INTERRUPTED in sent and "what happened?" in sent
            # the result telling the model is stored, not made up per request
            stored = [e.message for e in await reopened.get_branch() if isinstance(e, MessageEntry)]
            assert [m.role for m in stored] == [
                "user",
                "assistant",
                "toolResult",
                "user",
                "assistant",
            ]
            assert message_text(stored[2]) == TOOL_INTERRUPTED
