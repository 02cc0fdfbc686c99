"""A capture in a report: cases and transcript excerpts as evidence, checked like any other,
``observed`` only with them, and stale at a commit that has no capture of its own."""

from __future__ import annotations

import hashlib
import json

import pytest

import tracework
from capture_setup import PLAIN_HARNESS, STORE, capture_workspace
from conftest import shown_html
from tracework.errors import QuoteNotInRegister, RecordError

pytestmark = pytest.mark.slow  # kernels, browsers, sandboxes: not in `make test-fast`


@pytest.fixture
def captured(pinned, tw):
    setup = capture_workspace(pinned, tw)
    setup.write("cap", PLAIN_HARNESS)
    result = setup.capture("cap")
    assert result.exit_code == 0, result.output
    return setup


def declare(wb, cap):
    """A route observed through the capture's case and an excerpt of its transcript."""
    q = wb.source("SRC-1").quote("toy/store.py", symbol="Store.put")
    case, items = cap.case("T-01"), cap.transcript("T-01", "items")
    wb.component("RT-CMP-store", label="Store", identity="`Store`", evidence=[q])
    wb.route(
        "RT-RTE-put", label="Putting", progression="text → `put` → items",
        passes_through=["RT-CMP-store"], implementation="wired", operation="observed",
        evidence=[q, case, items],
    )  # fmt: skip
    return case, items


def test_a_capture_is_evidence_registered_and_checked(captured, tw, workspace):
    wb = tracework.open("demo")
    cap = wb.capture("cap")  # author mode registers it as the next source
    assert cap.source == "SRC-2" and not cap.stale
    register = (workspace.registers / "demo.yaml").read_text()
    assert "kind: capture" in register and "transcripts/T-01.json" in register
    case, items = declare(wb, cap)
    assert case.status == "PASS" and case.state == "verified"
    assert list(items.value.values()) == ["hello"] and len(items.sha256) == 64
    with pytest.raises(RecordError, match='operation="observed" needs evidence of it running'):
        wb.claim("RT-CLM-x", label="X", claim="c", assessment="a", operation="observed")
    data = wb.records_json()
    assert data["captures"]["SRC-2"]["captured_at"] == captured.commit
    assert data["capture_evidence"]["SRC-2/T-01"] == {
        "kind": "case", "source": "SRC-2", "case": "T-01", "path": None, "status": "PASS",
        "sha256": None, "state": "verified",
    }  # fmt: skip
    assert data["capture_evidence"]["SRC-2/T-01/items"]["sha256"] == items.sha256
    page = shown_html(cap)
    assert "Runtime capture: cap" in page and "T-01 transcript" in page and "PASS" in page
    assert wb.summary()["ok"]
    # the register holds every observed file's hash: an edited transcript is caught
    transcript = captured.folder("cap") / "transcripts" / "T-01.json"
    transcript.write_text(transcript.read_text().replace("hello", "HELLO"))
    checked = json.loads(tw("check", "demo", "--json").stdout)
    states = {i["id"]: i["state"] for i in checked["items"]}
    assert states[f"captures/cap/{captured.commit[:12]}/transcripts/T-01.json"] == "changed"
    assert checked["ok"] is False


def test_render_mode_needs_the_capture_in_the_register(captured):
    with pytest.raises(QuoteNotInRegister, match="capture cap is not in register demo"):
        tracework.open("demo", mode="render").capture("cap")
    assert captured.tw("register", "add-capture", "demo", "cap").exit_code == 0
    cap = tracework.open("demo", mode="render").capture("cap")
    assert cap.source == "SRC-2"


def test_at_a_newer_commit_capture_evidence_is_stale_until_captured_there(captured, tw):
    author = tracework.open("demo")
    declare(author, author.capture("cap"))  # the quote and the capture registered at the pin
    captured.repo.write("toy/store.py", STORE.replace("A toy store", "A toy store, documented"))
    newer = captured.repo.commit("docs")
    assert tw("fetch", "toy").exit_code == 0
    wb = tracework.open("demo", commit=newer, mode="render")
    cap = wb.capture("cap")
    assert cap.stale
    case, items = declare(wb, cap)
    assert case.state == items.info.state == "stale"
    assert wb._drifted()["RT-RTE-put"] == ["SRC-2/T-01", "SRC-2/T-01/items"]
    assert f"stale (captured at {captured.commit[:12]})" in shown_html(cap)
    # captured at the newer commit too: the same status and value, observed again there
    assert tw("capture", "env", "cap", "--commit", newer).exit_code == 0
    assert tw("capture", "cap", "--commit", newer).exit_code == 0
    again = tracework.open("demo", commit=newer, mode="render")
    cap = again.capture("cap")
    assert not cap.stale
    case, items = declare(again, cap)
    assert case.state == items.info.state == "verified"
    assert "RT-RTE-put" not in again._drifted()
    assert again.records_json()["captures"]["SRC-2"]["captured_at"] == newer


CELL = """cap = wb.capture("cap")
q = src.quote("toy/store.py", symbol="Store.put")
wb.component("RT-CMP-store", label="Store", identity="`Store`", evidence=[q])
wb.route("RT-RTE-put", label="Putting", progression="text to items",
         passes_through=["RT-CMP-store"], implementation="wired", operation="observed",
         evidence=[q, cap.case("T-01"), cap.transcript("T-01", "items")])
cap"""


