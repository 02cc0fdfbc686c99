"""What one report has declared, cited and shown so far, in the order it happened.

The workbench's jobs are modules of their own (the register session, the captures, the
diagrams, the reviews, the check summary, records.json); each reads and adds to this one
state, which the :class:`~tracework.notebook.workbench.Workbench` holds and hands to
them, so that none of them reaches into another or into the workbench.  It is data
alone: every dict keeps the order of first declaration, which is the order reports show.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tracework.capture.compare import Comparison
from tracework.capture.evidence import CapturedAt, CaseInfo, ExcerptInfo
from tracework.records.absences import AbsenceResult
from tracework.records.kinds import Record
from tracework.records.rubrics import Rubric
from tracework.screen import Screen
from tracework.views.cards import Diagram, FileInfo, QuoteInfo
from tracework.views.marks import Mark


@dataclass
class ReportState:
    """The records, evidence, marks, captures and diagrams of one report."""

    #: records declared, by id
    records: dict[str, Record] = field(default_factory=dict)
    #: the cell that declared each record and mark (by its anchor); None outside JupyterLab
    cells: dict[str, str | None] = field(default_factory=dict)
    #: when each cell last started to run, by cell id
    cell_runs: dict[str, float] = field(default_factory=dict)
    #: what the running cell declared so far, in order (records by id, marks by anchor),
    #: for the summary shown as it ends; emptied then
    declared: list[str] = field(default_factory=list)
    #: the cells that quoted or cited each quote and whole file (by quote id or
    #: ``"SRC-n:path"``): one a cell alone cited goes with that cell, as a render (which
    #: runs only the cells there are) never sees it
    evidence_cells: dict[str, set[str | None]] = field(default_factory=dict)
    #: quotes cited, by id, with their state at the commit
    quotes: dict[str, QuoteInfo] = field(default_factory=dict)
    #: whole files cited, by ``"SRC-n:path"``
    files: dict[str, FileInfo] = field(default_factory=dict)
    #: each evidenced absence's search at the commit, by record id
    absences: dict[str, AbsenceResult] = field(default_factory=dict)
    #: rubric marks, by anchor, and the rubrics they mark (with their SHA-256), by name
    marks: dict[str, Mark] = field(default_factory=dict)
    rubrics: dict[str, tuple[Rubric, str]] = field(default_factory=dict)
    #: captures cited, by source id, and those the notebook showed by itself
    captures: dict[str, CapturedAt] = field(default_factory=dict)
    captures_shown: set[str] = field(default_factory=set)
    #: cases and transcript excerpts cited, by key (``SRC-n/F-01``, ``SRC-n/F-01/PATH``)
    capture_evidence: dict[str, CaseInfo | ExcerptInfo] = field(default_factory=dict)
    #: excerpts compared with references: excerpt key → reference key → comparison, and
    #: the cell that asked for each
    comparisons: dict[str, dict[str, Comparison]] = field(default_factory=dict)
    comparison_cells: dict[tuple[str, str], str | None] = field(default_factory=dict)
    #: diagrams drawn, by name
    diagrams: dict[str, Diagram] = field(default_factory=dict)
    #: the screen of the subject, when the notebook showed one
    screen: Screen | None = None
    #: whether the notebook showed the "Shared records" section, and the quotes it held
    records_shown: bool = False
    quotes_shown: set[str] = field(default_factory=set)
