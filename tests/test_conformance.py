"""The shipped conformance suite, run on every backend through the ``repo`` fixture."""

import pytest

from sessiontree.testing.conformance import (
    CAPABILITIES,
    Conformance,
    ConformanceSuite,
    SearchConformance,
)


class TestConformance(ConformanceSuite):
    """Runs once per backend selected in conftest (memory, jsonl, sqlite, postgres), with its
    ``repo`` and ``reopen`` fixtures; every backend declares every capability."""


def test_every_backend_declares_every_capability() -> None:
    assert TestConformance.capabilities == CAPABILITIES
    tested = {
        cls.__dict__["capability"]
        for cls in ConformanceSuite.__mro__
        if issubclass(cls, Conformance) and "capability" in cls.__dict__ and cls.capability
    }
    assert tested == CAPABILITIES


BACKEND_WITHOUT_SEARCH = """
import pytest

from sessiontree.repos import MemoryRepo
from sessiontree.testing.conformance import CAPABILITIES, ConformanceSuite, same_repo


class NoSearch(MemoryRepo):
    async def search(self, query, limit=20):
        raise NotImplementedError("this store has no search")


class TestNoSearch(ConformanceSuite):
    capabilities = CAPABILITIES - {"search"}

    @pytest.fixture
    async def repo(self):
        async with NoSearch() as r:
            yield r

    @pytest.fixture
    def reopen(self, repo):
        return lambda: same_repo(repo)
"""


def test_a_third_party_backend_passes_and_an_undeclared_capability_is_a_named_skip(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_third_party=BACKEND_WITHOUT_SEARCH)
    result = pytester.runpytest_inprocess(
        "-p",
        "asyncio",
        "-o",
        "asyncio_mode=auto",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "-ra",
        "-q",
        "-p",
        "no:cacheprovider",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("errors", 0) == 0, result.stdout.str()
    search_tests = [n for n in vars(SearchConformance) if n.startswith("test_")]
    assert outcomes["skipped"] == len(search_tests) and outcomes["passed"] >= 40
    result.stdout.fnmatch_lines(["*TestNoSearch does not declare the 'search' capability*"])
