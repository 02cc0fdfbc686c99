"""`rerender --executor dask` on workers that cannot see the workspace: each task carries
what its render reads, and the calling machine writes what comes back, byte for byte what
a local render writes.

The cluster is real: a ``dask scheduler`` and ``dask worker`` processes, the workers
started in a mount namespace of their own (``unshare --mount``, else bubblewrap) in which
a fresh tmpfs hides the folder holding the workspaces.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

import tracework
from capture_setup import PLAIN_HARNESS, STORE, Setup
from conftest import init_repo, invoke, missing, pids_in, pin_subject, running_in
from tracework.batch import shipping
from tracework.errors import TraceworkError
from tracework.git.env import run_git
from tracework.git.subjects import open_mirror
from tracework.version import __version__
from tracework.workspace import Workspace

BIN = Path(sys.executable).parent

QUOTE = """q = src.quote("toy/store.py", symbol="Store.put")
wb.component("RT-CMP-store", label="Store", identity="`Store`", evidence=[q])"""
DIAGRAM = """wb.route("RT-RTE-put", label="Putting", progression="text → `put`",
         passes_through=["RT-CMP-store"], implementation="wired", operation="uninspected")
wb.diagram("routes", caption="Generated", routes=["RT-RTE-put"]);"""
CAPTURE = """cap = wb.capture("cap")
wb.route("RT-RTE-put", label="Putting", progression="text → `put` → items",
         passes_through=["RT-CMP-store"], implementation="wired", operation="observed",
         evidence=[q, cap.case("T-01"), cap.transcript("T-01", "items")])
cap"""
BOOM = "raise RuntimeError('boom at ' + str(1 / 1))"


def add_cells(ws: Workspace, name: str, *cells: str) -> None:
    path = ws.notebooks / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    for n, cell in enumerate(cells):
        nb.cells.insert(4 + n, nbformat.v4.new_code_cell(cell))
    nbformat.write(nb, path)


def snapshot(root: Path) -> dict[str, str]:
    """Every file, folder and link under ``root``, each file by its SHA-256 (a failed
    render's kept notebook without the ids papermill gives its error cells: they are
    random, in a local render as in a shipped one)."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            found[rel] = "folder"
        else:
            data = path.read_bytes()
            if path.parent.name.startswith("failed-") and path.name == "report.ipynb":
                data = without_error_cell_ids(data)
            found[rel] = hashlib.sha256(data).hexdigest()
    return found


def without_error_cell_ids(raw: bytes) -> bytes:
    nb = json.loads(raw)
    for cell in nb["cells"]:
        if "papermill-error-cell-tag" in cell.get("metadata", {}).get("tags", []):
            cell["id"] = "papermill-error-cell"
    return json.dumps(nb, sort_keys=True).encode()


# -- a cluster whose workers cannot see the workspace ---------------------------------------


