"""Benchmark ``tracework check`` against the minimum work reading the same blobs takes.

What it does, in one run:

1. builds a synthetic git repository in a temp folder with plain git: ``--files``
   Python modules of about 5 KB in a few dozen folders, committed at fixed dates (so
   commit ids are stable), then a second commit that edits ~2% of the files inside a
   quoted span, inserts lines above the quotes of another ~2%, renames ~1% and
   deletes ~0.2%; the objects are repacked so blobs are packed, as in a real clone;
2. makes a tracework workspace with the CLI (``init``, ``subject add``, ``fetch``,
   ``register new``, ``register add-source``, one ``register add-file`` with a glob),
   then adds ``--quotes`` quotes in ONE register write through the library (calling
   ``tracework quote`` ten thousand times would take longer than everything else):
   most are plain line ranges, some anchored on a function (``symbol``), some on a
   unique substring (``match``);
3. times, interleaved, ``--repeat`` times after one untimed warm-up round:

   * the baseline, the minimum work: a separate ``python -c`` process (so interpreter
     start-up is counted on both sides) running one ``git ls-tree -r -z`` and ONE
     ``git cat-file --batch --buffer`` pass over the pin's blobs, and hashlib SHA-256
     of each blob;
   * ``tracework check REGISTER --json`` (exit 0 expected: everything verified);
   * ``tracework check REGISTER --at <second commit> --json`` (exit 1 expected: drift),
     whose JSON counts are compared with what the generator changed;

   with peak memory from ``/usr/bin/time -v`` when present, else from
   ``getrusage(RUSAGE_CHILDREN)`` inside a short-lived probe process per run;
4. prints a table (best and median seconds, ratio to the baseline, peak RSS) and a
   final PASS/MISS line for each target of the issue: ``check`` ≤ 2× the baseline and
   under 5 s, ``check --at`` ≤ 3× the baseline.  Verdicts use the median.

``--monorepo`` is the issue's monorepo: modules of about 1 KB (two functions each, so
at most two quotes a file), a second commit touching 1% of the files (the same kinds of
drift, in the same proportions), and a fourth command timed with the others, from the
command line as an analyst runs it: ``tracework register add-file`` of one glob
registering every file, into a register of its own holding only the source (restored
before each run, so each run registers them all; start-up included).  Its targets:
``check`` ≤ 2× the baseline, ``check --at`` ≤ 3× the baseline, the ``add-file`` ≤ 3×
the ``check``.  It runs at each of ``--sizes`` (default: a quarter, a half and all of
``--files``, the quotes in proportion), each size built afresh, and ends with the peak
RSS of each command at each size, its growth in MiB per 10,000 files (from the smallest
size to the largest) and whether that growth is linear: PASS when no step between two
consecutive sizes grows faster than 1.25× the first step's MiB per 10,000 files, plus
1 MiB per 10,000 files for the noise of a peak RSS (faster growth, as a quadratic's,
is a MISS; slower is fine).  The verdicts of the largest size are repeated last.

The quotes are written in one write as the full edit would write them, without its
round trip (minutes and gigabytes at 200,000 quotes): their entries dumped by
tracework's own writer a few thousand at a time, as a notebook cell's splice dumps
them, in place of the empty ``quotes: {}``, the register validated with them, and its
compiled copy and splice record left as a write leaves them; the first entries are read
back as the quotes they were made from.

A benchmark never fails on time: it exits 0 whatever the figures, and 1 only when
something went wrong (a command failed, its JSON did not parse, counts were off).

    .venv/bin/python benchmarks/bench_check.py                        # full size
    .venv/bin/python benchmarks/bench_check.py --files 200 --quotes 400  # smoke test
    .venv/bin/python benchmarks/bench_check.py --keep /tmp/bench   # keep the build and outputs
    .venv/bin/python benchmarks/bench_check.py --from-source   # tracework compiled each start
    .venv/bin/python benchmarks/bench_check.py --monorepo --files 100000 --quotes 200000
    .venv/bin/python benchmarks/bench_check.py --monorepo --files 200 --quotes 400 \\
        --sizes 100,150,200 --repeat 1                              # its smoke test
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tracework.fsio import write_atomic
from tracework.hashing import Lines, sha256_hex
from tracework.readers import load_yaml
from tracework.register import append, store
from tracework.register.models import Anchor, Quote, Register
from tracework.register.quotes import make_quote
from tracework.register.spans import Span

SEED = 20260101
BASE_EPOCH = 1767225600  # 2026-01-01T00:00:00Z; each commit one hour later
FUNCTIONS_PER_FILE = 12
STEPS_PER_FUNCTION = (5, 10)  # arithmetic lines per function, inclusive; ~5 KB per file
FILES_PER_FOLDER = 125
SUBJECT, REGISTER, SOURCE = "synth", "bench", "SRC-1"
FILES_REGISTER = "files"  # --monorepo: the register `add-file` fills on each timed run
GLOB = "src/**/*.py"

# Share of files each kind of drift touches in the second commit (disjoint sets).
EDITED, SHIFTED, RENAMED, DELETED = 0.02, 0.02, 0.01, 0.002
INSERTED_LINES = 3
# Share of quotes anchored on a symbol or a match; the rest are plain line ranges.
SYMBOL_SHARE, MATCH_SHARE = 0.15, 0.10

TARGET_CHECK_RATIO, TARGET_CHECK_SECONDS, TARGET_AT_RATIO = 2.0, 5.0, 3.0

# --monorepo: two functions a module (about 1 KB), and a second commit touching 1% of
# the files, the kinds of drift in the proportions above.
MONO_FUNCTIONS = 2
MONO_SHARES = (0.0038, 0.0038, 0.0019, 0.0005)
TARGET_REGISTER_RATIO = 3.0  # `register add-file` of the glob, against one `check`
# memory grows linearly: no step faster than this times the first, plus the noise
LINEAR_SLACK, NOISE_MIB = 1.25, 1.0  # MiB per 10,000 files

QUOTE_CHUNK = 5000  # quote entries dumped at a time

# The baseline: one ls-tree, ONE cat-file --batch --buffer pass, SHA-256 of each blob.
BASELINE = """\
import hashlib, subprocess, sys
git_dir, commit = sys.argv[1], sys.argv[2]
git = ["git", "--git-dir=" + git_dir]
tree = subprocess.run(
    [*git, "ls-tree", "-r", "-z", "--full-tree", commit], capture_output=True, check=True
).stdout
oids = [r.split(b" ", 2)[2].split(b"\\t", 1)[0] for r in tree.split(b"\\0") if b" blob " in r]
out = subprocess.run(
    [*git, "cat-file", "--batch", "--buffer"],
    input=b"\\n".join(oids) + b"\\n", capture_output=True, check=True,
).stdout
view, pos, digests = memoryview(out), 0, []
while pos < len(out):
    eol = out.index(b"\\n", pos)
    size = int(out[pos:eol].rsplit(b" ", 1)[1])
    digests.append(hashlib.sha256(view[eol + 1 : eol + 1 + size]).hexdigest())
    pos = eol + 2 + size
