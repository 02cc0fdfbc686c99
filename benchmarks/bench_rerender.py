"""Benchmark `tracework rerender`: batch cost per report, parallelism, no-op re-runs,
and the first-change search.

Part 1 (``--reports N``, default 8; the issue's figure is for 40): a synthetic subject
with one new commit and N small reports on it.  In one run it times
  * the naive loop a shell script would run: `papermill` then `jupyter nbconvert --to
    html` per report (the baseline);
  * `tracework rerender --all --commit NEW -j 1` and `-j 2` (each after removing the
    previous output, so every report renders; ``--repeat R``, at least and by default 5,
    alternates them R times and prints the minimum, median and maximum, so that a run
    that stalls cannot hide behind a good one; the targets are judged on the medians);
  * a no-op `tracework rerender --all --commit NEW` (everything skipped), R times.
Beside each wall time it prints the CPU seconds of all the processes involved and the
load average: the machine may be shared, and the CPU figures are what noise changes
least.
Part 2 (``--commits 1000 --quotes 100``): a linear history of that many commits in
which the quoted spans change at known commits; times the first-change search for
all quotes and checks that every culprit found is the commit that changed it.

Part 3, alone (``--dask``, with the ``dask`` extra): the part-1 batch on a local Dask
cluster of two single-threaded workers (``dask scheduler`` and ``dask worker`` processes,
started once and warmed by one batch), against the local executor at ``-j 2`` on the
same two cores.  It alternates, R times each, the local batch, the Dask batch whose tasks
carry their inputs (the default), and the Dask batch on the shared workspace
(``--shared-workspace``); it prints min / median / max, the CPU of every process
(the workers and their kernels included), the ratios and the load average.  The target is
what carrying the inputs costs: the shipped batch within 1.25x the shared one.  Against
the local executor the ratio is printed without a target: both run on the same two cores,
each worker with a kernel booted ahead.

A benchmark never fails on time: it prints ratios and PASS/MISS against the targets, and
last the machine's load average at the start and at the end.

    .venv/bin/python benchmarks/bench_rerender.py [--reports 40] [--repeat 5] [--skip-batch]
    .venv/bin/python benchmarks/bench_rerender.py --dask [--reports 40] [--repeat 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat

BIN = Path(sys.executable).parent
ENV = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
ENV.update(
    GIT_CONFIG_NOSYSTEM="1",
    GIT_CONFIG_GLOBAL="/dev/null",
    GIT_AUTHOR_NAME="Bench",
    GIT_AUTHOR_EMAIL="bench@example.invalid",
    GIT_COMMITTER_NAME="Bench",
    GIT_COMMITTER_EMAIL="bench@example.invalid",
)


def git(repo: Path, *args: str, when: int | None = None) -> str:
    env = dict(ENV)
    if when is not None:
        env.update(GIT_AUTHOR_DATE=f"@{when} +0000", GIT_COMMITTER_DATE=f"@{when} +0000")
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def tw(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "tracework"), *args], cwd=ws, capture_output=True, text=True, check=False
    )


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measured(fn) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    """Wall seconds, CPU seconds of the (waited-for) child processes, 1-minute load."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = timed(fn)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, os.getloadavg()[0]


# -- part 1: batch renders ---------------------------------------------------------------


def build_batch(root: Path, reports: int) -> tuple[Path, str]:
    repo = root / "subject"
    (repo / "pkg").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for n in range(reports):
        (repo / "pkg" / f"mod{n}.py").write_text(
            f"def handler_{n}(event):\n    return event.get('k{n}')\n\n\nLIMIT_{n} = {n}\n"
        )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first", when=1767225600)
    first = git(repo, "rev-parse", "HEAD")
    ws = root / "ws"
    subprocess.run([str(BIN / "tracework"), "init", str(ws)], check=True, capture_output=True)
    for args in (("subject", "add", "bench", str(repo)), ("fetch", "bench")):
        assert tw(ws, *args).returncode == 0
    for n in range(reports):
        name = f"r{n:02d}"
        assert tw(ws, "new", name, "--subject", "bench", "--commit", first).returncode == 0
        nb = nbformat.read(ws / "notebooks" / f"{name}.ipynb", as_version=4)
        nb.cells.insert(
            4,
            nbformat.v4.new_code_cell(
                f'q = src.quote("pkg/mod{n}.py", symbol="handler_{n}")\n'
                f'wb.component("RT-CMP-h{n}", label="Handler {n}", identity="`handler_{n}`", '
                "evidence=[q]);"
            ),
        )
        nbformat.write(nb, ws / "notebooks" / f"{name}.ipynb")
        assert (
            tw(ws, "quote", name, "SRC-1", f"pkg/mod{n}.py", "--symbol", f"handler_{n}").returncode
            == 0
        )
    # one new commit that edits a quarter of the quoted functions
    for n in range(0, reports, 4):
        path = repo / "pkg" / f"mod{n}.py"
        path.write_text(path.read_text().replace(f"'k{n}'", f"'key{n}'"))
    git(repo, "commit", "-q", "-am", "rename keys", when=1767229200)
    assert tw(ws, "fetch", "bench").returncode == 0
    return ws, git(repo, "rev-parse", "HEAD")


