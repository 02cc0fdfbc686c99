"""How long the demo's diagram checks take, and the browser test.

Runs the demo notebook's cells in this process (render mode, at the pin and at the
newest commit), timing every ``wb.diagram`` call: parsing, generation and the checks
of bound records and code identifiers.  Then times the Playwright browser tests.
Run `make demo` first.

    .venv/bin/python benchmarks/bench_diagrams.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent


def diagram_seconds(commit: str | None) -> tuple[float, int]:
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
        nb = nbformat.read(ROOT / "notebooks" / "larkspur.ipynb", as_version=4)
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
    if not (ROOT / "sources" / ".mirrors" / "larkspur.git").exists():
        sys.exit("run `make demo` first")
    os.chdir(ROOT)
    for label, commit in (("at the pin", None), ("at the newest commit", "11650088")):
        seconds, count = diagram_seconds(commit)
        print(f"diagram checks {label}: {count} diagrams in {seconds * 1000:.0f} ms")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "tests/test_browser.py"], check=True)
    print(
        f"browser tests (render a report with 5 diagrams, then check its pages at two widths): "
        f"{time.perf_counter() - start:.1f} s"
    )


if __name__ == "__main__":
    main()
