"""Writer leases: one writer per running agent (docs/harness.md "One writer per session").

A session's lease is one record beside its entries: the owner token of the writer holding it,
a fence number and an expiry (Unix ms). Taking a lease that is free, released or expired
raises the fence by one; the holder renews the expiry while it runs and releases the lease
when done (the record stays, owner ``""``, so the next holder's fence is higher still).

A write is made *under* a lease when the lease is the current one in its task
(:data:`WRITER`, set by :func:`sessiontree.harness.lease.hold_lease` for the code it runs,
and inherited by the tasks that code starts). Every backend checks such a write's lease in
the same atomic step as the write (SQL: the ``leases`` row read in the append's transaction;
JSONL: the lease file read under the append lock; memory: no ``await`` between check and
write): a writer whose lease another has taken over (a higher fence) gets
:class:`~sessiontree.errors.LeaseLostError` and nothing is written. The check compares
owner and fence only, not the expiry: a lease that ran out but was not taken over is still
the current one, and nobody else can have written under it. Writes not under a lease (no
current lease, or one for another session) are not checked.

The rules are here once; each backend only reads and writes the record atomically.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import orjson

from sessiontree.errors import CorruptSessionError, LeaseLostError, SessionBusyError

__all__ = [
    "WRITER",
    "Lease",
    "LeaseRecord",
    "LeaseSlot",
    "check_fence",
    "grant",
    "record_from_json",
    "release",
    "renew",
    "writing_under",
]


@dataclass(frozen=True, slots=True)
class Lease:
    """A writer lease granted to one writer of one session."""

    session_id: str
    """The session the lease is for."""
    owner: str
    """The holder's owner token (unique per holder; chosen by the holder)."""
    fence: int
    """The fence number: 1 for the first lease of a session, one more at each takeover."""
    expires_ms: int
    """When the lease runs out unless renewed (Unix ms); another writer may take it over then."""


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """A session's stored lease record (owner ``""``: released)."""

    owner: str
    """The holder's owner token; ``""`` once released."""
    fence: int
    """The fence of the newest lease granted."""
    expires_ms: int
    """When it runs out (Unix ms); 0 once released."""

    def to_json(self) -> bytes:
        """The JSON a lease file holds: ``{"owner", "fence", "expiresMs"}``."""
        return orjson.dumps(
            {"owner": self.owner, "fence": self.fence, "expiresMs": self.expires_ms}
        )


def record_from_json(body: bytes, *, session_id: str) -> LeaseRecord:
    """Read a lease file's JSON (:meth:`LeaseRecord.to_json`).

    Raises:
        CorruptSessionError: not a lease record (names the session).
    """
    try:
        obj = orjson.loads(body)
        return LeaseRecord(str(obj["owner"]), int(obj["fence"]), int(obj["expiresMs"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptSessionError(
            f"the writer lease record is not readable: {exc}", session_id=session_id
        ) from exc


WRITER: ContextVar[Lease | None] = ContextVar("sessiontree_writer_lease", default=None)
"""The lease the current task writes under (``None``: none). Set for a block of code by
:func:`sessiontree.harness.lease.hold_lease`; tasks started in it inherit it."""


def writing_under(session_id: str) -> Lease | None:
    """The lease a write to ``session_id`` made now is under: the current task's lease when
    it is for that session, else ``None`` (the write is not checked)."""
    lease = WRITER.get()
    return lease if lease is not None and lease.session_id == session_id else None


def grant(
    session_id: str, record: LeaseRecord | None, owner: str, now_ms: int, ttl_ms: int
) -> tuple[Lease, LeaseRecord]:
    """The lease ``owner`` gets and the record to store, given the stored ``record``.

    Free (no record, released or expired): the fence goes up by one. Held by ``owner``
    already: the same fence, the expiry moved on.

    Raises:
        SessionBusyError: another owner holds an unexpired lease; store nothing.
    """
    if record is None:
        fence = 1
    elif record.owner == owner:
        fence = record.fence
    elif record.owner == "" or record.expires_ms <= now_ms:
        fence = record.fence + 1
    else:
        raise SessionBusyError(session_id, record.owner, record.fence, record.expires_ms)
    expires = now_ms + ttl_ms
    return Lease(session_id, owner, fence, expires), LeaseRecord(owner, fence, expires)


def check_fence(lease: Lease, record: LeaseRecord | None) -> None:
    """Check that ``lease`` is still the session's current lease (owner and fence; not the
    expiry: see the module docstring).

    Raises:
        LeaseLostError: it is not; the caller writes nothing.
    """
    if record is None or record.owner != lease.owner or record.fence != lease.fence:
        raise LeaseLostError(
            lease.session_id,
            lease.fence,
            None if record is None else record.fence,
            None if record is None or record.owner == "" else record.owner,
        )


def renew(lease: Lease, record: LeaseRecord | None, now_ms: int, ttl_ms: int) -> Lease:
    """``lease`` with its expiry moved to ``now_ms + ttl_ms``.

    Raises:
        LeaseLostError: the lease is no longer the current one; store nothing.
    """
    check_fence(lease, record)
    return Lease(lease.session_id, lease.owner, lease.fence, now_ms + ttl_ms)


def release(lease: Lease, record: LeaseRecord | None) -> LeaseRecord | None:
    """The record to store when ``lease`` is released: owner ``""``, the fence kept;
    ``None`` when the lease is no longer the current one (store nothing)."""
    if record is None or record.owner != lease.owner or record.fence != lease.fence:
        return None
    return LeaseRecord("", record.fence, 0)


@runtime_checkable
class LeaseSlot(Protocol):
    """A storage that keeps a writer lease per session and checks the writes made under it
    (every built-in backend). Optional next to
    :class:`~sessiontree.storage.base.SessionStorage`; a storage without it cannot be
    leased."""

    async def acquire_lease(self, owner: str, ttl_ms: int) -> Lease:
        """Take the session's lease for ``ttl_ms`` ms (:func:`grant`), atomically.

        Raises:
            SessionBusyError: another owner holds it; nothing changed.
            SessionNotFoundError: the session was deleted.
        """
        ...

    async def renew_lease(self, lease: Lease, ttl_ms: int) -> Lease:
        """Move the lease's expiry to ``ttl_ms`` ms from now (:func:`renew`), atomically.

        Raises:
            LeaseLostError: the lease was taken over or released; nothing changed.
        """
        ...

    async def release_lease(self, lease: Lease) -> None:
        """Release the lease if it is still the current one (:func:`release`); else nothing."""
        ...

    async def get_lease(self) -> LeaseRecord | None:
        """The session's lease record, ``None`` when it never had one."""
        ...
