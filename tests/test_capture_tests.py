"""The subject's own tests as a case: ``capture.tests`` runs the suite inside the capture
(it is the subject's code, so only there), as a child of the harness, and turns what the
runner reports into a scripted case with counts and every test's id and outcome.

pytest reaches the capture's environment the way any package does: from an index, here
one on the test's loopback serving wheels rebuilt from this test environment's own
pytest and its dependencies, so nothing is downloaded.
"""

from __future__ import annotations

import json
import re

import pytest

from capture_setup import LocalIndex, capture_workspace, one_error, wheel_of

pytestmark = pytest.mark.slow  # sandboxes: not in `make test-fast`

#: The toy's own tests, unittest-style so both runners run them: 2 pass, 1 fails, 1 skips.
UNIT = """\
import unittest

from toy.store import Store


class StoreTests(unittest.TestCase):
    def test_put_keeps_the_text(self):
        store = Store()
        store.put("hello")
        self.assertEqual(list(store.items.values()), ["hello"])

    def test_put_returns_a_key(self):
        self.assertTrue(Store().put("x"))

    def test_put_twice_keeps_one(self):
        store = Store()
        store.put("a")
        store.put("a")
        self.assertEqual(len(store.items), 1)

    @unittest.skip("the store has no delete yet")
    def test_delete(self):
        pass
"""

#: pytest-only outcomes: an expected failure, an unexpected pass, a setup error.
MORE = """\
import time

import pytest


@pytest.fixture
def broken():
    raise RuntimeError("no database here")


@pytest.mark.xfail(reason="not implemented")
def test_expected_to_fail():
    assert False


@pytest.mark.xfail(reason="thought broken")
def test_unexpectedly_passes():
    time.sleep(0.01)


def test_needs_a_fixture(broken):
    pass


@pytest.mark.parametrize("n", [1, 2])
def test_numbers(n, tmp_path):
    assert n > 0 and tmp_path.exists()
"""

SUBJECT = {
    "tests/unit/test_toy.py": UNIT,
    "tests/more/test_more.py": MORE,
    "tests/empty/README.md": "No tests here.\n",
    "tests/broken/test_broken.py": "import not_a_module_anywhere\n",
    "tests/slow/test_slow.py": "import time\n\n\ndef test_waits():\n    time.sleep(60)\n",
}

HARNESS = """\
from tracework_harness import capture

unit = capture.tests("T-01", "Do the toy's own unit tests pass?", ["tests/unit"])
capture.tests("T-02", "And the others?", ["tests/more"])
capture.tests("T-03", "Is there a test in tests/empty?", ["tests/empty"])
capture.tests("T-04", "Do the put tests pass?", ["tests/unit"], args=["-k", "keeps_the or key"])
capture.tests("T-05", "Does the broken file import?", ["tests/broken"])
capture.tests("T-06", "Does the slow test end?", ["tests/slow"], timeout=3)
capture.table("own tests", ["outcome", "tests"], sorted(unit.counts.items()))
"""


@pytest.fixture(scope="module")
def pytest_wheels():
    """pytest and what it needs, as wheels of this environment's own copies."""
    return [wheel_of(n) for n in ("pytest", "pluggy", "iniconfig", "packaging", "pygments")]


@pytest.fixture
def index(tmp_path, pytest_wheels):
    served = LocalIndex(tmp_path / "index", pytest_wheels)
    yield served
    served.close()


def _transcript(setup, case: str) -> dict:
    path = setup.folder("tested") / "transcripts" / f"{case}.json"
    return {r["name"]: r["value"] for r in json.loads(path.read_text())["records"]}


