"""HTML fragments: escaping of subject and analyst text, analyst HTML, page nonces, forge links."""

from __future__ import annotations

import hashlib
import html as html_module
import json
import re
from html.parser import HTMLParser

import nbformat
import pytest

from tracework.git.forge import upstream_url
from tracework.render.export import reader_notebook
from tracework.render.pagesafety import NONCE_SLOT, clean_html, seal
from tracework.text import visible, visible_markup
from tracework.views.cards import code_block, esc, markdown

C = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/acme/lark.git", f"https://github.com/acme/lark/blob/{C}/a/b.py#L3-L9"),
        ("git@github.com:acme/lark.git", f"https://github.com/acme/lark/blob/{C}/a/b.py#L3-L9"),
        ("https://gitlab.com/g/sub/p", f"https://gitlab.com/g/sub/p/-/blob/{C}/a/b.py#L3-9"),
        ("https://codeberg.org/o/r", f"https://codeberg.org/o/r/src/commit/{C}/a/b.py#L3-L9"),
        ("ssh://git@bitbucket.org/o/r.git", f"https://bitbucket.org/o/r/src/{C}/a/b.py#lines-3:9"),
    ],
)
def test_known_forges_get_a_link_to_the_line_range(url, expected):
    assert upstream_url(url, C, "a/b.py", (3, 9)) == expected


@pytest.mark.parametrize(
    "url", ["https://example.org/o/r", "/srv/git/r", "https://github.com/o/../../evil"]
)
def test_unknown_hosts_and_odd_paths_get_no_link(url):
    assert upstream_url(url, C, "a.py", (1, 2)) is None


def test_paths_in_links_are_percent_encoded():
    link = upstream_url("https://github.com/o/r", C, 'dir/a "b"#.py', (1, 1))
    assert link is not None and " " not in link and '"' not in link and "#.py" not in link


def test_markdown_refuses_raw_html_and_script_links():
    html = markdown("<script>alert(1)</script> [x](javascript:alert(1)) `<b>`")
    assert "<script" not in html and 'href="javascript' not in html
    assert "&lt;script&gt;" in html and "<code>&lt;b&gt;</code>" in html


def test_code_is_escaped_and_control_characters_made_visible():
    html = code_block('x = "</pre><script>alert(1)</script>"\x1b[31m\n', "a.py", 4)
    assert "<script" not in html and "\x1b" not in html
    text = html_module.unescape(re.sub(r"<[^>]+>", "", html))
    assert '"</pre><script>alert(1)</script>"<U+001B>[31m' in text
    assert text.startswith("4x = ")  # numbering starts at the quote's first line


def test_esc_covers_attributes_and_bidi_controls():
    assert esc('"a" <b> & \u202e') == "&quot;a&quot; &lt;b&gt; &amp; &lt;U+202E&gt;"


def test_an_ambiguous_quote_names_the_file_of_each_candidate_escaped():
    from tracework.drift.check import CheckItem
    from tracework.register.models import Quote
    from tracework.views.cards import QuoteInfo, quote_html

    text = "def whistle():\n    return 1\n"
    quote = Quote(
        source="SRC-1",
        path="kettle.py",
        lines=(16, 17),
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        text=text,
    )
    drift = CheckItem(
        "quote",
        "Q-whistle",
        "SRC-1",
        "kettle.py",
        "ambiguous",
        (16, 17),
        candidates=((2, 3), (5, 6), (9, 10)),
        detail="same bytes in several other files",
        candidate_paths=("horn.py", "<siren>.py", "kettle.py"),
    )
    page = quote_html(QuoteInfo("Q-whistle", quote, C, C, "", drift))
    assert "candidates horn.py:2–3, &lt;siren&gt;.py:5–6, 9–10" in page
    assert "<siren>" not in page


