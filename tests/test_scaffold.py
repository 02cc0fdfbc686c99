"""``tracework new``: the shape of each kind of report, and guidance that stays with the
analyst (tagged cells JupyterLab shows and no report publishes)."""

from __future__ import annotations

import re

import nbformat
import pytest

from conftest import markdown_headings
from tracework.notebook.scaffold import GUIDE_TAG, notebook_for

RUBRIC = """\
title: Keeping things
description: What a store may do about what it keeps.
mechanisms:
  - id: expiry
    name: Items expire
    definition: Items leave on their own.
    evidence: The rule that ages them out.
"""


def _guides(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if GUIDE_TAG in c.get("metadata", {}).get("tags", [])]


@pytest.mark.parametrize("kind", ["runtime", "investigation", "atlas"])
def test_guidance_is_only_in_tagged_cells(kind):
    """Every instruction to the analyst is in a cell tagged as guidance; what a reader may
    see (titles, headings, code) carries none."""
    nb = notebook_for("r", kind)
    guides = _guides(nb)
    assert guides and all(c.cell_type == "markdown" for c in guides)
    assert all(c.source.startswith("*Guidance, not published:*") for c in guides)
    untagged = [c for c in nb.cells if c not in guides and c.cell_type == "markdown"]
    assert untagged and not any("Guidance" in c.source or "Write the" in c.source for c in untagged)
    assert len({c.id for c in nb.cells}) == len(nb.cells)


def test_an_atlas_has_its_known_shape():
    nb = notebook_for("mem", "atlas", rubric="keeping")
    assert nb.cells[0].source == "# mem: atlas report"
    assert markdown_headings(nb) == ["Summary", "Mental model", "Mechanisms", "Open questions"]
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert "wb.screen()" in code  # the screen heads its own section: no second heading
    assert any('wb.mark("keeping", "mechanism-id"' in c for c in code)
    assert "`keeping`" in _guides(nb)[0].source
    assert code[-2:] == ["wb.records()", "wb.done()"]


def test_an_atlas_takes_the_workspace_s_only_rubric(pinned, tw, workspace):
    repo = pinned({"a.py": "x = 1\n"})
    commit = repo.commits[0]
    bare = tw("new", "plain", "--subject", "toy", "--commit", commit, "--kind", "atlas")
    assert bare.exit_code == 0, bare.output
    nb = nbformat.read(workspace.notebooks / "plain.ipynb", as_version=4)
    assert any('wb.mark("RUBRIC"' in c.source for c in nb.cells)  # none yet: a placeholder

    (workspace.registers / "rubrics").mkdir()
    (workspace.registers / "rubrics" / "keeping.yaml").write_text(RUBRIC)
    made = tw("new", "mem", "--subject", "toy", "--commit", commit, "--kind", "atlas")
    assert made.exit_code == 0, made.output
    nb = nbformat.read(workspace.notebooks / "mem.ipynb", as_version=4)
    assert any('wb.mark("keeping"' in c.source for c in nb.cells)

    missing = tw(
        "new", "other", "--subject", "toy", "--commit", commit, "--kind", "atlas",
        "--rubric", "nothing",
    )  # fmt: skip
    assert missing.exit_code == 2
    assert "no rubric nothing" in missing.output and "keeping" in missing.output
    wrong = tw("new", "inv", "--subject", "toy", "--commit", commit, "--rubric", "keeping")
    assert wrong.exit_code == 2 and "--kind atlas" in wrong.output
    assert not (workspace.notebooks / "other.ipynb").exists()
    assert not (workspace.registers / "inv.yaml").exists()


@pytest.mark.slow
def test_a_scaffold_s_guidance_never_reaches_the_report(pinned, tw, workspace):
    """A runtime scaffold and an atlas scaffold render as they are, and neither page holds
    a word of the guidance, nor the screen's heading twice."""
    repo = pinned({"a.py": "x = 1\n"})
    commit = repo.commits[0]
    (workspace.registers / "rubrics").mkdir()
    (workspace.registers / "rubrics" / "keeping.yaml").write_text(RUBRIC)
    for name, kind in (("plain", "runtime"), ("mem", "atlas")):
        made = tw("new", name, "--subject", "toy", "--commit", commit, "--kind", kind)
        assert made.exit_code == 0, made.output
        path = workspace.notebooks / f"{name}.ipynb"
        nb = nbformat.read(path, as_version=4)
        body = 'q = src.quote("a.py", lines=(1, 1))\n'
        body += 'wb.component("RT-CMP-x", label="X", identity="The module.", evidence=[q])'
        if kind == "atlas":
            body += '\nwb.mark("keeping", "expiry", present=False, note="Nothing ages out.")'
        nb.cells.insert(-2, nbformat.v4.new_code_cell(body))
        nbformat.write(nb, path)
        authored = tw("author", name)  # the quote goes into the register
        assert authored.exit_code == 0, authored.output
        rendered = tw("render", name)
        assert rendered.exit_code == 0, rendered.output
        page = (workspace.reports / name / commit[:12] / "report.html").read_text()
        assert "Guidance" not in page and "Write the account" not in page
        assert "src.quote(" not in page
    page = (workspace.reports / "mem" / commit[:12] / "report.html").read_text()
    assert page.count('<h2 id="screen">') == 1  # its own heading, and no second
    for heading in ("Summary", "Mental model", "Mechanisms", "Open questions"):
        assert f">{heading}<" in page, heading


@pytest.mark.slow
def test_an_analyst_s_own_heading_replaces_an_automatic_section_s(pinned, tw, workspace):
    """``## Screen`` right above ``wb.screen()``, and a ``## Rubric marks`` of the analyst's:
    each section shows once, under the analyst's heading, its anchor kept."""
    repo = pinned({"a.py": "x = 1\n"})
    commit = repo.commits[0]
    (workspace.registers / "rubrics").mkdir()
    (workspace.registers / "rubrics" / "keeping.yaml").write_text(RUBRIC)
    assert (
        tw("new", "mem", "--subject", "toy", "--commit", commit, "--kind", "atlas").exit_code == 0
    )
    path = workspace.notebooks / "mem.ipynb"
    nb = nbformat.read(path, as_version=4)
    at = next(n for n, c in enumerate(nb.cells) if c.source == "wb.screen()")
    nb.cells.insert(at, nbformat.v4.new_markdown_cell("## Screen"))
    body = (
        'q = src.quote("a.py", lines=(1, 1))\n'
        'wb.component("RT-CMP-x", label="X", identity="The module.", evidence=[q])\n'
        'wb.mark("keeping", "expiry", present=False, note="Nothing ages out.")'
    )
    nb.cells.insert(-2, nbformat.v4.new_markdown_cell("## Rubric marks\n\nWhat it carries."))
    nb.cells.insert(-2, nbformat.v4.new_code_cell(body))
    nbformat.write(nb, path)
    assert tw("author", "mem").exit_code == 0
    rendered = tw("render", "mem")
    assert rendered.exit_code == 0, rendered.output
    page = (workspace.reports / "mem" / commit[:12] / "report.html").read_text()
    main = page.split("<main", 1)[1]
    headings = re.findall(r"<h2[^>]*>([^<]*)", main)
    assert "Screen of the checkout" not in headings and headings.count("Screen") == 1
    assert headings.count("Rubric marks") == 1  # the analyst's, not a second one
    assert headings.index("Rubric marks") > headings.index("Screen")  # where it was written
    assert 'id="screen"' in main and 'id="rubric-marks"' in main  # links still land
