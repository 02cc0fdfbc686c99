"""Evidence CI can trust: a broken absence is tracked like a changed quote — the commit
that broke it, its matches in how many files, on the page, in the history, on the
compare page and in ``rerender --json`` — and ``rerender --fail-on`` fails a scheduled
job on it, as the CI how-to's workflow runs it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from ruamel.yaml import YAML

from tracework.batch.findings import finding_kinds

ROOT = Path(__file__).resolve().parent.parent
STORE = "class Store:\n    def put(self, key, value):\n        self.items[key] = value\n"
CELL = """q = src.quote("pkg/store.py", symbol="Store.put")
wb.component("RT-CMP-store", label="Store", identity="The store.", evidence=[q])
wb.absence("RT-ABS-disk", statement="The store never writes to disk.",
           scope=["pkg/**"], patterns=[r"\\bopen\\(", r"\\.dump\\("]);"""


@pytest.fixture
def broken_in_a_branch(pinned, tw, workspace):
    """A report whose absence holds at the pin and breaks on a side branch merged later:
    returns (the pin, the side branch's commit that broke it, the merge)."""
    repo = pinned({"pkg/store.py": STORE, "pkg/util.py": "X = 1\n"}, track="main", reports=["rep"])
    path = workspace.notebooks / "rep.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(4, nbformat.v4.new_code_cell(CELL))
    nbformat.write(nb, path)
    import tracework

    tracework.open("rep").source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    pin = repo.commits[0]
    repo.write("pkg/util.py", "X = 2\n")
    repo.commit("main: noise")
    repo.git("checkout", "-q", "-b", "side")
    repo.write("pkg/cache.py", "CACHE = {}\n")
    repo.commit("side: a cache")
    repo.write(
        "pkg/cache.py",
        "import json\n\ndef save(d):\n    with open('c.json', 'w') as f:\n"
        "        json.dump(d, f)\n",
    )
    culprit = repo.commit("side: the cache is saved to disk")
    repo.write("pkg/notes.txt", "n\n")
    repo.commit("side: notes")
    repo.git("checkout", "-q", "main")
    repo.write("pkg/util.py", "X = 3\n")
    repo.commit("main: more noise")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    merge = repo.git("rev-parse", "HEAD").strip()
    assert tw("fetch", "toy").exit_code == 0
    return pin, culprit, merge


@pytest.mark.slow
def test_a_broken_absence_is_named_with_the_commit_that_broke_it(broken_in_a_branch, tw, workspace):
    _pin, culprit, merge = broken_in_a_branch
    assert tw("render", "rep").exit_code == 0  # at the pin it holds
    result = tw("rerender", "rep", "--latest", "--json")
    assert result.exit_code == 0, result.output  # a finding alone is no failure
    out = json.loads(result.output)
    assert out["ok"] is True
    (report,) = out["reports"]
    assert report["absences"] == {
        "RT-ABS-disk": {"state": "broken", "first_broken": culprit, "matches": 2, "files": 1}
    }
    assert "RT-ABS-disk" in report["needs_review"]
    folder = workspace.reports / "rep" / merge[:12]
    page = (folder / "report.html").read_text()
    header = re.search(r'<header class="tw-header">.*?</header>', page, re.S).group(0)
    assert "Broken absences" in header and "RT-ABS-disk" in header and culprit[:12] in header
    assert "2 matches in 1 file" in header
    drift = re.search(r'<section class="tw-drift">.*?</section>', page, re.S).group(0)
    assert culprit[:12] in drift and "the cache is saved to disk" in drift
    assert "pkg/cache.py:4" in drift
    history = json.loads((workspace.reports / "rep" / "history.json").read_text())
    entry = next(e for e in history if e["commit"] == merge)
    assert entry["broken"] == {
        "RT-ABS-disk": {
            "commit": culprit,
            "date": entry["broken"]["RT-ABS-disk"]["date"],
            "matches": 2,
            "files": 1,
        }
    }
    assert tw("publish").exit_code == 0
    site = workspace.reports / "site" / "reports" / "rep"
    (compare_page,) = site.glob("compare-*.html")
    compared = compare_page.read_text()
    absences = re.search(r'aria-labelledby="absences-heading">.*?</section>', compared, re.S)
    assert absences is not None
    text = absences.group(0)
    said = re.sub(r"<[^>]+>", "", text)  # the states are marked up apart
    assert "holds → broken" in said and culprit[:12] in text and "2 lines in 1 file" in said
    assert "pkg/cache.py:4" in text
    index = (site / "index.html").read_text()
    assert f"absence RT-ABS-disk broken at <code>{culprit[:12]}</code>" in index


@pytest.mark.slow
def test_fail_on_names_each_finding_and_fails_only_on_the_kinds_named(broken_in_a_branch, tw):
    _pin, culprit, _merge = broken_in_a_branch
    broken = tw("rerender", "rep", "--latest", "--fail-on", "broken")
    assert broken.exit_code == 1
    lines = [ln for ln in broken.output.splitlines() if ln.startswith("finding: ")]
    assert lines == [
        f"finding: rep: absence RT-ABS-disk broken since {culprit[:12]}: 2 matches in 1 file"
    ]
    assert tw("rerender", "rep", "--latest", "--fail-on", "changed").exit_code == 0
    review = tw("rerender", "rep", "--latest", "--fail-on", "review", "--json")
    assert review.exit_code == 1 and json.loads(review.output.split("\nfinding:")[0])["ok"] is False
    assert "finding: rep: record RT-ABS-disk needs re-review" in review.output
    every = tw("rerender", "rep", "--latest", "--fail-on", "any")
    assert every.exit_code == 1 and every.output.count("finding: ") == 2
    bad = tw("rerender", "rep", "--latest", "--fail-on", "broken,sometimes")
    assert bad.exit_code == 2 and "sometimes is not a kind of finding" in bad.output


def test_finding_kinds():
    assert finding_kinds("any") == {"changed", "broken", "review"}
    assert finding_kinds(" broken , review") == {"broken", "review"}


def _ci_rerender_step() -> str:
    """The CI how-to's workflow, as written: the step that re-renders."""
    text = (ROOT / "docs" / "how-to" / "ci.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.*?)```", text, re.S)
    assert block is not None
    workflow = YAML(typ="safe").load(block.group(1))
    (job,) = workflow["jobs"].values()
    runs = [s["run"] for s in job["steps"] if "tracework rerender" in s.get("run", "")]
    assert len(runs) == 1
    return runs[0]


@pytest.mark.slow
def test_the_ci_how_to_s_scheduled_run_fails_when_an_absence_broke(
    broken_in_a_branch, tw, workspace
):
    """The workflow's re-render step, run as the workflow runs it (bash, tracework on
    PATH), fails the job on the broken absence and says which, in one line."""
    _pin, culprit, _merge = broken_in_a_branch
    step = _ci_rerender_step()
    assert "--fail-on" in step
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    run = subprocess.run(
        ["bash", "-e", "-c", step], cwd=workspace.root, env=env, capture_output=True, text=True
    )
    assert run.returncode == 1, run.stderr
    assert f"finding: rep: absence RT-ABS-disk broken since {culprit[:12]}" in run.stderr
