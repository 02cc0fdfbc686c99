"""Resource bounds of a render: pathological patterns, cells that never end, renders that
are killed, huge outputs, a full disk.

A render must end, in bounded time and memory, whatever the subject's text or the
notebook does, and leave nothing running.  The tests that start kernels share one
workspace (a report per case); each runs tracework in a subprocess, killed whole if it
hangs, so a regression fails a test instead of hanging the suite.
"""

from __future__ import annotations

import ast
import errno
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import nbformat
import pytest
import re2
from click.testing import CliRunner

from conftest import (
    HANG_GUARD,
    init_repo,
    invoke,
    pids_in,
    pin_subject,
    run_tracework,
    running_in,
    sigint_default,
)
from tracework import fsio
from tracework.cli import main
from tracework.errors import RecordError
from tracework.records.absences import compile_pattern
from tracework.render.cuts import cut_html, cut_text
from tracework.render.outputs import capped

ROOT = Path(__file__).resolve().parents[1]
#: Python's ``re`` takes exponential time on this against a run of word characters; the
#: line of forty letters kept a render busy past 90 s (and its kernel after it was killed).
REDOS = r"^(\w+\s?)+=\s*open\("
STORE = "class Store:\n    def put(self, key, value):\n        self.items[key] = value\n"
QUOTE = """q = src.quote("pkg/store.py", symbol="Store.put")
wb.component("RT-CMP-store", label="Store", identity="The store.", evidence=[q]);"""
#: Spins in C, holding the interpreter: neither ipykernel's parent watch nor a SIGINT
#: handler ever runs in this kernel again.
SPIN = f"import re\nre.search({REDOS!r}, 'x' * 40)"


# -- a workspace shared by the tests that start kernels --------------------------------


@pytest.fixture(scope="module")
def bounds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A subject whose one file has a line of forty letters, and a workspace with one
    report per case below (notebooks filled in by :func:`_notebook`); the pin is in
    ``pin.txt``."""
    root = tmp_path_factory.mktemp("bounds")
    toy = init_repo(root / "toy").write("pkg/store.py", STORE + "x" * 40 + "\n" + "y" * 5000 + "\n")
    pin = toy.commit("first")
    ws = root / "ws"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        assert invoke("init", "ws").exit_code == 0
        patch.chdir(ws)
        pin_subject(invoke, toy, pin, reports=["redos", "spin", "loop", "slow", "big"])
        import tracework

        for name in ("redos", "big"):
            tracework.open(name).source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    (ws / "pin.txt").write_text(pin)
    pristine = root / "pristine"
    pristine.mkdir()
    for notebook in (ws / "notebooks").glob("*.ipynb"):
        (pristine / notebook.name).write_bytes(notebook.read_bytes())
    yield ws
    for pid in pids_in(ws):  # never leave a kernel behind, even when a test failed
        with suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _notebook(ws: Path, name: str, cells: list[str], *, bare: bool = False) -> None:
    """Put ``cells`` into report ``name``'s notebook: after its set-up (``tw.open`` and
    ``src``), or, ``bare``, alone after its parameters cell (no tracework in the kernel:
    nothing else in the notebook takes time)."""
    path = ws / "notebooks" / f"{name}.ipynb"
    nb = nbformat.read(ws.parent / "pristine" / path.name, as_version=4)
    added = [nbformat.v4.new_code_cell(cell, id=f"added-{n}") for n, cell in enumerate(cells)]
    if bare:
        nb.cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        nb.cells += added
    else:
        done = nb.cells.pop()  # wb.done() stays last
        nb.cells += [*added, done]
    nbformat.write(nb, path)


def _settings(ws: Path, **render: int) -> None:
    """Write ``[render]`` settings into the workspace's tracework.toml."""
    marker = ws / "tracework.toml"
    text = marker.read_text().split("[render]")[0]
    marker.write_text(text + "[render]\n" + "".join(f"{k} = {v}\n" for k, v in render.items()))


def _kernels(ws: Path) -> list[int]:
    """Kernels and kernel hosts still running in ``ws`` (zombies aside)."""
    return list(running_in(ws, "ipykernel"))


def _gone(ws: Path) -> bool:
    """Whether every kernel in ``ws`` has ended: waits for the event, not for a time."""
    for _ in range(600):
        if not _kernels(ws):
            return True
        time.sleep(0.1)
    return False


