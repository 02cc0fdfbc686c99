"""The reader's page in a real browser (Playwright driving Debian's chromium), at a
desktop's width and a phone's, in the light and the dark system theme: the demo's
report and site as ``test_publish.py`` publishes them.

- the theme: every page follows ``prefers-color-scheme`` (text, code and diagrams alike,
  readable in both), a toggle switches it and the choice is remembered from disk
  (``file://``, no network), and without a script the system's theme still applies;
- a diagram wider than its box says that it scrolls (a line above it, a fade at the edge
  with more to see) and fits to the width on request; the full-screen view stays;
- quoted lines wrap at token boundaries, continue past their own indentation (on a
  phone, past their indentation within the quote: what all its lines share is not drawn
  there) and never under the line numbers, and read exactly the quote's hashed text;
- charts read at the page's small-print size, the index's sparkline has a visible label,
  a compare page tints added and removed lines and shows a broken absence's matches and
  the way to it; counts are in words that agree with them.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

import test_publish
from tracework.hashing import sha256_hex
from tracework.register import store
from tracework.text import visible

pytestmark = [pytest.mark.browser, pytest.mark.slow]
# each expectation waits for its state; a page as large as the demo's report (with the
# Mermaid bundle to parse) may take more than the default five seconds on a busy machine
expect.set_options(timeout=20_000)
#: The demo, rendered at its pin and its newest commit and published (test_publish.py's).
demo = test_publish.demo
site = test_publish.site

WIDTHS = (1280, 390)
SCHEMES = ("light", "dark")
every_view = [
    pytest.mark.parametrize("scheme", SCHEMES),
    pytest.mark.parametrize("width", WIDTHS),
]


def views(test: Any) -> Any:
    for mark in every_view:
        test = mark(test)
    return test


#: Colour arithmetic in the page (WCAG relative luminance and contrast ratio).
COLOUR = r"""
window.twRgb = (s) => (s.match(/[\d.]+/g) || []).slice(0, 3).map(Number);
window.twLum = (c) => {
  const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const [r, g, b] = twColour(c); return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
};
window.twContrast = (a, b) => {
  const [x, y] = [twLum(a), twLum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05);
};
window.twColour = (s) => {  // [r, g, b, alpha] of rgb(), rgba() or color(srgb ...)
  const n = (s.match(/[\d.]+/g) || []).map(Number);
  if (s.startsWith('color(')) return [n[0] * 255, n[1] * 255, n[2] * 255, n.length > 3 ? n[3] : 1];
  return [n[0], n[1], n[2], n.length > 3 ? n[3] : 1];
};
// what is behind an element's text: its own background and its ancestors', composited
window.twBackground = (e) => {
  const layers = [];
  for (; e; e = e.parentElement) {
    const c = twColour(getComputedStyle(e).backgroundColor);
    if (c[3] > 0) layers.push(c);
    if (c[3] >= 1) break;
  }
  let [r, g, b] = [255, 255, 255];
  for (const [lr, lg, lb, a] of layers.reverse()) {
    [r, g, b] = [lr * a + r * (1 - a), lg * a + g * (1 - a), lb * a + b * (1 - a)];
  }
  return `rgb(${r}, ${g}, ${b})`;
};
"""


class Viewer:
    """A browser context at one width and system theme, with what its pages asked for
    and complained about."""

    def __init__(self, browser: Any, width: int, scheme: str, *, scripts: bool = True) -> None:
        self.context = browser.new_context(
            viewport={"width": width, "height": 900},
            color_scheme=scheme,
            java_script_enabled=scripts,
        )
        self.context.add_init_script(COLOUR)
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.context.on("request", lambda r: self.requests.append(r.url))
        self.width, self.scheme = width, scheme

    def open(self, path: Path) -> Any:
        page = self.context.new_page()
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.goto(path.as_uri())
        return page

    def clean(self) -> None:
        """Nothing but files from disk was asked for, and no page logged an error."""
        assert self.errors == [], self.errors
        outside = [u for u in self.requests if not u.startswith(("file://", "data:"))]
        assert outside == [], outside


@pytest.fixture
def viewer(browser: Any, request: pytest.FixtureRequest) -> Iterator[Viewer]:
    v = Viewer(
        browser, request.node.callspec.params["width"], request.node.callspec.params["scheme"]
    )
    yield v
    v.context.close()


def newest_report(site: Path, demo: Any) -> Path:
    return site / "reports" / "larkspur" / demo[1][-1][:12] / "report.html"


def pin_report(site: Path, demo: Any) -> Path:
    return site / "reports" / "larkspur" / demo[1][0][:12] / "report.html"


def compare_page(site: Path, demo: Any) -> Path:
    _, commits = demo
    return site / "reports" / "larkspur" / f"compare-{commits[0][:12]}-{commits[-1][:12]}.html"


def drawn(page: Any, scheme: str) -> None:
    """Wait for the diagrams, drawn in ``scheme``."""
    expect(page.locator("html")).to_have_attribute("data-diagrams", "done")
    expect(page.locator("html")).to_have_attribute("data-diagrams-theme", scheme)


# -- 7. the reader's theme -----------------------------------------------------------------

#: What a page's theme is made of, as shown: the paper, the text's contrast against it
#: (body, muted, links), the toggle's state, and on a report its code and diagrams.
THEME = """() => {
  const body = document.body, paper = getComputedStyle(body).backgroundColor;
  const worst = (sel) => Math.min(99, ...Array.from(document.querySelectorAll(sel))
    .filter(e => e.offsetParent !== null && e.textContent.trim())
    .map(e => twContrast(getComputedStyle(e).color, twBackground(e))));
  const nodes = Array.from(document.querySelectorAll('figure.tw-diagram svg g.node')).map(n => {
    const shape = n.querySelector('rect, polygon, path, circle');
    const label = n.querySelector('.nodeLabel, text');
    const fill = getComputedStyle(shape).fill;
    return {fill: twLum(fill), contrast: twContrast(getComputedStyle(label).color, fill)};
  });
  return {
    theme: document.documentElement.dataset.theme, paper: twLum(paper),
    text: twContrast(getComputedStyle(body).color, paper),
    muted: worst('.muted, .tw-muted, .tw-eyebrow, .tw-meta dt, figcaption, .tw-footer, footer'),
    links: worst('main a, nav a'),
    code: worst('.tw-code .tw-cc span[class]:not(.w), .tw-code .linenos'),
    toggle: document.querySelector('.tw-theme')?.getAttribute('aria-pressed') ?? null,
    nodes,
  };
}"""


@views
def test_every_page_follows_the_readers_theme(viewer, site, demo, width, scheme):
    """Light paper or dark as the system says; body text, small print, links, code
    tokens and diagram labels all readable against what is behind them (WCAG: 4.5:1,
    body text 7:1); the toggle shows the theme that is on."""
    site_pages = [
        "index.html",
        "reports/larkspur/index.html",
        "reports/larkspur/register.html",
        "rubrics/retention.html",
    ]
    paths = [newest_report(site, demo), compare_page(site, demo)] + [site / p for p in site_pages]
    for path in paths:
        page = viewer.open(path)
        expect(page.locator("html")).to_have_attribute("data-theme", scheme)
        expect(page.locator("button.tw-theme")).to_be_visible()
        if path.name == "report.html":
            drawn(page, scheme)
        shown = page.evaluate(THEME)
        where = (path.name, shown)
        assert (shown["paper"] < 0.02) if scheme == "dark" else (shown["paper"] > 0.9), where
        assert shown["text"] >= 7 and shown["muted"] >= 4.5 and shown["links"] >= 4.5, where
        assert shown["toggle"] == ("true" if scheme == "dark" else "false"), where
        if path.name == "report.html":
            assert shown["code"] >= 4.5, where
            assert len(shown["nodes"]) >= 10, where
            for node in shown["nodes"]:
                assert node["contrast"] >= 4.5, where
            # nodes are drawn on the page's side: dark boxes on dark paper, light on light
            fills = sorted(n["fill"] for n in shown["nodes"])
            median = fills[len(fills) // 2]
            assert median < 0.1 if scheme == "dark" else median > 0.5, where
        page.close()
    viewer.clean()


@views
def test_the_theme_toggle_is_remembered_from_disk(viewer, site, demo, width, scheme):
    """The toggle switches the page to the other theme at once (its diagrams redrawn),
    and every page opened from disk afterwards shows the choice, the site's and the
    report's alike; switching back to the system's theme forgets it.  (A page already
    open in another tab follows too, by the storage event, in its own time.)"""
    other = "light" if scheme == "dark" else "dark"
    report = newest_report(site, demo)
    page = viewer.open(report)
    drawn(page, scheme)
    toggle = page.locator("button.tw-theme")
    toggle.click()
    expect(page.locator("html")).to_have_attribute("data-theme", other)
    expect(toggle).to_have_attribute("aria-pressed", "true" if other == "dark" else "false")
    drawn(page, other)
    expect(page.locator("figure.tw-diagram[data-theme]")).to_have_count(3)
    expect(page.locator(f'figure.tw-diagram[data-theme="{other}"]')).to_have_count(3)
    assert page.evaluate("localStorage.getItem('tracework-theme')") == other
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", other)
    drawn(page, other)
    index = viewer.open(site / "index.html")
    expect(index.locator("html")).to_have_attribute("data-theme", other)
    index.locator("button.tw-theme").click()  # back to the system's theme: forgotten
    expect(index.locator("html")).to_have_attribute("data-theme", scheme)
    assert index.evaluate("localStorage.getItem('tracework-theme')") is None
    # and the report, opened again, is in the system's theme
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", scheme)
    drawn(page, scheme)
    page.close()
    index.close()
    viewer.clean()


@views
def test_without_a_script_the_page_still_follows_the_system(browser, site, demo, width, scheme):
    """The palette is the stylesheet's, under the media query: a reader without
    scripts gets the system's theme (and no toggle, which could not work)."""
    viewer = Viewer(browser, width, scheme, scripts=False)
    for path in (newest_report(site, demo), site / "index.html"):
        page = viewer.open(path)
        page.wait_for_load_state("load")
        assert page.locator("html").get_attribute("data-theme") is None
        assert page.locator("button.tw-theme").count() == 0
        paper = page.evaluate("getComputedStyle(document.body).backgroundColor")
        code = page.locator(".tw-code").first
        light = {"light": "rgb(255, 255, 255)"}.get(scheme)
        if light:
            assert paper == light
        else:
            assert paper != "rgb(255, 255, 255)" and paper.startswith("rgb(2")
        if code.count():
            keyword = code.locator("span.k").first
            colour = keyword.evaluate("e => getComputedStyle(e).color")
            # pygments' default keyword green on light paper, github-dark's red on dark
            assert colour == ("rgb(0, 128, 0)" if scheme == "light" else "rgb(255, 123, 114)")
        page.close()
    viewer.context.close()


