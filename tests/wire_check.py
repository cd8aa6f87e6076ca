"""Strict checks of request bodies against the providers' SDK request types.

The SDKs type requests as ``TypedDict`` s whose lists are ``Iterable[...]``; pydantic
validates such fields lazily (an iterator, checked only when consumed) and ignores unknown
keys, so a ``TypeAdapter`` alone would accept a wrong block. :func:`check_typed` walks the
value against the type eagerly: every key must be declared, every required key present,
every ``Literal`` matched, every item of an ``Iterable`` checked. On top of the types,
:func:`check_openai_messages` and :func:`check_anthropic_messages` check the rules the
types cannot say: tool calls and results paired, call ids unique in a request, Anthropic
roles alternating.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin, get_type_hints

from typing_extensions import is_typeddict

__all__ = ["check_anthropic_messages", "check_openai_messages", "check_typed"]


class WireError(AssertionError):
    pass


def _strip(tp: Any) -> Any:
    while get_origin(tp) in (Required, NotRequired, typing.Annotated):
        tp = get_args(tp)[0]
    return tp


def check_typed(value: Any, tp: Any, path: str = "$") -> None:
    """Raise :class:`WireError` unless ``value`` is exactly of type ``tp``."""
    tp = _strip(tp)
    origin = get_origin(tp)
    if tp is Any or tp is object:
        return
    if origin in (Union, types.UnionType):
        errors = []
        for option in get_args(tp):
            try:
                check_typed(value, option, path)
                return
            except WireError as exc:
                errors.append(str(exc))
        raise WireError(f"{path}: matches no option: {errors[:3]}")
    if origin is Literal:
        if value not in get_args(tp):
            raise WireError(f"{path}: {value!r} not in {get_args(tp)}")
        return
    if tp is type(None):
        if value is not None:
            raise WireError(f"{path}: expected None")
        return
    if is_typeddict(tp):
        if not isinstance(value, dict):
            raise WireError(f"{path}: expected an object for {tp.__name__}")
        hints = get_type_hints(tp, include_extras=True)
        unknown = set(value) - set(hints)
        if unknown:
            raise WireError(f"{path}: unknown keys {sorted(unknown)} for {tp.__name__}")
        missing = set(tp.__required_keys__) - set(value)
        if missing:
            raise WireError(f"{path}: missing keys {sorted(missing)} for {tp.__name__}")
        for key, item in value.items():
            check_typed(item, hints[key], f"{path}.{key}")
        return
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence, typing.Iterable):
        if not isinstance(value, list):
            raise WireError(f"{path}: expected a list")
        (item_tp,) = get_args(tp) or (Any,)
        for i, item in enumerate(value):
            check_typed(item, item_tp, f"{path}[{i}]")
        return
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, dict):
            raise WireError(f"{path}: expected an object")
        return
    if tp is float:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise WireError(f"{path}: expected a number")
        return
    if isinstance(tp, type):
        if tp is int and isinstance(value, bool):
            raise WireError(f"{path}: expected an int")
        if not isinstance(value, tp):
            raise WireError(f"{path}: expected {tp.__name__}, got {type(value).__name__}")
        return
    raise WireError(f"{path}: cannot check type {tp!r}")


def check_openai_messages(messages: list[dict[str, Any]]) -> None:
    """``messages`` is a valid chat-completions ``messages`` array, tool pairs intact."""
    from openai.types.chat import ChatCompletionMessageParam

    check_typed(messages, list[ChatCompletionMessageParam])
    every_id = [
        c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or ()
    ]
    if len(set(every_id)) != len(every_id):
        raise WireError(f"tool call ids repeat in one request: {every_id}")
    i = 0
    while i < len(messages):
        m = messages[i]
        if m["role"] == "tool":
            raise WireError(f"$[{i}]: a tool message that follows no assistant tool_calls")
        if m["role"] == "assistant":
            if not m.get("content") and not m.get("tool_calls"):
                raise WireError(f"$[{i}]: an empty assistant message")
            ids = [c["id"] for c in m.get("tool_calls") or ()]
            answered = []
            while i + 1 < len(messages) and messages[i + 1]["role"] == "tool":
                i += 1
                answered.append(messages[i]["tool_call_id"])
            if sorted(ids) != sorted(answered):
                raise WireError(f"$[{i}]: tool calls {ids} answered by {answered}")
        i += 1


def check_anthropic_messages(system: Any, messages: list[dict[str, Any]]) -> None:
    """``messages`` is a valid Messages ``messages`` array: types, alternation, pairs."""
    from anthropic.types import MessageParam

    check_typed(messages, list[MessageParam])
    if system is not None and not isinstance(system, str):
        check_typed(system, list[Any])
    if not messages or messages[0]["role"] != "user":
        raise WireError("the first message must be a user message")
    every_id = [
        b["id"]
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    if len(set(every_id)) != len(every_id):
        raise WireError(f"tool_use ids repeat in one request: {every_id}")
    for i, m in enumerate(messages):
        if i and messages[i - 1]["role"] == m["role"]:
            raise WireError(f"$[{i}]: two {m['role']} messages in a row")
        blocks = m["content"] if isinstance(m["content"], list) else []
        if not blocks and not (isinstance(m["content"], str) and m["content"]):
            raise WireError(f"$[{i}]: empty content")
        for b in blocks:
            if b["type"] == "text" and not b["text"]:
                raise WireError(f"$[{i}]: an empty text block")
        calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
        if m["role"] == "user":
            results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
            prev = messages[i - 1]["content"] if i else []
            issued = [b["id"] for b in prev if isinstance(prev, list) and b["type"] == "tool_use"]
            if sorted(results) != sorted(issued):
                raise WireError(f"$[{i}]: results {results} for calls {issued}")
            kinds = [b["type"] for b in blocks]
            if results and kinds[: len(results)] != ["tool_result"] * len(results):
                raise WireError(f"$[{i}]: tool results must come first in the user message")
        elif calls and i == len(messages) - 1:
            raise WireError(f"$[{i}]: tool calls at the end of the request have no results")
