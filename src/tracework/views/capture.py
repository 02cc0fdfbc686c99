"""How a report shows a capture: the "Runtime capture" section, cited cases and
transcript excerpts with their state at the commit rendered, the tables of cases and
results, the transcripts folded, and a comparison's verdict with the lines that differ.

The data they show is computed in :mod:`tracework.capture.evidence` and
:mod:`tracework.capture.compare`; this module only writes HTML, escaping every value
the subject produced.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tracework.capture.compare import Comparison, Form, Reference, Verdict
from tracework.capture.evidence import CapturedAt, CaseInfo, EvidenceState, ExcerptInfo
from tracework.capture.store import CaptureResults, CaseResult, ResultTable
from tracework.views.cards import badge, esc
from tracework.views.transcripts import line_html, raw_html, raw_value_html, value_html


def state_badge(state: EvidenceState, at: CapturedAt) -> str:
    if state == "stale":
        return badge("stale", f"stale (captured at {at.baseline.commit[:12]})")
    return badge(state)


def case_html(info: CaseInfo, *, anchor: bool = False) -> str:
    """A cited case: id, question, status, how it was judged, its state here."""
    case = info.case
    ident = f' id="{esc(info.anchor)}"' if anchor else ""
    status = badge(case.status or "model-driven", case.status or "model-driven, not graded")
    was = f" (was {esc(info.was)} at the baseline)" if info.was else ""
    checks = "".join(
        f"<li>{_holds_badge(c.holds)} {esc(c.criterion)}: {esc(c.observed)}</li>"
        for c in case.checks
    )
    criterion = (
        f"<p>Criterion: {esc(case.criterion)}. Observed: {esc(case.observed or '')}</p>"
        if case.criterion
        else ""
    )
    return (
        f'<figure class="tw-quote tw-case"{ident}><figcaption>'
        f'<a class="tw-quote-id" href="#{esc(info.anchor)}">{esc(info.key)}</a> '
        f"{status}{was} {state_badge(info.state, info.capture)}</figcaption>"
        f"<p>{esc(case.question)}</p>{criterion}"
        + (f'<ul class="tw-checks">{checks}</ul>' if checks else "")
        + "</figure>"
    )


def _holds_badge(holds: bool | None) -> str:
    if holds is None:
        return badge("unknown", "cannot tell")
    return badge("verified", "holds") if holds else badge("changed", "does not hold")


def observed_line(case: CaseResult) -> str:
    """What a case saw, in a line: its own words, else the checks that failed (or all)."""
    if case.observed:
        return case.observed
    failed = [c.observed for c in case.checks if c.holds is False]
    return "; ".join(failed or [c.observed for c in case.checks])


def excerpt_html(info: ExcerptInfo, *, anchor: bool = False) -> str:
    """A cited transcript excerpt: where it is, its hash, its state, the value as a
    reader reads it, what it was compared with, and its canonical JSON folded."""
    ident = f' id="{esc(info.anchor)}"' if anchor else ""
    compared = "".join(comparison_html(c, "This value") for c in info.comparisons)
    return (
        f'<figure class="tw-quote tw-excerpt"{ident}><figcaption>'
        f'<a class="tw-quote-id" href="#{esc(info.anchor)}">{esc(info.key)}</a> '
        f'<span class="tw-hash" title="sha256 {esc(info.sha256)}">sha256 '
        f"{esc(info.sha256[:12])}</span> {state_badge(info.state, info.capture)}"
        f"</figcaption>{value_html(info.value, info.path)}{compared}"
        f"{raw_value_html(info.value)}</figure>"
    )


def meta_html(rows: Iterable[tuple[str, str]]) -> str:
    """A capture's facts as a definition list: each row a term and its HTML, written by
    the caller (the section's method, the provenance part)."""
    return '<dl class="tw-meta">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


def capture_html(
    at: CapturedAt,
    cases: list[CaseInfo],
    excerpts: list[ExcerptInfo],
    transcripts: str,
    *,
    notice: str = "",
) -> str:
    """The "Runtime capture" section: method, cases, tables, cited evidence, transcripts;
    ``notice``, HTML made by the caller, goes first (files not as the register holds them)."""
    cap = at.shown
    m = cap.manifest
    stale = (
        f"<p>{state_badge('stale', at)}: no capture at this commit; the evidence below is "
        f"from <code>{esc(at.baseline.commit[:12])}</code>.</p>"
        if at.stale
        else ""
    )
    method = [
        ("Subject", f"{esc(m.subject)} at <code>{esc(m.commit)}</code> · {esc(m.commit_date)}"),
        ("Harness", f"sha256 <code>{esc(m.harness_sha256)}</code>"),
        (
            "Environment",
            f"Python {esc(m.environment.python)}, "
            + ("the subject's uv.lock" if m.environment.lock == "uv" else "pinned requirements")
            + f", frozen list sha256 <code>{esc(m.environment.sha256)}</code>",
        ),
        ("Isolation", f"{esc(m.isolation)}: no network but loopback, a scrubbed environment"),
        ("Runs", f"{m.identical_runs} byte-identical"),
        (
            "Files checked first",
            f"{len(m.verified_files)} registered files hashed in the export"
            + (
                f"; {len(m.changed_since_pin)} differ from the register's pin: "
                + ", ".join(esc(p) for p in m.changed_since_pin)
                if m.changed_since_pin
                else ", all as registered"
            ),
        ),
    ]
    tables = "".join(
        table_html(t, arm)
        for arm in (cap.results, cap.model_arm)
        if arm is not None
        for t in arm.tables
    )
    cited = "".join(case_html(c, anchor=True) for c in cases) + "".join(
        excerpt_html(e, anchor=True) for e in excerpts
    )
    return (
        f'<section class="tw-capture"><h2 id="capture-{esc(cap.name)}">Runtime capture: '
        f"{esc(cap.name)}</h2>{notice}{stale}"
        + meta_html(method)
        + cases_table_html(c for arm in (cap.results, cap.model_arm) if arm for c in arm.cases)
        + tables
        + (f"<h3>Cited from this capture</h3>{cited}" if cited else "")
        + transcripts
        + "</section>"
    )


def cases_table_html(cases: Iterable[CaseResult], caption: str = "Cases") -> str:
    """The table of cases: id, question, status (or "not graded"), what was observed; on
    a narrow screen one card per case (report.css)."""
    rows = "".join(
        f"<tr><td>{esc(c.id)}</td><td>{esc(c.question)}</td>"
        f"<td>{badge(c.status or 'model-driven', c.status or 'not graded')}</td>"
        f"<td>{esc(observed_line(c))}</td></tr>"
        for c in cases
    )
    return (
        f'<div class="tw-scroll"><table class="tw-cases"><caption>{esc(caption)}</caption>'
        "<thead><tr><th>case</th><th>question</th><th>status</th><th>observed</th></tr>"
        f"</thead><tbody>{rows}</tbody></table></div>"
    )


def table_html(table: ResultTable, arm: CaptureResults) -> str:
    """A results table: its title as the table's caption (labelled model-driven in that
    arm), its notes as a footnote below it, set apart from the cells."""
    head = "".join(f'<th scope="col">{esc(c)}</th>' for c in table.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(str(v))}</td>" for v in row) + "</tr>" for row in table.rows
    )
    driven = (
        " " + badge("model-driven", "model-driven, not graded") if arm.arm == "model-driven" else ""
    )
    notes = (
        f'<p class="tw-table-notes"><span class="tw-table-notes-lead">Note.</span> '
        f"{esc(table.notes)}</p>"
        if table.notes
        else ""
    )
    return (
        f'<div class="tw-results-table"><div class="tw-scroll"><table class="tw-results">'
        f"<caption>{esc(table.name)}{driven}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>{notes}</div>"
    )