# -- 8. a diagram wider than its box ---------------------------------------------------------

#: The runtime diagram's view: the drawing's width as shown and its own, the box's, and
#: whether it scrolls.
VIEW = """(f) => {
  const view = f.querySelector('.tw-diagram-view'), svg = view.querySelector('svg');
  return {shown: svg.getBoundingClientRect().width, natural: parseFloat(svg.getAttribute('width')),
          box: view.clientWidth, scrolls: view.scrollWidth > view.clientWidth + 1};
}"""


@views
def test_a_wide_diagram_says_it_scrolls_and_fits_to_the_width(viewer, site, demo, width, scheme):
    page = viewer.open(pin_report(site, demo))
    drawn(page, scheme)
    figure = page.locator("#diagram-runtime")
    frame = figure.locator(".tw-diagram-frame")
    hint = figure.locator(".tw-diagram-hint")
    fit = figure.get_by_role("button", name="Fit to width")
    # wider than its box at either width: it says so, above the drawing and at its edge
    expect(hint).to_be_visible()
    expect(hint).to_contain_text("scroll sideways")
    expect(fit).to_be_visible()
    expect(fit).to_have_attribute("aria-pressed", "false")
    expect(frame).to_have_class(re.compile(r"\btw-more-right\b"))
    expect(frame).not_to_have_class(re.compile(r"\btw-more-left\b"))
    page.wait_for_function(  # the fade shows at the right edge (it fades in)
        "() => getComputedStyle(document.querySelector("
        "'#diagram-runtime .tw-diagram-frame'), '::after').opacity === '1'"
    )
    first = figure.evaluate(VIEW)
    assert first["scrolls"] and abs(first["shown"] - first["natural"]) < 1, first
    # scrolled to its end: the fade moves to the left
    figure.locator(".tw-diagram-view").evaluate("v => { v.scrollLeft = v.scrollWidth; }")
    expect(frame).to_have_class(re.compile(r"\btw-more-left\b"))
    expect(frame).not_to_have_class(re.compile(r"\btw-more-right\b"))
    # fitted: the whole drawing in the box, nothing to scroll; the hint says what it costs
    fit.click()
    expect(fit).to_have_attribute("aria-pressed", "true")
    expect(hint).to_contain_text("Fitted to the width")
    expect(frame).not_to_have_class(re.compile(r"\btw-more-(left|right)\b"))
    fitted = figure.evaluate(VIEW)
    assert not fitted["scrolls"] and fitted["shown"] <= fitted["box"] + 1, fitted
    # the full-screen view stays, at the natural size, and gives the drawing back fitted
    figure.get_by_role("button", name="Full screen").click()
    expect(page.locator("dialog[open] svg")).to_have_count(1)
    natural = page.locator("dialog[open] svg").evaluate("s => s.getBoundingClientRect().width")
    assert abs(natural - first["natural"]) < 1
    page.keyboard.press("Escape")
    expect(page.locator("dialog[open]")).to_have_count(0)
    expect(figure.locator(".tw-diagram-view svg")).to_have_count(1)
    assert not figure.evaluate(VIEW)["scrolls"]
    # pressed again: the natural size, scrolling again
    fit.click()
    expect(fit).to_have_attribute("aria-pressed", "false")
    expect(frame).to_have_class(re.compile(r"\btw-more-(left|right)\b"))
    again = figure.evaluate(VIEW)
    assert again["scrolls"] and abs(again["shown"] - again["natural"]) < 1, again
    # a redraw in the other theme keeps the choice of view
    fit.click()
    page.locator("button.tw-theme").click()
    drawn(page, "light" if scheme == "dark" else "dark")
    expect(fit).to_have_attribute("aria-pressed", "true")
    assert not figure.evaluate(VIEW)["scrolls"]
    page.close()
    viewer.clean()


