"""Runtime captures in a report: ``cap = wb.capture(NAME)``, its cited cases and
excerpts, their comparisons, and the parts of the "Runtime capture" section.

A capture is evidence of the code running, so a report cites it the way it cites
code: through the register, which keeps the capture as a source with every file's
hash (author mode adds it; render mode needs it there).  At another commit than the
one captured, the capture made at that commit is cited when there is one, otherwise
the register's, marked stale.  What is cited is kept in the report's state, for the
records that cite it, the section that shows it and records.json.
"""

from __future__ import annotations

from dataclasses import replace

from tracework.capture.compare import compare
from tracework.capture.errors import CaptureMissing
from tracework.capture.evidence import CapturedAt, CaseInfo, ExcerptInfo, case_info, excerpt_info
from tracework.drift.check import problem_text
from tracework.errors import QuoteNotInRegister
from tracework.git.subjects import load_subject
from tracework.notebook.comparisons import case_reference, previous_reference, quote_reference
from tracework.notebook.jupyter import (
    CaseView,
    ExcerptView,
    Html,
    QuoteView,
    arguments_checked,
    cell_id,
)
from tracework.notebook.session import RegisterSession
from tracework.notebook.state import ReportState
from tracework.register.models import CaptureSource
from tracework.views.capture import capture_html, transcripts_html
from tracework.views.capture_parts import (
    conditions_html,
    limits_html,
    provenance_html,
    results_html,
)
from tracework.views.cards import badge, esc


class Captures:
    """The captures a report cites, with their cases, excerpts and comparisons."""

    def __init__(self, session: RegisterSession, state: ReportState) -> None:
        self.session, self.state = session, state

    def open(self, name: str) -> CapturedAt:
        """Capture ``name`` as the register holds it, at the commit its subject is read
        at; author mode registers it first if the register does not hold it."""
        from tracework.capture.store import load_capture

        session = self.session
        sources = [
            (sid, s)
            for sid, s in session.register.sources.items()
            if isinstance(s, CaptureSource) and s.capture == name
        ]
        if not sources and session.mode == "author":
            session.add_capture(name)
            return self.open(name)
        if not sources:
            raise QuoteNotInRegister(
                f"capture {name} is not in register {session.register.name}",
                hint="open the notebook in author mode (JupyterLab) to register it; render "
                "mode never writes to the register",
            )
        sid, source = sources[-1]
        ws = session.ws
        baseline = load_capture(ws, name, source.commit)
        subject_commit = session.commit if source.subject == session.subject.name else source.commit
        current = None
        if subject_commit != source.commit:
            try:
                current = load_capture(ws, name, subject_commit)
            except CaptureMissing:
                current = None  # none made here: the register's, stale
        at = CapturedAt(sid, baseline, current, subject_commit)
        self.state.captures[sid] = at
        return at

    def cite_case(self, at: CapturedAt, case_id: str) -> CaseInfo:
        info = case_info(at, case_id)
        self.state.capture_evidence[info.key] = info
        return info

    def cite_excerpt(self, at: CapturedAt, case_id: str, path: str) -> ExcerptInfo:
        info = excerpt_info(self.session.ws.root, at, case_id, path)
        self.state.capture_evidence[info.key] = info
        return self.with_comparisons(info)

    def compare(
        self,
        at: CapturedAt,
        info: ExcerptInfo,
        quote: QuoteView | str | None,
        case: str | None,
        path: str | None,
        previous: bool,
    ) -> ExcerptInfo:
        """Compare a cited excerpt with one reference (see `ExcerptView.against`)."""
        state = self.state
        if previous:
            reference = previous_reference(self.session, at, info)
        elif quote is not None:
            reference = quote_reference(self.session, state.quotes, at, quote)
        else:
            reference = case_reference(self.session, at, info, case or info.case, path or info.path)
        state.capture_evidence.setdefault(info.key, info)
        state.comparisons.setdefault(info.key, {})[reference.key] = compare(info.value, reference)
        state.comparison_cells[(info.key, reference.key)] = cell_id()
        return self.with_comparisons(info)

    def with_comparisons(self, info: ExcerptInfo) -> ExcerptInfo:
        """The excerpt with what it was compared with, in the order asked."""
        found = self.state.comparisons.get(info.key, {})
        return replace(info, comparisons=tuple(found.values()))

    def cited(self, info: CaseInfo | ExcerptInfo) -> CaseInfo | ExcerptInfo:
        """Cited evidence as records.json keeps it: an excerpt with its comparisons."""
        return self.with_comparisons(info) if isinstance(info, ExcerptInfo) else info

    def section(self, at: CapturedAt) -> str:
        """The whole "Runtime capture" section of ``at``, with what the report cites of it."""
        cited = [e for e in self.state.capture_evidence.values() if e.capture.source == at.source]
        return capture_html(
            at,
            [e for e in cited if isinstance(e, CaseInfo)],
            [self.with_comparisons(e) for e in cited if isinstance(e, ExcerptInfo)],
            transcripts_html(self.session.ws.root, at),
            notice=self._unregistered_notice(at.source),
        )

    def _unregistered_notice(self, sid: str) -> str:
        """A marked block, at the capture's place, when its files are not those the
        register holds (captured again since it was registered): the same lines, and the
        same fix, as the check summary and ``tracework check`` give."""
        report = self.session.checks.workspace([sid])
        bad = [problem_text(i, "capture") for i in report.items if i.state != "verified"]
        if not bad:
            return ""
        return (
            f"<p>{badge('changed', 'not as registered')} these are not the files register "
            f"{esc(self.session.register.name)} holds as {esc(sid)}: the checks fail until the "
            "capture is registered again (or the registered one restored).</p>"
            '<ul class="tw-problems">' + "".join(f"<li>{esc(line)}</li>" for line in bad) + "</ul>"
        )


