"""Tools an agent's model may call: :class:`Tool`, the :func:`tool` decorator, and running them.

A tool has a name, a description, a JSON schema of its arguments (from a pydantic model, a
typed function, or given as is) and an ``execute`` callable (async or sync) that returns
text or content blocks. :func:`run_tool` never raises for what the model got wrong or what
the tool did: invalid arguments, an unknown tool, an exception or a timeout become a
``toolResult`` with ``isError: true`` that says what went wrong, so the model can correct
itself.

A tool reports progress by declaring a keyword parameter ``on_update``: the harness then
passes ``on_update(partial)`` (a plain function, callable from async code and from a sync
tool's worker thread alike; ``partial`` is text or content blocks), and every call becomes a
``tool_execution_update`` event, in call order, between the call's start and end events.
A tool without that parameter is called exactly as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import re
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_type_hints, overload

from pydantic import BaseModel, Field, TypeAdapter, ValidationError, create_model

from sessiontree.messages import (
    ContentBlock,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
)
from sessiontree.models.base import ToolSchema

__all__ = [
    "UPDATE_PARAMETER",
    "Tool",
    "ToolBatch",
    "ToolOutput",
    "UpdateCallback",
    "error_result",
    "run_tool",
    "tool",
]

ToolOutput = str | Sequence[ContentBlock | Mapping[str, Any]] | ToolResultMessage
"""What ``execute`` may return: text, content blocks, or a whole result (for ``details``)."""

UpdateCallback = Callable[[str | Sequence[ContentBlock | Mapping[str, Any]]], None]
"""``on_update(partial)``: report progress (text or content blocks) of a running tool call."""

UPDATE_PARAMETER = "on_update"
"""The keyword parameter through which ``execute`` asks for an :data:`UpdateCallback`."""


def _wants_update(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False
    param = params.get(UPDATE_PARAMETER)
    return param is not None and param.kind in (param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD)


_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Tool:
    """A tool the model may call.

    Attributes:
        name: ``[A-Za-z0-9_-]{1,64}`` (what every provider accepts).
        description: what the tool does; the model reads it.
        parameters: a pydantic model class, or a JSON schema (``{"type": "object", ...}``).
        execute: ``execute(**arguments)``, async or sync, returning text, content blocks or a
            :class:`~sessiontree.messages.ToolResultMessage`. With a pydantic ``parameters``
            class the validated fields are passed as keyword arguments. When ``execute``
            has a parameter ``on_update`` it also receives an :data:`UpdateCallback`;
            each ``on_update(partial)`` becomes a ``tool_execution_update`` event. That
            parameter is never part of the arguments' schema, and a model cannot set it.
        timeout_s: seconds a call may take before it becomes an error result (``None`` = no
            limit). A sync ``execute`` runs in its own daemon thread: one given up (timed
            out, aborted) runs on until it returns but never keeps ``asyncio.run`` or the
            program from ending.
        sequential: when ``True`` a batch containing this tool runs one call at a time.
        replay: ``"safe"`` when running a call twice does no harm (a read, a query): a call
            cut short by the process ending is run again when the session is next prompted.
            ``"never"`` (the default): such a call gets an ``isError`` result saying it was
            interrupted instead (docs/harness.md "Tool calls across a crash").

    Raises:
        ValueError: a name providers refuse, a ``parameters`` that is neither, or a
            ``replay`` other than ``"safe"`` or ``"never"``.
    """

    name: str
    description: str
    parameters: type[BaseModel] | Mapping[str, Any]
    execute: Callable[..., Any]
    timeout_s: float | None = None
    sequential: bool = False
    replay: Literal["never", "safe"] = "never"
    _validator: Callable[[dict[str, Any]], dict[str, Any]] | None = field(
        default=None, repr=False, compare=False
    )
    _wants_update: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must match [A-Za-z0-9_-]{{1,64}}")
        if self.replay not in ("never", "safe"):
            raise ValueError(
                f"tool {self.name!r}: replay must be 'safe' or 'never', not {self.replay!r}"
            )
        object.__setattr__(self, "_wants_update", _wants_update(self.execute))
        params = self.parameters
        if isinstance(params, type) and issubclass(params, BaseModel):
            model = params

            def validate(args: dict[str, Any]) -> dict[str, Any]:
                parsed = model.model_validate(args)
                return {name: getattr(parsed, name) for name in type(parsed).model_fields}

            object.__setattr__(self, "_validator", validate)
        elif not isinstance(params, Mapping) or params.get("type", "object") != "object":
            raise ValueError(
                f"tool {self.name!r}: parameters must be a pydantic model class or a JSON "
                "schema of type 'object'"
            )

    def json_schema(self) -> dict[str, Any]:
        """The arguments' JSON schema (``type: object``)."""
        params = self.parameters
        if isinstance(params, type) and issubclass(params, BaseModel):
            schema = params.model_json_schema()
            schema.pop("title", None)
            return schema
        return dict(params)

    def schema(self) -> ToolSchema:
        """What the model is offered."""
        return ToolSchema(self.name, self.description, self.json_schema())

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments to call ``execute`` with.

        Raises:
            ValueError: they do not match the schema (pydantic's ``ValidationError`` for a
                model class; for a JSON schema, missing required keys or a non-object).
        """
        if self._validator is not None:
            return self._validator(dict(arguments))
        schema = self.json_schema()
        missing = [k for k in schema.get("required", ()) if k not in arguments]
        if missing:
            raise ValueError(f"missing required argument(s): {', '.join(missing)}")
        return dict(arguments)


def _docstring_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The summary of a Google-style docstring and its ``Args:`` descriptions."""
    doc = inspect.getdoc(fn) or ""
    summary_lines: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            section = "args"
            continue
        if stripped.endswith(":") and stripped[:-1] in ("Returns", "Raises", "Yields", "Example"):
            section = "other"
            continue
        if section == "summary":
            summary_lines.append(stripped)
        elif section == "args" and stripped:
            match = re.match(r"^(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", stripped)
            if match and line.startswith(("    ", "\t")) and not line.startswith("        "):
                current = match.group(1)
                args[current] = match.group(2)
            elif current:
                args[current] += " " + stripped
    return " ".join(" ".join(summary_lines).split()), args


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float | None = None,
    sequential: bool = False,
    replay: Literal["never", "safe"] = "never",
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float | None = None,
    sequential: bool = False,
    replay: Literal["never", "safe"] = "never",
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a :class:`Tool` of a typed function (async or sync).

    The arguments' schema comes from the type hints (through pydantic, so any type pydantic
    knows works, defaults included), the description from the docstring's summary, and each
    argument's description from its ``Args:`` section. A parameter named ``on_update``
    is left out of the schema: the harness passes it an :data:`UpdateCallback` to report
    progress with (``on_update("3 of 10 files read")``). Usable bare (``@tool``) or with
    options (``@tool(timeout_s=10)``, ``@tool(replay="safe")``; see :class:`Tool`)::

        @tool
        async def read(path: str, limit: int = 100) -> str:
            '''Read a text file.

            Args:
                path: the file to read.
                limit: the most lines returned.
            '''

    Returns:
        The :class:`Tool` when ``fn`` is given (bare ``@tool``); otherwise a decorator that
        makes one with the given options.

    Raises:
        ValueError: a parameter without a type hint, or ``*args``/``**kwargs``.
    """

    def build(func: Callable[..., Any]) -> Tool:
        summary, arg_docs = _docstring_parts(func)
        hints = get_type_hints(func)
        fields: dict[str, Any] = {}
        for pname, param in inspect.signature(func).parameters.items():
            if pname == UPDATE_PARAMETER:
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ValueError(f"tool {func.__name__!r}: *args/**kwargs cannot be described")
            if pname not in hints:
                raise ValueError(f"tool {func.__name__!r}: parameter {pname!r} has no type hint")
            default = ... if param.default is param.empty else param.default
            fields[pname] = (hints[pname], Field(default, description=arg_docs.get(pname)))
        model = create_model(f"{func.__name__}_arguments", **fields)
        return Tool(
            name=name or func.__name__,
            description=description or summary or func.__name__,
            parameters=model,
            execute=func,
            timeout_s=timeout_s,
            sequential=sequential,
            replay=replay,
        )

    return build(fn) if fn is not None else build


_BLOCKS: TypeAdapter[list[ContentBlock]] = TypeAdapter(list[ContentBlock])


def _result(call: ToolCall, output: Any) -> ToolResultMessage:
    if isinstance(output, ToolResultMessage):
        return output.model_copy(update={"tool_call_id": call.id, "tool_name": call.name})
    if output is None:
        content: list[ContentBlock] = []
    elif isinstance(output, str):
        content = [TextContent(text=output)]
    elif isinstance(output, TextContent | ImageContent):
        content = [output]
    elif isinstance(output, Sequence):
        content = _BLOCKS.validate_python(list(output))
    else:
        content = [TextContent(text=str(output))]
    return ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=content)


def _ignore_update(partial: Any) -> None:
    """The ``on_update`` of a call nobody listens to."""


def error_result(call: ToolCall, text: str) -> ToolResultMessage:
    """An ``isError`` result for ``call`` saying ``text``."""
    return ToolResultMessage(
        tool_call_id=call.id, tool_name=call.name, content=[TextContent(text=text)], is_error=True
    )


async def run_tool(
    call: ToolCall, tools: Mapping[str, Tool], *, on_update: UpdateCallback | None = None
) -> ToolResultMessage:
    """Run one tool call; every failure becomes an ``isError`` result (never an exception).

    Args:
        call: the model's call.
        tools: the tools by name.
        on_update: passed as ``on_update`` to a tool whose ``execute`` asks for it (a
            no-op is passed when this is ``None``).

    Cancellation (an abort) is not a failure and propagates.
    """
    found = tools.get(call.name)
    if found is None:
        known = ", ".join(sorted(tools)) or "none"
        return error_result(call, f"Tool {call.name!r} does not exist. Available tools: {known}.")
    raw = (call.model_extra or {}).get("rawArguments")
    if raw is not None:
        return error_result(
            call, f"The arguments of {call.name!r} are not a JSON object: {str(raw)[:500]}"
        )
    try:
        arguments = found.validate(call.arguments)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        return error_result(call, f"Invalid arguments for {call.name!r}: {problems}")
    except ValueError as exc:
        return error_result(call, f"Invalid arguments for {call.name!r}: {exc}")
    arguments.pop(UPDATE_PARAMETER, None)
    if found._wants_update:
        arguments[UPDATE_PARAMETER] = on_update or _ignore_update
    try:
        async with asyncio.timeout(found.timeout_s):
            if inspect.iscoroutinefunction(found.execute):
                output = await found.execute(**arguments)
            else:  # a plain function runs in a worker thread, so it cannot stall the loop
                output = await _in_daemon_thread(found.name, found.execute, arguments)
                if inspect.isawaitable(output):
                    output = await output
    except TimeoutError:
        return error_result(call, f"Tool {call.name!r} timed out after {found.timeout_s} s.")
    except Exception as exc:
        return error_result(call, f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}")
    try:
        return _result(call, output)
    except ValueError as exc:
        return error_result(
            call, f"Tool {call.name!r} returned something that is not content: {exc}"
        )


async def _in_daemon_thread(name: str, fn: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    """``fn(**arguments)`` in a new daemon thread (with a copy of the caller's context
    variables); returns or raises what it did.

    Not ``asyncio.to_thread``: the loop's default executor is joined when ``asyncio.run``
    ends and its threads when the interpreter exits, so a sync tool that hangs past its
    ``timeout_s`` would keep the program from ending. A daemon thread is joined by neither:
    once the call is given up (timeout, abort) its thread runs on unobserved, and its
    outcome, arriving after the loop closed, is dropped. The outcome comes back through
    ``call_soon_threadsafe``, after every ``on_update`` the thread scheduled before it.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(exc: BaseException | None, value: Any) -> None:
        if future.done():  # given up: timed out or aborted
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(value)

    def work() -> None:
        exc: BaseException | None = None
        value: Any = None
        try:
            value = context.run(fn, **arguments)
        except Exception as raised:
            exc = raised
        except BaseException as raised:  # SystemExit & co. must not reach the event loop
            exc = RuntimeError(f"{type(raised).__name__}: {raised}")
        # RuntimeError: the loop has closed, and nobody waits for this call any more
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, exc, value)

    threading.Thread(target=work, name=f"sessiontree-tool-{name}", daemon=True).start()
    return await future


