"""`tracework new` and `tracework render`: real notebooks through papermill and nbconvert."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import nbformat
import pytest

from tracework import fsio
from tracework.records.artefacts import RECORDS_MIME
from tracework.render import export as rendering

HOSTILE = 'BANNER = "</pre><script>alert(1)</script>"\n'
SUBJECT = {
    "pkg/store.py": (
        "class Store:\n    def put(self, key, value):\n        self.items[key] = value\n"
    ),
    "pkg/banner.py": "# shown at start-up\n" + HOSTILE,
}

BODY = """q = src.quote("pkg/store.py", symbol="Store.put")
b = src.quote("pkg/banner.py", lines=(2, 2), id="Q-banner")
wb.component("RT-CMP-store", label="Store", identity="The `Store` class.", evidence=[q])
wb.route("RT-RTE-put", label="Put", progression="caller → `Store.put`", implementation="wired",
         operation="uninspected", passes_through=["RT-CMP-store"], evidence=[q, b],
         reviewed="2026-01-05")
wb.absence("RT-ABS-net", statement="No network calls.", scope=["pkg/*.py"], patterns=["socket"]);
"""


@pytest.fixture
def report(pinned, workspace):
    """A subject, a report `demo` pinned at its first commit, and a filled-in notebook."""
    repo = pinned(SUBJECT, reports=["demo"])
    first = repo.commits[0]
    path = workspace.notebooks / "demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(4, nbformat.v4.new_code_cell(BODY))
    nbformat.write(nb, path)
    # author mode adds the quotes to the register, as an analyst's JupyterLab session would
    import tracework

    wb = tracework.open("demo")
    src = wb.source("SRC-1")
    src.quote("pkg/store.py", symbol="Store.put")
    src.quote("pkg/banner.py", lines=(2, 2), id="Q-banner")
    return repo, first


def _render(tw, *args):
    return tw("render", "demo", *args)


@pytest.mark.slow
def test_render_writes_a_readable_escaped_report(report, tw, workspace):
    _, first = report
    result = _render(tw, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["ok"] is True and out["commit"] == first
    folder = workspace.root / out["directory"]
    mask = os.umask(0)
    os.umask(mask)
    assert folder.stat().st_mode & 0o777 == 0o777 & ~mask  # as mkdir would make it, not 0700
    assert sorted(p.name for p in folder.iterdir()) == [
        "manifest.json",
        "records.json",
        "report.html",
        "report.ipynb",
    ]
    page = (folder / "report.html").read_text()
    assert 'id="RT-RTE-put"' in page and 'id="RT-CMP-store"' in page
    assert 'id="Q-banner"' in page and 'href="#RT-CMP-store"' in page
    # the hostile quoted line is text, never markup
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # no script but the page's own: the theme script inline in its head
    assert "<script" not in page.partition("</head>")[2].lower()
    # inputs hidden, hashes shown, nothing loaded from outside the page
    assert "tracework.open(" not in page and "src.quote(" not in page
    records = json.loads((folder / "records.json").read_text())
    for quote in records["quotes"].values():
        assert quote["sha256"] in page
    assert not re.search(r'(src|href)="(https?:)?//', page.replace('href="https://', ""))
    assert "Content-Security-Policy" in page
    assert "Source register" in page and "Provenance" in page
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["commit"] == first
    assert manifest["parameters"] == {"commit": first, "mode": "render", "register": "demo"}
    assert re.fullmatch(r"[0-9a-f]{64}", manifest["notebook_sha256"])
    assert re.fullmatch(r"[0-9a-f]{64}", manifest["register_sha256"])
    executed = (folder / "report.ipynb").read_text()
    assert f'commit = \\"{first}\\"' in executed  # a string, never a number
    # the page lists the checks by name, as it did when it read them from sorted JSON; the
    # notebook, in the order they ran
    row = r'<tr><th>(\w+)</th><td><span class="tw-badge'
    [summary] = [
        o.data["text/html"]
        for cell in nbformat.reads(executed, as_version=4).cells
        for o in cell.get("outputs", [])
        if o.get("metadata", {}).get("tracework") == "summary"
    ]
    ran = re.findall(row, summary)
    assert ran[:4] == ["register", "records", "absences", "diagrams"]
    assert re.findall(row, page) == sorted(ran)


@pytest.mark.slow
def test_render_twice_gives_identical_bytes(report, tw, workspace):
    _, first = report
    assert _render(tw).exit_code == 0
    folder = workspace.reports / "demo" / first[:12]
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert _render(tw).exit_code == 0
    after = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert before["report.html"] == after["report.html"]
    assert before["records.json"] == after["records.json"]
    assert before == after


@pytest.mark.slow
def test_a_failing_check_at_the_pin_keeps_the_previous_report(report, tw, workspace):
    _, first = report
    assert _render(tw).exit_code == 0
    folder = workspace.reports / "demo" / first[:12]
    good = (folder / "report.html").read_bytes()
    path = workspace.notebooks / "demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[4].source = nb.cells[4].source.replace('patterns=["socket"]', 'patterns=["Store"]')
    nbformat.write(nb, path)
    result = _render(tw)
    assert result.exit_code == 1
    assert "RT-ABS-net" in result.output and "failed-" in result.output
    assert (folder / "report.html").read_bytes() == good
    failed = workspace.reports / "demo" / f"failed-{first[:12]}"
    assert (failed / "report.ipynb").is_file()
    # fixed: a good render of that commit removes its failed folder
    nb.cells[4].source = nb.cells[4].source.replace('patterns=["Store"]', 'patterns=["socket"]')
    nbformat.write(nb, path)
    assert _render(tw).exit_code == 0
    assert not failed.exists()


def test_bad_parameters_are_refused_before_a_kernel_starts(report, tw, workspace):
    result = _render(tw, "--commit", "HEAD~1")
    assert result.exit_code == 2 and "not a commit id" in result.output
    result = _render(tw, "--commit", "abcdef12")
    assert result.exit_code == 2 and "no commit abcdef12" in result.output
    result = tw("render", "nosuch")
    assert result.exit_code == 2 and "no notebook" in result.output
    assert not (workspace.reports / "demo").exists()
    # the command itself, in a process of its own: its one message and hint, and nothing
    # else.  A kernel started before the inputs were read and killed while it booted
    # printed its client thread's traceback about every other run: five runs see it.
    for _ in range(5):
        done = subprocess.run(
            [sys.executable, "-m", "tracework", "render", "nosuch"],
            cwd=workspace.root,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr.startswith("tracework: error: no notebook at "), done.stderr
        assert len(done.stderr.splitlines()) == 2, done.stderr  # the message and its hint


@pytest.mark.slow
def test_a_notebook_saved_with_outputs_renders_from_a_cleared_copy(report, tw, workspace):
    """JupyterLab saves outputs: the render clears them in its own copy, says so once,
    and never writes the analyst's file."""
    path = workspace.notebooks / "demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    for cell in [c for c in nb.cells if c.cell_type == "code"][1:3]:
        cell.outputs = [nbformat.v4.new_output("stream", text="left over\n")]
        cell.execution_count = 7
    nbformat.write(nb, path)
    saved = path.read_bytes()
    result = _render(tw, "--json")
    assert result.exit_code == 0, result.output
    assert result.stderr.count("cleared in the render's copy") == 1
    assert "outputs of 2 cells" in result.stderr
    assert path.read_bytes() == saved
    folder = workspace.root / json.loads(result.stdout)["directory"]
    assert "left over" not in (folder / "report.ipynb").read_text()
    assert "left over" not in (folder / "report.html").read_text()


