"""``benchmarks/bench_capture.py`` run at a tiny size on a copy of the demo's Fennel, so
that the script behind the figures page's capture start-up table cannot rot: it runs to
the end and prints each goal's PASS or MISS beside its baseline and the load average.
Its timings are printed, never asserted."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tracework.workspace import Workspace

pytestmark = pytest.mark.slow  # sandboxes

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples"))

from build_subject import copy_demo  # noqa: E402


def test_bench_capture_runs_at_a_tiny_size(tmp_path, monkeypatch, tw):
    root = tmp_path / "demo"
    Workspace.init(root)
    copy_demo(root, "fennel")
    (root / "captures").mkdir()
    for name in ("fennel.toml", "fennel.py"):
        shutil.copy(REPO / "captures" / name, root / "captures" / name)
    monkeypatch.chdir(root)
    assert tw("fetch", "fennel").exit_code == 0
    # a cache of its own: the benchmark rebuilds the environment it times
    env = os.environ | {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    bench = REPO / "benchmarks" / "bench_capture.py"
    args = ["--workspace", str(root), "--runs", "1", "--second", "0.05"]
    done = subprocess.run(
        [sys.executable, str(bench), *args], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert re.search(r"load average [0-9.]+ at the start, [0-9.]+ at the end", out), out
    for label in ("bare python on the harness (baseline)", "tracework capture fennel"):
        assert re.search(rf"{re.escape(label)} +[0-9.]+ +[0-9.]+ +[0-9.]+\n", out), out
    assert re.search(r"fixed cost <= 0\.25 s: (PASS|MISS)\n", out), out
    assert re.search(r"0\.05 s harness <= 1\.3x bare: (PASS|MISS)\n", out), out
    assert "nothing installed in any run" in out
    assert not list(tmp_path.glob("demo/captures/second*"))  # its own workspace, removed
