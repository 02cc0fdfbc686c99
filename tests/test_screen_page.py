"""The screen's section on the report page, read on a phone and a desktop: each finding
a card at 390 px, every cell wide enough to read, nothing past the page's edge."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import needs_chromium, page_fits, render_store_report

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WORKFLOW = """\
name: ci
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - name: install
        run: pip install -U a-rather-long-package-name another-long-package-name --pre
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    needs_chromium()
    cell = (
        'q = src.quote("pkg/store.py", symbol="Store.put")\n'
        'wb.component("RT-CMP-x", label="X", identity="The module.", evidence=[q])\n'
        "wb.screen()"
    )
    root = tmp_path_factory.mktemp("screen")
    folder = render_store_report(root, [cell], {".github/workflows/ci.yml": WORKFLOW})
    return folder / "report.html"


@pytest.mark.parametrize("width", [390, 1280])
def test_the_screen_s_findings_read_at_both_widths(browser, report, width):
    found = page_fits(browser, report.as_uri(), width)
    assert found["scroll"] <= found["width"] and found["past"] == [], found
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(report.as_uri())
    cells = page.eval_on_selector_all(
        "table.tw-findings td",
        "cells => cells.map(c => [c.dataset.label, c.getBoundingClientRect().width])",
    )
    page.close()
    assert {label for label, _ in cells} == {"category", "where", "what", "the line"}
    narrowest = min(w for _, w in cells)
    # at 390 px each cell is a card's full line (less its label); never a sliver of a column
    assert narrowest > (250 if width == 390 else 60), cells