def test_a_moved_quote_links_its_pinned_lines_and_where_it_is_now():
    from tracework.drift.check import CheckItem
    from tracework.register.models import Quote
    from tracework.views.cards import QuoteInfo, quote_html

    text = "def whistle():\n    return 1\n"
    quote = Quote(
        source="SRC-1",
        path="kettle.py",
        lines=(16, 17),
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        text=text,
    )
    now = "b" * 40
    moved = CheckItem(
        "quote", "Q-w", "SRC-1", "kettle.py", "moved", (16, 17), (25, 26), "horn.py",
        detail="same bytes in another file",
    )  # fmt: skip
    page = quote_html(QuoteInfo("Q-w", quote, C, now, "https://github.com/acme/lark", moved))
    assert f"https://github.com/acme/lark/blob/{C}/kettle.py#L16-L17" in page  # at the pin
    assert f"https://github.com/acme/lark/blob/{now}/horn.py#L25-L26" in page  # now


# -- how displays look in JupyterLab and on the page ------------------------------------


def _quote_info(qid: str, path: str, first: int, text: str, state: str | None = None):
    from tracework.drift.check import CheckItem
    from tracework.register.models import Quote
    from tracework.views.cards import QuoteInfo

    last = first + text.count("\n") - 1
    quote = Quote(
        source="SRC-1",
        path=path,
        lines=(first, last),
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        text=text,
    )
    drift = None
    if state is not None:
        drift = CheckItem("quote", qid, "SRC-1", path, state, (first, last), None, detail="d")
    return QuoteInfo(qid, quote, C, C, "https://github.com/acme/lark", drift)


def _selectors(rules) -> list[str]:
    """Every selector of a stylesheet, nested ones joined to their parent's."""
    import tinycss2

    found = []
    for rule in rules:
        if rule.type in ("whitespace", "comment"):
            continue
        assert rule.type == "qualified-rule", rule  # no @import, @font-face, @media …
        prelude = tinycss2.serialize(rule.prelude).strip()
        found += [part.strip() for part in prelude.split(",")]
        nested = [
            r for r in tinycss2.parse_blocks_contents(rule.content) if r.type == "qualified-rule"
        ]
        for inner in nested:
            inner_prelude = tinycss2.serialize(inner.prelude).strip()
            assert inner_prelude.startswith("& "), inner_prelude
            found.append(prelude + inner_prelude[1:])
    return found


def test_every_rule_of_the_display_style_stays_inside_tracework_displays():
    """A display's style shares JupyterLab's page: a selector that does not start with a
    ``.tw-`` class (``pre``, ``body``, ``*``) would restyle the notebook itself, and an
    at-rule or a ``url(`` could load something."""
    import tinycss2

    from tracework.views.cards import display_css

    css = display_css()
    assert "url(" not in css and "@" not in css and "</" not in css
    selectors = _selectors(tinycss2.parse_stylesheet(css))
    assert len(selectors) > 100
    outside = [s for s in selectors if not re.match(r"\.tw-[\w-]+", s)]
    assert outside == []
    # the code's colours: a light palette, and a dark one chosen by JupyterLab's theme
    assert ".tw-hl .k" in selectors
    assert '.tw-hl:where([data-jp-theme-light="false"] *) .k' in selectors
    # JupyterLab's theme variables, falling back to the report's own
    assert "var(--jp-error-color1,var(--tw-bad," in css


def test_every_display_carries_the_style_and_the_page_sanitiser_drops_it():
    from tracework.notebook.jupyter import Html, QuoteView
    from tracework.views.cards import display_css

    shown = [
        Html('<p class="tw-summary">x</p>', "x")._repr_html_(),
        QuoteView("Q-a", _quote_info("Q-a", "a.py", 3, "x = 1\n"))._repr_html_(),
    ]
    for markup in shown:
        assert markup.startswith(f"<style>{display_css()}</style>")
        cleaned = clean_html(markup)
        assert "<style" not in cleaned and ".tw-badge" not in cleaned