class CaptureView:
    """A runtime capture cited by the report: what `wb.capture("NAME")` returns.

    Its cases and transcript excerpts are evidence; shown, it is the report's "Runtime
    capture" section.
    """

    def __init__(self, captures: Captures, at: CapturedAt) -> None:
        self._captures, self.at = captures, at

    @property
    def source(self) -> str:
        """The register's source id for this capture (`SRC-n`)."""
        return self.at.source

    @property
    def stale(self) -> bool:
        """Whether the commit rendered has no capture of its own, so the register's (older)
        one is cited."""
        return self.at.stale

    @arguments_checked()
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
        return CaseView(self._captures.cite_case(self.at, case_id))

    @arguments_checked()
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
        return ExcerptView(self._captures.cite_excerpt(self.at, case_id, path), self._against)

    def _against(
        self,
        info: ExcerptInfo,
        quote: QuoteView | str | None,
        case: str | None,
        path: str | None,
        previous: bool,
    ) -> ExcerptInfo:
        return self._captures.compare(self.at, info, quote, case, path, previous)

    # -- the parts of an investigation record (``tracework new --kind investigation``) --
    # Each is computed from the capture's files and the register alone; showing any of
    # them means the analyst lays the capture out by parts, so `wb.done()` does not
    # append the whole section again.

    @arguments_checked()
    def provenance(self) -> Html:
        """The "Data and provenance" part: the subject's commit and the files hashed
        before the run, the environment, isolation, harness and every file kept, with
        their SHA-256, all read from the capture's manifest.

        Examples:
            ```python
            cap.provenance()
            ```
        """
        session = self._captures.session
        subject = self.at.shown.manifest.subject
        url = (
            session.subject.url
            if subject == session.subject.name
            else load_subject(session.ws, subject).url
        )
        return self._part(provenance_html(self.at, url), "provenance")

    @arguments_checked()
    def conditions(self) -> Html:
        """The "Status conditions" part: what makes each case PASS, FAIL or UNKNOWN.

        Examples:
            ```python
            cap.conditions()
            ```
        """
        return self._part(conditions_html(self.at), "status conditions")

    @arguments_checked()
    def results(self) -> Html:
        """The "Results" part: the scripted cases and tables, then the model-driven arm
        apart and labelled.

        Examples:
            ```python
            cap.results()
            ```
        """
        return self._part(results_html(self.at), "results")

    @arguments_checked()
    def transcripts(self) -> Html:
        """Every case's transcript, folded (the end of the "Runtime capture" section).

        Examples:
            ```python
            cap.transcripts()
            ```
        """
        root = self._captures.session.ws.root
        return self._part(transcripts_html(root, self.at), "transcripts")

    @arguments_checked()
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
        self._captures.state.captures_shown.add(self.at.source)
        return Html(markup, f"capture {self.at.shown.name}: {what}")

    def _repr_html_(self) -> str:
        self._captures.state.captures_shown.add(self.at.source)
        return self._captures.section(self.at)

    def __repr__(self) -> str:
        shown = self.at.shown
        stale = f", stale (captured at {self.at.baseline.commit[:12]})" if self.stale else ""
        return f"<capture {shown.name} {self.source} at {shown.commit[:12]}{stale}>"
