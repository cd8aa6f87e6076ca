"""Where a provider is reached and how: base URL, API key, client options and defaults.

A local model server needs no key (:func:`is_local_url`, :data:`LOCAL_API_KEY`); a base URL
must be an ``http(s)`` URL with a host (:func:`check_base_url`); a caller's SDK client gets
``timeout``/``max_retries`` on a copy (:func:`adopt_client`). Neither SDK is imported here.
"""

from __future__ import annotations

import ipaddress
import math
import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from sessiontree.errors import ModelConfigError

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_TIMEOUT_S",
    "LOCAL_API_KEY",
    "adopt_client",
    "check_base_url",
    "check_positive",
    "is_local_url",
    "read_tokens",
    "resolve_endpoint",
    "timeout_seconds",
]

LOCAL_API_KEY = "sessiontree-local"
"""The placeholder API key sent to a local model server when no key is configured."""

DEFAULT_MAX_OUTPUT_TOKENS = 8192
"""The output cap (tokens) of a request that must name one and was given none: every
Anthropic request (the API needs ``max_tokens``) and every summary."""

DEFAULT_TIMEOUT_S = 600.0
"""Seconds a model's client allows for each phase of a request (connect, send, wait for the
answer) unless told otherwise."""


def is_local_url(url: str | None) -> bool:
    """Whether ``url`` names a server on this machine or the local network.

    True for ``localhost`` (and ``*.localhost``) and for loopback, private and link-local IP
    addresses — where llama.cpp, vLLM, Ollama or LM Studio usually run without an API key.
    """
    if not url:
        return False
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def resolve_endpoint(
    base_url: str | None, api_key: str | None, *, url_env: str, key_env: str
) -> tuple[str | None, str | None]:
    """``(base_url, api_key)`` from the arguments, else the SDK's environment variables
    (``url_env``, ``key_env``); a local server (:func:`is_local_url`) without a key gets
    :data:`LOCAL_API_KEY`. ``None`` where nothing is set (the SDK's own default URL)."""
    url = base_url or os.environ.get(url_env) or None
    key = api_key or os.environ.get(key_env) or None
    if key is None and is_local_url(url):
        key = LOCAL_API_KEY
    return url, key


def check_base_url(url: str | None, who: str) -> None:
    """Raise :class:`~sessiontree.errors.ModelConfigError` (naming ``who``) unless ``url``
    (when given) is an ``http``/``https`` URL with a host."""
    if url is None:
        return
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host, parts = None, None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise ModelConfigError(
            f"{who}: base URL {url!r} is not an http(s) URL with a host "
            "(e.g. http://localhost:11434/v1)"
        )


def timeout_seconds(timeout: Any) -> float | None:
    """The overall seconds of an SDK client's timeout (a number or an ``httpx`` ``Timeout``);
    ``None`` when it has none."""
    if isinstance(timeout, int | float):
        return float(timeout)
    read = getattr(timeout, "read", None)
    return float(read) if isinstance(read, int | float) else None


def check_positive(**limits: int | None) -> None:
    """Raise ``ValueError`` naming the first limit (tokens) that is set but not positive."""
    for name, value in limits.items():
        if value is not None and value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")


def adopt_client(
    client: Any,
    *,
    base_url: str | None,
    api_key: str | None,
    timeout: float | None,
    max_retries: int | None,
) -> Any:
    """A caller's SDK client with ``timeout``/``max_retries`` applied to a copy (the caller's
    client is never changed); the client itself when neither is given.

    Raises:
        ValueError: ``base_url`` or ``api_key`` passed together with a client.
    """
    if base_url is not None or api_key is not None:
        raise ValueError("pass either client or base_url/api_key, not both")
    options: dict[str, Any] = {}
    if timeout is not None:
        options["timeout"] = timeout
    if max_retries is not None:
        options["max_retries"] = max_retries
    return client.with_options(**options) if options else client


def _token_count(value: Any) -> int | None:
    if value is None:
        return 0
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value.is_integer():
        return int(value)
    return None


def read_tokens(usage: Any, names: Sequence[str]) -> list[int] | None:
    """The token counts ``names`` of an SDK usage object, in order.

    A field the server left out (or sent as ``null``) counts ``0``. ``None`` when any field
    holds something that is not a whole number ``>= 0`` (a string, a list, a negative or
    fractional number): the SDKs pass such values through unchecked, and the caller records
    the usage as unknown rather than fail on the answer it belongs to.
    """
    counts: list[int] = []
    for name in names:
        count = _token_count(getattr(usage, name, None))
        if count is None:
            return None
        counts.append(count)
    return counts
