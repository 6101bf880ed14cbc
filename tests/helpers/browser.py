"""A real headless Chromium for browser tests: the system one (``apt-get install chromium``) or
``$VERIMOD_CHROMIUM``, never one downloaded by ``playwright install``; driven by the
``playwright`` package (the ``test`` extra). Without them the tests skip, saying what to install."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path(playwright: Any) -> str | None:
    """``$VERIMOD_CHROMIUM``, the system Chromium, or playwright's own browser if present."""
    candidates = [
        os.environ.get("VERIMOD_CHROMIUM"),
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
        "/usr/bin/chromium",
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    bundled = playwright.chromium.executable_path
    return bundled if bundled and Path(bundled).is_file() else None


@contextmanager
def launch_browser(extra_args: tuple[str, ...] = ()) -> Iterator[Any]:
    """A launched headless Chromium (closed on exit); skips the test without one. ``extra_args``
    are added to the command line (e.g. ``--host-resolver-rules=…``)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip(
            "REAL-BROWSER TESTS SKIPPED: the playwright package is missing — `pip install playwright` "
            "(or `pip install -e .[test]`), and Chromium: `apt-get install chromium`"
        )
    with sync_playwright() as playwright:
        executable = chromium_path(playwright)
        if executable is None:
            pytest.skip(
                "REAL-BROWSER TESTS SKIPPED: no Chromium found — `apt-get install chromium` "
                "(or set VERIMOD_CHROMIUM to a Chromium/Chrome executable)"
            )
        browser = playwright.chromium.launch(executable_path=executable, args=[*LAUNCH_ARGS, *extra_args])
        try:
            yield browser
        finally:
            browser.close()
