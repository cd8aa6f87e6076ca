"""What every part of the conformance suite shares: the capability check, ``reopen``, helpers.

A backend declares the capabilities it has (:data:`CAPABILITIES` by default, all of them);
a test of a capability it does not declare is skipped with a reason naming the capability,
so ``pytest -ra`` lists it — nothing is left out silently.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, ClassVar

import pytest

from sessiontree.entries import dump_entry
from sessiontree.messages import (
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ToolResultMessage,
    message_text,
)
from sessiontree.repos.base import SessionRepo
from sessiontree.session import Session

__all__ = [
    "CAPABILITIES",
    "Conformance",
    "Reopen",
    "reopened",
    "same_repo",
    "snapshot",
    "texts",
]

CAPABILITIES = frozenset(
    {"repository", "listing", "search", "roundtrip", "leaf", "tree", "context", "fork"}
)
"""Every capability the suite checks; one module of :mod:`sessiontree.testing.conformance` each."""

Reopen = Callable[[], contextlib.AbstractAsyncContextManager[SessionRepo]]
"""The ``reopen`` fixture's value: each call opens a *fresh* repository object on the same
store as ``repo`` (closed when the ``async with`` ends), so what a test reads through it was
read back from storage, not from the writer's memory. A store without persistence (memory)
returns :func:`same_repo`."""


@contextlib.asynccontextmanager
async def same_repo(repo: SessionRepo) -> AsyncIterator[SessionRepo]:
    """``repo`` itself, left open: the ``reopen`` of a store that lives in one object."""
    yield repo


async def snapshot(session: Session) -> tuple[list[dict[str, Any]], str | None]:
    """Every entry (wire dicts, append order) and the leaf: equal snapshots = nothing changed."""
    return [dump_entry(e) for e in await session.get_entries()], await session.get_leaf_id()


@contextlib.asynccontextmanager
async def reopened(reopen: Reopen, session: Session) -> AsyncIterator[Session]:
    """The same session read back through a fresh repository object (``reopen()``)."""
    async with reopen() as other:
        yield await other.open(session.id)


def texts(messages: Sequence[Any]) -> list[str]:
    """One string per context message: summaries with their role, results by call id."""
    out = []
    for m in messages:
        if isinstance(m, CompactionSummaryMessage | BranchSummaryMessage):
            out.append(f"[{m.role}] {m.summary}")
        elif isinstance(m, ToolResultMessage):
            out.append(f"result:{m.tool_call_id}")
        else:
            out.append(message_text(m))
    return out


class Conformance:
    """Base of each capability's tests: ``capability`` names it, ``capabilities`` is what the
    backend under test declares (set it on the subclass that supplies the fixtures)."""

    capability: ClassVar[str] = ""
    capabilities: ClassVar[frozenset[str]] = CAPABILITIES

    @pytest.fixture(autouse=True)
    def _declared_capability(self, request: pytest.FixtureRequest) -> None:
        """Skip, naming the capability, a test of a capability the backend does not declare."""
        owner = _defining_class(type(self), request.function.__name__)
        needed = owner.__dict__.get("capability", "") if owner is not None else ""
        if needed and needed not in self.capabilities:
            pytest.skip(
                f"{type(self).__name__} does not declare the {needed!r} capability "
                f"(capabilities = {sorted(self.capabilities)})"
            )


def _defining_class(cls: type, name: str) -> type | None:
    """The class in ``cls``'s MRO whose body defines ``name``."""
    return next((c for c in cls.__mro__ if name in c.__dict__), None)
