"""What each JupyterLab cell declared, so that re-running or deleting a cell is honest.

An analyst edits a notebook out of order: renames a record and re-runs its cell,
deletes a cell, runs a cell twice.  The kernel must then hold what the notebook now
says, not the union of everything ever run, or records.json would keep a record under
its old id.  So what a cell declared (records, marks, diagrams, comparisons) goes when
the cell runs again, what a cell no longer in the saved notebook declared goes at
``wb.done()`` with a note, and a record left naming a record that went is one clear
error rather than a records.json with a dangling id.  The hooks that call these are
the workbench's (see :func:`tracework.notebook.jupyter.watch_cells`).
"""

from __future__ import annotations

import logging
import time

from tracework.errors import RecordError, TraceworkError
from tracework.notebook.jupyter import notebook_file
from tracework.notebook.state import ReportState
from tracework.readers import load_json

log = logging.getLogger(__name__)


def cell_starts(state: ReportState, cell: str) -> None:
    """A cell runs (again): what it declared on its last run goes, so a record renamed
    in it and re-run is not left behind under its old id, without a kernel restart."""
    state.cell_runs[cell] = time.time()
    forget_cell(state, cell)


def cited_in(state: ReportState, key: str, cell: str | None) -> None:
    """Quote ``key`` (or whole file ``"SRC-n:path"``) was quoted or cited in ``cell``."""
    state.evidence_cells.setdefault(key, set()).add(cell)


def forget_cell(state: ReportState, cell: str) -> list[str]:
    """Drop the records, marks and diagrams one cell declared, and the quotes and files
    no other cell quoted or cited; returns their names."""
    gone = sorted(key for key, c in state.cells.items() if c == cell)
    for key in gone:
        del state.cells[key]
        state.records.pop(key, None)
        state.absences.pop(key, None)
        state.marks.pop(key, None)
    cited = [key for key, cells in state.evidence_cells.items() if cell in cells]
    unquoted = []
    for key in cited:
        cells = state.evidence_cells[key]
        cells.discard(cell)
        if not cells:
            del state.evidence_cells[key]
            if state.quotes.pop(key, None) is not None:
                unquoted.append(f"quote {key}")
            elif state.files.pop(key, None) is not None:
                unquoted.append(f"file {key}")
    drawn = sorted(name for name, d in state.diagrams.items() if d.cell == cell)
    for name in drawn:
        del state.diagrams[name]
    for key, ref in [k for k, c in state.comparison_cells.items() if c == cell]:
        del state.comparison_cells[(key, ref)]
        state.comparisons[key].pop(ref, None)
    return gone + [f"diagram {name}" for name in drawn] + sorted(unquoted)


def forget_deleted_cells(state: ReportState) -> list[str]:
    """Drop what cells no longer in the saved notebook declared; returns a one-line note
    for each.  Only the kernel knows what ran, only the saved file what was deleted, so a
    cell counts as deleted when the notebook was saved after it last ran and does not
    hold it: a cell added and run since the last save stays."""
    path = notebook_file()
    if path is None:
        return []
    try:
        saved = path.stat().st_mtime
        notebook = load_json(path.read_bytes())
    except (OSError, TraceworkError) as exc:
        log.debug("cannot read %s for its cell ids: %s", path, exc)
        return []
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return []
    present = {c.get("id") for c in cells if isinstance(c, dict)}
    declared = {c for c in state.cells.values() if c is not None}
    declared |= {c for cited in state.evidence_cells.values() for c in cited if c is not None}
    declared |= {d.cell for d in state.diagrams.values() if d.cell is not None}
    declared |= {c for c in state.comparison_cells.values() if c is not None}
    notes = []
    for cell in sorted(declared - present):
        if state.cell_runs.get(cell, 0.0) > saved:
            continue
        gone = ", ".join(forget_cell(state, cell))
        if not gone:  # what it quoted, another cell cites too
            continue
        notes.append(
            f"Removed {gone}: the cell that declared or quoted them is no longer in the notebook."
        )
    return notes


def refuse_dangling(state: ReportState) -> None:
    """A record that names or cites a record no longer declared (renamed or removed in
    a cell run since) is one clear error, not a records.json with a dangling id."""
    records = state.records
    for record in records.values():
        named = list(record.references().items()) + [
            ("evidence", e) for e in record.evidence if e.startswith("RT-")
        ]
        for field_name, ref in named:
            if ref not in records:
                raise RecordError(
                    f"{record.id}: {field_name} names {ref}, which is no longer declared",
                    hint=f"declare {ref} again, or re-run the cell that declares "
                    f"{record.id} with what replaced it",
                )
    for mark in state.marks.values():
        for ref in mark.evidence:
            if ref.startswith("RT-") and ref not in records:
                raise RecordError(
                    f"mark {mark.rubric}/{mark.mechanism}: evidence names {ref}, which is "
                    "no longer declared",
                    hint=f"declare {ref} again, or re-run the cell that marks it",
                )
