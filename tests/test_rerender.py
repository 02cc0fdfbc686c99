"""`tracework rerender`, first-change search, formatting-only changes and history."""

from __future__ import annotations

import copy
import gc
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from contextlib import suppress
from pathlib import Path

import nbformat
import pytest

from conftest import pids_in, running_in, sigint_default
from tracework.batch.rerender import render_one
from tracework.drift.first_change import Graph, first_change
from tracework.git.mirror import Mirror
from tracework.kernels import host as kernel_host
from tracework.kernels import warm as kernels
from tracework.records.artefacts import read_manifest, read_records
from tracework.register.store import load
from tracework.render import export as rendering
from tracework.render.history import read_history
from tracework.views.cards import summary_html

STORE = "class Store:\n    def put(self, key, value):\n        self.items[key] = value\n"
CELL = """q = src.quote("pkg/store.py", symbol="Store.put")
wb.component("RT-CMP-store", label="Store", identity="The store.", evidence=[q]);"""
CONTRACT = {
    "name",
    "commit",
    "status",
    "counts",
    "first_changed",
    "first_content_change",
    "format_only",
    "uncited",
    "absences",
    "needs_review",
    "changed",
    "error",
}


# -- formatting-only changes ------------------------------------------------------------------


# -- first change by bisection --------------------------------------------------------------


def test_bisection_names_the_non_merge_commit_that_made_the_change(make_repo):
    repo = make_repo("graph")
    repo.write("a.txt", "keep\nstable\n")
    pin = repo.commit("pin")
    for n in range(6):
        repo.write(f"noise{n}.txt", f"{n}\n")
        repo.commit(f"noise {n}")
    repo.git("checkout", "-q", "-b", "side")
    repo.write("side.txt", "s\n")
    repo.commit("side 1")
    repo.write("a.txt", "changed\nstable\n")
    culprit = repo.commit("side 2 changes a.txt")
    repo.write("side.txt", "s2\n")
    repo.commit("side 3")
    repo.git("checkout", "-q", "main")
    repo.write("main.txt", "m\n")
    repo.commit("main moves on")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    target = repo.git("rev-parse", "HEAD").strip()
    mirror = Mirror(repo.path / ".git")
    graph = Graph(mirror, pin, target)
    probes: list[str] = []

    def changed(commit: str) -> bool:
        probes.append(commit)
        data = mirror.read_blob(mirror.tree(commit)["a.txt"].oid).data
        return data is not None and b"keep\n" not in data

    assert first_change(graph, changed) == culprit
    assert len(probes) < len(graph)  # bisected, not walked
    assert first_change(graph, lambda c: False) is None


# -- the command -----------------------------------------------------------------------------


@pytest.fixture
def reports(pinned, tw, workspace):
    """Two reports on one subject: `good`, and `broken` whose notebook always fails."""
    files = {"pkg/store.py": STORE, "pkg/util.py": "def helper():\n    return 1\n"}
    repo = pinned(files, track="main", reports=["good", "broken"])
    first = repo.commits[0]
    for name, cell in (("good", CELL), ("broken", CELL + "\nraise RuntimeError('boom')")):
        path = workspace.notebooks / f"{name}.ipynb"
        nb = nbformat.read(path, as_version=4)
        nb.cells.insert(4, nbformat.v4.new_code_cell(cell))
        nbformat.write(nb, path)
        import tracework

        tracework.open(name).source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    # three more commits: a reformat of the quoted method, noise, then a real edit
    repo.write(
        "pkg/store.py", STORE.replace("(self, key, value)", "(\n        self, key, value\n    )")
    )
    reformat = repo.commit("reformat")
    repo.write("pkg/util.py", "def helper():\n    return 2\n")
    repo.commit("noise")
    repo.write(
        "pkg/store.py",
        STORE.replace("(self, key, value)", "(\n        self, key, value\n    )").replace(
            "= value", "= value * 2"
        ),
    )
    edit = repo.commit("edit")
    assert tw("fetch", "toy").exit_code == 0
    return first, reformat, edit


