"""The demo's capture: Fennel's own assistant with a scripted model, as ``make demo`` runs
it — four cases whose statuses a report can cite, byte-identical over two runs — and
run again at Fennel's newer commit, where a registered file changed."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tracework.capture.store import load_capture
from tracework.workspace import Workspace

pytestmark = pytest.mark.slow  # kernels, browsers, sandboxes: not in `make test-fast`


REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples"))

from build_subject import copy_demo  # noqa: E402


def test_the_demo_capture(tmp_path, monkeypatch, tw):
    root = tmp_path / "demo"
    ws = Workspace.init(root)
    commits = copy_demo(root, "fennel")
    (root / "captures").mkdir()
    for name in ("fennel.toml", "fennel.py"):
        shutil.copy(REPO / "captures" / name, root / "captures" / name)
    monkeypatch.chdir(root)
    assert tw("fetch", "fennel").exit_code == 0
    assert tw("capture", "env", "fennel").exit_code == 0
    result = tw("capture", "fennel", "--repeat", "2", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["commit"] == commits[0] and out["runs"] == 2
    assert {c["id"]: c["status"] for c in out["cases"]} == {
        "F-01": "FAIL",
        "F-02": "FAIL",
        "F-03": "PASS",
        "F-04": "PASS",
    }
    cap = load_capture(ws, "fennel", commits[0])
    ages = ((1, True), (6, True), (8, False), (29, False), (31, False))
    assert cap.results.tables[0].rows == ages
    f01 = json.loads((root / cap.folder / "transcripts" / "F-01.json").read_text())
    setup = f01["records"][0]["value"]
    assert setup["store"] == "<fennel.memory.MemoryStore object at <addr>>"
    assert f01["records"][1]["value"][0]["request_id"] == "<uuid-1>"
    assert sorted(cap.manifest.verified_files) == [
        "README.md",
        "fennel/__init__.py",
        "fennel/agent.py",
        "fennel/memory.py",
        "pyproject.toml",
    ]

    # at the newer commit the same cases run again, on code that has moved on
    assert tw("capture", "env", "fennel", "--commit", commits[-1]).exit_code == 0
    newer = tw("capture", "fennel", "--commit", commits[-1], "--json")
    assert newer.exit_code == 0, newer.output
    again = load_capture(ws, "fennel", commits[-1])
    assert "fennel/memory.py" in again.manifest.changed_since_pin