print(len(digests))
"""

# Fallback memory probe: runs the command, then reports wall time and the peak RSS of
# its process tree (RUSAGE_CHILDREN is a max over the probe's children, so one probe
# process per measured run).
PROBE = """\
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.run(sys.argv[2:]).returncode
seconds = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(sys.argv[1], "w") as out:
    out.write(f"{seconds} {rss}")
sys.exit(code)
"""

GNU_TIME = Path("/usr/bin/time")


class BenchError(Exception):
    """Something went wrong: the benchmark's figures would mean nothing."""


# -- the synthetic repository ------------------------------------------------------------


@dataclass(frozen=True)
class Function:
    """A generated function: ``def`` line, its arithmetic step lines, ``return`` line."""

    name: str
    first: int  # the def line
    step_first: int  # line of step 0
    steps: int
    last: int  # the return line

    def step_line(self, k: int) -> int:
        return self.step_first + k


@dataclass
class Module:
    """One generated Python file at the first commit."""

    index: int
    path: str
    lines: list[str]
    functions: list[Function]

    @property
    def tag(self) -> str:
        return f"m{self.index}"

    def data(self) -> bytes:
        return "".join(self.lines).encode()


def make_module(
    index: int, path: str, rng: random.Random, functions: int = FUNCTIONS_PER_FILE
) -> Module:
    """A module of ``functions`` functions (about 5 KB for 12, 1 KB for 2) whose every
    line carries a unique ``[m.. f.. s..]`` tag.

    Unique lines make every quote's bytes unique, so the drift each one suffers has
    one expected outcome.
    """
    tag = f"m{index}"
    lines = [
        f'"""Synthetic module {index} for the tracework check benchmark."""\n',
        "\n",
        "from __future__ import annotations\n",
        "\n",
        f"LIMIT = {rng.randrange(1000, 9999)}  # [{tag} limit]\n",
    ]
    made = []
    for j in range(functions):
        lines += ["\n", "\n"]
        name = f"func_{index}_{j}"
        first = len(lines) + 1
        lines.append(f"def {name}(x: int, y: int) -> int:\n")
        lines.append(f'    """Arithmetic, step by step ({tag} f{j})."""\n')
        steps = rng.randint(*STEPS_PER_FUNCTION)
        step_first = len(lines) + 1
        lines.append(f"    v0 = x * {rng.randrange(2, 99)} + y  # [{tag} f{j} s0]\n")
        for k in range(1, steps):
            a, b = rng.randrange(2, 99), rng.randrange(1, 999)
            lines.append(f"    v{k} = v{k - 1} * {a} + {b}  # [{tag} f{j} s{k}]\n")
        lines.append(f"    return v{steps - 1} % LIMIT  # [{tag} f{j} end]\n")
        made.append(Function(name, first, step_first, steps, len(lines)))
    return Module(index, path, lines, made)


def make_modules(
    count: int, rng: random.Random, functions: int = FUNCTIONS_PER_FILE
) -> list[Module]:
    folders = max(2, round(count / FILES_PER_FOLDER))
    return [
        make_module(i, f"src/pkg{i % folders:02d}/mod_{i:05d}.py", rng, functions)
        for i in range(count)
    ]


QuoteKind = Literal["lines", "symbol", "match"]