# -- 9. quoted lines ---------------------------------------------------------------------------

#: Every row of every quote: where its number ends, where each of its line boxes
#: starts, the indentation its continuation rows take, and any token broken across
#: lines though it would fit on one.
ROWS = r"""() => {
  const out = [];
  document.querySelectorAll('.tw-code').forEach((code, block) => {
    const pre = code.querySelector('pre');
    const probe = document.createElement('span');
    probe.textContent = '0'.repeat(20);
    code.querySelector('.tw-cc').appendChild(probe);
    const ch = probe.getBoundingClientRect().width / 20;
    probe.remove();
    code.querySelectorAll('.tw-cl').forEach(row => {
      const number = row.querySelector('.linenos').getBoundingClientRect();
      const cc = row.querySelector('.tw-cc'), box = cc.getBoundingClientRect();
      const hang = parseFloat(getComputedStyle(cc).paddingLeft);
      const range = document.createRange(); range.selectNodeContents(cc);
      const tops = new Map();
      for (const r of range.getClientRects()) {
        if (!r.width) continue;
        const top = Math.round(r.top);
        tops.set(top, Math.min(tops.get(top) ?? 1e9, r.left));
      }
      const lefts = [...tops.entries()].sort((a, b) => a[0] - b[0]).map(e => e[1]);
      // a token short enough for a line of its own breaks only at its own spaces (a
      // string of prose), never inside a word
      const inside = (s) => {
        const text = s.firstChild, cut = document.createRange();
        let top = null;
        for (let i = 0; i < text.length; i++) {
          cut.setStart(text, i); cut.setEnd(text, i + 1);
          const r = cut.getClientRects()[0];
          if (!r) continue;
          if (top !== null && r.top > top + 1 && !/\s/.test(text.data[i - 1])) return true;
          top = r.top;
        }
        return false;
      };
      const broken = Array.from(cc.querySelectorAll('span')).filter(s =>
        s.getClientRects().length > 1 && s.textContent.length * ch < box.width - hang
        && s.firstChild && inside(s)
      ).map(s => s.textContent);
      out.push({quote: (code.closest('figure, details') || {}).id || '', block,
                number: number.right, lefts, box: box.left, hang, ch, broken, text: cc.textContent,
                scrolls: pre.scrollWidth > pre.clientWidth + 1});
    });
  });
  return out;
}"""


