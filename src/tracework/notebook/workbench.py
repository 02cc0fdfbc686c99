"""The notebook API: ``wb = tw.open(register)``, quotes, records, ``wb.done()``.

One :class:`Workbench` per report.  In ``author`` mode (the default when a notebook
is opened by hand) a new quote is added to the register at the pin; in ``render``
mode (what ``tracework render`` passes through papermill) the register is never
written and a quote it does not hold is an error.  Every mistake raises one
:class:`~tracework.errors.TraceworkError` in the cell that made it, shown as a
short message rather than a traceback.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import tracework.register.store as reg
from tracework import __version__
from tracework.capture.compare import Comparison, Reference, compare, compared_text, quoted_text
from tracework.capture.errors import CaptureMissing
from tracework.capture.evidence import (
    CapturedAt,
    CaseInfo,
    ExcerptInfo,
    capture_html,
    case_info,
    excerpt_info,
    previous_capture,
    transcripts_html,
    value_at,
)
from tracework.capture.parts import (
    conditions_html,
    limits_html,
    provenance_html,
    results_html,
)
from tracework.drift.check import (
    CheckItem,
    CheckReport,
    check_register,
    check_workspace_sources,
    problem_text,
    read_at_pin,
)
from tracework.errors import (
    ChecksFailed,
    QuoteNotInRegister,
    RecordError,
    RegisterError,
    TraceworkError,
    check_iso_date,
)
from tracework.fsio import write_atomic
from tracework.git.subjects import load_subject, open_mirror
from tracework.hashing import sha256_file, sha256_hex
from tracework.notebook.absences import AbsenceResult
from tracework.notebook.authoring import PendingQuotes
from tracework.notebook.declare import RecordDeclarations
from tracework.notebook.diagrams import (
    DIRECTIONS,
    DiagramError,
    drawable,
    from_routes,
    name_pattern,
    parse,
    runtime,
)
from tracework.notebook.diagrams import check as check_diagram
from tracework.notebook.jupyter import (
    CaseView,
    ExcerptView,
    FileView,
    Html,
    QuoteView,
    cell_id,
    display,
    install_error_display,
    notebook_file,
    show_error,
    watch_cells,
)
from tracework.notebook.marks import Mark, marks_section, rubric_marks
from tracework.notebook.records import (
    DRIFT_STATES,
    KINDS,
    AuthorityPath,
    Component,
    OperativeObject,
    Record,
    ReviewStamp,
    Route,
)
from tracework.notebook.review import unchanged
from tracework.notebook.rubrics import Rubric
from tracework.notebook.views import (
    Diagram,
    FileInfo,
    QuoteInfo,
    badge,
    diagram_note_html,
    esc,
    file_key,
    records_section,
    screen_html,
    summary_html,
)
from tracework.readers import load_json
from tracework.register.evidence import add_capture_source, add_files
from tracework.register.models import CaptureSource, GitSource, Register
from tracework.register.quotes import QuoteRequest, make_quote, quotable_lines, same_evidence
from tracework.render.artefacts import (
    RECORDS_FORMAT,
    AbsenceEntry,
    AbsenceMatch,
    AssertionEntry,
    CaptureEntry,
    CaptureEvidenceEntry,
    Check,
    Checks,
    CheckSummary,
    ComparedWith,
    ComparisonEntry,
    DiagramEntry,
    FieldFill,
    FileEntry,
    KernelRecords,
    LineChange,
    QuoteEntry,
    RecordEntry,
    RecordsCheck,
    RegisterCheck,
    to_json,
    write_records,
)
from tracework.render.execution import RECORDS_MIME
from tracework.screen import Screen
from tracework.text import counted
from tracework.workspace import Workspace

Mode = Literal["author", "render"]

log = logging.getLogger(__name__)


class SourceHandle:
    """A git source of the register, for quoting: what `wb.source("SRC-1")` returns."""

    def __init__(self, wb: Workbench, sid: str) -> None:
        self.wb, self.id = wb, sid

    def quote(
        self,
        path: str,
        lines: tuple[int, int] | None = None,
        *,
        symbol: str | None = None,
        match: str | None = None,
        context: int = 0,
        id: str | None = None,
        replace: bool = False,
    ) -> QuoteView:
        """Quote a span of a file at the pin, by lines, by a Python symbol or by a substring.

        Give exactly one of `lines`, `symbol` or `match`.  A symbol or a match is kept as the
        quote's anchor, which finds the span again when the code moves.  The same span is
        always the same quote: without `id` it keeps the id the register gives it.  In author
        mode a new span is hashed and added to the register; in render mode a span the register
        does not hold is an error.

        Args:
            path: The file, relative to the subject's root.
            lines: First and last line, 1-based and inclusive.
            symbol: A function, class, method (`Class.method`) or module-level assignment,
                found with Python's `ast`; the span starts at its first decorator.
            match: A substring that occurs on exactly one line; that line is quoted.
            context: Lines quoted either side of a `match`.
            id: The quote's id (default: derived from the file and the symbol or lines).
            replace: With `id`, in author mode, point that existing id at this span on
                purpose; the display says what it replaced.

        Returns:
            The quote: shown, it is `path:A–B @ commit`, a short hash, its state at the commit
            rendered and the highlighted code; as a record's evidence, it is its id.

        Examples:
            ```python
            src = wb.source("SRC-1")
            keep = src.quote("larkspur/notes.py", symbol="NoteStore.keep")
            cap = src.quote("larkspur/notes.py", match="MAX_NOTE_CHARS =", context=1)
            head = src.quote("larkspur/notes.py", lines=(1, 12), id="Q-notes-head")
            ```
        """
        span = (int(lines[0]), int(lines[1])) if lines else None
        request = QuoteRequest(span, symbol, match, context)
        return self.wb._quote(self.id, path, request, id, replace)

    def file(self, path: str) -> FileView:
        """Cite a whole file of this source by its hash (a file card, not a quote).

        In author mode a file not yet registered is registered at the pin; render mode needs it
        in the register already.  A file that changes at the commit rendered puts the records
        citing it up for re-review.

        Args:
            path: The file, relative to the subject's root.

        Returns:
            The file as evidence: shown, a card with its path, hash and state.

        Examples:
            ```python
            prompt = wb.source("SRC-1").file("larkspur/prompt.py")
            wb.component("RT-CMP-prompt", label="Prompt builder", identity="…", evidence=[prompt])
            ```
        """
        return self.wb._file(self.id, path)

    def __repr__(self) -> str:
        src = self.wb.register.git_source(self.id)
        return f"<source {self.id}: {src.subject} @ {src.commit[:12]}>"


class CaptureView:
    """A runtime capture cited by the report: what `wb.capture("NAME")` returns.

    Its cases and transcript excerpts are evidence; shown, it is the report's "Runtime
    capture" section.
    """

    def __init__(self, wb: Workbench, at: CapturedAt) -> None:
        self.wb, self.at = wb, at

    @property
    def source(self) -> str:
        """The register's source id for this capture (`SRC-n`)."""
        return self.at.source

    @property
    def stale(self) -> bool:
        """Whether the commit rendered has no capture of its own, so the register's (older)
        one is cited."""
        return self.at.stale

    def case(self, case_id: str) -> CaseView:
        """Cite a case of the capture as evidence: its status, as the harness computed it.

        Args:
            case_id: The case's id in the harness (`F-01`).

        Returns:
            The case as evidence (`SRC-n/F-01`); shown, its question, status and criterion.

        Examples:
            ```python
            f01 = wb.capture("fennel").case("F-01")
            ```
        """
        return CaseView(self.wb._cite_case(self.at, case_id))

    def transcript(self, case_id: str, path: str) -> ExcerptView:
        """Cite one value a case recorded as evidence, hashed as canonical JSON.

        Args:
            case_id: The case's id in the harness.
            path: A recorded name, then `.key`, `[n]` or `["key"]` steps into it.

        Returns:
            The excerpt as evidence (`SRC-n/F-01/PATH`); shown, the value as a reader
            reads it (a chat request as a conversation), its canonical JSON folded.
            `.against(...)` compares it with a named reference.

        Examples:
            ```python
            cap = wb.capture("fennel")
            stored = cap.transcript("F-01", "store after the turn.rows[0].text")
            ```
        """
        return ExcerptView(self.wb._cite_excerpt(self.at, case_id, path), self._against)

    def _against(
        self, info: ExcerptInfo, quote: Any, case: str | None, path: str | None, previous: bool
    ) -> ExcerptInfo:
        return self.wb._compare_excerpt(self.at, info, quote, case, path, previous)

    # -- the parts of an investigation record (``tracework new --kind investigation``) --
    # Each is computed from the capture's files and the register alone; showing any of
    # them means the analyst lays the capture out by parts, so `wb.done()` does not
    # append the whole section again.

    def provenance(self) -> Html:
        """The "Data and provenance" part: the subject's commit and the files hashed
        before the run, the environment, isolation, harness and every file kept, with
        their SHA-256, all read from the capture's manifest.

        Examples:
            ```python
            cap.provenance()
            ```
        """
        subject = self.at.shown.manifest.subject
        url = (
            self.wb.subject.url
            if subject == self.wb.subject.name
            else load_subject(self.wb.ws, subject).url
        )
        return self._part(provenance_html(self.at, url), "provenance")

    def conditions(self) -> Html:
        """The "Status conditions" part: what makes each case PASS, FAIL or UNKNOWN.

        Examples:
            ```python
            cap.conditions()
            ```
        """
        return self._part(conditions_html(self.at), "status conditions")

    def results(self) -> Html:
        """The "Results" part: the scripted cases and tables, then the model-driven arm
        apart and labelled.

        Examples:
            ```python
            cap.results()
            ```
        """
        return self._part(results_html(self.at), "results")

    def transcripts(self) -> Html:
        """Every case's transcript, folded (the end of the "Runtime capture" section).

        Examples:
            ```python
            cap.transcripts()
            ```
        """
        return self._part(transcripts_html(self.wb.ws.root, self.at), "transcripts")

    def limits(self) -> Html:
        """The "Limits" part, as far as the capture itself shows them: cases left
        UNKNOWN, the arm not graded, code moved since the pin, the limits in force.

        Examples:
            ```python
            cap.limits()
            ```
        """
        return self._part(limits_html(self.at), "limits")

    def _part(self, markup: str, what: str) -> Html:
        self.wb._captures_shown.add(self.at.source)
        return Html(markup, f"capture {self.at.shown.name}: {what}")

    def _repr_html_(self) -> str:
        self.wb._captures_shown.add(self.at.source)
        return self.wb._capture_section(self.at)

    def __repr__(self) -> str:
        shown = self.at.shown
        stale = f", stale (captured at {self.at.baseline.commit[:12]})" if self.stale else ""
        return f"<capture {shown.name} {self.source} at {shown.commit[:12]}{stale}>"


