"""Cells run again and again: what a cell declared is replaced when it re-runs, and what
a deleted cell declared goes at the next done(), all without a kernel restart."""

from __future__ import annotations

import json
import os
import re
import time
from types import SimpleNamespace

import pytest
from IPython.core.events import EventManager, available_events

import tracework
import tracework.register.store as reg
from tracework.drift.check import check_register
from tracework.errors import RecordError, RegisterError, TraceworkError
from tracework.register import append, edits
from tracework.register.quotes import QuoteRequest, add_quote

STORE = "class Store:\n    def put(self, key, value):\n        self.items[key] = value\n"


class FakeShell:
    """The part of IPython's shell a workbench uses: events, the user namespace, the
    custom error display."""

    def __init__(self) -> None:
        self.events = EventManager(self, available_events)
        self.user_ns: dict[str, object] = {}

    def set_custom_exc(self, *args: object) -> None:
        pass

    def run(self, cell: str) -> None:
        """What IPython does as a cell starts."""
        self.events.trigger("pre_run_cell", SimpleNamespace(cell_id=cell))


@pytest.fixture
def shell(monkeypatch):
    fake = FakeShell()
    running = {"cell": None}

    def run(cell: str) -> None:
        running["cell"] = cell
        fake.run(cell)

    fake.start = run  # type: ignore[attr-defined]
    monkeypatch.setattr("IPython.get_ipython", lambda: fake)
    monkeypatch.setattr("tracework.notebook.declare.cell_id", lambda: running["cell"])
    monkeypatch.setattr("tracework.notebook.workbench.cell_id", lambda: running["cell"])
    return fake


def records_in(workspace) -> list[str]:
    data = json.loads((workspace.reports / "demo" / "draft" / "records.json").read_text())
    return [r["id"] for r in data["records"]]


def component(wb, rid: str, q) -> None:
    wb.component(rid, label=rid, identity="`Store`", evidence=[q])


def test_a_record_renamed_in_a_cell_and_re_run_is_gone(pinned, workspace, shell):
    pinned({"pkg/store.py": STORE})
    shell.start("setup")
    wb = tracework.open("demo")
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    shell.start("cell-1")
    component(wb, "RT-CMP-old", q)
    wb.diagram("old", "flowchart TB\n  a --> b", caption="first name")
    shell.start("cell-1")  # renamed, re-run
    component(wb, "RT-CMP-new", q)
    wb.diagram("new", "flowchart TB\n  a --> b", caption="second name")
    shell.start("done")
    wb.done()
    assert records_in(workspace) == ["RT-CMP-new"]
    assert set(wb._diagrams) == {"new"}


def test_a_re_run_cell_may_declare_again_but_another_cell_may_not(pinned, shell):
    pinned({"pkg/store.py": STORE})
    shell.start("setup")
    wb = tracework.open("demo")
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    shell.start("cell-1")
    component(wb, "RT-CMP-store", q)
    shell.start("cell-1")
    component(wb, "RT-CMP-store", q)
    shell.start("cell-2")
    with pytest.raises(RecordError, match="declared twice"):
        component(wb, "RT-CMP-store", q)


def test_a_reference_to_a_record_renamed_since_is_one_error_at_done(pinned, shell):
    pinned({"pkg/store.py": STORE})
    shell.start("setup")
    wb = tracework.open("demo")
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    shell.start("cell-1")
    component(wb, "RT-CMP-store", q)
    shell.start("cell-2")
    wb.route(
        "RT-RTE-put", label="put", progression="p", implementation="wired",
        operation="uninspected", passes_through=["RT-CMP-store"], evidence=[q],
    )  # fmt: skip
    wb.claim(
        "RT-CLM-put", label="c", claim="c", assessment="a", operation="uninspected",
        evidence=["RT-CMP-store"],
    )  # fmt: skip
    shell.start("cell-1")
    component(wb, "RT-CMP-kept", q)
    shell.start("done")
    with pytest.raises(RecordError, match=r"RT-RTE-put: passes_through\[0\] names RT-CMP-store"):
        wb.done()


def test_what_a_deleted_cell_declared_goes_at_done_with_a_note(pinned, workspace, shell, capsys):
    pinned({"pkg/store.py": STORE})
    notebook = workspace.notebooks / "demo.ipynb"
    shell.user_ns["__session__"] = str(notebook)
    shell.start("setup")
    wb = tracework.open("demo")
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    shell.start("kept")
    component(wb, "RT-CMP-kept", q)
    shell.start("deleted")
    component(wb, "RT-CMP-deleted", q)
    cells = [{"id": c, "cell_type": "code", "source": ""} for c in ("setup", "kept", "done")]
    notebook.write_text(json.dumps({"cells": cells}))
    later = time.time() + 5
    os.utime(notebook, (later, later))  # saved after the deleted cell ran
    shell.start("unsaved")
    wb._cell_runs["unsaved"] = later + 5  # run after the save: not in the file yet
    component(wb, "RT-CMP-unsaved", q)
    shell.start("done")
    wb._cell_runs["done"] = later + 5
    wb.done()
    assert records_in(workspace) == ["RT-CMP-kept", "RT-CMP-unsaved"]
    out = capsys.readouterr().out
    assert out.count("the cell that declared or quoted them is no longer in the notebook") == 1
    assert "Removed RT-CMP-deleted:" in out


