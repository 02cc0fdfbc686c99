"""Benchmark: `tracework render` and `tracework preview` against papermill + nbconvert.

All sides execute the demo notebook (`notebooks/larkspur.ipynb`) at the demo's pin with
the same kernel and parameters.  The baseline is the two stock CLIs run one after the
other, as a shell script would (`papermill` then `jupyter nbconvert --to html`).

* a cold `tracework render`: a new process each time, its kernel started for it
  (targets: ≤ 1.3× the baseline, and ≤ 1.5 s);
* `tracework preview`: a one-cell change (a Markdown cell's text) saved as an editor
  saves, timed from the save to the moment the preview's event stream says the new page
  is served (what makes the browser reload), its bytes then checked to hold the change
  (target: ≤ 1 s).  The preview runs in a copy of the demo's workspace, so the
  repository's notebook is never written.

Prints the best and median of N runs, the ratios, PASS or MISS for each target, and the
machine's load average before and after.  Run `make demo` first; `--workspace` names
another workspace holding the demo report and its fetched subject (a test runs this at a
tiny size on a copy of the demo).  Where `PYTHONDONTWRITEBYTECODE` is set, every command
is timed with its bytecode kept in a temporary folder, as an installed tracework has it
(`--from-source`: compiled at every start instead).

    .venv/bin/python benchmarks/bench_render.py [--runs 3] [--edits 5] [--workspace DIR]
        [--from-source]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
NAME = "larkspur"


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def pin(root: Path) -> str:
    import tracework.register.store as reg

    return reg.load(root / "registers" / f"{NAME}.yaml").git_source("SRC-1").commit


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def workspace_copy(root: Path, into: Path) -> Path:
    """Workspace ``root``'s files the report reads, copied (the mirror included)."""
    ws = into / "ws"
    ws.mkdir()
    shutil.copy2(root / "tracework.toml", ws)
    for rel in (f"notebooks/{NAME}.ipynb", f"registers/{NAME}.yaml", f"sources/{NAME}.toml"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, ws / rel)
    shutil.copytree(root / "registers" / "rubrics", ws / "registers" / "rubrics")
    mirrors = ws / "sources" / ".mirrors"
    mirrors.mkdir(parents=True)
    shutil.copytree(root / "sources" / ".mirrors" / f"{NAME}.git", mirrors / f"{NAME}.git")
    for rel in ("reports", "captures"):
        (ws / rel).mkdir(exist_ok=True)
    return ws


class Stream:
    """The preview's event stream, read in a thread: each generation it says, with the
    time it arrived."""

    def __init__(self, url: str) -> None:
        self.seen: list[tuple[int, float]] = []
        self._changed = threading.Condition()
        self._response = urllib.request.urlopen(url + "_tracework/events", timeout=600)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for raw in self._response:
            line = raw.decode().strip()
            if line.startswith("data: ") and "rendering" not in line:
                with self._changed:
                    self.seen.append((int(line[6:]), time.perf_counter()))
                    self._changed.notify_all()

    def past(self, generation: int, timeout: float = 300) -> tuple[int, float]:
        """The first generation said after ``generation``, and when it came."""
        with self._changed:
            if not self._changed.wait_for(
                lambda: any(g > generation for g, _ in self.seen), timeout
            ):
                sys.exit("the preview said nothing new within its limit")
            return next((g, t) for g, t in self.seen if g > generation)


