"""Benchmark: `tracework capture fennel` against the same harness run by a bare `python`.

Both sides run the demo harness (`captures/fennel.py`) against Fennel at its pin, with
the same interpreter: the baseline is the base `python` the environment is made from
(Fennel's environment holds no package, and no interpreter of a capture environment is
ever started outside isolation) started by hand on the harness, with the exported tree
and the harness API on its path, no isolation, no checks, nothing written; ours is the whole
command — start-up, the export and the hash check of the register's files, the
sandbox, the protocol, normalisation, and the capture folder written and swapped in.
The two alternate, run after run.  Also timed, for where the time goes: the sandboxed
run alone (one harness run in the sandbox, from the library) and `capture env` on the
cached environment, which must install nothing and checks it against its seal.

What isolating the build costs: `capture env fennel --rebuild` (the whole command: the
sandbox, the registry proxy, uv inside, the seal) against `uv venv` of the same base
Python run on the host, which is all the unisolated build did for an environment of no
package.

Prints min/median/max over N runs (default 7) and the ratio of medians (goal: ≤ 1.3×).
Run `make demo` first (it fetches Fennel and builds the environment).

    .venv/bin/python benchmarks/bench_capture.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def command(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> Callable[[], str]:
    def run() -> str:
        return subprocess.run(
            list(args), cwd=cwd, env=env, check=True, capture_output=True, text=True
        ).stdout

    return run


def row(label: str, times: list[float]) -> str:
    return f"{label:44}{min(times):8.3f}{statistics.median(times):9.3f}{max(times):8.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    if not (ROOT / "sources" / ".mirrors" / "fennel.git").exists():
        sys.exit("run `make demo` first: the benchmark captures the demo's Fennel")

    from tracework.capture import isolation, pipeline
    from tracework.capture.config import load_config
    from tracework.capture.environment import cached_environment
    from tracework.capture.interpreter import uv_bin as pipeline_uv
    from tracework.capture.registry import registry_setting
    from tracework.capture.tree import export_tree
    from tracework.git.subjects import open_mirror
    from tracework.workspace import Workspace

    tracework = str(BIN / "tracework")
    env_json = json.loads(command(tracework, "capture", "env", "fennel", "--json")())
    if env_json["built"]:
        print("(the environment was built now; the timed runs below reuse it)")
    ws = Workspace(ROOT)
    config, _ = load_config(ws, "fennel")
    mirror = open_mirror(ws, "fennel")
    tree = export_tree(mirror, config.commit)
    env = cached_environment(config, tree, "fennel", registry_setting(ws.settings()))
    harness = (ROOT / "captures" / "fennel.py").read_bytes()
    backend = isolation.choose(pipeline.isolation_setting(ws))
    bare_env = {
        "PATH": f"{env.venv / 'bin'}:/usr/bin:/bin",
        "PYTHONHASHSEED": "0",
        "PYTHONPATH": f"{isolation.HARNESS_LIB}:{tree}",
    }
    bare = command(
        env.interpreter.path,
        "-s",
        "-B",
        "-P",  # as the runner does: the harness's own folder is not on the path
        str(ROOT / "captures" / "fennel.py"),
        env=bare_env,
        cwd=tree,
    )
    ours = command(tracework, "capture", "fennel")
    rebuild = command(tracework, "capture", "env", "fennel", "--rebuild", "--json")
    scratch = ROOT / "examples" / "build" / "bench-venv"
    plain_venv = command(
        str(Path(pipeline_uv())),
        "venv",
        "--quiet",
        "--no-config",
        "--clear",
        "--python",
        env.interpreter.path,
        str(scratch),
    )
    sandboxed = lambda: pipeline._run_once(config, "fennel", harness, tree, env, backend)  # noqa: E731
    cached_env = command(tracework, "capture", "env", "fennel", "--json")

    ours()  # warm the file cache once
    times: dict[str, list[float]] = {
        "bare": [],
        "ours": [],
        "sandboxed": [],
        "env": [],
        "build": [],
        "plain": [],
    }
    for _ in range(args.runs):
        times["bare"].append(timed(bare))
        times["ours"].append(timed(ours))
        times["sandboxed"].append(timed(sandboxed))
        start = time.perf_counter()
        built = json.loads(cached_env())["built"]
        times["env"].append(time.perf_counter() - start)
        if built:
            sys.exit("capture env built the environment again: the cache did not hold")
    for _ in range(max(3, args.runs // 2)):
        times["plain"].append(timed(plain_venv))
        times["build"].append(timed(rebuild))

    load = os.getloadavg()[0]
    print(
        f"Fennel at {config.commit[:12]}, isolation {backend}, {args.runs} runs each, "
        f"load average {load:.1f}"
    )
    print(f"{'':44}{'min s':>8}{'median s':>9}{'max s':>8}")
    print(row("bare python on the harness (baseline)", times["bare"]))
    print(row("tracework capture fennel", times["ours"]))
    print(row("  of it: one sandboxed run (library)", times["sandboxed"]))
    print(row("tracework capture env fennel (cached)", times["env"]))
    ratio = statistics.median(times["ours"]) / statistics.median(times["bare"])
    sandbox = statistics.median(times["sandboxed"]) / statistics.median(times["bare"])
    verdict = "PASS" if ratio <= 1.3 else "MISS"
    print(
        f"ratio capture / bare: {ratio:.2f}x (goal <= 1.3x: {verdict}); "
        f"sandboxed run / bare: {sandbox:.2f}x"
    )
    overhead = statistics.median(times["ours"]) - statistics.median(times["bare"])
    print(f"fixed cost of a capture over the bare run: {overhead:.2f} s (median)")
    print("cached environment: nothing installed in any run (capture env said built: false)")
    print(row("uv venv on the host (the unisolated build)", times["plain"]))
    print(row("tracework capture env fennel --rebuild", times["build"]))
    build = statistics.median(times["build"]) / statistics.median(times["plain"])
    extra = statistics.median(times["build"]) - statistics.median(times["plain"])
    print(f"isolated build / unisolated: {build:.1f}x, {extra:.2f} s more (median)")


if __name__ == "__main__":
    main()
