"""The rendered report and the site in a real browser: Playwright driving Debian's chromium.

The page is opened from disk (file://) and from a loopback HTTP server; every diagram
must become an SVG with no Mermaid error, bound nodes must link to their records, a
hostile label must stay text, and the page must make no request outside itself.  At a
desktop's width and a phone's, diagrams are drawn at their natural size with text no
smaller than the body's, scroll inside their figure, and open full screen and close
again from the keyboard.
Analyst HTML — a Markdown cell, Markdown and HTML outputs, a record field — carrying
every way HTML can navigate, load or run something must do none of it, with no console
error (the sanitiser removed it: the policy had nothing to block); and a script the
sanitiser had missed would still not run, as the page runs only its own, by nonce.
Without /usr/bin/chromium these tests skip (`apt-get install chromium`); in CI
(``CI`` set) a missing browser fails them instead.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from playwright.sync_api import expect

from conftest import needs_chromium, page_fits, render_store_report
from tracework.cli import main
from tracework.records.diagrams import DiagramCheck
from tracework.views.cards import Diagram, diagram_note_html

pytestmark = [pytest.mark.browser, pytest.mark.slow]
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
wb.diagram("authority", caption="Generated from authority paths", records=["RT-BAP-items"])
wb.diagram("runtime", caption="The runtime of every record", records="all")
wb.diagram("wide", """flowchart LR
  %% bind s1 RT-CMP-store
  s1["kept by `Store.put`"] --> s2["the second step of a long chain"] --> s3["a third step"]
  s3 -->|"again `Store.put`"| s4[a fourth step, in `Store`] -- then `put` --> s5["a fifth step"]
  s5 --> s6["the sixth step"]
  s6 --> s7["a seventh step"] --> s8["the end of the chain"]
""", caption="A chain wider than any column")''',
]
#: The diagrams of the report, in page order.
DIAGRAMS = ("by-hand", "routes", "authority", "runtime", "wide")


# the hostile text as an analyst would write it in a hand-made label: entity codes
CELLS[1] = CELLS[1].replace(
    "HOSTILE_LABEL", '"#quot;#93;#60;script#62;alert#40;1#41;#60;/script#62;"'
)

#: Every way analyst HTML could navigate the page, load something or run something.
#: ``../../x.*`` are files planted beside the rendered reports (see ``report``).
ATTACKS = """<meta http-equiv="refresh" content="0;url=https://evil.example/meta">
<meta http-equiv="refresh" content="1;url=../../x.html">
<base href="https://evil.example/base/">
<script src="../../x.js"></script>
<script src="https://evil.example/x.js"></script>
<script>window.pwned = "inline script"</script>
<img src="https://evil.example/i.png" onerror="window.pwned = 'onerror'">
<img src="../../x.png" alt="a local file">
<details open ontoggle="window.pwned = 'ontoggle'"><summary>s</summary>d</details>
<a id="js-link" href="javascript:window.pwned = 'link'">a javascript: link</a>
<a href="data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;" id="data-link">a data: link</a>
<iframe src="../../x.html"></iframe>
<iframe srcdoc="&lt;script&gt;parent.pwned = 'srcdoc'&lt;/script&gt;"></iframe>
<object data="../../x.html"></object>
<embed src="../../x.js">
<form action="https://evil.example/form"><input name="q" value="1"><button>send</button></form>
<svg xmlns="http://www.w3.org/2000/svg" onload="window.pwned = 'svg'">
<script>window.pwned = 'svg script'</script><a href="javascript:window.pwned = 'svg link'">
<text>t</text></a><image href="https://evil.example/svg.png"/></svg>
<div style="background: url(https://evil.example/bg.png); width: 9px; height: 9px">css</div>
<style>body { background: url(https://evil.example/style.png) }</style>
<link rel="stylesheet" href="https://evil.example/x.css">
<link rel="stylesheet" href="../../x.css">
<video src="https://evil.example/v.mp4" autoplay></video><audio src="../../x.mp3" autoplay></audio>
<input type="image" src="https://evil.example/input.png">
<a href="https://example.org/fine" id="fine-link">an ordinary link</a>

| kept | formatting |
|:-----|-----------:|
| **bold** | `code` |
"""
HOSTILE_CELLS = [
    nbformat.v4.new_markdown_cell("## Analyst notes\n\n" + ATTACKS),
    f"""from IPython.display import HTML, SVG, Javascript, Markdown, display
attacks = {ATTACKS!r}
display(Markdown(attacks))
display(HTML(attacks))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="window.pwned=1">'
            '<script>window.pwned=2</script></svg>'))