def test_a_notebook_without_a_parameters_cell_is_bad_input(report, tw, workspace):
    path = workspace.notebooks / "demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        cell.metadata.pop("tags", None)
    nbformat.write(nb, path)
    result = _render(tw)
    assert result.exit_code == 2 and "no cell is tagged `parameters`" in result.output


def test_a_broken_rubric_is_named_before_a_kernel_starts(report, tw, workspace):
    rubrics = workspace.registers / "rubrics"
    rubrics.mkdir(exist_ok=True)
    (rubrics / "care.yaml").write_text("title: Care\nmechanisms: [{id: x}]\n")
    result = _render(tw)
    assert result.exit_code == 2 and "registers/rubrics/care.yaml" in result.stderr
    assert "Value error" not in result.stderr
    assert not (workspace.reports / "demo").exists()  # nothing staged, nothing kept


def test_new_refuses_to_overwrite(report, tw):
    _, first = report
    result = tw("new", "demo", "--subject", "toy", "--commit", first)
    assert result.exit_code == 2 and "already exists" in result.output


def test_new_takes_a_commit_prefix_and_pins_the_full_id(report, tw, workspace):
    from tracework.register import store as reg

    _, first = report
    result = tw("new", "other", "--subject", "toy", "--commit", first[:10])
    assert result.exit_code == 0, result.output
    assert reg.load(workspace.register_file("other")).git_source("SRC-1").commit == first