# -- pathological patterns -------------------------------------------------------------


@pytest.mark.slow
def test_a_backtracking_pattern_over_a_long_line_renders_at_once(bounds):
    """The reviewer's pattern against a line of 40 letters (and one of 5,000) ran past 90 s
    with no end in sight; RE2 matches it in linear time.  The cell limit is set below
    what the old engine took, so a regression fails here instead of hanging."""
    _settings(bounds, cell_timeout=120)
    _notebook(
        bounds,
        "redos",
        [
            QUOTE,
            f'wb.absence("RT-ABS-open", statement="No open.", scope=["pkg/*.py"], '
            f"patterns=[{REDOS!r}]);",
        ],
    )
    result = run_tracework(bounds, "render", "redos", "--json")
    assert result.returncode == 0, result.stderr
    folder = bounds / json.loads(result.stdout)["directory"]
    absence = json.loads((folder / "records.json").read_text())["absences"]["RT-ABS-open"]
    assert absence == {"holds": True, "files": 1, "skipped": [], "matches": []}


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(\w+)=\1", "backreferences cannot be matched in linear time"),
        (r"(?P<n>a)(?P=n)", "backreferences cannot be matched in linear time"),
        (r"open(?=\()", "lookahead and lookbehind cannot be matched in linear time"),
        (r"(?<!\.)open", "lookahead and lookbehind cannot be matched in linear time"),
        (r"open\Z", r"RE2 writes the end of the text as \z (or $)"),
        (r"(?x) open \(", "RE2 has no verbose mode"),
        (r"open(?#call)", "RE2 has no (?#...) comments"),
        (r"a{,3}", "RE2 reads {,n} as literal text; write {0,n}"),
        (r"(unclosed", "missing )"),
        (r"[\W\d]", r"\W inside [...] has no RE2 form"),
    ],
)
def test_a_pattern_re2_cannot_run_is_refused_where_the_absence_is_declared(
    pinned, workspace, pattern, why
):
    pinned({"pkg/store.py": STORE})
    import tracework

    wb = tracework.open("demo")
    with pytest.raises(RecordError) as caught:
        wb.absence("RT-ABS-x", statement="None.", scope=["pkg/*.py"], patterns=[pattern])
    message = str(caught.value)
    assert "RT-ABS-x" in message and repr(pattern) in message and why in message
    assert "RT-ABS-x" not in wb._records  # nothing half-declared


def _demo_patterns() -> list[str]:
    """Every pattern of every absence in the demo notebooks (notebooks/*.ipynb)."""
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "absence":
                    for keyword in node.keywords:
                        if keyword.arg == "patterns":
                            found += ast.literal_eval(keyword.value)
    return found


#: Lines a pattern's meaning could differ on: the demo subjects' own lines are added.
AWKWARD_LINES = [
    "",
    "owner = user.owner  # \u00e9t\u00e9",
    "MAX_NOTE_CHARS = 280",
    "MAX_\u00e9 = 1",
    "\u00e9open(path)",
    "reopen(path) and open (path)",
    "len(text)  \r",
    "json.dumps(x); json.dump(x, f)",
    "user_id\ttenant namespace",
    "COUNT(*) count(",
]


def test_the_demo_patterns_mean_what_they_meant_under_python_re():
    """The demo's patterns find exactly the lines Python's ``re`` found in the demo
    subjects, and on lines chosen to tell the engines apart (non-ASCII letters beside
    ``\\w``) too, but for the documented difference: ``\\b`` counts only ASCII word
    characters, so beside an ASCII letter it finds all Python found, and ``éopen(``."""
    patterns = _demo_patterns()
    assert len(patterns) >= 10  # the demo's absences were found
    subject_lines = []
    for path in sorted((ROOT / "examples").rglob("*")):
        if path.is_file() and path.suffix in (".py", ".md", ".toml", ".txt"):
            subject_lines += path.read_text(encoding="utf-8").split("\n")
    assert len(subject_lines) > 100
    for pattern in patterns:
        python, linear = re.compile(pattern), compile_pattern(pattern)
        for line in subject_lines + AWKWARD_LINES:
            found = linear.search(line.encode()) is not None
            if python.search(line) is not None:
                assert found, (pattern, line)
            elif found:  # more than Python: only \b beside a non-ASCII letter, documented
                assert line in AWKWARD_LINES and "\\b" in pattern, (pattern, line)
                assert re.search(r"[^\x00-\x7f]open|[^\x00-\x7f]owner", line), (pattern, line)


