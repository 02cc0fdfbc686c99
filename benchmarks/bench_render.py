"""Benchmark: `tracework render` against bare papermill + `jupyter nbconvert --to html`.

Both sides execute the demo notebook (`notebooks/larkspur.ipynb`) at the demo's pin
with the same kernel and parameters; the baseline is the two stock CLIs run one after
the other, as a shell script would.  Prints the best and median of N runs and the
overhead ratio (target: tracework ≤ 1.3× the baseline).  Run `make demo` first.

    .venv/bin/python benchmarks/bench_render.py [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def pin() -> str:
    import tracework.register.store as reg

    return reg.load(ROOT / "registers" / "larkspur.yaml").git_source("SRC-1").commit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not (ROOT / "sources" / ".mirrors" / "larkspur.git").exists():
        sys.exit("run `make demo` first: the benchmark renders the demo report")
    commit = pin()
    from tracework.kernels.spec import ensure_kernelspec

    kernel = ensure_kernelspec()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.ipynb"
        baseline_cmds = [
            [
                str(BIN / "papermill"),
                "notebooks/larkspur.ipynb",
                str(out),
                "-k",
                kernel,
                "--cwd",
                str(ROOT),
                "-r",
                "register",
                "larkspur",
                "-r",
                "commit",
                commit,
                "-r",
                "mode",
                "render",
                "--no-progress-bar",
            ],
            [str(BIN / "jupyter"), "nbconvert", "--to", "html", "--no-input", str(out)],
        ]
        ours = [str(BIN / "tracework"), "render", "larkspur"]
        timed(ours)  # warm the file cache and write the kernelspec once
        base_times, our_times = [], []
        for _ in range(args.runs):
            base_times.append(sum(timed(c) for c in baseline_cmds))
            our_times.append(timed(ours))
    b_best, o_best = min(base_times), min(our_times)
    b_med, o_med = statistics.median(base_times), statistics.median(our_times)
    print(f"{'':28}{'best s':>9}{'median s':>10}")
    print(f"{'papermill + nbconvert CLIs':28}{b_best:9.2f}{b_med:10.2f}")
    print(f"{'tracework render':28}{o_best:9.2f}{o_med:10.2f}")
    ratio = o_med / b_med
    verdict = "PASS" if ratio <= 1.3 else "MISS"
    print(f"overhead ratio (median): {ratio:.2f}x  target <= 1.3x: {verdict}")


if __name__ == "__main__":
    main()
