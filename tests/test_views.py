"""HTML fragments: escaping of subject and analyst text, forge links."""

from __future__ import annotations

import hashlib
import html as html_module
import re

import pytest

from tracework.forge import upstream_url
from tracework.views import code_block, esc, markdown

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
    from tracework.checks import CheckItem
    from tracework.models import Quote
    from tracework.views import QuoteInfo, quote_html

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
    from tracework.checks import CheckItem
    from tracework.models import Quote
    from tracework.views import QuoteInfo, quote_html

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