@views
def test_quoted_lines_wrap_at_tokens_beside_their_numbers(viewer, site, demo, width, scheme):
    ws, _ = demo
    register = store.load(ws.registers / "larkspur.yaml")
    page = viewer.open(pin_report(site, demo))
    rows = page.evaluate(ROWS)
    assert len(rows) > 100
    wrapped = [r for r in rows if len(r["lefts"]) > 1]
    for row in rows:
        assert not row["scrolls"], row  # a quote never scrolls sideways: it wraps
        assert row["box"] >= row["number"] - 0.5, row  # the code starts past the numbers
        assert all(left >= row["number"] for left in row["lefts"]), row  # never under them
        assert row["broken"] == [], row  # a break falls between tokens
    # the indentation all of a block's lines share, which a phone does not draw
    shared: dict[int, int] = {}
    for row in rows:
        if row["text"].strip():
            lead = len(row["text"]) - len(row["text"].lstrip(" "))
            shared[row["block"]] = min(shared.get(row["block"], lead), lead)
    for row in wrapped:  # continuation rows hang past the line's own indentation
        first, *rest = row["lefts"]
        lead = len(row["text"]) - len(row["text"].lstrip(" "))
        if width == 390:
            lead -= shared[row["block"]]
        assert row["hang"] >= (min(lead, 12) + 2) * row["ch"] - 1, row
        assert all(left >= first + row["hang"] - 1 for left in rest), row
    if width == 390:
        assert len(wrapped) >= 5, len(wrapped)
    # each quote's card reads exactly its register text: the hashed bytes, shown
    for qid, quote in register.quotes.items():
        shown = [r["text"] for r in rows if r["quote"] == qid]
        if not shown:
            continue
        assert "".join(shown) == visible(quote.text) + ("" if quote.text.endswith("\n") else "\n")
        assert sha256_hex(quote.span_bytes()) == quote.sha256
    page.close()
    viewer.clean()


