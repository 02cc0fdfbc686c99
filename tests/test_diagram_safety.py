"""What no diagram may carry into the report: directives, styles the check cannot vouch
for, HTML in labels, and raw or entity-coded control, bidi and escape characters.

The parser refuses them in hand-written diagrams; generated labels and captions show
such characters as ``<U+202E>``, as record cards do; the report's Mermaid is locked so
that a diagram cannot change its configuration even if one slipped through.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
import pytest

from conftest import PathStub, RouteStub, needs_chromium, render_store_report
from tracework.records.diagrams import (
    DiagramError,
    drawable,
    from_routes,
    label,
    parse,
    runtime,
)
from tracework.render.export import report_js
from tracework.text import visible

RLO, ESC = "\u202e", "\x1b"
HIDDEN = f"Evil {RLO}gnp.exe {ESC}[31mred \u2066x\u2069 \u200b"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        # styles: only plain colours and widths (url() fetched; Mermaid fails on it too)
        ('flowchart LR\n  a["x"] --> b\n  style a fill:url(https://evil.example/x)', "`style`"),
        ("flowchart LR\n  a --> b\n  classDef c fill:url(#x)", "`classDef`"),
        ("flowchart LR\n  a --> b\n  classDef c fill:red}\n", "`classDef`"),
        ("flowchart LR\n  a --> b\n  linkStyle 0 stroke:var(--x)", "`linkStyle`"),
        ("flowchart LR\n  a --> b\n  style a background-image:red", "`style`"),
        ("flowchart LR\n  a --> b\n  style a fill:red !important", "`style`"),
        ("flowchart LR\n  a --> b\n  style a fill:#f00; b --> c", "own"),
        # directives: Mermaid reads %%{ on any line, in a label or a comment
        (
            'flowchart LR\n  a --> b\n  %%{init: {"themeCSS": ".n { fill: url(https://e.x/) }"}}%%',
            "directive",
        ),
        ('flowchart LR\n  a["%%{init: {}}%%"] --> b', "directive"),
        ("flowchart LR\n  %% bind a RT-CMP-x %%{wrap}%%\n  a --> b", "directive"),
        ("flowchart LR\n  %% {init}\n  a --> b", "directive"),
        # click, call and href
        ('flowchart TB\n  a["x"]\n  click a href "https://evil.example"', "refused"),
        ("flowchart TB\n  a --> b\n  call f()", "refused"),
        ('flowchart TB\n  a --> b\n  href "x"', "refused"),
        # HTML in labels (strict mode keeps <img>, which fetches)
        ('flowchart LR\n  a["<img src=https://evil.example/i>"] --> b', "HTML in a label"),
        ('flowchart LR\n  a["`x <img src=https://evil.example/i>`"] --> b', "HTML in a label"),
        ("flowchart LR\n  a -->|<img src=x>| b", "HTML in a label"),
        ('flowchart LR\n  subgraph s ["<a href=https://evil.example>x</a>"]\n  a\n  end', "HTML"),
        ("flowchart LR\n  a[</pre><script>alert(1)</script>] --> b", "HTML in a label"),
        # control, bidi and escape characters, raw (comments included) or as entity codes
        (f'flowchart LR\n  a["{RLO}x"] --> b', "U\\+202E"),
        (f"flowchart LR\n  a[x{ESC}[31m] --> b", "U\\+001B"),
        (f"flowchart LR\n  %% {RLO} hidden\n  a --> b", "U\\+202E"),
        (f"flowchart LR\n  a --> b\n  %% bind a RT-CMP-x{RLO}", "U\\+202E"),
        ('flowchart LR\n  a["#8238;x"] --> b', "entity code.*U\\+202E"),
        ('flowchart LR\n  a["#rlm;x"] --> b', "entity code.*U\\+200F"),
        ('flowchart LR\n  a["&#8238;x"] --> b', "entity code.*U\\+202E"),
        ('flowchart LR\n  a["#27;[31m"] --> b', "entity code.*U\\+001B"),
    ],
)
def test_the_check_refuses_what_mermaid_would_act_on(text, problem):
    with pytest.raises(DiagramError, match=problem):
        parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "flowchart LR\n  a --> b\n  style a fill:#f00,stroke:#333,stroke-width:2px,"
        "color:#fff,stroke-dasharray:5 5",
        "flowchart LR\n  a:::hot --> b\n  classDef hot,cold fill:#0f0, stroke : blue\n"
        "  class a,b hot\n  linkStyle 0 stroke:red,stroke-width:3.5px\n  style b fill:red;",
        'flowchart LR\n  a["one<br>two<br/>three, 1 < 2"] --> b',
        'flowchart LR\n  a["#quot;#93;#60;script#62;"] --> b["100% #35;1"]',
        "flowchart LR\n  %% a comment: </pre><script>alert(2)</script>\n  a --> b",
        "flowchart LR\r\n  a --> b\r\n",
        'flowchart LR\n  a["#38;rlm; and #38;#35;8238; shown as written"] --> b',
    ],
)
def test_plain_colours_line_breaks_and_escaped_text_still_pass(text):
    parse(text)


#: Text built to turn a code span into markup once its backticks become <code>.
CODE_ATTACKS = [
    "<img src=https://evil.example/i>",
    "</code><script>alert(1)</script><code>",
    '"] --> x["',
    "#60;img src=x#62;",
    "&lt;b&gt;",
    "a ` b",
    "``",
    f"{RLO}x",
]


@pytest.mark.parametrize("attack", CODE_ATTACKS)
def test_code_spans_add_no_markup_but_code(attack):
    """Generated labels keep `` `code` `` for the code font; whatever is inside, the
    drawn text gains only <code> elements, and the check sees the same span."""
    titles = {"RT-CMP-a": f"uses `{attack}` and {attack}", "RT-OBJ-b": f"`{attack}`"}
    route = RouteStub("RT-RTE-r", f"via `{attack}`", ("RT-CMP-a", "RT-OBJ-b"))
    path = PathStub("RT-BAP-p", "RT-OBJ-b", f"`{attack}`", attack)
    for source in (
        from_routes([route], titles, "LR"),
        runtime(["RT-CMP-a"], [route], [path], titles),
    ):
        parse(source)
        tags = re.findall(r"<[A-Za-z/!?][^>]*>?", drawable(source))
        assert set(tags) <= {"<code>", "</code>"}, tags
        assert visible(drawable(source)) == drawable(source)


@pytest.mark.parametrize(
    "text",
    [
        'flowchart LR\n  a["`<img src=x>`"] --> b',
        'flowchart LR\n  a["`</code><script>`"] --> b',
        "flowchart LR\n  a -->|`<b>x</b>`| b",
    ],
)
def test_code_spans_in_hand_written_labels_are_checked_like_other_text(text):
    with pytest.raises(DiagramError, match="HTML in a label"):
        parse(text)


def test_generated_labels_show_hidden_characters_as_cards_do():
    escaped = label(HIDDEN)
    assert RLO not in escaped and ESC not in escaped and "\u200b" not in escaped
    assert "#60;U+202E#62;" in escaped and "#60;U+001B#62;" in escaped
    shown = " ".join(visible(HIDDEN).split())
    assert parse(f"flowchart LR\n  n[{escaped}]").nodes["n"] == shown
    titles = {"RT-CMP-a": HIDDEN, "RT-OBJ-b": "Bee"}
    routes = from_routes([RouteStub("RT-RTE-r", HIDDEN, ("RT-CMP-a", "RT-OBJ-b"))], titles, "LR")
    paths = runtime([], [], [PathStub("RT-BAP-p", "RT-OBJ-b", HIDDEN, HIDDEN)], titles)
    for text in (routes, paths):
        assert visible(text) == text  # nothing left to neutralise
        parsed = parse(text)
        assert shown in [*parsed.nodes.values(), *(edge[2] for edge in parsed.edges)]


def test_report_js_keeps_mermaid_strict_and_locks_its_configuration():
    js = report_js().read_text(encoding="utf-8")
    init = js[js.index("mermaid.initialize(") :]
    init = init[: init.index(");")]
    assert re.search(r"securityLevel:\s*\"strict\"", init)
    assert re.search(r"secure:\s*locked", init)
    locked = js[js.index("const locked") : js.index("mermaid.initialize(")]
    for key in ("theme", "themeCSS", "themeVariables", "securityLevel", "flowchart", "secure"):
        assert f'"{key}"' in locked, key


# -- a rendered report -------------------------------------------------------------------

CELL = f"""q = src.quote("pkg/store.py", symbol="Store.put")
H = {HIDDEN!r}
wb.component("RT-CMP-store", label=H, identity="The store.", evidence=[q])
wb.operative_object("RT-OBJ-items", label="Items", description="The dict.")
wb.route("RT-RTE-put", label=H, progression="p", implementation="wired",
         operation="uninspected", passes_through=["RT-CMP-store", "RT-OBJ-items"])
