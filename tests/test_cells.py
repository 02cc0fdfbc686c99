"""Cells run again and again: what a cell declared is replaced when it re-runs, and what
a deleted cell declared goes at the next done(), all without a kernel restart."""

from __future__ import annotations

import json
import os
import time
from types import SimpleNamespace

import pytest
from IPython.core.events import EventManager, available_events

import tracework
from tracework.errors import RecordError

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
    assert out.count("the cell that declared them is no longer in the notebook") == 1
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
