"""Holding a session's writer lease while code writes to it (docs/harness.md "One writer per
session").

:class:`LeasePolicy` says how a writer takes the lease (fail at once when another holds it,
or wait up to a time), how long it lasts and how often it is renewed. :func:`hold_lease`
takes it, makes it the lease the code inside the ``async with`` writes under
(:data:`sessiontree.storage.lease.WRITER`: every write to the session from that code and the
tasks it starts is checked against it, atomically), renews it in the background and releases
it at the end. :class:`~sessiontree.harness.AgentHarness` holds one for each run when given
``lease=``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal

from sessiontree.errors import InvalidArgumentError, LeaseLostError, SessionBusyError
from sessiontree.ids import new_id, now_ms
from sessiontree.session import Session
from sessiontree.storage.lease import WRITER, Lease

__all__ = [
    "DEFAULT_LEASE_TTL_S",
    "DEFAULT_LEASE_WAIT_S",
    "LeaseMode",
    "LeasePolicy",
    "acquire",
    "hold_lease",
    "keep_lease",
    "new_owner",
]

LeaseMode = Literal["fail", "wait"]
"""When another writer holds the lease: raise :class:`~sessiontree.errors.SessionBusyError`
at once (``fail``), or wait for it to be released or to expire (``wait``)."""

DEFAULT_LEASE_TTL_S = 15.0
"""How long a lease lasts unless renewed (seconds): how long a writer that died unreleased
keeps others out."""
DEFAULT_LEASE_WAIT_S = 30.0
"""How long ``wait`` waits for the lease at most (seconds)."""

_POLL_S = 0.05
"""The shortest pause between two tries of a waiting writer (seconds)."""


@dataclass(frozen=True, slots=True)
class LeasePolicy:
    """How a writer takes and keeps a session's writer lease.

    Raises (constructor):
        InvalidArgumentError: an unknown mode, or a time that is not a positive number
            (``wait_s`` may be 0), or ``renew_s`` not below ``ttl_s``.
    """

    mode: LeaseMode = "fail"
    """:data:`LeaseMode`."""
    ttl_s: float = DEFAULT_LEASE_TTL_S
    """How long the lease lasts unless renewed (seconds)."""
    wait_s: float = DEFAULT_LEASE_WAIT_S
    """``wait``: give up (:class:`~sessiontree.errors.SessionBusyError`) after this long
    (seconds)."""
    renew_s: float | None = None
    """How often the holder renews (seconds); ``None``: a third of ``ttl_s``."""

    def __post_init__(self) -> None:
        if self.mode not in ("fail", "wait"):
            raise InvalidArgumentError(f"lease mode must be 'fail' or 'wait', not {self.mode!r}")
        for name, value, zero_ok in (
            ("ttl_s", self.ttl_s, False),
            ("wait_s", self.wait_s, True),
            ("renew_s", self.renew_s if self.renew_s is not None else 1.0, False),
        ):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (value >= 0 if zero_ok else value > 0)
            ):
                raise InvalidArgumentError(f"{name} must be a positive number, not {value!r}")
        if self.renew_s is not None and self.renew_s >= self.ttl_s:
            raise InvalidArgumentError(
                f"renew_s ({self.renew_s}) must be below ttl_s ({self.ttl_s}): the lease would "
                "expire between renewals"
            )

    @property
    def renew_every_s(self) -> float:
        """The renewal period (seconds)."""
        return self.renew_s if self.renew_s is not None else self.ttl_s / 3


def new_owner() -> str:
    """A new owner token: ``host/pid/random``, unique per holder and readable in a busy error."""
    return f"{socket.gethostname()}/{os.getpid()}/{new_id()}"


async def acquire(session: Session, owner: str, policy: LeasePolicy) -> Lease:
    """Take ``session``'s lease for ``owner`` as ``policy`` says (at once, or waiting).

    Raises:
        SessionBusyError: another writer holds it (``fail``), or still held it when
            ``wait_s`` ran out (``wait``).
        StorageError: the storage keeps no lease.
    """
    deadline = now_ms() + round(policy.wait_s * 1000)
    while True:
        try:
            return await session.acquire_lease(owner, ttl_s=policy.ttl_s)
        except SessionBusyError as busy:
            now = now_ms()
            if policy.mode == "fail" or now >= deadline:
                raise
            # try again when it expires, or sooner (it may be released), within the deadline
            pause_ms = min(busy.expires_ms - now, deadline - now, 1000)
            await asyncio.sleep(max(pause_ms / 1000, _POLL_S))


async def _renew(session: Session, lease: Lease, policy: LeasePolicy, stop: asyncio.Event) -> None:
    """Renew ``lease`` every :attr:`LeasePolicy.renew_every_s` until ``stop`` is set or the
    lease is lost (the holder's next write then raises
    :class:`~sessiontree.errors.LeaseLostError`). A renewal the store refuses for another
    reason is tried again at the next period. Never cancelled mid-renewal (``stop`` ends
    it between two), so no store operation is cut short."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), policy.renew_every_s)
            return
        try:
            lease = await session.renew_lease(lease, ttl_s=policy.ttl_s)
        except LeaseLostError:
            return
        except Exception:
            continue


@contextlib.asynccontextmanager
async def hold_lease(
    session: Session, policy: LeasePolicy | None = None, *, owner: str | None = None
) -> AsyncIterator[Lease]:
    """Hold ``session``'s writer lease for the ``async with`` block: taken (as ``policy``
    says), written under by the block and the tasks it starts, renewed in the background,
    released at the end (also on an error). Yields the lease as granted.

    Raises:
        SessionBusyError: it could not be taken; the block does not run.
        LeaseLostError: (from a write in the block) another writer took it over; that
            write changed nothing.
        StorageError: the storage keeps no lease.
    """
    policy = policy or LeasePolicy()
    lease = await acquire(session, owner or new_owner(), policy)
    async with keep_lease(session, lease, policy):
        yield lease


@contextlib.asynccontextmanager
async def keep_lease(session: Session, lease: Lease, policy: LeasePolicy) -> AsyncIterator[None]:
    """The part of :func:`hold_lease` after the lease is taken: ``lease`` written under by the
    block, renewed in the background and released at the end."""
    token = WRITER.set(lease)
    stop = asyncio.Event()
    renewer = asyncio.create_task(_renew(session, lease, policy, stop))
    try:
        yield
    finally:
        WRITER.reset(token)
        stop.set()
        # the renewal under way finishes, then the lease is released; a cancellation of
        # the holder meanwhile waits for both (the lease is never left held by mistake)
        ending = asyncio.ensure_future(_end(session, lease, renewer))
        try:
            await asyncio.shield(ending)
        except asyncio.CancelledError:
            await ending
            raise


async def _end(session: Session, lease: Lease, renewer: asyncio.Task[None]) -> None:
    """Wait for the renewer to stop, then release ``lease`` (a store error is ignored: the
    lease then expires on its own)."""
    with contextlib.suppress(Exception):
        await renewer
    with contextlib.suppress(Exception):
        await session.release_lease(lease)