def test_a_record_cites_its_quotes_folded_and_each_card_appears_once():
    from tracework.records.kinds import Component
    from tracework.views.cards import records_section

    quotes = {
        "Q-a": _quote_info("Q-a", "pkg/a.py", 18, "class EchoModel:\n    pass\n"),
        "Q-b": _quote_info("Q-b", "pkg/b.py", 4, "def gone():\n    return 1\n", "missing"),
    }
    records = [
        Component(id=f"RT-CMP-{n}", label=n, identity="i", evidence=("Q-a", "Q-b"))
        for n in ("one", "two")
    ]
    section = records_section(records, quotes, {}, {})
    cards = re.findall(r'<figure class="tw-quote[^"]*" id="([^"]+)"', section)
    assert cards == ["Q-a", "Q-b"]  # each quote's card once, in "Quoted evidence"
    assert section.index('id="quoted-evidence"') < section.index('<figure class="tw-quote')
    for article in re.findall(r"<article.*?</article>", section):
        assert "<figure" not in article
        cites = re.findall(r'<details class="tw-cite"><summary>(.*?)</summary>', article)
        assert len(cites) == 2
        assert 'href="#Q-a"' in cites[0] and '<wbr>a.py:<span class="tw-lines">18–19' in cites[0]
        assert "tw-badge tw-verified" in cites[0]
        assert '<wbr>b.py:<span class="tw-lines">4–5' in cites[1]
        assert "tw-badge tw-missing" in cites[1]
        assert '<span class="linenos">18</span>' in article  # the lines, expandable in place


def test_a_record_card_keeps_its_id_and_kind_apart():
    from tracework.records.kinds import Component
    from tracework.views.cards import record_html

    card = record_html(Component(id="RT-CMP-x", label="X", identity="i"), {}, {})
    text = html_module.unescape(re.sub(r"<[^>]+>", "", card))
    assert text.startswith("RT-CMP-x component")


@pytest.mark.parametrize(
    ("files", "matched", "expected"),
    [
        (1, [], "searched 1 text file at"),
        (2, [], "searched 2 text files at"),
        (1, ["f0.py"], "1 match in 1 file (of 1 text file searched) at"),
        (3, ["f0.py", "f1.py"], "2 matches in 2 files (of 3 text files searched) at"),
        (4, ["f2.py"] * 4, "4 matches in 1 file (of 4 text files searched) at"),
    ],
)
def test_absences_count_in_words_that_agree(files, matched, expected):
    """Matches are counted in the distinct files that hold them; how many files were
    searched is said apart (it was once given as where the matches are)."""
    from tracework.records.absences import AbsenceResult, Match
    from tracework.views.cards import absence_html

    found = tuple(Match(path, n + 1, "open(x)", "open") for n, path in enumerate(matched))
    result = AbsenceResult(C, tuple(f"f{i}.py" for i in range(files)), found)
    text = re.sub(r"<[^>]+>", "", absence_html(result))
    assert expected in text


# -- analyst HTML ----------------------------------------------------------------------