class _Updates:
    """The ``on_update`` of one running call: queues each partial and emits it, in order,
    as a ``tool_execution_update`` from a task on the event loop.

    Calls from a worker thread reach the queue through ``call_soon_threadsafe``, which runs
    callbacks in the order they were scheduled; the thread hands its result back the same
    way (:func:`_in_daemon_thread`), so every update of a sync tool is queued before
    ``run_tool`` returns, and
    :meth:`drain` emits all of them before the call's end event.
    """

    def __init__(self, call: ToolCall, emit: Callable[..., Awaitable[None]]) -> None:
        self._call = call
        self._emit = emit
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[ToolResultMessage | None] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self._closed = False

    def __call__(self, partial: str | Sequence[ContentBlock | Mapping[str, Any]]) -> None:
        message = _result(self._call, partial)  # ValueError: not content, raised to the tool
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._put(message)
        else:
            # RuntimeError: a given-up call's thread reports after the loop closed
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._put, message)

    def _put(self, message: ToolResultMessage) -> None:
        if self._closed:  # a timed-out sync tool's thread runs on; its end was emitted
            return
        if self._pump is None:
            self._pump = self._loop.create_task(self._run())
        self._queue.put_nowait(message)

    async def _run(self) -> None:
        while (message := await self._queue.get()) is not None:
            await self._emit("tool_execution_update", tool_call=self._call, result=message)

    async def drain(self) -> None:
        """Emit every queued update; returns once the last one's listeners ran."""
        if self._pump is not None:
            self._queue.put_nowait(None)
            await self._pump

    def close(self) -> None:
        """Stop emitting (after :meth:`drain`, or when the call was cancelled)."""
        self._closed = True
        if self._pump is not None and not self._pump.done():
            self._pump.cancel()


