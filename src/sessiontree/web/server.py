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

__all__ = ["serve_in_thread"]


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

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    try:
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the web server did not start")
            time.sleep(0.02)
        yield f"http://{host}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(start_timeout)
        sock.close()
