"""How long the demo's diagram checks take, and the browser test.

Runs the demo notebook's cells in this process (render mode, at the pin and at the
newest commit), timing every ``wb.diagram`` call: parsing, generation and the checks
of bound records and code identifiers.  Then times the Playwright browser tests
(``--no-browser`` leaves them out), and prints the machine's load average at the start
and the end.  Run `make demo` first; ``--workspace`` names another workspace holding the
demo report and its fetched subject (a test runs this on a copy of the demo).

    .venv/bin/python benchmarks/bench_diagrams.py [--workspace DIR] [--no-browser]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent


def diagram_seconds(root: Path, commit: str | None) -> tuple[float, int]:
    import tracework
    from tracework.notebook.workbench import Workbench

    spent = [0.0, 0]
    original = Workbench.diagram

    def timed(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start
            spent[1] += 1

    Workbench.diagram = timed  # type: ignore[method-assign]
    try:
        nb = nbformat.read(root / "notebooks" / "larkspur.ipynb", as_version=4)
        scope: dict[str, object] = {"tw": tracework}
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            source = cell.source
            if "parameters" in cell.metadata.get("tags", []):
                source += f"\ncommit = {commit!r}\nmode = 'render'"
            if source.strip() in ("wb.records()", "wb.done()"):
                continue
            exec(compile(source, "<cell>", "exec"), scope)
    finally:
        Workbench.diagram = original  # type: ignore[method-assign]
    return spent[0], int(spent[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", type=Path, default=ROOT)
    parser.add_argument("--no-browser", action="store_true", help="leave out the browser tests")
    args = parser.parse_args()
    root = args.workspace.resolve()
    if not (root / "sources" / ".mirrors" / "larkspur.git").exists():
        sys.exit("run `make demo` first")
    load_start = os.getloadavg()
    os.chdir(root)
    for label, commit in (("at the pin", None), ("at the newest commit", "11650088")):
        seconds, count = diagram_seconds(root, commit)
        print(f"diagram checks {label}: {count} diagrams in {seconds * 1000:.0f} ms")
    if not args.no_browser:
        start = time.perf_counter()
        browser = [sys.executable, "-m", "pytest", "-q", "tests/test_browser.py"]
        subprocess.run(browser, cwd=ROOT, check=True)
        print(
            "browser tests (render a report with 5 diagrams, then check its pages at two "
            f"widths): {time.perf_counter() - start:.1f} s"
        )
    load_end = os.getloadavg()
    print(f"load average {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end (1 min)")


if __name__ == "__main__":
    main()
