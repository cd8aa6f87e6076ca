"""Local fake LLM servers for tests: real HTTP on 127.0.0.1, each API's wire format.

Besides fixed :class:`Reply` bodies, a script may hold :class:`Say` (a model answer —
text, thinking, tool calls — rendered for the API the request came to, as server-sent
events when the request asks for ``stream``, else as one JSON body; optionally cut off
mid-stream or left hanging), :class:`Fail` (an error status with the API's error body and
headers such as ``retry-after``) or a callable ``(ReceivedRequest) -> Reply | Say | Fail``
that decides per request.

Routes (the query string is ignored): ``…/messages`` speaks the Anthropic messages API,
``…/responses`` the OpenAI Responses API (the events Codex reads), any other ``POST`` OpenAI
chat completions; ``…/count_tokens`` gets a token count without taking a reply from the
script. Every answer carries a fresh id and the API's request-id header, as from a real
provider.

:class:`FakeLLMServer` is a stdlib ``ThreadingHTTPServer`` on a random loopback port, run in
a daemon thread. It records every request it receives (path, headers, decoded JSON body) and
answers from a script of :class:`Reply` objects, the last one repeating. The helpers
:func:`openai_completion`, :func:`openai_error`, :func:`anthropic_message` and
:func:`anthropic_error` build bodies shaped like the OpenAI chat-completions API
(``POST /v1/chat/completions``) and the Anthropic messages API (``POST /v1/messages``), close
enough for the official SDKs to parse. No test using them reaches the internet.
"""

from __future__ import annotations

import itertools
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