@pytest.mark.slow
def test_a_render_killed_outright_leaves_a_folder_the_next_render_sweeps(
    report, tw, workspace, monkeypatch
):
    """SIGKILL skips every cleanup; the next render removes what no live process holds
    (an flock the kernel dropped with the process), and never a live render's folder."""
    out = workspace.reports / "demo"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracework", "render", "demo"],
        cwd=workspace.root,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not list(out.glob(".*.staging")) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    (left,) = out.glob(".*.staging")
    live = fsio.staging_dir(out, "live")  # another render's, still at work
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(live)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setattr(fsio, "STAGING_GRACE_SECONDS", 0.0)
        assert _render(tw).exit_code == 0
        assert not left.exists() and live.is_dir()
        assert (out / report[1][:12] / "report.html").is_file()
    finally:
        holder.kill()
        holder.wait()
    young = fsio.staging_dir(out, "young")  # made a moment ago: maybe not held yet
    an_hour_ago = time.time() - 3600
    os.utime(live, (an_hour_ago, an_hour_ago))
    monkeypatch.setattr(fsio, "STAGING_GRACE_SECONDS", 60.0)
    assert fsio.sweep_staging(out) == [live]  # its holder is gone now
    assert young.is_dir()


HOLD = """
import fcntl, os, sys, time

fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("date", ["2026-13-45", "2026-02-30", "0000-00-00", "2026-1-5"])
def test_an_impossible_analysis_date_is_refused_before_a_kernel_starts(report, tw, date):
    for args in (("render", "demo"), ("rerender", "demo", "--latest")):
        result = tw(*args, "--analysis-date", date)
        assert result.exit_code == 2, (args, result.output)
        assert "is not a date" in result.stderr and "YYYY-MM-DD" in result.stderr


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"broken', "not a render history"),
        ('[{"commit": 5}]', "entry 1 has no commit id"),
        ('{"commit": "abc"}', "not a list of entries"),
        ('[{"commit": "abc", "commits_since_pin": "3"}]', "commits_since_pin is not a number"),
    ],
)
def test_a_broken_history_stops_the_render_and_is_kept(report, tw, workspace, text, why):
    """Rendering over it would drop every earlier render's entry without a word."""
    history = workspace.reports / "demo" / "history.json"
    history.parent.mkdir(parents=True, exist_ok=True)
    history.write_text(text)
    result = _render(tw)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "reports/demo/history.json is not a render history" in result.stderr
    assert why in result.stderr and "remove it to start the history again" in result.stderr
    assert history.read_text() == text
    assert not list(history.parent.glob("failed-*"))  # stopped before a kernel started


@pytest.mark.slow
def test_an_interrupted_render_keeps_nothing_and_is_not_called_failed(
    report, tw, workspace, monkeypatch
):
    """Ctrl-C late in a render (here while exporting): exit 130, no failed-* folder
    (nothing failed), no staging folder, no report."""

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(rendering, "export_html", interrupted)
    result = _render(tw)
    assert result.exit_code == 130 and "interrupted" in result.output
    out = workspace.reports / "demo"
    assert sorted(p.name for p in out.iterdir()) == []


# -- what ran is what the manifest records ---------------------------------------------

EDIT_AFTER_READING = """import json, pathlib
path = pathlib.Path("notebooks/demo.ipynb")
data = json.loads(path.read_text())
data["cells"].append({"cell_type": "markdown", "id": "edit", "metadata": {},
                      "source": "EDITED" + " DURING THE RENDER"})
path.write_text(json.dumps(data))
yaml = pathlib.Path("registers/demo.yaml")
yaml.write_text(yaml.read_text() + "# edited during the render\\n")"""


