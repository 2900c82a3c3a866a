"""The Argo UI in a real browser: Debian's chromium, driven headless by Python playwright.

Playwright (PyPI) drives the browser over the DevTools protocol and downloads none of its own: it launches
/usr/bin/chromium (`make setup-ui`). The tests then read the page as a person sees it
(``document.body.innerText``) and write screenshots under .devcluster/screenshots/ for a person to look at.

The browser stays on loopback: every host name resolves to nothing but localhost and 127.0.0.1, and any
request to another address goes to a closed loopback port (a proxy that is never there), so neither the
page nor chromium's own background services reach the network.

Extension point: :func:`expect_text` takes the strings a page must show; the tests list them in
functions (``list_page_texts``, ``workflow_page_texts`` in test_argo_ui.py) that grow with what the UI is
configured to show (custom columns, links).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

__all__ = ["CHROMIUM", "browser_page", "expect_text", "missing_texts", "screenshot"]

CHROMIUM = Path("/usr/bin/chromium")
#: Chromium's switches: headless as root, no GPU, nothing off loopback (see the module's docstring).
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
    "--proxy-server=http://127.0.0.1:9",  # the discard port, closed: off-loopback requests fail at once
    "--proxy-bypass-list=127.0.0.1;localhost",
)
VIEWPORT = {"width": 1600, "height": 1000}


@contextmanager
def browser_page() -> Iterator[Page]:
    """A fresh page of a headless chromium, closed afterwards."""
    if not CHROMIUM.exists():
        pytest.fail(f"no {CHROMIUM}: run `make setup-ui` (Debian's chromium)")
    with sync_playwright() as p:
        browser: Browser = p.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS))
        try:
            page = browser.new_page(viewport=VIEWPORT)
            yield page
        finally:
            browser.close()


def page_text(page: Page) -> str:
    text: str = page.evaluate("() => document.body ? document.body.innerText : ''")
    return text


def missing_texts(text: str, expected: Sequence[str]) -> list[str]:
    return [e for e in expected if e not in text]


def expect_text(page: Page, expected: Sequence[str], what: str, timeout: float = 60.0) -> str:
    """Wait until the page shows every string of ``expected``; the page's text. Fails naming what is missing."""
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = page_text(page)
        if not missing_texts(text, expected):
            return text
        time.sleep(0.5)
    missing = missing_texts(text, expected)
    pytest.fail(f"{what} ({page.url}) does not show {missing} after {timeout:.0f}s; it shows:\n{text}")


def screenshot(page: Page, folder: Path, name: str, settle: float = 2.0) -> Path:
    """A PNG of the page as it is once drawing settled (the graph animates in), at ``folder/name.png``."""
    folder.mkdir(parents=True, exist_ok=True)
    time.sleep(settle)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path