def test_outside_ipython_declarations_stay_as_before(pinned, workspace, monkeypatch):
    """Plain Python has no cells: a record id is declared once, and nothing is dropped."""
    pinned({"pkg/store.py": STORE})
    monkeypatch.setattr("IPython.get_ipython", lambda: None)
    wb = tracework.open("demo")
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    component(wb, "RT-CMP-a", q)
    component(wb, "RT-CMP-b", q)
    with pytest.raises(RecordError, match="declared twice"):
        component(wb, "RT-CMP-a", q)
    wb.done()
    assert records_in(workspace) == ["RT-CMP-a", "RT-CMP-b"]


# -- quotes: written once per cell ---------------------------------------------------

VALUES = "".join(f"value_{n} = {n}\n" for n in range(1, 41))


def end(shell: FakeShell, shown: object = None) -> None:
    """What IPython does when a cell has run, whether or not it raised: ``shown`` is what
    the cell showed as its result (its last expression's value)."""
    shell.events.trigger("post_run_cell", SimpleNamespace(result=shown))


@pytest.fixture
def quoting(pinned, workspace, shell):
    """A notebook whose setup cell has run (its first quote written by a full edit)."""
    repo = pinned({"pkg/store.py": STORE, "pkg/values.py": VALUES})
    shell.start("setup")
    wb = tracework.open("demo")
    wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    end(shell)
    return SimpleNamespace(
        wb=wb, src=wb.source("SRC-1"), path=workspace.registers / "demo.yaml", repo=repo
    )


@pytest.fixture
def writes(monkeypatch) -> list[str]:
    """The names of the files written atomically, by a splice or a full edit."""
    names: list[str] = []
    for module in (append, edits):
        real = module.write_atomic
        monkeypatch.setattr(
            module, "write_atomic", lambda p, d, real=real: (names.append(p.name), real(p, d))
        )
    return names


def test_a_cell_of_quotes_writes_the_register_once_when_it_ends(quoting, shell, writes):
    before = quoting.path.read_bytes()
    shell.start("cell")
    views = [quoting.src.quote("pkg/values.py", lines=(n, n)) for n in range(1, 31)]
    assert quoting.path.read_bytes() == before  # nothing written while the cell runs
    assert {v.state for v in views} == {"verified"}
    end(shell)
    assert writes.count("demo.yaml") == 1
    held = reg.load(quoting.path)
    assert all(f"Q-values-{n}-{n}" in held.quotes for n in range(1, 31))
    assert "pkg/values.py" in held.git_source("SRC-1").files
    report = check_register(quoting.wb.ws, held)
    assert {i.state for i in report.items} == {"verified"}


def test_an_id_another_writer_took_meanwhile_is_refused_when_the_cell_ends(
    quoting, shell, monkeypatch
):
    shown: list[BaseException] = []
    monkeypatch.setattr("tracework.notebook.workbench.show_error", shown.append)
    shell.start("cell")
    quoting.src.quote("pkg/values.py", lines=(5, 5), id="Q-x")
    ws = quoting.wb.ws
    add_quote(ws, quoting.path, "SRC-1", "pkg/values.py", QuoteRequest((6, 6)), "Q-x")  # theirs
    end(shell)
    assert len(shown) == 1 and "Q-x is taken since this cell quoted it" in str(shown[0])
    assert reg.load(quoting.path).quotes["Q-x"].lines == (6, 6)  # their quote is kept
    shell.start("done")
    with pytest.raises(RegisterError, match="a cell's quotes were not written"):
        quoting.wb.done()
    shell.start("cell")  # run again: decided afresh, against the register as it is now
    with pytest.raises(RegisterError, match="quote id Q-x is already used"):
        quoting.src.quote("pkg/values.py", lines=(5, 5), id="Q-x")
    quoting.src.quote("pkg/values.py", lines=(5, 5), id="Q-mine")
    end(shell)
    assert reg.load(quoting.path).quotes["Q-mine"].lines == (5, 5)


