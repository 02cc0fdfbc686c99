"""The notebook API in-process: author and render modes, records, errors, records.json."""

from __future__ import annotations

import json

import pytest

import tracework
from conftest import shown_html
from tracework.errors import QuoteNotInRegister, RecordError, TraceworkError

STORE = (
    "class Store:\n"
    "    def put(self, key, value):\n"
    "        self.items[key] = value\n"
    "        return key\n"
    "\n"
    "\n"
    "LIMIT = 3\n"
)


@pytest.fixture
def wb(pinned):
    pinned({"pkg/store.py": STORE, "pkg/util.py": "def helper():\n    return 1\n"})
    return tracework.open("demo")


@pytest.mark.slow
def test_author_mode_adds_quotes_and_render_mode_finds_them(wb, workspace):
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    assert q.id == "Q-store-Store.put" and q.state == "verified"
    assert q.text.startswith("    def put")
    register = (workspace.registers / "demo.yaml").read_text()
    assert "Q-store-Store.put" in register

    before = register
    render = tracework.open("demo", mode="render")
    again = render.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    assert again.id == q.id and again.sha256 == q.sha256
    with pytest.raises(QuoteNotInRegister, match="not in register demo"):
        render.source("SRC-1").quote("pkg/store.py", lines=(7, 7))
    assert (workspace.registers / "demo.yaml").read_text() == before


def test_quote_display_shows_location_hash_state_and_escaped_code(wb):
    q = wb.source("SRC-1").quote("pkg/store.py", lines=(2, 3), id="Q-put")
    html = shown_html(q)
    # the path may break after its "/", the line range never
    assert 'pkg/<wbr>store.py:<span class="tw-lines">2–3</span>' in html
    assert q.sha256[:12] in html
    assert "verified" in html
    assert repr(q).startswith("<quote Q-put pkg/store.py:2–3 @ ")


def test_records_validate_ids_statuses_references_and_duplicates(wb):
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    wb.component("RT-CMP-store", label="Store", identity="The `Store` class.", evidence=[q])
    with pytest.raises(RecordError, match="declared twice"):
        wb.component("RT-CMP-store", label="Store", identity="again")
    with pytest.raises(RecordError, match="is not a route id"):
        wb.route(
            "RT-CMP-x", label="x", progression="p", implementation="wired", operation="observed"
        )
    with pytest.raises(RecordError, match="implementation status 'done' is not one of"):
        wb.route(
            "RT-RTE-put", label="x", progression="p", implementation="done", operation="observed"
        )
    with pytest.raises(RecordError, match="RT-CMP-missing"):
        wb.route(
            "RT-RTE-put",
            label="x",
            progression="p",
            implementation="wired",
            operation="uninspected",
            passes_through=["RT-CMP-missing"],
        )
    with pytest.raises(RecordError, match="not a quote in register"):
        wb.claim(
            "RT-CLM-x",
            label="x",
            claim="c",
            assessment="a",
            operation="reported",
            evidence=["Q-nope"],
        )
    with pytest.raises(RecordError, match="not declared above"):
        wb.annotate("RT-ANN-x", on="RT-RTE-later", text="forward references are refused")
    route = wb.route(
        "RT-RTE-put",
        label="Put",
        progression="caller → `Store.put`",
        implementation="wired",
        operation="uninspected",
        passes_through=["RT-CMP-store"],
        evidence=[q],
        reviewed="2026-01-05",
    )
    assert 'href="#RT-CMP-store"' in shown_html(route)
    assert "Reviewed against" in shown_html(route)


def test_absence_searches_the_scope_at_the_commit(wb):
    holds = wb.absence(
        "RT-ABS-net", statement="No network calls.", scope=["pkg/*.py"], patterns=[r"socket|urllib"]
    )
    assert "holds" in shown_html(holds) and "searched 2 text files" in shown_html(holds)
    broken = wb.absence(
        "RT-ABS-limit", statement="No limits.", scope=["pkg/**"], patterns=[r"LIMIT"]
    )
    assert "broken" in shown_html(broken) and "pkg/store.py:7" in shown_html(broken)
    with pytest.raises(TraceworkError, match="names no file"):
        wb.absence("RT-ABS-none", statement="x", scope=["docs/*.md"], patterns=["x"])


