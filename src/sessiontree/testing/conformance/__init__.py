"""The backend conformance suite, shipped so any backend can prove itself.

Subclass :class:`ConformanceSuite` in a pytest module and supply two fixtures: ``repo``
yields a fresh, empty :class:`~sessiontree.repos.base.SessionRepo`; ``reopen`` returns a
callable that opens a *fresh* repository object on the same store (an async context manager,
closed when it ends), used to check that what was written reads back from storage::

    from sessiontree.testing.conformance import ConformanceSuite

    class TestMyBackend(ConformanceSuite):
        @pytest.fixture
        async def repo(self, tmp_path):
            async with MyRepo(tmp_path) as r:
                yield r

        @pytest.fixture
        def reopen(self, tmp_path):
            return lambda: MyRepo(tmp_path)

A store that lives in one object returns ``lambda: same_repo(repo)``. The suite is split by
capability, one module each — :mod:`~.repository`, :mod:`~.listing`, :mod:`~.search`,
:mod:`~.roundtrip`, :mod:`~.leaf`, :mod:`~.tree`, :mod:`~.context`, :mod:`~.fork` — and a
backend that lacks one declares what it has (``capabilities = CAPABILITIES - {"search"}``);
the other capability's tests are then skipped with a reason naming it. Every rejection test
also checks that nothing stored changed.
"""

from __future__ import annotations

from sessiontree.testing.conformance._base import (
    CAPABILITIES,
    Conformance,
    Reopen,
    reopened,
    same_repo,
    snapshot,
)
from sessiontree.testing.conformance.context import ContextConformance
from sessiontree.testing.conformance.fork import ForkConformance
from sessiontree.testing.conformance.leaf import LeafConformance
from sessiontree.testing.conformance.listing import ListingConformance
from sessiontree.testing.conformance.repository import RepositoryConformance
from sessiontree.testing.conformance.roundtrip import RoundTripConformance
from sessiontree.testing.conformance.search import SearchConformance
from sessiontree.testing.conformance.tree import TreeConformance

__all__ = [
    "CAPABILITIES",
    "Conformance",
    "ConformanceSuite",
    "ContextConformance",
    "ForkConformance",
    "LeafConformance",
    "ListingConformance",
    "Reopen",
    "RepositoryConformance",
    "RoundTripConformance",
    "SearchConformance",
    "TreeConformance",
    "reopened",
    "same_repo",
    "snapshot",
]


class ConformanceSuite(
    RepositoryConformance,
    ListingConformance,
    SearchConformance,
    RoundTripConformance,
    LeafConformance,
    TreeConformance,
    ContextConformance,
    ForkConformance,
):
    """Every rule a backend must honour. Subclass and supply the ``repo`` and ``reopen``
    fixtures; set ``capabilities`` when the backend lacks some."""
