"""Benchmark ``tracework publish`` for the demo and for many synthetic reports.

What it does, in one run:

1. copies the demo's inputs (notebook, register, rubric, subject definition) into a
   temporary workspace, builds the Larkspur subject there and renders the report at
   its pin and at the newest commit (real renders);
2. times ``tracework publish`` of that workspace (the demo);
3. adds ``--reports`` synthetic reports (default 200): copies of the rendered report
   folders under other names, each with its own register and other rubric marks
   (seeded), so the index, the matrix and the search index have that many rows;
4. times, interleaved, ``--repeat`` times: the baseline, a separate ``python -c``
   process that links every file of ``reports/`` into a new folder (the least work a
   site of those renders needs: publish links render files rather than copying them),
   and ``tracework publish`` as a separate process;
5. prints a table with the median seconds and the ratio to the baseline, PASS/MISS
   for the issue's target: under 5 s for 200 reports on 2 cores, charts included, and
   the machine's load average at the start and the end of the timed runs.

A benchmark never fails on time: it exits 0 whatever the figures, and 1 only when a
command failed.

    .venv/bin/python benchmarks/bench_publish.py [--reports 200] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples"))

from build_subject import copy_demo  # noqa: E402

TARGET_SECONDS, TARGET_REPORTS = 5.0, 200
SEED = 20261130

BASELINE = """\
import os, sys
from pathlib import Path
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
for path in sorted(src.rglob("*")):
    if "site" in path.relative_to(src).parts[:1]:
        continue
    target = dst / path.relative_to(src)
    if path.is_dir():
        target.mkdir(parents=True, exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.link(path, target)
"""


def tracework(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run(
        [sys.executable, "-m", "tracework", *args], cwd=root, capture_output=True, check=False
    )
    if proc.returncode != 0:
        sys.exit(f"tracework {' '.join(args)} failed:\n{proc.stderr.decode()}")
    return proc


def demo_workspace(root: Path) -> list[str]:
    tracework(REPO, "init", str(root))
    commits = copy_demo(root)
    tracework(root, "fetch", "larkspur")
    tracework(root, "render", "larkspur")
    tracework(root, "render", "larkspur", "--commit", commits[-1])
    return commits


def add_synthetic(root: Path, count: int) -> None:
    """``count`` more reports: the rendered folders under new names, other marks."""
    rng = random.Random(SEED)
    source = root / "reports" / "larkspur"
    for i in range(count):
        name = f"system-{i:03d}"
        shutil.copytree(source, root / "reports" / name, copy_function=os.link)
        shutil.copy(root / "registers" / "larkspur.yaml", root / "registers" / f"{name}.yaml")
        for records_path in (root / "reports" / name).glob("*/records.json"):
            records = json.loads(records_path.read_text())
            records["register"] = name
            for rubric in records.get("marks", {}).values():
                for mark in rubric["marks"].values():
                    mark["present"] = rng.random() < 0.3
                rubric["carries"] = sum(m["present"] for m in rubric["marks"].values())
            records_path.unlink()  # a link to larkspur's file: replace, never edit in place
            records_path.write_text(json.dumps(records, indent=2, sort_keys=True))


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{proc.stderr.decode()}")
    return seconds


def measure(root: Path, repeat: int) -> tuple[float, float]:
    """Median seconds of the baseline and of publish, interleaved."""
    base, publish = [], []
    for _ in range(repeat):
        dst = Path(tempfile.mkdtemp(dir=root))
        base.append(
            timed([sys.executable, "-c", BASELINE, str(root / "reports"), str(dst / "t")], root)
        )
        shutil.rmtree(dst)
        publish.append(timed([sys.executable, "-m", "tracework", "publish"], root))
    return statistics.median(base), statistics.median(publish)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=TARGET_REPORTS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="build here and keep it")
    args = parser.parse_args()
    top = args.keep or Path(tempfile.mkdtemp(prefix="bench-publish-"))
    root = top / "ws"
    try:
        print(f"building the demo workspace and rendering it twice ({os.cpu_count()} cores) ...")
        demo_workspace(root)
        load_start = os.getloadavg()
        demo_base, demo_publish = measure(root, args.repeat)
        add_synthetic(root, args.reports)
        many_base, many_publish = measure(root, args.repeat)
        load_end = os.getloadavg()
        site = json.loads(tracework(root, "publish", "--json").stdout)
        files = sum(1 for p in (root / "reports" / "site").rglob("*") if p.is_file())
    finally:
        if args.keep is None:
            shutil.rmtree(top, ignore_errors=True)
    print(f"\nmedian of {args.repeat}; each a separate process (interpreter start-up included)")
    print(f"{'':<44}{'baseline':>10}{'publish':>10}{'ratio':>8}")
    rows = (
        ("demo (1 report, 2 renders)", demo_base, demo_publish),
        (
            f"{args.reports + 1} reports, {site['renders']} renders, {site['pages']} pages",
            many_base,
            many_publish,
        ),
    )
    for label, base, pub in rows:
        print(f"{label:<44}{base:>9.2f}s{pub:>9.2f}s{pub / base:>7.1f}×")
    print(f"site files: {files}")
    verdict = "PASS" if many_publish < TARGET_SECONDS else "MISS"
    print(
        f"{verdict}: publish {args.reports + 1} reports in {many_publish:.2f} s "
        f"(target under {TARGET_SECONDS:.0f} s for {TARGET_REPORTS})"
    )
    print(f"load average {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end (1 min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