@pytest.mark.slow
def test_the_manifest_records_the_inputs_that_ran_not_edits_made_meanwhile(report, tw, workspace):
    """An analyst saves the notebook and the register while the render runs (here a cell
    does, after the notebook read the register): the manifest hashes what was executed
    and read, and the next rerender sees the edits instead of skipping a stale report."""
    from tracework.batch.rerender import up_to_date

    _, first = report
    path = workspace.notebooks / "demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(5, nbformat.v4.new_code_cell(EDIT_AFTER_READING))
    nbformat.write(nb, path)
    ran = hashlib.sha256(path.read_bytes()).hexdigest()
    read = hashlib.sha256((workspace.registers / "demo.yaml").read_bytes()).hexdigest()
    result = _render(tw)
    assert result.exit_code == 0, result.output
    folder = workspace.reports / "demo" / first[:12]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert (manifest["notebook_sha256"], manifest["register_sha256"]) == (ran, read)
    assert json.loads((folder / "records.json").read_text())["register_sha256"] == read
    assert "EDITED DURING THE RENDER" in path.read_text()  # the edit is on disk…
    assert "EDITED DURING THE RENDER" not in (folder / "report.ipynb").read_text()  # …not run
    assert not up_to_date(workspace, "demo", first)


RUBRIC = """title: Care
mechanisms:
  - {id: kept, name: Kept, definition: Items are kept., evidence: The store.}
"""
EDIT_BEFORE_READING = """import pathlib
yaml = pathlib.Path("registers/demo.yaml")
yaml.write_text(yaml.read_text() + "# edited before the notebook read it\\n")"""
EDIT_RUBRIC_THEN_MARK = """import pathlib
rubric = pathlib.Path("registers/rubrics/care.yaml")
rubric.write_text(rubric.read_text().replace("Items are kept.", "Items are kept a while."))
wb.mark("care", "kept", present=True, evidence=["RT-CMP-store"])"""


@pytest.mark.slow
def test_an_input_the_notebook_read_after_an_edit_fails_the_render(report, tw, workspace):
    """The register changed between the render's hash and the notebook's ``tw.open``, and
    the rubric before the notebook marked against it: the notebook read other bytes than
    the manifest would record, so the render fails and says which files changed."""
    _, first = report
    (workspace.registers / "rubrics").mkdir()
    (workspace.registers / "rubrics" / "care.yaml").write_text(RUBRIC)
    path = workspace.notebooks / "demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(5, nbformat.v4.new_code_cell(EDIT_RUBRIC_THEN_MARK))
    nb.cells.insert(2, nbformat.v4.new_code_cell(EDIT_BEFORE_READING))
    nbformat.write(nb, path)
    result = _render(tw)
    assert result.exit_code == 2, result.output
    assert (
        "registers/demo.yaml and registers/rubrics/care.yaml changed while the report "
        "rendered" in result.stderr
    )
    assert "render again once the edit is saved" in result.stderr
    assert not (workspace.reports / "demo" / first[:12]).exists()


# -- a failed render's notebook, and what may be in its way -----------------------------


