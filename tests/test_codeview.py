"""Quoted code as a page shows it (tracework.views.code): highlighted as its whole file
reads, a row per line, wrapping only at token boundaries; the text itself unchanged.

The browser's view of the same rows (at a phone's width and a desktop's, light and dark)
is in test_publish_page.py.
"""

from __future__ import annotations

import html
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tracework.hashing import sha256_hex
from tracework.text import visible
from tracework.views.code import MAX_INDENT, code_html, diff_html


def rows(markup: str) -> list[tuple[int, str, list[tuple[str, str]]]]:
    """Each row as (line number, indent class, [(token classes, text)]), the text unescaped
    (the pieces of the span's shared indentation keep their token's classes)."""
    out = []
    for number, depth, body in re.findall(
        r'<span class="tw-cl"><span class="linenos">(\d+)</span>'
        r'<span class="tw-cc tw-i(\d+)(?: tw-r\d+)?">(.*?)\n</span></span>',
        markup,
        re.S,
    ):
        pieces = re.findall(
            r'<span class="([^"]*)">([^<]*)</span>|([^<]+)', body.replace("<wbr>", "")
        )
        tokens = [
            (c.replace("tw-lead", "").strip(), html.unescape(t or bare)) for c, t, bare in pieces
        ]
        out.append((int(number), depth, tokens))
    return out


def shown_text(markup: str) -> str:
    """What a reader reads (and copies): the rows' text, the numbers left out."""
    return "".join("".join(t for _, t in tokens) + "\n" for _, _, tokens in rows(markup))


def classes_of(markup: str, word: str) -> set[str]:
    return {c for _, _, tokens in rows(markup) for c, t in tokens if t.strip() == word}


FILE = '''def keep(text):
    """Keep a note.

    return means nothing here
    """
    return store.startswith(text)
'''


def test_a_span_opening_with_the_end_of_a_docstring_is_code_after_it():
    span = '    """\n    return store.startswith(text)\n'  # lines 5-6
    whole = code_html(span, "notes.py", 5, FILE)
    alone = code_html(span, "notes.py", 5)
    # lexed within its file: the closing quotes end the docstring, `return` is a keyword
    assert classes_of(whole, "return") == {"k"}
    assert classes_of(whole, '"""') == {"sd"}
    # lexed alone (how pages did it): the quotes open a string that runs to the end
    assert "k" not in classes_of(alone, "return")
    assert shown_text(whole) == shown_text(alone) == span


def test_a_span_inside_a_docstring_is_the_docstring():
    span = "    return means nothing here\n"  # line 4, inside the docstring
    assert {c for _, _, t in rows(code_html(span, "notes.py", 4, FILE)) for c, _ in t} == {"sd"}
    assert "k" in {c for _, _, t in rows(code_html(span, "notes.py", 4)) for c, _ in t}


def test_a_file_whose_lines_are_not_the_span_is_not_used():
    """The register's text is what the hash covers: a file that does not hold it at the
    quote's lines (another version, another file) only changes nothing."""
    span = '    """\n    return store.startswith(text)\n'
    for whole in (FILE.replace("return store", "return other"), FILE[:20], "", None):
        assert code_html(span, "notes.py", 5, whole) == code_html(span, "notes.py", 5)


def test_rows_carry_their_numbers_and_hanging_indents():
    text = "a = 1\n  b(2)\n\tc = [3,\n" + " " * 40 + "d\n\n"
    found = rows(code_html(text, "x.py", 7))
    assert [n for n, _, _ in found] == [7, 8, 9, 10, 11]
    # two spaces, a tab (4 columns), 40 spaces (capped), an empty line
    assert [d for _, d, _ in found] == ["0", "2", "4", str(MAX_INDENT), "0"]
    assert found[4][2] == []  # an empty line is a row of its own


def leads(markup: str) -> list[tuple[str, str | None]]:
    """Each row's shared indentation as marked (``tw-lead``) and its depth below it
    (``tw-rN``), None for a row without one."""
    out = []
    for depth, body in re.findall(
        r'<span class="tw-cc tw-i\d+(?: tw-r(\d+))?">(.*?)\n</span>', markup, re.S
    ):
        lead = re.findall(r'<span class="[^"]*\btw-lead">([^<]*)</span>', body)
        out.append(("".join(lead), depth or None))
    return out


