"""A scripted ``agents.models.interface.Model``: the OpenAI Agents SDK's extension point for a
model, answering each call with the next scripted list of output items (no network).

``inputs`` records what the SDK sent on every call, so a test can see the history a session
replayed. Streaming yields the Responses events the SDK's runner consumes (one
``response.output_item.done`` per item, then ``response.completed``).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from agents import Usage
from agents.items import ModelResponse
from agents.models.interface import Model
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
)

Script = Callable[[list[Any]], list[Any]]


def text(content: str, id: str = "msg_1") -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=id,
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=content, annotations=[])],
    )


def call(name: str, arguments: str, call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", name=name, arguments=arguments, call_id=call_id, id=f"fc_{call_id}"
    )


class ScriptedModel(Model):
    """Answers call ``n`` with ``script[n]`` (a list of output items, or a function of the
    input items returning one)."""

    def __init__(self, script: Sequence[list[Any] | Script]) -> None:
        self.script = list(script)
        self.inputs: list[list[Any]] = []

    def _next(self, input: str | list[Any]) -> list[Any]:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append(copy.deepcopy(items))
        step = self.script[len(self.inputs) - 1]
        return step(items) if callable(step) else step

    async def get_response(
        self, system_instructions: str | None, input: str | list[Any], *args: Any, **kwargs: Any
    ) -> ModelResponse:
        return ModelResponse(output=self._next(input), usage=Usage(requests=1), response_id=None)

    async def stream_response(
        self, system_instructions: str | None, input: str | list[Any], *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        output = self._next(input)
        for n, item in enumerate(output):
            yield ResponseOutputItemDoneEvent(
                type="response.output_item.done", item=item, output_index=n, sequence_number=n
            )
        response = Response(
            id="resp_1",
            created_at=0,
            model="scripted",
            object="response",
            output=output,
            parallel_tool_calls=False,
            tool_choice="auto",
            tools=[],
        )
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=len(output)
        )