@pytest.mark.parametrize("escape", ["w", "d", "s", "W", "D", "S"])
def test_class_escapes_match_every_character_python_matches_and_no_other(escape):
    """\\w, \\d and \\s (and their negations) mean what Python means on text, for every
    character Python's Unicode database assigns (RE2's own are ASCII)."""
    import unicodedata

    python = re.compile(f"\\{escape}")
    assigned = [
        chr(point)
        for point in range(0x110000)
        if not 0xD800 <= point <= 0xDFFF and unicodedata.category(chr(point)) != "Cn"
    ]
    inside = "".join(c for c in assigned if python.match(c)).encode("utf-8")
    outside = "".join(c for c in assigned if not python.match(c)).encode("utf-8")
    assert compile_pattern(f"^(?:\\{escape})*$").search(inside) is not None
    assert compile_pattern(f"\\{escape}").search(outside) is None
    inside_a_class = f"[{escape}]" if escape in "wdsD" else None
    if inside_a_class:
        assert compile_pattern(f"^[\\{escape}]*$").search(inside) is not None


def test_re2_reads_the_supported_syntax_as_documented():
    """What the README says about the syntax: \\b with ASCII word characters, \\z, \\pL, (?i)."""
    assert compile_pattern(r"\bowner").search("\u00e9owner".encode()) is not None
    assert re.search(r"\bowner", "\u00e9owner") is None  # Python's \b is Unicode
    assert compile_pattern(r"\pL").search("\u00e9".encode()) is not None
    assert compile_pattern(r"open\z").search(b"reopen") is not None
    assert compile_pattern(r"(?i)SQLITE3").search(b"import sqlite3") is not None
    assert isinstance(compile_pattern(REDOS), re2._Regexp)


# -- cells that never end, renders that are killed -------------------------------------


@pytest.mark.slow
def test_a_cell_past_its_limit_is_stopped_and_named_and_its_kernel_dies(bounds):
    """A cell stuck in C (the backtracking ``re``) holds the interpreter: only killing
    its kernel stops it.  Both ``render`` and ``rerender`` name the cell and the setting,
    keep what ran, and leave no kernel."""
    _settings(bounds, cell_timeout=3)
    _notebook(bounds, "loop", [SPIN], bare=True)
    result = run_tracework(bounds, "render", "loop")
    assert result.returncode == 2, result.stderr
    pin = (bounds / "pin.txt").read_text()
    assert result.stderr.splitlines() == [
        "tracework: error: cell 2 of 2 (id added-0) ran past the limit of 3 s for one cell, "
        "and was stopped",
        "  hint: raise [render] cell_timeout in tracework.toml if the cell needs longer; the "
        f"executed notebook is kept in reports/loop/failed-{pin[:12]}/; no report written",
    ]
    kept = nbformat.read(bounds / "reports" / "loop" / f"failed-{pin[:12]}" / "report.ipynb", 4)
    assert kept.cells[-1].source == SPIN
    assert _gone(bounds)
    batch = run_tracework(bounds, "rerender", "loop", "--commit", pin, "-j", "1", "--json")
    assert batch.returncode == 1, batch.stderr
    (outcome,) = json.loads(batch.stdout)["reports"]
    assert outcome["error"] == (
        "cell 2 of 2 (id added-0) ran past the limit of 3 s for one cell, and was stopped"
    )
    assert _gone(bounds)