class _Tags(HTMLParser):
    """Every element and attribute of a fragment, as a browser's parser would list them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def _elements(fragment: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(fragment)
    return parser.found


@pytest.mark.parametrize(
    "attack",
    [
        '<meta http-equiv="refresh" content="0;url=https://evil.example/">',
        '<base href="https://evil.example/">',
        '<script src="../../x.js"></script>',
        "<script>alert(1)</script>",
        '<img src="x" onerror="alert(1)">',
        '<img src="https://evil.example/i.png">',
        '<img src="../../local.png">',
        '<details open ontoggle="alert(1)"><summary>s</summary></details>',
        '<a href="javascript:alert(1)">x</a>',
        '<a href=" JaVaScRiPt:alert(1)">x</a>',
        '<a href="data:text/html,<script>alert(1)</script>">x</a>',
        '<a href="vbscript:x">x</a>',
        '<iframe src="https://evil.example"></iframe>',
        '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
        '<object data="x.swf"></object>',
        '<embed src="x.js">',
        '<form action="https://evil.example"><input name="q"><button>go</button></form>',
        '<svg onload="alert(1)"><script>alert(1)</script><image href="https://e.x/i"/></svg>',
        "<math><mtext><script>alert(1)</script></mtext></math>",
        '<div style="background:url(https://evil.example/x.png)">x</div>',
        '<div style="position:fixed;inset:0">x</div>',
        "<style>body{background:url(https://evil.example/x.png)}</style>",
        '<link rel="stylesheet" href="https://evil.example/x.css">',
        '<video src="https://evil.example/v.mp4" autoplay></video>',
        '<bdo dir="rtl">reversed</bdo>',
        '<figure class="tw-diagram"><pre class="mermaid">flowchart LR</pre></figure>',
        '<a href="#x" ping="https://evil.example/ping" target="_blank">x</a>',
        '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></p></noscript>',
        "<template><script>alert(1)</script></template>",
    ],
)
def test_analyst_html_keeps_nothing_that_navigates_loads_or_runs(attack):
    for tag, attrs in _elements(clean_html(attack)):
        assert tag not in {
            "script",
            "meta",
            "base",
            "iframe",
            "object",
            "embed",
            "form",
            "input",
            "button",
            "svg",
            "math",
            "image",
            "style",
            "link",
            "video",
            "bdo",
            "noscript",
            "template",
        }, tag
        assert not [a for a in attrs if a.startswith("on") or a in ("ping", "target", "dir")]
        href = (attrs.get("href") or "").strip().lower()
        assert not href.startswith(("javascript:", "data:", "vbscript:")), href
        assert tag != "img" or "src" not in attrs or str(attrs["src"]).startswith("data:image/")
        style = attrs.get("style") or ""
        assert "url(" not in style and "position" not in style
        assert "mermaid" not in (attrs.get("class") or "").split()
        assert "tw-diagram" not in (attrs.get("class") or "").split()


def test_analyst_html_keeps_the_formatting_analysts_use():
    fragment = (
        '<h2 id="Notes">Notes<a class="anchor-link" href="#Notes">¶</a></h2>'
        "<p><strong>b</strong> <em>i</em> <code>c</code> <del>d</del> <sub>2</sub> "
        '<a href="https://example.org/x">web</a> <a href="mailto:a@example.org">mail</a> '
        '<a href="#RT-CMP-x">card</a> <a href="../other.html">near</a> '
        '<span style="color: red; font-weight: bold">red</span></p>'
        '<table><thead><tr><th style="text-align:left">a</th></tr></thead>'
        '<tbody><tr><td style="text-align:right" colspan="2">1</td></tr></tbody></table>'
        '<pre><code class="language-python">x = 1</code></pre>'
        '<blockquote><ul><li>one</li></ul><ol start="3"><li>three</li></ol></blockquote>'
        '<details open=""><summary>more</summary><dl><dt>t</dt><dd>d</dd></dl></details>'
        '<img src="data:image/png;base64,iVBORw0KGgo=" alt="a plot" width="40">'
        '<figure class="tw-quote tw-state-verified" id="Q-keep"><figcaption>'
        '<span class="tw-badge tw-verified" title="sha256 ab">verified</span></figcaption>'
        "</figure><hr><kbd>Ctrl</kbd>"
    )
    assert clean_html(fragment) == fragment.replace(
        "color: red; font-weight: bold", "color:red;font-weight:bold"
    )


def test_visible_markup_marks_hidden_characters_in_text_and_attributes():
    fragment = '<p title="a\u202eb">x\x1by\r\nz</p>'
    assert visible_markup(fragment) == '<p title="a&lt;U+202E&gt;b">x&lt;U+001B&gt;y\nz</p>'
    text = "Evil \u202egnp.exe \x1b[31m \u2066x\u2069 \u200b"
    assert visible_markup(html_module.escape(text)) == esc(text)


def test_a_page_nonce_is_its_own_digest_filled_in_its_head_only():
    page = (
        f"<html><head><meta content=\"script-src 'nonce-{NONCE_SLOT}'\">"
        f'<script src="a.js" nonce="{NONCE_SLOT}"></script></head>'
        f"<body><p>{NONCE_SLOT}</p></body></html>"
    )
    sealed = seal(page)
    head, body = sealed.split("</head>")
    nonce = re.search(r"'nonce-([A-Za-z0-9_-]+)'", head)
    assert nonce and f'nonce="{nonce.group(1)}"' in head and NONCE_SLOT not in head
    assert len(nonce.group(1)) == 24 and body == f"<body><p>{NONCE_SLOT}</p></body></html>"
    assert seal(page) == sealed  # identical pages, identical bytes
    assert seal(page.replace("<p>", "<p>!")) != sealed.replace("<p>", "<p>!")


def test_a_report_shows_only_outputs_that_cannot_run_and_no_addresses_they_name():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={"application/javascript": "alert(1)"}),
        nbformat.v4.new_output(
            "display_data",
            data={"application/vnd.jupyter.widget-view+json": {"model_id": "m"}, "text/plain": "w"},
        ),
        nbformat.v4.new_output(
            "display_data",
            data={"image/png": "iVBORw0KGgo="},
            metadata={
                "image/png": {"width": "1 onerror=alert(1)", "height": 30},
                "filenames": {"image/png": "https://evil.example/p.png"},
                "tracework": "x",
            },
        ),
    ]
    nb.cells.append(cell)
    reader, _ = reader_notebook(nb)
    outputs = reader.cells[0].outputs
    assert [dict(o.data) for o in outputs] == [{"text/plain": "w"}, {"image/png": "iVBORw0KGgo="}]
    assert outputs[1].metadata == {"tracework": "x", "image/png": {"height": 30}}
    assert cell.outputs[2].metadata["filenames"]  # the executed notebook is left as it was


@pytest.mark.slow  # renders a report
def test_a_report_page_carries_the_display_style_once_and_no_display_brings_its_own(tmp_path):
    """In JupyterLab every display carries the stylesheet; on the page it is in the head
    once, and the copies the displays brought are gone (a page of 50 records would
    otherwise carry 50 copies)."""

    from conftest import render_store_report
    from tracework.views.cards import display_css

    cells = [
        """q = src.quote("pkg/store.py", symbol="Store.put")
