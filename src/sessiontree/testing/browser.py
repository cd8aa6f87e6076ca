"""A headless system Chromium for testing web pages (the viewer's tests and benchmarks).

Uses the distribution's ``/usr/bin/chromium`` and ``/usr/bin/chromedriver`` through selenium
(nothing is downloaded), with a fresh profile directory and background networking off, so
the browser talks to nothing but the pages it is sent to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["CHROMEDRIVER", "CHROMIUM", "CHROMIUM_FLAGS", "browser_missing", "headless_chromium"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
"""Headless, no sandbox (containers run as root), no update, sync or other background traffic."""


def browser_missing() -> str | None:
    """Why :func:`headless_chromium` cannot start (a sentence), or ``None`` when it can."""
    import importlib.util

    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        return f"needs {CHROMIUM} and {CHROMEDRIVER} (apt-get install -y chromium chromium-driver)"
    if importlib.util.find_spec("selenium") is None:
        return "needs selenium (pip install selenium, part of the dev extra)"
    return None


def headless_chromium(profile: Path, *, width: int = 1280, height: int = 900) -> Any:
    """A selenium ``webdriver.Chrome`` on the system Chromium, profile in ``profile``.

    The caller quits it (``driver.quit()``).

    Raises:
        selenium.common.WebDriverException: the browser did not start.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, f"--window-size={width},{height}", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    return driver