@pytest.mark.slow
def test_a_render_past_its_limit_is_stopped_in_the_cell_that_ran_it_out(bounds):
    _settings(bounds, cell_timeout=600, timeout=5)
    _notebook(bounds, "slow", ["import time\ntime.sleep(600)"], bare=True)
    result = run_tracework(bounds, "render", "slow")
    assert result.returncode == 2, result.stderr
    first, hint = result.stderr.splitlines()
    assert (
        first
        == "tracework: error: the render ran past its limit of 5 s, in cell 2 of 2 (id added-0), "
        "and was stopped"
    )
    assert hint.startswith("  hint: raise [render] timeout in tracework.toml")
    assert _gone(bounds)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "signum"),
    [
        ("render", signal.SIGKILL),
        ("render", signal.SIGTERM),
        ("render", signal.SIGINT),
        ("rerender", signal.SIGTERM),
    ],
)
def test_a_kernel_dies_with_its_render_however_the_render_ends(bounds, command, signum):
    """The reviewer's kernel stayed at 100% CPU with parent 1 after `render` was
    killed.  Here the kernel spins in C, where ipykernel's own parent watch never runs;
    the render is sent the signal alone (a terminal's Ctrl-C goes to its whole process
    group, and a kernel has a session of its own)."""
    _settings(bounds)
    marker = bounds / "spinning"
    marker.unlink(missing_ok=True)
    _notebook(bounds, "spin", [f"open({str(marker)!r}, 'w').close()\n{SPIN}"], bare=True)
    pin = (bounds / "pin.txt").read_text()
    args = ["render", "spin"] if command == "render" else ["rerender", "spin", "--commit", pin]
    if command == "rerender":
        args += ["-j", "1", "--force"]
    stderr = bounds / "stderr.txt"  # a file: a kernel that outlived the render holds no pipe
    with stderr.open("w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tracework", *args],
            cwd=bounds,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            start_new_session=True,
            preexec_fn=sigint_default,  # Ctrl-C does what it does, whatever the shell ignores
        )
    try:
        for _ in range(3000):  # the kernel is in the spinning cell: an event
            if marker.exists():
                break
            time.sleep(0.1)
        else:
            pytest.fail("the spinning cell never started")
        assert _kernels(bounds)
        os.kill(proc.pid, signum)
        proc.wait(timeout=HANG_GUARD)
        if signum == signal.SIGINT:
            err = stderr.read_text()
            assert proc.returncode == 130 and err.splitlines()[-1] == "interrupted", err
        assert _gone(bounds), "the kernel outlived its render"
    finally:
        with suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in _kernels(bounds):
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)


# -- huge outputs ----------------------------------------------------------------------

BIG = """from IPython.display import HTML, display
for i in range(40000):
    print(f"line {i:05d} " + "x" * 40)
display(HTML("<table><tr><td>" + "<b>cell</b> &amp; " * 20000 + "</td></tr></table>"))
wb.claim("RT-CLM-big", label="Big", claim="said " * 30000 + "THE END", assessment="a",
         operation="uninspected", evidence=[q]);"""


@pytest.mark.slow
def test_a_huge_output_keeps_its_head_and_tail_everywhere_it_goes(bounds):
    """2 MB printed, 340 KB of HTML, a 150 KB record field, with a cap of 32 KiB: the page,
    the kept notebook and records.json each keep every output's head and tail and say
    how much was cut."""
    _settings(bounds, output_cap=32768)
    _notebook(bounds, "big", [QUOTE, BIG])
    result = run_tracework(bounds, "render", "big", "--json")
    assert result.returncode == 0, result.stderr
    folder = bounds / json.loads(result.stdout)["directory"]
    page = (folder / "report.html").read_text()
    kept = (folder / "report.ipynb").read_text()
    records = json.loads((folder / "records.json").read_text())
    cut = re.compile(r"\[… [\d.]+ (KiB|MiB)(, [\d,]+ lines)? cut from the middle of this output")
    for text in (page, kept):
        assert "line 00000 " in text and "line 39999 " in text  # head and tail
        assert "line 20000 " not in text  # the middle
        assert len(cut.findall(text)) >= 2  # the print and the claim at least
    assert len(page) < 400_000 and len(kept) < 400_000  # was over 2.5 MB each
    assert "([render] output_cap in tracework.toml)" in page
    claim = next(r for r in records["records"] if r["id"] == "RT-CLM-big")["claim"]
    assert claim.startswith("said said") and claim.endswith("THE END") and cut.search(claim)
    assert len(claim.encode()) < 33_000
    # the HTML was cut between tags: its head and tail are there, and no tag is broken
    assert "<td><b>cell</b> &amp; <b>cell</b>" in page and "</td></tr></table>" in page
    assert '<div class="tw-cut">' in page


