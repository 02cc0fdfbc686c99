"""Rubrics and ``wb.mark``: rubric files, marks checked like records, records.json."""

from __future__ import annotations

import json
import re

import pytest

import tracework
from conftest import shown_html
from tracework.errors import RecordError
from tracework.records.rubrics import RubricError, load_rubric

RUBRIC = """\
# hand-written, with a comment
title: Store hygiene
description: What a key-value store may do to keep itself tidy.
mechanisms:
  - id: bounded
    name: A bound on items
    definition: Puts beyond a limit are refused.
    evidence: The check and its limit.
  - id: expiry
    name: Items expire
    definition: Items leave on their own after a while.
    evidence: The rule that ages them out.
  - id: audit
    name: Writes are logged
    definition: Every put leaves a trace.
    evidence: The logging call.
"""

STORE = (
    "LIMIT = 3\n"
    "\n"
    "\n"
    "class Store:\n"
    "    def put(self, key, value):\n"
    "        if len(self.items) >= LIMIT:\n"
    "            raise ValueError(key)\n"
    "        self.items[key] = value\n"
)


@pytest.fixture
def wb(pinned, workspace):
    pinned({"pkg/store.py": STORE})
    (workspace.registers / "rubrics").mkdir()
    (workspace.registers / "rubrics" / "hygiene.yaml").write_text(RUBRIC)
    return tracework.open("demo")


@pytest.mark.slow
def test_marks_are_checked_counted_and_written_to_records_json(wb, workspace):
    guard = wb.source("SRC-1").quote("pkg/store.py", lines=(6, 7), id="Q-guard")
    wb.guarantee(
        "RT-GRT-bound",
        owner="`Store.put`",
        enforcement_point="the length check",
        strength="enforced",
        covered_path="every put",
        evidence=[guard],
    )
    wb.absence(
        "RT-ABS-log",
        label="No logging",
        statement="Nothing logs a put.",
        scope=["pkg/*.py"],
        patterns=[r"\blogging\b", r"print\("],
    )
    card = wb.mark("hygiene", "bounded", present=True, evidence=["RT-GRT-bound", guard])
    assert "present" in shown_html(card) and "A bound on items" in shown_html(card)
    wb.mark("hygiene", "audit", present=False, evidence=["RT-ABS-log"], note="Checked by search.")
    wb.done()
    data = json.loads((workspace.reports / "demo" / "draft" / "records.json").read_text())
    marks = data["marks"]["hygiene"]
    assert (marks["title"], marks["mechanisms"], marks["carries"]) == ("Store hygiene", 3, 1)
    assert marks["marks"]["bounded"] == {
        "present": True,
        "evidence": ["RT-GRT-bound", "Q-guard"],
        "note": None,
        "needs_review": [],
        "reviewed_at": None,
        "reviewer": None,
    }
    assert marks["marks"]["audit"]["evidence"] == ["RT-ABS-log"]
    assert "expiry" not in marks["marks"]  # not marked: counted in "mechanisms" only
    assert marks["sha256"] == load_rubric(workspace, "hygiene")[1]
    assert data["checks"]["checks"]["marks"]["ok"] is True


def test_a_mark_is_refused_when_it_cannot_be_checked(wb):
    q = wb.source("SRC-1").quote("pkg/store.py", lines=(1, 1), id="Q-limit")
    with pytest.raises(RecordError, match="present needs evidence"):
        wb.mark("hygiene", "bounded", present=True)
    with pytest.raises(RubricError, match="no mechanism 'nope'"):
        wb.mark("hygiene", "nope", present=False)
    with pytest.raises(RubricError, match="no rubric 'other'"):
        wb.mark("other", "bounded", present=False)
    with pytest.raises(RecordError, match="RT-CMP-ghost is not a record declared above"):
        wb.mark("hygiene", "bounded", present=True, evidence=["RT-CMP-ghost"])
    with pytest.raises(RecordError, match="not a quote in register"):
        wb.mark("hygiene", "bounded", present=True, evidence=["Q-ghost"])
    with pytest.raises(RecordError, match="True or False"):
        wb.mark("hygiene", "bounded", present="yes", evidence=[q])  # type: ignore[arg-type]
    wb.mark("hygiene", "bounded", present=True, evidence=[q])
    with pytest.raises(RecordError, match="marked twice"):
        wb.mark("hygiene", "bounded", present=False)


