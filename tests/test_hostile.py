"""Nothing leaves the machine, nothing is lost: offline runs, fuzzed registers, SIGKILL."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import refused
from tracework.errors import RegisterError, TraceworkError
from tracework.register import store as reg

TRACEWORK = str(Path(sys.executable).parent / "tracework")
REGISTER = Path("registers/demo.yaml")


def one_record_report(pinned, tw, workspace):
    """Register ``demo`` with one quote and a notebook declaring one record citing it."""
    repo = pinned({"pkg/a.py": "def f():\n    return 1\n"})
    assert tw("quote", "demo", "SRC-1", "pkg/a.py", "--symbol", "f").exit_code == 0
    from tracework.notebook.scaffold import notebook_for

    nb = notebook_for("demo")
    nb.cells.insert(
        3,
        nbformat.v4.new_code_cell(
            'q = src.quote("pkg/a.py", symbol="f")\n'
            'wb.component("RT-CMP-f", label="f", identity="`f`", evidence=[q]);'
        ),
    )
    nbformat.write(nb, workspace.notebooks / "demo.ipynb")
    return repo


def _offline_ok() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _offline_ok(), reason="needs `unshare -n` (root) to cut the network")
def test_check_render_and_publish_work_with_no_network_but_loopback(pinned, tw, workspace):
    repo = one_record_report(pinned, tw, workspace)
    script = (
        "ip link set lo up && "
        f"{TRACEWORK} check demo && {TRACEWORK} render demo && {TRACEWORK} publish && "
        f'{sys.executable} -c "import socket; s = socket.socket(); s.settimeout(2); '
        "raise SystemExit(0 if s.connect_ex(('192.0.2.1', 443)) else 1)\""
    )
    result = subprocess.run(
        ["unshare", "-n", "sh", "-c", script],
        cwd=workspace.root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (workspace.reports / "demo" / repo.commits[0][:12] / "report.html").is_file()
    assert (workspace.reports / "site" / "reports" / "demo" / "index.html").is_file()


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@pytest.mark.slow
@given(data=st.data())
def test_a_mangled_register_is_one_clear_error_and_never_rewritten(pinned_once, tw, data):
    good = pinned_once
    text = good
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(text)))
        action = data.draw(st.sampled_from(["cut", "insert", "swap"]))
        if action == "cut":
            text = text[:pos] + text[pos + data.draw(st.integers(1, 40)) :]
        elif action == "insert":
            junk = data.draw(
                st.sampled_from(
                    [
                        "\t",
                        ":",
                        "- ",
                        "{",
                        "]",
                        '"',
                        "\x00",
                        "\ufeff",
                        "&a",
                        "*a",
                        "!!python/object ",
                        "\n  x: 1\n",
                        "lines: [0, 0]",
                        "sha256: zz",
                    ]
                )
            )
            text = text[:pos] + junk + text[pos:]
        else:
            text = text.replace("verified", "verifyed").replace("SRC-1", "SRC-9", 1)
    REGISTER.write_text(text, encoding="utf-8")
    before = REGISTER.read_bytes()
    try:
        reg.load(REGISTER.resolve())
    except RegisterError:  # mangled past reading: refused by both, in one line, kept as it was
        refused(tw("check", "demo"))  # an uncaught exception would fail the test here
        refused(tw("quote", "demo", "SRC-1", "a.py", "--lines", "1-1"))
        assert REGISTER.read_bytes() == before
        return
    # still a register (a mangle in free text, or SRC-1 renamed): check exits as the check
    # decides, its verdict (0 or 1) or its refusal (2)
    assert tw("check", "demo").exit_code == _check_exit(), text
    quoted = tw("quote", "demo", "SRC-1", "a.py", "--lines", "1-1")
    if "SRC-1" not in reg.load(REGISTER.resolve()).sources:  # renamed: nothing to quote from
        refused(quoted, "has no git source SRC-1")
    elif quoted.exit_code == 0:  # quoted, and the register holds it
        assert any(q.lines == (1, 1) for q in reg.load(REGISTER.resolve()).quotes.values())
        return
    else:  # what SRC-1 names mangled into another valid name (a subject, a path)
        refused(quoted)
    assert REGISTER.read_bytes() == before


def _check_exit() -> int:
    """The exit `tracework check demo` owes the register as it now reads."""
    from tracework.drift.check import check_register
    from tracework.workspace import Workspace

    try:
        return 0 if check_register(Workspace.find(), reg.load_data(REGISTER.resolve())).ok else 1
    except TraceworkError as exc:
        return exc.exit_code


@pytest.fixture
def pinned_once(pinned, tw):
    """A register with one quote; the YAML text, restored before every example."""
    pinned({"a.py": "x = 1\ny = 2\n"})
    assert tw("quote", "demo", "SRC-1", "a.py", "--lines", "2-2").exit_code == 0
    return REGISTER.read_text(encoding="utf-8")


WRITER = """
import sys
from tracework.register.quotes import QuoteRequest, add_quote
from tracework.workspace import Workspace
ws = Workspace.find()
n = 0
while True:
    n += 1
    add_quote(ws, ws.register_file("demo"), "SRC-1", "a.py",
              QuoteRequest(lines=(1 + n % 3000, 1 + n % 3000)), f"Q-k{n}")
