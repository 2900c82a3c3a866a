"""The Argo UI in a real browser: Debian's chromium, driven headless by Python playwright.

Playwright (PyPI) drives the browser over the DevTools protocol and downloads none of its own: it launches
/usr/bin/chromium (`make setup-ui`). The tests then read the page as a person sees it
(``document.body.innerText``) and write screenshots under .devcluster/screenshots/ for a person to look at.

The browser stays on loopback: every host name resolves to nothing but localhost and 127.0.0.1, and any
request to another address goes to a closed loopback port (a proxy that is never there), so neither the
page nor chromium's own background services reach the network.

Beyond the page's text, the helpers read what a person reads in a structure: the workflow list's table
(:func:`list_table`: header and rows as cells, custom columns last), a markdown table the UI rendered
(:func:`html_tables`), and they act as a person does: select a graph node (:func:`click_graph_node`: the
graph draws nodes as SVG groups, each titled ``<node id> (<label>)``), follow a link that opens a new tab
(:func:`follow_link`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

__all__ = [
    "CHROMIUM",
    "ListTable",
    "browser_page",
    "click_graph_node",
    "expect_text",
    "follow_link",
    "graph_labels",
    "graph_node_id",
    "graph_node_ids",
    "html_tables",
    "list_table",
    "missing_texts",
    "screenshot",
    "wait_for",
]

T = TypeVar("T")
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
            # The di-server behind the Argo UI's links serves HTTPS with the local control plane's certificate,
            # signed by a CA of its own this browser does not know (tests check the certificate with clients).
            page = browser.new_page(viewport=VIEWPORT, ignore_https_errors=True)
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


def wait_for(page: Page, read: Callable[[], T | None], what: str, timeout: float = 60.0) -> T:
    """Poll ``read`` (a reading of the page) until it returns something; fails naming ``what`` and the page."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = read()
        if value is not None:
            return value
        time.sleep(0.5)
    pytest.fail(f"{what} ({page.url}): not there after {timeout:.0f}s; the page shows:\n{page_text(page)}")


@dataclass(frozen=True)
class ListTable:
    """The workflow list as shown: the header's cells and each row's cells (name, namespace, started,
    finished, duration, progress, message, details, archived, then the custom columns)."""

    head: list[str]
    rows: list[list[str]]


def list_table(page: Page) -> ListTable:
    """The workflow list's table, read from the page (ui/src/workflows/components/workflows-list)."""
    head, rows = page.evaluate(
        """() => {
            const cells = el => [...el.querySelectorAll(':scope > .columns')].map(c => c.innerText.trim());
            const head = document.querySelector('.argo-table-list__head > .small-11');
            const row = '.workflows-list__row-container .argo-table-list__row > .small-11';
            const rows = [...document.querySelectorAll(row)];
            return [head ? cells(head) : [], rows.map(cells)];
        }"""
    )
    return ListTable(head=head, rows=rows)


def html_tables(page: Page, selector: str) -> list[list[list[str]]]:
    """The tables inside the elements ``selector`` matches, each as rows of cell texts (header row first)."""
    tables: list[list[list[str]]] = page.evaluate(
        """(selector) => [...document.querySelectorAll(selector + ' table')].map(t =>
            [...t.querySelectorAll('tr')].map(r => [...r.querySelectorAll('th,td')].map(c => c.innerText.trim())))""",
        selector,
    )
    return tables


def click_graph_node(page: Page, node_id: str) -> bool:
    """Click the graph's node ``node_id`` (its SVG group, titled ``<id> (<label>)``); False when not drawn."""
    clicked: bool = page.evaluate(
        """(id) => {
            for (const title of document.querySelectorAll('svg g > title')) {
                if (title.textContent.trim().startsWith(id + ' (')) {
                    const node = title.parentElement.querySelector(':scope > g.node');
                    if (node) { node.dispatchEvent(new MouseEvent('click', {bubbles: true})); return true; }
                }
            }
            return false;
        }""",
        node_id,
    )
    return clicked


def graph_node_ids(page: Page) -> list[str]:
    """The title of each node the graph draws (``<id> (<label>)``)."""
    titles: list[str] = page.evaluate(
        "() => [...document.querySelectorAll('svg g > title')].map(t => t.textContent.trim())"
    )
    return titles


def graph_labels(page: Page) -> set[str]:
    """The labels of the nodes the graph draws (titles ``<id> (<label>)``)."""
    return {t.split(" (", 1)[1][:-1] for t in graph_node_ids(page) if " (" in t}


def graph_node_id(page: Page, label: str) -> str | None:
    """The id of the graph's node labelled ``label`` (None: not drawn)."""
    return next((t.split(" (", 1)[0] for t in graph_node_ids(page) if t.endswith(f" ({label})")), None)


def follow_link(page: Page, name: str, timeout: float = 30.0) -> Page:
    """Click the UI's link ``name`` (a toolbar item or a button; Argo opens it in a new tab) and return
    the new tab once its document loaded."""
    with page.context.expect_page(timeout=timeout * 1000) as opened:
        page.get_by_text(name, exact=True).first.click()
    tab = opened.value
    tab.wait_for_load_state("load", timeout=timeout * 1000)
    return tab