def preview_rerenders(root: Path, edits: int) -> list[float]:
    """Seconds from each saved one-cell change to its page being served, in a copy of
    workspace ``root``."""
    with tempfile.TemporaryDirectory() as tmp:
        ws = workspace_copy(root, Path(tmp))
        proc = subprocess.Popen(
            [str(BIN / "tracework"), "preview", NAME],
            cwd=ws,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            found = re.search(r"http://127\.0\.0\.1:\d+/", first)
            if not found:
                sys.exit(f"the preview did not start: {first}{proc.stderr.read()}")  # type: ignore[union-attr]
            url = found.group()
            stream = Stream(url)
            generation, _ = stream.past(0)  # the first render
            notebook = ws / "notebooks" / f"{NAME}.ipynb"
            nb = json.loads(notebook.read_text(encoding="utf-8"))
            cell = next(
                c for c in nb["cells"] if c["cell_type"] == "markdown" and c is not nb["cells"][0]
            )
            original = "".join(cell["source"])
            times = []
            for n in range(1, edits + 1):
                time.sleep(1.0)  # the next kernel boots meanwhile, as between an analyst's saves
                marker = f"Edited {n} times in the benchmark."
                cell["source"] = f"{original}\n\n{marker}"
                saved = notebook.with_name(f".{notebook.name}.saving")
                saved.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
                start = time.perf_counter()
                os.replace(saved, notebook)
                generation, arrived = stream.past(generation)
                times.append(arrived - start)
                with urllib.request.urlopen(url, timeout=60) as page:
                    shown = page.read().decode("utf-8")
                if marker not in shown or "tw-preview-error" in shown.partition("<body")[2]:
                    sys.exit(f"edit {n}: the preview did not show the change")
        finally:
            os.killpg(proc.pid, signal.SIGINT)
            proc.communicate(timeout=60)
        if proc.returncode != 130:
            sys.exit(f"the preview exited {proc.returncode} on Ctrl-C, not 130")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--workspace", type=Path, default=ROOT)
    parser.add_argument(
        "--from-source",
        action="store_true",
        help="under PYTHONDONTWRITEBYTECODE, compile tracework at every start (not as installed)",
    )
    args = parser.parse_args()
    root = args.workspace.resolve()
    bytecode = tempfile.TemporaryDirectory(prefix="bench-render-bytecode-")
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not args.from_source:
        # an installed tracework has its bytecode; an editable one under this variable
        # would compile its modules at every start: every command, ours and the
        # baseline's, keeps its bytecode in a folder of the run's own
        del os.environ["PYTHONDONTWRITEBYTECODE"]
        os.environ["PYTHONPYCACHEPREFIX"] = bytecode.name
        print("bytecode: kept in a temporary folder, as installed (--from-source: compiled)")
    if not (root / "sources" / ".mirrors" / f"{NAME}.git").exists():
        sys.exit("run `make demo` first: the benchmark renders the demo report")
    commit = pin(root)
    from tracework.kernels.spec import ensure_kernelspec

    kernel = ensure_kernelspec()
    print(f"load average before: {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.ipynb"
        baseline_cmds = [
            [
                str(BIN / "papermill"),
                f"notebooks/{NAME}.ipynb",
                str(out),
                "-k",
                kernel,
                "--cwd",
                str(root),
                "-r",
                "register",
                NAME,
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
        ours = [str(BIN / "tracework"), "render", NAME]
        timed(ours, root)  # warm the file cache and write the kernelspec once
        base_times, our_times = [], []
        for _ in range(args.runs):
            base_times.append(sum(timed(c, root) for c in baseline_cmds))
            our_times.append(timed(ours, root))
    preview_times = preview_rerenders(root, args.edits)
    b_best, o_best = min(base_times), min(our_times)
    b_med, o_med = statistics.median(base_times), statistics.median(our_times)
    p_best, p_med = min(preview_times), statistics.median(preview_times)
    print(f"{'':40}{'best s':>9}{'median s':>10}")
    print(f"{'papermill + nbconvert CLIs':40}{b_best:9.2f}{b_med:10.2f}")
    print(f"{'tracework render (cold)':40}{o_best:9.2f}{o_med:10.2f}")
    print(f"{'tracework preview, a one-cell change':40}{p_best:9.2f}{p_med:10.2f}")
    ratio = o_med / b_med
    print(f"render / baseline (median): {ratio:.2f}x  target <= 1.3x: {verdict(ratio <= 1.3)}")
    print(f"render, cold (median): {o_med:.2f} s  target <= 1.5 s: {verdict(o_med <= 1.5)}")
    print(
        f"preview re-render (median): {p_med:.2f} s ({p_med / b_med:.2f}x the baseline)  "
        f"target <= 1 s: {verdict(p_med <= 1.0)}"
    )
    print(f"load average after: {load()}")
    bytecode.cleanup()


def verdict(passed: bool) -> str:
    return "PASS" if passed else "MISS"


if __name__ == "__main__":
    main()