def batch(reports: int, repeat: int) -> list[str]:
    verdicts = []
    with tempfile.TemporaryDirectory() as tmp:
        ws, new = build_batch(Path(tmp), reports)
        names = sorted(p.stem for p in (ws / "notebooks").glob("*.ipynb"))
        out = Path(tmp) / "naive"
        out.mkdir()

        def naive() -> None:
            for name in names:
                executed = out / f"{name}.ipynb"
                subprocess.run(
                    [
                        str(BIN / "papermill"),
                        f"notebooks/{name}.ipynb",
                        str(executed),
                        "-k",
                        "tracework",
                        "-r",
                        "register",
                        name,
                        "-r",
                        "commit",
                        new,
                        "-r",
                        "mode",
                        "render",
                        "--no-progress-bar",
                    ],
                    cwd=ws,
                    check=True,
                    capture_output=True,
                )
                subprocess.run(
                    [
                        str(BIN / "jupyter"),
                        "nbconvert",
                        "--to",
                        "html",
                        "--no-input",
                        str(executed),
                    ],
                    check=True,
                    capture_output=True,
                )

        def rerender(jobs: int) -> tuple[float, float, float]:
            shutil.rmtree(ws / "reports", ignore_errors=True)
            (ws / "reports").mkdir()
            run = measured(lambda: tw(ws, "rerender", "--all", "--commit", new, "-j", str(jobs)))
            rendered = len(list((ws / "reports").glob("r*/" + new[:12] + "/report.html")))
            assert rendered == reports, f"only {rendered} of {reports} reports rendered"
            print(f"  -j {jobs}: {run[0]:6.2f} s wall, {run[1]:6.2f} s CPU, load {run[2]:.2f}")
            return run

        print(f"\nbatch of {reports} reports (one new commit):")
        naive_s, naive_cpu, naive_load = measured(naive)
        print(f"  naive: {naive_s:6.2f} s wall, {naive_cpu:6.2f} s CPU, load {naive_load:.2f}")
        runs: dict[int, list[tuple[float, float, float]]] = {1: [], 2: []}
        for _ in range(repeat):
            for jobs in (1, 2):
                runs[jobs].append(rerender(jobs))
        noops = [
            measured(lambda: tw(ws, "rerender", "--all", "--commit", new))[0] for _ in range(repeat)
        ]
    one, two = (statistics.median(r[0] for r in runs[j]) for j in (1, 2))
    worst_two = max(r[0] for r in runs[2])
    cpu_one, cpu_two = (statistics.median(r[1] for r in runs[j]) for j in (1, 2))
    per_naive, per_one, per_two = naive_s / reports, one / reports, two / reports
    print(f"\nbatch of {reports} reports ({repeat} runs each; seconds min / median / max;")
    print("CPU: every process, median, per report):")
    print(
        f"  naive loop (papermill + nbconvert CLIs): {naive_s:7.1f} s (one run)"
        f"  {per_naive:5.2f} s/report  CPU {naive_cpu / reports:5.2f} s/report"
    )
    for jobs, median, cpu, note in (
        (1, one, cpu_one, f"{per_naive / per_one:.1f}x the loop's speed"),
        (2, two, cpu_two, f"{per_naive / per_two:.1f}x; -j 2 / -j 1 = {two / one:.2f}"),
    ):
        print(
            f"  tracework rerender -j {jobs}: {spread([r[0] for r in runs[jobs]])} s"
            f"  {median / reports:5.2f} s/report  CPU {cpu / reports:5.2f} s/report  ({note})"
        )
    print(f"  no-op re-run of all {reports}: {spread(noops)} s")
    noop = statistics.median(noops)
    verdicts.append(f"per report ≤ 0.5 s: {'PASS' if per_two <= 0.5 else 'MISS'} ({per_two:.2f} s)")
    verdicts.append(
        f"≥ 8x the naive loop: {'PASS' if per_naive / per_two >= 8 else 'MISS'}"
        f" ({per_naive / per_two:.1f}x; slowest run {per_naive * reports / worst_two:.1f}x)"
    )
    verdicts.append(
        f"-j 2 / -j 1 ≤ 0.7: {'PASS' if two / one <= 0.7 else 'MISS'} ({two / one:.2f})"
    )
    verdicts.append(f"no-op under 2 s: {'PASS' if noop < 2 else 'MISS'} ({noop:.2f} s)")
    return verdicts