def test_the_subjects_pytest_suite_is_a_case_with_counts_and_ids(pinned, tw, index):
    setup = capture_workspace(pinned, tw, SUBJECT)
    index.use_in(setup.ws)
    setup.write("tested", HARNESS, extra=index.pins)
    result = setup.capture("tested", "--repeat", "2", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    statuses = {c["id"]: c["status"] for c in out["cases"]}
    assert statuses == {
        "T-01": "FAIL",
        "T-02": "FAIL",
        "T-03": "UNKNOWN",
        "T-04": "PASS",
        "T-05": "FAIL",
        "T-06": "UNKNOWN",
    }
    results = json.loads((setup.folder("tested") / "results.json").read_text())
    cases = {c["id"]: c for c in results["cases"]}
    version = _transcript(setup, "T-01")["runner"]["version"]
    assert version == pytest.__version__
    assert cases["T-01"]["observed"] == (
        f"2 passed, 1 failed, 1 skipped (pytest {version}, exit status 1)"
    )
    assert cases["T-01"]["criterion"] == "at least one test ran, and none failed or errored"

    unit = _transcript(setup, "T-01")
    assert unit["counts"] == {
        "passed": 2,
        "failed": 1,
        "errors": 0,
        "skipped": 1,
        "xfailed": 0,
        "xpassed": 0,
    }
    node = "tests/unit/test_toy.py::StoreTests::"
    assert [(t["id"], t["outcome"]) for t in unit["tests"]] == [
        (node + "test_delete", "skipped"),
        (node + "test_put_keeps_the_text", "passed"),
        (node + "test_put_returns_a_key", "passed"),
        (node + "test_put_twice_keeps_one", "failed"),
    ]
    by_id = {t["id"]: t for t in unit["tests"]}
    assert by_id[node + "test_put_twice_keeps_one"]["message"] == "AssertionError: 2 != 1"
    assert "the store has no delete yet" in by_id[node + "test_delete"]["message"]
    assert unit["runner"] == {
        "runner": "pytest",
        "version": version,
        "paths": ["tests/unit"],
        "args": [],
        "exit status": 1,
    }

    more = _transcript(setup, "T-02")
    assert {t["id"].split("::", 1)[1]: t["outcome"] for t in more["tests"]} == {
        "test_expected_to_fail": "xfailed",
        "test_unexpectedly_passes": "xpassed",
        "test_needs_a_fixture": "error",
        "test_numbers[1]": "passed",
        "test_numbers[2]": "passed",
    }
    assert more["counts"]["errors"] == 1 and more["counts"]["xfailed"] == 1

    assert cases["T-03"]["observed"] == (
        f"no test; no test was collected (pytest {version}, exit status 5)"
    )
    assert _transcript(setup, "T-04")["counts"]["passed"] == 2
    assert cases["T-04"]["observed"] == f"2 passed (pytest {version}, exit status 0)"

    broken = _transcript(setup, "T-05")["tests"]
    assert [(t["id"], t["outcome"]) for t in broken] == [("tests/broken/test_broken.py", "error")]
    assert "No module named 'not_a_module_anywhere'" in broken[0]["message"]
    assert cases["T-06"]["observed"] == "no test; pytest did not finish within 3 s"

    results = json.loads((setup.folder("tested") / "results.json").read_text())
    assert results["tables"][0]["rows"] == [
        ["errors", 0],
        ["failed", 1],
        ["passed", 2],
        ["skipped", 1],
        ["xfailed", 0],
        ["xpassed", 0],
    ]
    # no duration, no path of the sandbox or the host: the repeat was byte-identical anyway
    for case in ("T-01", "T-02", "T-03", "T-04", "T-05", "T-06"):
        text = (setup.folder("tested") / "transcripts" / f"{case}.json").read_text()
        assert not re.search(r"[0-9]+\.[0-9]+ ?s\b|seconds|duration", text), text
        assert "/capture" not in text and str(setup.ws.root) not in text and "<tree>" not in text
    log = (setup.folder("tested") / "log.txt").read_text()
    assert "test_put_twice_keeps_one" in log  # pytest's own report is in the log
    assert not (setup.folder("tested") / ".pytest_cache").exists()


def test_unittest_runs_the_same_suite_and_pytest_absent_is_unknown(pinned, tw):
    setup = capture_workspace(pinned, tw, SUBJECT)
    setup.write(
        "plain",
        """\
        from tracework_harness import capture

        run = capture.tests("U-01", "Do the unit tests pass?", ["tests/unit"], runner="unittest")
        capture.tests("U-02", "Under pytest?", ["tests/unit"])
        with capture.case("U-03", "What did the first see?") as c:
            c.record("outcomes", run.outcomes)
            c.check("it ran four", holds=len(run.outcomes) == 4, observed=run.observed)
        """,
    )
    result = setup.capture("plain", "--json")
    assert result.exit_code == 0, result.output
    folder = setup.folder("plain")
    cases = {c["id"]: c for c in json.loads((folder / "results.json").read_text())["cases"]}
    assert cases["U-01"]["status"] == "FAIL"
    assert cases["U-01"]["observed"].startswith("2 passed, 1 failed, 1 skipped (unittest ")
    records = json.loads((folder / "transcripts" / "U-01.json").read_text())["records"]
    tests = next(r["value"] for r in records if r["name"] == "tests")
    assert [(t["id"], t["outcome"]) for t in tests] == [
        ("test_toy.StoreTests.test_delete", "skipped"),
        ("test_toy.StoreTests.test_put_keeps_the_text", "passed"),
        ("test_toy.StoreTests.test_put_returns_a_key", "passed"),
        ("test_toy.StoreTests.test_put_twice_keeps_one", "failed"),
    ]
    assert cases["U-02"]["status"] == "UNKNOWN"
    assert (
        cases["U-02"]["observed"] == "no test; pytest is not installed in the capture environment"
    )
    assert cases["U-03"]["status"] == "PASS"


@pytest.mark.parametrize(
    ("call", "words"),
    [
        ("capture.tests('T-01', 'q?', runner='nose')", "runner 'nose' is not one of"),
        ("capture.tests('T-01', 'q?', 'tests')", "paths must be a list of strings"),
        ("capture.tests('T-01', 'q?', timeout=0)", "timeout must be a number of seconds"),
        (
            "with capture.case('X-01', 'q?') as c:\n    capture.tests('T-01', 'q?')",
            "case T-01 opened inside case X-01",
        ),
    ],
    ids=["runner", "paths", "timeout", "inside-a-case"],
)
def test_a_misused_tests_call_is_one_error(pinned, tw, call, words):
    setup = capture_workspace(pinned, tw)
    setup.write("bad", "from tracework_harness import capture\n" + call + "\n")
    result = setup.capture("bad")
    assert result.exit_code == 1
    assert words in one_error(result)


def test_tests_and_trials_run_by_hand_on_an_old_python(tmp_path):
    """Run by hand (no tracework), on the oldest Python here: the suite runs, each
    condition's trial runs once, and the summary lines are printed."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from test_capture_harness import _oldest_python

    python = _oldest_python() or sys.executable
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(
        "import unittest\n\n\nclass T(unittest.TestCase):\n"
        "    def test_one(self):\n        pass\n\n"
        "    def test_two(self):\n        self.fail('no')\n"
    )
    (tmp_path / "h.py").write_text(
        "from tracework_harness import capture\n"
        "run = capture.tests('T-01', 'Do they pass?', ['tests'], runner='unittest')\n"
        "seen = []\n"
        "for trial in capture.trials('M-01', 'Each?', ['a', 'b']):\n"
        "    seen.append((trial.condition, trial.number))\n"
        "    trial.observe('seen')\n"
        "print(sorted(run.outcomes.items()), run.status, seen)\n"
    )
    lib = Path(__file__).resolve().parents[1] / "src" / "tracework" / "capture" / "harness"
    proc = subprocess.run(
        [python, "-s", "-B", "h.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(lib), "PATH": os.environ["PATH"]},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "[('test_x.T.test_one', 'passed'), ('test_x.T.test_two', 'failed')] FAIL "
        "[('a', 1), ('b', 1)]\n"
    )
    assert proc.stderr.endswith("T-01  FAIL  Do they pass?\nM-01  model-driven  Each?\n")
