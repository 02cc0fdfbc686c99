"""The notebook API: ``wb = tw.open(register)``, quotes, records, ``wb.done()``.

One :class:`Workbench` per report.  In ``author`` mode (the default when a notebook
is opened by hand) a new quote is added to the register at the pin; in ``render``
mode (what ``tracework render`` passes through papermill) the register is never
written and a quote it does not hold is an error.  Every mistake raises one
:class:`~tracework.errors.TraceworkError` in the cell that made it, shown as a
short message rather than a traceback.

This module is the facade an analyst sees: the workbench's methods, their documentation,
and what each shows in the notebook.  The work is done by one module per job: the
register session (:mod:`.session`, its checks kept current in :mod:`.source_checks`),
what each cell declared (:mod:`.cells`), declaring records (:mod:`.declare`), captures
(:mod:`.captures`, with :mod:`.comparisons`), diagrams (:mod:`.diagrams`), re-review
(:mod:`.review`), the check summary (:mod:`.summary`) and records.json
(:mod:`.kernel_records`), all reading one state (:mod:`.state`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tracework.drift.check import CheckItem, CheckReport
from tracework.errors import ChecksFailed, RegisterError, TraceworkError, check_iso_date
from tracework.fsio import write_atomic
from tracework.notebook.captures import Captures, CaptureView
from tracework.notebook.cells import (
    cell_starts,
    cited_in,
    forget_deleted_cells,
    refuse_dangling,
)
from tracework.notebook.declare import RecordDeclarations
from tracework.notebook.diagrams import Diagrams, Drawn
from tracework.notebook.jupyter import (
    FileView,
    Html,
    QuoteView,
    arguments_checked,
    cell_id,
    display,
    install_error_display,
    show_error,
    watch_cells,
)
from tracework.notebook.kernel_records import kernel_records
from tracework.notebook.review import Reviews
from tracework.notebook.session import Mode, RegisterSession
from tracework.notebook.state import ReportState
from tracework.notebook.summary import check_summary
from tracework.readers import Table
from tracework.records.absences import AbsenceResult
from tracework.records.artefacts import (
    RECORDS_MIME,
    CheckSummary,
    KernelRecords,
    to_json,
    write_records,
)
from tracework.records.diagrams import drawable
from tracework.records.kinds import Record
from tracework.records.mermaidpy import FlowChartObject
from tracework.register.models import Register
from tracework.register.quotes import QuoteRequest
from tracework.screen import Screen
from tracework.text import counted
from tracework.views.cards import (
    Diagram,
    FileInfo,
    QuoteInfo,
    diagram_note_html,
    esc,
    records_section,
    screen_html,
    summary_html,
)
from tracework.views.marks import Mark, marks_section
from tracework.workspace import Workspace

if TYPE_CHECKING:  # GitPython is imported when src.repo is first read
    from tracework.git.history import HistoryRepo


class SourceHandle:
    """A git source of the register, for quoting: what `wb.source("SRC-1")` returns."""

    def __init__(self, wb: Workbench, sid: str) -> None:
        self.wb, self.id = wb, sid

    @arguments_checked()
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

    @arguments_checked()
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

    @property
    def repo(self) -> HistoryRepo:
        """A read-only GitPython `Repo` over the subject's mirror, for exploring its history.

        `repo.head.commit` is the commit the notebook reads; the mirror's branches and tags
        are there too.  Its git runs tracework's hardened environment in a view of the
        mirror, so the mirror's own config never runs anything; writes are refused (see
        :mod:`tracework.git.history`).  It explores: what a report cites is quoted.

        Examples:
            ```python
            repo = wb.source("SRC-1").repo
            [c.summary for c in repo.iter_commits(max_count=5, paths="larkspur/notes.py")]
            repo.git.log("-p", "-1", "--", "larkspur/notes.py")
            ```
        """
        from tracework.git.history import history

        mirror = self.wb._session.mirror(self.wb.register.git_source(self.id).subject)
        return history(mirror, self.wb._session.commit_for(self.id))

    def __repr__(self) -> str:
        src = self.wb.register.git_source(self.id)
        return f"<source {self.id}: {src.subject} @ {src.commit[:12]}>"


class Workbench(RecordDeclarations):
    """One report's register opened at a commit: it quotes, declares, draws and checks.

    Made by [`tw.open()`][tracework.notebook.workbench.open], never directly.  Records
    are declared with one method per kind (`wb.component`, `wb.route`, …); each is
    validated as it is declared (the id's prefix, statuses against their vocabularies,
    evidence against the register, references against the records declared above) and
    shown as it will be in the report.  Re-running the same JupyterLab cell may declare
    its records again; another cell may not.

    Every declaring method takes, besides its kind's own fields as keywords (see the
    record kinds reference):

    - `evidence`: quotes (or their ids), files (`src.file(...)` or `"SRC-1:path"`),
      records declared above, capture cases and excerpts, and source ids (`SRC-n`);
    - `reviewed`: `"YYYY-MM-DD"` (confirmed against the pin on that date) or
      `(commit, date)`, shown as the record's review stamp;
    - `notes`: Markdown shown under the record.
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
        self._session = session = RegisterSession(ws, register_path, commit=commit, mode=mode)
        self.primary, self.subject = session.primary, session.subject
        self.pin, self.commit = session.pin, session.commit
        self.commit_info, self.pin_info = session.commit_info, session.pin_info
        self.output_dir = output_dir or ws.reports / session.register.name / "draft"
        self._state = state = ReportState()
        self._reviews = Reviews(session, state)
        self._captured = Captures(session, state)
        self._drawn = Diagrams(session, state)
        install_error_display()
        watched = watch_cells(self._cell_starts, self._cell_ends)
        session.write_at_cell_end = watched and mode == "author"  # else each quote at once

    @property
    def register(self) -> Register:
        """The register as this notebook holds it, with the quotes made so far."""
        return self._session.register

    @property
    def register_sha256(self) -> str:
        """The SHA-256 of the register's bytes as last read or written (records.json
        carries it)."""
        return self._session.register_sha256

    # -- cells -------------------------------------------------------------------------

    def _cell_starts(self, cell: str) -> None:
        cell_starts(self._state, cell)

    def _cell_ends(self, shown: object = None) -> None:
        # every declaration of the cell, not only the one it shows as its result; never
        # in a render, whose page has every card already (in "Shared records")
        summary = self._cell_summary(shown) if self.mode == "author" else None
        self._state.declared.clear()
        if summary is not None:
            display(summary, metadata={"tracework": "declared"})
        try:
            self._session.write_quotes()
        except TraceworkError as exc:
            show_error(exc)

    # -- sources and quotes ------------------------------------------------------------

    @property
    def at_pin(self) -> bool:
        """Whether the commit opened is the register's pin (where every check must hold)."""
        return self.commit == self.pin

    @arguments_checked()
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

    def _quote(
        self, sid: str, path: str, request: QuoteRequest, qid: str | None, replace: bool
    ) -> QuoteView:
        view = self._session.quote(sid, path, request, qid, replace)
        self._state.quotes[view.id] = view.info
        cited_in(self._state, view.id, cell_id())
        return view

    def _file(self, sid: str, path: str) -> FileView:
        view = self._session.file(sid, path)
        self._state.files[view.id] = view.info
        cited_in(self._state, view.id, cell_id())
        return view

    # -- runtime captures ---------------------------------------------------------------

    @arguments_checked()
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
        return CaptureView(self._captured, self._captured.open(name))

    # -- diagrams, the screen and the sections -------------------------------------------

    @arguments_checked()
    def diagram(
        self,
        name: str,
        source: str | FlowChartObject | None = None,
        *,
        caption: str,
        routes: Sequence[str] = (),
        records: Drawn = (),
        direction: str | None = None,
    ) -> None:
        """Draw a Mermaid flowchart, checked at once.

        Give exactly one of `source` (written by hand), `routes` (each route's progression
        through the records it passes) or `records` (the runtime: `"all"`, or ids of
        components, operative objects, routes and authority paths, drawn as one flowchart,
        see :func:`tracework.records.diagrams.runtime`).  A node whose id is a record id, or
        that a `%% bind NODE RECORD` line names, links to that record's card and must name a
        record declared above; every `` `identifier` `` in a label is drawn in code font and
        must be defined or called in the registered files at the commit.  Directives,
        `click`, `href`, HTML in labels and hidden characters are refused.

        Args:
            name: The diagram's name: letters, digits, `-` and `_`.
            source: Mermaid flowchart text, or a mermaid-py `mermaid.flowchart.FlowChart`
                (read as objects, never sent to its web service; see the diagrams how-to).
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
            from mermaid.flowchart import FlowChart, Link, Node
            msg, store = Node("msg", "user message"), Node("RT-CMP-note-store", "the store")
            wb.diagram("chart", FlowChart("Keep", [msg, store], [Link(msg, store)]), caption="…")
            ```
        """
        drawn = self._drawn.draw(
            name,
            source,
            caption=caption,
            routes=routes,
            records=records,
            direction=direction,
            cell=cell_id(),
        )
        if self.mode == "author":
            write_atomic(self.output_dir / "diagrams" / f"{name}.mmd", drawn.source)
        meta = {
            "tracework": {
                "diagram": name,
                "caption": caption,
                "bindings": drawn.check.bindings,
                "source": drawn.source,
            }
        }
        display(
            {
                "text/vnd.mermaid": drawable(drawn.source),
                "text/plain": f"diagram {name}: {caption}",
            },
            raw=True,
            metadata=meta,
        )
        display(
            Html(diagram_note_html(drawn), f"diagram {name}"),
            metadata={"tracework": "diagram-note"},
        )

    @arguments_checked()
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

        found = screen(
            self._session.mirror(self.subject.name),
            self.commit,
            cooldown_days=self.ws.cooldown_days or DEFAULT_DAYS,
        )
        self._state.screen = found
        display(Html(screen_html(found), f"screen: {found.counts()}"))

    @arguments_checked()
    def records(self) -> None:
        """Show the "Shared records" section: the records by kind, then the quoted evidence.

        `done()` shows it when the notebook never does, and then the rubric marks.

        Examples:
            ```python
            wb.records()
            ```
        """
        state = self._state
        display(
            Html(
                records_section(
                    state.records.values(),
                    state.quotes,
                    state.absences,
                    self._reviews.records(),
                    state.files,
                ),
                counted(len(state.records), "record"),
            )
        )
        state.records_shown = True
        state.quotes_shown = set(state.quotes)

    def _show_marks(self) -> None:
        """The "Rubric marks" section, with the cards of quotes first cited by a mark, so
        that every link to a mark or its evidence lands on an anchor."""
        state = self._state
        rubrics = {name: rubric for name, (rubric, _) in state.rubrics.items()}
        late = [state.quotes[q] for q in sorted(set(state.quotes) - state.quotes_shown)]
        display(
            Html(
                marks_section(state.marks.values(), rubrics, self._reviews.marks(), late),
                f"{len(state.marks)} rubric marks",
            ),
            metadata={"tracework": "marks"},  # the report page moves it near its top
        )

    # -- the checks and the end ----------------------------------------------------------

    @arguments_checked()
    def summary(self) -> Table:
        """Every check on this report at its commit, as data: what records.json keeps as `checks`.

        Returns:
            `ok`, the list of `problems`, and the counts of each check (register, records,
            absences, diagrams, marks).
        """
        return to_json(self._check_summary())

    @arguments_checked()
    def records_json(self) -> Table:
        """Everything the report declares and checked, as records.json holds it.

        Returns:
            The records (each with its kind and the evidence that needs re-review), quotes,
            files, absences, diagrams, marks, captures, the checks and the provenance of
            what was read.
        """
        return to_json(self._kernel_records())

    @arguments_checked()
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
        session, state = self._session, self._state
        session.write_quotes()
        if session.unwritten is not None:
            raise RegisterError(
                f"a cell's quotes were not written: {session.unwritten}",
                hint="run that cell again, then this one",
            )
        for note in forget_deleted_cells(state):
            display(Html(f'<p class="tw-note">{esc(note)}</p>', note))
        refuse_dangling(state)
        records = self._kernel_records()
        if self.mode == "render":
            # tracework render takes records.json from this output of the executed notebook
            display(
                {
                    RECORDS_MIME: to_json(records),
                    "text/plain": f"records.json: {len(state.records)} records",
                },
                raw=True,
            )
        else:
            write_records(self.output_dir / "records.json", records)
        if not state.records_shown:
            self.records()
        for sid, at in sorted(state.captures.items()):
            if sid not in state.captures_shown:
                display(Html(self._captured.section(at), f"capture {at.shown.name}"))
        if state.marks:
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

    def _check_summary(self) -> CheckSummary:
        """Every check at this commit, as the model records.json's `checks` is written from."""
        return check_summary(self._session, self._state, self._reviews)

    def _kernel_records(self) -> KernelRecords:
        """records.json as this kernel writes it: the model the file is written from."""
        return kernel_records(
            self._session,
            self._state,
            self._reviews,
            self._captured,
            kind=self.kind,
            title=self.title,
            analysis_date=self.analysis_date,
        )

    # -- what the report holds so far, for tools and tests ------------------------------

    def _check(self, sid: str) -> CheckReport:
        return self._session.checks.of(sid)

    def _drifted(self) -> dict[str, list[str]]:
        return self._reviews.records()

    def _marks_drifted(self) -> dict[str, list[str]]:
        return self._reviews.marks()

    @property
    def _records(self) -> dict[str, Record]:
        return self._state.records

    @property
    def _quotes(self) -> dict[str, QuoteInfo]:
        return self._state.quotes

    @property
    def _files(self) -> dict[str, FileInfo]:
        return self._state.files

    @property
    def _absences(self) -> dict[str, AbsenceResult]:
        return self._state.absences

    @property
    def _marks(self) -> dict[str, Mark]:
        return self._state.marks

    @property
    def _diagrams(self) -> dict[str, Diagram]:
        return self._state.diagrams

    @property
    def _cell_runs(self) -> dict[str, float]:
        return self._state.cell_runs

    @property
    def _screen(self) -> Screen | None:
        return self._state.screen


@arguments_checked()
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
    install_error_display()  # a mistake in this very call is one line too
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


__all__ = ["CaptureView", "CheckItem", "Html", "QuoteView", "SourceHandle", "Workbench", "open"]
