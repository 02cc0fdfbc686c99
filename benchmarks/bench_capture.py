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

A capture's fixed cost is the difference of the two medians: what `tracework capture`
adds to a harness whatever the harness does (goal: ≤ 0.25 s).  So that it is seen
beside a harness of some length, the same pair is timed on a harness that runs 1 s
(`--second`; it sleeps, so the machine's load does not stretch it): a capture `second`
of the same subject, commit and environment, in a workspace of its own made for the
run (a copy of the capture's declaration, subject, register and mirror, in a temporary
folder) — goal: the capture ≤ 1.3× the bare run.

What isolating the build costs: `capture env fennel --rebuild` (the whole command: the
sandbox, the registry proxy, uv inside, the seal) against `uv venv` of the same base
Python run on the host, which is all the unisolated build did for an environment of no
package.

Prints min/median/max over N runs (default 7), PASS or MISS for each goal, and the
machine's load average at the start and the end.  Run `make demo` first (it fetches
Fennel and builds the environment); `--workspace` and `--capture` name another
workspace and capture (a test runs this at a tiny size on a copy of the demo).
Where `PYTHONDONTWRITEBYTECODE` is set, an editable install compiles tracework's
modules from source at every start, which an installed wheel (its bytecode compiled
when installed) never does: the `tracework` commands are then timed with their bytecode
kept in a temporary folder (`PYTHONPYCACHEPREFIX`), as installed, and the first line
says so; `--from-source` times them compiled at every start instead.

    .venv/bin/python benchmarks/bench_capture.py [--runs 7] [--second 1.0] [--from-source]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

#: The goals of issue #27: what a capture adds to any harness, and a 1 s harness captured.
FIXED_GOAL = 0.25
SECOND_GOAL = 1.3

