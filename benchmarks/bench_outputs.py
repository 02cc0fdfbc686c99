"""Benchmark: `tracework render` of a notebook whose cell outputs 27 MB.

Three shapes of the same 27 MB: one `print` call, 300,000 printed lines, and a record
whose claim is 27 MB of text (it reaches records.json as well as the page).  Each is
rendered in a workspace of its own, built here in a temporary folder (a one-file
subject, a report quoting it); prints, per shape, the wall time of `tracework render`,
the peak resident memory of its largest process (the render or its kernel) and the
sizes of the page, the kept notebook and records.json; then the machine's load average
at the start and the end.  `--mb` sets the size (a test runs it at 2 MB, still over
the 1 MiB `[render] output_cap`).

    .venv/bin/python benchmarks/bench_outputs.py [--runs 1] [--mb 27]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUOTE = """q = src.quote("pkg/store.py", symbol="Store.put")
wb.component("RT-CMP-store", label="Store", identity="The store.", evidence=[q]);"""
ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_AUTHOR_DATE": "@1767225600 +0000",
    "GIT_COMMITTER_DATE": "@1767225600 +0000",
}
#: A printed line of the second shape: "line 000042 " and 78 x's, and its newline.
LINE = 90


def shapes(mb: float) -> dict[str, str]:
    """The cells that output ``mb`` MB, by the shape's name."""
    size = round(mb * 1_000_000)
    lines = size // LINE
    return {
        "one print": f'print("x" * {size:_})',
        f"{lines:,} lines": (
            f'for i in range({lines:_}):\n    print(f"line {{i:06d}} " + "x" * {LINE - 12})'
        ),
        f"a {mb:g} MB claim": (
            f'wb.claim("RT-CLM-big", label="Big", claim="x " * {size // 2:_}, assessment="a",\n'
            '         operation="uninspected", evidence=[q]);'
        ),
    }


def workspace(root: Path, cell: str) -> Path:
    """A subject, a workspace and report `big` whose notebook runs ``cell``."""
    import nbformat
    from click.testing import CliRunner

    import tracework
    from tracework.cli import main

    toy = root / "toy"
    (toy / "pkg").mkdir(parents=True)
    (toy / "pkg" / "store.py").write_text(
        "class Store:\n    def put(self, key, value):\n        self.items[key] = value\n"
    )
    env = {**os.environ, **ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *args], cwd=toy, env=env, check=True)
    pin = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=toy, capture_output=True, text=True, check=True
    ).stdout.strip()
    runner = CliRunner()
    here = Path.cwd()
    try:
        os.chdir(root)
        assert runner.invoke(main, ["init", "ws"]).exit_code == 0
        os.chdir(root / "ws")
        for args in (
            ["subject", "add", "toy", str(toy)],
            ["fetch", "toy"],
            ["new", "big", "--subject", "toy", "--commit", pin],
        ):
            result = runner.invoke(main, args)
            assert result.exit_code == 0, result.output
        path = root / "ws" / "notebooks" / "big.ipynb"
        nb = nbformat.read(path, as_version=4)
        nb.cells.insert(4, nbformat.v4.new_code_cell(QUOTE))
        nb.cells.insert(5, nbformat.v4.new_code_cell(cell))
        nbformat.write(nb, path)
        tracework.open("big").source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    finally:
        os.chdir(here)
    return root / "ws"


def render(ws: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of the largest process of one render."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracework", "render", "big"],
        cwd=ws,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"render failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return elapsed, usage.ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--mb", type=float, default=27, help="megabytes each cell outputs")
    args = parser.parse_args()
    load_start = os.getloadavg()
    print(f"{'':16}{'seconds':>9}{'peak RSS':>10}{'page':>10}{'notebook':>10}{'records':>10}")
    for shape, cell in shapes(args.mb).items():
        with tempfile.TemporaryDirectory() as tmp:
            ws = workspace(Path(tmp), cell)
            runs = [render(ws) for _ in range(args.runs)]
            (folder,) = (ws / "reports" / "big").glob("[0-9a-f]*")
            sizes = [
                (folder / name).stat().st_size / 1e6
                for name in ("report.html", "report.ipynb", "records.json")
            ]
        seconds = statistics.median(r[0] for r in runs)
        peak = max(r[1] for r in runs) / (1 << 20)
        print(
            f"{shape:16}{seconds:9.1f}{peak:8.0f} MiB"
            + "".join(f"{size:8.1f} MB" for size in sizes)
        )
    load_end = os.getloadavg()
    print(f"load average {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end (1 min)")


if __name__ == "__main__":
    main()
