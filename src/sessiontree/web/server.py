"""Running the viewer in a background thread (tests, benchmarks, notebooks).

``sessiontree serve`` runs uvicorn in the foreground; :func:`serve_in_thread` runs the same
server in a daemon thread on an already-bound loopback socket, so the port is known before
the server starts and nothing else can take it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["GRACEFUL_SECONDS", "bind", "serve_forever", "serve_in_thread", "url_of"]

GRACEFUL_SECONDS = 2
"""How long a stopping server waits for open responses (a page's live event stream never
ends by itself) before it closes them."""


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host``:``port`` (``port=0``: a free one), IPv6 for an
    address with a colon.

    Raises:
        OSError: the address cannot be bound (in use, not this machine's).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(128)  # connections wait in the backlog until the server accepts them
    except OSError:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    """``http://HOST:PORT`` of a bound socket."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve_forever(app: Any, sock: socket.socket) -> None:
    """Serve ``app`` with uvicorn on the bound ``sock`` until interrupted (Ctrl-C)."""
    import uvicorn

    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", timeout_graceful_shutdown=GRACEFUL_SECONDS
    )
    uvicorn.Server(config).run(sockets=[sock])


@contextlib.contextmanager
def serve_in_thread(
    app: Any, *, host: str = "127.0.0.1", port: int = 0, start_timeout: float = 20.0
) -> Iterator[str]:
    """Serve the ASGI ``app`` with uvicorn in a thread; yields the base URL
    (``http://127.0.0.1:PORT``). ``port=0`` takes a free port. Stops the server on exit.

    Raises:
        RuntimeError: the server did not start within ``start_timeout`` seconds.
        OSError: ``host``/``port`` cannot be bound.
    """
    import uvicorn

    sock = bind(host, port)
    server = uvicorn.Server(
        uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=GRACEFUL_SECONDS
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    try:
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the web server did not start")
            time.sleep(0.02)
        yield url_of(sock)
    finally:
        server.should_exit = True
        thread.join(start_timeout)
        sock.close()