@dataclass(frozen=True)
class PlannedQuote:
    """A quote to add: where it is at the pin and how it is anchored."""

    qid: str
    module: int
    kind: QuoteKind
    first: int
    last: int
    symbol: str | None = None
    match: str | None = None
    context: int = 0

    def anchor(self) -> Anchor | None:
        if self.symbol is not None:
            return Anchor(symbol=self.symbol)
        if self.match is not None:
            return Anchor(match=self.match, context=self.context)
        return None


def plan_quotes(modules: list[Module], count: int, rng: random.Random) -> list[PlannedQuote]:
    """``count`` quotes spread evenly over the files, each in a function of its own."""
    functions = len(modules[0].functions)
    if count > len(modules) * functions:
        raise BenchError(f"at most {len(modules) * functions} quotes for that many files")
    order: dict[int, list[int]] = {}
    quotes = []
    for n in range(count):
        module = modules[n % len(modules)]
        slots = order.setdefault(module.index, rng.sample(range(functions), k=functions))
        j = slots[n // len(modules)]
        fn = module.functions[j]
        qid = f"Q-{module.tag}-f{j}"
        roll = rng.random()
        if roll < SYMBOL_SHARE:
            quotes.append(PlannedQuote(qid, module.index, "symbol", fn.first, fn.last, fn.name))
        elif roll < SYMBOL_SHARE + MATCH_SHARE:
            k, context = rng.randrange(fn.steps), rng.choice((0, 1, 2))
            line = fn.step_line(k)
            needle = f"[{module.tag} f{j} s{k}]"
            last = min(len(module.lines), line + context)  # as by_match clamps
            quotes.append(
                PlannedQuote(
                    qid, module.index, "match", line - context, last, None, needle, context
                )
            )
        else:
            k = rng.randrange(fn.steps)
            last = min(fn.steps - 1, k + rng.randrange(4))
            quotes.append(
                PlannedQuote(qid, module.index, "lines", fn.step_line(k), fn.step_line(last))
            )
    return quotes


@dataclass
class Drift:
    """The second commit: which files changed how, and the states a check should report."""

    files: dict[str, bytes]  # path -> content at the second commit (deleted: absent)
    file_states: Counter[str] = field(default_factory=Counter)
    quote_states: Counter[str] = field(default_factory=Counter)
    summary: str = ""


def plan_drift(
    modules: list[Module],
    quotes: list[PlannedQuote],
    rng: random.Random,
    shares: tuple[float, float, float, float] = (EDITED, SHIFTED, RENAMED, DELETED),
) -> Drift:
    """Pick disjoint sets of files to edit, shift, rename and delete (``shares`` of them)."""
    n = len(modules)
    sizes = [max(1, round(n * share)) for share in shares]
    if sum(sizes) > n:
        raise BenchError("too few files for the drift commit")
    picked = rng.sample(range(n), k=sum(sizes))
    edited, shifted, renamed, deleted = (
        set(picked[sum(sizes[:i]) : sum(sizes[: i + 1])]) for i in range(4)
    )
    first_quote: dict[int, PlannedQuote] = {}
    for q in quotes:
        first_quote.setdefault(q.module, q)

    drift = Drift({})
    edited_lines: dict[int, int] = {}  # module -> the line edited in place
    for m in modules:
        lines = list(m.lines)
        path = m.path
        if m.index in deleted:
            drift.file_states["missing"] += 1
            continue
        if m.index in renamed:
            path = m.path.replace("src/", "src/relocated/", 1)
            drift.file_states["moved"] += 1
        elif m.index in shifted:
            extra = [f"EXTRA_{k} = {k}  # [{m.tag} inserted {k}]\n" for k in range(INSERTED_LINES)]
            lines[5:5] = extra  # after the LIMIT line, above every function
            drift.file_states["changed"] += 1
        elif m.index in edited:
            target = first_quote.get(m.index)
            line = m.functions[0].step_first  # no quote in this file: edit anywhere
            if target is not None:  # a step line inside the file's first quote
                span = range(target.first, target.last + 1)
                line = next(x for x in span if " + " in lines[x - 1])
            lines[line - 1] = lines[line - 1].replace(" + ", " - ", 1)
            edited_lines[m.index] = line
            drift.file_states["changed"] += 1
        else:
            drift.file_states["verified"] += 1
        drift.files[path] = "".join(lines).encode()

    for q in quotes:
        if q.module in deleted:
            drift.quote_states["missing"] += 1
        elif q.module in renamed or q.module in shifted:
            drift.quote_states["moved"] += 1
        elif q.first <= edited_lines.get(q.module, 0) <= q.last:
            drift.quote_states["changed"] += 1
        else:
            drift.quote_states["verified"] += 1
    drift.summary = (
        f"{len(edited)} edited inside a quote, {len(shifted)} with {INSERTED_LINES} lines "
        f"inserted above their quotes, {len(renamed)} renamed, {len(deleted)} deleted"
    )
    return drift


# -- running commands --------------------------------------------------------------------


def git_env(when: int | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_AUTHOR_NAME="Bench",
        GIT_AUTHOR_EMAIL="bench@example.invalid",
        GIT_COMMITTER_NAME="Bench",
        GIT_COMMITTER_EMAIL="bench@example.invalid",
    )
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{when} +0000"
    return env


def run(cmd: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a set-up command; its failure is the benchmark's failure."""
    proc = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True)
    if proc.returncode != 0:
        raise BenchError(
            f"`{' '.join(cmd)}` exited {proc.returncode}: {proc.stderr.decode(errors='replace')}"
        )
    return proc.stdout.decode("utf-8", errors="replace")


def git(repo: Path, *args: str, when: int | None = None) -> str:
    return run(["git", *args], repo, git_env(when))


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def build_repository(repo: Path, modules: list[Module], drift: Drift) -> tuple[str, str]:
    """Two commits at fixed dates, repacked; returns their full ids."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "--initial-branch=main")
    write_tree(repo, {m.path: m.data() for m in modules})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Synthetic modules", when=BASE_EPOCH)
    first = git(repo, "rev-parse", "HEAD").strip()

    shutil.rmtree(repo / "src")
    write_tree(repo, drift.files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Edit, shift, rename and delete", when=BASE_EPOCH + 3600)
    second = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "repack", "-a", "-d", "-q")
    return first, second


def object_counts(git_dir: Path) -> dict[str, str]:
    out = run(["git", f"--git-dir={git_dir}", "count-objects", "-v"], git_dir, git_env())
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


def tracework_command() -> list[str]:
    beside = Path(sys.executable).parent / "tracework"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("tracework")
    if found is None:
        raise BenchError("no `tracework` command: run with the project's .venv/bin/python")
    return [found]


def build_workspace(
    ws: Path,
    repo: Path,
    pin: str,
    modules: list[Module],
    quotes: list[PlannedQuote],
    files_register: bool = False,
) -> Path:
    """A workspace, its subject and mirror, and a register of every file and quote (and,
    given ``files_register``, a second register holding only the source, for the timed
    ``add-file``; its files are kept beside it, to restore before each run)."""
    tw = tracework_command()
    run([*tw, "init", str(ws)], ws.parent)
    run([*tw, "subject", "add", SUBJECT, str(repo)], ws)
    run([*tw, "fetch", SUBJECT], ws)
    names = [REGISTER, FILES_REGISTER] if files_register else [REGISTER]
    for name in names:
        run([*tw, "register", "new", name], ws)
        source = [name, SOURCE, "--subject", SUBJECT, "--commit", pin]
        run([*tw, "register", "add-source", *source], ws)
    if files_register:
        shutil.copytree(ws / "registers", ws / "registers-before")
    run([*tw, "register", "add-file", REGISTER, SOURCE, GLOB], ws)

    # Quotes through the library: the same make_quote that `tracework quote` uses, on
    # the bytes the generator committed at the pin.
    register_path = ws / "registers" / f"{REGISTER}.yaml"
    lines_of = {m.index: Lines(m.data()) for m in modules}
    made = [
        (
            q.qid,
            make_quote(
                SOURCE,
                modules[q.module].path,
                lines_of[q.module],
                Span(q.first, q.last),
                q.anchor(),
            ),
        )
        for q in quotes
    ]
    write_quotes(register_path, made)
    return register_path


def write_quotes(register_path: Path, quotes: list[tuple[str, Quote]]) -> None:
    """Every quote in one write, as the full edit would write them (see the module's
    docstring): the entries dumped by tracework's writer :data:`QUOTE_CHUNK` at a time in
    place of ``quotes: {}``, the register validated with them, its compiled copy and
    splice record left as a write leaves them."""
    text = register_path.read_text(encoding="utf-8")
    if text.count("\nquotes: {}\n") != 1:
        raise BenchError(f"{register_path.name}: its quotes are not an empty `quotes: {{}}`")
    chunks = [
        append.quote_entries(quotes[i : i + QUOTE_CHUNK])
        for i in range(0, len(quotes), QUOTE_CHUNK)
    ]
    back = load_yaml("quotes:\n" + chunks[0])["quotes"]
    if {qid: Quote.model_validate(q) for qid, q in back.items()} != dict(quotes[:QUOTE_CHUNK]):
        raise BenchError("the quote entries do not read back as the quotes they were made from")
    text = text.replace("\nquotes: {}\n", "\nquotes:\n" + "".join(chunks), 1)
    before = store.load(register_path)
    register = Register(
        version=before.version,
        name=before.name,
        sources=before.sources,
        quotes=dict(quotes),
        checks=before.checks,
        assertions=before.assertions,
    )
    write_atomic(register_path, text)
    digest = sha256_hex(text.encode("utf-8"))
    store.write_compiled(register_path, digest, register)
    append.remember(register_path, digest, text, register)


def restore_files_register(ws: Path) -> None:
    """The files register as before any ``add-file``: the YAML, its compiled copy and its
    splice record, as ``register add-source`` left them."""
    for kept in (ws / "registers-before").glob(f"*{FILES_REGISTER}.yaml*"):
        shutil.copy2(kept, ws / "registers" / kept.name)


# -- measuring ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_rss_kib: int | None
    returncode: int
    stdout: bytes
    stderr: bytes


def gnu_time_works() -> bool:
    if not GNU_TIME.is_file():
        return False
    proc = subprocess.run([str(GNU_TIME), "-v", "true"], capture_output=True)
    return proc.returncode == 0 and b"Maximum resident set size" in proc.stderr


@dataclass
class Meter:
    """Runs a command once and measures wall time and the peak RSS of its process tree."""

    scratch: Path
    use_gnu_time: bool
    env: dict[str, str] | None = None  # None: this process's environment

    @property
    def method(self) -> str:
        if self.use_gnu_time:
            return "/usr/bin/time -v (largest process in the tree)"
        return "getrusage(RUSAGE_CHILDREN) in a probe process (largest process in the tree)"

    def measure(self, cmd: Sequence[str], cwd: Path) -> Run:
        report = self.scratch / "measure.txt"
        report.unlink(missing_ok=True)
        if self.use_gnu_time:
            wrapped = [str(GNU_TIME), "-v", "-o", str(report), *cmd]
        else:
            wrapped = [sys.executable, "-c", PROBE, str(report), *cmd]
        start = time.perf_counter()
        proc = subprocess.run(wrapped, cwd=cwd, env=self.env, capture_output=True)
        seconds = time.perf_counter() - start
        text = report.read_text() if report.is_file() else ""
        rss: int | None = None
        if self.use_gnu_time:
            found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
            rss = int(found.group(1)) if found else None
        elif text:
            probe_seconds, probe_rss = text.split()
            seconds, rss = float(probe_seconds), int(probe_rss)
        return Run(seconds, rss, proc.returncode, proc.stdout, proc.stderr)


@dataclass
class Case:
    """One measured command, its expected exit code and its runs."""

    label: str
    cmd: list[str]
    cwd: Path
    expect_rc: int
    runs: list[Run] = field(default_factory=list)
    before: Callable[[], None] | None = None  # untimed, before each run

    def run_once(self, meter: Meter) -> Run:
        if self.before is not None:
            self.before()
        result = meter.measure(self.cmd, self.cwd)
        if result.returncode != self.expect_rc:
            raise BenchError(
                f"{self.label}: exit {result.returncode}, expected {self.expect_rc}: "
                f"{result.stderr.decode(errors='replace')[-2000:]}"
            )
        return result

    @property
    def best(self) -> float:
        return min(r.seconds for r in self.runs)

    @property
    def median(self) -> float:
        return statistics.median(r.seconds for r in self.runs)

    @property
    def peak_mib(self) -> float | None:
        values = [r.peak_rss_kib for r in self.runs if r.peak_rss_kib is not None]
        return max(values) / 1024 if values else None


def check_counts(stdout: bytes, label: str) -> tuple[dict[str, Any], dict[str, Counter[str]]]:
    """Parse ``check --json`` output and count states per kind."""
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError as exc:
        raise BenchError(f"{label}: output is not JSON ({exc})") from None
    counts: dict[str, Counter[str]] = {"file": Counter(), "quote": Counter()}
    for item in report["items"]:
        counts[item["kind"]][item["state"]] += 1
    return report, counts


def fmt_counts(counts: Counter[str]) -> str:
    return ", ".join(f"{n:,} {state}" for state, n in sorted(counts.items())) or "none"


def verify_outputs(
    *, baseline_run: Run, pin_run: Run, at_run: Run, n_files: int, n_quotes: int, drift: Drift
) -> list[str]:
    """Sanity of the warm-up outputs; returns lines to print (raises on hard errors)."""
    blobs = int(baseline_run.stdout.split()[-1])
    if blobs != n_files:
        raise BenchError(f"baseline hashed {blobs} blobs, expected {n_files}")
    report, counts = check_counts(pin_run.stdout, "check")
    expected_pin = {"file": Counter(verified=n_files), "quote": Counter(verified=n_quotes)}
    if not report["ok"] or counts != expected_pin:
        raise BenchError(f"check at the pin: expected all verified, got {counts}")
    report, counts = check_counts(at_run.stdout, "check --at")
    if report["ok"] or sum(counts["file"].values()) != n_files:
        raise BenchError(f"check --at: ok={report['ok']}, counts {counts}")
    if sum(counts["quote"].values()) != n_quotes:
        raise BenchError(f"check --at: {sum(counts['quote'].values())} quotes, not {n_quotes}")
    lines = [
        f"check at the pin: {n_files:,} files and {n_quotes:,} quotes verified; "
        f"baseline hashed {blobs:,} blobs",
        f"check --at, files:  {fmt_counts(counts['file'])}",
        f"check --at, quotes: {fmt_counts(counts['quote'])}",
    ]
    if counts["file"] != drift.file_states or counts["quote"] != drift.quote_states:
        lines.append(
            "WARNING: drift states differ from the generator's expectation: files "
            f"{fmt_counts(drift.file_states)}; quotes {fmt_counts(drift.quote_states)}"
        )
    else:
        lines.append("drift states match the generator's expectation exactly")
    return lines


# -- the report --------------------------------------------------------------------------


def mark(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def table(cases: list[Case], baseline: Case, check: Case | None = None) -> list[str]:
    """Best and median seconds, the ratio to the baseline, and peak RSS; given ``check``,
    also the ratio of the last case (the ``add-file``) to it."""
    rows = [["", "best s", "median s", "× baseline", "peak RSS MiB"]]
    if check is not None:
        rows[0].insert(4, "× check")
    for case in cases:
        peak = case.peak_mib
        row = [
            case.label,
            f"{case.best:.3f}",
            f"{case.median:.3f}",
            f"{case.median / baseline.median:.2f}",
            f"{peak:.1f}" if peak is not None else "n/a",
        ]
        if check is not None:
            row.insert(4, f"{case.median / check.median:.2f}" if case is cases[-1] else "")
        rows.append(row)
    return aligned(rows)


def aligned(rows: list[list[str]]) -> list[str]:
    """Rows as columns: the first left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)
        )
        for row in rows
    ]