display(Javascript("window.pwned = 'javascript output'"))
display({{"image/png": "iVBORw0KGgo=", "text/plain": "png"}}, raw=True,
        metadata={{"image/png": {{"width": "1 onerror=window.pwned=3"}},
                  "filenames": {{"image/png": "https://evil.example/f.png"}}}})
display({{"application/vnd.jupyter.widget-view+json": {{"model_id": "m"}}, "text/plain": "w"}},
        raw=True)
wb.claim("RT-CLM-html", label="A claim", claim=attacks, assessment=attacks,
         operation="uninspected");""",
]
#: What would widen a page on a phone: a Markdown code block, a long word, a wide table.
WIDE_CELLS = [
    nbformat.v4.new_markdown_cell(
        "## Wide things\n\n```\nresult = "
        + "a_long_identifier_" * 12
        + "\n```\n\n"
        + "sha256:"
        + "0123456789abcdef" * 8
        + "\n\n| "
        + " | ".join(f"column {i}" for i in range(16))
        + " |\n|"
        + "---|" * 16
        + "\n| "
        + " | ".join("a value" for _ in range(16))
        + " |\n"
    )
]
#: What may load: the page and its own two scripts (and images carried inside it).
OWN = ("report.html", "assets/mermaid.min.js", "assets/report.js")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report with three diagrams (one with a hostile label) and analyst HTML carrying
    every attack above, rendered at its pin and published; beside the reports lie the
    files the attacks name (``x.js`` would set ``window.pwned``)."""
    needs_chromium()
    folder = render_store_report(
        tmp_path_factory.mktemp("browser"), CELLS + HOSTILE_CELLS + WIDE_CELLS
    )
    planted = folder.parent.parent
    (planted / "x.js").write_text("window.pwned = 'a local script file';\n")
    (planted / "x.css").write_text("body { background: red }\n")
    (planted / "x.html").write_text("<script>parent.pwned = 'a local page'</script>\n")
    (planted / "x.png").write_bytes(b"\x89PNG")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(planted.parent)
        result = CliRunner().invoke(main, ["publish"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    return folder


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
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


def _url(report: Path, server: str, where: str, page: str) -> str:
    """``page`` ("report" or "site") from disk or from the server (which serves reports/)."""
    rel = f"{report.parent.name}/{report.name}/report.html"
    if page == "site":
        rel = f"site/reports/{rel}"
    return (report.parent.parent / rel).as_uri() if where == "file" else server + rel


def _open(browser, url: str, *, drawn: bool = True, width: int = 1280):
    """Open ``url``; with ``drawn``, wait for the diagrams and require a clean console."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    requests: list[str] = []
    dialogs: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    # (a 404 for the test server's missing favicon is no fault of the page's)
    page.goto(url)
    if drawn:
        page.wait_for_function("document.documentElement.dataset.diagrams !== undefined")
        errors[:] = [e for e in errors if not e.startswith("Failed to load resource")]
        assert errors == [], errors  # e.g. a CSP directive a <meta> policy cannot carry
    return page, requests, dialogs


@pytest.mark.parametrize("where", ["file", "http"])
def test_diagrams_render_link_and_stay_inside_the_page(browser, report, server, where):
    url = _url(report, server, where, "report")
    page, requests, dialogs = _open(browser, url)
    assert page.evaluate("document.documentElement.dataset.diagrams") == "done"
    figures = page.locator("figure.tw-diagram")
    assert figures.count() == len(DIAGRAMS)
    for i in range(len(DIAGRAMS)):
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
    # only the two files beside the page, and the theme script inline in the head
    assert page.locator("script").count() == 3
    assert page.locator("script[src]").count() == 2
    allowed = ("file://",) if where == "file" else (server,)
    outside = [u for u in requests if not u.startswith(allowed) and not u.startswith("data:")]
    assert outside == [], outside
    page.close()


def test_a_bound_node_navigates_to_its_record(browser, report):
    page, _, _ = _open(browser, (report / "report.html").as_uri())
    page.locator('figure#diagram-routes a.tw-node-link[href="#RT-OBJ-items"]').first.click()
    assert page.evaluate("location.hash") == "#RT-OBJ-items"
    assert page.locator("dialog[open]").count() == 0  # a node's link opens no full screen
    page.close()


#: Per figure: the drawing's scale, the smallest label text as shown (CSS pixels), the
#: code elements and text drawn, and whether it scrolls or overflows the viewport.
MEASURE = """() => {
  const body = parseFloat(getComputedStyle(document.body).fontSize);
  const measure = (svg) => {
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    const sizes = Array.from(svg.querySelectorAll('.nodeLabel, .edgeLabel, .cluster-label, text'))
      .filter(e => e.textContent.trim())
      .map(e => parseFloat(getComputedStyle(e).fontSize) * scale);
    return {scale, smallest: Math.min(...sizes), labels: sizes.length};
  };
  return {
    body, pageWidth: document.documentElement.scrollWidth, viewport: innerWidth,
    figures: Object.fromEntries(Array.from(document.querySelectorAll('figure.tw-diagram'))
      .filter(f => f.querySelector('svg')).map(f => {
      const svg = f.querySelector('svg');
      const view = f.querySelector('.tw-diagram-view');
      return [f.id.replace('diagram-', ''), Object.assign(measure(svg), {
        scrolls: view.scrollWidth > view.clientWidth,
        cue: !f.querySelector('.tw-diagram-hint').hidden,
        fit: !f.querySelector('.tw-diagram-fit').hidden,
        inside: f.getBoundingClientRect().right <= innerWidth + 0.5,
        codes: Array.from(svg.querySelectorAll('code')).map(c => c.textContent),
        text: svg.textContent,
      })];
    })),
    dialog: Array.from(document.querySelectorAll('dialog[open] svg')).map(measure),
  };
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_diagrams_are_drawn_at_text_size_and_scroll_inside_their_figure(browser, report, width):
    """No diagram is shrunk into the column: each is drawn at scale 1, its labels no
    smaller than the body text (and never under 12 px), wider ones scroll inside their
    figure while the page itself never scrolls sideways; code is drawn as <code>."""
    page, requests, _ = _open(browser, (report / "report.html").as_uri(), width=width)
    found = page.evaluate(MEASURE)
    assert found["pageWidth"] <= found["viewport"], found["pageWidth"]
    assert sorted(found["figures"]) == sorted(DIAGRAMS)
    for name, figure in found["figures"].items():
        assert abs(figure["scale"] - 1) < 0.01, (name, figure["scale"])
        assert figure["labels"] > 0, name
        assert figure["smallest"] >= max(12, found["body"] - 0.5), (name, figure["smallest"])
        assert figure["inside"], name
        assert "`" not in figure["text"], (name, figure["text"])
        # a drawing wider than its box says so and offers to fit; one that fits does not
        assert figure["cue"] == figure["fit"] == figure["scrolls"], (name, figure)
    assert found["figures"]["wide"]["scrolls"]  # wider than the column at either width
    if width == 1280:
        assert not found["figures"]["by-hand"]["scrolls"]  # and one that fits
    assert found["figures"]["by-hand"]["codes"] == ["Store.put"]
    # in a quoted and a bare node label, an edge label between pipes and one between dashes
    assert sorted(found["figures"]["wide"]["codes"]) == ["Store", "Store.put", "Store.put", "put"]
    assert all(u.startswith("file://") for u in requests), requests
    page.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_a_diagram_opens_full_screen_and_closes_by_keyboard(browser, report, width):
    """The full-screen button is reached with Tab alone and opened with Enter; while
    open, focus stays in the dialog; Escape closes it, the drawing returns to its
    figure and focus to the button.  A click on the drawing opens it too, and a node's
    link inside it closes it and goes to the record."""
    url = (report / "report.html").as_uri()
    page, requests, dialogs = _open(browser, url, width=width)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    button = "#diagram-wide button.tw-diagram-open"
    for _ in range(400):
        page.keyboard.press("Tab")
        if page.evaluate(f"document.activeElement.matches({button!r})"):
            break
    else:
        pytest.fail("the full-screen button is not reachable with Tab")
    # each step waits (Playwright's expect) for the state it asserts: the page answers
    # a key in its own time (a dialog's close event comes a task later)
    opened = page.locator("dialog.tw-diagram-dialog[open]")
    page.keyboard.press("Enter")
    expect(opened).to_have_count(1)
    expect(page.locator("#diagram-wide svg")).to_have_count(0)
    expect(page.locator("dialog[open] svg")).to_have_count(1)
    expect(page.locator("dialog[open] .tw-diagram-dialog-title")).to_have_text(
        "A chain wider than any column"
    )
    shown = page.evaluate(MEASURE)["dialog"]
    assert len(shown) == 1 and abs(shown[0]["scale"] - 1) < 0.01
    assert shown[0]["smallest"] >= 12
    for _ in range(6):  # the page behind is inert: focus never lands there
        page.keyboard.press("Tab")
        assert page.evaluate(
            "document.activeElement === document.body || "
            "!!document.activeElement.closest('dialog[open]')"
        )
    page.keyboard.press("Escape")
    expect(opened).to_have_count(0)
    expect(page.locator("#diagram-wide .tw-diagram-view svg")).to_have_count(1)
    expect(page.locator(button)).to_be_focused()
    # by pointer: a click on the drawing opens it; a node's link closes it and navigates
    page.locator("#diagram-wide .tw-diagram-view").click(position={"x": 5, "y": 5})
    expect(page.locator("dialog[open] svg")).to_have_count(1)
    page.locator('dialog[open] a.tw-node-link[href="#RT-CMP-store"]').click()
    expect(page.locator("dialog[open]")).to_have_count(0)
    expect(page).to_have_url(re.compile("#RT-CMP-store$"))
    expect(page.locator("#diagram-wide .tw-diagram-view svg")).to_have_count(1)
    assert errors == [] and dialogs == []
    assert all(u.startswith("file://") for u in requests), requests
    page.close()


#: JupyterLab's own rules for a Mermaid output (its mermaid package's CSS, which draws
#: the SVG as an image shrunk to the output's width), and one output area's structure.
JUPYTER_CSS = """
.jp-RenderedMermaid { overflow: auto; display: flex; }
.jp-RenderedMermaid figure { margin: 0; overflow: auto; max-width: 100%; }
.jp-RenderedMermaid img { max-width: 100%; }
"""
WIDE_SVG = (
    "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='900' height='60'%3E"
    "%3Crect width='900' height='60' fill='%23ccc'/%3E%3C/svg%3E"
)


def test_in_jupyterlab_a_diagram_keeps_its_natural_size_and_scrolls(browser):
    """The note under a diagram carries a rule, scoped to the output just before it,
    that undoes JupyterLab's shrinking: the diagram keeps its 900 px and its figure
    scrolls in a 300 px output; a Mermaid output without a note is left as it was."""
    check = DiagramCheck("d", {}, (), {})
    note = diagram_note_html(Diagram("d", "A caption", "flowchart LR\n  a --> b", check, "x"))
    mermaid = (
        '<div class="jp-OutputArea-child"><div class="jp-OutputArea-output">'
        f'<div class="jp-RenderedMermaid"><figure><img width="900" src="{WIDE_SVG}">'
        "</figure></div></div></div>"
    )
    page = browser.new_page()
    page.set_content(
        f"<style>{JUPYTER_CSS}</style>"
        f'<div class="jp-OutputArea" id="ours" style="width: 300px">{mermaid}'
        f'<div class="jp-OutputArea-child"><div class="jp-OutputArea-output">{note}</div></div>'
        f'</div><div class="jp-OutputArea" id="other" style="width: 300px">{mermaid}</div>'
    )
    widths = page.evaluate(
        """() => ['ours', 'other'].map(id => {
        const img = document.querySelector('#' + id + ' img');
        const figure = img.closest('figure');
        return [img.getBoundingClientRect().width, figure.scrollWidth > figure.clientWidth];
    })"""
    )
    assert widths == [[900, True], [300, False]]
    page.close()


@pytest.mark.parametrize("page_of", ["report", "site"])
@pytest.mark.parametrize("where", ["file", "http"])
def test_analyst_html_cannot_navigate_load_or_run_anything(browser, report, server, where, page_of):
    url = _url(report, server, where, page_of)
    page, requests, dialogs = _open(browser, url)  # no console error: nothing to block
    assert page.evaluate("document.documentElement.dataset.diagrams") == "done"  # ours ran
    page.locator("#js-link").first.click()
    page.locator("#data-link").first.click()
    page.wait_for_timeout(1500)  # past the one-second refresh
    assert page.url == url and page.evaluate("document.baseURI") == url
    assert page.evaluate("typeof window.pwned") == "undefined" and dialogs == []
    found = page.evaluate(
        """() => ({
        elements: Array.from(document.querySelectorAll(
            'iframe, object, embed, form, input, base, link, video, audio, image, '
            + 'button:not(figure.tw-diagram .tw-diagram-tools > button, header > button.tw-theme, '
            + 'header.site nav > button.tw-theme), '
            + 'meta[http-equiv="refresh" i], main script, main svg:not(figure.tw-diagram svg)'
        )).map(e => e.outerHTML.slice(0, 80)),
        styles: Array.from(document.querySelectorAll('body style'))
            .filter(s => !s.closest('figure.tw-diagram')).length,
        handlers: Array.from(document.querySelectorAll('*')).flatMap(e =>
            Array.from(e.attributes).filter(a => a.name.startsWith('on')).map(a => a.name)),
        links: Array.from(document.querySelectorAll('[href]')).map(e => e.getAttribute('href'))
            .filter(h => /^\\s*(javascript|data|vbscript):/i.test(h)),
        sources: Array.from(document.querySelectorAll('img[src]')).map(e => e.src)
            .filter(s => !s.startsWith('data:')),
        scripts: Array.from(document.scripts).map(s => s.nonce !== ''),
        fine: document.querySelectorAll('a#fine-link[href="https://example.org/fine"]').length,
        bold: document.querySelectorAll('td[style="text-align:left"] strong').length,
    })"""
    )
    assert found["elements"] == [] and found["styles"] == 0, found
    assert found["handlers"] == [] and found["links"] == [] and found["sources"] == [], found
    assert found["scripts"] == [True, True, True]  # the page's own three, by nonce
    assert found["fine"] >= 3 and found["bold"] >= 3  # the formatting analysts use stays
    base = url.rsplit("/", 1)[0] + "/"
    loaded = [u for u in requests if not u.startswith("data:")]
    assert sorted(set(loaded)) == sorted(base + own for own in OWN), loaded
    page.close()


@pytest.mark.parametrize("page_of", ["report", "site index"])
def test_a_script_the_sanitiser_missed_would_not_run(browser, report, page_of):
    """On file://, ``script-src 'self'`` let any local file run; a page's policy now
    allows only the scripts it names itself, by nonce, so one slipped into its body
    (here by hand, as no analyst input can) stays inert while the page's own run."""
    original = (
        report / "report.html" if page_of == "report" else report.parents[1] / "site" / "index.html"
    )
    page_html = original.read_text(encoding="utf-8")
    probe = original.with_name("probe.html")
    planted = os.path.relpath(report.parents[1] / "x.js", original.parent)
    slipped = (
        f'<script src="{planted}"></script>'
        '<script src="assets/report.js"></script>'
        '<script src="assets/search.js"></script>'
        "<script>window.pwned = 'inline'</script>"
    )
    probe.write_text(page_html.replace("<body", slipped + "<body", 1), encoding="utf-8")
    try:
        page, _, _ = _open(browser, probe.as_uri(), drawn=False)
        page.wait_for_load_state("load")
        page.wait_for_timeout(300)
        assert page.evaluate("typeof window.pwned") == "undefined"
        if page_of == "report":  # the page's own scripts still ran
            page.wait_for_function("document.documentElement.dataset.diagrams === 'done'")
        else:
            page.fill("#search", "store")
            page.locator("#search-results li").first.wait_for()
        page.close()
    finally:
        probe.unlink()


@pytest.mark.parametrize("where", ["file", "http"])
def test_the_site_index_runs_its_search_and_nothing_else(browser, report, server, where):
    site = report.parents[1] / "site"
    url = (site / "index.html").as_uri() if where == "file" else server + "site/index.html"
    page, requests, dialogs = _open(browser, url, drawn=False)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.fill("#search", "RT-CLM-html")
    results = page.locator("#search-results li")
    results.first.wait_for()
    # (a 404 for the test server's missing favicon is no fault of the page's)
    errors[:] = [e for e in errors if not e.startswith("Failed to load resource")]
    assert results.count() == 1 and dialogs == [] and errors == []
    base = url.rsplit("/", 1)[0] + "/"
    own = ("index.html", "assets/site.css", "assets/search-index.js", "assets/search.js")
    assert sorted(set(requests)) == sorted(base + p for p in own), requests
    page.close()


#: The phone and the desktop widths every page kind must fit without scrolling sideways.
WIDTHS = (1280, 390)
#: Page kinds of the published site this report gives (the rubric page: test_publish.py).
SITE_PAGES = ("index.html", "reports/{name}/index.html", "reports/{name}/register.html")


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_kind_fits_its_width(browser, report, width):
    """No sideways scrolling of the page at 390 px (a phone) or 1280 px: analyst
    Markdown's code blocks, tables and long words scroll or break inside their own box."""
    site = report.parents[1] / "site"
    urls = [(report / "report.html").as_uri()]
    urls += [(site / p.format(name=report.parent.name)).as_uri() for p in SITE_PAGES]
    urls.append((site / "reports" / report.parent.name / report.name / "report.html").as_uri())
    for url in urls:
        found = page_fits(browser, url, width)
        assert found["scroll"] <= found["width"] and found["past"] == [], (url, found)
        assert found["errors"] == [], (url, found["errors"])
        assert all(u.startswith("file://") for u in found["requests"]), found["requests"]
