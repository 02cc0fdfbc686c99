"""A capture as a report will cite it: ``load_capture`` gives a typed, frozen model with
every file's SHA-256, and refuses a folder whose files no longer match its manifest."""

from __future__ import annotations

import hashlib
import re

import pytest
from pydantic import ValidationError

from capture_setup import PLAIN_HARNESS, capture_workspace
from tracework.capture.errors import CaptureDamaged, CaptureError
from tracework.capture.store import load_capture, verify_capture


@pytest.fixture
def captured(pinned, tw):
    made = capture_workspace(pinned, tw)
    made.write("cap", PLAIN_HARNESS)
    assert made.capture("cap").exit_code == 0
    return made


@pytest.mark.slow
def test_load_capture_is_typed_and_hashed(captured):
    cap = load_capture(captured.ws, "cap", captured.commit)
    assert cap.commit == captured.commit and cap.folder == f"captures/cap/{captured.commit[:12]}"
    case = cap.results.cases[0]
    assert (case.id, case.status, case.transcript) == ("T-01", "PASS", "transcripts/T-01.json")
    assert case.checks[0].holds is True
    assert cap.model_arm is None
    assert cap.manifest.register_name == "demo"
    assert sorted(cap.manifest.verified_files) == ["toy/__init__.py", "toy/store.py"]
    for name in ("results.json", "transcripts/T-01.json", "environment.txt", "harness.py"):
        data = (captured.folder("cap") / name).read_bytes()
        assert cap.file(name).sha256 == hashlib.sha256(data).hexdigest()
    assert load_capture(captured.ws, "cap", captured.commit[:12]) == cap
    with pytest.raises(ValidationError):
        cap.results.cases[0].status = "FAIL"  # frozen


@pytest.mark.slow
def test_verify_names_every_changed_missing_and_unlisted_file(captured):
    folder = captured.folder("cap")
    assert verify_capture(folder).ok
    (folder / "results.json").write_text("{}\n")
    (folder / "transcripts" / "T-01.json").unlink()
    (folder / "notes.txt").write_text("added by hand\n")
    states = {f.path: f.state for f in verify_capture(folder).files}
    assert states["results.json"] == "changed"
    assert states["transcripts/T-01.json"] == "missing"
    assert states["notes.txt"] == "unlisted"
    assert states["log.txt"] == "verified"
    damaged = re.escape("results.json is changed (and 2 more files)")
    with pytest.raises(CaptureDamaged, match=damaged):
        load_capture(captured.ws, "cap", captured.commit)


@pytest.mark.slow
def test_an_absent_capture_is_named(captured):
    with pytest.raises(CaptureError, match="no capture cap at 000000000000"):
        load_capture(captured.ws, "cap", "0" * 40)
    with pytest.raises(CaptureError, match="not a commit id"):
        load_capture(captured.ws, "cap", "abc")