@pytest.mark.slow
def test_a_mark_whose_evidence_drifted_needs_re_review(pinned, tw, workspace):
    repo = pinned({"pkg/store.py": STORE})
    (workspace.registers / "rubrics").mkdir()
    (workspace.registers / "rubrics" / "hygiene.yaml").write_text(RUBRIC)
    wb = tracework.open("demo")
    guard = wb.source("SRC-1").quote("pkg/store.py", lines=(6, 7), id="Q-guard")
    repo.write("pkg/store.py", STORE.replace("if len(self.items) >= LIMIT:", "if False:"))
    head = repo.commit("drop the bound")
    assert tw("fetch", "toy").exit_code == 0

    later = tracework.open("demo", commit=head, mode="render")
    q = later.source("SRC-1").quote("pkg/store.py", lines=(6, 7), id="Q-guard")
    assert q.id == guard.id and q.state == "changed"
    card = later.mark("hygiene", "bounded", present=True, evidence=[q])
    assert "needs re-review" in shown_html(card)
    data = later.records_json()
    assert data["marks"]["hygiene"]["marks"]["bounded"]["needs_review"] == ["Q-guard"]
    summary = data["checks"]
    assert summary["checks"]["marks"]["ok"] is False
    assert any(p.startswith("mark hygiene/bounded: evidence drifted") for p in summary["problems"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("title: [unclosed\n", "not valid YAML"),
        ("- a list\n", "expected a mapping"),
        ("title: T\nmechanisms: []\n", "malformed rubric at mechanisms"),
        (
            "title: T\nmechanisms:\n  - {id: Bad Id, name: n, definition: d, evidence: e}\n",
            "lower-case letters",
        ),
        (
            "title: T\nmechanisms:\n"
            "  - {id: a, name: n, definition: d, evidence: e}\n"
            "  - {id: a, name: m, definition: d, evidence: e}\n",
            "appears twice",
        ),
        ("title: T\nmechanisms:\n  - {id: a, name: n, definition: d}\n", "evidence"),
        (b"title: \xff\n", "not UTF-8"),
    ],
)
def test_a_malformed_rubric_is_one_clear_error(workspace, text, message):
    folder = workspace.registers / "rubrics"
    folder.mkdir(exist_ok=True)
    path = folder / "broken.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(RubricError, match=message) as caught:
        load_rubric(workspace, "broken")
    assert "registers/rubrics/broken.yaml" in str(caught.value)


@pytest.mark.slow
def test_marks_after_records_still_get_their_anchors(wb, monkeypatch):
    """done() shows the marks section, with the quotes only marks cite, whatever the
    order of records() and mark() in the notebook."""
    shown: list[str] = []
    monkeypatch.setattr(
        "tracework.notebook.workbench.display",
        lambda obj, **kw: shown.append(getattr(obj, "markup", "")),
    )
    wb.absence("RT-ABS-log", statement="No logging.", scope=["pkg/*.py"], patterns=["logging"])
    wb.records()
    q = wb.source("SRC-1").quote("pkg/store.py", lines=(1, 1), id="Q-limit")
    wb.mark("hygiene", "bounded", present=True, evidence=[q])
    wb.mark("hygiene", "audit", present=False, evidence=["RT-ABS-log"])
    wb.done()
    page = "".join(shown)
    assert page.count('id="mark/hygiene/bounded"') == 1
    assert page.count('id="rubric/hygiene"') == 1
    assert page.count('id="Q-limit"') == 1  # first cited by a mark, after records()
    assert "expiry (Items expire): not marked" in page