# -- part 2: first-change search ------------------------------------------------------------


def bisection(commits: int, quotes: int) -> list[str]:
    from tracework.drift.first_change import first_changes
    from tracework.git.mirror import Mirror

    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "long"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        files = 20
        spans = {q: (f"f{q % files}.py", f"quoted_{q} = {q}\n") for q in range(quotes)}
        for f in range(files):
            body = "".join(t for (p, t) in spans.values() if p == f"f{f}.py")
            (repo / f"f{f}.py").write_text("# filler\n" * 50 + body)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "pin", when=1767225600)
        pin = git(repo, "rev-parse", "HEAD")
        change_at = {q: rng.randrange(1, commits) for q in range(quotes)}
        by_commit: dict[int, list[int]] = {}
        for q, c in change_at.items():
            by_commit.setdefault(c, []).append(q)
        stream = []
        current = {f"f{f}.py": (repo / f"f{f}.py").read_text() for f in range(files)}
        for c in range(1, commits):
            touched = {}
            for q in by_commit.get(c, []):
                path, text = spans[q]
                current[path] = current[path].replace(text, text.replace(" = ", " = 10 * "))
                touched[path] = current[path]
            if not touched:  # noise: a comment line changes in a file nobody quotes
                touched["noise.txt"] = f"{c}\n"
            stream.append("commit refs/heads/main\n")
            stream.append(f"mark :{c}\n")
            stream.append(f"committer Bench <bench@example.invalid> {1767225600 + c} +0000\n")
            msg = f"commit {c}\n"
            stream.append(f"data {len(msg)}\n{msg}")
            if c == 1:
                stream.append(f"from {pin}\n")
            for path, content in touched.items():
                data = content.encode()
                stream.append(f"M 100644 inline {path}\ndata {len(data)}\n")
                stream.append(data.decode() + "\n")
        subprocess.run(
            ["git", "fast-import", "--quiet"],
            cwd=repo,
            env=ENV,
            check=True,
            input="".join(stream),
            text=True,
        )
        target = git(repo, "rev-parse", "main")
        marks = git(repo, "rev-list", "--reverse", f"{pin}..{target}").split()
        mirror = Mirror(repo / ".git")
        line_of = {}  # each quoted line's number at the pin: after the 50 filler lines
        for f in range(files):
            mine = [q for q, (p, _t) in spans.items() if p == f"f{f}.py"]
            line_of.update({q: 51 + n for n, q in enumerate(mine)})
        wanted = {
            f"Q{q}": (path, None, text.encode(), (line_of[q], line_of[q]))
            for q, (path, text) in spans.items()
        }
        seconds = timed(lambda: found.update(first_changes(mirror, pin, target, wanted)))
        wrong = [q for q in range(quotes) if found[f"Q{q}"][0] != marks[change_at[q] - 1]]
    print(
        f"\nfirst-change search: {quotes} quotes over {commits} commits in {seconds:.2f} s; "
        f"{quotes - len(wrong)} of {quotes} culprits exact"
    )
    return [
        f"bisection under 5 s: {'PASS' if seconds < 5 and not wrong else 'MISS'} ({seconds:.2f} s)"
    ]


found: dict[str, tuple[str | None, str | None]] = {}


# -- part 3: on a Dask cluster -------------------------------------------------------------


