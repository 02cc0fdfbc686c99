"""Benchmark what tracework does after a harness's run, at the sizes of the findings.

1. **12,000 cases** (each opened, one record, one check, ended: 48,002 protocol lines,
   made in memory, no sandbox): the post-run processing of ``tracework capture``
   (``pipeline._files``: the messages parsed and checked, every string normalised,
   results.json and a transcript per case) for two runs, then ``_require_identical``
   on them, as ``--repeat 2`` does.  Beside it, in the same run:

   * the floor: ``json.loads`` of every line, the least any processing can do;
   * the same at 3,000 cases: a linear step grows 4× from 3,000 to 12,000 cases, a
     quadratic one 16×;
   * before: the protocol parser of the commit before the bounds (``BEFORE``, read
     from git; skipped when the history lacks it) on the same lines, which compared
     each case id with every id before it.

2. **3,000 normalise rules over 3,000 strings** (a rule ``tokN-[0-9]+`` each; every
   string holds one rule's match among other words): the one pass against the baseline
   of the rules applied one after another, each a pass over each string (what
   tracework did before, with the same RE2); both outputs must be equal.

Prints seconds (the best of ``--repeat``; the baselines once), the ratios, and the
machine's load average at the start and the end.  A benchmark never fails on time.

    .venv/bin/python benchmarks/bench_capture_bounds.py
    .venv/bin/python benchmarks/bench_capture_bounds.py --cases 3000 --rules 300  # quick
    .venv/bin/python benchmarks/bench_capture_bounds.py --cases 40 --rules 20 --strings 20 \
        --repeat 1  # a check that it runs
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: The commit before the bounds: its protocol parser is the "before" of part 1.
BEFORE = "1a4ae1b"


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def once(run: Callable[[], object]) -> float:
    return best(run, 1)


def protocol_lines(cases: int) -> list[bytes]:
    """What a harness sends for ``cases`` scripted cases, one record and check each."""
    messages: list[dict[str, Any]] = [{"t": "hello", "protocol": 1}]
    for number in range(cases):
        cid = f"C-{number:05d}"
        messages += [
            {"t": "case", "id": cid, "question": f"does case {number} hold?", "arm": "scripted"},
            {"t": "record", "case": cid, "name": "seen", "value": {"n": number, "ok": True}},
            {"t": "check", "case": cid, "criterion": "it holds", "holds": True, "observed": "yes"},
            {"t": "end", "case": cid},
        ]
    messages.append({"t": "done"})
    return [json.dumps(m).encode() for m in messages]


def old_module(path: str) -> types.ModuleType | None:
    """``path`` as it was at :data:`BEFORE`, as a module (None when git lacks it)."""
    try:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{BEFORE}:{path}"],
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType(f"before_{Path(path).stem}")
    sys.modules[module.__name__] = module  # for its dataclasses
    exec(compile(source, f"{BEFORE}:{path}", "exec"), module.__dict__)
    return module


def post_run(cases: int) -> tuple[Callable[[], object], list[bytes]]:
    """``pipeline._files`` twice and ``_require_identical``, on ``cases`` cases."""
    from tracework.capture import pipeline
    from tracework.capture.config import CaptureConfig, Limits
    from tracework.capture.environment import Environment, Interpreter
    from tracework.capture.process import Run
    from tracework.capture.store import EnvironmentProvenance, PythonProvenance

    lines = protocol_lines(cases)
    config = CaptureConfig.model_validate(
        {
            "subject": "bench",
            "commit": "0" * 40,
            "register": "bench",
            "python": "3.11",
            "requirements": [],
            "limits": Limits(cases=max(cases, 1000)),
        }
    )
    env = Environment(
        key="0" * 64,
        folder=Path("env"),
        frozen="# python 3.11\n",
        interpreter=Interpreter(path="python3", version="3.11", prefix="/usr"),
        built_now=False,
        provenance=EnvironmentProvenance(
            uv="0",
            python=PythonProvenance(version="3.11", path="python3", sha256="0" * 64),
            lock=None,
            distributions=(),
        ),
    )
    run = Run(lines=lines, log=b"the harness's log\n", returncode=0, stopped=None)

    def process() -> object:
        runs = [
            pipeline._files(run, config, "bench", "0" * 40, b"", Path("tree"), env, number)
            for number in (1, 2)
        ]
        pipeline._require_identical(runs, "bench")
        return runs

    return process, lines


def part_cases(count: int, repeat: int) -> None:
    from tracework.capture.config import Limits
    from tracework.capture.protocol import parse

    print(f"1. {count:,} cases, post-run processing of two runs (--repeat 2)")
    small = max(count // 4, 1)
    process, lines = post_run(count)
    process_small, _ = post_run(small)
    floor = best(lambda: [json.loads(line) for line in lines], repeat)
    ours = best(process, repeat)
    ours_small = best(process_small, repeat)
    parse_now = best(lambda: parse(lines, Limits(cases=count)), repeat)
    print(f"   {'json.loads of every line (the floor)':52}{floor:9.3f} s")
    print(f"   {f'_files x2 + _require_identical, {count:,} cases':52}{ours:9.3f} s")
    print(f"   {f'  the same, {small:,} cases':52}{ours_small:9.3f} s")
    print(f"   {'  of it: parse, one run':52}{parse_now:9.3f} s")
    print(f"   ratio to the floor: {ours / floor:.1f}x (two runs: {ours / floor / 2:.1f}x a run)")
    print(
        f"   growth {small:,} -> {count:,} cases: {ours / ours_small:.1f}x "
        f"(linear {count / small:.0f}x, quadratic {(count / small) ** 2:.0f}x)"
    )
    before = old_module("src/tracework/capture/protocol.py")
    if before is None:
        print(f"   (the parser before, at {BEFORE}, is not in this history: skipped)")
        return
    parse_before = once(lambda: before.parse(lines))
    print(f"   {f'parse before the bounds ({BEFORE}), one run':52}{parse_before:9.3f} s")
    print(f"   parse before / now: {parse_before / parse_now:.0f}x")


def part_rules(rules: int, strings: int, repeat: int) -> None:
    import re2

    from tracework.capture.normalise import HarnessRule, Normaliser

    print(f"2. {rules:,} normalise rules over {strings:,} strings")
    patterns = [(f"tok{n}-[0-9]+", f"<t{n}>") for n in range(rules)]
    texts = [
        f"request {n} answered tok{(n * 7919) % rules}-{n} at step {n % 17}" for n in range(strings)
    ]

    def one_pass() -> list[str]:
        norm = Normaliser([], [HarnessRule(p, h) for p, h in patterns])
        return [norm.text(text) for text in texts]

    def one_by_one() -> list[str]:
        compiled = [(re2.compile(p), h) for p, h in patterns]
        out = []
        for text in texts:
            for pattern, placeholder in compiled:
                text = pattern.sub(lambda _m, h=placeholder: h, text)
            out.append(text)
        return out

    ours = best(one_pass, repeat)
    baseline_out: list[str] = []
    baseline = once(lambda: baseline_out.extend(one_by_one()))
    same = one_pass() == baseline_out
    print(f"   {'baseline: each rule a pass over each string':52}{baseline:9.3f} s")
    print(f"   {'one pass (compile included)':52}{ours:9.3f} s")
    print(f"   baseline / one pass: {baseline / ours:.0f}x; outputs equal: {same}")
    if not same:
        sys.exit("the one pass and the baseline disagree")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=12_000)
    parser.add_argument("--rules", type=int, default=3_000)
    parser.add_argument("--strings", type=int, default=3_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs")
    part_cases(args.cases, args.repeat)
    part_rules(args.rules, args.strings, args.repeat)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end")


if __name__ == "__main__":
    main()