def test_an_id_quoted_twice_in_one_cell_ends_as_its_last_quote(quoting, shell):
    shell.start("cell")
    quoting.src.quote("pkg/values.py", lines=(3, 3), id="Q-y")
    again = quoting.src.quote("pkg/values.py", lines=(4, 4), id="Q-y", replace=True)
    end(shell)
    assert again.replaced is not None and again.replaced.lines == (3, 3)
    assert reg.load(quoting.path).quotes["Q-y"].lines == (4, 4)


def test_a_quote_added_from_the_command_line_is_seen_by_the_next_cell(quoting, shell):
    ws = quoting.wb.ws
    add_quote(ws, quoting.path, "SRC-1", "pkg/values.py", QuoteRequest((7, 8)), "Q-cli")
    before = quoting.path.read_bytes()
    shell.start("cell")
    view = quoting.src.quote("pkg/values.py", lines=(7, 8))
    end(shell)
    assert view.id == "Q-cli"  # one span, one id: the register's
    assert quoting.path.read_bytes() == before


@pytest.mark.parametrize("at", ["pin", "later"])
def test_quotes_checked_one_by_one_match_a_full_check(quoting, shell, tw, monkeypatch, at):
    """Each new quote is checked alone (at the pin, verified as made; at a commit where
    the file moved on, by the check itself): the result is, item for item, what checking
    the whole register there gives."""
    quoting.repo.write("pkg/values.py", "# new header\n" + VALUES.replace("value_9 ", "val_9 "))
    later = quoting.repo.commit("later")
    assert tw("fetch", "toy").exit_code == 0
    shell.start("setup")
    wb = tracework.open("demo", commit=later if at == "later" else None)
    src = wb.source("SRC-1")
    shell.start("cell")
    monkeypatch.setattr(edits, "edit", lambda *_: pytest.fail("the full edit ran"))
    src.quote("pkg/store.py", lines=(1, 1))  # the check of the source, made in full
    for n in (2, 9, 12):  # then each quote checked alone, the first with its new file
        src.quote("pkg/values.py", lines=(n, n + 1))
    end(shell)
    whole = check_register(wb.ws, reg.load(quoting.path), at=wb.commit, only="SRC-1")
    assert [i.as_json() for i in wb._check("SRC-1").items] == [i.as_json() for i in whole.items]
    states = {i.state for i in whole.items if i.kind == "quote"}
    assert states == {"verified"} if at == "pin" else states >= {"moved", "changed"}


# -- every declaration of a cell, shown as the cell ends -----------------------------


@pytest.fixture
def shown(monkeypatch) -> list[object]:
    """What the workbench displays (the cells' summaries among them)."""
    seen: list[object] = []
    monkeypatch.setattr("tracework.notebook.workbench.display", lambda obj, **_: seen.append(obj))
    return seen


def summaries(seen: list[object]) -> list[str]:
    return [o.markup for o in seen if 'class="tw-declared"' in getattr(o, "markup", "")]


def test_a_cell_lists_every_record_it_declared_each_opening_to_its_card(quoting, shell, shown):
    wb, q = quoting.wb, quoting.src.quote("pkg/store.py", symbol="Store.put")
    shell.start("cell")
    component(wb, "RT-CMP-a", q)
    wb.absence("RT-ABS-disk", statement="Nothing opens a file.", scope=["pkg/**"],
               patterns=[r"\bopen\("])  # fmt: skip
    wb.absence("RT-ABS-put", statement="Nothing puts.", scope=["pkg/**"], patterns=["put"])
    last = wb.component("RT-CMP-c", label="The last", identity="`Store`", evidence=[q])
    end(shell, last)  # the cell's last line: shown as its result already
    [summary] = summaries(shown)
    items = re.split(r'(?=<li><details class="tw-declared-item">|<li class="tw-declared)', summary)
    items = items[1:]
    assert [re.findall(r'class="tw-declared-id">([^<]*)<', i) for i in items] == [
        ["RT-CMP-a"], ["RT-ABS-disk"], ["RT-ABS-put"], ["RT-CMP-c"],
    ]  # fmt: skip
    assert "This cell declared 4 records:" in summary
    assert 'tw-holds">holds' in items[1] and 'tw-broken">broken' in items[2]
    for item in items[:3]:  # each folded, its whole card inside
        assert item.startswith('<li><details class="tw-declared-item">') and "tw-record" in item
    assert "tw-record" not in items[3] and "(its card is above)" in items[3]  # not twice
    assert "evidenced absence" in items[1] and "Nothing puts" in items[2]