def write_notebook(workspace) -> None:
    """notebooks/demo.ipynb: opens the register, cites the capture (:data:`CELL`), done."""
    import nbformat

    path = workspace.notebooks / "demo.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "tracework",
        "display_name": "tracework",
        "language": "python",
    }
    params = nbformat.v4.new_code_cell('register = "demo"\ncommit = None\nmode = "author"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        params,
        nbformat.v4.new_code_cell(
            "import tracework as tw\nwb = tw.open(register, commit=commit, mode=mode)\n"
            'src = wb.source("SRC-1")'
        ),
        nbformat.v4.new_code_cell(CELL),
        nbformat.v4.new_code_cell("wb.done()"),
    ]
    nbformat.write(nb, path)


def test_rerender_runs_captures_only_when_asked(captured, tw, workspace):
    write_notebook(workspace)
    exec_author = tracework.open("demo")  # author mode: the quote and the capture registered
    src = exec_author.source("SRC-1")
    src.quote("toy/store.py", symbol="Store.put")
    exec_author.capture("cap")
    rendered = tw("render", "demo")
    assert rendered.exit_code == 0, rendered.output
    captured.repo.write("toy/store.py", STORE.replace("A toy store", "A toy store, documented"))
    newer = captured.repo.commit("docs")
    assert tw("fetch", "toy").exit_code == 0
    plain = json.loads(tw("rerender", "demo", "--commit", newer, "--json").output)
    assert plain["reports"][0]["status"] == "rendered"
    assert not (captured.ws.root / "captures" / "cap" / newer[:12]).exists()  # never unasked
    records = workspace.reports / "demo" / newer[:12] / "records.json"
    stale = json.loads(records.read_text())
    assert stale["captures"]["SRC-2"]["stale"] is True
    route = next(r for r in stale["records"] if r["id"] == "RT-RTE-put")
    assert route["needs_review"] == ["SRC-2/T-01", "SRC-2/T-01/items"]
    again = json.loads(tw("rerender", "demo", "--commit", newer, "--capture", "--json").output)
    assert again["reports"][0]["status"] == "rendered"  # a new capture is a new input
    observed = json.loads(records.read_text())
    assert observed["captures"]["SRC-2"] == {**observed["captures"]["SRC-2"], "stale": False}
    assert observed["captures"]["SRC-2"]["captured_at"] == newer
    route = next(r for r in observed["records"] if r["id"] == "RT-RTE-put")
    assert route["needs_review"] == []
    skipped = json.loads(tw("rerender", "demo", "--commit", newer, "--json").output)
    assert skipped["reports"][0]["status"] == "skipped"


def test_a_capture_made_again_since_it_was_registered_is_one_answer_with_its_fix(
    captured, tw, workspace
):
    """The harness changed and the capture was made again at the pin: `check`, the
    report's check summary and the capture's section on the page all say the register
    holds another capture — a capture source, not a document — and name the one fix."""
    write_notebook(workspace)
    author = tracework.open("demo")
    author.source("SRC-1").quote("toy/store.py", symbol="Store.put")
    author.capture("cap")  # registered as SRC-2
    assert tw("render", "demo").exit_code == 0
    old_harness = (captured.folder("cap") / "harness.py").read_bytes()
    captured.write("cap", PLAIN_HARNESS + "# the harness, changed\n")
    assert captured.capture("cap").exit_code == 0
    new_harness = (captured.folder("cap") / "harness.py").read_bytes()
    fix = "tracework register add-capture demo cap"
    line = (
        f"capture source SRC-2 file captures/cap/{captured.commit[:12]}/harness.py: changed "
        f"since the capture was registered; fix: `{fix}`"
    )
    checked = tw("check", "demo")
    assert checked.exit_code == 1
    assert line in checked.stdout and "document" not in checked.stdout
    data = json.loads(tw("check", "demo", "--json").stdout)
    [changed] = [i for i in data["items"] if i["state"] != "verified"]
    assert (changed["source"], changed["hint"]) == ("SRC-2", fix)
    rendered = tw("render", "demo")  # at the pin: the same answer, so no page
    assert rendered.exit_code == 1 and line in rendered.output
    wb = tracework.open("demo", mode="render")
    cap = wb.capture("cap")
    declare(wb, cap)
    assert line in wb.summary()["problems"] and not wb.summary()["ok"]
    section = shown_html(cap)  # where the capture is shown, marked, with the fix
    assert "not as registered" in section and f"fix: `{fix}`" in section

    assert tw(*fix.split()[1:]).exit_code == 0  # registered again: all hold, everywhere
    assert tw("check", "demo").exit_code == 0
    rendered = tw("render", "demo")
    assert rendered.exit_code == 0, rendered.output
    page = (workspace.reports / "demo" / captured.commit[:12] / "report.html").read_text()
    new, old = (hashlib.sha256(h).hexdigest() for h in (new_harness, old_harness))
    assert new in page and old not in page
    assert "not as registered" not in page
    # a file of it gone: the fix is to capture again (byte-identical, it holds as registered)
    (captured.folder("cap") / "transcripts" / "T-01.json").unlink()
    again = f"tracework capture cap --commit {captured.commit[:12]}"
    gone = tw("check", "demo")
    assert gone.exit_code == 1
    assert (
        f"transcripts/T-01.json: missing: the capture is not in the workspace; fix: `{again}`"
        in (gone.stdout)
    )
    assert captured.capture("cap", "--commit", captured.commit[:12]).exit_code == 0
    assert tw("check", "demo").exit_code == 0