class Workbench(RecordDeclarations):
    """One report's register opened at a commit: it quotes, declares, draws and checks.

    Made by [`tw.open()`][tracework.notebook.workbench.open], never directly.  Records
    are declared with one method per kind (`wb.component`, `wb.route`, …); each is
    validated as it is declared (the id's prefix, statuses against their vocabularies,
    evidence against the register, references against the records declared above) and
    shown as it will be in the report.  Re-running the same JupyterLab cell may declare
    its records again; another cell may not.

    Every declaring method takes, besides its own fields:

    - `evidence`: quotes (or their ids), files (`src.file(...)` or `"SRC-1:path"`),
      records declared above, capture cases and excerpts, and source ids (`SRC-n`);
    - `reviewed`: `"YYYY-MM-DD"` (confirmed against the pin on that date) or
      `(commit, date)`, shown as the record's review stamp;
    - `notes`: Markdown shown under the record;
    - the kind's optional fields as keywords (see the record kinds reference).
    """

    def __init__(
        self,
        ws: Workspace,
        register_path: Path,
        *,
        commit: str | None,
        mode: Mode,
        analysis_date: str | None,
        output_dir: Path | None,
        title: str | None = None,
        kind: str = "runtime report",
    ) -> None:
        self.ws, self.register_path, self.mode = ws, register_path, mode
        self.analysis_date = analysis_date
        self.title, self.kind = title, kind
        self._pending = PendingQuotes(ws, register_path) if mode == "author" else None
        self._unwritten: str | None = None  # why a cell's quotes could not be written
        self._read_register()
        gits = [(sid, s) for sid, s in self.register.sources.items() if isinstance(s, GitSource)]
        if not gits:
            raise RegisterError(
                f"register {self.register.name} has no git source",
                hint="add one with `tracework register add-source`",
            )
        self.primary, source = gits[0]
        self.subject = load_subject(ws, source.subject)
        self.pin = source.commit
        mirror = open_mirror(ws, source.subject)
        self.commit = mirror.resolve_commit(commit) if commit else self.pin
        self.commit_info = mirror.commit_info(self.commit)
        self.pin_info = mirror.commit_info(self.pin)
        self.output_dir = output_dir or ws.reports / self.register.name / "draft"
        self._records: dict[str, Record] = {}
        self._cells: dict[str, str | None] = {}
        self._cell_runs: dict[str, float] = {}  # when each cell last started, by cell id
        self._quotes: dict[str, QuoteInfo] = {}
        self._files: dict[str, FileInfo] = {}  # whole files cited, by "SRC-n:path"
        self._captures: dict[str, CapturedAt] = {}  # captures cited, by source id
        self._captures_shown: set[str] = set()
        self._capture_evidence: dict[str, CaseInfo | ExcerptInfo] = {}
        #: excerpts compared with references: excerpt key → reference key → comparison,
        #: and the cell that asked for each
        self._comparisons: dict[str, dict[str, Comparison]] = {}
        self._comparison_cells: dict[tuple[str, str], str | None] = {}
        self._absences: dict[str, AbsenceResult] = {}
        self._marks: dict[str, Mark] = {}
        self._rubrics: dict[str, tuple[Rubric, str]] = {}
        self._checks: dict[str, CheckReport] = {}
        #: checks at reviewed commits, by (register hash, source, commit); None: not checkable
        self._reviewed_checks: dict[tuple[str, str, str], CheckReport | None] = {}
        self._records_shown = False
        self._quotes_shown: set[str] = set()
        self._diagrams: dict[str, Diagram] = {}
        self._texts: list[bytes] | None = None
        self._pinned_texts: dict[tuple[str, str, str], str | None] = {}  # (subject, pin, path)
        self._screen: Screen | None = None
        install_error_display()
        watched = watch_cells(self._cell_starts, self._cell_ends)
        self._write_at_cell_end = watched and mode == "author"  # else each quote at once

    def _read_register(self) -> None:
        """Load the register, keeping the SHA-256 of the very bytes read: records.json
        carries it, so that a render can tell that the register it hashed before the
        kernel started is the one the notebook read (an edit meanwhile fails the render
        instead of being recorded as what ran)."""
        try:
            raw = self.register_path.read_bytes()
        except FileNotFoundError:
            reg.load(self.register_path)  # says there is no register, and how to make one
            raise
        self.register: Register = reg.load(self.register_path, raw)
        self.register_sha256 = sha256_hex(raw)
        if self._pending is not None:
            self._pending.forget()

    def _sync_register(self) -> None:
        """Read the register again if another writer changed it (a quote from the command
        line, a hand edit) while this notebook had nothing pending."""
        pending = self._pending
        if (
            pending is not None
            and not pending.changes
            and sha256_file(self.register_path) != self.register_sha256
        ):
            self._read_register()
            self._checks.clear()

    def _write_quotes(self) -> None:
        """Write what this cell quoted, in one write (see :mod:`tracework.notebook.authoring`)."""
        if self._pending is None or not self._pending.changes:
            return
        try:
            digest = self._pending.write()
        except BaseException as exc:
            if isinstance(exc, TraceworkError):
                self._unwritten = str(exc)
            self._read_register()  # without this cell's quotes
            self._checks.clear()
            raise
        self._unwritten = None
        if digest is None:  # a full edit: it may hold others' changes too
            self._read_register()
            self._checks.clear()
        else:
            self.register_sha256 = digest

    def _cell_ends(self) -> None:
        try:
            self._write_quotes()
        except TraceworkError as exc:
            show_error(exc)

    # -- sources and quotes ------------------------------------------------------------

    @property
    def at_pin(self) -> bool:
        """Whether the commit opened is the register's pin (where every check must hold)."""
        return self.commit == self.pin

    def source(self, sid: str) -> SourceHandle:
        """A git source of the register, for quoting.

        Args:
            sid: The source's id in the register (`SRC-1`).

        Returns:
            A handle whose `quote()` and `file()` cite that source.

        Examples:
            ```python
            src = wb.source("SRC-1")
            q = src.quote("larkspur/notes.py", symbol="NoteStore.keep")
            ```
        """
        self.register.git_source(sid)
        return SourceHandle(self, sid)

    def _commit_for(self, sid: str) -> str:
        src = self.register.git_source(sid)
        return self.commit if src.subject == self.subject.name else src.commit

    def _check(self, sid: str) -> CheckReport:
        if sid not in self._checks:
            commit = self._commit_for(sid)
            at = commit if commit != self.register.git_source(sid).commit else None
            self._checks[sid] = check_register(self.ws, self.register, at=at, only=sid)
        return self._checks[sid]

    def _checked(self, sid: str, qid: str, new_file: bool) -> None:
        """Bring the source's check up to date with one quote just made (and its file),
        checking only them: a cell of 200 quotes must not check the register 200 times.
        The items take the places a full check gives them (files first, quotes in the
        register's order)."""
        report = self._checks.get(sid)
        if report is None:
            return  # checked in full, new quote and all, when first needed
        quote = self.register.quotes[qid]
        source = self.register.git_source(sid)
        commit = self._commit_for(sid)
        if commit == source.commit:  # made from the pin's bytes: verified as made
            file_sha256 = source.files[quote.path].sha256 if new_file else None
            fresh = read_at_pin(sid, qid, quote.path, quote.lines, quote.sha256, file_sha256)
        else:
            files = {quote.path: source.files[quote.path]} if new_file else {}
            alone = self.register.model_copy(
                update={
                    "sources": {sid: source.model_copy(update={"files": files})},
                    "quotes": {qid: quote},
                    "checks": [],
                    "assertions": [],
                }
            )
            fresh = check_register(self.ws, alone, at=commit, only=sid).sources[0].items
        items = report.sources[0].items
        for item in fresh:
            if item.kind == "file":
                last = max((n for n, i in enumerate(items) if i.kind == "file"), default=-1)
                items.insert(last + 1, item)
                continue
            at_n = next((n for n, i in enumerate(items) if i.kind == "quote" and i.id == qid), None)
            if at_n is None:
                items.append(item)
            else:
                items[at_n] = item

    def _info(self, qid: str) -> QuoteInfo:
        quote = self.register.quotes[qid]
        items = self._check(quote.source).sources[0].items
        # from the end: a quote just made is last, and a cell of 200 must not index 10,000
        item = next((i for i in reversed(items) if i.kind == "quote" and i.id == qid), None)
        return QuoteInfo(
            qid,
            quote,
            self.register.git_source(quote.source).commit,
            self._commit_for(quote.source),
            self._url(quote.source),
            item,
            self._pinned_text(quote.source, quote.path),
        )

    def _pinned_text(self, sid: str, path: str) -> str | None:
        """A quoted file's text at its pin, read once, so a quote is highlighted as it
        reads in its file (display only); None when it cannot be read."""
        source = self.register.git_source(sid)
        key = (source.subject, source.commit, path)
        if key not in self._pinned_texts:
            text = None
            try:
                mirror = open_mirror(self.ws, source.subject)
                data = mirror.read_blob(mirror.entry(source.commit, path).oid).data
                text = data.decode("utf-8", "replace") if data is not None else None
            except (TraceworkError, OSError) as exc:
                log.debug("no text of %s at %s to highlight with: %s", path, sid, exc)
            self._pinned_texts[key] = text
        return self._pinned_texts[key]

    def _file(self, sid: str, path: str) -> FileView:
        source = self.register.git_source(sid)
        if path not in source.files:
            if self.mode != "author":
                raise QuoteNotInRegister(
                    f"file {path} of {sid} is not in register {self.register.name}",
                    hint="open the notebook in author mode (JupyterLab) to register it; "
                    "render mode never writes to the register",
                )
            self._write_quotes()
            add_files(self.ws, self.register_path, sid, [path])
            self._read_register()
            self._checks.clear()
        info = self._file_info(sid, path)
        self._files[info.key] = info
        return FileView(info)

    def _file_info(self, sid: str, path: str) -> FileInfo:
        source = self.register.git_source(sid)
        items = {i.id: i for i in self._check(sid).items if i.kind == "file"}
        check = items.get(path)
        return FileInfo(
            file_key(sid, path),
            sid,
            path,
            source.files[path],
            source.commit,
            self._commit_for(sid),
            self._url(sid),
            check if check is not None and check.state != "verified" else None,
        )

    # -- runtime captures ---------------------------------------------------------------

    def capture(self, name: str) -> CaptureView:
        """Cite runtime capture NAME (made by `tracework capture NAME`).

        Its cases and transcript excerpts become evidence, and `operation="observed"` needs
        such evidence.  The register keeps the capture as a source with every file's hash
        (author mode adds it; render mode needs it there).  At another commit than the one
        captured, the capture made at that commit is cited when there is one (its cases
        compared with the register's), otherwise the register's, marked stale.

        Args:
            name: The capture's name (`captures/NAME.toml`).

        Returns:
            The capture; shown, the report's "Runtime capture" section.

        Examples:
            ```python
            cap = wb.capture("fennel")
            wb.route("RT-RTE-remember", label="Remembering", progression="…",
                     implementation="wired", operation="observed",
                     evidence=[q_remember, cap.case("F-01")])
            ```
        """
        from tracework.capture.store import load_capture

        sources = [
            (sid, s)
            for sid, s in self.register.sources.items()
            if isinstance(s, CaptureSource) and s.capture == name
        ]
        if not sources and self.mode == "author":
            self._write_quotes()
            add_capture_source(self.ws, self.register_path, name, self.commit)
            self._read_register()
            self._checks.clear()
            return self.capture(name)
        if not sources:
            raise QuoteNotInRegister(
                f"capture {name} is not in register {self.register.name}",
                hint="open the notebook in author mode (JupyterLab) to register it; render "
                "mode never writes to the register",
            )
        sid, source = sources[-1]
        baseline = load_capture(self.ws, name, source.commit)
        subject_commit = self.commit if source.subject == self.subject.name else source.commit
        current = None
        if subject_commit != source.commit:
            try:
                current = load_capture(self.ws, name, subject_commit)
            except CaptureMissing:
                current = None  # none made here: the register's, stale
        at = CapturedAt(sid, baseline, current, subject_commit)
        self._captures[sid] = at
        return CaptureView(self, at)

    def _cite_case(self, at: CapturedAt, case_id: str) -> CaseInfo:
        info = case_info(at, case_id)
        self._capture_evidence[info.key] = info
        return info

    def _cite_excerpt(self, at: CapturedAt, case_id: str, path: str) -> ExcerptInfo:
        info = excerpt_info(self.ws.root, at, case_id, path)
        self._capture_evidence[info.key] = info
        return self._with_comparisons(info)

    def _compare_excerpt(
        self,
        at: CapturedAt,
        info: ExcerptInfo,
        quote: Any,
        case: str | None,
        path: str | None,
        previous: bool,
    ) -> ExcerptInfo:
        """Compare a cited excerpt with one reference (see `ExcerptView.against`)."""
        if previous:
            reference = self._previous_reference(at, info)
        elif quote is not None:
            reference = self._quote_reference(at, quote)
        else:
            reference = self._case_reference(at, info, case or info.case, path or info.path)
        self._capture_evidence.setdefault(info.key, info)
        self._comparisons.setdefault(info.key, {})[reference.key] = compare(info.value, reference)
        self._comparison_cells[(info.key, reference.key)] = cell_id()
        return self._with_comparisons(info)

    def _with_comparisons(self, info: ExcerptInfo) -> ExcerptInfo:
        found = self._comparisons.get(info.key, {})
        return replace(info, comparisons=tuple(found.values()))  # in the order asked

    def _quote_reference(self, at: CapturedAt, quote: Any) -> Reference:
        """A quote as a reference: its text at the commit the compared value was captured
        at (the register's text at the pin; at the commit rendered, the quote's text
        there, so a quote that changed is compared as it is now)."""
        qid = quote.id if isinstance(quote, QuoteView) else quote
        if not isinstance(qid, str) or qid not in self.register.quotes:
            raise QuoteNotInRegister(
                f"{qid!r} is not a quote of register {self.register.name}",
                hint="compare with a quote (q = src.quote(...)) or the id of one in the register",
            )
        info = self._quotes.get(qid) or self._info(qid)
        q = info.quote
        pinned = info.commit == info.pin or at.shown.commit != self.commit
        commit = info.pin if pinned else info.commit
        text: str | None = q.text
        missing: str | None = None
        drift = None if pinned else info.drift
        if q.raw_b64 is not None:
            text, missing = None, f"the text {qid} quotes is not UTF-8"
        elif drift is not None and drift.state in ("missing", "ambiguous"):
            text, missing = None, f"{qid} is {drift.state} at {commit[:12]}"
        elif drift is not None and drift.state == "changed":
            text = self._text_at(q.source, drift.new_path or q.path, drift.new_lines, commit)
            if text is None:
                missing = f"{qid} changed at {commit[:12]} and its lines there cannot be read"
        path = (drift.new_path or q.path) if drift is not None else q.path
        lines = (drift.new_lines or q.lines) if drift is not None else q.lines
        form, first = None, 1
        if text is not None:
            text, form = quoted_text(text, path)
            first = lines[0] if form == "lines" else 1
        label = f"the string {qid} quotes" if form == "string literal" else qid
        return Reference("quote", label, text, form, first, missing, quote=qid, commit=commit)

    def _text_at(
        self, sid: str, path: str, lines: tuple[int, int] | None, commit: str
    ) -> str | None:
        """The text of ``lines`` of ``path`` at ``commit``, or None when they cannot be
        read there (no lines, no such file, not a text file, not UTF-8)."""
        if lines is None:
            return None
        mirror = open_mirror(self.ws, self.register.git_source(sid).subject)
        try:
            data = quotable_lines(mirror, mirror.entry(commit, path), path, "notebook")
            return data.span(*lines).decode("utf-8")
        except (TraceworkError, UnicodeDecodeError) as exc:
            log.debug("cannot read %s:%s at %s: %s", path, lines, commit[:12], exc)
            return None

    def _case_reference(self, at: CapturedAt, info: ExcerptInfo, case: str, path: str) -> Reference:
        """Another value of the capture shown.  In the register's capture a value not
        there is an error (a mistyped case or path); in a later one, a finding."""
        if (case, path) == (info.case, info.path):
            raise TraceworkError(
                f"{info.key} compared with itself",
                hint="name another case= or path= to compare it with",
            )
        label = f'{case}\'s value at "{path}"'
        commit = at.shown.commit
        try:
            value = value_at(self.ws.root, at.shown, case, path)
        except TraceworkError as exc:
            if at.current is None:
                raise
            return Reference("case", label, None, missing=str(exc), case=case, path=path,
                             commit=commit)  # fmt: skip
        text, form = compared_text(value)
        return Reference("case", label, text, form, case=case, path=path, commit=commit)

    def _previous_reference(self, at: CapturedAt, info: ExcerptInfo) -> Reference:
        """The same case and path in the capture at the nearest commit before the one
        shown that has a capture of this name."""
        shown = at.shown
        mirror = open_mirror(self.ws, shown.manifest.subject)
        before = previous_capture(self.ws, shown, mirror.ancestors(shown.commit))
        case, path = info.case, info.path
        if before is None:
            missing = f"no capture of {shown.name} at a commit before {shown.commit[:12]}"
            return Reference("previous", "the previous capture", None, missing=missing,
                             case=case, path=path)  # fmt: skip
        label = f"its value in the capture at {before.commit[:12]}"
        try:
            value = value_at(self.ws.root, before, case, path)
        except TraceworkError as exc:
            return Reference("previous", label, None, missing=str(exc), case=case, path=path,
                             commit=before.commit)  # fmt: skip
        text, form = compared_text(value)
        return Reference("previous", label, text, form, case=case, path=path, commit=before.commit)

    def _capture_section(self, at: CapturedAt) -> str:
        cited = [e for e in self._capture_evidence.values() if e.capture.source == at.source]
        return capture_html(
            at,
            [e for e in cited if isinstance(e, CaseInfo)],
            [self._with_comparisons(e) for e in cited if isinstance(e, ExcerptInfo)],
            transcripts_html(self.ws.root, at),
            notice=self._unregistered_notice(at.source),
        )

    def _unregistered_notice(self, sid: str) -> str:
        """A marked block, at the capture's place, when its files are not those the
        register holds (captured again since it was registered): the same lines, and the
        same fix, as the check summary and ``tracework check`` give."""
        report = self._workspace_check([sid])
        bad = [problem_text(i, "capture") for i in report.items if i.state != "verified"]
        if not bad:
            return ""
        return (
            f"<p>{badge('changed', 'not as registered')} these are not the files register "
            f"{esc(self.register.name)} holds as {esc(sid)}: the checks fail until the "
            "capture is registered again (or the registered one restored).</p>"
            '<ul class="tw-problems">' + "".join(f"<li>{esc(line)}</li>" for line in bad) + "</ul>"
        )

    def _url(self, sid: str) -> str:
        subject = self.register.git_source(sid).subject
        return (
            self.subject.url if subject == self.subject.name else load_subject(self.ws, subject).url
        )

    def _quote(
        self, sid: str, path: str, request: QuoteRequest, qid: str | None, replace: bool
    ) -> QuoteView:
        replaced = None
        if self._pending is not None:
            if qid is not None and qid in self._pending.changes:
                self._write_quotes()  # the cell names an id it quoted: one change per id
            self._sync_register()
            quoted = self._pending.quote(self.register, sid, path, request, qid, replace)
            self.register, qid, replaced = quoted.register, quoted.quote_id, quoted.replaced
            if quoted.new:
                self._checked(sid, qid, quoted.new_file)
            if not self._write_at_cell_end:
                self._write_quotes()  # no cells to wait for
        else:
            qid = self._find_in_register(sid, path, request, qid)
        info = self._info(qid)
        self._quotes[qid] = info
        return QuoteView(qid, info, replaced)

    def _find_in_register(self, sid: str, path: str, request: QuoteRequest, qid: str | None) -> str:
        src = self.register.git_source(sid)
        mirror = open_mirror(self.ws, src.subject)
        data = quotable_lines(mirror, mirror.entry(src.commit, path), path, "notebook")
        span, anchor = request.locate(data, path, "notebook")
        wanted = make_quote(sid, path, data, span, anchor)
        candidates = [qid] if qid else list(self.register.quotes)
        for cid in candidates:
            have = self.register.quotes.get(cid)
            if have is not None and same_evidence(have, wanted):
                return cid
        where = f"{path}:{span.first}-{span.last}"
        have = self.register.quotes.get(qid) if qid else None
        now = f"; {qid} is {have.path}:{have.lines[0]}-{have.lines[1]}" if have else ""
        raise QuoteNotInRegister(
            f"{qid or 'the quote'} ({where} at {src.commit[:12]}) is not in register "
            f"{self.register.name}{now}",
            hint="run the notebook in author mode to add it (JupyterLab, or `tracework author "
            f"{self.register.name}`)"
            + (" (with replace=True to point the id at this span)" if have else "")
            + "; render mode never writes to the register",
        )

    # -- cells -----------------------------------------------------------------------

    def _cell_starts(self, cell: str) -> None:
        """A cell runs (again): what it declared on its last run goes, so a record renamed
        in it and re-run is not left behind under its old id, without a kernel restart."""
        self._cell_runs[cell] = time.time()
        self._forget_cell(cell)

    def _forget_cell(self, cell: str) -> list[str]:
        """Drop the records, marks and diagrams one cell declared; returns their names."""
        gone = sorted(key for key, c in self._cells.items() if c == cell)
        for key in gone:
            del self._cells[key]
            self._records.pop(key, None)
            self._absences.pop(key, None)
            self._marks.pop(key, None)
        drawn = sorted(name for name, d in self._diagrams.items() if d.cell == cell)
        for name in drawn:
            del self._diagrams[name]
        for key, ref in [k for k, c in self._comparison_cells.items() if c == cell]:
            del self._comparison_cells[(key, ref)]
            self._comparisons[key].pop(ref, None)
        return gone + [f"diagram {name}" for name in drawn]

    def _forget_deleted_cells(self) -> None:
        """Drop what cells no longer in the saved notebook declared, each with a one-line
        note.  Only the kernel knows what ran, only the saved file what was deleted, so a
        cell counts as deleted when the notebook was saved after it last ran and does not
        hold it: a cell added and run since the last save stays."""
        path = notebook_file()
        if path is None:
            return
        try:
            saved = path.stat().st_mtime
            notebook = load_json(path.read_bytes())
        except (OSError, TraceworkError) as exc:
            log.debug("cannot read %s for its cell ids: %s", path, exc)
            return
        cells = notebook.get("cells") if isinstance(notebook, dict) else None
        if not isinstance(cells, list):
            return
        present = {c.get("id") for c in cells if isinstance(c, dict)}
        declared = {c for c in self._cells.values() if c is not None}
        for cell in sorted(declared - present):
            if self._cell_runs.get(cell, 0.0) > saved:
                continue
            gone = ", ".join(self._forget_cell(cell))
            note = f"Removed {gone}: the cell that declared them is no longer in the notebook."
            display(Html(f'<p class="tw-note">{esc(note)}</p>', note))

    def _refuse_dangling(self) -> None:
        """A record that names or cites a record no longer declared (renamed or removed in
        a cell run since) is one clear error, not a records.json with a dangling id."""
        for record in self._records.values():
            named = list(record.references().items()) + [
                ("evidence", e) for e in record.evidence if e.startswith("RT-")
            ]
            for field_name, ref in named:
                if ref not in self._records:
                    raise RecordError(
                        f"{record.id}: {field_name} names {ref}, which is no longer declared",
                        hint=f"declare {ref} again, or re-run the cell that declares "
                        f"{record.id} with what replaced it",
                    )
        for mark in self._marks.values():
            for ref in mark.evidence:
                if ref.startswith("RT-") and ref not in self._records:
                    raise RecordError(
                        f"mark {mark.rubric}/{mark.mechanism}: evidence names {ref}, which is "
                        "no longer declared",
                        hint=f"declare {ref} again, or re-run the cell that marks it",
                    )

    # -- sections and the end ----------------------------------------------------------

    def _drifted(self) -> dict[str, list[str]]:
        """Per record, the cited evidence that no longer holds at the commit: a drifted
        quote, a changed or missing file, its own broken absence, or a cited record that
        needs re-review itself — transitively (records cite only records declared
        before them, and cycles are refused, so one pass in order suffices) — less what
        the record's review covers (see :mod:`tracework.notebook.review`)."""
        return self._review_drift()[0]

    def _review_drift(self) -> tuple[dict[str, list[str]], dict[str, set[str]]]:
        """:meth:`_drifted`, and per record it flags, the drifted evidence the flag rests
        on (its own, and that of the records it cites): what a review of a record citing
        it must cover."""
        out: dict[str, list[str]] = {}
        behind: dict[str, set[str]] = {}
        for record in self._records.values():
            broken = record.id in self._absences and not self._absences[record.id].holds
            bad, rests = self._flagged(
                record.evidence, record.reviewed_at, out, behind, own=record.id if broken else None
            )
            if bad:
                out[record.id], behind[record.id] = bad, rests
        return out, behind

    def _flagged(
        self,
        evidence: Sequence[str],
        stamp: ReviewStamp | None,
        records: dict[str, list[str]],
        behind: dict[str, set[str]],
        own: str | None = None,
    ) -> tuple[list[str], set[str]]:
        """The cited ``evidence`` that puts a record or mark reviewed at ``stamp`` up for
        re-review (``own``: its own broken absence), and the drifted evidence that rests
        on: a drifted quote, file or capture, or a cited record in ``records`` (flagged)
        whose drift, in ``behind``, is not all unchanged since the review."""
        captured = [self._capture_evidence[e] for e in evidence if e in self._capture_evidence]
        only_stale = bool(captured) and all(c.state == "stale" for c in captured)
        bad: list[str] = []
        rests: set[str] = set()
        for e in evidence:
            if e in records:
                since = {d for d in behind[e] if not self._covered(stamp, d)}
                if since:
                    bad.append(e)
                    rests |= since
                continue
            quote, cited = self._quotes.get(e), self._files.get(e)
            observed = self._capture_evidence.get(e)
            if (
                (quote is not None and quote.state in DRIFT_STATES)
                or (cited is not None and cited.drifted)
                or (observed is not None and (observed.state == "changed" or only_stale))
            ) and not self._covered(stamp, e):
                bad.append(e)
                rests.add(e)
        if own is not None and not self._covered(stamp, own):
            bad.append(own)
            rests.add(own)
        return bad, rests

    def _covered(self, stamp: ReviewStamp | None, evidence: str) -> bool:
        """Whether a review at ``stamp`` covers drifted ``evidence``: it is unchanged since
        the reviewed commit (see :mod:`tracework.notebook.review`)."""
        if stamp is None:
            return False
        if stamp.commit == self.commit:
            return True
        quote, cited = self._quotes.get(evidence), self._files.get(evidence)
        if quote is not None:
            sid, kind, key, now = quote.quote.source, "quote", evidence, quote.drift
        elif cited is not None:
            sid, kind, key, now = cited.source, "file", cited.path, cited.check
        else:
            return False  # a capture, a broken absence: only a review at this commit
        if self.register.git_source(sid).subject != self.subject.name:
            return False  # not read at this commit, nor at the reviewed one
        report = self._checked_at(sid, stamp.commit)
        if report is None:
            return False
        then = next((i for i in report.items if i.kind == kind and i.id == key), None)
        return then is not None and unchanged(then, now)

    def _checked_at(self, sid: str, commit: str) -> CheckReport | None:
        """Source ``sid`` checked at a reviewed ``commit``, once per register version;
        None when that commit cannot be checked (not in the mirror)."""
        key = (self.register_sha256, sid, commit)
        if key not in self._reviewed_checks:
            try:
                found: CheckReport | None = check_register(
                    self.ws, self.register, at=commit, only=sid
                )
            except TraceworkError:
                found = None
            self._reviewed_checks[key] = found
        return self._reviewed_checks[key]

    def diagram(
        self,
        name: str,
        source: str | None = None,
        *,
        caption: str,
        routes: Sequence[str] = (),
        records: Sequence[str] | Literal["all"] = (),
        direction: str | None = None,
    ) -> None:
        """Draw a Mermaid flowchart, checked at once.

        Give exactly one of `source` (written by hand), `routes` (each route's progression
        through the records it passes) or `records` (the runtime: `"all"`, or ids of
        components, operative objects, routes and authority paths, drawn as one flowchart,
        see :func:`tracework.notebook.diagrams.runtime`).  A node whose id is a record id, or
        that a `%% bind NODE RECORD` line names, links to that record's card and must name a
        record declared above; every `` `identifier` `` in a label is drawn in code font and
        must be defined or called in the registered files at the commit.  Directives,
        `click`, `href`, HTML in labels and hidden characters are refused.

        Args:
            name: The diagram's name: letters, digits, `-` and `_`.
            source: Mermaid flowchart text.
            caption: The figure's caption, also its text alternative.
            routes: Ids of declared routes (`RT-RTE-…`).
            records: `"all"`, or ids of declared components, operative objects, routes and
                behavioural-authority paths, for the runtime diagram.
            direction: `TB`, `BT`, `LR` or `RL`, for generated diagrams: `TB` for routes by
                default; a runtime diagram picks its own by its shape.

        Examples:
            ```python
            wb.diagram("one-turn", '''flowchart LR
              msg(["user message"]) --> RT-CMP-note-store["filed by `NoteStore.keep`"]
              %% bind msg RT-RTE-keep
            ''', caption="One turn of Larkspur.")
            wb.diagram("runtime", caption="What runs, and what it keeps.", records="all")
            ```
        """
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}", name):
            raise DiagramError(
                f"diagram {name!r}: not a diagram name",
                hint="name it with letters, digits, - and _ (up to 64)",
            )
        cell = cell_id()
        if name in self._diagrams and (cell is None or self._diagrams[name].cell != cell):
            raise DiagramError(f"diagram {name} is drawn twice")
        if direction is not None and direction not in DIRECTIONS:
            raise DiagramError(
                f"diagram {name}: direction={direction!r} is not one of {', '.join(DIRECTIONS)}"
            )
        if sum(bool(x) for x in (source, routes, records)) != 1:
            raise DiagramError(
                f"diagram {name}: give exactly one of source, routes= or records=",
                hint="source is Mermaid text; routes= and records= take record ids",
            )
        kind = "hand-written" if source else "generated"
        titles = {rid: r.label or rid for rid, r in self._records.items()}
        try:
            if routes:
                chosen = [self._record_of(rid, (Route,), name, "routes") for rid in routes]
                source = from_routes(chosen, titles, direction or "TB")
            elif records:
                source = self._runtime(name, records, titles, direction)
            assert source is not None
            parsed = parse(source)
            result = check_diagram(name, parsed, self._records, self._defined)
        except DiagramError as exc:
            if exc.message.startswith(f"diagram {name}:"):
                raise
            # the parser and the generators speak of lines and nodes; say which diagram
            raise DiagramError(f"diagram {name}: {exc.message}", hint=exc.hint) from None
        drawn = Diagram(name, caption, source, result, kind, cell)
        self._diagrams[name] = drawn
        if self.mode == "author":
            write_atomic(self.output_dir / "diagrams" / f"{name}.mmd", source)
        meta = {
            "tracework": {
                "diagram": name,
                "caption": caption,
                "bindings": result.bindings,
                "source": source,
            }
        }
        display(
            {"text/vnd.mermaid": drawable(source), "text/plain": f"diagram {name}: {caption}"},
            raw=True,
            metadata=meta,
        )
        display(
            Html(diagram_note_html(drawn), f"diagram {name}"),
            metadata={"tracework": "diagram-note"},
        )

    def _runtime(
        self,
        name: str,
        records: Sequence[str] | str,
        titles: dict[str, str],
        direction: str | None,
    ) -> str:
        """The runtime diagram of ``records``: with ``"all"``, every component, operative
        object and route that passes through something, and every authority path that
        names its retained material, in the order they were declared."""
        drawn = (Component, OperativeObject, Route, AuthorityPath)
        if isinstance(records, str):
            if records != "all":
                raise DiagramError(
                    f'diagram {name}: records={records!r} is neither "all" nor a list',
                    hint='write records="all", or records=["RT-CMP-…", …]',
                )
            chosen = [
                r
                for r in self._records.values()
                if isinstance(r, drawn)
                and not (isinstance(r, Route) and not r.passes_through)
                and not (isinstance(r, AuthorityPath) and not r.source_material)
            ]
        else:
            chosen = [self._record_of(rid, drawn, name, "records") for rid in records]
        return runtime(
            [r.id for r in chosen if isinstance(r, (Component, OperativeObject))],
            [r for r in chosen if isinstance(r, Route)],
            [r for r in chosen if isinstance(r, AuthorityPath)],
            titles,
            direction,
        )

    def _record_of(
        self, rid: str, kinds: tuple[type[Record], ...], diagram: str, argument: str
    ) -> Any:
        """The record ``rid`` given in ``routes=`` or ``records=``, of a kind that argument
        draws; a record of another kind is named as what it is."""
        record = self._records.get(rid)
        if record is None:
            raise DiagramError(
                f"diagram {diagram}: {argument}= names {rid}, which is not declared above",
                hint=f"declare {rid} in a cell above the diagram",
            )
        if not isinstance(record, kinds):
            named = [f"{k.kind}s ({k.prefix}…)" for k in kinds]
            wanted = " or ".join([", ".join(named[:-1]), named[-1]] if named[:-1] else named)
            raise DiagramError(
                f"diagram {diagram}: {argument}= takes {wanted}, and {rid} is a {record.kind}",
                hint="other records go into a hand-written source, bound with `%% bind`",
            )
        return record

    def _defined(self, identifier: str) -> bool:
        """Whether an identifier's last part is defined or called in a registered file."""
        pattern = name_pattern(identifier)
        if pattern is None:
            return False
        if self._texts is None:
            self._texts = []
            for sid, src in self.register.sources.items():
                if isinstance(src, GitSource):
                    mirror = open_mirror(self.ws, src.subject)
                    tree = mirror.tree(self._commit_for(sid))
                    entries = [tree[p] for p in src.files if p in tree and tree[p].kind == "file"]
                    blobs = mirror.read_blobs(e.oid for e in entries)
                    self._texts += [b.data for b in blobs.values() if b.data is not None]
        return any(pattern.search(text) for text in self._texts)

    def screen(self) -> None:
        """Show the screen of the subject at the commit as a section of the report.

        The same findings as `tracework screen` (what a checkout would run, install or
        instruct, and locked packages inside the cooldown window), kept in records.json as
        `screen`.

        Examples:
            ```python
            wb.screen()
            ```
        """
        from tracework.screen import DEFAULT_DAYS, screen

        self._screen = screen(
            open_mirror(self.ws, self.subject.name),
            self.commit,
            cooldown_days=self.ws.cooldown_days or DEFAULT_DAYS,
        )
        display(Html(screen_html(self._screen), f"screen: {self._screen.counts()}"))

    def records(self) -> None:
        """Show the "Shared records" section: the records by kind, then the quoted evidence.

        `done()` shows it when the notebook never does, and then the rubric marks.

        Examples:
            ```python
            wb.records()
            ```
        """
        display(
            Html(
                records_section(
                    self._records.values(),
                    self._quotes,
                    self._absences,
                    self._drifted(),
                    self._files,
                ),
                counted(len(self._records), "record"),
            )
        )
        self._records_shown = True
        self._quotes_shown = set(self._quotes)

    def _show_marks(self) -> None:
        """The "Rubric marks" section, with the cards of quotes first cited by a mark, so
        that every link to a mark or its evidence lands on an anchor."""
        rubrics = {name: rubric for name, (rubric, _) in self._rubrics.items()}
        late = [self._quotes[q] for q in sorted(set(self._quotes) - self._quotes_shown)]
        display(
            Html(
                marks_section(self._marks.values(), rubrics, self._marks_drifted(), late),
                f"{len(self._marks)} rubric marks",
            ),
            metadata={"tracework": "marks"},  # the report page moves it near its top
        )

    def summary(self) -> dict[str, Any]:
        """Every check on this report at its commit, as data: what records.json keeps as `checks`.

        Returns:
            `ok`, the list of `problems`, and the counts of each check (register, records,
            absences, diagrams, marks).
        """
        return to_json(self._check_summary())

    def _check_summary(self) -> CheckSummary:
        """Every check at this commit, as the model records.json's `checks` is written from."""
        problems: list[str] = []
        reports = [
            self._check(sid) for sid, s in self.register.sources.items() if isinstance(s, GitSource)
        ]
        items = [i for r in reports for i in r.items] + self._workspace_items()
        allowed = {"verified"} if self.at_pin else {"verified", "moved"}
        bad = [
            i for i in items if i.state not in allowed and not (i.format_only and not self.at_pin)
        ]
        problems += [problem_text(i, self.register.sources[i.source].kind) for i in bad]
        counts = {
            k: dict(sorted(Counter(i.state for i in items if i.kind == k).items()))
            for k in ("file", "quote")
        }
        if not self._records:
            problems.append("no records declared")
        broken = [rid for rid, res in self._absences.items() if not res.holds]
        problems += [f"absence {rid}: the patterns now match" for rid in broken]
        uncited = sorted(set(self.register.quotes) - set(self._quotes))
        bare = sum(
            1 for r in self._records.values() if not r.evidence and r.id not in self._absences
        )
        failing = [d for d in self._diagrams.values() if not d.check.ok]
        for d in failing:
            if d.check.unknown_records:
                problems.append(
                    f"diagram {d.name}: binds unknown records " + ", ".join(d.check.unknown_records)
                )
            if d.check.vanished:
                problems.append(
                    f"diagram {d.name}: identifiers not found at "
                    f"{self.commit[:12]}: " + ", ".join(d.check.vanished)
                )
        named = sum(len(d.check.identifiers) for d in self._diagrams.values())
        registered = RegisterCheck(
            ok=not bad and bool(items),
            detail="; ".join(
                f"{kind}s: " + ", ".join(f"{n} {s}" for s, n in c.items())
                for kind, c in counts.items()
                if c
            )
            or "nothing registered",
            counts=counts,
        )
        records = RecordsCheck(
            ok=bool(self._records),
            detail=f"{counted(len(self._records), 'record')}, {bare} citing no "
            "evidence; every reference resolves and every cited quote is in the register; "
            f"{counted(len(uncited), 'register quote')} not cited",
            counts=dict(Counter(r.kind for r in self._records.values())),
        )
        absences = Check(
            ok=not broken,
            detail=f"{len(self._absences) - len(broken)} hold, {len(broken)} broken",
        )
        diagrams = Check(
            ok=not failing,
            detail=f"{counted(len(self._diagrams), 'diagram')}, "
            f"{counted(named, 'identifier')} checked; {len(failing)} with problems",
        )
        # assertions and marks are in records.json only when the report has them: passed
        # only then, a family left out stays unset, and so unwritten (to_json)
        optional: dict[str, Check] = {}
        asserted = [a for r in reports for a in r.assertions]
        if asserted:
            failing_assertions = [a for a in asserted if a.fails]
            problems += [
                f"assertion by {a.by or 'the register'}: {a.path} {a.where()}: {a.state} (required)"
                for a in failing_assertions
            ]
            findings = sum(1 for a in asserted if a.state != "holds")
            optional["assertions"] = Check(
                ok=not failing_assertions,
                detail=f"{len(asserted) - findings} of {len(asserted)} asserted hashes hold; "
                f"{findings} differ or are missing ({len(failing_assertions)} required)",
                findings=findings - len(failing_assertions),
            )
        if self._marks:
            stale = self._marks_drifted()
            problems += [
                f"mark {self._marks[key].rubric}/{self._marks[key].mechanism}: evidence "
                "drifted: " + ", ".join(v)
                for key, v in stale.items()
            ]
            optional["marks"] = Check(
                ok=not stale,
                detail=f"{counted(len(self._marks), 'mark')} against "
                f"{counted(len(self._rubrics), 'rubric')}; every present mark cites evidence; "
                f"{len(stale)} need re-review",
            )
        checks = Checks(
            registered=registered,
            records=records,
            absences=absences,
            diagrams=diagrams,
            **optional,
        )
        return CheckSummary(
            ok=all(check.ok for _, check in checks.families()),
            commit=self.commit,
            pin=self.pin,
            at_pin=self.at_pin,
            checks=checks,
            problems=problems,
        )

    def _workspace_items(self) -> list[CheckItem]:
        """The register's sources kept as files in the workspace (documents and captures),
        hashed again as ``tracework check`` hashes them."""
        if all(isinstance(s, GitSource) for s in self.register.sources.values()):
            return []  # nothing to hash, and no copy of the register's data to make
        return self._workspace_check().items

    def _workspace_check(self, ids: list[str] | None = None) -> CheckReport:
        """:func:`check_workspace_sources` of this register (its sources alone: the quotes
        are not what it reads, and a copy of 10,000 of them is not free)."""
        sources = self.register.model_copy(update={"quotes": {}, "checks": [], "assertions": []})
        report = CheckReport(self.register.name, None, [])
        check_workspace_sources(self.ws, reg.data_of(sources), report, ids)
        return report

    def records_json(self) -> dict[str, Any]:
        """Everything the report declares and checked, as records.json holds it.

        Returns:
            The records (each with its kind and the evidence that needs re-review), quotes,
            files, absences, diagrams, marks, captures, the checks and the provenance of
            what was read.
        """
        return to_json(self._kernel_records())

    def _kernel_records(self) -> KernelRecords:
        """records.json as this kernel writes it: the model the file is written from."""
        drifted = self._drifted()
        return KernelRecords(
            format=RECORDS_FORMAT,
            tracework=__version__,
            register_name=self.register.name,
            kind=self.kind,
            title=self.title,
            register_sha256=self.register_sha256,
            subject=self.subject.name,
            url=self.subject.url,
            pin=self.pin,
            pin_date=self.pin_info.date,
            commit=self.commit,
            commit_date=self.commit_info.date,
            analysis_date=self.analysis_date,
            mode=self.mode,
            records=[
                _record_entry(record, drifted.get(record.id, []))
                for kind in KINDS
                for record in self._records.values()
                if type(record) is kind
            ],
            quotes={qid: _quote_entry(info) for qid, info in sorted(self._quotes.items())},
            files={
                key: FileEntry(
                    source=info.source,
                    path=info.path,
                    sha256=info.entry.sha256,
                    state=info.state,
                    new_path=info.check.new_path if info.check else None,
                )
                for key, info in sorted(self._files.items())
            },
            captures={
                sid: CaptureEntry(
                    capture=at.shown.name,
                    registered_commit=at.baseline.commit,
                    captured_at=at.shown.commit,
                    stale=at.stale,
                    counts=at.shown.results.counts,
                    harness_sha256=at.shown.manifest.harness_sha256,
                    environment_sha256=at.shown.manifest.environment.sha256,
                    isolation=at.shown.manifest.isolation,
                )
                for sid, at in sorted(self._captures.items())
            },
            capture_evidence={
                key: _capture_evidence_entry(
                    self._with_comparisons(info) if isinstance(info, ExcerptInfo) else info
                )
                for key, info in sorted(self._capture_evidence.items())
            },
            assertions=[
                AssertionEntry(**a._asdict())  # the check's fields, one for one
                for sid, s in self.register.sources.items()
                if isinstance(s, GitSource)
                for a in self._check(sid).assertions
            ],
            absences={
                rid: AbsenceEntry(
                    holds=res.holds,
                    files=len(res.files),
                    skipped=list(res.skipped),
                    matches=[
                        AbsenceMatch(path=m.path, line=m.line, text=m.text) for m in res.matches
                    ],
                )
                for rid, res in self._absences.items()
            },
            diagrams={
                name: DiagramEntry(
                    caption=d.caption,
                    kind=d.kind,
                    source_sha256=sha256_hex(d.source.encode("utf-8")),
                    bindings=d.check.bindings,
                    unknown_records=list(d.check.unknown_records),
                    identifiers=d.check.identifiers,
                    vanished=list(d.check.vanished),
                    ok=d.check.ok,
                )
                for name, d in self._diagrams.items()
            },
            screen=self._screen.as_json() if self._screen else None,
            marks=rubric_marks(self._marks.values(), self._rubrics, self._marks_drifted()),
            checks=self._check_summary(),
        )

    def done(self) -> None:
        """Finish the report: write records.json, run every check and show the summary.

        Call it in the notebook's last cell.  In render mode records.json goes to the render
        (as an output of this cell) rather than to disk.  At the register's pin a failing
        check in render mode raises `ChecksFailed`, so the render fails and the previous
        report stays; at another commit the summary shows the drift instead.  What cells
        deleted from the notebook declared goes first, with a note.

        Raises:
            ChecksFailed: In render mode at the pin, when a check fails.

        Examples:
            ```python
            wb.done()
            ```
        """
        self._write_quotes()
        if self._unwritten is not None:
            raise RegisterError(
                f"a cell's quotes were not written: {self._unwritten}",
                hint="run that cell again, then this one",
            )
        self._forget_deleted_cells()
        self._refuse_dangling()
        records = self._kernel_records()
        if self.mode == "render":
            # tracework render takes records.json from this output of the executed notebook
            display(
                {
                    RECORDS_MIME: to_json(records),
                    "text/plain": f"records.json: {len(self._records)} records",
                },
                raw=True,
            )
        else:
            write_records(self.output_dir / "records.json", records)
        if not self._records_shown:
            self.records()
        for sid, at in sorted(self._captures.items()):
            if sid not in self._captures_shown:
                display(Html(self._capture_section(at), f"capture {at.shown.name}"))
        if self._marks:
            self._show_marks()
        summary = records.checks
        display(
            Html(summary_html(summary), "checks hold" if summary.ok else "checks fail"),
            metadata={"tracework": "summary"},
        )
        if self.mode == "render" and self.at_pin and not summary.ok:
            raise ChecksFailed(
                "checks fail at the register's pin: " + "; ".join(summary.problems[:10]),
                hint="fix the notebook or the register; the previous report is kept",
            )