wb.component("RT-CMP-store", label="Store", identity="The store.", evidence=[q])
wb.component("RT-CMP-again", label="Again", identity="Again.", evidence=[q]);"""
    ]
    folder = render_store_report(tmp_path, cells)
    page = (folder / "report.html").read_text(encoding="utf-8")
    head, _, body = page.partition("</head>")
    assert head.count(display_css()) == 1
    assert "<style" not in body and ".tw-badge{" not in body
    executed = nbformat.read(folder / "report.ipynb", as_version=4)
    shown = [
        out["data"]["text/html"]
        for cell in executed.cells
        for out in cell.get("outputs", [])
        if "text/html" in out.get("data", {})
    ]
    assert shown and all(h.startswith(f"<style>{display_css()}</style>") for h in shown)
    # each record cites the quote folded; its card is on the page once
    quote = next(iter(json.loads((folder / "records.json").read_text())["quotes"]))
    assert len(re.findall(rf'<figure class="tw-quote[^"]*" id="{quote}"', body)) == 1
    assert body.count(f'<details class="tw-cite"><summary><a class="tw-ref" href="#{quote}"') == 2


# -- found in review: each once made tracework hang, crash or lie --------------


def test_markdown_images_are_not_rendered():
    assert "<img" not in markdown("![x](https://tracker.example/x.png)")


def test_crlf_line_ends_are_not_shown_as_hidden_characters():
    assert visible("a = 1\r\nb = 2\r\n") == "a = 1\nb = 2\n"
    assert visible("lone\rcr") == "lone<U+000D>cr"