"""


@pytest.mark.slow
def test_a_writer_killed_mid_write_leaves_a_valid_register(pinned, tw, workspace):
    # a span for every write (the same span twice would be the same quote)
    pinned({"a.py": "".join(f"line_{n} = {n}\n" for n in range(3000))})
    for round_ in range(6):
        proc = subprocess.Popen([sys.executable, "-c", WRITER], cwd=workspace.root)
        for _ in range(600):  # kill it while it writes, not while it starts (on a slow machine)
            if "Q-k" in REGISTER.read_text(encoding="utf-8"):
                break
            time.sleep(0.1)
        time.sleep(0.1 + 0.37 * round_)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        loaded = reg.load(REGISTER.resolve())  # never half-written
        assert all(q.text_intact() for q in loaded.quotes.values())
        assert tw("check", "demo").exit_code == 0
    leftovers = [p for p in REGISTER.parent.iterdir() if p.name.endswith(".tmp")]
    # a killed writer may leave its temp file beside the register or its compiled copy
    # (".demo.yaml.compiled.json" gives "..demo.yaml.compiled.json.*.tmp"); none is read
    assert all(p.name.startswith((".demo.yaml.", "..demo.yaml.")) for p in leftovers), leftovers
    assert os.path.getsize(REGISTER) > 0


@pytest.mark.slow
def test_a_render_killed_mid_way_leaves_the_previous_report(pinned, tw, workspace):
    """SIGKILL to a render (and its kernel) at several points: the good report stays
    byte for byte, and the next render succeeds."""
    repo = one_record_report(pinned, tw, workspace)
    assert tw("render", "demo").exit_code == 0
    folder = workspace.reports / "demo" / repo.commits[0][:12]
    good = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    for delay in (0.3, 1.0, 2.0):
        proc = subprocess.Popen(
            [TRACEWORK, "render", "demo"], cwd=workspace.root, start_new_session=True
        )
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGKILL)  # the render and the kernel it started
        proc.wait()
        assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == good
    assert tw("render", "demo").exit_code == 0
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == good


@pytest.mark.slow
def test_huge_files_are_hashed_by_streaming_and_big_spans_refused(pinned, tw, workspace):
    huge = bytes(range(256)) * (50 * 4096)  # 50 MiB, binary
    one_line = b"x" * 10_000_000  # one 10 MB line, no newline
    million = b"".join(b"v%d\n" % n for n in range(1_000_000))  # 6.9 MB
    marker = workspace.root / "tracework.toml"
    marker.write_text(marker.read_text().replace("4194304", "16777216"))
    pinned({"huge.bin": huge, "oneline.txt": one_line, "million.txt": million})
    result = tw("register", "add-file", "demo", "SRC-1", "huge.bin", "oneline.txt", "million.txt")
    assert result.exit_code == 0, result.output
    import hashlib

    files = reg.load(REGISTER.resolve()).git_source("SRC-1").files
    assert files["huge.bin"].sha256 == hashlib.sha256(huge).hexdigest()
    assert files["huge.bin"].binary and files["huge.bin"].size == len(huge)
    quoted = tw("quote", "demo", "SRC-1", "million.txt", "--lines", "999999-999999")
    assert quoted.exit_code == 0 and "v999998" in quoted.output
    refused = tw("quote", "demo", "SRC-1", "oneline.txt", "--lines", "1-1")
    assert refused.exit_code == 2 and "limit for one quote" in refused.output
    refused = tw("quote", "demo", "SRC-1", "huge.bin", "--lines", "1-1")
    assert refused.exit_code == 2
    assert tw("check", "demo").exit_code == 0