def test_mark_anchors_never_collide(pinned, workspace):
    pinned({"pkg/store.py": STORE})
    folder = workspace.registers / "rubrics"
    folder.mkdir()
    mechanism = "  - {id: %s, name: n, definition: d, evidence: e}\n"
    (folder / "a.yaml").write_text("title: A\nmechanisms:\n" + mechanism % "b-c")
    (folder / "a-b.yaml").write_text("title: AB\nmechanisms:\n" + mechanism % "c")
    wb = tracework.open("demo")
    wb.mark("a", "b-c", present=False)
    wb.mark("a-b", "c", present=False)  # once "mark-a-b-c" for both
    marks = wb.records_json()["marks"]
    assert set(marks) == {"a", "a-b"}


def test_the_report_header_is_an_atlas_of_each_rubric(wb, workspace):
    """A chip per mechanism, in the rubric's order, with its state in words as well as
    colour, each linking the mark's card (an unmarked mechanism's line too); names from
    the rubric file are text."""
    from tracework.render.export import header_html

    rubric = workspace.registers / "rubrics" / "hygiene.yaml"
    rubric.write_text(RUBRIC.replace("Items expire", "Items <script>expire</script>"))
    wb = tracework.open("demo")
    q = wb.source("SRC-1").quote("pkg/store.py", lines=(6, 7), id="Q-guard")
    wb.mark("hygiene", "bounded", present=True, evidence=[q])
    wb.mark("hygiene", "audit", present=False)
    records = wb.records_json()
    assert records["marks"]["hygiene"]["rubric_mechanisms"][1] == {
        "id": "expiry",
        "name": "Items <script>expire</script>",
    }
    header = header_html(wb._kernel_records(), "A <b>title</b>")
    chips = re.findall(
        r'<a class="tw-chip ([^"]*)" href="([^"]*)" title="([^"]*)">'
        r'<span aria-hidden="true">.</span> ([^<]*)<span',
        header,
    )  # each chip says its mechanism's name, its id the tooltip
    assert chips == [
        ("tw-chip-present", "#mark/hygiene/bounded", "bounded", "A bound on items"),
        (
            "tw-chip-unmarked",
            "#mark/hygiene/expiry",
            "expiry",
            "Items &lt;script&gt;expire&lt;/script&gt;",
        ),
        ("tw-chip-absent", "#mark/hygiene/audit", "audit", "Writes are logged"),
    ]
    assert ": carries 1 of 3</p>" in header and '<span class="tw-sr">: not marked</span>' in header
    assert "<b>title" not in header and "<script>" not in header


def test_a_chip_says_needs_re_review_and_every_chip_lands_on_an_anchor(pinned, tw, workspace):
    from tracework.render.export import header_html
    from tracework.views.marks import marks_section

    repo = pinned({"pkg/store.py": STORE})
    (workspace.registers / "rubrics").mkdir()
    (workspace.registers / "rubrics" / "hygiene.yaml").write_text(RUBRIC)
    tracework.open("demo").source("SRC-1").quote("pkg/store.py", lines=(6, 7), id="Q-guard")
    repo.write("pkg/store.py", STORE.replace("if len(self.items) >= LIMIT:", "if False:"))
    head = repo.commit("drop the bound")
    assert tw("fetch", "toy").exit_code == 0
    later = tracework.open("demo", commit=head, mode="render")
    q = later.source("SRC-1").quote("pkg/store.py", lines=(6, 7), id="Q-guard")
    later.mark("hygiene", "bounded", present=True, evidence=[q])
    header = header_html(later._kernel_records(), "T")
    assert 'class="tw-chip tw-chip-present tw-chip-review"' in header
    assert '<span class="tw-sr">: present, needs re-review</span>' in header
    rubric = load_rubric(workspace, "hygiene")[0]
    section = marks_section(later._marks.values(), {"hygiene": rubric}, later._marks_drifted())
    for href in re.findall(r'class="tw-chip[^"]*" href="#([^"]*)"', header):
        assert f'id="{href}"' in section