def test_done_writes_records_json_with_checks(wb, workspace):
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    wb.component("RT-CMP-store", label="Store", identity="The store.", evidence=[q])
    wb.done()
    data = json.loads((workspace.reports / "demo" / "draft" / "records.json").read_text())
    assert data["records"][0]["id"] == "RT-CMP-store"
    assert data["quotes"][q.id]["state"] == "verified"
    assert data["checks"]["ok"] is True
    assert data["commit"] == data["pin"]


def test_records_json_is_the_model_s_one_writer_in_author_and_render_mode(
    wb, workspace, monkeypatch
):
    """Author mode writes records.json through write_records, and a file read back through
    KernelRecords is written again to the same bytes; render mode displays the same
    model's data for the render to take."""
    from tracework.notebook import workbench
    from tracework.records.artefacts import RECORDS_MIME, dumps, read_kernel_records, write_records

    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    wb.component("RT-CMP-store", label="Store", identity="The `Store`.", evidence=[q])
    wb.done()
    written = workspace.reports / "demo" / "draft" / "records.json"
    again = written.with_name("again.json")
    write_records(again, read_kernel_records(written))
    assert again.read_bytes() == written.read_bytes() == dumps(wb.records_json()).encode()
    shown: list[object] = []
    monkeypatch.setattr(workbench, "display", lambda obj, **_: shown.append(obj))
    render = tracework.open("demo", mode="render")
    q = render.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    render.component("RT-CMP-store", label="Store", identity="The `Store`.", evidence=[q])
    render.done()
    [data] = [o[RECORDS_MIME] for o in shown if isinstance(o, dict) and RECORDS_MIME in o]
    assert data == {**json.loads(written.read_bytes()), "mode": "render"}


def test_a_render_adds_drift_and_title_and_keeps_only_the_kernel_s_keys(wb):
    """records.json written by a render holds exactly the keys the kernel's records held,
    plus the drift and the title: a field the kernel did not write (an older kernel's
    records.json has no files, captures, diagrams…) is never filled in with its default."""
    from tracework.records.artefacts import Drift, KernelRecords, report_records, to_json

    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    wb.component("RT-CMP-store", label="Store", identity="The `Store`.", evidence=[q])
    optional = ("files", "captures", "capture_evidence", "assertions", "diagrams", "marks")
    data = {k: v for k, v in wb.records_json().items() if k not in (*optional, "screen")}
    drift = Drift(
        commits_since_pin=0,
        counts={"verified": 1},
        format_only=[],
        first_changed={},
        first_content_change={},
        culprits={},
        broken_absences=[],
        vanished_identifiers={},
        needs_review=[],
    )
    records = report_records(KernelRecords.model_validate(data), drift, "The title")
    assert to_json(records) == {**data, "drift": to_json(drift), "title": "The title"}
    assert records.files == {} and records.checks.checks.registered.counts["quote"] == {
        "verified": 1
    }


def test_done_in_render_mode_at_the_pin_raises_when_checks_fail(pinned):
    pinned({"pkg/store.py": STORE})
    render = tracework.open("demo", mode="render")
    with pytest.raises(TraceworkError, match="no records declared"):
        render.done()


@pytest.mark.slow
def test_drift_at_a_newer_commit_marks_records_for_re_review(pinned, tw, workspace):
    repo = pinned({"pkg/store.py": STORE})
    wb = tracework.open("demo")
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    wb.component("RT-CMP-store", label="Store", identity="The store.", evidence=[q])
    repo.write("pkg/store.py", STORE.replace("return key", "return value"))
    head = repo.commit("edit")
    assert tw("fetch", "toy").exit_code == 0
    later = tracework.open("demo", commit=head[:10], mode="render")
    q2 = later.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    assert q2.state == "changed"
    card = later.component("RT-CMP-store", label="Store", identity="The store.", evidence=[q2])
    assert "needs re-review" in shown_html(card)
    later.done()  # at a newer commit drift is reported, not raised
    data = later.records_json()
    assert data["records"][0]["needs_review"] == [q2.id]
    assert data["checks"]["ok"] is False


def test_open_refuses_a_bad_mode_and_date(wb):
    with pytest.raises(TraceworkError, match="mode"):
        tracework.open("demo", mode="publish")
    with pytest.raises(TraceworkError, match="analysis_date"):
        tracework.open("demo", analysis_date="yesterday")


