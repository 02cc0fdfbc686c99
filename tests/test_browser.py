"""The rendered report in a real browser: Playwright driving Debian's chromium.

The page is opened from disk (file://) and from a loopback HTTP server; every diagram
must become an SVG with no Mermaid error, bound nodes must link to their records, a
hostile label must stay text, and the page must make no request outside itself.
Without /usr/bin/chromium these tests skip (`apt-get install chromium`); in CI
(``CI`` set) a missing browser fails them instead.
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import needs_chromium, render_store_report

pytestmark = pytest.mark.browser
HOSTILE = '"]<script>alert(1)</script>'

CELLS = [
    """q = src.quote("pkg/store.py", symbol="Store.put")
wb.component("RT-CMP-store", label='Store """
    + HOSTILE.replace('"', '\\"')
    + """', identity="The store.",
             evidence=[q])
wb.operative_object("RT-OBJ-items", label="Items", description="The dict.")
wb.route("RT-RTE-put", label="Put", progression="p", implementation="wired",
         operation="uninspected", passes_through=["RT-CMP-store", "RT-OBJ-items"])
wb.authority_path("RT-BAP-items", consumer="The caller", channel="return value",
                  force="data", horizon="the call", source_material="RT-OBJ-items");""",
    '''wb.diagram("by-hand", """flowchart LR
  subgraph core ["Core"]
    RT-CMP-store["stores with `Store.put`"] --> n2[HOSTILE_LABEL]
  end
  %% bind n3 RT-OBJ-items
  %% a raw payload in a comment: </pre><script>alert(2)</script>
  n2 --> n3["items"]
""", caption="Drawn by hand")
wb.diagram("routes", caption="Generated from routes", routes=["RT-RTE-put"])
wb.diagram("authority", caption="Generated from authority paths", records=["RT-BAP-items"])''',
]


# the hostile text as an analyst would write it in a hand-made label: entity codes
CELLS[1] = CELLS[1].replace(
    "HOSTILE_LABEL", '"#quot;#93;#60;script#62;alert#40;1#41;#60;/script#62;"'
)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report with three diagrams (one with a hostile label), rendered at its pin."""
    needs_chromium()
    return render_store_report(tmp_path_factory.mktemp("browser"), CELLS)


@pytest.fixture(scope="module")
def server(report: Path) -> Iterator[str]:
    """The report folder served on 127.0.0.1 (an ephemeral port)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(report.parent.parent))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/{report.parent.name}/{report.name}/"
    httpd.shutdown()


def _open(browser, url: str):
    page = browser.new_page()
    requests: list[str] = []
    dialogs: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    # (a 404 for the test server's missing favicon is no fault of the page's)
    page.goto(url)
    page.wait_for_function("document.documentElement.dataset.diagrams !== undefined")
    errors = [e for e in errors if not e.startswith("Failed to load resource")]
    assert errors == [], errors  # e.g. a CSP directive a <meta> policy cannot carry
    return page, requests, dialogs


@pytest.mark.parametrize("where", ["file", "http"])
def test_diagrams_render_link_and_stay_inside_the_page(browser, report, server, where):
    url = (report / "report.html").as_uri() if where == "file" else server + "report.html"
    page, requests, dialogs = _open(browser, url)
    assert page.evaluate("document.documentElement.dataset.diagrams") == "done"
    figures = page.locator("figure.tw-diagram")
    assert figures.count() == 3
    for i in range(3):
        figure = figures.nth(i)
        assert figure.locator("svg").count() == 1
        assert figure.locator(".tw-diagram-error").count() == 0
        bindings = json.loads(figure.get_attribute("data-bindings") or "{}")
        assert bindings
        for record in set(bindings.values()):
            link = figure.locator(f'a.tw-node-link[href="#{record}"]')
            assert link.count() >= 1, record
            assert page.locator(f'[id="{record}"]').count() == 1
    # the hostile label is shown as text, in the SVG and in the folded source, and ran nothing
    assert HOSTILE in (figures.nth(0).locator("svg").text_content() or "")
    assert dialogs == []
    assert page.locator("script").count() == 2  # only the two files beside the page
    allowed = ("file://",) if where == "file" else (server.split("/report")[0],)
    outside = [u for u in requests if not u.startswith(allowed) and not u.startswith("data:")]
    assert outside == [], outside
    page.close()


def test_a_bound_node_navigates_to_its_record(browser, report):
    page, _, _ = _open(browser, (report / "report.html").as_uri())
    page.locator('figure#diagram-routes a.tw-node-link[href="#RT-OBJ-items"]').first.click()
    assert page.evaluate("location.hash") == "#RT-OBJ-items"
    page.close()
