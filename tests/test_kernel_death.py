"""A kernel that dies under a render (a cell calls ``os._exit``, the OOM killer strikes).

The render fails with one message that says so, naming the cell and how the kernel ended;
in a batch the other reports render, in a kernel of their own, and nothing is left running.
Every command runs in a subprocess with a timeout: a render that waits forever on a dead
kernel fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import nbformat
import pytest

from conftest import HANG_GUARD, run_tracework, running_in
from tracework.kernels import host as kernel_host
from tracework.kernels import warm as kernels

pytestmark = pytest.mark.slow  # kernels, browsers, sandboxes: not in `make test-fast`


CELL = """q = src.quote("pkg/store.py", symbol="Store.put")
wb.component("RT-CMP-store", label="Store", identity="The store.", evidence=[q]);"""
DIES = "import os\nos._exit(3)"
# the notebook's 6th cell of 9 (as JupyterLab counts, Markdown included): title,
# parameters, tracework.open, a heading, CELL, then DIES
DIED = "the notebook could not be executed: the kernel died in cell 6 of 9 (id dies-here)"


@pytest.fixture
def reports(pinned, workspace):
    """Two reports on one subject: `dies`, whose kernel exits in its 5th code cell, and `good`."""
    store = "class Store:\n    def put(self, key, value):\n        pass\n"
    repo = pinned({"pkg/store.py": store}, track="main", reports=["dies", "good"])
    for name in ("dies", "good"):
        path = workspace.notebooks / f"{name}.ipynb"
        nb = nbformat.read(path, as_version=4)
        nb.cells.insert(4, nbformat.v4.new_code_cell(CELL))
        if name == "dies":
            nb.cells.insert(5, nbformat.v4.new_code_cell(DIES))
            nb.cells[5].id = "dies-here"
        nbformat.write(nb, path)
        import tracework

        tracework.open(name).source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    return repo.commits[0]


def _left_in(folder: Path) -> list[str]:
    """Kernels, kernel hosts and batch workers still running in ``folder``."""
    return list(running_in(folder, "ipykernel", "host_main", "multiprocessing").values())


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_batch_with_a_dying_kernel_finishes_and_renders_the_rest(reports, workspace, jobs):
    pin = reports
    result = run_tracework(
        workspace.root, "rerender", "--all", "--commit", pin, "-j", jobs, "--force", "--json"
    )
    assert result.returncode == 1, result.stderr
    by_name = {r["name"]: r for r in json.loads(result.stdout)["reports"]}
    dies, good = by_name["dies"], by_name["good"]
    assert dies["status"] == "failed"
    assert dies["error"] == f"{DIED} (exit code 3)"
    # rendered after `dies` (with -j 1, by the same worker): a kernel of its own
    assert good["status"] == "rendered" and good["error"] is None
    assert (workspace.reports / "good" / pin[:12] / "report.html").is_file()
    assert not (workspace.reports / "dies" / pin[:12]).exists()
    assert "Kernel died while waiting" not in result.stderr
    assert _left_in(workspace.root) == []


def test_a_dying_kernel_started_the_usual_way_also_says_how_it_ended(reports, workspace):
    """Without a kernel host (not Linux), the kernel is jupyter_client's own child."""
    pin = reports
    prelude = "import tracework.kernels.warm as k\nk.HOSTED = False"
    result = run_tracework(
        workspace.root, "rerender", "--all", "--commit", pin, "-j", "1", "--json", prelude=prelude
    )
    assert result.returncode == 1, result.stderr
    by_name = {r["name"]: r for r in json.loads(result.stdout)["reports"]}
    assert by_name["dies"]["error"] == f"{DIED} (exit code 3)"
    assert by_name["good"]["status"] == "rendered"
    assert _left_in(workspace.root) == []


def test_render_with_a_dying_kernel_gives_one_message(reports, workspace):
    """nbclient's own log line ("Kernel died while waiting for execute reply.") stays off
    stderr: the user reads tracework's one message, exit 2.  The kernel is the render's
    own child, so how it ended is known; what ran is kept, up to the cell that killed it."""
    result = run_tracework(workspace.root, "render", "dies")
    assert result.returncode == 2
    failed = f"reports/dies/failed-{reports[:12]}"
    assert result.stderr.splitlines() == [
        f"tracework: error: {DIED} (exit code 3)",
        f"  hint: the executed notebook is kept in {failed}/; no report written",
    ]
    assert not (workspace.reports / "dies" / reports[:12]).exists()
    kept = nbformat.read(workspace.root / failed / "report.ipynb", as_version=4)
    assert DIES in [cell.source for cell in kept.cells]
    assert _left_in(workspace.root) == []


def test_a_kernel_host_tells_how_its_kernel_ended(workspace):
    if not kernel_host.HOSTED:
        pytest.skip("kernel hosts need pidfd_open (Linux)")
    host = kernel_host.KernelHost(workspace.root)
    try:
        km = kernels.WarmKernel(workspace.root, host).take()
        assert km is not None
        process = km.provisioner.process
        assert isinstance(process, kernel_host.ForkedKernel)
        assert process.exit_status() is None  # running
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=HANG_GUARD)
        assert process.exit_status() == -signal.SIGKILL
        assert process.exit_status() == -signal.SIGKILL  # asked once, kept
        assert host.exit_status(process.pid) is None  # the host forgets what it told
        kernels.shutdown(km)
    finally:
        host.close()
    assert _left_in(workspace.root) == []


# -- found in review: each once made tracework hang, crash or lie --------------


@pytest.fixture
def notebook(pinned, tw, workspace):
    repo = pinned({"a.py": "x = 1\n"})
    path = workspace.notebooks / "demo.ipynb"
    from tracework.notebook.scaffold import notebook_for

    nb = notebook_for("demo")
    nbformat.write(nb, path)
    return repo, path


@pytest.mark.slow
def test_analysis_date_is_checked_before_a_kernel_starts(notebook, tw, workspace):
    result = tw("render", "demo", "--analysis-date", "yesterday")
    assert result.exit_code == 2 and "YYYY-MM-DD" in result.output
    assert not (workspace.reports / "demo").exists()


@pytest.mark.slow
def test_a_dead_kernel_is_a_clear_message(notebook, tw, workspace):
    _, path = notebook
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell("import os\nos._exit(1)"))
    nbformat.write(nb, path)
    result = tw("render", "demo")
    assert result.exit_code == 2, result.output
    assert "could not be executed" in result.output or "failed in cell" in result.output
    assert "Traceback" not in result.output
