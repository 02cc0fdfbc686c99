"""``tracework new --kind investigation``: the parts of a published investigation, with
provenance, status conditions, results and limits computed from the capture."""

from __future__ import annotations

import json
import re

import nbformat
import pytest

from capture_setup import PLAIN_HARNESS, capture_workspace
from conftest import markdown_headings

PARTS = [
    "Question",
    "Data and provenance",
    "Method and where it hooks",
    "Status conditions",
    "Results",
    "What the capture shows",
    "Limits",
]

#: A second case the fixture cannot show, and a results table with notes.
HARNESS = (
    PLAIN_HARNESS
    + """
with capture.case("T-02", "Is it kept across processes?") as c:
    c.status("UNKNOWN", criterion="a second process reads the text",
             observed="the fixture runs one process")
capture.table("items by run", ["run", "items"], [[1, 1]], notes="one run, one item")
"""
)


@pytest.mark.slow
def test_an_investigation_renders_its_parts_from_the_capture(pinned, tw, workspace):
    setup = capture_workspace(pinned, tw)
    setup.write("cap", HARNESS)
    assert setup.capture("cap", "--repeat", "2").exit_code == 0
    made = tw(
        "new", "inv", "--subject", "toy", "--commit", setup.commit,
        "--kind", "investigation", "--capture", "cap",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    nb = nbformat.read(workspace.notebooks / "inv.ipynb", as_version=4)
    assert markdown_headings(nb) == PARTS
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert 'cap = wb.capture("cap")' in code and "cap.provenance()" in code

    for cell in nb.cells:  # the analyst's part: a quote of the hook, a claim observed
        if cell.source.startswith("# hook ="):
            cell.source = 'hook = src.quote("toy/store.py", symbol="Store.put")'
        if cell.source.startswith("# wb.claim"):
            cell.source = (
                'wb.claim("RT-CLM-kept", label="Kept", claim="the store keeps the text", '
                'assessment="as observed", operation="observed", '
                'evidence=[cap.case("T-01"), hook])\ncap.transcripts()'
            )
    nbformat.write(nb, workspace.notebooks / "inv.ipynb")
    authored = tw("author", "inv")  # registers the capture in the report's register
    assert authored.exit_code == 0, authored.output
    rendered = tw("render", "inv")
    assert rendered.exit_code == 0, rendered.output
    folder = workspace.reports / "inv" / setup.commit[:12]
    page = (folder / "report.html").read_text(encoding="utf-8")
    manifest = json.loads((setup.folder("cap") / "manifest.json").read_text())

    # provenance: every hash is the manifest's, none typed by hand
    assert manifest["harness_sha256"] in page and manifest["config_sha256"] in page
    for sha in manifest["verified_files"].values():  # whole, breakable between groups of 8
        assert f'title="{sha}">{sha[:8]}<wbr/>' in page
    for entry in manifest["files"]:
        assert f'title="{entry["sha256"]}"' in page
    assert "2 runs, byte-identical" in page
    made = manifest["environment"]["provenance"]
    assert made["python"]["sha256"] in page and f"<dd>{made['uv']}</dd>" in page
    assert manifest["environment"]["sha256"] in page
    # status conditions, results and limits come from results.json
    assert "the store keeps the text" in page and "a second process reads the text" in page
    assert "(1 PASS, 0 FAIL, 1 UNKNOWN)" in page and "items by run" in page
    assert "T-02 is UNKNOWN: the fixture runs one process" in page
    # the parts in the order of the notebook, and the capture is not shown again whole
    found = [page.index(f">{part}<") for part in PARTS]
    assert found == sorted(found)
    assert "Runtime capture: cap" not in page
    assert len(re.findall(r"T-01 transcript", page)) == 1


def test_a_kind_or_capture_that_cannot_be_is_refused(pinned, tw, workspace):
    repo = pinned({"a.py": "x = 1\n"})
    commit = repo.commits[0]
    lone = tw("new", "r1", "--subject", "toy", "--commit", commit, "--capture", "cap")
    assert lone.exit_code == 2 and "--kind investigation" in lone.output
    bad = tw("new", "r2", "--subject", "toy", "--commit", commit, "--kind", "essay")
    assert bad.exit_code == 2 and "investigation" in bad.output
    reserved = tw(
        "new", "r3", "--subject", "toy", "--commit", commit,
        "--kind", "investigation", "--capture", "env",
    )  # fmt: skip
    assert reserved.exit_code == 2 and "cannot name a capture" in reserved.output
    assert not (workspace.notebooks / "r1.ipynb").exists()
    assert not (workspace.registers / "r3.yaml").exists()
