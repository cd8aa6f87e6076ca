"""Local fake LLM servers for tests: real HTTP on 127.0.0.1, each API's wire format.

:class:`FakeLLMServer` is a stdlib ``ThreadingHTTPServer`` on a random loopback port, run in
a daemon thread. It records every request it receives (path, headers, decoded JSON body) and
answers from a script of :class:`Reply` objects, the last one repeating. The helpers
:func:`openai_completion`, :func:`openai_error`, :func:`anthropic_message` and
:func:`anthropic_error` build bodies shaped like the OpenAI chat-completions API
(``POST /v1/chat/completions``) and the Anthropic messages API (``POST /v1/messages``), close
enough for the official SDKs to parse. No test using them reaches the internet.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

__all__ = [
    "FakeLLMServer",
    "Reply",
    "ReceivedRequest",
    "anthropic_error",
    "anthropic_message",
    "fake_server",
    "openai_completion",
    "openai_error",
    "unused_port",
]


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    Attributes:
        body: a JSON-able object (sent as ``application/json``) or raw bytes.
        status: the HTTP status code.
        delay_s: seconds to wait before answering (to provoke client timeouts).
        headers: extra response headers (e.g. ``retry-after-ms`` to make SDK retries fast).
    """

    body: Any
    status: int = 200
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ReceivedRequest:
    """A request as the server saw it: method, path, lower-cased headers, decoded JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeLLMServer:
    """A scripted HTTP server on ``127.0.0.1`` (random port), served from a daemon thread.

    Use as a context manager (or call :meth:`start` / :meth:`stop`). Each request takes the
    next :class:`Reply` of the script; the last one answers every further request.

    Attributes:
        requests: every request received, in arrival order.
    """

    def __init__(self, *replies: Reply) -> None:
        self._replies = list(replies) or [Reply(body={}, status=404)]
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.requests: list[ReceivedRequest] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` — the root, without a path."""
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply) -> None:
        """Replace the remaining script with ``replies``."""
        with self._lock:
            self._replies = list(replies)

    def _next_reply(self, request: ReceivedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if len(self._replies) > 1:
                return self._replies.pop(0)
            return self._replies[0]

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = orjson.loads(raw) if raw else None
                except orjson.JSONDecodeError:
                    body = raw
                request = ReceivedRequest(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                reply = owner._next_reply(request)
                if reply.delay_s and owner._closing.wait(reply.delay_s):
                    return
                payload = reply.body if isinstance(reply.body, bytes) else orjson.dumps(reply.body)
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (timeout) and closed the socket
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def start(self) -> FakeLLMServer:
        """Start serving in the background; returns ``self``."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake any delayed reply, and close the listening socket."""
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def fake_server(*replies: Reply) -> Iterator[FakeLLMServer]:
    """A started :class:`FakeLLMServer`, stopped on exit."""
    with FakeLLMServer(*replies) as server:
        yield server


def unused_port() -> int:
    """A loopback TCP port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------- OpenAI wire format


def openai_completion(
    text: str | None,
    *,
    prompt_tokens: int = 1200,
    completion_tokens: int = 150,
    cached_tokens: int | None = 200,
    finish_reason: str = "stop",
    model: str = "fake-model",
    usage: bool = True,
) -> dict[str, Any]:
    """A ``chat.completion`` object with one choice whose content is ``text``.

    ``prompt_tokens`` includes ``cached_tokens`` (as OpenAI reports it); ``usage=False``
    leaves usage out, as some local servers do.
    """
    body: dict[str, Any] = {
        "id": "chatcmpl-fake-1",
        "object": "chat.completion",
        "created": 1_764_460_800,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if cached_tokens is not None:
            body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return body


def openai_error(message: str, *, type: str = "server_error") -> dict[str, Any]:
    """An OpenAI error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type, "param": None, "code": None}}


# --------------------------------------------------------------------------- Anthropic wire format


def anthropic_message(
    text: str | None,
    *,
    input_tokens: int = 1000,
    output_tokens: int = 120,
    cache_read_input_tokens: int = 300,
    cache_creation_input_tokens: int = 50,
    stop_reason: str = "end_turn",
    model: str = "fake-claude",
) -> dict[str, Any]:
    """A ``message`` object whose content is one text block (none when ``text`` is ``None``)."""
    content = [] if text is None else [{"type": "text", "text": text}]
    return {
        "id": "msg_fake_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read_input_tokens,
            "cache_creation_input_tokens": cache_creation_input_tokens,
        },
    }


def anthropic_error(message: str, *, type: str = "api_error") -> dict[str, Any]:
    """An Anthropic error body: ``{"type": "error", "error": {"type", "message"}}``."""
    return {"type": "error", "error": {"type": type, "message": message}}
