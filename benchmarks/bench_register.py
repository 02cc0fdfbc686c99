"""Benchmark the authoring loop's register writes: one quote added, one replaced, and a
cell quoting 200 spans, against registers of 1,000, 10,000 and 50,000 quotes, beside
the full round-trip edit every write took before (the baseline).

What it does, per size:

1. builds a synthetic git repository with plain git (one file per 5 quotes, 60 short
   lines each, committed at a fixed date), and a workspace with the CLI (``init``,
   ``subject add``, ``fetch``, ``register new``, ``register add-source``, one
   ``register add-file`` of every file);
2. adds the quotes in ONE register edit through the library (two-line spans);
3. times, in this process as a notebook would run them (interpreter start-up and
   imports not counted), after one untimed warm-up add:

   * ``add``: :func:`~tracework.register.quotes.add_quote` of a span not yet quoted
     (what ``tracework quote`` does);
   * ``replace``: ``add_quote(..., quote_id=…, replace=True)`` pointing an id at
     another span;
   * ``cell of 200``: a notebook cell quoting 200 new spans, run by a real IPython
     shell in author mode (``src.quote`` 200 times, the register written when the
     cell ends; its writes are counted, target: once);
   * the baseline: one add and one replace by the full edit (the splice point
     withheld), on sizes up to ``--baseline-max`` (the full edit takes minutes at
     50,000 quotes).

It prints a table of seconds (median of ``--repeat`` runs for ``add`` and ``replace``;
one run for the cell and the baseline), the ratio of the baseline to each, and a
PASS/MISS line for the issue's target: adding or replacing a quote in a 10,000-quote
register in at most 0.2 s (without 10,000 among ``--sizes``, judged at the largest size
run, and the line says so).  A benchmark never fails on time.

Then, for a register of ``--layout-size`` quotes (10,000; 0 skips it), the layout case:
the same register in the usual layout (the baseline, as tracework wrote it) and in
another valid one (its checks, under a comment, above its quotes, as a hand-kept or
older register may have them), each written twice by ``add_quote`` (a new span, what
``tracework quote`` does): the first write in the other layout puts the keys in the
usual order (one full edit), the second is spliced.  Beside them, what the two writes
in the other layout took before (the full edit each time, keeping the order it read;
the first also reads the hand-edited YAML afresh); the ratios of each to the usual
layout's write, in the same run.

    .venv/bin/python benchmarks/bench_register.py                  # 1k, 10k, 50k
    .venv/bin/python benchmarks/bench_register.py --sizes 1000 --layout-size 1000  # smoke
    .venv/bin/python benchmarks/bench_register.py --sizes '' --layout-size 10000   # layout
    .venv/bin/python benchmarks/bench_register.py --sizes '' --layout-size 0 --cli-size 10000

Last, for a register of ``--cli-size`` quotes (10,000; 0 skips it), the command line as an
analyst runs it: ``tracework quote`` of a new span against ``tracework check --json`` of the
same register, each a process of its own (start-up, imports and the register's load
included), alternating, ``--repeat`` times; PASS when the quote's median is at most 3× the
check's.

The machine's load average at the start and at the end is printed last.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import patch

from click.testing import CliRunner

import tracework.register.store as reg
from tracework.cli import main
from tracework.hashing import Lines
from tracework.register import append, nodes
from tracework.register import edits as regy
from tracework.register.quotes import QuoteRequest, add_quote, make_quote
from tracework.register.spans import Span
from tracework.workspace import Workspace

LINES_PER_FILE = 60
QUOTES_PER_FILE = 5
TARGET = 0.2
WHEN = {"GIT_AUTHOR_DATE": "@1767225600 +0000", "GIT_COMMITTER_DATE": "@1767225600 +0000"}


def module(index: int) -> bytes:
    return "".join(f"value_{index}_{n} = {n} * {index}\n" for n in range(LINES_PER_FILE)).encode()


def path_of(index: int) -> str:
    return f"pkg/m{index // 100:03d}/mod{index:05d}.py"


def build(root: Path, quotes: int) -> tuple[Workspace, Path, int]:
    files = max(1, quotes // QUOTES_PER_FILE)
    repo = root / "subject"
    for i in range(files):
        target = repo / path_of(i)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(module(i))
    env = {**os.environ, **WHEN, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.org",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.org"}  # fmt: skip
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    os.chdir(root)
    runner = CliRunner()
    runner.invoke(main, ["init", "ws"], catch_exceptions=False)
    os.chdir(root / "ws")
    for args in (
        ["subject", "add", "synth", str(repo)],
        ["fetch", "synth"],
        ["register", "new", "bench"],
        ["register", "add-source", "bench", "SRC-1", "--subject", "synth", "--commit", commit],
        ["register", "add-file", "bench", "SRC-1", "pkg/**"],
    ):
        result = runner.invoke(main, args, catch_exceptions=False)
        if result.exit_code != 0:
            raise SystemExit(f"{' '.join(args)} failed: {result.output}")
    ws = Workspace.find()
    register = ws.registers / "bench.yaml"
    with regy.edit(register) as doc:
        section = regy.section(doc, "quotes")
        for q in range(quotes):
            i, k = q % files, q // files
            first = 1 + 2 * k
            quote = make_quote("SRC-1", path_of(i), Lines(module(i)), Span(first, first + 1), None)
            section[f"Q-{q}"] = nodes.quote_node(quote)
    return ws, register, files


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def run_cell(shell: Any, code: str) -> None:
    result = shell.run_cell(code)
    if not result.success:
        raise SystemExit(f"the cell failed: {result.error_in_exec or result.error_before_exec}")


def measure(quotes: int, repeat: int, cell: int, baseline: bool) -> tuple[dict[str, float], int]:
    """The row of seconds for ``quotes``, and how many times the cell wrote the register."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    here = Path.cwd()

    with tempfile.TemporaryDirectory() as tmp:
        ws, register, files = build(Path(tmp), quotes)

        def new_span(n: int) -> Callable[[], object]:
            i, line = n % files, 2 * QUOTES_PER_FILE + 1 + (n // files) % 40
            request = QuoteRequest((line, line), None, None, 0)
            return lambda: add_quote(ws, register, "SRC-1", path_of(i), request)

        def replace(r: int) -> Callable[[], object]:
            line = 2 * QUOTES_PER_FILE + 1 + 40 + r % 8
            request = QuoteRequest((line, line + 1), None, None, 0)
            return lambda: add_quote(
                ws, register, "SRC-1", path_of(0), request, "Q-0", replace=True
            )

        timed(new_span(0))  # warm-up: imports, the first compiled copy
        row = {
            "add": statistics.median(timed(new_span(1 + r)) for r in range(repeat)),
            "replace": statistics.median(timed(replace(r)) for r in range(repeat)),
        }
        config = Config()
        config.HistoryManager.enabled = False  # no history database in the user's home
        shell = InteractiveShell.instance(config=config)
        run_cell(shell, 'import tracework as tw\nwb = tw.open("bench")\nsrc = wb.source("SRC-1")')
        spans = [
            (path_of(n % files), 2 * QUOTES_PER_FILE + 1 + (n // files) % 40)
            for n in range(1000, 1000 + cell)
        ]
        shell.user_ns["spans"] = spans
        code = "for path, line in spans:\n    src.quote(path, lines=(line, line))"
        writes = []
        replace_file = os.replace

        def counted(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
            writes.extend([dst] if Path(dst) == register else [])
            replace_file(src, dst)

        with patch.object(os, "replace", counted):  # every register write is a rename
            row[f"cell of {cell}"] = timed(lambda: run_cell(shell, code))
        held = reg.load(register).quotes
        if not all(f"Q-mod{int(p[-8:-3]):05d}-{n}-{n}" in held for p, n in spans):
            raise SystemExit("the cell's quotes are not all in the register")
        if baseline:  # the full edit, as every write was before the splice
            with patch.object(append, "_recall", lambda *_: None):
                row["add (full edit)"] = timed(new_span(5000))
                row["replace (full edit)"] = timed(replace(repeat))
            row[f"{cell} one by one"] = timed(lambda: [new_span(3000 + n)() for n in range(cell)])
        os.chdir(here)  # out of the folder before it goes
    return row, len(writes)


def other_layout(text: str) -> str:
    """The register with its history, under a comment, above its quotes: another valid
    order of its keys."""
    body, after = text.split("checks: []\n")
    at = body.index("quotes:\n")
    return body[:at] + "# the history, kept by hand\nchecks: []\n" + body[at:] + after


def measure_layout(quotes: int) -> dict[str, float]:
    """Two writes to the register in the usual layout, two in another (the first of which
    puts it in the usual one), and one as every write in the other layout took before."""
    here = Path.cwd()
    with tempfile.TemporaryDirectory() as tmp:
        ws, register, files = build(Path(tmp), quotes)
        kept: dict[Path, bytes] = {}
        spans = iter(range(10**6))

        def write() -> float:
            n = next(spans)
            i, line = n % files, 2 * QUOTES_PER_FILE + 1 + (n // files) % 40
            request = QuoteRequest((line, line), None, None, 0)
            return timed(lambda: add_quote(ws, register, "SRC-1", path_of(i), request))

        def restore(other: bool) -> None:
            for path in ws.registers.glob("*bench.yaml*"):
                path.unlink()
            for path, data in kept.items():
                path.write_bytes(data)
            if other:
                register.write_text(other_layout(register.read_text()))

        write()  # warm-up: imports, the first compiled copy
        kept = {p: p.read_bytes() for p in ws.registers.glob("*bench.yaml*")}
        row: dict[str, float] = {}
        restore(other=False)
        row["usual: first write"], row["usual: second write"] = write(), write()
        restore(other=True)
        row["other: first write"], row["other: second write"] = write(), write()
        if not register.read_text().index("\nquotes:\n") < register.read_text().index(
            "\n# the history, kept by hand\nchecks: []\n"
        ):
            raise SystemExit("the other layout was not put in the usual order")
        restore(other=True)
        with patch.object(regy, "_in_usual_order", lambda *_: None):  # the order kept
            row["other: first write, before"] = write()  # the YAML read afresh too
            row["other: every write, before"] = write()  # the full edit
        os.chdir(here)
    return row


def ratio(row: dict[str, float], baseline: str, measured: str) -> str:
    """The baseline's time, and how many times the measured one it is."""
    return f"{row[baseline]:.2f} s ({row[baseline] / row[measured]:.1f}×)"


def main_() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cell", type=int, default=200, help="quotes in the one cell")
    parser.add_argument(
        "--baseline-max", type=int, default=10000, help="the largest size to run the baseline on"
    )
    parser.add_argument(
        "--layout-size", type=int, default=10000, help="quotes in the layout case (0: skip)"
    )
    parser.add_argument(
        "--cli-size",
        type=int,
        default=10000,
        help="quotes in the command-line case, quote vs check (0: skip)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    load_start = os.getloadavg()
    rows, writes = {}, {}
    for size in sizes:
        rows[size], writes[size] = measure(size, args.repeat, args.cell, size <= args.baseline_max)
        print(f"{size:>7} quotes: " + ", ".join(f"{k} {v:.3f} s" for k, v in rows[size].items()))
        sys.stdout.flush()
    if rows:
        print_sizes(rows, args.cell)
        judged = 10000 if 10000 in rows else max(rows)
        row = rows[judged]
        ok = row["add"] <= TARGET and row["replace"] <= TARGET
        verdict = "PASS" if ok else "MISS"
        at = "" if judged == 10000 else " (the target is at 10,000)"
        print(f"{verdict}: add and replace in a {judged:,}-quote register ≤ {TARGET} s{at}")
        once = "PASS" if set(writes.values()) == {1} else "MISS"
        counts = ", ".join(f"{n} at {size:,}" for size, n in writes.items())
        print(f"{once}: a cell of {args.cell} quotes writes the register once ({counts})")
    if args.layout_size:
        print_layout(args.layout_size, measure_layout(args.layout_size))
    if args.cli_size:
        print_cli(args.cli_size, measure_cli(args.cli_size, args.repeat))
    load_end = os.getloadavg()
    print(f"\nload average {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end (1 min)")
    return 0


def measure_cli(quotes: int, repeat: int) -> dict[str, list[float]]:
    """``tracework quote`` (a new span each time) and ``tracework check --json`` of the
    same register, as an analyst runs them: each a new process, start-up and imports
    included, alternating; the check's compiled copy made first, as any command makes it."""
    here = Path.cwd()
    with tempfile.TemporaryDirectory() as tmp:
        ws, _, files = build(Path(tmp), quotes)
        command = str(Path(sys.executable).parent / "tracework")
        subprocess.run([command, "check", "bench", "--json"], capture_output=True, check=False)
        times: dict[str, list[float]] = {"check --json": [], "quote": []}
        for n in range(repeat):
            last = f"{LINES_PER_FILE - 1}-{LINES_PER_FILE}"  # a span no quote holds yet
            span = ["SRC-1", path_of(n % files), "--lines", last]
            runs = (
                ("check --json", [command, "check", "bench", "--json"]),
                ("quote", [command, "quote", "bench", *span, "--id", f"Q-cli-{n}"]),
            )
            for key, args in runs:
                start = time.perf_counter()
                done = subprocess.run(args, cwd=ws.root, capture_output=True, check=False)
                times[key].append(time.perf_counter() - start)
                if key == "quote" and done.returncode != 0:
                    raise SystemExit(f"quote failed: {done.stderr.decode()}")
        os.chdir(here)  # out of the folder before it goes
        return times


def print_cli(size: int, times: dict[str, list[float]]) -> None:
    check, quote = (statistics.median(times[k]) for k in ("check --json", "quote"))
    load = os.getloadavg()[0]
    print()
    print(f"| {size:,} quotes, from the command line | median | min |")
    print("|---|---:|---:|")
    for key, values in times.items():
        print(f"| `tracework {key}` | {statistics.median(values):.3f} s | {min(values):.3f} s |")
    verdict = "PASS" if quote <= 3 * check else "MISS"
    print(f"{verdict}: quote / check = {quote / check:.2f}× (target ≤ 3×), load average {load:.1f}")


def print_sizes(rows: dict[int, dict[str, float]], cells: int) -> None:
    cell = f"cell of {cells}"
    print()
    print(f"| quotes | add | replace | {cell} | full edit: add / replace | {cells} one by one |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size, row in rows.items():
        base = (
            f"{ratio(row, 'add (full edit)', 'add')} / "
            f"{ratio(row, 'replace (full edit)', 'replace')}"
            if "add (full edit)" in row
            else "not run"
        )
        one = f"{cells} one by one"
        ones = ratio(row, one, cell) if one in row else "not run"
        print(
            f"| {size:,} | {row['add']:.3f} s | {row['replace']:.3f} s | {row[cell]:.2f} s "
            f"| {base} | {ones} |"
        )


def print_layout(size: int, row: dict[str, float]) -> None:
    for key, value in row.items():
        print(f"{size:>7} quotes, {key}: {value:.3f} s")
    print()
    print(f"| {size:,} quotes | first write | second write |")
    print("|---|---:|---:|")
    usual = ("usual: first write", "usual: second write")
    print(f"| usual layout (baseline) | {row[usual[0]]:.3f} s | {row[usual[1]]:.3f} s |")
    cells = [f"{row[f'other: {w} write']:.3f} s ({row[f'other: {w} write'] / row[u]:.1f}×)"
             for w, u in zip(("first", "second"), usual, strict=True)]  # fmt: skip
    print(f"| other layout (× the usual) | {cells[0]} | {cells[1]} |")
    first, every = row["other: first write, before"], row["other: every write, before"]
    print(
        f"| other layout, before: the full edit, every time (× the usual) | {first:.3f} s "
        f"({first / row[usual[0]]:.1f}×) | {every:.3f} s ({every / row[usual[1]]:.1f}×) |"
    )


if __name__ == "__main__":
    raise SystemExit(main_())
