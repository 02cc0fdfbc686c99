"""`tracework author`: the notebook in author mode, headless, into reports/NAME/draft/."""

from __future__ import annotations

import json

import nbformat
import pytest

pytestmark = pytest.mark.slow  # kernels, browsers, sandboxes: not in `make test-fast`


SUBJECT = {
    "pkg/store.py": (
        "class Store:\n    def put(self, key, value):\n        self.items[key] = value\n"
    ),
}

BODY = """q = src.quote("pkg/store.py", symbol="Store.put")
wb.component("RT-CMP-store", label="Store", identity="The `Store` class.", evidence=[q])
wb.route("RT-RTE-put", label="Put", progression="caller → `Store.put`", implementation="wired",
         operation="uninspected", passes_through=["RT-CMP-store"], evidence=[q])
"""


@pytest.fixture
def notebook(pinned, workspace):
    """A report `demo` pinned at a subject's first commit, its notebook filled in; nothing
    quoted yet (the author run adds the quotes)."""
    pinned(SUBJECT, reports=["demo"])
    path = workspace.notebooks / "demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(4, nbformat.v4.new_code_cell(BODY))
    nbformat.write(nb, path)
    return path


def test_author_runs_the_notebook_into_its_draft_and_adds_the_quotes(notebook, tw, workspace):
    before = notebook.read_bytes()
    result = tw("author", "demo")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:4] == [
        "ran reports/demo/draft/report.ipynb",
        "2 records",
        "  RT-CMP-store  component  Store",
        "  RT-RTE-put  route  Put",
    ]
    assert "  records   holds" in result.stdout
    draft = workspace.reports / "demo" / "draft"
    assert sorted(p.name for p in draft.iterdir()) == ["records.json", "report.ipynb"]
    assert notebook.read_bytes() == before  # never written
    assert "Q-store-Store.put" in (workspace.registers / "demo.yaml").read_text()
    assert tw("render", "demo").exit_code == 0  # render mode finds what author mode added
    data = json.loads(tw("author", "demo", "--json").stdout)
    assert data["ok"] is True and data["directory"] == "reports/demo/draft"
    assert [r["id"] for r in data["records"]] == ["RT-CMP-store", "RT-RTE-put"]


def test_an_error_in_a_cell_is_one_line_and_failing_checks_exit_1(notebook, tw):
    nb = nbformat.read(notebook, as_version=4)
    nb.cells[4].source = BODY.replace(
        'passes_through=["RT-CMP-store"]', 'passes_through=["RT-CMP-x"]'
    )
    nb.cells[4].id = "the-body"
    nbformat.write(nb, notebook)
    result = tw("author", "demo")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [  # the cell as JupyterLab shows it: 5th of 8
        f"tracework: error: the notebook failed in cell 5 of {len(nb.cells)} (id the-body): "
        "RecordError: RT-RTE-put: "
        "passes_through[0] names 'RT-CMP-x', which is not declared above",
        "  hint: declare the record it refers to first",
    ]
    assert "Traceback" not in result.output and "----" not in result.output
    nb.cells[4].source = BODY + (
        'wb.absence("RT-ABS-x", statement="No items.", scope=["pkg/*.py"], patterns=["items"])\n'
    )
    nbformat.write(nb, notebook)
    result = tw("author", "demo")
    assert result.exit_code == 1, result.output
    assert "absence RT-ABS-x: the patterns now match" in result.stdout


@pytest.mark.parametrize(
    "written",
    ['{"records": [], "format": "tracework.notebook.records/1"}', "[]"],
    ids=["no-checks", "not-an-object"],
)
def test_a_draft_records_json_that_is_not_one_is_one_message(notebook, tw, written):
    """What the run leaves as records.json is read through its model: a file the notebook
    overwrote with something else is named, with why, and exits 2, never a traceback."""
    nb = nbformat.read(notebook, as_version=4)
    nb.cells.append(
        nbformat.v4.new_code_cell(f"(wb.output_dir / 'records.json').write_text({written!r})")
    )
    nbformat.write(nb, notebook)
    result = tw("author", "demo")
    assert result.exit_code == 2, result.output
    [message, hint] = result.stderr.splitlines()
    assert message.startswith(
        "tracework: error: reports/demo/draft/records.json is not tracework's records.json ("
    )
    assert hint == "  hint: leave records.json to wb.done(), run by the tracework kernel"
    assert "Traceback" not in result.output