def test_the_indentation_a_span_shares_is_marked_apart():
    """A phone does not draw what every line of the span is indented by (report.css):
    it is marked, each row says its depth below it, and the text stays the quote's."""
    text = "        if ok:\n            go()\n\n    \n        done = 1\n"
    markup = code_html(text, "x.py", 40)
    eight = " " * 8
    assert leads(markup) == [(eight, "0"), (eight, "4"), ("", "0"), ("    ", "0"), (eight, "0")]
    assert shown_text(markup) == text
    # a docstring's indentation is the docstring's: its piece keeps the token's classes
    doc = code_html('    """Keep.\n\n    Returns nothing.\n    """\n', "x.py", 1)
    assert re.search(r'<span class="sd tw-lead">    </span>', doc)
    # a drifted quote's diff likewise, its header lines apart
    diff = "--- a\n+++ b\n@@ -1,2 +1,2 @@\n-        a = 1\n+        a = 2\n         b = 3\n"
    assert leads(diff_html(diff, "x.py")) == [("", None)] * 3 + [(" " * 8, "0")] * 3
    # nothing shared (a tab against spaces, or a line at the margin): nothing marked
    for alone in ("\tif ok:\n        go()\n", "def f():\n    return 1\n"):
        assert {depth for _, depth in leads(code_html(alone, "x.py", 1))} == {None}


def _pieces(line: str) -> list[str]:
    """A line's text, cut where it may wrap between tokens."""
    markup = code_html(line + "\n", "x.py", 1)
    body = re.search(r'<span class="tw-cc[^"]*">(.*)\n</span>', markup, re.S)
    assert body
    return [html.unescape(re.sub(r"<[^>]+>", "", p)) for p in body.group(1).split("<wbr>")]


def test_a_line_may_wrap_between_tokens_where_code_reads_on():
    # after a dot and an opening bracket; never before a dot, a comma, a colon or a
    # closing bracket, nor between a name and its call (and never beside a space)
    assert _pieces("    return store.startswith(text)") == [
        "    return store.",
        "startswith(",
        "text)",
    ]
    assert _pieces("x[0]: y = f(a, b)[1]") == ["x[", "0]: y = f(", "a, b)[", "1]"]
    assert _pieces("total=a+b") == ["total", "=", "a", "+", "b"]


def test_subject_text_is_escaped_and_hidden_characters_shown():
    markup = code_html('x = "</pre><script>alert(1)</script>"\x1b[31m\u202e\n', "a.py", 4)
    assert "<script" not in markup and "\x1b" not in markup and "\u202e" not in markup
    assert shown_text(markup) == 'x = "</pre><script>alert(1)</script>"<U+001B>[31m<U+202E>\n'


def test_a_crlf_file_and_its_span_line_up():
    whole = 'a = """x\r\ny"""\r\nb = 2\r\n'
    span = "b = 2\r\n"
    markup = code_html(span, "a.py", 3, whole)
    assert classes_of(markup, "b") == {"n"} and shown_text(markup) == "b = 2\n"


lines = st.lists(
    st.text(alphabet=st.sampled_from(list(" \t\"'#\\abc(){}:=.,\u00e9\u202e\x1b\r")), max_size=12),
    min_size=1,
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(lines, st.booleans(), st.integers(min_value=1, max_value=3))
def test_the_shown_text_is_the_quoted_text(parts, newline, before):
    """Whatever the highlighting, the rows read exactly the quote's text (made visible)
    and the register's hash of it stays what it was: display only."""
    text = "\n".join(parts) + ("\n" if newline else "")
    whole = "x = 1\n" * before + text + ("" if newline else "\n") + "y = 2\n"
    digest = sha256_hex(text.encode("utf-8"))
    for markup in (code_html(text, "q.py", before + 1, whole), code_html(text, "q.py", 1)):
        shown = visible(text)
        assert shown_text(markup) == (shown if shown.endswith("\n") else shown + "\n")
    assert sha256_hex(text.encode("utf-8")) == digest


def test_a_diff_is_rows_of_signs_beside_its_lines():
    from tracework.views.code import diff_html

    diff = "--- a.py:1-2 @ 1\n+++ a.py:1-2 @ 2\n@@ -1,2 +1,2 @@\n keep = 1\n-old = 2\n+new = 3\n"
    markup = diff_html(diff, "a.py")
    signs = re.findall(r'<span class="linenos">([^<]*)</span>', markup)
    assert signs == ["", "", "", "", "-", "+"]
    assert re.findall(r'<span class="tw-cl( tw-\w+)?">', markup) == [
        "",
        "",
        "",
        "",
        " tw-del",
        " tw-ins",
    ]
    text = html.unescape(
        re.sub(r"<[^>]+>", "", re.sub(r'<span class="linenos">[^<]*</span>', "", markup))
    )
    assert text.split("\n")[:6] == [
        "--- a.py:1-2 @ 1",
        "+++ a.py:1-2 @ 2",
        "@@ -1,2 +1,2 @@",
        "keep = 1",
        "old = 2",
        "new = 3",
    ]