@pytest.mark.slow
@pytest.mark.parametrize("date", ["2026-13-45", "2026-02-30", "2026-W10-1", "26-1-5"])
def test_one_date_rule_for_review_stamps(wb, date):
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    with pytest.raises(RecordError) as caught:
        wb.component("RT-CMP-s", label="S", identity="The store.", evidence=[q], reviewed=date)
    message = caught.value.message  # one line; the hint says what reviewed= takes
    assert "is not a date" in message or "should match" in message, message
    assert "Value error" not in message and "\n" not in message
    with pytest.raises(RecordError, match=r"is not a date|should match"):
        wb.component(
            "RT-CMP-s", label="S", identity="The store.", evidence=[q], reviewed=(wb.pin, date)
        )


# -- one identity per quote --------------------------------------------------------------------


def test_one_span_is_one_quote_in_author_and_render_mode(wb, workspace):
    by_symbol = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    by_lines = wb.source("SRC-1").quote("pkg/store.py", lines=(2, 4))
    assert by_lines.id == by_symbol.id == "Q-store-Store.put"  # not a second Q-store-2-4
    assert "Q-store-2-4" not in (workspace.registers / "demo.yaml").read_text()
    render = tracework.open("demo", mode="render")
    assert render.source("SRC-1").quote("pkg/store.py", lines=(2, 4)).id == by_symbol.id
    with pytest.raises(TraceworkError) as caught:
        wb.source("SRC-1").quote("pkg/store.py", lines=(2, 4), id="Q-put")
    assert "already quote Q-store-Store.put" in caught.value.message
    assert 'id="Q-store-Store.put"' in caught.value.hint and "--id" not in caught.value.hint


@pytest.mark.slow
def test_replace_points_an_id_at_a_new_span_on_purpose(wb, workspace):
    src = wb.source("SRC-1")
    src.quote("pkg/store.py", lines=(2, 3), id="Q-put")
    with pytest.raises(TraceworkError) as caught:
        src.quote("pkg/store.py", lines=(2, 4), id="Q-put")
    assert "replace=True" in caught.value.hint and "--" not in caught.value.hint
    replaced = src.quote("pkg/store.py", lines=(2, 4), id="Q-put", replace=True)
    assert replaced.info.quote.lines == (2, 4)
    assert "Replaced Q-put: was pkg/store.py:2–3" in shown_html(replaced)
    render = tracework.open("demo", mode="render").source("SRC-1")
    assert render.quote("pkg/store.py", lines=(2, 4), id="Q-put").id == "Q-put"
    with pytest.raises(QuoteNotInRegister, match=r"Q-put is pkg/store\.py:2-4"):
        render.quote("pkg/store.py", lines=(2, 3), id="Q-put")


# -- evidence as the seeds use it ------------------------------------------------------------


