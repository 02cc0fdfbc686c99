"""``benchmarks/bench_check.py`` run at a tiny size, in its default mode and as the
issue's monorepo at three sizes, so that the script behind the figures page's check and
monorepo tables cannot rot: it runs to the end and prints each table's rows, each
target's PASS or MISS beside its ratio, and the memory growth.  Its timings are
printed, never asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds repositories and runs tracework a few dozen times

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks" / "bench_check.py"
NUMBER = r"[0-9][0-9,.]*"
BASELINE = "baseline (python -c: ls-tree + cat-file --batch --buffer + sha256)"
CHECK, CHECK_AT = "tracework check --json", "tracework check --at C2 --json"


def bench(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCH), *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def row(label: str, columns: int) -> str:
    """A table row: the label, then ``columns`` numbers."""
    return re.escape(label) + "".join(rf" +{NUMBER}" for _ in range(columns)) + r"\n"


def test_the_default_run_prints_its_table_and_targets():
    out = bench("--files", "200", "--quotes", "400", "--repeat", "1")
    for label in (BASELINE, CHECK, CHECK_AT):
        assert re.search(row(label, 4), out), out
    assert "drift states match the generator's expectation exactly" in out
    assert re.search(
        r"targets \(medians\): check ≤ 2× baseline: (PASS|MISS) \([0-9.]+×\) · "
        r"check < 5 s: (PASS|MISS) \([0-9.]+ s\) · "
        r"check --at ≤ 3× baseline: (PASS|MISS) \([0-9.]+×\)\n",
        out,
    ), out
    assert "add-file" not in out.split("best and median")[1]  # the table the figures cite


MONOREPO_TARGETS = (
    r"targets \(medians\): check ≤ 2× baseline: (PASS|MISS) \([0-9.]+×\) · "
    r"check --at ≤ 3× baseline: (PASS|MISS) \([0-9.]+×\) · "
    r"register add-file ≤ 3× check: (PASS|MISS) \([0-9.]+×\)\n"
)


def test_the_monorepo_run_prints_each_size_the_memory_growth_and_targets():
    args = ["--monorepo", "--files", "200", "--quotes", "400", "--sizes", "100,150,200"]
    out = bench(*args, "--repeat", "1")
    sizes = [(100, 200), (150, 300), (200, 400)]
    parts = re.split(r"\n== ", out)
    assert [p.split("\n", 1)[0] for p in parts[1:]] == [
        *(f"{f} files, {q} quotes ==" for f, q in sizes),
        "memory, 3 sizes ==",
    ], out
    for (files, _), part in zip(sizes, parts[1:4], strict=True):
        assert re.search(r"bytes a file on average", part), part
        assert f"{files} files: {files} newly registered, 0 updated, 0 already" in part
        assert re.search(r"before and after the timed rounds: [0-9., ]+ → [0-9., ]+\n", part)
        for label in (BASELINE, CHECK, CHECK_AT):
            assert re.search(row(label, 4), part), part
        assert re.search(row(f"tracework register add-file ({files} files, one glob)", 5), part)
        assert re.search(MONOREPO_TARGETS, part), part
    memory = parts[4]
    judged = (CHECK, CHECK_AT, "tracework register add-file (one glob)")
    for label in judged:
        assert re.search(re.escape(label) + rf"( +{NUMBER}){{4}} +(PASS|MISS)\n", memory), memory
    assert re.search(r"baseline" + rf"( +{NUMBER}){{4}} *\n", memory), memory
    assert re.search(
        r"memory grows linearly: check --json (PASS|MISS) \([0-9.-]+ MiB per 10,000\) · "
        r"check --at C2 --json (PASS|MISS) \([0-9.-]+ MiB per 10,000\) · "
        r"register add-file \(one glob\) (PASS|MISS) \([0-9.-]+ MiB per 10,000\)\n",
        memory,
    ), memory
    assert re.search(r"at the start of the run and at its end: [0-9., ]+ → [0-9., ]+\n", memory)
    assert re.search(r"at 200 files and 400 quotes:\n" + MONOREPO_TARGETS, memory), memory