wb.authority_path("RT-BAP-items", consumer=H, channel=H, force="data", horizon="the call",
                  source_material="RT-OBJ-items")
wb.diagram("routes", caption="Routes " + H, routes=["RT-RTE-put"])
wb.diagram("authority", caption=H, records=["RT-BAP-items"])
wb.diagram("hand", 'flowchart LR\\n  a["x"] --> RT-CMP-store', caption=H)
wb.claim("RT-CLM-hidden", label=H, claim=H, assessment=H, operation="uninspected", notes=H)
wb.mark("hidden", "m", present=True, evidence=[q], note=H)
from IPython.display import HTML, Markdown, display
display(Markdown("## Heard " + H + "\\n\\n" + H))
display(HTML("<p title='" + H + "'>" + H + "</p>"))
print(H)
"""
#: The analyst's own prose and a heading.
MARKDOWN = nbformat.v4.new_markdown_cell(f"## Notes {HIDDEN}\n\n{HIDDEN}")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report whose records, route label, consumer, channel, captions, a mark's note and
    its rubric, Markdown cells and outputs, HTML and printed output hold an RLO, an ESC,
    isolates and a zero-width space."""
    root = tmp_path_factory.mktemp("safety")
    rubrics = root / "ws" / "registers" / "rubrics"
    rubrics.mkdir(parents=True)
    hidden = HIDDEN.encode("unicode_escape").decode("ascii")  # YAML's own escapes
    (rubrics / "hidden.yaml").write_text(
        f'title: "Rubric {hidden}"\nmechanisms:\n  - {{id: m, name: "M {hidden}", '
        f'definition: "D {hidden}", evidence: "E {hidden}"}}\n'
    )
    return render_store_report(root, [MARKDOWN, CELL])