__all__ = [
    "Fail",
    "FakeLLMServer",
    "Say",
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
class Say:
    """A scripted model answer, rendered in the wire format of the API it is asked through.

    Attributes:
        text: the answer text (sent in ``chunk``-sized deltas).
        thinking: reasoning text (Anthropic ``thinking`` block with ``signature``; OpenAI
            ``reasoning_content`` deltas).
        tool_calls: ``(id, name, arguments)`` triples; several = parallel tool calls.
        stop: the provider's stop reason; by default ``tool_calls``/``tool_use`` when there
            are calls, else ``stop``/``end_turn``.
        input_tokens / output_tokens / cached_tokens: the usage reported.
        cut_after: stream only this many events, then drop the connection mid-body.
        hang_after: stream this many events, then wait (until the client goes away or the
            server stops) — to abort a stream in flight.
        chunk: characters of text per delta.
        signature: the thinking block's signature (Anthropic).
        usage: when set, sent as the usage object instead of the counts above, as it is
            (OpenAI: the last chunk's ``usage``; Anthropic: ``message_delta``'s) — to send
            malformed usage.
        error: ``(type, message)`` of an error event sent after the first two events in
            place of the rest of the stream (Anthropic's ``event: error``; OpenAI's chunk
            holding ``error``; the Responses API's ``error`` event), as a provider reports a
            failure mid-stream with status 200.
        model: the model name the answer reports; ``None``: ``fake-claude`` (Anthropic),
            ``fake-model`` (OpenAI chat completions), the requested model (Responses API).
        pace_s: seconds between two streamed events (a slow stream); each event is written
            on its own and logged in :attr:`FakeLLMServer.sent` with the time it was sent.
    """

    text: str = ""
    thinking: str = ""
    tool_calls: tuple[tuple[str, str, dict[str, Any]], ...] = ()
    stop: str | None = None
    input_tokens: int = 100
    output_tokens: int = 20
    cached_tokens: int = 0
    cut_after: int | None = None
    hang_after: int | None = None
    chunk: int = 8
    signature: str = "sig-1"
    usage: Any = None
    error: tuple[str, str] | None = None
    model: str | None = None
    pace_s: float = 0.0


@dataclass(frozen=True)
class Fail:
    """A scripted error: ``status`` with the API's error body saying ``message``."""

    status: int
    message: str = "server error"
    headers: dict[str, str] = field(default_factory=dict)
    type: str | None = None


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

    With ``api_key`` set, every request carrying another key (``authorization: Bearer`` or
    ``x-api-key``) gets the API's 401, as a real provider answers a rejected key. With
    ``models`` set, ``GET .../models`` lists them and ``GET .../models/<id>`` returns one or
    the API's 404 naming the unknown model; without it a ``GET`` gets 501, as from a server
    without a models endpoint.

    Attributes:
        requests: every ``POST`` received, in arrival order.
        gets: every ``GET`` received, in arrival order.
        sent: ``(time.time(), event bytes)`` of every event of a paced stream
            (:attr:`Say.pace_s`), after it was written to the socket.
    """

    def __init__(
        self, *replies: Any, api_key: str | None = None, models: Iterable[str] | None = None
    ) -> None:
        self._replies: list[Any] = list(replies) or [Reply(body={}, status=404)]
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.requests: list[ReceivedRequest] = []
        self.gets: list[ReceivedRequest] = []
        self.sent: list[tuple[float, bytes]] = []
        self.api_key = api_key
        self.models = None if models is None else list(models)
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

    def script(self, *replies: Any) -> None:
        """Replace the remaining script with ``replies``."""
        with self._lock:
            self._replies = list(replies)

    def _next_reply(self, request: ReceivedRequest) -> Any:
        with self._lock:
            self.requests.append(request)
            if len(self._replies) > 1:
                reply = self._replies.pop(0)
            else:
                reply = self._replies[0]
        return reply(request) if callable(reply) else reply

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body leave at once, no ACK wait

            def _rejected(self, headers: dict[str, str], anthropic: bool) -> bool:
                if owner.api_key is None:
                    return False
                given = headers.get("x-api-key") or headers.get("authorization", "")
                if given.removeprefix("Bearer ") == owner.api_key:
                    return False
                fail = _fail_reply(Fail(401, "invalid x-api-key"), anthropic=anthropic)
                self._send(401, orjson.dumps(fail.body), {})
                return True

            def do_GET(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                request = ReceivedRequest("GET", self.path, headers, None)
                with owner._lock:
                    owner.gets.append(request)
                anthropic = "anthropic-version" in headers
                if self._rejected(headers, anthropic):
                    return
                if owner.models is None:
                    self._send(501, b'{"detail": "Not Implemented"}', {})
                    return
                path = urllib.parse.urlsplit(self.path).path
                if path.endswith("/models"):
                    data = [_model_object(m, anthropic=anthropic) for m in owner.models]
                    listing: dict[str, Any] = {"data": data}
                    if anthropic:
                        listing.update(has_more=False, first_id=None, last_id=None)
                    else:
                        listing["object"] = "list"
                    self._send(200, orjson.dumps(listing), {})
                    return
                _, _, wanted = path.partition("/models/")
                wanted = urllib.parse.unquote(wanted)
                if wanted in owner.models:
                    self._send(200, orjson.dumps(_model_object(wanted, anthropic=anthropic)), {})
                    return
                if anthropic:
                    body = anthropic_error(f"model: {wanted}", type="not_found_error")
                else:
                    body = openai_error(
                        f"The model `{wanted}` does not exist or you do not have access to it.",
                        type="invalid_request_error",
                    )
                    body["error"]["code"] = "model_not_found"
                self._send(404, orjson.dumps(body), {})

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
                route = _route(request.path)
                anthropic = route.endswith("/messages")
                api = "anthropic" if anthropic else "openai"
                if route.endswith("/responses"):
                    api = "responses"
                if self._rejected(request.headers, anthropic):
                    with owner._lock:
                        owner.requests.append(request)
                    return
                if route.endswith("/count_tokens"):
                    with owner._lock:
                        owner.requests.append(request)
                    self._send(200, orjson.dumps({"input_tokens": 100}), {})
                    return
                reply = owner._next_reply(request)
                if isinstance(reply, Fail):
                    reply = _fail_reply(reply, anthropic=anthropic)
                if isinstance(reply, Say):
                    model = body.get("model") if isinstance(body, dict) else None
                    if isinstance(body, dict) and body.get("stream"):
                        events = _EVENTS[api](reply, model)
                        if reply.error is not None:
                            events = [*events[:2], _error_event(reply.error, api=api)]
                        self._stream(events, reply, _request_id(api))
                    else:
                        payload = orjson.dumps(_BODIES[api](reply, model))
                        self._send(200, payload, _request_id(api))
                    return
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

            def _send(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass

            def _stream(self, events: list[bytes], say: Say, headers: dict[str, str]) -> None:
                try:
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("transfer-encoding", "chunked")
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if say.cut_after is None and say.hang_after is None and not say.pace_s:
                        # one write: per-event writes of small packets meet delayed ACKs
                        chunks = [f"{len(e):x}\r\n".encode() + e + b"\r\n" for e in events]
                        self.wfile.write(b"".join(chunks) + b"0\r\n\r\n")
                        self.wfile.flush()
                        return
                    for i, event in enumerate(events):
                        if say.cut_after is not None and i >= say.cut_after:
                            self.wfile.flush()
                            self.close_connection = True
                            self.connection.shutdown(socket.SHUT_RDWR)
                            return
                        if say.hang_after is not None and i >= say.hang_after:
                            self.wfile.flush()
                            while not owner._closing.wait(0.05):
                                try:  # an empty SSE comment keeps probing the client
                                    self.wfile.write(b"2\r\n:\n\r\n")
                                    self.wfile.flush()
                                except OSError:
                                    return
                            return
                        self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                        if say.pace_s:
                            self.wfile.flush()
                            owner.sent.append((time.time(), event))
                            if owner._closing.wait(say.pace_s):
                                return
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
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


# --------------------------------------------------------------------------- scripted answers


def _fail_reply(fail: Fail, *, anthropic: bool) -> Reply:
    if anthropic:
        kind = fail.type or {
            400: "invalid_request_error",
            401: "authentication_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(fail.status, "api_error")
        body = anthropic_error(fail.message, type=kind)
    else:
        kind = fail.type or {
            400: "invalid_request_error",
            401: "invalid_api_key",
            429: "rate_limit_exceeded",
        }.get(fail.status, "server_error")
        body = openai_error(fail.message, type=kind)
    return Reply(body=body, status=fail.status, headers=dict(fail.headers))


def _error_event(error: tuple[str, str], *, api: str) -> bytes:
    kind, message = error
    if api == "anthropic":
        return _sse(anthropic_error(message, type=kind), "error")
    if api == "responses":
        event = {"type": "error", "code": kind, "message": message, "sequence_number": 2}
        return _sse(event, "error")
    return _sse(openai_error(message, type=kind))


def _model_object(model_id: str, *, anthropic: bool) -> dict[str, Any]:
    if anthropic:
        return {
            "type": "model",
            "id": model_id,
            "display_name": model_id,
            "created_at": "2025-01-01T00:00:00Z",
        }
    return {"id": model_id, "object": "model", "created": 1, "owned_by": "fake"}


def context_length_message(*, anthropic: bool) -> str:
    """The text each API sends when a request exceeds the context window."""
    if anthropic:
        return "prompt is too long: 250123 tokens > 200000 maximum"
    return (
        "This model's maximum context length is 8192 tokens. However, your messages "
        "resulted in 9000 tokens. Please reduce the length of the messages."
    )


_ANSWERS = itertools.count(1)


def _answer_id(prefix: str) -> str:
    """A fresh id for one rendered answer (``msg_0000000001``…): clients such as Claude Code
    group the lines of one reply by it, so two answers never share one."""
    return f"{prefix}{next(_ANSWERS):010d}"


def _request_id(api: str) -> dict[str, str]:
    """The request-id header a real API sends with each answer (Claude Code records it as the
    line's ``requestId``; usage tools such as ccusage count a reply once by message and
    request id)."""
    if api == "anthropic":
        return {"request-id": _answer_id("req_")}
    return {"x-request-id": _answer_id("req_")}


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), max(size, 1))]


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return head.encode() + b"data: " + orjson.dumps(data) + b"\n\n"


def _openai_stop(say: Say) -> str:
    return say.stop or ("tool_calls" if say.tool_calls else "stop")


def _openai_events(say: Say, requested: Any = None) -> list[bytes]:
    base = {
        "id": _answer_id("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": 1,
        "model": say.model or "fake-model",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return _sse({**base, "choices": [choice]})

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"reasoning_content": p}) for p in _pieces(say.thinking, say.chunk)]
    events += [chunk({"content": p}) for p in _pieces(say.text, say.chunk)]
    for index, (call_id, name, args) in enumerate(say.tool_calls):
        head = {"index": index, "id": call_id, "type": "function"}
        events.append(
            chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        )
        for p in _pieces(orjson.dumps(args).decode(), say.chunk):
            events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]}))
    events.append(chunk({}, _openai_stop(say)))
    usage = {
        "prompt_tokens": say.input_tokens + say.cached_tokens,
        "completion_tokens": say.output_tokens,
        "total_tokens": say.input_tokens + say.cached_tokens + say.output_tokens,
        "prompt_tokens_details": {"cached_tokens": say.cached_tokens},
    }
    if say.usage is not None:
        usage = say.usage
    events.append(_sse({**base, "choices": [], "usage": usage}))
    events.append(b"data: [DONE]\n\n")
    return events


def _openai_body(say: Say, requested: Any = None) -> dict[str, Any]:
    body = openai_completion(
        say.text or None,
        prompt_tokens=say.input_tokens + say.cached_tokens,
        completion_tokens=say.output_tokens,
        cached_tokens=say.cached_tokens,
        finish_reason=_openai_stop(say),
        model=say.model or "fake-model",
    )
    body["id"] = _answer_id("chatcmpl-")
    if say.tool_calls:
        body["choices"][0]["message"]["tool_calls"] = [
            {
                "id": i,
                "type": "function",
                "function": {"name": n, "arguments": orjson.dumps(a).decode()},
            }
            for i, n, a in say.tool_calls
        ]
    return body


def _anthropic_stop(say: Say) -> str:
    return say.stop or ("tool_use" if say.tool_calls else "end_turn")


def _anthropic_blocks(say: Say) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if say.thinking:
        blocks.append({"type": "thinking", "thinking": say.thinking, "signature": say.signature})
    if say.text:
        blocks.append({"type": "text", "text": say.text})
    for call_id, name, args in say.tool_calls:
        blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
    return blocks


def _anthropic_events(say: Say, requested: Any = None) -> list[bytes]:
    usage = {
        "input_tokens": say.input_tokens,
        "output_tokens": 1,
        "cache_read_input_tokens": say.cached_tokens,
        "cache_creation_input_tokens": 0,
    }
    start: dict[str, Any] = {
        "id": _answer_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": say.model or "fake-claude",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events = [_sse({"type": "message_start", "message": start}, "message_start")]
    for index, block in enumerate(_anthropic_blocks(say)):
        kind = block["type"]
        empty = {
            "thinking": {"type": "thinking", "thinking": "", "signature": ""},
            "text": {"type": "text", "text": ""},
            "tool_use": {**block, "input": {}},
        }[kind]
        events.append(
            _sse(
                {"type": "content_block_start", "index": index, "content_block": empty},
                "content_block_start",
            )
        )
        if kind == "thinking":
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in _pieces(block["thinking"], say.chunk)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], say.chunk)]
        else:
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in _pieces(orjson.dumps(block["input"]).decode(), say.chunk)
            ]
        for d in deltas:
            events.append(
                _sse(
                    {"type": "content_block_delta", "index": index, "delta": d},
                    "content_block_delta",
                )
            )
        events.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    events.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": _anthropic_stop(say), "stop_sequence": None},
                "usage": ({"output_tokens": say.output_tokens} if say.usage is None else say.usage),
            },
            "message_delta",
        )
    )
    events.append(_sse({"type": "message_stop"}, "message_stop"))
    return events


def _anthropic_body(say: Say, requested: Any = None) -> dict[str, Any]:
    body = anthropic_message(
        None,
        model=say.model or "fake-claude",
        input_tokens=say.input_tokens,
        output_tokens=say.output_tokens,
        cache_read_input_tokens=say.cached_tokens,
        cache_creation_input_tokens=0,
        stop_reason=_anthropic_stop(say),
    )
    body["content"] = _anthropic_blocks(say)
    body["id"] = _answer_id("msg_")
    return body


# --------------------------------------------------------------------------- OpenAI Responses API


def _responses_items(say: Say) -> list[dict[str, Any]]:
    """The output items of a Responses API answer: reasoning, message, function calls."""
    items: list[dict[str, Any]] = []
    if say.thinking:
        summary = [{"type": "summary_text", "text": say.thinking}]
        items.append({"type": "reasoning", "id": _answer_id("rs_"), "summary": summary})
    if say.text:
        part = {"type": "output_text", "text": say.text, "annotations": []}
        items.append(
            {
                "type": "message",
                "id": _answer_id("msg_"),
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
        )
    for call_id, name, args in say.tool_calls:
        items.append(
            {
                "type": "function_call",
                "id": _answer_id("fc_"),
                "call_id": call_id,
                "name": name,
                "arguments": orjson.dumps(args).decode(),
                "status": "completed",
            }
        )
    return items


def _responses_object(
    say: Say,
    requested: Any,
    status: str,
    output: list[dict[str, Any]],
    response_id: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": response_id or _answer_id("resp_"),
        "object": "response",
        "created_at": 1,
        "model": say.model or (requested if isinstance(requested, str) else "fake-model"),
        "status": status,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": None,
    }
    if status != "in_progress":
        body["usage"] = {
            "input_tokens": say.input_tokens + say.cached_tokens,
            "input_tokens_details": {"cached_tokens": say.cached_tokens},
            "output_tokens": say.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": say.input_tokens + say.cached_tokens + say.output_tokens,
        }
        if say.usage is not None:
            body["usage"] = say.usage
    return body


def _responses_events(say: Say, requested: Any = None) -> list[bytes]:
    """The streamed events of ``POST /v1/responses`` (``response.created`` … ``completed``)."""
    sequence = itertools.count()
    response_id = _answer_id("resp_")
    events: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": next(sequence), **fields}
        events.append(_sse(data, kind))

    emit(
        "response.created",
        response=_responses_object(say, requested, "in_progress", [], response_id),
    )
    items = _responses_items(say)
    for index, item in enumerate(items):
        kind = item["type"]
        at = {"output_index": index, "item_id": item["id"]}
        if kind == "message":
            emit("response.output_item.added", output_index=index, item={**item, "content": []})
            part = item["content"][0]
            emit("response.content_part.added", **at, content_index=0, part={**part, "text": ""})
            for piece in _pieces(part["text"], say.chunk):
                emit("response.output_text.delta", **at, content_index=0, delta=piece, logprobs=[])
            emit("response.output_text.done", **at, content_index=0, text=part["text"], logprobs=[])
            emit("response.content_part.done", **at, content_index=0, part=part)
        elif kind == "function_call":
            started = {**item, "arguments": "", "status": "in_progress"}
            emit("response.output_item.added", output_index=index, item=started)
            for piece in _pieces(item["arguments"], say.chunk):
                emit("response.function_call_arguments.delta", **at, delta=piece)
            emit("response.function_call_arguments.done", **at, arguments=item["arguments"])
        else:
            emit("response.output_item.added", output_index=index, item={**item, "summary": []})
            text = item["summary"][0]["text"]
            for piece in _pieces(text, say.chunk):
                emit("response.reasoning_summary_text.delta", **at, summary_index=0, delta=piece)
            emit("response.reasoning_summary_text.done", **at, summary_index=0, text=text)
        emit("response.output_item.done", output_index=index, item=item)
    emit(
        "response.completed",
        response=_responses_object(say, requested, "completed", items, response_id),
    )
    return events


def _responses_body(say: Say, requested: Any = None) -> dict[str, Any]:
    return _responses_object(say, requested, "completed", _responses_items(say))


_EVENTS = {"anthropic": _anthropic_events, "openai": _openai_events, "responses": _responses_events}
_BODIES = {"anthropic": _anthropic_body, "openai": _openai_body, "responses": _responses_body}


def _route(path: str) -> str:
    """A request path without its query string (``/v1/messages?beta=true`` → ``/v1/messages``)."""
    return path.split("?", 1)[0].rstrip("/")