ABORTED_TEXT = "The run was aborted before this tool call finished."
NOT_RUN_TEXT = "The run was aborted before this tool call started."
TRUNCATED_TEXT = (
    "The answer was cut off at the output-token limit, so this call's arguments may be "
    "incomplete; it was not run. Call it again with complete arguments."
)


class ToolBatch:
    """The tool calls of one assistant message, run concurrently or one at a time.

    Args:
        calls: the calls, in call order.
        tools: the tools that may be called, by name (others are "unknown tool" errors).
        sequential: one call at a time (also when any called tool is marked ``sequential``).
        truncated: the answer was cut at the output cap: no call runs, each gets an error.
        emit: ``await emit(type, tool_call=..., result=...)`` for ``tool_execution_*`` events.
        record: ``await record(started)`` before calls start, with every call started so
            far, these included (the harness saves it: docs/harness.md "Tool calls across a
            crash"): once for a concurrent batch, before each call of a sequential one.
    """

    def __init__(
        self,
        calls: Sequence[ToolCall],
        tools: Mapping[str, Tool],
        *,
        sequential: bool,
        truncated: bool,
        emit: Callable[..., Awaitable[None]],
        record: Callable[[Sequence[ToolCall]], Awaitable[None]] | None = None,
    ) -> None:
        self.calls = list(calls)
        self._record = record
        self.tools = tools
        self.sequential = sequential or any(
            tools[c.name].sequential for c in calls if c.name in tools
        )
        self.truncated = truncated
        self._emit = emit
        # By position in the batch, not by call id: a model may give two calls one id.
        self._done: dict[int, ToolResultMessage] = {}
        self._started: set[int] = set()

    async def _one(self, position: int, call: ToolCall) -> None:
        self._started.add(position)
        await self._emit("tool_execution_start", tool_call=call)
        if self.truncated:
            result = error_result(call, TRUNCATED_TEXT)
        else:
            updates = _Updates(call, self._emit)
            try:
                result = await run_tool(call, self.tools, on_update=updates)
                await updates.drain()
            finally:
                updates.close()
        stamped = result.model_copy(update={"timestamp": int(time.time() * 1000)})
        self._done[position] = stamped
        await self._emit("tool_execution_end", tool_call=call, result=stamped)

    async def run(self) -> None:
        """Run every call; cancellation (an abort) stops the calls still running."""
        record = None if self.truncated else self._record  # a truncated batch runs nothing
        if self.sequential:
            for position, call in enumerate(self.calls):
                if record is not None:
                    await record(self.calls[: position + 1])
                await self._one(position, call)
        else:
            if record is not None and self.calls:
                await record(self.calls)
            await asyncio.gather(*(self._one(k, c) for k, c in enumerate(self.calls)))

    def results(self) -> list[ToolResultMessage]:
        """One result per call, in call order (paired by position, so two calls that share
        an id each get their own): an interrupted call's says it was aborted while running,
        a call never started says it did not run."""
        out = []
        for position, call in enumerate(self.calls):
            result = self._done.get(position)
            if result is None:
                text = ABORTED_TEXT if position in self._started else NOT_RUN_TEXT
                result = error_result(call, text)
            out.append(result)
        return out