def _record_entry(record: Record, needs_review: list[str]) -> RecordEntry:
    """A declared record as records.json lists it: its kind's own fields as the record
    model gives them (see :class:`~tracework.render.artefacts.RecordEntry`), its kind and
    the evidence that needs re-review."""
    fields = record.model_dump(mode="json", exclude_none=True)
    return RecordEntry.model_validate({**fields, "kind": record.kind, "needs_review": needs_review})


def _quote_entry(info: QuoteInfo) -> QuoteEntry:
    q, d = info.quote, info.drift
    return QuoteEntry(
        source=q.source,
        path=q.path,
        lines=q.lines,
        sha256=q.sha256,
        state=d.state if d else "verified",
        format_only=bool(d and d.format_only),
        new_path=d.new_path if d else None,
        new_lines=d.new_lines if d and d.new_lines else None,
    )


def _capture_evidence_entry(info: CaseInfo | ExcerptInfo) -> CaptureEvidenceEntry:
    if isinstance(info, CaseInfo):
        return CaptureEvidenceEntry(
            kind="case",
            source=info.capture.source,
            case=info.case.id,
            path=None,
            status=info.case.status,
            sha256=None,
            state=info.state,
        )
    compared = (
        {"compared_with": [_comparison_entry(c) for c in info.comparisons]}
        if info.comparisons
        else {}
    )
    return CaptureEvidenceEntry(
        kind="excerpt",
        source=info.capture.source,
        case=info.case,
        path=info.path,
        status=None,
        sha256=info.sha256,
        state=info.state,
        **compared,
    )


