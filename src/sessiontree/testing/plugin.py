"""pytest plugin entry point (registered in pyproject); the conformance suite lives beside it."""
