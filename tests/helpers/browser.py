"""Headless Chromium driven by selenium, for the report's browser test and benchmark.

The flags keep an offline Chromium from reaching out (updates, sync, QUIC, first-run
pages); a fresh profile directory keeps runs independent.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM = "/usr/bin/chromium"
STARTS = 3  # tries to start the browser
INSTALL = "apt-get install chromium chromium-driver && pip install selenium (the test extra)"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage")  # fmt: skip


def missing() -> str | None:
    """Return why the browser cannot run here, or None when it can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return f"selenium is not installed; install with: {INSTALL}"
    for path in (CHROMEDRIVER, CHROMIUM):
        if not os.access(path, os.X_OK):
            return f"{path} is missing; install with: {INSTALL}"
    return None


@contextmanager
def chromium(window: tuple[int, int] = (1400, 1000), scale: float = 1.0) -> Iterator[object]:
    """A headless Chromium WebDriver with browser console logging on, quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="ws-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={window[0]},{window[1]}")
    options.add_argument(f"--force-device-scale-factor={scale}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    from selenium.common.exceptions import WebDriverException

    for attempt in range(STARTS):
        try:
            driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
            break
        except WebDriverException:
            # Starting the browser can time out on a machine whose cores are busy; what the
            # test then checks in the page is not retried.
            if attempt == STARTS - 1:
                raise
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
