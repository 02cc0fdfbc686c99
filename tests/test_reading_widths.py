"""A report on a subject written as real libraries are, read at a phone's width and a
desktop's (Playwright driving Debian's chromium): deep methods, long names, three-digit
line numbers.

- a diagram label naming a long identifier draws it whole, its box grown to hold it;
- a quote of deeply indented code keeps its columns for the code on a phone: the
  indentation every line shares is not drawn there (each line keeps its own, relative
  to the quote's, and the text still copies as quoted), while a desktop draws it all;
- a quote's line range (``233–264``) is never split across two lines;
- on a phone the register's tables (sources, files, quotes, provenance) show every
  column of every row, in the report's appendix and on the site's register page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import needs_chromium, render_store_report
from tracework.cli import main

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PATH = "agentic_memory/memory_system.py"
#: Two hundred lines of settings, then a class whose deepest method nests five deep.
MODULE = (
    '"""Notes, and how they evolve."""\n\n'
    + "".join(f"LIMIT_{n:03d} = {n}\n" for n in range(220))
    + """

class MemorySystem:
    def find_related_memories(self, query):
        return self.retriever.search(query)

    def process_memory(self, note):
        for action in note.actions:
            if action == "update_neighbor":
                for i in range(len(note.indices)):
                    if i < len(self.notes):
                        neighbour = self.notes[note.indices[i]]
                        neighbour.tags = note.new_tags_neighborhood[i]
                        neighbour.context = note.new_context_neighborhood[i]
                        self.notes[note.indices[i]] = neighbour
"""
)
#: A path longer than a phone's line.
DEEP_PATH = "agentic_memory/retrievers/persistent_clients/copied_chroma_collection.py"
LINES = MODULE.splitlines()
#: The deep span: from ``if action`` (indented 12) to the end (indented up to 24).
DEEP = (LINES.index('            if action == "update_neighbor":') + 1, len(LINES))
DEEP_TEXT = "\n".join(LINES[DEEP[0] - 1 : DEEP[1]]) + "\n"
CELLS = [
    f"""deep = src.quote({PATH!r}, lines={DEEP!r})
related = src.quote({PATH!r}, symbol="MemorySystem.find_related_memories")
copied = src.quote({DEEP_PATH!r}, symbol="CopiedChromaRetriever")
first = src.quote({PATH!r}, lines=(3, 3))
wb.component("RT-CMP-system", label="MemorySystem", identity="The `MemorySystem` class.",
             evidence=[deep, related, copied, first])
wb.route("RT-RTE-evolve", label="Evolving a note", progression="`process_memory` → notes",
         implementation="wired", operation="uninspected", passes_through=["RT-CMP-system"],
         evidence=[deep]);""",
    '''wb.diagram("names", """flowchart TD
  RT-CMP-system["`MemorySystem.find_related_memories`: the nearest notes"] --> b
  b["`process_memory` of each"]