def _comparison_entry(comparison: Comparison) -> ComparisonEntry:
    """A comparison as records.json holds it: the reference (with the SHA-256 of the text
    compared with) and the verdict, so a check can compare again and get the same."""
    ref = comparison.reference
    return ComparisonEntry(
        reference=ComparedWith(
            kind=ref.kind,
            quote=ref.quote,
            case=ref.case,
            path=ref.path,
            commit=ref.commit,
            form=ref.form,
            sha256=ref.sha256,
        ),
        form=comparison.form,
        verdict=comparison.verdict,
        sentence=comparison.sentence,
        changes=[
            LineChange(op=c.op, lines=c.lines, reference_lines=c.reference_lines)
            for c in comparison.changes
        ],
        fills=[FieldFill(field=f.field, lines=f.lines, text=f.text) for f in comparison.fills],
    )


def open(
    register: str,
    commit: str | None = None,
    mode: str | None = None,
    *,
    analysis_date: str | None = None,
    output_dir: str | None = None,
    title: str | None = None,
    kind: str = "runtime report",
) -> Workbench:
    """Open a report's register at a commit: the first call of every report notebook.

    The workspace is found from the current folder, as the command line finds it.

    Args:
        register: The register's name (`larkspur`) or path (`registers/larkspur.yaml`).
        commit: A commit id or unique hex prefix to read the subject at (None: the
            register's pin).
        mode: `"author"` (the default by hand: new quotes and files are added to the
            register) or `"render"` (what `tracework render` passes: the register is
            never written).
        analysis_date: The date the evidence was checked, `YYYY-MM-DD`, shown in the
            report's header (renders never read the clock).
        output_dir: Where author mode writes records.json and diagrams (default:
            `reports/NAME/draft`).
        title: The report's title (default: the notebook's first `# heading`).
        kind: What the report is: `"runtime report"`, `"atlas report"`,
            `"investigation record"` or words of the analyst's own; the page, the site's
            index and its search show it.

    Returns:
        The workbench for declaring and checking the report.

    Raises:
        TraceworkError: A mode, date, kind or title that cannot be used, or a register or
            commit that cannot be read.

    Examples:
        ```python
        import tracework as tw

        wb = tw.open(register, commit=commit, mode=mode, analysis_date=analysis_date)
        wb = tw.open("larkspur", kind="atlas report", title="Larkspur's notes")
        ```
    """
    if mode is None:
        mode = "author"
    if mode not in ("author", "render"):
        raise TraceworkError(f"mode {mode!r} is not 'author' or 'render'")
    if analysis_date is not None:
        check_iso_date(analysis_date, "analysis_date")
    for what, value in (("kind", kind), ("title", title)):
        if value is not None and not _one_line(value):
            raise TraceworkError(
                f"{what}= must be one line of 1 to 200 characters, without control characters"
            )
    ws = Workspace.find()
    return Workbench(
        ws,
        ws.register_file(register),
        commit=commit,
        mode=mode,  # type: ignore[arg-type]
        analysis_date=analysis_date,
        output_dir=Path(output_dir) if output_dir else None,
        title=title,
        kind=kind,
    )


def _one_line(text: object) -> bool:
    return (
        isinstance(text, str)
        and 0 < len(text.strip()) <= 200
        and all(ch.isprintable() for ch in text)
    )


__all__ = ["CheckItem", "Html", "QuoteView", "SourceHandle", "Workbench", "open"]
