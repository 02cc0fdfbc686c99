"""The page's accessibility pass without a tree (:mod:`tracework.render.accessibility`)
gives nbconvert's bytes: on whole pages, stock exporter against ours, and on generated
HTML, well formed or not, against BeautifulSoup's pass itself."""

from __future__ import annotations

import copy
import logging

import nbformat
import pytest
from bs4 import BeautifulSoup
from hypothesis import given, settings
from hypothesis import strategies as st
from nbconvert import HTMLExporter

from tracework.render.accessibility import MISSING_ALT, accessible_page
from tracework.render.export import _page_exporter


def soup_pass(html: str) -> tuple[str, int]:
    """What nbconvert 7.17's HTMLExporter.from_notebook_node does after its template."""
    soup = BeautifulSoup(html, features="html.parser")
    missing = 0
    for elem in soup.select("img:not([alt])"):
        elem.attrs["alt"] = MISSING_ALT
        missing += 1
    for elem in soup.select(".jp-Notebook div.jp-Cell-inputWrapper"):
        elem.attrs["tabindex"] = "0"
    for elem in soup.select(".jp-Notebook div.jp-OutputArea-output"):
        elem.attrs["tabindex"] = "0"
    return str(soup), missing


CASES = [
    "<!DOCTYPE html>\n<html><head><meta charset='latin-1'></head><body></body></html>",
    '<meta http-equiv="Content-Type" content="text/html; charset=latin-1">',
    '<meta http-equiv="refresh" content="5; charset=latin-1">',
    "<p>a &amp; b &lt; c &gt; d &nbsp; &unknown; &#169; &#x41; &#0; &#xZZ; & lone</p>",
    "<div class='  jp-Notebook  x '><div class='jp-Cell-inputWrapper' tabindex='3'>"
    "<img src=a.png></div><div class=jp-OutputArea-output></div></div>",
    "<div class=jp-Cell-inputWrapper>outside the notebook</div>",
    "<div class=jp-notebook><div class=jp-Cell-inputWrapper>case counts</div></div>",
    "<span class=jp-Notebook><div class='a jp-OutputArea-output'></div></span>",
    "<b><i>unclosed</b> after</i> </div> stray end <br></br> <p/> <img/>",
    "<pre>\n\n  keep   </pre>  \n\n  <textarea>  \t </textarea> \t <p> </p>",
    "<script>if (a < b && c > d) {}</script><style>p > a { }</style>",
    "<!----><!-- a --><!--\n\n--><?php x ?><![CDATA[ x ]]><!ELEMENT x>",
    "<a href='x?a=1&b=2' title='say \"hi\"' data-x=\"it's\" both='\"&#39;' b>x</a>",
    "<td headers='a  b'><a rel='nofollow  noopener'>r</a></td><input disabled>",
    "<img alt='' src=x><IMG SRC=y><svg><image href=z /></svg>",
    "<p title=a title=b class=c class=d>duplicates</p>",
    "<template><p>in a template &amp;</p></template><textarea><b>x</b></textarea>",
    "text \u00a0\u2028 only",
    "",
    "   ",
    "<",
    "<p>unterminated &am",
]


@pytest.mark.parametrize("html", CASES)
def test_the_same_bytes_as_beautifulsoup(html):
    assert accessible_page(html) == soup_pass(html)


_TAGS = st.sampled_from(["div", "p", "span", "img", "br", "pre", "a", "b", "td", "script", "meta"])
_CLASSES = st.sampled_from(
    ["jp-Notebook", "jp-Cell-inputWrapper", "jp-OutputArea-output", "x", "", " ", "a  b"]
)
_ATTRIBUTE = st.tuples(
    st.sampled_from(["class", "alt", "id", "rel", "title", "tabindex", "charset", "href", "x"]),
    st.one_of(_CLASSES, st.text(alphabet="ab \"'&<>;#\n", max_size=6)),
    st.sampled_from(['"', "'", ""]),
)


@st.composite
def _tag(draw: st.DrawFn) -> str:
    name = draw(_TAGS)
    attrs = "".join(
        f" {key}={quote}{value if quote else value.replace(' ', '') or 'v'}{quote}"
        for key, value, quote in draw(st.lists(_ATTRIBUTE, max_size=3))
    )
    return f"<{name}{attrs}{draw(st.sampled_from(['', '/']))}>"


_PIECES = st.one_of(
    _tag(),
    _TAGS.map(lambda name: f"</{name}>"),
    st.text(alphabet="ab \n\t&;#<>x\u00a0", max_size=8),
    st.sampled_from(["&amp;", "&nbsp;", "&#65;", "&#x3c;", "&bogus;", "<!-- c -->", "<!---->"]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_the_same_bytes_as_beautifulsoup_on_generated_html(html):
    assert accessible_page(html) == soup_pass(html)


def _notebook() -> nbformat.NotebookNode:
    v4 = nbformat.v4
    return v4.new_notebook(
        cells=[
            v4.new_markdown_cell(
                "# Title\n\nSome *text* & `code`, an ![](data:image/png;base64,AA==)"
            ),
            v4.new_code_cell(
                "print('x')",
                outputs=[
                    v4.new_output("stream", name="stdout", text="out <&>\n\n"),
                    v4.new_output(
                        "display_data",
                        data={"text/html": "<table><tr><td>1</td></tr></table><img src=x>"},
                    ),
                    v4.new_output("display_data", data={"image/png": "AA=="}),
                ],
            ),
        ]
    )


@pytest.mark.parametrize("exclude_input", [False, True])
def test_a_page_is_the_stock_exporter_s(exclude_input, caplog):
    options = {"exclude_input": exclude_input, "sanitize_html": True}
    nb = _notebook()  # once: its cells' ids are random
    stock, _ = HTMLExporter(**options).from_notebook_node(copy.deepcopy(nb))
    with caplog.at_level(logging.WARNING):
        ours, _ = _page_exporter()(**options).from_notebook_node(copy.deepcopy(nb))
    assert ours == stock
    assert "Alternative text is missing on" in caplog.text