def verdicts(baseline: Case, check: Case, check_at: Case) -> str:
    ratio, at_ratio = check.median / baseline.median, check_at.median / baseline.median
    return (
        f"targets (medians): check ≤ {TARGET_CHECK_RATIO:g}× baseline: "
        f"{mark(ratio <= TARGET_CHECK_RATIO)} ({ratio:.2f}×) · "
        f"check < {TARGET_CHECK_SECONDS:g} s: "
        f"{mark(check.median < TARGET_CHECK_SECONDS)} ({check.median:.2f} s) · "
        f"check --at ≤ {TARGET_AT_RATIO:g}× baseline: "
        f"{mark(at_ratio <= TARGET_AT_RATIO)} ({at_ratio:.2f}×)"
    )


def monorepo_verdicts(baseline: Case, check: Case, check_at: Case, register: Case) -> str:
    ratio, at_ratio = check.median / baseline.median, check_at.median / baseline.median
    register_ratio = register.median / check.median
    return (
        f"targets (medians): check ≤ {TARGET_CHECK_RATIO:g}× baseline: "
        f"{mark(ratio <= TARGET_CHECK_RATIO)} ({ratio:.2f}×) · "
        f"check --at ≤ {TARGET_AT_RATIO:g}× baseline: "
        f"{mark(at_ratio <= TARGET_AT_RATIO)} ({at_ratio:.2f}×) · "
        f"register add-file ≤ {TARGET_REGISTER_RATIO:g}× check: "
        f"{mark(register_ratio <= TARGET_REGISTER_RATIO)} ({register_ratio:.2f}×)"
    )


