"""OpenAI chat completions (and every compatible server): the rules sessiontree applies.

The environment variables of the endpoint and key, the output cap's field name (OpenAI
itself takes ``max_completion_tokens``, compatible servers ``max_tokens``), the reasoning
effort per thinking level, the stop-reason map, the usage map (cached prompt tokens moved to
``cache_read``) and the ``<think>`` block that reasoning models served by llama.cpp, Ollama
or vLLM without a reasoning parser put in front of the answer. The ``openai`` SDK is not
imported here.
"""

from __future__ import annotations

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
    "ThinkSplitter",
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


class ThinkSplitter:
    """Splits an answer's text, as it streams, into thinking and answer text.

    Reasoning models served without a reasoning parser (llama.cpp, Ollama, vLLM) write their
    reasoning first, inside ``<think>…</think>``, in the answer's text. Fed the text in
    pieces of any size, :meth:`feed` returns ``(kind, text)`` pieces, ``kind`` ``"thinking"``
    or ``"text"``: what is inside a leading ``<think>`` block (whitespace after ``<think>``
    dropped) is thinking, what follows it (whitespace after ``</think>`` dropped) is text; a
    text that does not start with ``<think>`` (after whitespace) is text as it is. Whatever
    the pieces, the result is the same; a block left open at the end is all thinking (the
    answer was cut off while the model reasoned).

    Attributes:
        found: a leading ``<think>`` was seen.
    """

    _OPEN = "<think>"
    _CLOSE = "</think>"

    def __init__(self) -> None:
        self._state = "start"
        self._buffer = ""
        self._lead = False
        self.found = False

    def feed(self, piece: str) -> list[tuple[str, str]]:
        """The thinking and text pieces ``piece`` completes (possibly none: a piece that may
        begin ``<think>`` or end in part of ``</think>`` is held back until it is known)."""
        out: list[tuple[str, str]] = []
        self._buffer += piece
        while True:
            buffer = self._buffer
            if self._state == "start":
                stripped = buffer.lstrip()
                if stripped.startswith(self._OPEN):
                    self._buffer = stripped[len(self._OPEN) :]
                    self._state, self._lead, self.found = "think", True, True
                    continue
                if self._OPEN.startswith(stripped):
                    return out
                self._state = "text"
            elif self._state == "think":
                if self._lead:
                    buffer = self._buffer = buffer.lstrip()
                    if not buffer:
                        return out
                    self._lead = False
                end = buffer.find(self._CLOSE)
                if end >= 0:
                    _emit(out, "thinking", buffer[:end])
                    self._buffer = buffer[end + len(self._CLOSE) :]
                    self._state = "gap"
                    continue
                keep = next(
                    (
                        n
                        for n in range(len(self._CLOSE) - 1, 0, -1)
                        if buffer.endswith(self._CLOSE[:n])
                    ),
                    0,
                )
                _emit(out, "thinking", buffer[: len(buffer) - keep])
                self._buffer = buffer[len(buffer) - keep :]
                return out
            elif self._state == "gap":
                self._buffer = buffer.lstrip()
                if not self._buffer:
                    return out
                self._state = "text"
            else:
                _emit(out, "text", buffer)
                self._buffer = ""
                return out

    def flush(self) -> list[tuple[str, str]]:
        """What is held back, at the end of the answer: text that only looked like the start
        of ``<think>``, or the rest of a block left open (thinking)."""
        buffer, self._buffer = self._buffer, ""
        out: list[tuple[str, str]] = []
        if self._state == "start":
            _emit(out, "text", buffer)
        elif self._state == "think":
            _emit(out, "thinking", buffer)
        return out


def _emit(out: list[tuple[str, str]], kind: str, text: str) -> None:
    if text:
        out.append((kind, text))


def split_think(text: str) -> tuple[str, str]:
    """``(thinking, answer)`` of a whole answer's ``text`` (:class:`ThinkSplitter`'s rule):
    the inside of a leading ``<think>`` block, stripped, and the rest; ``("", text)`` when it
    does not start with one."""
    splitter = ThinkSplitter()
    pieces = splitter.feed(text) + splitter.flush()
    thinking = "".join(t for kind, t in pieces if kind == "thinking")
    return thinking.strip(), "".join(t for kind, t in pieces if kind == "text")


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