def hidden_start(hide: Path) -> list[str]:
    """The command prefix that runs a program where ``hide`` is an empty tmpfs (and the
    program's folder is ``hide/scratch``), or skips (in CI: fails) naming why."""
    tries = []
    if shutil.which("unshare"):
        tries.append(
            [
                "unshare",
                "--mount",
                "--map-root-user",
                "sh",
                "-c",
                'mount -t tmpfs tracework-hidden "$0" && mkdir "$0/scratch" && cd "$0/scratch" '
                '&& exec "$@"',
                str(hide),
            ]
        )
    if shutil.which("bwrap"):
        tries.append(
            [
                "bwrap",
                "--dev-bind",
                "/",
                "/",
                "--tmpfs",
                str(hide),
                "--dir",
                str(hide / "scratch"),
                "--chdir",
                str(hide / "scratch"),
                "--",
            ]
        )
    reasons = []
    for prefix in tries:
        probe = subprocess.run(
            [*prefix, "sh", "-c", f'test ! -e "{hide}/probe" && test -d "{hide}/scratch"'],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0:
            return prefix
        reasons.append(f"{prefix[0]}: {probe.stderr.strip()[-200:] or 'failed'}")
    missing(
        "a Dask worker without the workspace needs a mount namespace (unshare --mount "
        "--map-root-user, or bubblewrap), and none works here: " + "; ".join(reasons or ["none"])
    )


@dataclass
class Cluster:
    address: str
    hidden: Path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A Dask scheduler and two single-threaded workers; the workers run where the
    module's folder (every workspace of these tests) is an empty tmpfs."""
    pytest.importorskip("distributed")
    hide = tmp_path_factory.mktemp("hidden")
    (hide / "probe").write_text("the workers must not see this\n")
    prefix = hidden_start(hide)
    info = tmp_path_factory.mktemp("scheduler") / "scheduler.json"
    processes = [
        subprocess.Popen(
            [
                str(BIN / "dask"),
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(info),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        for _ in range(600):
            if info.is_file() and info.stat().st_size:
                break
            time.sleep(0.05)
        address = json.loads(info.read_text())["address"]
        for _ in range(2):
            processes.append(
                subprocess.Popen(
                    [
                        *prefix,
                        str(BIN / "dask"),
                        "worker",
                        address,
                        "--nthreads",
                        "1",
                        "--no-nanny",
                        "--no-dashboard",
                        "--local-directory",
                        str(hide / "scratch"),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        from distributed import Client

        with Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=120)
            seen = client.run(os.path.exists, str(hide / "probe"))
        assert len(seen) == 2 and not any(seen.values()), seen
        yield Cluster(address, hide)
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in reversed(processes):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# -- two copies of one workspace: one rendered here, one on the cluster ---------------------


def build(root: Path) -> tuple[Workspace, str]:
    """Reports ``cited`` (a capture, a quote whose content changes later), ``drawn`` (a
    diagram, a document), ``plain`` (a quote) and ``broken`` (a cell error); a rubric;
    every report rendered once at the pin; three more commits."""
    toy = init_repo(root / "toy")
    toy.write("toy/__init__.py", "").write("toy/store.py", STORE).write("README.md", "A toy.\n")
    pin = toy.commit("first")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        assert invoke("init", "ws").exit_code == 0
        patch.chdir(root / "ws")
        reports = ["cited", "drawn", "plain", "broken"]
        pin_subject(invoke, toy, pin, track="main", reports=reports)
        ws = Workspace.find()
        for name in reports:
            added = invoke("register", "add-file", name, "SRC-1", "toy/store.py")
            assert added.exit_code == 0, added.output
            tracework.open(name).source("SRC-1").quote("toy/store.py", symbol="Store.put")
        setup = Setup(ws, toy, invoke)
        setup.write("cap", PLAIN_HARNESS, register="cited")
        made = setup.capture("cap")
        assert made.exit_code == 0, made.output
        assert invoke("register", "add-capture", "cited", "cap").exit_code == 0
        (ws.root / "docs").mkdir()
        (ws.root / "docs" / "spec.md").write_text("# The store's spec\n")
        added = invoke("register", "add-document", "drawn", "SRC-2", "docs/spec.md")
        assert added.exit_code == 0, added.output
        rubrics = ws.registers / "rubrics"
        rubrics.mkdir()
        (rubrics / "r.yaml").write_text(
            "title: R\nmechanisms:\n  - {id: m, name: n, definition: d, evidence: e}\n"
        )
        add_cells(ws, "cited", QUOTE, CAPTURE)
        add_cells(ws, "drawn", QUOTE, DIAGRAM)
        add_cells(ws, "plain", QUOTE)
        add_cells(ws, "broken", QUOTE, BOOM)
        first = invoke("rerender", "cited", "drawn", "plain", "--commit", pin, "-j", "1")
        assert first.exit_code == 0, first.output
        # a reformat of the quoted method, noise, then a real edit
        reformatted = STORE.replace("def put(self, text):", "def put(\n        self, text\n    ):")
        toy.write("toy/store.py", reformatted)
        toy.commit("reformat")
        toy.write("README.md", "A toy store.\n")
        toy.commit("noise")
        toy.write("toy/store.py", reformatted.replace("= text", "= text.strip()"))
        target = toy.commit("edit")
        assert invoke("fetch", "toy").exit_code == 0
    return ws, target


def dask_batch(ws: Workspace, address: str, *args: str) -> dict[str, object]:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ws.root)
        result = invoke("rerender", *args, "--executor", "dask", "--scheduler", address, "--json")
    assert "Traceback" not in result.output, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


# The tests of a cluster are few and long: each renders a batch, here and on the cluster.


@pytest.mark.slow
def test_a_shipped_batch_writes_every_byte_a_local_batch_writes(cluster):
    local, target = build(cluster.hidden / "a")
    shutil.copytree(local.root, cluster.hidden / "b" / "ws", symlinks=True)
    shipped = Workspace(cluster.hidden / "b" / "ws")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(local.root)
        here = invoke("rerender", "--all", "--commit", target, "-j", "1", "--json")
    assert here.exit_code == 1, here.output  # `broken` failed, as it does
    there = dask_batch(shipped, cluster.address, "--all", "--commit", target)
    mine, theirs = snapshot(local.reports), snapshot(shipped.reports)
    assert mine == theirs
    assert json.loads(here.output) == there
    # what the comparison covers: drift against the pin with its history, a capture, a
    # diagram with its assets, a document, a failed render's kept notebook, the locks
    c12 = target[:12]
    assert f"cited/{c12}/report.html" in mine and f"drawn/{c12}/assets/mermaid.min.js" in mine
    assert f"broken/failed-{c12}/report.ipynb" in mine and f"plain/.{c12}.render.lock" in mine
    history = json.loads((shipped.reports / "plain" / "history.json").read_text())
    assert [e["commits_since_pin"] for e in history] == [0, 3]
    records = json.loads((shipped.reports / "cited" / c12 / "records.json").read_text())
    assert "SRC-2" in records["captures"] and records["drift"]["first_changed"]

    def files_checked(name: str) -> dict[str, int]:
        records = json.loads((shipped.reports / name / c12 / "records.json").read_text())
        return records["checks"]["checks"]["register"]["counts"]["file"]  # type: ignore[no-any-return]

    assert files_checked("plain") == {"changed": 1}  # toy/store.py
    assert files_checked("drawn") == {"changed": 1, "verified": 1}  # and docs/spec.md
    # a cell error on a worker is the local render's one-line error
    errors = {r["name"]: r["error"] for r in there["reports"]}  # type: ignore[index]
    assert [name for name, error in errors.items() if error] == ["broken"]
    assert "boom at 1.0" in errors["broken"] and "\n" not in errors["broken"]
    # an unchanged report is skipped before anything is sent; forced, the same bytes
    again = dask_batch(shipped, cluster.address, "plain", "--commit", target)
    assert again["reports"][0]["status"] == "skipped"  # type: ignore[index]
    forced = dask_batch(shipped, cluster.address, "plain", "--commit", target, "--force")
    assert forced["reports"][0]["status"] == "rendered"  # type: ignore[index]
    assert snapshot(shipped.reports) == theirs

    # what a worker returns is checked before a byte is written
    folder = shipped.reports / "plain" / c12
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")}
    task = shipping.Packer(shipped, {"plain": target}, ["plain"], None).pack("plain")
    assert isinstance(task, shipping.Task)
    parcel, expected = task.parcel, task.expected
    good = shipping.Returned("plain", target, __version__, files)
    other = shipping.Expected("0" * 64, expected.register_sha256, expected.inputs_sha256)
    assert "read other inputs than were sent" in str(shipping.deliver(shipped, parcel, good, other))
    wrong = shipping.Returned("plain", target, __version__, {**files, "records.json": b"{}"})
    assert "not tracework's" in str(shipping.deliver(shipped, parcel, wrong, expected))
    assert snapshot(shipped.reports) == theirs  # nothing written, no staging folder left
    assert shipping.deliver(shipped, parcel, good, expected) is None
    assert snapshot(shipped.reports) == theirs  # the same render again: the same bytes


@pytest.mark.slow
def test_a_worker_killed_outright_leaves_no_kernel_running(cluster, pinned, workspace, tmp_path):
    """A worker of one thread keeps a kernel booted for its next report, forked from a
    kernel host: both die with the worker, even by SIGKILL."""
    from distributed import Client

    repo = pinned({"toy/store.py": STORE}, reports=["demo"])
    add_cells(workspace, "demo", QUOTE)
    tracework.open("demo").source("SRC-1").quote("toy/store.py", symbol="Store.put")
    local = tmp_path / "worker"
    local.mkdir()
    command = [str(BIN / "dask"), "worker", cluster.address, "--nthreads", "1", "--no-nanny"]
    command += ["--no-dashboard", "--local-directory", str(local)]
    worker = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    folder = None
    try:
        with Client(cluster.address, timeout=30) as client:
            before = set(client.scheduler_info()["workers"])
            client.wait_for_workers(len(before) + 1, timeout=120)
            while not (mine := set(client.scheduler_info()["workers"]) - before):
                time.sleep(0.1)
            there = list(mine)
            packer = shipping.Packer(workspace, {"demo": repo.commits[0]}, ["demo"], None)
            task = packer.pack("demo")
            assert isinstance(task, shipping.Task)
            parts = [client.scatter(packer.parts[k], workers=there) for k in task.needs]
            future = client.submit(
                shipping.render_shipped, task.parcel, *parts, workers=there, pure=False
            )
            returned = future.result(timeout=300)
            assert returned.error is None and "report.html" in returned.files

            def local_directory(dask_worker: Any) -> str:
                return str(dask_worker.local_directory)

            scratch = Path(client.run(local_directory, workers=there)[there[0]])
        folder = scratch / "tracework-scratch" / "ws"
        assert running_in(folder, "")  # the kernel host, and a kernel booted ahead
        worker.kill()
        worker.wait()
        for _ in range(200):
            if not running_in(folder, ""):
                break
            time.sleep(0.05)
        assert running_in(folder, "") == {}
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        for pid in pids_in(folder) if folder is not None else ():
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)


# -- fast: what a task carries, how a mirror travels, what is refused -----------------------


def test_a_task_carries_the_report_s_inputs_and_nothing_else(pinned, tw, workspace):
    repo = pinned({"pkg/a.py": "A = 1\n"}, track="main", reports=["one", "two"])
    (workspace.root / "uv.lock").write_text("lock\n")
    (workspace.captures).mkdir(exist_ok=True)
    (workspace.captures / "c.toml").write_text("subject = 'toy'\n")
    (workspace.captures / "c.py").write_text("print('harness')\n")
    (workspace.reports / "one").mkdir(parents=True)
    (workspace.reports / "one" / "history.json").write_text("[]\n")
    (workspace.reports / "two").mkdir(parents=True)
    (workspace.reports / "two" / "history.json").write_text("[]\n")
    (workspace.root / "spec.md").write_text("the spec\n")
    assert tw("register", "add-document", "one", "SRC-2", "spec.md").exit_code == 0
    commit = repo.commits[0]
    packer = shipping.Packer(workspace, {"one": commit}, ["one"], "2026-02-01")
    task = packer.pack("one")
    assert isinstance(task, shipping.Task)
    parcel = task.parcel
    assert (parcel.name, parcel.commit, parcel.analysis_date) == ("one", commit, "2026-02-01")
    parts = [packer.parts[key] for key in task.needs]
    files = {rel for part in parts if isinstance(part, shipping.Files) for rel, _ in part.files}
    assert files == {
        "tracework.toml",
        "uv.lock",
        "sources/toy.toml",
        "captures/c.toml",
        "notebooks/one.ipynb",
        "registers/one.yaml",
        "reports/one/history.json",
        "spec.md",
    }
    mirrors = [p for p in parts if isinstance(p, shipping.Mirror)]
    assert [m.subject for m in mirrors] == ["toy"] and mirrors[0].head == "refs/heads/main"
    raw = (workspace.notebooks / "one.ipynb").read_bytes()
    assert task.expected.notebook_sha256 == hashlib.sha256(raw).hexdigest()
    # a second report on the subject shares the common files and the mirror
    again = shipping.Packer(workspace, {"one": commit, "two": commit}, ["one", "two"], None)
    one, two = again.pack("one"), again.pack("two")
    assert isinstance(one, shipping.Task) and isinstance(two, shipping.Task)
    assert one.needs[:-1] == two.needs[:-1] and one.needs[-1] != two.needs[-1]


def test_a_mirror_travels_whole_and_is_checked_on_arrival(pinned, tw, workspace, tmp_path):
    repo = pinned({"a.txt": "one\n"}, track="main")
    repo.git("checkout", "-q", "-b", "side")
    repo.write("b.txt", "side\n")
    gone = repo.commit("side")  # fetched, then its branch deleted: no ref reaches it
    repo.git("checkout", "-q", "main")
    repo.write("a.txt", "two\n")
    repo.commit("two")
    assert tw("fetch", "toy").exit_code == 0
    repo.git("branch", "-q", "-D", "side")
    assert tw("fetch", "toy").exit_code == 0
    mirror = open_mirror(workspace, "toy")
    sent = shipping.bundle(workspace, "toy", [gone])
    got = shipping.installed(tmp_path / "worker", sent)
    assert shipping.installed(tmp_path / "worker", sent) == got  # unpacked once

    def listing(git_dir: Path, *args: str) -> str:
        return run_git(git_dir, args).stdout.decode()

    assert listing(got, "for-each-ref") == listing(mirror.git_dir, "for-each-ref")
    assert listing(got, "symbolic-ref", "HEAD") == "refs/heads/main\n"
    assert listing(got, "cat-file", "-t", gone) == "commit\n"
    objects = ("rev-list", "--objects", "--all")
    assert sorted(listing(got, *objects).split()) == sorted(
        listing(mirror.git_dir, *objects).split()
    )
    # a damaged pack is refused, and nothing is left for a next task to use
    damaged = sent.bundle[:-40] + bytes(40)
    bad = shipping.Mirror("toy", damaged, sent.head, "d" * 64)
    with pytest.raises(TraceworkError, match="index-pack"):
        shipping.installed(tmp_path / "worker", bad)
    assert not (tmp_path / "worker" / "tracework-mirrors" / f"{'d' * 64}.git").exists()
    thin = shipping.Mirror("toy", b"# v2 git bundle\n-" + b"a" * 40 + b"\n\nPACK", None, "e" * 64)
    with pytest.raises(TraceworkError, match="needs objects it lacks"):
        shipping.installed(tmp_path / "worker", thin)


def test_a_returned_render_with_other_files_or_another_version_is_refused(tmp_path):
    ws = Workspace.init(tmp_path / "ws")
    parcel = shipping.Parcel("r", "c" * 40, None, str(ws.root))
    expected = shipping.Expected("a" * 64, "b" * 64, "c" * 64)
    required = {name: b"x" for name in shipping.REQUIRED}

    def refused(returned: shipping.Returned) -> str:
        error = shipping.deliver(ws, parcel, returned, expected)
        assert error is not None
        return error

    older = shipping.Returned("r", "c" * 40, "0.0.1", required)
    assert refused(older) == (
        f"the Dask worker runs tracework 0.0.1, this machine {__version__}: install the same "
        "version on every worker"
    )
    for files, said in (
        ({**required, "../escape": b""}, "a file at '../escape'"),
        ({**required, "/etc/passwd": b""}, "a file at '/etc/passwd'"),
        ({**required, "notes.txt": b""}, "notes.txt, which no render writes"),
        ({k: v for k, v in required.items() if k != "report.html"}, "no report.html"),
    ):
        assert said in refused(shipping.Returned("r", "c" * 40, __version__, files))
    forged = shipping.Returned("r", "c" * 40, __version__, required, {"assets/report.js": "0"})
    assert "assets/report.js other than this machine's" in refused(forged)
    other = shipping.Returned("s", "c" * 40, __version__, required)
    assert "another report's result" in refused(other)
    assert not any(p for p in (ws.reports / "r").rglob("*") if not p.name.endswith(".lock"))


def test_shared_workspace_is_a_dask_option(tw, workspace):
    result = tw("rerender", "--all", "--latest", "--shared-workspace")
    assert result.exit_code == 2 and "--shared-workspace is for --executor dask" in result.output


def test_workers_of_another_version_are_refused_before_anything_is_sent():
    from tracework.batch.rerender import _same_version

    class Cluster:
        def __init__(self, answer: object) -> None:
            self.answer = answer

        def run(self, function: Any) -> object:
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    _same_version(Cluster({"tcp://w1:1": __version__}), shipping.worker_version)
    with pytest.raises(TraceworkError) as older:
        _same_version(Cluster({"tcp://w1:1": __version__, "tcp://w2:1": "0.0.1"}), str)
    assert older.value.message == (
        f"the Dask worker at tcp://w2:1 runs tracework 0.0.1, this machine {__version__}"
    )
    with pytest.raises(TraceworkError, match="the Dask workers cannot run tracework"):
        _same_version(Cluster(ModuleNotFoundError("No module named 'tracework'")), str)


@pytest.mark.slow
def test_the_dask_benchmark_runs_at_a_tiny_size():
    """`bench_rerender.py --dask` makes the figures page's Dask table: it must not rot."""
    pytest.importorskip("distributed")
    script = Path(__file__).parents[1] / "benchmarks" / "bench_rerender.py"
    done = subprocess.run(
        [sys.executable, str(script), "--dask", "--reports", "2", "--repeat", "1", "--smoke"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "carrying the inputs / shared workspace:" in done.stdout
    targets = done.stdout.rsplit("targets: ", 1)[1]
    assert "PASS" in targets or "MISS" in targets