def transcripts_html(root: Any, at: CapturedAt) -> str:
    """Every case's transcript, folded: what crossed the subject's boundaries, each
    recorded value as a reader reads it, the file itself one click further."""

    cap = at.shown
    out = []
    for arm in (cap.results, cap.model_arm):
        for case in arm.cases if arm is not None else ():
            if case.transcript is None:
                continue
            text = (Path(root) / cap.folder / case.transcript).read_text(encoding="utf-8")
            out.append(
                f'<details class="tw-transcript"><summary>{esc(case.id)} transcript '
                f"(<code>{esc(case.transcript)}</code>)</summary>{_recorded_html(text)}"
                f"{raw_html(text, 'Raw transcript: ' + case.transcript)}</details>"
            )
    return "<h3>Transcripts</h3>" + "".join(out) if out else ""


def _recorded_html(text: str) -> str:
    """A transcript's recorded values in order, each under its name (the first segment
    of an excerpt's path)."""
    data = json.loads(text)
    records = data.get("records") if isinstance(data, dict) else None
    if not isinstance(records, list) or not all(
        isinstance(r, dict) and isinstance(r.get("name"), str) and "value" in r for r in records
    ):
        return value_html(data)
    return "".join(
        f'<div class="tw-recorded"><p class="tw-recorded-name">{esc(r["name"])}</p>'
        f"{value_html(r['value'], r['name'])}</div>"
        for r in records
    )


