"""The scripts behind the figures page (``docs/explanation/figures.md``), each run at a tiny
size so that none of them can rot: it runs to the end and prints what the page cites — its
rows, its ratios beside a baseline of the same run, each target's PASS or MISS and the
machine's load average.  Timings are printed, never asserted: they are the machine's.

``bench_capture.py`` has a test of its own (``test_bench_capture.py``), as has
``bench_rerender.py --dask`` (``test_dask_shipping.py``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import invoke
from tracework.workspace import Workspace

pytestmark = pytest.mark.slow  # renders, kernels, a preview, larger registers

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples"))

from build_subject import copy_demo  # noqa: E402

N = r"[0-9][0-9.,]*"  # a figure, never its value
#: The load line the scripts print at the end.
LOAD = rf"load average {N} at the start, {N} at the end \(1 min\)"


def bench(script: str, *args: str, cwd: Path, tmp: Path) -> str:
    """Run ``benchmarks/SCRIPT`` in ``cwd``, its temporary folders under ``tmp``; its
    stdout, once it exited 0 without a traceback."""
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), *args],
        cwd=cwd,
        env=os.environ | {"TMPDIR": str(tmp)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def prints(out: str, *patterns: str) -> None:
    """Each pattern matches a whole line of ``out``."""
    for pattern in patterns:
        assert re.search(rf"^ *{pattern} *$", out, re.MULTILINE), (pattern, out)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """Where a script's temporary folders go."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