@pytest.mark.slow
def test_records_cite_records_and_whole_files_and_drift_propagates(
    pinned, tw, workspace, monkeypatch
):
    repo = pinned({"pkg/store.py": STORE, "pkg/util.py": "def helper():\n    return 1\n"})
    # one JupyterLab cell, re-run: the only way a record can be declared again
    monkeypatch.setattr("tracework.notebook.declare.cell_id", lambda: "cell-1")
    wb = tracework.open("demo")
    src = wb.source("SRC-1")
    whole = src.file("pkg/util.py")  # registered at the pin by author mode
    assert whole.id == "SRC-1:pkg/util.py" and len(whole.sha256) == 64
    assert "pkg/util.py" in reg_text(workspace)
    q = src.quote("pkg/store.py", symbol="Store.put")
    wb.absence("RT-ABS-disk", statement="No disk.", scope=["pkg/**"], patterns=[r"open\("])
    wb.component("RT-CMP-util", label="Util", identity="`helper`", evidence=[whole])
    wb.component("RT-CMP-store", label="Store", identity="`Store`", evidence=["RT-ABS-disk", q])
    wb.claim(
        "RT-CLM-safe", label="Safe", claim="c", assessment="a", operation="uninspected",
        evidence=["RT-CMP-store", "RT-CMP-util"],
    )  # fmt: skip
    with pytest.raises(RecordError, match="makes a cycle"):
        wb.component("RT-CMP-util", label="Util", identity="`helper`", evidence=["RT-CLM-safe"])
    with pytest.raises(RecordError, match="not a file registered"):
        wb.component("RT-CMP-x", label="X", identity="x", evidence=["SRC-1:pkg/nope.py"])
    # at a newer commit: util.py changes, and the absence breaks
    repo.write("pkg/util.py", "def helper():\n    return 2\n")
    repo.write("pkg/store.py", STORE + "\nopen('x')\n")
    head = repo.commit("change")
    assert tw("fetch", "toy").exit_code == 0
    at = tracework.open("demo", commit=head, mode="render")
    src = at.source("SRC-1")
    whole, q = src.file("pkg/util.py"), src.quote("pkg/store.py", symbol="Store.put")
    assert whole.state == "changed"
    at.absence("RT-ABS-disk", statement="No disk.", scope=["pkg/**"], patterns=[r"open\("])
    at.component("RT-CMP-util", label="Util", identity="`helper`", evidence=[whole])
    at.component("RT-CMP-store", label="Store", identity="`Store`", evidence=["RT-ABS-disk", q])
    at.claim(
        "RT-CLM-safe", label="Safe", claim="c", assessment="a", operation="uninspected",
        evidence=["RT-CMP-store", "RT-CMP-util"],
    )  # fmt: skip
    drifted = at._drifted()
    assert drifted["RT-CMP-util"] == ["SRC-1:pkg/util.py"]
    assert drifted["RT-CMP-store"] == ["RT-ABS-disk"]  # the broken absence it cites
    assert drifted["RT-CLM-safe"] == ["RT-CMP-store", "RT-CMP-util"]  # transitively
    from tracework.views.cards import records_section

    page = records_section(at._records.values(), at._quotes, at._absences, drifted, at._files)
    assert 'id="SRC-1:pkg/util.py"' in page and "Files cited whole" in page  # a file card
    assert 'href="#RT-CMP-store"' in page  # a record cited by the claim links it
    data = at.records_json()
    assert data["files"]["SRC-1:pkg/util.py"]["state"] == "changed"
    by_id = {r["id"]: r for r in data["records"]}
    assert by_id["RT-CLM-safe"]["needs_review"] == ["RT-CMP-store", "RT-CMP-util"]


def reg_text(workspace) -> str:
    return (workspace.registers / "demo.yaml").read_text()


@pytest.mark.slow
def test_a_guarantee_carries_statuses_and_a_qualified_strength(wb):
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    shown = wb.guarantee(
        "RT-GRT-put", owner="`Store.put`", enforcement_point="its assignment",
        strength="enforced", qualifier="invariant for keys that hash", covered_path="puts",
        implementation="wired", operation="uninspected", evidence=[q],
    )  # fmt: skip
    html = shown_html(shown)
    assert "invariant for keys that hash" in html and "wired" in html
    record = next(r for r in wb.records_json()["records"] if r["id"] == "RT-GRT-put")
    assert (record["strength"], record["qualifier"]) == ("enforced", "invariant for keys that hash")
    assert (record["implementation"], record["operation"]) == ("wired", "uninspected")
    with pytest.raises(RecordError, match="strength status 'strong'"):
        wb.guarantee("RT-GRT-x", owner="o", enforcement_point="e", strength="strong",
                     covered_path="p")  # fmt: skip


def test_a_report_says_what_it_is_and_its_title(pinned):
    pinned({"pkg/store.py": STORE})
    wb = tracework.open("demo", kind="atlas report", title="Store atlas")
    data = wb.records_json()
    assert (data["kind"], data["title"]) == ("atlas report", "Store atlas")
    assert tracework.open("demo").records_json()["kind"] == "runtime report"
    with pytest.raises(TraceworkError, match="kind= must be one line"):
        tracework.open("demo", kind="atlas\nreport")