def tree_cpu(pids: list[int]) -> float:
    """CPU seconds of these processes and all their descendants, living and reaped."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            stats[int(entry)] = fields
            children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0, list(pids)
    while todo:
        pid = todo.pop()
        fields = stats.get(pid)
        if fields is not None:  # utime, stime, cutime, cstime
            total += sum(int(f) for f in fields[11:15])
        todo += children.get(pid, [])
    return total / tick


@contextlib.contextmanager
def dask_cluster(root: Path, workers: int) -> Iterator[tuple[str, list[int]]]:
    """A ``dask scheduler`` and ``workers`` single-threaded ``dask worker`` processes on
    loopback: the scheduler's address and the workers' process ids."""
    info = root / "scheduler.json"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0"]
    scheduler += ["--no-dashboard", "--scheduler-file", str(info)]
    processes = [subprocess.Popen(scheduler, **quiet)]  # type: ignore[call-overload]
    try:
        while not (info.is_file() and info.stat().st_size):
            time.sleep(0.05)
        address = json.loads(info.read_text())["address"]
        for n in range(workers):
            local = root / f"worker-{n}"
            local.mkdir()
            command = [str(BIN / "dask"), "worker", address, "--nthreads", "1", "--no-nanny"]
            command += ["--no-dashboard", "--local-directory", str(local)]
            processes.append(subprocess.Popen(command, **quiet))  # type: ignore[call-overload]
        from distributed import Client

        with Client(address, timeout=30) as client:
            client.wait_for_workers(workers, timeout=120)
        yield address, [p.pid for p in processes[1:]]
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in reversed(processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def on_dask(reports: int, repeat: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        ws, new = build_batch(Path(tmp), reports)
        with dask_cluster(Path(tmp), 2) as (address, workers):
            on_cluster = ("--executor", "dask", "--scheduler", address)
            modes = {
                "local -j 2": ("-j", "2"),
                "dask, tasks carry their inputs": on_cluster,
                "dask, shared workspace": (*on_cluster, "--shared-workspace"),
            }

            def batch_on(args: tuple[str, ...]) -> tuple[float, float, float]:
                shutil.rmtree(ws / "reports", ignore_errors=True)
                (ws / "reports").mkdir()
                before = tree_cpu(workers)
                wall, cpu, load = measured(
                    lambda: tw(ws, "rerender", "--all", "--commit", new, *args)
                )
                cpu += tree_cpu(workers) - before
                rendered = len(list((ws / "reports").glob("r*/" + new[:12] + "/report.html")))
                assert rendered == reports, f"only {rendered} of {reports} reports rendered"
                return wall, cpu, load

            batch_on(modes["dask, tasks carry their inputs"])  # the workers' first imports
            runs: dict[str, list[tuple[float, float, float]]] = {mode: [] for mode in modes}
            for _ in range(repeat):
                for mode, args in modes.items():
                    runs[mode].append(batch_on(args))
                    wall, cpu, load = runs[mode][-1]
                    print(f"  {mode}: {wall:6.2f} s wall, {cpu:6.2f} s CPU, load {load:.2f}")
    medians = {m: statistics.median(r[0] for r in runs[m]) for m in modes}
    loads = [r[2] for m in modes for r in runs[m]]
    print(f"\n{reports} reports on 2 Dask workers (1 thread each) against -j 2 ({repeat} runs")
    print("each, alternated; seconds min / median / max; CPU of every process, median):")
    for mode in modes:
        cpu = statistics.median(r[1] for r in runs[mode])
        print(
            f"  {mode:<32} {spread([r[0] for r in runs[mode]])} s"
            f"  {medians[mode] / reports:5.2f} s/report  CPU {cpu / reports:5.2f} s/report"
        )
    local, shipped, shared = medians.values()
    cpus = [statistics.median(r[1] for r in runs[m]) for m in modes]
    print(f"  dask (tasks carry their inputs) / local -j 2: {shipped / local:.2f}")
    print(f"  dask (shared workspace) / local -j 2: {shared / local:.2f}")
    print(f"  carrying the inputs / shared workspace: {shipped / shared:.2f}")
    one, two, three = cpus[1] / cpus[0], cpus[2] / cpus[0], cpus[1] / cpus[2]
    print(f"  the same in CPU: {one:.2f}, {two:.2f}, {three:.2f}")
    print(f"  load average during the runs: {min(loads):.2f}–{max(loads):.2f}")
    verdict = "PASS" if shipped / shared <= 1.25 else "MISS"
    return [
        f"tasks carrying their inputs ≤ 1.25x the shared workspace: {verdict}"
        f" ({shipped / shared:.2f}x)",
        f"dask / local -j 2: {shipped / local:.2f}x (no target: the same two cores either way)",
    ]


def spread(samples: list[float]) -> str:
    """Minimum / median / maximum: a bimodal run cannot hide behind one good sample."""
    return f"{min(samples):6.2f} / {statistics.median(samples):6.2f} / {max(samples):6.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=8)
    parser.add_argument(
        "--repeat", type=int, default=5, help="-j 1 and -j 2 runs, alternated (at least 5)"
    )
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--quotes", type=int, default=100)
    parser.add_argument("--skip-batch", action="store_true")
    parser.add_argument(
        "--dask", action="store_true", help="part 3 alone: the batch on a local Dask cluster"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="allow fewer than 5 runs (a check that it runs)"
    )
    args = parser.parse_args()
    if args.repeat < 5 and not args.skip_batch and not args.smoke:
        parser.error("--repeat: at least 5 runs, so that the spread shows")
    load_start = os.getloadavg()
    if args.dask:
        verdicts = on_dask(args.reports, args.repeat)
    else:
        verdicts = bisection(args.commits, args.quotes)
        if not args.skip_batch:
            verdicts += batch(args.reports, args.repeat)
    print("\ntargets: " + " · ".join(verdicts))
    load_end = os.getloadavg()
    print(f"load average {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end (1 min)")


if __name__ == "__main__":
    main()