#: The harness of the timed 1 s capture: one case, after ``SECONDS`` asleep.
SECOND_HARNESS = '''\
"""A harness whose run takes {seconds:g} s: it sleeps, so load does not stretch it."""

import time

from tracework_harness import capture

with capture.case("S-01", "Does a harness of {seconds:g} s run as long captured?") as c:
    time.sleep({seconds!r})
    c.record("slept", {seconds!r})
    c.check("it slept", holds=True, observed="{seconds:g} s")
'''


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


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def second_workspace(root: Path, name: str, into: Path, seconds: float) -> Path:
    """A workspace holding capture ``second``: capture ``name``'s declaration with a
    harness of ``seconds`` s, its subject (definition and mirror) and register."""
    from tracework.capture.config import load_config
    from tracework.workspace import Workspace

    ws = Workspace(root)
    config, raw = load_config(ws, name)
    shutil.copy(root / "tracework.toml", into / "tracework.toml")
    for rel in (f"sources/{config.subject}.toml", f"registers/{config.register_name}.yaml"):
        (into / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / rel, into / rel)
    mirror = ws.mirror_dir(config.subject)
    shutil.copytree(mirror, into / mirror.relative_to(root), symlinks=True)
    (into / "captures").mkdir()
    (into / "captures" / "second.toml").write_bytes(raw)
    (into / "captures" / "second.py").write_text(
        SECOND_HARNESS.format(seconds=seconds), encoding="utf-8"
    )
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--second", type=float, default=1.0, help="the long harness's seconds")
    parser.add_argument("--workspace", type=Path, default=ROOT)
    parser.add_argument("--capture", default="fennel")
    parser.add_argument(
        "--from-source",
        action="store_true",
        help="under PYTHONDONTWRITEBYTECODE, compile tracework at every start (not as installed)",
    )
    args = parser.parse_args()
    root = args.workspace.resolve()
    name = args.capture
    load_start = os.getloadavg()

    from tracework.capture import isolation, pipeline
    from tracework.capture.config import load_config
    from tracework.capture.environment import cached_environment
    from tracework.capture.interpreter import uv_bin as pipeline_uv
    from tracework.capture.registry import registry_setting
    from tracework.capture.tree import export_tree
    from tracework.git.subjects import open_mirror
    from tracework.workspace import Workspace

    ws = Workspace(root)
    config, _ = load_config(ws, name)
    if not ws.mirror_dir(config.subject).exists():
        sys.exit("run `make demo` first: the benchmark captures the demo's Fennel")
    scratch = Path(tempfile.mkdtemp(prefix="bench-capture-"))
    ours_env = dict(os.environ)
    kept = bool(os.environ.get("PYTHONDONTWRITEBYTECODE")) and not args.from_source
    if kept:
        ours_env.pop("PYTHONDONTWRITEBYTECODE", None)
        ours_env["PYTHONPYCACHEPREFIX"] = str(scratch / "bytecode")
    try:
        tracework = str(BIN / "tracework")
        env_json = json.loads(
            command(tracework, "capture", "env", name, "--json", env=ours_env, cwd=root)()
        )
        if env_json["built"]:
            print("(the environment was built now; the timed runs below reuse it)")
        mirror = open_mirror(ws, config.subject)
        tree = export_tree(mirror, config.commit)
        env = cached_environment(config, tree, name, registry_setting(ws.settings()))
        harness_path = ws.captures / f"{name}.py"
        harness = harness_path.read_bytes()
        backend = isolation.choose(pipeline.isolation_setting(ws))
        bare_env = {
            "PATH": f"{env.venv / 'bin'}:/usr/bin:/bin",
            "PYTHONHASHSEED": "0",
            "PYTHONPATH": f"{isolation.HARNESS_LIB}:{tree}",
        }

        def bare_on(path: Path) -> Callable[[], str]:
            return command(
                env.interpreter.path,
                "-s",
                "-B",
                "-P",  # as the runner does: the harness's own folder is not on the path
                str(path),
                env=bare_env,
                cwd=tree,
            )

        bare = bare_on(harness_path)
        ours = command(tracework, "capture", name, env=ours_env, cwd=root)
        long_root = second_workspace(root, name, Path(tempfile.mkdtemp(dir=scratch)), args.second)
        bare_long = bare_on(long_root / "captures" / "second.py")
        ours_long = command(tracework, "capture", "second", env=ours_env, cwd=long_root)
        long_env = json.loads(
            command(tracework, "capture", "env", "second", "--json", env=ours_env, cwd=long_root)()
        )
        rebuild = command(
            tracework, "capture", "env", name, "--rebuild", "--json", env=ours_env, cwd=root
        )
        plain_venv = command(
            str(Path(pipeline_uv())),
            "venv",
            "--quiet",
            "--no-config",
            "--clear",
            "--python",
            env.interpreter.path,
            str(scratch / "venv"),
        )
        sandboxed = lambda: pipeline._run_once(config, name, harness, tree, env, backend)  # noqa: E731
        cached_env = command(tracework, "capture", "env", name, "--json", env=ours_env, cwd=root)

        ours()  # warm the file cache once (and write the bytecode kept)
        ours_long()
        times: dict[str, list[float]] = {
            "bare": [],
            "ours": [],
            "sandboxed": [],
            "env": [],
            "bare_long": [],
            "ours_long": [],
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
            times["bare_long"].append(timed(bare_long))
            times["ours_long"].append(timed(ours_long))
        for _ in range(max(3, args.runs // 2) if args.runs >= 3 else 1):
            times["plain"].append(timed(plain_venv))
            times["build"].append(timed(rebuild))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    median = {k: statistics.median(v) for k, v in times.items()}
    load_end = os.getloadavg()
    bytecode = (
        "tracework's bytecode kept in a temporary folder, as installed"
        if kept
        else "tracework compiled from source at every start (--from-source)"
        if os.environ.get("PYTHONDONTWRITEBYTECODE")
        else "bytecode as Python keeps it"
    )
    print(
        f"{config.subject} at {config.commit[:12]}, isolation {backend}, {args.runs} runs each, "
        f"{bytecode}; load average {load_start[0]:.2f} at the start, {load_end[0]:.2f} at "
        f"the end (1 min; {load_end[1]:.2f} over 5 min), {os.cpu_count()} CPUs"
    )
    print(f"{'':44}{'min s':>8}{'median s':>9}{'max s':>8}")
    print(row("bare python on the harness (baseline)", times["bare"]))
    print(row(f"tracework capture {name}", times["ours"]))
    print(row("  of it: one sandboxed run (library)", times["sandboxed"]))
    print(row(f"tracework capture env {name} (cached)", times["env"]))
    print(row(f"bare python on a {args.second:g} s harness (baseline)", times["bare_long"]))
    print(row(f"tracework capture of the {args.second:g} s harness", times["ours_long"]))
    fixed = median["ours"] - median["bare"]
    print(
        f"fixed cost of a capture (capture - bare, medians): {fixed:.3f} s; "
        f"fixed cost <= {FIXED_GOAL} s: {verdict(fixed <= FIXED_GOAL)}"
    )
    long_ratio = median["ours_long"] / median["bare_long"]
    print(
        f"{args.second:g} s harness: capture / bare {long_ratio:.2f}x, "
        f"{median['ours_long'] - median['bare_long']:.3f} s more; "
        f"{args.second:g} s harness <= {SECOND_GOAL}x bare: {verdict(long_ratio <= SECOND_GOAL)}"
    )
    print(
        f"short harness: capture / bare {median['ours'] / median['bare']:.2f}x; "
        f"sandboxed run / bare {median['sandboxed'] / median['bare']:.2f}x"
    )
    reused = "" if not long_env["built"] else " (the 1 s capture's was built once, first)"
    print(f"cached environment: nothing installed in any run{reused}")
    print(row("uv venv on the host (the unisolated build)", times["plain"]))
    print(row(f"tracework capture env {name} --rebuild", times["build"]))
    build = median["build"] / median["plain"]
    extra = median["build"] - median["plain"]
    print(f"isolated build / unisolated: {build:.1f}x, {extra:.2f} s more (median)")


if __name__ == "__main__":
    main()
