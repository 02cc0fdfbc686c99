"""Determinism: a scripted capture run twice gives byte-identical files, and when it
does not, ``--repeat`` names the first file and line that differ."""

from __future__ import annotations

import json

import pytest

from capture_setup import PLAIN_HARNESS, capture_workspace, one_error, snapshot

pytestmark = pytest.mark.slow  # kernels, browsers, sandboxes: not in `make test-fast`


@pytest.fixture
def setup(pinned, tw):
    return capture_workspace(pinned, tw)


RANDOM_HARNESS = """\
import random
from tracework_harness import capture


with capture.case("T-01", "Is the token stable?") as c:
    c.record("fixed", "the same every run")
    c.record("token", random.random())
    c.check("a token was drawn", holds=True, observed="one token")
"""


def test_repeat_names_the_first_file_and_line_that_differ(setup):
    setup.write("cap", RANDOM_HARNESS)
    result = setup.capture("cap", "--repeat", "2")
    assert result.exit_code == 1
    message = one_error(result)
    assert 'run 2 differs from run 1: transcripts/T-01.json line 11: run 1 has \'"value": 0.' in (
        message
    )
    assert "capture.normalise(pattern, placeholder)" in message
    assert not setup.folder("cap").exists()
    failed = setup.failed("cap")
    first = (failed / "run-1" / "transcripts" / "T-01.json").read_text().split("\n")
    second = (failed / "run-2" / "transcripts" / "T-01.json").read_text().split("\n")
    assert first[:10] == second[:10] and first[10] != second[10]


def test_a_harness_rule_makes_it_deterministic(setup):
    setup.write(
        "cap",
        RANDOM_HARNESS.replace(
            "from tracework_harness import capture\n",
            "from tracework_harness import capture\ncapture.normalise(r'0\\.[0-9]+', '<random>')\n",
        ),
    )
    result = setup.capture("cap", "--repeat", "3", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["runs"] == 3
    manifest = json.loads((setup.folder("cap") / "manifest.json").read_text())
    assert manifest["identical_runs"] == 3
    transcript = json.loads((setup.folder("cap") / "transcripts" / "T-01.json").read_text())
    assert transcript["records"][1]["value"] == "<random>"
    results = json.loads((setup.folder("cap") / "results.json").read_text())
    assert results["normalisation"][-1] == {
        "origin": "harness",
        "placeholder": "<random>",
        "rule": "0\\.[0-9]+",
    }


def test_two_captures_are_byte_identical(setup):
    setup.write("cap", PLAIN_HARNESS)
    assert setup.capture("cap").exit_code == 0
    first = snapshot(setup.folder("cap"))
    assert setup.capture("cap", "--repeat", "2").exit_code == 0
    second = snapshot(setup.folder("cap"))
    manifest = first.pop("manifest.json"), second.pop("manifest.json")
    assert first == second
    assert manifest[0] != manifest[1]  # it says 2 identical runs now


def test_files_are_canonical_json(setup):
    setup.write("cap", PLAIN_HARNESS)
    assert setup.capture("cap").exit_code == 0
    for name in ("results.json", "manifest.json", "transcripts/T-01.json"):
        raw = (setup.folder("cap") / name).read_bytes()
        data = json.loads(raw)
        assert raw == (
            json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
        ).encode("utf-8")