@pytest.mark.slow
def test_rerender_reports_drift_first_changes_and_isolates_failures(reports, tw, workspace):
    _, reformat, edit = reports
    result = tw("rerender", "--all", "--latest", "-j", "2", "--json")
    assert result.exit_code == 1, result.output  # one report failed
    out = json.loads(result.output)
    assert out["ok"] is False
    by_name = {r["name"]: r for r in out["reports"]}
    assert all(set(r) == CONTRACT for r in out["reports"])
    broken, good = by_name["broken"], by_name["good"]
    assert broken["status"] == "failed" and "boom" in broken["error"]
    assert good["status"] == "rendered" and good["commit"] == edit and good["error"] is None
    assert good["counts"] == {"verified": 0, "moved": 0, "changed": 1, "ambiguous": 0, "missing": 0}
    assert good["first_changed"] == {"Q-store-Store.put": reformat}
    assert good["first_content_change"] == {"Q-store-Store.put": edit}
    assert good["format_only"] == []
    page = (workspace.reports / "good" / edit[:12] / "report.html").read_text()
    assert 'id="drift"' in page and reformat[:12] in page and 'id="render-history"' in page
    history = json.loads((workspace.reports / "good" / "history.json").read_text())
    assert [e["commit"] for e in history] == [edit] and history[0]["commits_since_pin"] == 3
    assert not (workspace.reports / "broken" / edit[:12]).exists()
    assert _processes_in(workspace.root) == []  # no kernel, kernel host or worker left


def _processes_in(folder: Path) -> list[str]:
    """Kernels, kernel hosts and batch workers still running in ``folder`` (Linux)."""
    return list(running_in(folder, "ipykernel", "multiprocessing.spawn").values())


@pytest.mark.slow
def test_rerender_skips_what_did_not_change_and_force_renders_again(reports, tw, workspace):
    _, reformat, _ = reports
    (workspace.notebooks / "broken.ipynb").unlink()
    once = json.loads(tw("rerender", "good", "--commit", reformat, "--json").output)
    assert once["reports"][0]["status"] == "rendered"
    assert once["reports"][0]["format_only"] == ["Q-store-Store.put"]
    again = tw("rerender", "good", "--commit", reformat, "--json")
    assert again.exit_code == 0
    assert json.loads(again.output)["reports"][0]["status"] == "skipped"
    forced = json.loads(tw("rerender", "good", "--commit", reformat, "--force", "--json").output)
    assert forced["reports"][0]["status"] == "rendered"
    # a change to the register makes it stale again
    assert tw("quote", "good", "SRC-1", "pkg/util.py", "--lines", "1-1").exit_code == 0
    stale = json.loads(tw("rerender", "good", "--commit", reformat, "--json").output)
    assert stale["reports"][0]["status"] == "rendered"
    # the date of this check is an input too: it shows on the page and in the history
    args = ("rerender", "good", "--commit", reformat, "--analysis-date", "2026-04-01", "--json")
    dated = json.loads(tw(*args).output)
    assert dated["reports"][0]["status"] == "rendered"
    assert json.loads(tw(*args).output)["reports"][0]["status"] == "skipped"
    history = json.loads((workspace.reports / "good" / "history.json").read_text())
    assert [e["checked"] for e in history if e["commit"] == reformat] == ["2026-04-01"]
    page = (workspace.reports / "good" / reformat[:12] / "report.html").read_text()
    assert "2026-04-01" in page
    bad = tw("rerender", "good", "--commit", reformat, "--analysis-date", "April")
    assert bad.exit_code == 2 and "is not a date" in bad.output


def test_rerender_refuses_bad_requests(reports, tw):
    assert tw("rerender", "--all").exit_code == 2  # neither --commit nor --latest
    assert tw("rerender", "--all", "--latest", "--commit", "abc1").exit_code == 2
    assert tw("rerender").exit_code == 2


def test_an_unknown_report_is_named_with_the_known_ones(reports, tw, workspace):
    result = tw("rerender", "nosuch", "--latest")
    assert result.exit_code == 2
    assert "no report nosuch in this workspace" in result.stderr
    assert "notebooks/NAME.ipynb + registers/NAME.yaml" in result.stderr
    assert "the reports here: broken, good" in result.stderr
    assert "register" not in result.stderr.replace("registers/NAME.yaml", "")
    (workspace.registers / "broken.yaml").unlink()  # a notebook alone is no report
    result = tw("rerender", "good", "broken", "other", "--commit", reports[0])
    assert result.exit_code == 2
    assert "no reports broken, other in this workspace" in result.stderr
    assert "the reports here: good" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("manifest", ["null", '["a"]'])