@dataclass(frozen=True)
class Measured:
    """One size's timed cases (``register`` only in ``--monorepo``)."""

    files: int
    quotes: int
    baseline: Case
    check: Case
    check_at: Case
    register: Case | None


def growth(files: list[int], peaks: list[float]) -> tuple[float, list[float]]:
    """MiB per 10,000 files from the smallest size to the largest, and of each step
    between consecutive sizes."""
    per = 10_000 / (files[-1] - files[0])
    steps = [
        (peaks[i + 1] - peaks[i]) * 10_000 / (files[i + 1] - files[i])
        for i in range(len(files) - 1)
    ]
    return (peaks[-1] - peaks[0]) * per, steps


def is_linear(steps: list[float]) -> bool:
    """No step grows faster than :data:`LINEAR_SLACK` times the first, plus the noise."""
    limit = LINEAR_SLACK * max(steps[0], 0.0) + NOISE_MIB
    return all(step <= limit for step in steps[1:])


def memory_report(measured: list[Measured]) -> list[str]:
    """Peak RSS of each command at each size, its growth and whether it is linear."""
    files = [m.files for m in measured]
    picks: list[tuple[str, Callable[[Measured], Case | None], bool]] = [
        ("baseline", lambda m: m.baseline, False),
        ("tracework check --json", lambda m: m.check, True),
        ("tracework check --at C2 --json", lambda m: m.check_at, True),
        ("tracework register add-file (one glob)", lambda m: m.register, True),
    ]
    rows = [["peak RSS MiB", *(f"{n:,} files" for n in files), "MiB per 10,000 files", "linear"]]
    said = []
    for label, pick, judged in picks:
        cases = [pick(m) for m in measured]
        peaks = [c.peak_mib for c in cases if c is not None and c.peak_mib is not None]
        if len(peaks) != len(measured):
            continue
        per, steps = growth(files, peaks)
        linear = ""
        if judged:
            linear = mark(is_linear(steps)) if len(steps) >= 2 else "n/a"
            said.append(f"{label.removeprefix('tracework ')} {linear} ({per:.1f} MiB per 10,000)")
        rows.append([label, *(f"{p:.1f}" for p in peaks), f"{per:.1f}", linear])
    lines = ["  " + line for line in aligned(rows)]
    lines.append(
        f"linear: no step between consecutive sizes grows faster than {LINEAR_SLACK:g}× the "
        f"first step's MiB per 10,000 files, plus {NOISE_MIB:g} MiB per 10,000 files of noise "
        "(n/a with fewer than three sizes)"
    )
    lines.append("memory grows linearly: " + " · ".join(said))
    return lines