# -- a comparison -----------------------------------------------------------------------

_BADGES: dict[Verdict, tuple[str, str]] = {
    "equal": ("verified", "equal"),
    "filled": ("moved", "fields filled"),
    "inserted": ("moved", "inserted only"),
    "removed": ("moved", "removed only"),
    "changed": ("changed", "differs"),
    "missing": ("missing", "no reference here"),
}


def comparison_html(comparison: Comparison, what: str) -> str:
    """The sentence, where the reference was read, the blocks that differ (each with
    its lines, escaped) and the whole difference one click away."""
    ref = comparison.reference
    state, word = _BADGES[comparison.verdict]
    sentence = f"{what} {comparison.sentence}."
    source = f"Compared line by line (difflib) with {_where(ref)}"
    if ref.sha256 is not None:
        source += f"; its text's sha256 {ref.sha256[:12]}"
    out = [
        f'<div class="tw-compare tw-compare-{comparison.verdict}">'
        f'<p class="tw-verdict">{badge(state, word)} {esc(sentence)}</p>'
        f'<p class="tw-note">{esc(source)}.</p>'
    ]
    blocks = [op for op in comparison.opcodes if op[0] != "equal"]
    for fill in comparison.fills:
        lines = "".join(
            line_html(fill.lines[0] + k, comparison.value_lines[fill.lines[0] - 1 + k], "ins")
            for k in range(fill.lines[1] - fill.lines[0] + 1)
        )
        out.append(
            f'<div class="tw-change"><p class="tw-change-what">{esc(fill.phrase())}</p>'
            f'<div class="tw-text">{lines}</div></div>'
        )
    for (_op, i1, i2, j1, j2), change in zip(
        blocks if not comparison.fills else [], comparison.changes, strict=False
    ):
        lines = _removed(comparison, i1, i2) + _inserted(comparison, j1, j2)
        out.append(
            f'<div class="tw-change"><p class="tw-change-what">{esc(change.phrase())}</p>'
            f'<div class="tw-text">{lines}</div></div>'
        )
    if blocks:
        whole = "".join(
            _removed(comparison, i1, i2) + _inserted(comparison, j1, j2)
            if op != "equal"
            else "".join(line_html(j + 1, comparison.value_lines[j]) for j in range(j1, j2))
            for op, i1, i2, j1, j2 in comparison.opcodes
        )
        numbered = (
            f" (removed lines numbered as in {ref.label})"
            if any(c.reference_lines for c in comparison.changes)
            else ""
        )
        out.append(
            '<details class="tw-whole-diff"><summary>The whole difference, line by line'
            f"{esc(numbered)}</summary>"
            f'<div class="tw-text">{whole}</div></details>'
        )
    out.append("</div>")
    return "".join(out)


_FORM_WORDS: dict[Form, str] = {
    "lines": "its lines",
    "string literal": "the value of the string literal it quotes",
    "string": "the string recorded",
    "canonical JSON": "as canonical JSON",
}


def _where(ref: Reference) -> str:
    """Where the reference's text was read, in words."""
    what = str(ref.quote) if ref.kind == "quote" else f'{ref.case} at "{ref.path}"'
    if ref.form is not None and (ref.kind == "quote" or ref.form == "canonical JSON"):
        what += f" ({_FORM_WORDS[ref.form]})"
    if ref.commit is not None:
        where = "at" if ref.kind == "quote" else "in the capture at"
        what += f" {where} {ref.commit[:12]}"
    return what


def _removed(comparison: Comparison, i1: int, i2: int) -> str:
    first = comparison.reference.first_line
    return "".join(
        line_html(first + i, comparison.reference_lines[i], "del") for i in range(i1, i2)
    )


def _inserted(comparison: Comparison, j1: int, j2: int) -> str:
    return "".join(line_html(j + 1, comparison.value_lines[j], "ins") for j in range(j1, j2))