# -- 10. charts, the compare page, wording ------------------------------------------------------

#: Every chart's text: its size as drawn (the chart is never scaled) and its contrast.
CHART_TEXT = """() => Array.from(document.querySelectorAll('svg.chart')).map(svg => {
  const scale = svg.getBoundingClientRect().width / parseFloat(svg.getAttribute('width'));
  const paper = twBackground(svg.parentElement);
  return {scale, texts: Array.from(svg.querySelectorAll('text')).map(t => ({
    size: parseFloat(getComputedStyle(t).fontSize) * scale,
    contrast: twContrast(getComputedStyle(t).fill, paper)}))};
})"""


@views
def test_charts_read_at_the_pages_small_print_and_the_sparkline_is_labelled(
    viewer,
    site,
    width,
    scheme,
):
    index = viewer.open(site / "index.html")
    spark = index.locator("#report-larkspur .spark")
    expect(spark.locator(".spark-label")).to_be_visible()
    expect(spark.locator(".spark-label")).to_have_text("Verified: 100% → 38% (2 renders)")
    assert spark.locator("svg.sparkline").get_attribute("aria-label").endswith("100%, 38%")
    label_size = spark.locator(".spark-label").evaluate(
        "e => parseFloat(getComputedStyle(e).fontSize)"
    )
    assert label_size >= 14
    for rel in ("reports/larkspur/index.html", "rubrics/retention.html"):
        page = viewer.open(site / rel)
        charts = page.evaluate(CHART_TEXT)
        assert charts, rel
        for chart in charts:
            assert abs(chart["scale"] - 1) < 0.01, (rel, chart["scale"])
            assert chart["texts"], rel
            for text in chart["texts"]:
                assert text["size"] >= 14 - 0.01 and text["contrast"] >= 4.5, (rel, text)
        page.close()
    index.close()
    viewer.clean()