# -- main --------------------------------------------------------------------------------


@contextmanager
def build_root(keep: Path | None) -> Iterator[Path]:
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="tracework-bench-") as tmp:
            yield Path(tmp)
        return
    keep.mkdir(parents=True, exist_ok=True)
    if any(keep.iterdir()):
        raise BenchError(f"--keep {keep}: the folder is not empty")
    yield keep.resolve()


@contextmanager
def step(name: str) -> Iterator[None]:
    print(f"  {name} …", end="", flush=True)
    start = time.perf_counter()
    yield
    print(f" {time.perf_counter() - start:.1f} s", flush=True)


def bytecode_env(root: Path) -> dict[str, str]:
    """An environment where Python caches bytecode in a folder of the build.

    Without .pyc files (a venv installed without ``--compile-bytecode`` and run under
    ``PYTHONDONTWRITEBYTECODE=1``) every run compiles its imports from source.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    return env


def has_bytecode(module: str) -> bool:
    spec = importlib.util.find_spec(module)
    origin = spec.origin if spec is not None else None
    return origin is not None and Path(importlib.util.cache_from_source(origin)).is_file()


def bytecode_note(env: dict[str, str] | None) -> str:
    """Whether the measured processes import from cached bytecode: the venv's and ours.

    An editable install keeps tracework's modules in ``src/``; under
    ``PYTHONDONTWRITEBYTECODE`` they are compiled from source on every run even when
    the venv's packages have .pyc files.
    """
    if env is not None:
        return (
            f"cached under {env['PYTHONPYCACHEPREFIX']}, as installed (warm after the first "
            "round; --from-source: compiled at every start)"
        )
    no_write = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    venv, ours = has_bytecode("click"), has_bytecode("tracework.cli")
    if venv and ours:
        return "the venv and tracework have .pyc files"
    if not ours and no_write:
        where = "the venv has .pyc files, but " if venv else "no .pyc in the venv, and "
        return (
            f"{where}tracework's own modules are compiled from source on every run "
            "(PYTHONDONTWRITEBYTECODE is set and --from-source given)"
        )
    return "written by Python on first import"


@dataclass(frozen=True)
class Mode:
    """What a run builds and times: the default, or the issue's monorepo."""

    functions: int  # per module
    shares: tuple[float, float, float, float]  # of the files edited, shifted, renamed, deleted
    times_register: bool  # `register add-file` of the glob, timed with the others


