"""OpenAI chat completions (and every compatible server): the rules sessiontree applies.

The environment variables of the endpoint and key, the output cap's field name (OpenAI
itself takes ``max_completion_tokens``, compatible servers ``max_tokens``), the reasoning
effort per thinking level, the stop-reason map, the usage map (cached prompt tokens moved to
``cache_read``) and the ``<think>`` block that reasoning models served by llama.cpp, Ollama
or vLLM without a reasoning parser put in front of the answer. The ``openai`` SDK is not
imported here.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sessiontree.messages import Usage
from sessiontree.providers.endpoint import read_tokens

if TYPE_CHECKING:
    from openai.types import CompletionUsage

__all__ = [
    "API",
    "EFFORT",
    "KEY_ENV",
    "OPENAI_HOST",
    "STOP_REASONS",
    "URL_ENV",
    "cap_field",
    "openai_usage",
    "split_think",
    "stop_reason",
]

API = "openai-completions"
"""The ``api`` written on the messages of this wire protocol."""
URL_ENV = "OPENAI_BASE_URL"
"""The environment variable holding the base URL (the ``openai`` SDK's own)."""
KEY_ENV = "OPENAI_API_KEY"
"""The environment variable holding the API key (the ``openai`` SDK's own)."""
OPENAI_HOST = "api.openai.com"
"""OpenAI's own API host."""

STOP_REASONS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}
"""sessiontree's stop reason by ``finish_reason``; any other (``content_filter``) is
``error``."""
_FAILED = {"content_filter": "the answer was withheld by a content filter"}

EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
"""``reasoning_effort`` by thinking level (``off`` sends none)."""

_THINK_BLOCK = re.compile(r"\A\s*<think>(.*?)</think>\s*", re.DOTALL)


def cap_field(base_url: str) -> str:
    """The request field of the output cap at ``base_url``: ``max_completion_tokens`` for
    OpenAI itself, ``max_tokens`` (the field every compatible server knows) elsewhere."""
    return "max_completion_tokens" if urlsplit(base_url).hostname == OPENAI_HOST else "max_tokens"


def stop_reason(finish: str, refusal: str | None = None) -> tuple[str, str]:
    """``(stop_reason, vendor_reason)`` of an answer that ended with ``finish``.

    ``vendor_reason`` is ``"finish_reason '<value>'"``, led by what went wrong when the stop
    reason is ``error``: a ``refusal`` the model sent, or a content filter.
    """
    reason = f"finish_reason {finish!r}"
    if refusal:
        return "error", f"the model refused: {refusal} ({reason})"
    ours = STOP_REASONS.get(finish, "error")
    if ours == "error" and finish in _FAILED:
        reason = f"{_FAILED[finish]} ({reason})"
    return ours, reason


def split_think(text: str) -> tuple[str, str]:
    """``(thinking, answer)``: a leading ``<think>…</think>`` block of ``text`` taken out
    (its inside, stripped), and the rest; ``("", text)`` when there is none."""
    found = _THINK_BLOCK.match(text)
    if found is None:
        return "", text
    return found.group(1).strip(), text[found.end() :]


def openai_usage(usage: CompletionUsage | None) -> Usage | None:
    """The SDK's ``CompletionUsage`` as a :class:`~sessiontree.messages.Usage` (tokens).

    OpenAI counts cached prompt tokens inside ``prompt_tokens``; they are moved to
    ``cache_read`` so that ``input`` is the uncached part. ``cache_write`` is ``0`` (OpenAI
    does not report it). Returns ``None`` when the server reported no usage, or usage that
    is malformed (a count that is not a whole number ``>= 0``: the usage is unknown).
    """
    if usage is None:
        return None
    counts = read_tokens(usage, ("prompt_tokens", "completion_tokens", "total_tokens"))
    details: Any = getattr(usage, "prompt_tokens_details", None)
    cached = read_tokens(details, ("cached_tokens",))
    if counts is None or cached is None:
        return None
    prompt, output, total = counts
    return Usage(
        input=max(prompt - cached[0], 0),
        output=output,
        cache_read=cached[0],
        cache_write=0,
        total_tokens=total or prompt + output,
    )