def test_a_cell_that_shows_its_one_record_adds_no_list(quoting, shell, shown):
    wb, q = quoting.wb, quoting.src.quote("pkg/store.py", symbol="Store.put")
    shell.start("one")
    end(shell, wb.component("RT-CMP-a", label="A", identity="`Store`", evidence=[q]))
    assert summaries(shown) == []
    shell.start("two")
    wb.component("RT-CMP-b", label="B", identity="`Store`", evidence=[q])
    end(shell, None)  # assigned, or ended with `;`: the card was never shown
    [summary] = summaries(shown)
    assert "This cell declared 1 record:" in summary and "tw-declared-item" in summary
    shell.start("three")
    end(shell, None)  # the list is the cell's own: the next declares nothing
    assert len(summaries(shown)) == 1


def test_a_cell_that_fails_half_way_lists_what_it_declared(quoting, shell, shown):
    wb, q = quoting.wb, quoting.src.quote("pkg/store.py", symbol="Store.put")
    shell.start("cell")
    component(wb, "RT-CMP-a", q)
    with pytest.raises(RecordError):
        wb.component("RT-CMP-b", label="B", identty="typo")
    end(shell, None)
    [summary] = summaries(shown)
    assert "RT-CMP-a" in summary and "RT-CMP-b" not in summary


def test_a_render_lists_nothing_its_page_shows_every_card_already(quoting, shell, shown):
    shell.start("setup")
    wb = tracework.open("demo", mode="render")
    q = wb.source("SRC-1").quote("pkg/store.py", symbol="Store.put")
    shell.start("cell")
    component(wb, "RT-CMP-a", q)
    component(wb, "RT-CMP-b", q)
    end(shell, None)
    assert summaries(shown) == []


# -- the register's quotes no cell cites -----------------------------------------------


def test_a_quote_of_a_deleted_cell_is_not_cited_and_named_with_its_command(
    quoting, workspace, shell, shown
):
    """What JupyterLab's done() says is what a render says: the render never runs the
    deleted cell, so the kernel forgets what that cell alone quoted."""
    wb, src = quoting.wb, quoting.src
    notebook = workspace.notebooks / "demo.ipynb"
    shell.user_ns["__session__"] = str(notebook)
    shell.start("kept")
    q = src.quote("pkg/store.py", symbol="Store.put")
    component(wb, "RT-CMP-kept", q)
    shell.start("cites")
    shared = src.quote("pkg/values.py", lines=(1, 1), id="Q-shared")
    shell.start("deleted")
    src.quote("pkg/values.py", lines=(2, 2), id="Q-gone")
    component(wb, "RT-CMP-shared", shared)  # cites a quote of a cell that stays
    end(shell)
    saved = ("setup", "kept", "cites", "done")
    cells = [{"id": c, "cell_type": "code", "source": ""} for c in saved]
    notebook.write_text(json.dumps({"cells": cells}))
    later = time.time() + 5
    os.utime(notebook, (later, later))
    shell.start("done")
    wb._cell_runs["done"] = later + 5
    wb.done()
    detail = wb.summary()["checks"]["records"]["detail"]
    assert detail.endswith(
        "1 register quote not cited: Q-gone (`tracework quote demo --remove Q-gone` removes it)"
    ), detail
    notes = [o.text for o in shown if getattr(o, "text", "").startswith("Removed")]
    assert notes == [
        "Removed RT-CMP-shared, quote Q-gone: the cell that declared or quoted them is no "
        "longer in the notebook."
    ]
    assert set(wb.records_json()["quotes"]) == {q.id, "Q-shared"}


def test_a_cell_re_run_without_a_quote_leaves_it_uncited(quoting, shell):
    wb, src = quoting.wb, quoting.src
    shell.start("cell")
    src.quote("pkg/values.py", lines=(3, 3), id="Q-once")
    end(shell)
    shell.start("cell")  # edited: quotes it no more
    end(shell)
    shell.start("done")
    wb.done()
    detail = wb.summary()["checks"]["records"]["detail"]
    assert "1 register quote not cited: Q-once (`tracework quote demo --remove Q-once` " in detail


def test_a_mistake_in_the_first_tw_open_is_shown_as_one_line(monkeypatch):
    """The one-line error display is installed before tw.open() refuses its own call (a
    typo in it, a bad mode), so not even the first cell shows a traceback."""
    installed: list[tuple[type, ...]] = []
    fake = FakeShell()
    fake.set_custom_exc = lambda types, handler: installed.append(types)  # type: ignore[method-assign]
    monkeypatch.setattr("IPython.get_ipython", lambda: fake)
    with pytest.raises(TraceworkError) as caught:
        tracework.open("demo", comit="abc")
    assert caught.value.message == "open() has no keyword comit=; did you mean commit=?"
    assert installed == [(TraceworkError,)]
    with pytest.raises(TraceworkError, match="mode 'draft' is not"):
        tracework.open("demo", mode="draft")
    assert installed == [(TraceworkError,)] * 2