@pytest.mark.slow
def test_asserted_hashes_reach_the_report_and_fail_it_only_when_required(pinned, tw, workspace):
    pinned({"pkg/store.py": STORE})
    (workspace.root / "dossier.md").write_text("store.py hashes to 00…\n")
    assert tw("register", "add-document", "demo", "SRC-2", "dossier.md").exit_code == 0
    args = ("register", "assert", "demo", "SRC-1", "pkg/store.py", "0" * 64, "--by", "SRC-2")
    assert tw(*args).exit_code == 0
    wb = tracework.open("demo")
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    wb.component("RT-CMP-s", label="S", identity="The store.", evidence=[q])
    summary = wb.summary()
    assert summary["ok"] and summary["checks"]["assertions"]["ok"]  # a finding only
    assert "1 differ" in summary["checks"]["assertions"]["detail"]
    [asserted] = wb.records_json()["assertions"]
    assert asserted["state"] == "differs"
    from tracework.records.artefacts import RenderManifest
    from tracework.register import store as reg
    from tracework.render.export import appendix_html

    register = reg.load(workspace.register_file("demo"))
    page = appendix_html(register, wb._kernel_records(), RenderManifest.model_construct(), "", [])
    assert "dossier.md" in page and "0" * 64 in page and "differs" in page
    assert tw(*args, "--required").exit_code == 0
    strict = tracework.open("demo")
    q = strict.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    strict.component("RT-CMP-s", label="S", identity="The store.", evidence=[q])
    assert not strict.summary()["checks"]["assertions"]["ok"]
    assert not strict.summary()["ok"]


@pytest.mark.slow
def test_the_check_summary_badge_agrees_with_its_words_about_findings(pinned, tw, workspace):
    """ "1 of 4 asserted hashes hold; 3 differ" is never shown beside a green "holds": the
    row's badge counts the findings (a warning), the verdict says checks hold with them;
    a required one that differs fails, as before."""
    import hashlib
    import re

    from tracework.records.artefacts import CheckSummary
    from tracework.views.cards import summary_html

    files = {f"pkg/m{n}.py": f"N = {n}\n" for n in range(4)}
    pinned(files)
    (workspace.root / "dossier.md").write_text("four hashes\n")
    assert tw("register", "add-document", "demo", "SRC-2", "dossier.md").exit_code == 0
    for n, path in enumerate(files):
        right = hashlib.sha256(files[path].encode()).hexdigest()
        claimed = right if n == 0 else f"{n}" * 64  # one holds, three differ
        args = ("register", "assert", "demo", "SRC-1", path, claimed, "--by", "SRC-2")
        assert tw(*args).exit_code == 0

    def summary() -> CheckSummary:
        wb = tracework.open("demo")
        q = wb.source("SRC-1").quote("pkg/m0.py", lines=(1, 1))
        wb.component("RT-CMP-m", label="M", identity="The module.", evidence=[q])
        return wb._check_summary()

    def row(page: str, family: str) -> str:
        return re.search(rf"<tr><th>{family}</th>.*?</tr>", page)[0]

    found = summary()
    page = summary_html(found)
    assertions = row(page, "assertions")
    assert "1 of 4 asserted hashes hold; 3 differ" in assertions
    assert "tw-holds" not in assertions and ">holds<" not in assertions
    assert '<span class="tw-badge tw-findings">3 findings</span>' in assertions
    assert found.ok and found.checks.assertions.verdict == "findings"
    assert "tw-badge tw-findings" in page.split("<table")[0]  # the verdict: not green either
    assert "checks hold, with 3 findings" in page
    assert "tw-holds" in row(page, "register")  # the families without findings: green
    args = ("register", "assert", "demo", "SRC-1", "pkg/m1.py", "1" * 64, "--by", "SRC-2")
    assert tw(*args, "--required").exit_code == 0
    failing = summary_html(summary())
    assert '<span class="tw-badge tw-fails">fails</span>' in row(failing, "assertions")


def test_hints_in_a_notebook_speak_the_notebook_s_idiom(wb):
    """A hint names the fix where the user is: ``lines=`` in a cell (``--lines`` is the
    command line's), in author and render mode alike."""
    src = wb.source("SRC-1")
    for mode_src in (src, tracework.open("demo", mode="render").source("SRC-1")):
        with pytest.raises(TraceworkError) as ambiguous:
            mode_src.quote("pkg/store.py", match="self")
        with pytest.raises(TraceworkError) as twice:
            mode_src.quote("pkg/store.py", lines=(1, 1), symbol="Store")
        for caught in (ambiguous, twice):
            assert "--" not in str(caught.value), str(caught.value)
        assert "quote with lines=" in str(ambiguous.value)
        assert "give exactly one of lines=, symbol=, match=" in str(twice.value)