#: The compare page's diff: each kind of line's background and text contrast.
DIFF = """() => Object.fromEntries(['add', 'del', 'same', 'hunk', 'file'].map(kind => {
  const line = document.querySelector('#Q-keep pre.diff .d-' + kind);
  const bg = twBackground(line);
  return [kind, {bg: twRgb(bg), contrast: twContrast(getComputedStyle(line).color, bg),
                 text: line.textContent}];
}))"""


@views
def test_the_compare_page_tints_its_diffs_and_shows_a_broken_absence(
    viewer,
    site,
    demo,
    width,
    scheme,
):
    page = viewer.open(compare_page(site, demo))
    diff = page.evaluate(DIFF)
    added, removed, same = diff["add"], diff["del"], diff["same"]
    assert added["bg"] != same["bg"] and removed["bg"] != same["bg"], diff
    assert added["bg"][1] > added["bg"][0] and removed["bg"][0] > removed["bg"][1], (
        diff
    )  # green, red
    assert added["text"].startswith("+") and removed["text"].startswith("-"), diff  # signed too
    assert all(line["contrast"] >= 4.5 for line in diff.values()), diff
    absence = page.locator("#absence-RT-ABS-owner")
    expect(absence.locator("h3")).to_have_text("RT-ABS-owner: holds → broken")
    expect(absence).to_contain_text("No per-user separation of notes")
    expect(absence).to_contain_text("its patterns match 4 lines in 1 file")
    expect(absence.locator(".matches li")).to_have_count(4)
    expect(absence.locator(".matches li").first).to_contain_text("larkspur/notes.py:22")
    link = absence.get_by_role("link", name=re.compile("the absence in the report"))
    link.click()
    expect(page).to_have_url(re.compile(r"/report\.html#RT-ABS-owner$"))
    expect(page.locator('[id="RT-ABS-owner"]')).to_be_visible()
    page.close()
    viewer.clean()


#: A count whose word disagrees with it: "1 commits", "3 commit".
WRONG_PLURAL = re.compile(
    r"(?<![\d.,:/-])(?:1 (?:commits|matches|files|renders|lines|quotes|systems)"
    r"|(?:0|[2-9]|[1-9]\d+) (?:commit|match|file|render|line|system)(?![\w-]))\b"
)


def test_counts_and_headings_are_worded_as_they_count(site):
    """No page says "1 commits" or "3 commit", and a list of broken absences is
    introduced as "Broken absences", as the header names them."""
    checked = 0
    for path in sorted(site.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"<script.*?</script>|<style.*?</style>", " ", text, flags=re.S)
        text = html.unescape(re.sub(r"<[^>]+>", " ", text))
        text = " ".join(text.split())
        assert not WRONG_PLURAL.search(text), (path.name, WRONG_PLURAL.search(text))
        assert not re.search(r"(^|[.:>]\s*)broken absences", text), path.name
        checked += 1
    assert checked >= 7