""", caption="Long names in labels")''',
]
WIDTHS = (1280, 390)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report rendered at its pin and published; its render's folder."""
    needs_chromium()
    folder = render_store_report(
        tmp_path_factory.mktemp("widths"),
        CELLS,
        {PATH: MODULE, DEEP_PATH: "class CopiedChromaRetriever:\n    pass\n"},
        [
            (PATH, {"lines": DEEP, "id": "Q-add-note"}),
            (PATH, {"symbol": "MemorySystem.find_related_memories"}),
            (DEEP_PATH, {"symbol": "CopiedChromaRetriever"}),
            (PATH, {"lines": (3, 3)}),
        ],
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder.parents[2])
        result = CliRunner().invoke(main, ["publish"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    return folder


def _open(browser: Any, path: Path, width: int) -> Any:
    """``path`` at ``width``; a report once its diagrams are drawn."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(path.as_uri())
    if path.name == "report.html":
        page.wait_for_function("document.documentElement.dataset.diagrams !== undefined")
    return page


@pytest.mark.parametrize("width", WIDTHS)
def test_a_long_name_in_a_diagram_label_is_drawn_whole(browser, report, width):
    """Mermaid wraps a label at 200 px; the page's rule that breaks a long word anywhere
    (for prose) made it cut ``find_related_memories`` in two.  A name is one word to the
    layout: it stays on one line and its box grows to hold it."""
    page = _open(browser, report / "report.html", width)
    codes = page.evaluate(
        """() => Array.from(document.querySelectorAll('#diagram-names svg code')).map(c => {
        const node = c.closest('g.node').getBoundingClientRect(), box = c.getBoundingClientRect();
        return {text: c.textContent, lines: c.getClientRects().length,
                inside: box.left >= node.left - 0.5 && box.right <= node.right + 0.5};
    })"""
    )
    assert sorted(c["text"] for c in codes) == [
        "MemorySystem.find_related_memories",
        "process_memory",
    ]
    for code in codes:
        assert code["lines"] == 1 and code["inside"], code
    page.close()


#: Each row of a quote's card: where its first character of code is drawn, from the
#: row's left edge, in character widths, and whether it is on the row's first line.
FIRST_CODE = """(id) => {
  const card = document.getElementById(id);
  const cc0 = card.querySelector('.tw-cc');
  const probe = document.createElement('span');
  probe.textContent = '0'.repeat(20);
  cc0.appendChild(probe);
  const ch = probe.getBoundingClientRect().width / 20;
  probe.remove();
  const text = Array.from(card.querySelectorAll('.tw-cc')).map(cc => cc.textContent).join('');
  return {ch, text,
          rows: Array.from(card.querySelectorAll('.tw-cc')).map(cc => {
    const walker = document.createTreeWalker(cc, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const at = n.data.search(/\\S/);
      if (at < 0) continue;
      const range = document.createRange();
      range.setStart(n, at); range.setEnd(n, at + 1);
      const first = range.getBoundingClientRect(), box = cc.getBoundingClientRect();
      const top = document.createRange(); top.selectNodeContents(cc);
      const firstLine = Math.min(...Array.from(top.getClientRects()).map(r => r.top));
      return {lead: cc.textContent.search(/\\S/), at: (first.left - box.left) / ch,
              onFirstLine: first.top - firstLine < 2};
    }
    return null;
  }).filter(r => r)};
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_a_deep_quote_keeps_its_columns_for_code_on_a_phone(browser, report, width):
    """Indented 12 to 24 columns, the span's code began a column of 30 (a phone's) past
    its middle, and a line's first word wrapped onto a row of its own.  On a phone the
    12 columns every line shares are not drawn: the shallowest line starts at the edge,
    each other its own indentation further in; on a desktop all of it is drawn.  The
    text is the quote's either way, spaces included, so a copy is the hashed bytes."""
    page = _open(browser, report / "report.html", width)
    found = page.evaluate(FIRST_CODE, "Q-add-note")
    assert found["text"] == DEEP_TEXT
    shared = min(r["lead"] for r in found["rows"])
    assert shared == 12
    drawn = shared if width == 1280 else 0
    for row in found["rows"]:
        assert row["onFirstLine"], row
        assert abs(row["at"] - (row["lead"] - shared + drawn)) < 0.25, (row, found["ch"])
    page.close()


#: Every place a page names a quote's lines (``path:A–B``): on how many lines ``A–B`` is
#: drawn, and the character before each place the whole breaks.
RANGES = r"""() => Array.from(document.querySelectorAll(
    '.tw-path, .tw-register td[data-label="where"]')).flatMap(e => {
  const match = /:(\d+–\d+)$/.exec(e.textContent);
  if (!match) return [];
  const breaks = [], each = document.createRange();
  let top = null;
  const chars = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
  for (let n = chars.nextNode(), last = ''; n; n = chars.nextNode()) {
    for (let i = 0; i < n.data.length; i++) {
      each.setStart(n, i); each.setEnd(n, i + 1);
      const r = each.getClientRects()[0];
      if (r && top !== null && r.top > top + 2) breaks.push(last);
      if (r) top = r.top;
      last = n.data[i];
    }
  }
  const start = e.textContent.length - match[1].length, range = document.createRange();
  let seen = 0;
  const walker = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (seen <= start && start < seen + n.data.length) range.setStart(n, start - seen);
    seen += n.data.length;
    if (seen === e.textContent.length) range.setEnd(n, n.data.length);
  }
  const tops = new Set(Array.from(range.getClientRects()).filter(r => r.width)
    .map(r => Math.round(r.top)));
  return [{text: e.textContent, lines: tops.size, breaks}];
})"""


@pytest.mark.parametrize("width", WIDTHS)
def test_a_quotes_line_range_is_never_split(browser, report, width):
    """``memory_system.py:229–237`` broke after the dash on a phone, the range's end on
    a line of its own, and a path inside a name; a long path now breaks after a ``/``
    (or before its range), and the range stays whole."""
    page = _open(browser, report / "report.html", width)
    ranges = page.evaluate(RANGES)
    assert len(ranges) >= 8  # the quotes' cards, their citations, the register's table
    for found in ranges:
        assert found["lines"] == 1, found
        assert set(found["breaks"]) <= {"/", ":"}, found  # never inside a name
    if width == 390:
        assert any(found["breaks"] for found in ranges)
    page.close()


#: Every cell of the tables that list the register, and whether it and what it holds
#: are wholly in view.
CELLS_IN_VIEW = """(selector) => Array.from(document.querySelectorAll(selector)).flatMap(t =>
  Array.from(t.querySelectorAll('tbody th, tbody td')).map(c => {
    const held = document.createRange();
    held.selectNodeContents(c);
    const width = document.documentElement.clientWidth;
    const inView = [c.getBoundingClientRect(), ...held.getClientRects()]
      .every(box => box.left >= -0.5 && box.right <= width + 0.5);
    return {text: c.textContent.slice(0, 80), inView};
  }))"""


def test_on_a_phone_the_register_tables_show_every_column(browser, report):
    """At 390 px the sources', files' and quotes' tables ran off the right edge (a full
    SHA-256 wrapped to eight lines in a column one group wide, the state out of sight):
    each row is now a card of labelled lines, every cell in view."""
    site = report.parents[1] / "site"
    pages = {
        report / "report.html": ".tw-appendix table",
        site / "reports" / report.parent.name / "register.html": "main table",
    }
    for path, selector in pages.items():
        page = _open(browser, path, 390)
        cells = page.evaluate(CELLS_IN_VIEW, selector)
        assert len(cells) >= 12, (path, cells)  # three files, four cells each
        assert [c for c in cells if not c["inView"]] == [], path
        # a one-line quote is named by its line, as on its card (not ``3–3``)
        assert not [c for c in cells if re.search(r":(\d+)–\1$", c["text"])], path
        page.close()