@pytest.fixture
def larkspur(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace holding the demo report and its subject, built and fetched here."""
    root = tmp_path / "demo"
    Workspace.init(root)
    copy_demo(root)
    monkeypatch.chdir(root)
    result = invoke("fetch", "larkspur")
    assert result.exit_code == 0, result.output
    return root


def test_bench_register(tmp_path: Path, scratch: Path) -> None:
    sizes = ("--sizes", "200", "--repeat", "1", "--cell", "10")
    ratio = rf"{N} s \({N}×\)"  # the baseline's seconds, and how many times ours
    out = bench(
        "bench_register.py",
        *sizes,
        *("--layout-size", "200", "--cli-size", "200"),
        cwd=tmp_path,
        tmp=scratch,
    )
    prints(
        out,
        re.escape(
            "| quotes | add | replace | cell of 10 | full edit: add / replace | 10 one by one |"
        ),
        rf"\| 200 \| {N} s \| {N} s \| {N} s \| {ratio} / {ratio} \| {ratio} \|",
        r"(PASS|MISS): add and replace in a 200-quote register ≤ 0\.2 s"
        r" \(the target is at 10,000\)",
        r"(PASS|MISS): a cell of 10 quotes writes the register once \([0-9]+ at 200\)",
        rf"\| usual layout \(baseline\) \| {N} s \| {N} s \|",
        rf"\| other layout \(× the usual\) \| {N} s \({N}×\) \| {N} s \({N}×\) \|",
        rf"\| other layout, before: the full edit, every time \(× the usual\) "
        rf"\| {N} s \({N}×\) \| {N} s \({N}×\) \|",
        rf"\| `tracework check --json` \| {N} s \| {N} s \|",
        rf"\| `tracework quote` \| {N} s \| {N} s \|",
        rf"(PASS|MISS): quote / check = {N}× \(target ≤ 3×\), load average {N}",
        LOAD,
    )


def test_bench_render(larkspur: Path, scratch: Path) -> None:
    args = ("--workspace", str(larkspur), "--runs", "1", "--edits", "1")
    out = bench("bench_render.py", *args, cwd=larkspur, tmp=scratch)
    prints(
        out,
        rf"load average before: {N} {N} {N}",
        rf"papermill \+ nbconvert CLIs +{N} +{N}",
        rf"tracework render \(cold\) +{N} +{N}",
        rf"tracework preview, a one-cell change +{N} +{N}",
        rf"render / baseline \(median\): {N}x  target <= 1\.3x: (PASS|MISS)",
        rf"render, cold \(median\): {N} s  target <= 1\.5 s: (PASS|MISS)",
        rf"preview re-render \(median\): {N} s \({N}x the baseline\)  target <= 1 s: (PASS|MISS)",
        rf"load average after: {N} {N} {N}",
    )
    assert (larkspur / "reports" / "larkspur").is_dir()  # rendered in the copy


def test_bench_rerender(tmp_path: Path, scratch: Path) -> None:
    args = ("--reports", "2", "--repeat", "1", "--smoke", "--commits", "20", "--quotes", "5")
    out = bench("bench_rerender.py", *args, cwd=tmp_path, tmp=scratch)
    per_report = rf"{N} s/report +CPU +{N} s/report"
    spread = rf"{N} / +{N} / +{N} s"
    prints(
        out,
        rf"first-change search: 5 quotes over 20 commits in {N} s; [0-9]+ of 5 culprits exact",
        rf"naive loop \(papermill \+ nbconvert CLIs\): +{N} s \(one run\) +{per_report}",
        rf"tracework rerender -j 1: +{spread} +{per_report} +\({N}x the loop's speed\)",
        rf"tracework rerender -j 2: +{spread} +{per_report} +\({N}x; -j 2 / -j 1 = {N}\)",
        rf"no-op re-run of all 2: +{spread}",
        LOAD,
    )
    targets = out.rsplit("targets: ", 1)[1].splitlines()[0].split(" · ")
    assert [re.sub(r": (PASS|MISS) \(.*", "", t) for t in targets] == [
        "bisection under 5 s",
        "per report ≤ 0.5 s",
        "≥ 8x the naive loop",
        "-j 2 / -j 1 ≤ 0.7",
        "no-op under 2 s",
    ], targets


def test_bench_publish(tmp_path: Path, scratch: Path) -> None:
    args = ("--reports", "2", "--repeat", "1", "--keep", str(tmp_path / "publish"))
    out = bench("bench_publish.py", *args, cwd=tmp_path, tmp=scratch)
    prints(
        out,
        r"baseline +publish +ratio",
        rf"demo \(1 report, 2 renders\) +{N}s +{N}s +{N}×",
        rf"3 reports, {N} renders, {N} pages +{N}s +{N}s +{N}×",
        rf"site files: {N}",
        rf"(PASS|MISS): publish 3 reports in {N} s \(target under 5 s for 200\)",
        LOAD,
    )


def test_bench_outputs(tmp_path: Path, scratch: Path) -> None:
    out = bench("bench_outputs.py", "--mb", "2", cwd=tmp_path, tmp=scratch)
    sizes = rf"{N} +{N} MiB +{N} MB +{N} MB +{N} MB"
    prints(
        out,
        r"seconds +peak RSS +page +notebook +records",
        rf"one print +{sizes}",
        rf"22,222 lines +{sizes}",
        rf"a 2 MB claim +{sizes}",
        LOAD,
    )


def test_bench_capture_bounds(tmp_path: Path, scratch: Path) -> None:
    args = ("--cases", "40", "--rules", "20", "--strings", "20", "--repeat", "1")
    out = bench("bench_capture_bounds.py", *args, cwd=tmp_path, tmp=scratch)
    prints(
        out,
        rf"load average {N} {N} {N}, [0-9]+ CPUs",
        rf"json\.loads of every line \(the floor\) +{N} s",
        rf"_files x2 \+ _require_identical, 40 cases +{N} s",
        rf"the same, 10 cases +{N} s",
        rf"ratio to the floor: {N}x \(two runs: {N}x a run\)",
        rf"growth 10 -> 40 cases: {N}x \(linear 4x, quadratic 16x\)",
        rf"baseline: each rule a pass over each string +{N} s",
        rf"one pass \(compile included\) +{N} s",
        rf"baseline / one pass: {N}x; outputs equal: True",
        rf"load average {N} {N} {N} at the end",
    )
    before = re.search(rf"^ *parse before / now: {N}x$", out, re.MULTILINE)
    assert before or "is not in this history: skipped" in out, out  # a shallow clone lacks it


def test_bench_diagrams(larkspur: Path, scratch: Path) -> None:
    args = ("--workspace", str(larkspur), "--no-browser")  # the browser tests run on their own
    out = bench("bench_diagrams.py", *args, cwd=larkspur, tmp=scratch)
    prints(
        out,
        rf"diagram checks at the pin: [1-9][0-9]* diagrams in {N} ms",
        rf"diagram checks at the newest commit: [1-9][0-9]* diagrams in {N} ms",
        LOAD,
    )
