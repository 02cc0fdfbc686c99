"""Parts of the reader's page checked without a browser: the dark palette written the
same for both ways a page turns dark, the theme script and its policy, the dark code
colours, a compare page's diff lines, the sparkline's label.  The browser tests of the
same (1280 and 390 px, light and dark) are in test_publish_page.py."""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tracework.render.export import CSP
from tracework.render.theme import CHOSEN_DARK, SYSTEM_DARK, page_code_css, theme_js
from tracework.site import charts
from tracework.site.compare import diff_lines

TEMPLATES = Path(str(files("tracework") / "templates"))


def _blocks(css: str, selector: str) -> list[str]:
    return [
        " ".join(body.split()) for body in re.findall(re.escape(selector) + r" \{([^}]*)\}", css)
    ]


@pytest.mark.parametrize("sheet", ["tracework/report.css", "site/site.css"])
def test_the_dark_palette_is_the_same_whichever_way_the_page_is_dark(sheet):
    css = (TEMPLATES / sheet).read_text(encoding="utf-8")
    chosen, system = _blocks(css, CHOSEN_DARK), _blocks(css, SYSTEM_DARK)
    assert chosen and chosen == system, sheet
    assert "color-scheme: dark" in chosen[0]
    # screens only: a printed page keeps the light palette
    assert "@media screen {\n  " + CHOSEN_DARK in css
    assert "@media screen and (prefers-color-scheme: dark) {\n  " + SYSTEM_DARK in css


def test_dark_code_colours_come_under_both_conditions_and_screens_only():
    css = page_code_css()
    assert css.count(f"{CHOSEN_DARK} .tw-hl .k {{") == 1
    assert css.count(f"{SYSTEM_DARK} .tw-hl .k {{") == 1
    assert css.index("@media screen and (prefers-color-scheme: dark) {") < css.index(CHOSEN_DARK)
    assert "/*" not in css


def test_the_theme_script_fetches_nothing_and_keeps_the_choice_locally():
    js = theme_js()
    for word in ("fetch(", "XMLHttpRequest", "import(", "src", "http"):
        assert word not in js, word
    assert "localStorage.getItem(KEY)" in js and '"tracework-theme"' in js
    assert "tracework-nonce" not in js  # the nonce slot is the head's, not the script's
    assert all(ord(c) < 128 for c in js)  # nothing the page's hidden-character rule changes


def test_every_report_page_policy_allows_its_own_scripts_only():
    assert "script-src {scripts}" in CSP and "'unsafe-inline'" not in CSP.split("style-src")[0]
    from tracework.site.publish import CSP as SITE_CSP

    assert "script-src 'nonce-{nonce}'" in SITE_CSP and "unsafe" not in SITE_CSP


def test_a_diff_line_is_named_by_what_it_is():
    diff = (
        "--- a.py:1-3 @ 111\n+++ a.py:1-3 @ 222\n@@ -1,3 +1,3 @@\n same\n-old\n+new\n"
        "---- a removed line that starts with dashes\n\\ No newline at end of file\n"
    )
    assert [k for k, _ in diff_lines(diff)] == [
        "file",
        "file",
        "hunk",
        "same",
        "del",
        "add",
        "del",
        "same",
    ]
    assert [t for _, t in diff_lines(diff)] == diff.split("\n")[:-1]
    assert diff_lines("") == []


def _report(shares: list[tuple[int, int]]) -> Any:
    """A report whose history has one entry per (verified, total)."""
    history = [
        SimpleNamespace(
            commit=f"{n:040x}",
            date="2026-03-02T09:00:00+00:00",
            commits_since_pin=n,
            counts={"verified": v, "changed": t - v},
            format_only=0,
        )
        for n, (v, t) in enumerate(shares)
    ]
    return SimpleNamespace(title="R", history=history, renders=[])


def test_the_sparkline_says_what_it_draws_beside_it():
    spark = charts.sparkline(_report([(13, 13), (9, 13), (5, 13)]))
    assert spark is not None
    assert spark.label == "Verified: 100% → 38% (3 renders)"
    assert spark.summary.endswith("oldest first: 100%, 69%, 38%")
    one = charts.sparkline(_report([(3, 4)]))
    assert one is not None and one.label == "Verified: 75% (1 render)"


def test_a_history_bar_counts_its_commits_in_words():
    chart = charts.history_chart(_report([(2, 2), (1, 2), (1, 2)]))
    assert chart is not None
    texts = [b.text for b in chart.bars]
    assert texts[0].startswith("at 000000000000 (2026-03-02), the pin: ")
    assert ", 1 commit after the pin: " in texts[1] and ", 2 commits after the pin: " in texts[2]


def test_chart_text_is_the_pages_small_print_not_eleven_pixels():
    css = (TEMPLATES / "site" / "site.css").read_text(encoding="utf-8")
    tick = re.search(r"svg\.chart \.tick \{ font: (\d+)px", css)
    assert tick and int(tick.group(1)) >= 14
    assert not re.search(r"svg\.chart \{[^}]*max-width: 100%", css)  # never shrunk to fit