@pytest.mark.slow
@pytest.mark.parametrize("in_the_way", ["symlink", "file", "folder"])
def test_a_failed_folder_that_is_not_ours_is_never_written_through(
    report, tw, workspace, tmp_path, in_the_way
):
    """A failed-* that is a symbolic link, a file or a folder tracework did not write
    stays as it is; the message is the real failure, and the hint says what is in the
    way (it used to be "Not a directory", hiding which check failed)."""
    _, first = report
    path = workspace.notebooks / "demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[4].source = nb.cells[4].source.replace('patterns=["socket"]', 'patterns=["Store"]')
    nbformat.write(nb, path)
    failed = workspace.reports / "demo" / f"failed-{first[:12]}"
    failed.parent.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mine.txt").write_text("mine")
    what = {
        "symlink": f"a symbolic link (to {elsewhere})",
        "file": "a file, not a folder",
        "folder": "a folder tracework did not write (it holds mine.txt)",
    }[in_the_way]
    if in_the_way == "symlink":
        failed.symlink_to(elsewhere)
    elif in_the_way == "file":
        failed.write_text("mine")
    else:
        (failed / "mine.txt").parent.mkdir()
        (failed / "mine.txt").write_text("mine")
    result = _render(tw)
    assert result.exit_code == 1, result.output
    first_line, hint = result.stderr.splitlines()
    assert "checks fail at the register's pin" in first_line and "RT-ABS-net" in first_line
    assert hint == (
        "  hint: fix the notebook or the register; the previous report is kept; "
        f"the executed notebook could not be kept: reports/demo/failed-{first[:12]} "
        f"is {what}; move it away to keep the next failure's notebook; no report written"
    )
    assert sorted(p.name for p in elsewhere.iterdir()) == ["mine.txt"]
    if in_the_way != "symlink":
        assert (
            failed.read_text() if failed.is_file() else (failed / "mine.txt").read_text()
        ) == "mine"
        assert not (failed.is_dir() and (failed / "report.ipynb").exists())
    assert not list(failed.parent.glob(".*.staging"))
    # a later good render removes only a failed folder of ours
    nb.cells[4].source = nb.cells[4].source.replace('patterns=["Store"]', 'patterns=["socket"]')
    nbformat.write(nb, path)
    assert _render(tw).exit_code == 0
    assert os.path.lexists(failed) and sorted(p.name for p in elsewhere.iterdir()) == ["mine.txt"]


@pytest.mark.parametrize(
    ("setting", "why"),
    [
        ("cell_timeout = 0", "render.cell_timeout must be a positive whole number of seconds"),
        ("timeout = 2.5", "render.timeout must be a positive whole number of seconds"),
        ('output_cap = "1M"', "render.output_cap must be a positive whole number of bytes"),
    ],
)
def test_a_bad_render_setting_is_refused_before_a_kernel_starts(
    report, tw, workspace, setting, why
):
    marker = workspace.root / "tracework.toml"
    marker.write_text(marker.read_text().split("[render]")[0] + f"[render]\n{setting}\n")
    result = _render(tw)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"tracework: error: {marker}: {why}")
    assert "hint: the default is" in result.stderr
    assert not (workspace.reports / "demo").exists()


@pytest.mark.slow
def test_a_notebook_without_cell_ids_renders_byte_identically(report, tw, workspace):
    """nbformat < 4.5 notebooks (and many generators) carry no cell ids; upgraded on the way
    to the kernel they got random ones, so two renders differed in their cell-id attributes."""
    _, first = report
    path = workspace.notebooks / "demo.ipynb"
    data = json.loads(path.read_text())
    data["nbformat_minor"] = 4
    for cell in data["cells"]:
        cell.pop("id", None)
    path.write_text(json.dumps(data, indent=1))
    assert _render(tw).exit_code == 0
    folder = workspace.reports / "demo" / first[:12]
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert _render(tw).exit_code == 0
    assert before == {p.name: p.read_bytes() for p in folder.iterdir()}
    assert b'"id": "cell-0"' in before["report.ipynb"]


@pytest.mark.slow
@pytest.mark.parametrize("shown", ["[1, 2]", "'text'", "{'format': 'x'}"])
def test_records_a_cell_displays_that_are_not_an_object_are_one_message(
    report, tw, workspace, shown
):
    """The render takes records.json from the last records display of the notebook; one a
    cell made itself, of any JSON shape, is named as not tracework's, exit 2, and the
    previous report stays."""
    _, first = report
    path = workspace.notebooks / "demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            f"from IPython.display import display\ndisplay({{{RECORDS_MIME!r}: {shown}}}, raw=True)"
        )
    )
    nbformat.write(nb, path)
    result = _render(tw)
    assert result.exit_code == 2, result.output
    [message, hint] = result.stderr.splitlines()
    assert message.startswith(
        "tracework: error: demo.ipynb: the records wb.done() gave are not tracework's "
        "records.json ("
    )
    assert hint.startswith("  hint: render with the tracework kernel")
    assert "Traceback" not in result.output
    assert not (workspace.reports / "demo" / first[:12]).exists()
