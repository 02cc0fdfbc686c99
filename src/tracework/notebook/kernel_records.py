"""records.json as the kernel writes it: everything a report declared and checked.

The render takes records.json from the notebook's last output (``wb.done()`` in render
mode) and author mode writes it to disk; both are this one model,
:class:`~tracework.records.artefacts.KernelRecords`, assembled here from the report's
state, so that the page, the site and ``tracework check`` read what the notebook
declared in one shape: each record with the evidence that needs re-review, each quote,
file, capture and cited excerpt with its state at the commit, the absences' searches,
the diagrams' checks, the marks and the check summary.
"""

from __future__ import annotations

from tracework.capture.compare import Comparison
from tracework.capture.evidence import CaseInfo, ExcerptInfo
from tracework.hashing import sha256_hex
from tracework.notebook.captures import Captures
from tracework.notebook.review import Reviews
from tracework.notebook.session import RegisterSession
from tracework.notebook.state import ReportState
from tracework.notebook.summary import check_summary
from tracework.records.artefacts import (
    RECORDS_FORMAT,
    AbsenceEntry,
    AbsenceMatch,
    AssertionEntry,
    CaptureEntry,
    CaptureEvidenceEntry,
    ComparedWith,
    ComparisonEntry,
    DiagramEntry,
    FieldFill,
    FileEntry,
    KernelRecords,
    LineChange,
    QuoteEntry,
    RecordEntry,
)
from tracework.records.kinds import KINDS, Record
from tracework.version import __version__
from tracework.views.cards import QuoteInfo
from tracework.views.marks import rubric_marks


def kernel_records(
    session: RegisterSession,
    state: ReportState,
    reviews: Reviews,
    captures: Captures,
    *,
    kind: str,
    title: str | None,
    analysis_date: str | None,
) -> KernelRecords:
    """records.json as this kernel writes it: the model the file is written from."""
    drifted = reviews.records()
    register = session.register
    return KernelRecords(
        format=RECORDS_FORMAT,
        tracework=__version__,
        register_name=register.name,
        kind=kind,
        title=title,
        register_sha256=session.register_sha256,
        subject=session.subject.name,
        url=session.subject.url,
        pin=session.pin,
        pin_date=session.pin_info.date,
        commit=session.commit,
        commit_date=session.commit_info.date,
        analysis_date=analysis_date,
        mode=session.mode,
        records=[
            _record_entry(record, drifted.get(record.id, []))
            for record_kind in KINDS
            for record in state.records.values()
            if type(record) is record_kind
        ],
        quotes={qid: _quote_entry(info) for qid, info in sorted(state.quotes.items())},
        files={
            key: FileEntry(
                source=info.source,
                path=info.path,
                sha256=info.entry.sha256,
                state=info.state,
                new_path=info.check.new_path if info.check else None,
            )
            for key, info in sorted(state.files.items())
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
            for sid, at in sorted(state.captures.items())
        },
        capture_evidence={
            key: _capture_evidence_entry(captures.cited(info))
            for key, info in sorted(state.capture_evidence.items())
        },
        assertions=[
            AssertionEntry(**a._asdict())  # the check's fields, one for one
            for report in session.checks.git_sources()
            for a in report.assertions
        ],
        absences={
            rid: AbsenceEntry(
                holds=res.holds,
                files=len(res.files),
                skipped=list(res.skipped),
                matches=[AbsenceMatch(path=m.path, line=m.line, text=m.text) for m in res.matches],
            )
            for rid, res in state.absences.items()
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
            for name, d in state.diagrams.items()
        },
        screen=state.screen.as_json() if state.screen else None,
        marks=rubric_marks(state.marks.values(), state.rubrics, reviews.marks()),
        checks=check_summary(session, state, reviews),
    )


def _record_entry(record: Record, needs_review: list[str]) -> RecordEntry:
    """A declared record as records.json lists it: its kind's own fields as the record
    model gives them (see :class:`~tracework.records.artefacts.RecordEntry`), its kind and
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