def test_the_marks_move_near_the_top_of_the_page():
    """wb.done() shows the marks last; the page shows them after the title's cell."""
    import nbformat

    from tracework.render.export import reader_notebook

    def shown(html: str, tag: str | None = None) -> nbformat.NotebookNode:
        meta = {"tracework": tag} if tag else {}
        out = nbformat.v4.new_output("display_data", {"text/html": html}, metadata=meta)
        return nbformat.v4.new_code_cell(outputs=[out])

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("register = 'demo'"),
            nbformat.v4.new_markdown_cell("# The title\n\nWhat this is."),
            shown("<section>records</section>"),
            shown('<section class="tw-marks">marks</section>', "marks"),
        ]
    )
    reader, title = reader_notebook(nb)
    assert title == "The title"
    texts = [
        c.source if c.cell_type == "markdown" else [o.data["text/html"] for o in c.outputs]
        for c in reader.cells
    ]
    assert texts[1:] == [
        "\nWhat this is.",
        ['<section class="tw-marks">marks</section>'],
        ["<section>records</section>"],
        [],
    ]
    assert reader.cells[2].id == "tracework-marks"
    assert len(nb.cells[3].outputs) == 1  # the executed notebook is left as it was


def test_a_mark_takes_a_reviewer_and_a_review_date_as_records_do(wb, workspace):
    q = wb.source("SRC-1").quote("pkg/store.py", lines=(6, 7), id="Q-guard")
    card = wb.mark(
        "hygiene", "bounded", present=True, evidence=[q], reviewed="2026-05-01", reviewer="A. <b>"
    )
    pin = wb.pin
    assert f"Reviewed by A. &lt;b&gt; against <code>{pin[:12]}</code> on 2026-05-01" in (
        card._repr_html_()
    )
    mark = wb.records_json()["marks"]["hygiene"]["marks"]["bounded"]
    assert mark["reviewed_at"] == {"commit": pin, "date": "2026-05-01"}
    assert mark["reviewer"] == "A. <b>"
    for reviewed, words in (("2026-02-30", "not a date"), ((pin, "01/05/2026"), "YYYY-MM-DD")):
        with pytest.raises(RecordError, match=words):
            wb.mark("hygiene", "expiry", present=False, reviewed=reviewed)
    for reviewer in ("", "two\nlines", 3):
        with pytest.raises(RecordError, match="reviewer= takes a name on one line"):
            wb.mark("hygiene", "expiry", present=False, reviewer=reviewer)


# -- reviewed=: a review covers the evidence unchanged since its commit --------------------

GUARD_GONE = STORE.replace("if len(self.items) >= LIMIT:", "if False:")


@pytest.fixture
def reviewed(pinned, tw, workspace):
    """Q-guard quoted at the pin A; M edits the guard; H only adds a line above it (the
    guard's bytes as at M, two lines down); N edits the guard again."""
    repo = pinned({"pkg/store.py": STORE})
    (workspace.registers / "rubrics").mkdir()
    (workspace.registers / "rubrics" / "hygiene.yaml").write_text(RUBRIC)
    tracework.open("demo").source("SRC-1").quote("pkg/store.py", lines=(6, 7), id="Q-guard")
    repo.write("pkg/store.py", GUARD_GONE).commit("drop the bound")
    repo.write("pkg/store.py", "import os\n" + GUARD_GONE).commit("an import")
    repo.write("pkg/store.py", "import os\n" + GUARD_GONE.replace("False", "None")).commit("again")
    assert tw("fetch", "toy").exit_code == 0
    return repo


def _surfaces(wb, mechanism: str) -> dict[str, bool]:
    """Whether each place a mark is shown says it needs re-review: its card (the marks
    section), records.json, the header's chip, the rubric page's cell, the mark history."""
    from tracework.render.export import header_html
    from tracework.site.publish import _matrix_row, mark_history
    from tracework.site.read import Render, Report
    from tracework.views.marks import marks_section

    rubric, digest = load_rubric(wb.ws, "hygiene")
    section = marks_section(wb._marks.values(), {"hygiene": rubric}, wb._marks_drifted())
    card = section.split(f'id="mark/hygiene/{mechanism}"', 1)[1].split("</article>", 1)[0]
    kernel = wb._kernel_records()
    header = header_html(kernel, "T")
    chip = re.search(rf'<a class="tw-chip ([^"]*)" href="#mark/hygiene/{mechanism}"', header)
    assert chip is not None
    report = Report("demo", [Render(wb.commit[:12], kernel, None)], [], None, None, None)  # type: ignore[arg-type]
    cells = _matrix_row(report, report.renders[0], "hygiene", rubric, digest)["cells"]
    (cell,) = [c for m, c in zip(rubric.mechanisms, cells, strict=True) if m.id == mechanism]
    (history,) = mark_history(report)
    (change,) = [c for c in history["changes"] if c["mechanism"] == mechanism]
    return {
        "card": "needs re-review" in card,
        "records.json": bool(kernel.marks["hygiene"].marks[mechanism].needs_review),
        "chip": "tw-chip-review" in chip.group(1),
        "rubric page": cell["review"],
        "mark history": "needs re-review" in change["after"],
    }