def test_a_manifest_that_is_not_an_object_means_render_again(reports, tw, workspace, manifest):
    _, reformat, _ = reports
    (workspace.notebooks / "broken.ipynb").unlink()
    args = ("rerender", "good", "--commit", reformat, "-j", "1", "--json")
    assert json.loads(tw(*args).output)["reports"][0]["status"] == "rendered"
    assert json.loads(tw(*args).output)["reports"][0]["status"] == "skipped"
    (workspace.reports / "good" / reformat[:12] / "manifest.json").write_text(manifest + "\n")
    result = tw(*args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["reports"][0]["status"] == "rendered"
    # a records.json that is not an object is no good render either
    (workspace.reports / "good" / reformat[:12] / "records.json").write_text("null\n")
    assert json.loads(tw(*args).output)["reports"][0]["status"] == "rendered"
    assert json.loads(tw(*args).output)["reports"][0]["status"] == "skipped"


@pytest.mark.slow
def test_a_batch_render_in_a_warm_kernel_gives_the_same_bytes_as_render(reports, tw, workspace):
    _, reformat, _ = reports
    (workspace.notebooks / "broken.ipynb").unlink()
    assert tw("render", "good", "--commit", reformat).exit_code == 0
    folder = workspace.reports / "good" / reformat[:12]
    cold = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert tw("rerender", "good", "--commit", reformat, "--force", "-j", "1").exit_code == 0
    warm = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert warm == cold


LEAVE = """
import builtins, os, sys, tracework
tracework.LEFT = builtins.LEFT = 1
os.environ["TRACEWORK_LEFT"] = "1"
sys.modules["left_behind"] = sys
"""
FIND = """
import builtins, os, sys, tracework
left = [where for where, found in (("module", hasattr(tracework, "LEFT")),
        ("builtins", hasattr(builtins, "LEFT")), ("environ", "TRACEWORK_LEFT" in os.environ),
        ("sys.modules", "left_behind" in sys.modules)) if found]
assert not left, f"state of the previous report: {left}"
"""
WHO = """
try:
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
        parent = f.read().replace(bytes(1), b" ").decode()
except OSError:
    parent = "(no /proc)"
print("kernel", os.getpid(), parent)
"""


@pytest.mark.slow
def test_each_report_runs_in_a_fresh_kernel_of_its_own(reports, tw, workspace):
    """Kernels are booted ahead (forked by the kernel host where there is one), yet the
    second report sees nothing the first one left in its kernel."""
    _, reformat, _ = reports
    for name, code in (("broken", LEAVE), ("good", FIND)):
        path = workspace.notebooks / f"{name}.ipynb"
        nb = nbformat.read(path, as_version=4)
        nb.cells[4].source = CELL + "\n" + code + WHO
        nbformat.write(nb, path)
    result = tw("rerender", "broken", "good", "--commit", reformat, "-j", "1", "--json")
    assert result.exit_code == 0, result.output
    assert [r["status"] for r in json.loads(result.output)["reports"]] == ["rendered"] * 2
    kernels_seen = []
    for name in ("broken", "good"):
        executed = nbformat.read(workspace.reports / name / reformat[:12] / "report.ipynb", 4)
        texts = [o.get("text", "") for c in executed.cells for o in c.get("outputs", [])]
        _, pid, parent = next(t for t in texts if t.startswith("kernel ")).split(" ", 2)
        kernels_seen.append(pid)
        if kernel_host.HOSTED:
            assert "host_main" in parent  # forked by the host, not started from scratch
    assert kernels_seen[0] != kernels_seen[1]
    assert _processes_in(workspace.root) == []


@pytest.mark.slow
def test_a_batch_worker_keeps_no_resources_per_report(reports, workspace):
    """Threads and file descriptors of a worker stay level however many reports it renders
    (papermill leaves open the client of a kernel it did not start)."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("counts file descriptors in /proc")
    _, reformat, _ = reports
    (workspace.notebooks / "broken.ipynb").unlink()

    def render_and_count() -> tuple[int, int]:
        assert render_one(str(workspace.root), "good", reformat).status == "rendered"
        kernels.release()  # the next report's kernel, booting or not, and the host
        gc.collect()
        return len(os.listdir("/proc/self/fd")), threading.active_count()

    render_and_count()
    level = render_and_count()
    assert render_and_count() == level
    assert render_and_count() == level
    assert _processes_in(workspace.root) == []


DESCRIBE = """
import json, os, signal, sys, threading
print(json.dumps({
    "argv": [sys.argv[0], sys.argv[1],
             *(a for a in sys.argv[3:] if not a.startswith("--IPKernelApp.parent_handle"))],
    "threads": sorted(type(t).__name__ for t in threading.enumerate()),
    "path": sys.path,
    "cwd": os.getcwd(),
    "environ": {k: v for k, v in os.environ.items() if k != "JPY_PARENT_PID"},
    "parent_is_JPY_PARENT_PID": os.environ.get("JPY_PARENT_PID") == str(os.getppid()),
    "own_session_and_group": os.getsid(0) == os.getpgid(0) == os.getpid(),
    "signals": {s.name: str(signal.getsignal(s)) for s in
                (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE)},
    "streams": [type(sys.stdout).__name__, type(sys.stderr).__name__],
    "flags": str(sys.flags),
    "tracework_loaded": "tracework.notebook.workbench" in sys.modules,
    "nbformat_loaded": "nbformat" in sys.modules,
}, sort_keys=True))
"""


def _describe(warm: kernels.WarmKernel) -> dict[str, object]:
    km = warm.take()
    assert km is not None, "no kernel started"
    client = km.client()
    client.start_channels()
    out: list[str] = []
    try:
        client.wait_for_ready(timeout=60)
        client.execute_interactive(
            DESCRIBE,
            timeout=60,
            output_hook=lambda msg: out.append(msg["content"].get("text", "")),
        )
    finally:
        client.stop_channels()
        kernels.shutdown(km)
    described: dict[str, object] = json.loads("".join(out))
    return described


@pytest.mark.slow
def test_a_forked_kernel_is_the_kernel_a_launch_would_give(workspace):
    if not kernel_host.HOSTED:
        pytest.skip("kernel hosts need pidfd_open (Linux)")
    host = kernel_host.KernelHost(workspace.root)
    try:
        forked = _describe(kernels.WarmKernel(workspace.root, host))
        launched = _describe(kernels.WarmKernel(workspace.root))
    finally:
        host.close()
    assert forked["parent_is_JPY_PARENT_PID"] and forked["own_session_and_group"]
    assert forked["tracework_loaded"] and not forked["nbformat_loaded"]
    assert forked == launched
    assert host.process.returncode is not None and _processes_in(workspace.root) == []


@pytest.mark.slow
def test_a_forked_kernel_dies_with_its_host(workspace):
    """A host killed outright (by the OOM killer, say) takes its kernels with it."""
    if not kernel_host.HOSTED:
        pytest.skip("kernel hosts need pidfd_open (Linux)")
    host = kernel_host.KernelHost(workspace.root)
    warm = kernels.WarmKernel(workspace.root, host)
    km = warm.take()
    assert km is not None
    pid = km.provisioner.pid
    assert Path(f"/proc/{pid}").exists()
    host.process.kill()
    host.process.wait()
    for _ in range(300):  # an event, not a deadline: a dead host's kernel goes at once
        state = Path(f"/proc/{pid}/stat")
        if not state.exists() or state.read_text().split(") ", 1)[1].startswith("Z"):
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the kernel outlived its host")
    with suppress(Exception):
        kernels.shutdown(km)


@pytest.mark.slow
def test_a_kept_exporter_gives_the_page_a_fresh_one_gives(reports, tw, workspace):
    """A batch worker keeps one nbconvert exporter; no export may leave anything in it
    that changes the next page."""
    _, reformat, edit = reports
    (workspace.notebooks / "broken.ipynb").unlink()
    inputs = []
    for commit in (reformat, edit):
        assert tw("rerender", "good", "--commit", commit).exit_code == 0
        folder = workspace.reports / "good" / commit[:12]
        records = read_records(folder / "records.json")
        inputs.append(
            [
                nbformat.read(folder / "report.ipynb", as_version=4),
                records,
                load(workspace.registers / "good.yaml"),
                read_manifest(folder / "manifest.json"),
                summary_html(records.checks, by_name=True),
                read_history(workspace.reports / "good" / "history.json"),
            ]
        )
    # the second page also carries a diagram: scripts, CSP and assets differ
    diagram = nbformat.v4.new_output(
        "display_data",
        data={"text/vnd.mermaid": "flowchart LR\n  a --> b\n", "text/plain": "diagram"},
        metadata={"tracework": {"diagram": "flow"}},
    )
    inputs[1][0] = copy.deepcopy(inputs[1][0])
    code_cells = [c for c in inputs[1][0].cells if c.cell_type == "code"]
    code_cells[-1].outputs.append(diagram)

    def fresh(args: list[object]) -> str:
        rendering._exporters.__dict__.clear()
        return rendering.export_html(*args)

    first, second = fresh(inputs[0]), fresh(inputs[1])
    assert first != second and "assets/mermaid.min.js" in second
    kept = rendering.html_exporter()
    assert rendering.export_html(*inputs[0]) == first  # after the page with a diagram
    assert rendering.export_html(*inputs[1]) == second
    assert rendering.export_html(*inputs[0]) == first
    assert rendering.html_exporter() is kept


@pytest.mark.slow
def test_rerender_runs_on_a_dask_cluster_that_shares_the_workspace(reports, tw, workspace):
    distributed = pytest.importorskip("distributed")
    _, reformat, _ = reports
    (workspace.notebooks / "broken.ipynb").unlink()
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        host="127.0.0.1",
    ) as cluster:
        result = tw(
            "rerender",
            "good",
            "--commit",
            reformat,
            "--executor",
            "dask",
            "--scheduler",
            cluster.scheduler_address,
            "--shared-workspace",
            "--json",
        )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)["reports"][0]
    assert out["status"] == "rendered" and out["format_only"] == ["Q-store-Store.put"]
    assert (workspace.reports / "good" / reformat[:12] / "report.html").is_file()
    assert tw("rerender", "good", "--latest", "--executor", "dask").exit_code == 2


def test_a_rubric_change_is_an_input_of_every_render_but_a_comment_is_not(workspace):
    from tracework.render.inputs import inputs_key

    commit = "a" * 40
    before = inputs_key(workspace, "good", commit)
    folder = workspace.registers / "rubrics"
    folder.mkdir()
    rubric = folder / "r.yaml"
    rubric.write_text("title: R\nmechanisms:\n  - {id: m, name: n, definition: d, evidence: e}\n")
    added = inputs_key(workspace, "good", commit)
    assert added != before
    rubric.write_text("# a comment\n" + rubric.read_text())
    assert inputs_key(workspace, "good", commit) == added
    rubric.write_text(rubric.read_text().replace("definition: d", "definition: other"))
    assert inputs_key(workspace, "good", commit) != added
    rubric.write_text("title: [broken\n")  # unreadable: still a key, never an exception
    assert inputs_key(workspace, "good", commit) not in (before, added)


@pytest.mark.slow
def test_a_batch_killed_outright_leaves_no_worker_host_or_kernel(reports, workspace):
    """SIGKILL to `rerender -j 2` runs no clean-up in it: its workers notice their parent
    is gone and stop their kernel hosts, whose kernels die with them."""
    _, reformat, _ = reports
    tracework = str(Path(sys.executable).parent / "tracework")
    proc = subprocess.Popen(
        [tracework, "rerender", "--all", "--commit", reformat, "-j", "2", "--force"],
        cwd=workspace.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):  # wait for the workers to be up, whatever the machine's speed
            if any("multiprocessing.spawn" in p for p in _processes_in(workspace.root)):
                break
            time.sleep(0.1)
        proc.kill()
        proc.wait()
        for _ in range(600):  # an event: workers check for their parent every second
            if not _processes_in(workspace.root):
                break
            time.sleep(0.1)
        assert _processes_in(workspace.root) == []
    finally:  # never leave them behind, even when failing
        for pid in pids_in(workspace.root):
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)


SLOW = (
    CELL
    + """
import pathlib, time

pathlib.Path(f"started-{register}").touch()
time.sleep(600)  # a Ctrl-C comes first
"""
)
PROGRESS = re.compile(r"\S+ @ [0-9a-f]{12}: [a-z]+")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("jobs", "moment"), [("2", "worker start"), ("2", "in a cell"), ("1", "in a cell")]
)
def test_ctrl_c_stops_a_batch_with_one_word(reports, workspace, jobs, moment):
    """Ctrl-C on a terminal signals the whole process group.  Workers and kernel hosts
    ignore it (from the moment they start); the batch stops them and says only
    "interrupted" (exit 130), leaving nothing running."""
    _, reformat, _ = reports
    for name in ("broken", "good"):
        path = workspace.notebooks / f"{name}.ipynb"
        nb = nbformat.read(path, as_version=4)
        nb.cells[4].source = SLOW
        nbformat.write(nb, path)
    tracework = str(Path(sys.executable).parent / "tracework")
    proc = subprocess.Popen(
        [tracework, "rerender", "--all", "--commit", reformat, "-j", jobs, "--force"],
        cwd=workspace.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's job has
        preexec_fn=sigint_default,  # Ctrl-C does what it does, whatever the shell ignores
    )
    try:
        for _ in range(3000):  # an event, whatever the machine's speed
            if moment == "in a cell":
                if list(workspace.root.glob("started-*")):
                    break
            elif any("host_main" in p for p in _processes_in(workspace.root)):
                break  # a worker is in its initializer: it has just started its kernel host
            time.sleep(0.1)
        else:
            pytest.fail(f"never reached {moment}")
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=300)  # the sleeping cells never end by themselves
        assert proc.returncode == 130, err
        lines = err.splitlines()
        assert lines[-1] == "interrupted", err
        assert all(PROGRESS.fullmatch(line) for line in lines[:-1]), err
        for _ in range(3000):  # workers are gone at once, their hosts and kernels with them
            if not _processes_in(workspace.root):
                break
            time.sleep(0.1)
        assert _processes_in(workspace.root) == []
    finally:  # never leave them behind, even when failing
        with suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in pids_in(workspace.root):
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)


# -- a batch ends when its last report is written ----------------------------------------------


@pytest.mark.slow
def test_a_kernel_discarded_mid_warm_up_stops_without_waiting_out_a_limit(workspace, monkeypatch):
    """The batch's last report leaves behind the kernel booted for a next report that never
    comes.  Stopping it while its warm-up waits on the kernel must not wait out any limit:
    a blocking wait there made most batches sit 30 s after their last report."""
    marker = workspace.root / "warming"
    # a warm-up that is certainly in flight when the kernel is discarded
    monkeypatch.setattr(kernels, "PRELOAD", f"open({str(marker)!r}, 'w').close()\n" + SLEEP)
    kernel_host.timeouts_reached.clear()
    for _ in range(3):
        marker.unlink(missing_ok=True)
        kernels.prestart(workspace.root)
        spare = kernels._spare
        assert spare is not None
        for _ in range(600):  # the warm-up has reached the kernel
            if marker.exists():
                break
            time.sleep(0.1)
        assert marker.exists(), "the warm-up never ran"
        kernels.release()
        assert not spare._thread.is_alive()  # stopped, not left to run out its wait
    assert kernel_host.timeouts_reached == []
    assert _processes_in(workspace.root) == []


SLEEP = "import time; time.sleep(600)"


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_repeated_batches_reach_none_of_their_timeouts(reports, workspace, jobs):
    """Every wait on the way out of a batch ends because what it waits for is done, never
    because its limit ran out: each such limit reached is logged (workers print it on
    stderr) and counted.  Repeated batches, since the stall came in most runs, not all."""
    _, reformat, edit = reports
    (workspace.notebooks / "broken.ipynb").unlink()
    for target in (reformat, edit, reformat):
        args = ["rerender", "--all", "--force", "-j", jobs, "--commit", target, "--json"]
        run = subprocess.run(
            [sys.executable, "-m", "tracework", *args],
            cwd=workspace.root,
            capture_output=True,
            text=True,
            check=False,
        )
        assert run.returncode == 0, run.stderr
        assert "waited out" not in run.stderr, run.stderr
        assert _processes_in(workspace.root) == []


# -- a fallback says why, and `tracework -v` shows it ----------------------------------------


def _no_kernel_host(cwd: Path) -> None:
    raise RuntimeError("no kernel host can start here")


def test_a_warm_kernel_that_cannot_start_logs_its_reason_at_debug(workspace, monkeypatch, caplog):
    monkeypatch.setattr(kernels, "_kernel_host", _no_kernel_host)
    caplog.set_level("DEBUG", logger="tracework")
    kernels.release()
    assert kernels.next_kernel(workspace.root) is None  # papermill starts its own
    [record] = [r for r in caplog.records if r.name == "tracework.kernels.warm"]
    assert record.levelname == "DEBUG"
    assert "no warm kernel could be started" in record.getMessage()
    assert "no kernel host can start here" in caplog.text  # the reason, with its traceback


@pytest.mark.slow
def test_verbose_shows_a_swallowed_reason_and_only_for_its_own_command(
    reports, tw, workspace, monkeypatch
):
    monkeypatch.setattr(kernels, "_kernel_host", _no_kernel_host)
    quiet = tw("rerender", "good", "--latest", "-j", "1", "--force")
    assert quiet.exit_code == 0, quiet.output
    assert "no kernel host can start here" not in quiet.stderr
    loud = tw("-v", "rerender", "good", "--latest", "-j", "1", "--force")
    assert loud.exit_code == 0, loud.output
    assert "DEBUG tracework.kernels.warm: no warm kernel could be started" in loud.stderr
    assert "RuntimeError: no kernel host can start here" in loud.stderr
    after = tw("rerender", "good", "--latest", "-j", "1", "--force")
    assert "no kernel host can start here" not in after.stderr  # -v was for one command
