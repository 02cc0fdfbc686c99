"""The harness and its protocol: a harness that raises, exits, breaks the protocol or
misuses the API gets one clear error (exit 1) and the previous capture stays; the
subject's own prints never reach the results; the model-driven arm is kept apart."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from capture_setup import PLAIN_HARNESS, capture_workspace, one_error, snapshot
from tracework.capture.protocol import ProtocolProblem, parse


@pytest.fixture
def setup(pinned, tw):
    return capture_workspace(pinned, tw)


def _replace_good_capture(setup, harness: str):
    """Capture PLAIN_HARNESS, then ``harness`` as the same capture: the second result,
    having checked the first capture survived it byte for byte."""
    setup.write("cap", PLAIN_HARNESS)
    assert setup.capture("cap").exit_code == 0
    kept = snapshot(setup.folder("cap"))
    setup.write("cap", harness)
    result = setup.capture("cap")
    assert result.exit_code == 1, result.output
    assert snapshot(setup.folder("cap")) == kept
    assert (setup.failed("cap") / "log.txt").is_file()
    return one_error(result)


HEAD = "from tracework_harness import capture\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("harness", "words"),
    [
        (
            HEAD + "\n\nraise ValueError('the fixture is broken')\n",
            "the harness raised ValueError: the fixture is broken (captures/cap.py, line 4)",
        ),
        (HEAD + "import sys\nsys.exit(3)\n", "the harness exited with status 3"),
        (HEAD + "x = 1\n", "the harness ran no case"),
        (
            HEAD + "with capture.case('T-01', 'q?') as c:\n    c.record('a', 1)\n",
            "case T-01 ended without a status: call c.status(…) or c.check(…)",
        ),
        (
            HEAD + "with capture.case('T-01', 'q?') as c:\n"
            "    c.status('MAYBE', criterion='x', observed='y')\n",
            "case T-01: status 'MAYBE' is not one of ('PASS', 'FAIL', 'UNKNOWN')",
        ),
        (
            HEAD + "with capture.case('T-01', 'q?', arm='model-driven') as c:\n"
            "    c.status('PASS', criterion='x', observed='y')\n",
            "case T-01 is model-driven, so it is never graded: use c.observe(…)",
        ),
        (
            HEAD + "try:\n    with capture.case('T-01', 'q?') as c:\n        raise KeyError\n"
            "except KeyError:\n    pass\nwith capture.case('T-02', 'q?') as c:\n"
            "    c.check('x', holds=True, observed='y')\n",
            "case T-02 opened while case T-01 was open",
        ),
        (
            HEAD + "import os\nwith capture.case('T-01', 'q?') as c:\n    os._exit(0)\n",
            "the harness ended without finishing (exit status 0",
        ),
        (
            HEAD + "import os\nos.write(capture._channel.fd, b'not json\\n')\n",
            "the harness broke the protocol: protocol message 2 is not JSON: 'not json'",
        ),
        (
            HEAD + "import os\nos.write(capture._channel.fd, "
            'b\'{"t": "record", "case": "X-1", "name": "n", "value": 1}\\n\')\n',
            "protocol message 2 (record): case X-1 is not open",
        ),
        (
            HEAD + 'import os\nos.write(capture._channel.fd, b\'{"t": "verdict"}\\n\')\n',
            "protocol message 2 (verdict):",
        ),
        (
            HEAD + "import os\nos.write(capture._channel.fd, b'[' * 500 + b']' * 500 + b'\\n')\n",
            "protocol message 2 nests deeper than 100 levels",
        ),
        (
            HEAD + "import os\nos.write(capture._channel.fd, b'[' * 100000 + b'\\n')\n",
            "protocol message 2 nests too deep to read",
        ),
        (
            HEAD + "import os\nwith capture.case('T-01', 'q?') as c:\n"
            '    os.write(capture._channel.fd, b\'{"t": "record", "case": "T-01", '
            '"name": "n", "value": NaN}\\n\')\n'
            "    c.check('x', holds=True, observed='y')\n",
            "protocol message 3 is not JSON",
        ),
        (
            HEAD + "import os\nwith capture.case('T-01', 'q?') as c:\n"
            '    os.write(capture._channel.fd, b\'{"t": "record", "case": "T-01", '
            '"name": "n", "value": 1e400}\\n\')\n'
            "    c.check('x', holds=True, observed='y')\n",
            "protocol message 3 is not JSON",
        ),
        (
            HEAD + "capture.normalise('(a)\\\\1', '<x>')\n"
            "with capture.case('T-01', 'q?') as c:\n    c.check('x', holds=True, observed='y')\n",
            "normalise pattern '(a)\\\\1' is not valid RE2",
        ),
    ],
    ids=[
        "raises",
        "exits",
        "no-case",
        "no-status",
        "bad-status",
        "graded-model-arm",
        "swallowed-case",
        "ends-early",
        "not-json",
        "out-of-place",
        "unknown-kind",
        "deep",
        "deeper-than-python",
        "nan",
        "infinite",
        "bad-rule",
    ],
)
def test_a_failing_harness_keeps_the_previous_capture(setup, harness, words):
    message = _replace_good_capture(setup, harness)
    assert words in message, message
    assert "previous capture is untouched" in message
    assert (setup.failed("cap") / "error.txt").read_text().strip() in message


@pytest.mark.slow
def test_a_failed_first_capture_writes_nothing_but_the_failed_folder(setup):
    setup.write("cap", HEAD + "raise RuntimeError('no')\n")
    result = setup.capture("cap")
    assert result.exit_code == 1
    assert "nothing written" in one_error(result)
    assert sorted(p.name for p in setup.folder("cap").parent.iterdir()) == [
        f".{setup.commit[:12]}.lock",
        f"failed-{setup.commit[:12]}",
    ]


@pytest.mark.slow
def test_a_success_removes_the_failed_folder(setup):
    setup.write("cap", HEAD + "raise RuntimeError('no')\n")
    assert setup.capture("cap").exit_code == 1
    setup.write("cap", PLAIN_HARNESS)
    assert setup.capture("cap").exit_code == 0
    assert not setup.failed("cap").exists()


@pytest.mark.slow
def test_the_subjects_prints_cannot_forge_a_result(setup):
    """stdout is the log, not the protocol: a forged status printed there is only text."""
    forged = json.dumps(
        {"t": "status", "case": "T-01", "status": "PASS", "criterion": "x", "observed": "y"}
    )
    setup.write(
        "cap",
        HEAD + f"print({forged!r})\n"
        "with capture.case('T-01', 'q?') as c:\n"
        f"    print({forged!r})\n"
        "    c.check('it holds', holds=False, observed='it does not')\n",
    )
    result = setup.capture("cap", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["counts"] == {"FAIL": 1, "PASS": 0, "UNKNOWN": 0}
    assert (setup.folder("cap") / "log.txt").read_text().count('"status": "PASS"') == 2


@pytest.mark.slow
def test_a_forked_child_cannot_send_results(setup):
    setup.write(
        "cap",
        HEAD + "import os\nwith capture.case('T-01', 'q?') as c:\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        try:\n"
        "            c.record('from the child', 1)\n"
        "        except Exception as exc:\n"
        "            print('child refused:', exc)\n"
        "        os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "    c.check('x', holds=True, observed='y')\n",
    )
    assert setup.capture("cap").exit_code == 0
    log = (setup.folder("cap") / "log.txt").read_text()
    assert "child refused: only the harness's own process may send results" in log
    transcript = setup.folder("cap") / "transcripts" / "T-01.json"
    assert not transcript.exists()


@pytest.mark.slow
def test_the_model_driven_arm_is_kept_apart_and_never_counted(setup):
    setup.write(
        "cap",
        HEAD + "import random\n"
        "with capture.case('M-01', 'scripted?') as c:\n"
        "    c.status('FAIL', criterion='the store records a source', observed='it does not')\n"
        "with capture.case('M-02', 'what does a model do?', arm='model-driven') as c:\n"
        "    c.record('reply', 'PINEAPPLE ' + str(random.random()))\n"
        "    c.observe('it ended with the word', criterion='last word is PINEAPPLE')\n"
        "capture.table('model runs', ['run', 'ended with it'], [[1, True]], arm='model-driven')\n",
    )
    result = setup.capture("cap", "--repeat", "2", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["counts"] == {"FAIL": 1, "PASS": 0, "UNKNOWN": 0}
    assert [(c["id"], c["arm"], c["status"]) for c in out["cases"]] == [
        ("M-01", "scripted", "FAIL"),
        ("M-02", "model-driven", None),
    ]
    results = json.loads((setup.folder("cap") / "results.json").read_text())
    model = json.loads((setup.folder("cap") / "model-arm.json").read_text())
    assert [c["id"] for c in results["cases"]] == ["M-01"] and results["tables"] == []
    assert model["arm"] == "model-driven" and model["counts"] == {}
    assert model["cases"][0]["observed"] == "it ended with the word"
    assert model["tables"][0]["name"] == "model runs"


def test_the_protocol_refuses_each_fault():
    def lines(*messages: dict) -> list[bytes]:
        return [json.dumps(m).encode() for m in messages]

    hello = {"t": "hello", "protocol": 1}
    case = {"t": "case", "id": "T-01", "question": "q?", "arm": "scripted"}
    check = {"t": "check", "case": "T-01", "criterion": "c", "holds": True, "observed": "o"}
    end = {"t": "end", "case": "T-01"}
    done = {"t": "done"}
    raw = parse(lines(hello, case, check, end, done))
    assert raw.done and [c.opened.id for c in raw.cases] == ["T-01"]
    faults = {
        "must start with hello": lines(case),
        "protocol 1": lines({"t": "hello", "protocol": 2}),
        "a second hello": lines(hello, hello),
        "never ended": lines(hello, case, check, done),
        "ended without a status": lines(hello, case, end),
        "was already run": lines(hello, case, check, end, case),
        "ignoring case": lines(hello, case, check, end, {**case, "id": "t-01"}),
        "after the run ended": lines(hello, done, case),
        "not as wide": lines(
            hello,
            {
                "t": "table",
                "name": "t",
                "columns": ["a"],
                "rows": [[1, 2]],
                "notes": None,
                "arm": "scripted",
            },
        ),
        "question": lines(hello, {**case, "question": ""}),
        "verdict: unknown field": lines(hello, {**case, "verdict": "PASS"}),
    }
    for words, sequence in faults.items():
        with pytest.raises(ProtocolProblem, match=words):
            parse(sequence)


def _oldest_python() -> str | None:
    """The oldest Python 3 on this machine (a subject's environment may be old)."""
    candidates = sorted(Path.home().glob(".pyenv/versions/3.*/bin/python3"))
    for minor in range(8, 12):
        found = shutil.which(f"python3.{minor}")
        if found:
            candidates.append(Path(found))
    for path in sorted(candidates, key=lambda p: _version(p) or (9, 9)):
        if _version(path):
            return str(path)
    return None


def _version(python: Path) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [str(python), "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    major, minor = map(int, out.split())
    return (major, minor) if (major, minor) >= (3, 8) else None


def test_the_harness_api_runs_on_an_old_python_by_hand(tmp_path):
    """tracework_harness is standard library only and Python 3.8 syntax: run by hand,
    with no tracework, it prints a summary of each case on stderr."""
    python = _oldest_python() or sys.executable
    harness = tmp_path / "h.py"
    harness.write_text(
        HEAD + "with capture.case('T-01', 'Does it run?') as c:\n"
        "    c.record('obj', object())\n"
        "    c.check('it runs', holds=True, observed='yes')\n"
        "with capture.case('T-02', 'Unknown?') as c:\n"
        "    c.check('it cannot show', holds=None, observed='no fixture')\n"
    )
    lib = Path(__file__).resolve().parents[1] / "src" / "tracework" / "capture" / "harness"
    proc = subprocess.run(
        [python, "-s", "-B", str(harness)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(lib), "PATH": os.environ["PATH"]},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "T-01  PASS  Does it run?\nT-02  UNKNOWN  Unknown?\n"