def test_a_review_at_the_commit_shown_clears_the_flag_everywhere(reviewed, workspace):
    """A mark reviewed against the newest commit once still said "needs re-review" beside
    "Reviewed … against" that very commit; one reviewed against the pin still does."""
    _a, _m, head, _n = reviewed.commits
    later = tracework.open("demo", commit=head, mode="render")
    q = later.source("SRC-1").quote("pkg/store.py", lines=(6, 7), id="Q-guard")
    assert q.state == "changed"
    later.mark("hygiene", "bounded", present=True, evidence=[q], reviewed=(head, "2026-05-01"))
    later.mark("hygiene", "expiry", present=True, evidence=[q], reviewed="2026-05-01")
    cleared, flagged = _surfaces(later, "bounded"), _surfaces(later, "expiry")
    assert cleared == dict.fromkeys(cleared, False)
    assert flagged == dict.fromkeys(flagged, True)
    marks = later.records_json()["checks"]["checks"]["marks"]
    assert marks["ok"] is False and "1 need re-review" in marks["detail"]
    card = later._marks["mark/hygiene/bounded"]
    assert card.reviewed_at is not None and card.reviewed_at.commit == head


def test_a_review_covers_drift_before_its_commit_and_not_after(reviewed):
    """Reviewed against M, where the guard had already changed: at H (the same bytes,
    moved down a line) nothing is left to review; at N (edited again) the flag is back.
    Records follow the same rule, and a mark citing a flagged record is covered by its
    own review when the drift behind that record is unchanged since it."""
    _a, m, head, newest = reviewed.commits
    for commit, flags in ((head, False), (newest, True)):
        wb = tracework.open("demo", commit=commit, mode="render")
        q = wb.source("SRC-1").quote("pkg/store.py", lines=(6, 7), id="Q-guard")
        at_m = (m, "2026-05-01")
        wb.guarantee(
            "RT-GRT-bound", owner="`Store.put`", enforcement_point="the length check",
            strength="enforced", covered_path="every put", evidence=[q], reviewed=at_m,
        )  # fmt: skip
        wb.guarantee(
            "RT-GRT-pin", owner="`Store.put`", enforcement_point="the length check",
            strength="enforced", covered_path="every put", evidence=[q], reviewed="2026-05-01",
        )  # fmt: skip
        wb.mark("hygiene", "bounded", present=True, evidence=[q], reviewed=at_m)
        wb.mark("hygiene", "audit", present=True, evidence=["RT-GRT-pin"], reviewed=at_m)
        records = {r["id"]: r["needs_review"] for r in wb.records_json()["records"]}
        assert records == {"RT-GRT-bound": ["Q-guard"] if flags else [], "RT-GRT-pin": ["Q-guard"]}
        assert set(_surfaces(wb, "bounded").values()) == {flags}, commit
        assert set(_surfaces(wb, "audit").values()) == {flags}, commit


def test_a_mark_citing_a_file_that_changed_needs_re_review(reviewed):
    """A mark is checked like a record: a cited whole file that changed flags it (marks
    once looked at their quotes and records only)."""
    head = reviewed.commits[2]
    wb = tracework.open("demo", commit=head, mode="render")
    wb.mark("hygiene", "bounded", present=True, evidence=["SRC-1:pkg/store.py"])
    entry = wb.records_json()["marks"]["hygiene"]["marks"]["bounded"]
    assert entry["needs_review"] == ["SRC-1:pkg/store.py"]