def test_capping_keeps_outputs_within_the_cap_as_they_are_and_is_deterministic():
    small = nbformat.v4.new_output("stream", name="stdout", text="hello\n")
    plain = nbformat.v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=1)
    image = nbformat.v4.new_output(
        "display_data", data={"image/png": "A" * 5000, "text/plain": "<Figure>"}
    )
    chunks = [
        nbformat.v4.new_output("stream", name="stdout", text=f"{i}\n" * 300) for i in range(10)
    ]
    error = nbformat.v4.new_output(
        "error", ename="E", evalue="v" * 5000, traceback=["t" * 5000, "ok"]
    )
    cell = nbformat.v4.new_code_cell("x", outputs=[small, plain])
    busy = nbformat.v4.new_code_cell("y", outputs=[*chunks, image, error])
    nb = nbformat.v4.new_notebook(cells=[cell, busy])
    before = json.dumps(nb, sort_keys=True)
    once, twice = capped(nb, 1024), capped(nb, 1024)
    assert json.dumps(nb, sort_keys=True) == before  # the input is not changed
    assert json.dumps(once, sort_keys=True) == json.dumps(twice, sort_keys=True)
    assert once.cells[0] is cell  # nothing over the cap: the very same cell
    stream, shown, failed = once.cells[1].outputs
    assert stream.text.startswith("0\n0\n") and stream.text.endswith("9\n9\n")
    assert len(stream.text.encode()) < 1300  # ten outputs of 600 bytes made one of ~1 KiB
    assert "image/png" not in shown.data
    assert shown.data["text/plain"].startswith("[tracework left out this output's image/png form")
    assert shown.data["text/plain"].endswith("\n<Figure>")
    assert len(failed.evalue) < 1300 and len(failed.traceback[0]) < 1300
    assert failed.traceback[1] == "ok"


def test_cutting_text_never_splits_a_character_and_prefers_line_ends():
    text = "é" * 3000 + "\n" + "".join(f"row {i}\n" for i in range(2000)) + "ü" * 3000
    cut = cut_text(text, 4096)
    head, _, tail = cut.partition("[…")
    assert head.strip("é\n") == "" or head.endswith("\n")
    assert tail.endswith("ü" * 100)
    assert "\ufffd" not in cut and len(cut.encode()) < 4096 + 300
    assert re.search(r"… [\d.]+ KiB, [\d,]+ lines cut", cut)


def test_cutting_html_never_cuts_inside_a_tag_or_an_entity():
    page = "<div>" + '<a href="#x" title="a&amp;b">link</a> &eacute; ' * 2000 + "</div>"
    for cap in (1000, 1001, 1003, 1017, 4099):
        cut = cut_html(page, cap)
        head, _, rest = cut.partition('<div class="tw-cut">')
        tail = rest.partition("</div>")[2]
        # no tag or entity left open at either cut
        assert head.rfind("<") < head.rfind(">") and not re.search(r"&[#\w]*$", head)
        assert tail.find("<") < tail.find(">") and not re.match(r"^[#\w]*;", tail)


# -- a full disk -----------------------------------------------------------------------


def test_a_full_disk_names_the_file(tmp_path, monkeypatch):
    """A write that fails for want of space used to say only "No space left on device"."""

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "report.html"
    with pytest.raises(OSError) as caught:
        fsio.write_atomic(target, "page")
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(target)
    assert list(tmp_path.iterdir()) == []  # no temporary file left


@pytest.mark.slow
def test_a_render_on_a_full_disk_names_the_reports_file_and_keeps_the_good_one(bounds, monkeypatch):
    """The page cannot be written: the message names reports/NAME/<commit12>/report.html
    (not the staging folder's temporary name), and the previous report stays."""
    _settings(bounds)
    _notebook(bounds, "redos", [QUOTE])
    pin = (bounds / "pin.txt").read_text()
    runner = CliRunner()
    monkeypatch.chdir(bounds)
    assert runner.invoke(main, ["render", "redos"]).exit_code == 0
    good = bounds / "reports" / "redos" / pin[:12]
    before = {p.name: p.read_bytes() for p in good.iterdir()}
    fsync = os.fsync

    def full_for_pages(fd: int) -> None:
        if ".report.html." in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", full_for_pages)
    result = runner.invoke(main, ["render", "redos"])
    assert result.exit_code == 2
    message, hint = result.stderr.splitlines()
    assert message == (
        f"tracework: error: cannot write reports/redos/{pin[:12]}/report.html: "
        "No space left on device"
    )
    assert hint.startswith("  hint: free space or grant write access where the reports are")
    assert hint.endswith("the previous good report is untouched")
    assert {p.name: p.read_bytes() for p in good.iterdir()} == before
    assert not list(good.parent.glob(".*.staging"))
