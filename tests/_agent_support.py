"""Builders shared by the agent-harness tests (not a test module): models on a local server,
request checks per provider, scripted tools."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from llm_servers import Fail, FakeLLMServer, ReceivedRequest, context_length_message
from sessiontree.entries import Entry, MessageEntry
from sessiontree.harness import AgentHarness, RetryPolicy, tool
from sessiontree.messages import (
    AgentMessage,
    AssistantMessage,
    ContentBlock,
    TextContent,
    ToolResultMessage,
)
from sessiontree.models.base import Model
from wire_check import check_anthropic_messages, check_openai_messages

APIS = ("openai", "anthropic")

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay_s=0.001, max_delay_s=0.5)


OPEN_MODELS: list[Any] = []
"""Models made by :func:`make_model` whose HTTP clients the ``close_models`` fixture closes."""


def make_model(api: str, server: FakeLLMServer, **options: Any) -> Model:
    """A model of ``api`` talking to ``server`` through the official SDK."""
    model: Model
    if api == "openai":
        from sessiontree.models.openai_chat import OpenAIChatModel

        model = OpenAIChatModel("fake-model", base_url=f"{server.url}/v1", api_key="k", **options)
    else:
        from sessiontree.models.anthropic import AnthropicModel

        model = AnthropicModel("fake-claude", base_url=server.url, api_key="k", **options)
    OPEN_MODELS.append(model)
    return model


@pytest.fixture(autouse=True)
async def close_models() -> AsyncIterator[None]:
    """Close the HTTP clients of the models the test made (import it into a test module)."""
    yield
    while OPEN_MODELS:
        await OPEN_MODELS.pop().aclose()


def overflow(api: str) -> Fail:
    """The API's context-length error."""
    return Fail(400, context_length_message(anthropic=api == "anthropic"))


def check_request(api: str, request: ReceivedRequest) -> None:
    """The request is one the provider accepts: typed exactly, pairs intact, roles alternating."""
    body = request.body
    assert isinstance(body, dict)
    if api == "openai":
        assert request.path == "/v1/chat/completions"
        check_openai_messages(body["messages"])
    else:
        assert request.path == "/v1/messages"
        check_anthropic_messages(body.get("system"), body["messages"])


def check_all(api: str, server: FakeLLMServer) -> None:
    for request in server.requests:
        check_request(api, request)


def last_messages(api: str, request: ReceivedRequest) -> list[dict[str, Any]]:
    return list(request.body["messages"])


@tool
async def add(a: int, b: int) -> str:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    await asyncio.sleep(0)
    return str(a + b)


def harness(session: Any, model: Model, **kw: Any) -> AgentHarness:
    kw.setdefault("retry", FAST_RETRY)
    kw.setdefault("tools", [add])
    return AgentHarness(session, model=model, **kw)


def message_of(entry: Entry) -> AgentMessage:
    """The message ``entry`` stores; fails the test unless it is a message entry."""
    assert isinstance(entry, MessageEntry), entry
    return entry.message


def as_assistant(message: AgentMessage) -> AssistantMessage:
    """``message`` as an assistant message; fails the test if it is any other kind."""
    assert isinstance(message, AssistantMessage), message
    return message


def as_tool_result(message: AgentMessage) -> ToolResultMessage:
    """``message`` as a tool result; fails the test if it is any other kind."""
    assert isinstance(message, ToolResultMessage), message
    return message


def text_of(block: ContentBlock | str) -> str:
    """The text of a text block; fails the test if ``block`` is anything else."""
    assert isinstance(block, TextContent), block
    return block.text


def kill_once_flagged(script: str, args: list[str], flag: Path) -> None:
    """Run ``python -c script *args`` and SIGKILL it as soon as ``flag`` exists (the script
    creates it at the moment to be killed in, e.g. when its tool starts).

    Raises:
        AssertionError: the child ended first (its stderr in the message) or did not get
            there within 60 s.
    """
    child = subprocess.Popen([sys.executable, "-c", script, *args], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not flag.exists():
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the child never got there"
            time.sleep(0.005)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stderr:
            child.stderr.close()