DEFAULT = Mode(FUNCTIONS_PER_FILE, (EDITED, SHIFTED, RENAMED, DELETED), times_register=False)
MONOREPO = Mode(MONO_FUNCTIONS, MONO_SHARES, times_register=True)


def load_text(load: tuple[float, float, float]) -> str:
    return ", ".join(f"{x:.2f}" for x in load)


def bench(files: int, n_quotes: int, repeat: int, root: Path, pyc: bool, mode: Mode) -> Measured:
    rng = random.Random(SEED)
    print(f"building in {root}")
    with step(f"generating {files:,} modules and {n_quotes:,} quotes"):
        modules = make_modules(files, rng, mode.functions)
        quotes = plan_quotes(modules, n_quotes, rng)
        drift = plan_drift(modules, quotes, rng, mode.shares)
    with step("git repository (2 commits, repacked)"):
        pin, second = build_repository(root / "repo", modules, drift)
    ws = root / "ws"
    with step("workspace, fetch, register new/add-source/add-file, quotes"):
        register_path = build_workspace(
            ws, root / "repo", pin, modules, quotes, files_register=mode.times_register
        )
    mirror = ws / "sources" / ".mirrors" / f"{SUBJECT}.git"
    objects = object_counts(mirror)
    blob_bytes = sum(len(m.data()) for m in modules)

    tw = tracework_command()
    baseline = Case(
        "baseline (python -c: ls-tree + cat-file --batch --buffer + sha256)",
        [sys.executable, "-c", BASELINE, str(mirror), pin],
        ws,
        0,
    )
    check = Case("tracework check --json", [*tw, "check", REGISTER, "--json"], ws, 0)
    check_at = Case(
        "tracework check --at C2 --json",
        [*tw, "check", REGISTER, "--at", second, "--json"],
        ws,
        1,
    )
    cases = [baseline, check, check_at]
    register = None
    if mode.times_register:
        register = Case(
            f"tracework register add-file ({files:,} files, one glob)",
            [*tw, "register", "add-file", FILES_REGISTER, SOURCE, GLOB],
            ws,
            0,
            before=lambda: restore_files_register(ws),
        )
        cases.append(register)
    meter = Meter(root, gnu_time_works(), bytecode_env(root) if pyc else None)

    with step("warm-up round (untimed) and output checks"):
        warm = [case.run_once(meter) for case in cases]
        # kept beside the build, so the output of two versions can be compared byte for byte
        (root / "check.json").write_bytes(warm[1].stdout)
        (root / "check-at.json").write_bytes(warm[2].stdout)
        sanity = verify_outputs(
            baseline_run=warm[0],
            pin_run=warm[1],
            at_run=warm[2],
            n_files=files,
            n_quotes=n_quotes,
            drift=drift,
        )
        if register is not None:
            sanity.append(verify_registered(warm[3], files))
    load_before = os.getloadavg()
    with step(f"{repeat} timed rounds"):
        for _ in range(repeat):
            for case in cases:  # interleaved, so load changes hit them all alike
                case.runs.append(case.run_once(meter))
    load_after = os.getloadavg()

    print()
    sizes = ""
    if mode.times_register:
        sizes = f", {blob_bytes / files:,.0f} bytes a file on average"
    print(
        f"repository: {files:,} files ({blob_bytes / 2**20:.1f} MiB of blobs{sizes}, "
        f"{objects.get('packs', '?')} pack, {objects.get('count', '?')} loose objects in the "
        f"mirror), {len({m.path.rsplit('/', 1)[0] for m in modules})} folders; "
        f"C2 = {second[:12]}: {drift.summary}"
    )
    print(
        f"register: {n_quotes:,} quotes ({SYMBOL_SHARE:.0%} symbol, {MATCH_SHARE:.0%} match "
        f"anchors), {register_path.stat().st_size / 2**20:.1f} MiB of YAML"
    )
    print(
        f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"{run(['git', '--version'], root).strip()}; peak memory: {meter.method}"
    )
    print("baseline: a separate `python -c` process, so interpreter start-up counts on both sides")
    print(f"bytecode of the measured processes: {bytecode_note(meter.env)}")
    print(
        "load average (1, 5, 15 min) before and after the timed rounds: "
        + " → ".join(load_text(load) for load in (load_before, load_after))
    )
    for line in sanity:
        print(line)
    print()
    print(f"best and median of {repeat} runs (after one warm-up):")
    for line in table(cases, baseline, check if register is not None else None):
        print("  " + line)
    print()
    if register is None:
        print(verdicts(baseline, check, check_at))
    else:
        print(monorepo_verdicts(baseline, check, check_at, register))
    return Measured(files, n_quotes, baseline, check, check_at, register)


