"""A re-pin, followed as the how-to says, keeps the report's history and says what it did.

The newest commit is rendered first with its drift against the old pin; then the pin moves
there (the register edited, its files and quotes recorded again) and the same commit is
rendered again, at the new pin.  That render replaces the folder of the first, but not its
history: both renders stay in history.json and on the site.  The compare page lists what
changed state, and a quote the re-pin gave another text, but not a quote that only sits
elsewhere with the same text and the same state.
"""

from __future__ import annotations

import html
import json
import re

import nbformat
import pytest

pytestmark = pytest.mark.slow  # kernels: not in `make test-fast`

STORE = """\
class Store:
    def put(self, key, value):
        self.items[key] = value

    def get(self, key):
        return self.items.get(key)
"""
#: The newer commit: put's body is edited in place, get moves down with its text intact.
STORE_NEWER = """\
class Store:
    def put(self, key, value):
        self.items[key] = str(value)

    def size(self):
        return len(self.items)

    def get(self, key):
        return self.items.get(key)
"""
CELL = """put = src.quote("pkg/store.py", symbol="Store.put", id="Q-put")
get = src.quote("pkg/store.py", symbol="Store.get", id="Q-get")
wb.component("RT-CMP-store", label="Store", identity="The store.", evidence=[put, get])
wb.mark("kv", "typed", present=False, evidence=[put]);"""
RUBRIC = """\
title: Key-value hygiene
description: What a store does with what it is given.
mechanisms:
  - id: typed
    name: Values are typed
    definition: A value is converted to one type before it is kept.
    evidence: The conversion.
"""


def test_a_re_pin_keeps_the_history_and_the_compare_page_lists_what_changed(pinned, tw, workspace):
    repo = pinned({"pkg/store.py": STORE}, track="main", reports=["rep"])
    (workspace.registers / "rubrics").mkdir()
    (workspace.registers / "rubrics" / "kv.yaml").write_text(RUBRIC)
    path = workspace.notebooks / "rep.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(4, nbformat.v4.new_code_cell(CELL))
    nbformat.write(nb, path)
    import tracework

    source = tracework.open("rep").source("SRC-1")
    source.quote("pkg/store.py", symbol="Store.put", id="Q-put")
    source.quote("pkg/store.py", symbol="Store.get", id="Q-get")
    old_pin = repo.commits[0]
    repo.write("pkg/store.py", STORE_NEWER)
    newer = repo.commit("put keeps text; size")
    assert tw("fetch", "toy").exit_code == 0
    assert tw("render", "rep").exit_code == 0
    assert tw("rerender", "rep", "--latest").exit_code == 0  # drift against the old pin

    # the re-pin, as docs/how-to/pin.md says
    register = workspace.registers / "rep.yaml"
    date = repo.git("log", "-1", "--format=%cI", newer).strip()
    text = register.read_text()
    text = text.replace(old_pin, newer)
    text = re.sub(r"date: '[^']+'", f"date: '{date}'", text, count=1)
    register.write_text(text)
    assert tw("register", "add-file", "rep", "SRC-1", "pkg/store.py").exit_code == 0
    for qid, symbol in (("Q-put", "Store.put"), ("Q-get", "Store.get")):
        replaced = tw(
            "quote", "rep", "SRC-1", "pkg/store.py", "--symbol", symbol, "--id", qid, "--replace"
        )
        assert replaced.exit_code == 0, replaced.output
    assert tw("check", "rep", "--record").exit_code == 0
    assert tw("render", "rep").exit_code == 0  # the newer commit again, at the new pin

    history = json.loads((workspace.reports / "rep" / "history.json").read_text())
    renders = [(e["commit"], e["pin"], e["commits_since_pin"]) for e in history]
    assert renders == [(old_pin, old_pin, 0), (newer, old_pin, 1), (newer, newer, 0)]

    marks = [e["marks"]["kv"]["typed"] for e in history]
    assert marks == ["absent", "absent (needs re-review)", "absent"]

    assert tw("publish").exit_code == 0
    site = workspace.reports / "site" / "reports" / "rep"
    listing = html.unescape(re.sub(r"<[^>]+>", "", (site / "index.html").read_text()))
    assert "render no longer kept" in listing  # the drift render at the old pin
    # its mark is still in the mark history, though its folder was replaced
    assert f"absent → absent (needs re-review) (render no longer kept) at {newer[:12]}" in " ".join(
        listing.split()
    )
    (page,) = site.glob(f"compare-{old_pin[:12]}-{newer[:12]}.html")
    quotes = (
        page.read_text().split('aria-labelledby="quotes-heading">', 1)[1].split("</section>")[0]
    )
    shown = html.unescape(re.sub(r"<[^>]+>", "", quotes))
    assert "Q-put: verified → verified (re-quoted: its text changed)" in shown
    assert "str(value)" in shown  # its diff
    assert "Q-get" not in shown  # the same text, the same state: only its place changed
