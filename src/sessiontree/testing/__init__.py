"""Testing support shipped with sessiontree.

* :mod:`sessiontree.testing.conformance` — the backend conformance suite (needs pytest);
* :mod:`sessiontree.testing.fakes` — scripted, failing and recording summarisers;
* :mod:`sessiontree.testing.builders` — message builders for tests and examples;
* :mod:`sessiontree.testing.browser` — a headless system Chromium for web page tests.
"""