def verify_registered(warm: Run, files: int) -> str:
    """The timed ``add-file`` registered every file, anew."""
    said = warm.stdout.decode(errors="replace").strip().splitlines()[-1]
    if said != f"{files} files: {files} newly registered, 0 updated, 0 already registered as given":
        raise BenchError(f"register add-file: {said}")
    return f"register add-file {GLOB}: {said}"


def sizes_of(text: str) -> list[int]:
    try:
        sizes = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of file counts: {text!r}") from None
    if not sizes or sizes[0] < 10:
        raise argparse.ArgumentTypeError("sizes of at least 10 files")
    return sizes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=5000, help="files in the repository")
    parser.add_argument("--quotes", type=int, default=10000, help="quotes in the register")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each command")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR", help="build here, keep")
    parser.add_argument(
        "--pyc",
        action="store_true",
        help="let the measured processes cache bytecode (PYTHONPYCACHEPREFIX in the build); "
        "the default where PYTHONDONTWRITEBYTECODE is set, as an installed tracework has it",
    )
    parser.add_argument(
        "--from-source",
        action="store_true",
        help="under PYTHONDONTWRITEBYTECODE, compile tracework at every start (not as installed)",
    )
    parser.add_argument(
        "--monorepo",
        action="store_true",
        help="files of about 1 KB, a commit touching 1%% of them, `register add-file` timed "
        "too, at several sizes",
    )
    parser.add_argument(
        "--sizes",
        type=sizes_of,
        default=None,
        metavar="N,N,…",
        help="file counts to run at, the quotes in proportion (--monorepo's default: a "
        "quarter, a half and all of --files)",
    )
    args = parser.parse_args(argv)
    # as installed (bytecode kept) unless asked otherwise: an editable tracework under
    # PYTHONDONTWRITEBYTECODE would compile its modules at every start, as no user's does
    pyc = args.pyc or (bool(os.environ.get("PYTHONDONTWRITEBYTECODE")) and not args.from_source)
    if args.files < 10 or args.quotes < 1 or args.repeat < 1:
        parser.error("need --files ≥ 10, --quotes ≥ 1 and --repeat ≥ 1")
    mode = MONOREPO if args.monorepo else DEFAULT
    sizes = args.sizes or ([args.files // 4, args.files // 2, args.files] if args.monorepo else [])
    try:
        with build_root(args.keep) as root:
            if not sizes or sizes == [args.files]:
                bench(args.files, args.quotes, args.repeat, root, pyc, mode)
            else:
                at_sizes(
                    args.files,
                    args.quotes,
                    sizes,
                    args.repeat,
                    root,
                    pyc=pyc,
                    mode=mode,
                    keep=args.keep is not None,
                )
    except BenchError as exc:
        print(f"\nbench_check: error: {exc}", file=sys.stderr)
        return 1
    return 0


def at_sizes(
    files: int,
    quotes: int,
    sizes: list[int],
    repeat: int,
    root: Path,
    *,
    pyc: bool,
    mode: Mode,
    keep: bool,
) -> None:
    """The benchmark at each size, each built afresh (and removed after, unless kept),
    then how each command's peak memory grows with the files."""
    start = os.getloadavg()
    measured = []
    for size in sizes:
        n_quotes = max(1, round(quotes * size / files))
        print(f"\n== {size:,} files, {n_quotes:,} quotes ==")
        folder = root / f"{size}-files"
        folder.mkdir()
        measured.append(bench(size, n_quotes, repeat, folder, pyc, mode))
        if not keep:
            shutil.rmtree(folder)  # a size's build is gigabytes at 100,000 files
    end = os.getloadavg()
    if len(sizes) > 1:
        print(f"\n== memory, {len(sizes)} sizes ==")
        for line in memory_report(measured):
            print(line)
    print(
        f"load average (1, 5, 15 min) at the start of the run and at its end: "
        f"{load_text(start)} → {load_text(end)}"
    )
    last = measured[-1]
    print(f"\nat {last.files:,} files and {last.quotes:,} quotes:")
    if last.register is not None:
        print(monorepo_verdicts(last.baseline, last.check, last.check_at, last.register))
    else:
        print(verdicts(last.baseline, last.check, last.check_at))


if __name__ == "__main__":
    sys.exit(main())
