"""The shipped conformance suite, run on every backend through the ``repo`` fixture."""

from sessiontree.testing.conformance import ConformanceSuite


class TestConformance(ConformanceSuite):
    """Runs once per backend selected in conftest (memory, jsonl, sqlite, postgres)."""