@pytest.mark.slow
def test_no_hidden_character_reaches_the_report_or_its_diagram_files(report):
    page = (report / "report.html").read_text(encoding="utf-8")
    # every place shows the marks: contents, prose, outputs, cards, the mark's note
    shown = html.escape(visible(HIDDEN))
    toc = re.search(r'<nav class="tw-toc".*?</nav>', page, re.S)
    assert toc and f"Rubric {shown}" in toc.group(0)
    assert f"<h2>Notes {shown}</h2>" in page and f"<h2>Heard {shown}</h2>" in page
    assert page.count(shown) >= 12
    assert f'title="{shown}"' in page
    files = {p.stem: p.read_text(encoding="utf-8") for p in (report / "diagrams").glob("*.mmd")}
    assert sorted(files) == ["authority", "hand", "routes"]
    for text in (page, *files.values()):
        for ch in (RLO, ESC, "\u2066", "\u2069", "\u200b"):
            assert ch not in text
    figures = re.findall(r'<figure [^>]*\bid="diagram-([\w-]+)"', page)
    assert sorted(figures) == ["authority", "hand", "routes"]
    for name, source in files.items():
        figure = re.search(rf'<figure [^>]*\bid="diagram-{name}".*?</figure>', page, re.S)
        assert figure
        block = figure.group(0)
        # the caption, as text alternative and as caption, shows the marks as cards do
        caption = re.search(r"<figcaption>(.*?)</figcaption>", block, re.S)
        assert caption and html.escape(visible(HIDDEN), quote=True) in caption.group(1)
        assert "&lt;U+202E&gt;" in caption.group(1) and "&lt;U+001B&gt;" in caption.group(1)
        assert f'aria-label="{caption.group(1)}"' in block
        # the folded source is the .mmd file; the Mermaid text drawn is the same with
        # its code spans as <code> elements
        drawn = re.search(r'<pre class="mermaid">(.*?)</pre>', block, re.S)
        assert drawn and html.unescape(drawn.group(1)) == drawable(source)
        fold = re.search(r"<pre><code>(.*?)</code></pre>", block, re.S)
        assert fold and html.unescape(fold.group(1)) == source
    # the generated labels show the marks too, as the record cards do
    assert html.escape(label(HIDDEN)[1:-1], quote=True) in page
    assert "#60;U+202E#62;" in files["routes"] and "#60;U+001B#62;" in files["authority"]


@pytest.mark.slow
@pytest.mark.browser
def test_a_directive_that_slipped_past_the_check_changes_nothing(browser, report):
    """The report's own Mermaid set-up, fed diagrams the check refuses: no configuration
    from a directive or front matter is applied, and nothing outside is requested."""
    needs_chromium()
    page_html = (report / "report.html").read_text(encoding="utf-8")
    head = page_html[: page_html.index("</head>")]
    css = "fill: url(https://evil.example/x)"
    hostile = [
        f'flowchart LR\n  a --> b\n  %%{{init: {{"themeCSS": ".node rect {{ {css} }}"}}}}%%',
        '%%{init: {"securityLevel": "loose", "theme": "dark"}}%%\nflowchart LR\n  a --> b',
        f'---\nconfig:\n  themeCSS: ".node rect {{ {css} }}"\n---\nflowchart LR\n  a --> b',
    ]
    figures = "".join(
        f'<figure class="tw-diagram" id="h{i}" data-bindings="{{}}">'
        f'<pre class="mermaid">{html.escape(text)}</pre></figure>'
        for i, text in enumerate(hostile)
    )
    probe = report / "probe.html"
    probe.write_text(f"{head}</head><body>{figures}</body></html>", encoding="utf-8")
    try:
        page = browser.new_page()
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(probe.as_uri())
        page.wait_for_function("document.documentElement.dataset.diagrams !== undefined")
        assert page.evaluate("document.documentElement.dataset.diagrams") == "done"
        fills = page.evaluate(
            "Array.from(document.querySelectorAll('figure svg g.node rect'))"
            ".map(r => getComputedStyle(r).fill)"
        )
        # every node drawn with the page's own theme: no themeCSS, no other theme
        assert len(fills) >= 6 and len(set(fills)) == 1 and "url(" not in fills[0], fills
        assert page.evaluate("mermaid.mermaidAPI.getConfig().securityLevel") == "strict"
        outside = [u for u in requests if not u.startswith(("file://", "data:"))]
        assert outside == [], outside
        page.close()
    finally:
        probe.unlink()
