"""Benchmark the authoring loop's register writes: one quote added, one replaced, and a
cell quoting 200 spans, against registers of 1,000, 10,000 and 50,000 quotes.

What it does, per size:

1. builds a synthetic git repository with plain git (one file per 5 quotes, 60 short
   lines each, committed at a fixed date), and a workspace with the CLI (``init``,
   ``subject add``, ``fetch``, ``register new``, ``register add-source``, one
   ``register add-file`` of every file);
2. adds the quotes in ONE register edit through the library (two-line spans);
3. times, in this process as a notebook would run them (interpreter start-up and
   imports not counted), after one untimed warm-up add:

   * ``add``: :func:`~tracework.register.evidence.add_quote` of a span not yet quoted;
   * ``replace``: ``add_quote(..., quote_id=…, replace=True)`` pointing an id at
     another span;
   * ``cell of 200``: 200 new spans quoted one after another, as a cell in author mode
     does.

It prints a table of seconds (median of ``--repeat`` runs for ``add`` and ``replace``;
one run for the cell) and a PASS/MISS line for the issue's target: adding or replacing
a quote in a 10,000-quote register in at most 0.2 s.  A benchmark never fails on time.

    .venv/bin/python benchmarks/bench_register.py                  # 1k, 10k, 50k
    .venv/bin/python benchmarks/bench_register.py --sizes 1000     # smoke test
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

from click.testing import CliRunner

from tracework.cli import main
from tracework.hashing import Lines
from tracework.register import edits as regy
from tracework.register.evidence import QuoteRequest, add_quote, make_quote
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
            section[f"Q-{q}"] = regy.quote_node(quote)
    return ws, register, files


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def measure(quotes: int, repeat: int, cell: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        ws, register, files = build(Path(tmp), quotes)

        def new_span(n: int) -> Callable[[], object]:
            i, line = n % files, 2 * QUOTES_PER_FILE + 1 + (n // files) % 40
            request = QuoteRequest((line, line), None, None, 0)
            return lambda: add_quote(ws, register, "SRC-1", path_of(i), request)

        timed(new_span(0))  # warm-up: imports, the first compiled copy
        adds = [timed(new_span(1 + r)) for r in range(repeat)]

        def replace(r: int) -> Callable[[], object]:
            line = 2 * QUOTES_PER_FILE + 1 + 40 + r % 8
            request = QuoteRequest((line, line + 1), None, None, 0)
            return lambda: add_quote(
                ws, register, "SRC-1", path_of(0), request, "Q-0", replace=True
            )

        replaces = [timed(replace(r)) for r in range(repeat)]
        whole = timed(lambda: [new_span(100 + n)() for n in range(cell)])
    return {
        "add": statistics.median(adds),
        "replace": statistics.median(replaces),
        f"cell of {cell}": whole,
    }


def main_() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cell", type=int, default=200, help="quotes in the one cell")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = {}
    for size in sizes:
        rows[size] = measure(size, args.repeat, args.cell)
        print(f"{size:>7} quotes: " + ", ".join(f"{k} {v:.3f} s" for k, v in rows[size].items()))
        sys.stdout.flush()
    print()
    print(f"| quotes | add | replace | cell of {args.cell} |")
    print("|---:|---:|---:|---:|")
    for size, row in rows.items():
        add, replace, cell = row.values()
        print(f"| {size:,} | {add:.3f} s | {replace:.3f} s | {cell:.2f} s |")
    if 10000 in rows:
        row = rows[10000]
        ok = row["add"] <= TARGET and row["replace"] <= TARGET
        verdict = "PASS" if ok else "MISS"
        print(f"{verdict}: add and replace in a 10,000-quote register ≤ {TARGET} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_())
