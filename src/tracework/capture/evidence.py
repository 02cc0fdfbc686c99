"""A capture as evidence in a report: cases and transcript excerpts, their state at the
commit rendered, and how the report shows them.

The register holds a capture as a source (``kind: capture``) with every file's SHA-256:
that is the reviewed baseline, captured at one commit.  A report rendered at that commit
cites it as it is; at another commit it cites the capture made there when there is one
(``tracework capture NAME --commit C``, or ``rerender --capture``) — ``verified`` when a
cited case keeps its status and a cited excerpt its value, ``changed`` otherwise — and
otherwise the baseline, ``stale (captured at …)``.

An excerpt is a path into a case's transcript: its first segment names a recorded value
(``c.record("model requests", …)``), the rest walks into it (``[0].prompt``), so
``cap.transcript("F-01", "model requests[0].prompt")``.  Its hash is the SHA-256 of the
value's canonical JSON.  A report shows the value as a reader reads it (a chat request as
a conversation: :mod:`.readable`), with what it was compared with (:mod:`.compare`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from tracework.capture.compare import Comparison, comparison_html
from tracework.capture.readable import raw_html, raw_value_html, value_html
from tracework.capture.store import (
    Capture,
    CaptureResults,
    CaseResult,
    ResultTable,
    canonical,
    captured_commits,
    load_capture,
)
from tracework.errors import TraceworkError
from tracework.hashing import sha256_hex
from tracework.notebook.views import badge, esc
from tracework.workspace import Workspace

EvidenceState = Literal["verified", "changed", "stale"]

_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\[\"((?:[^\"\\]|\\.)*)\"\]")


@dataclass(frozen=True)
class CapturedAt:
    """A cited capture: the registered baseline and what is cited at the commit rendered."""

    source: str  # the register's capture source (SRC-n)
    baseline: Capture
    current: Capture | None  # the capture made at the commit rendered, when there is one
    commit: str  # the commit rendered

    @property
    def stale(self) -> bool:
        """No capture at the commit rendered: its evidence is the baseline's, older."""
        return self.current is None and self.baseline.commit != self.commit

    @property
    def shown(self) -> Capture:
        return self.current or self.baseline


@dataclass(frozen=True)
class CaseInfo:
    """A cited case and its state at the commit rendered."""

    key: str  # SRC-n/CASE
    capture: CapturedAt
    case: CaseResult
    state: EvidenceState
    was: str | None = None  # the baseline's status when it changed

    @property
    def anchor(self) -> str:
        return anchor_of(self.key)


@dataclass(frozen=True)
class ExcerptInfo:
    """A cited excerpt of a transcript, its value, hash and state at the commit rendered."""

    key: str  # SRC-n/CASE/PATH
    capture: CapturedAt
    case: str
    path: str
    value: Any
    sha256: str
    state: EvidenceState
    comparisons: tuple[Comparison, ...] = ()  # what the analyst compared it with

    @property
    def anchor(self) -> str:
        return anchor_of(self.key)


def anchor_of(key: str) -> str:
    """An HTML id for evidence whose key may hold spaces (record names do)."""
    return re.sub(r"\s", "_", key)


def find_case(capture: Capture, case_id: str) -> CaseResult:
    """A case of the capture by id, scripted or model-driven; a clear error otherwise."""
    arms = [capture.results] + ([capture.model_arm] if capture.model_arm else [])
    for arm in arms:
        for case in arm.cases:
            if case.id == case_id:
                return case
    known = ", ".join(c.id for arm in arms for c in arm.cases) or "none"
    raise TraceworkError(
        f"capture {capture.name} at {capture.commit[:12]} has no case {case_id!r}",
        hint=f"its cases: {known}",
    )


def case_info(at: CapturedAt, case_id: str) -> CaseInfo:
    """A case as cited at the commit rendered (see the module docstring for its state)."""
    base = find_case(at.baseline, case_id)
    key = f"{at.source}/{case_id}"
    if at.current is None:
        return CaseInfo(key, at, base, "stale" if at.stale else "verified")
    now = find_case(at.current, case_id)
    same = now.status == base.status
    return CaseInfo(key, at, now, "verified" if same else "changed", None if same else base.status)


def excerpt_info(ws_root: Any, at: CapturedAt, case_id: str, path: str) -> ExcerptInfo:
    """An excerpt as cited at the commit rendered: the value now, compared with the
    baseline's value at the same path."""
    from pathlib import Path

    root = Path(ws_root)
    base_value = extract(_transcript(root, at.baseline, case_id), path, at.baseline, case_id)
    key = f"{at.source}/{case_id}/{path}"
    digest = sha256_hex(canonical(base_value))
    if at.current is None:
        state: EvidenceState = "stale" if at.stale else "verified"
        return ExcerptInfo(key, at, case_id, path, base_value, digest, state)
    value = extract(_transcript(root, at.current, case_id), path, at.current, case_id)
    now = sha256_hex(canonical(value))
    return ExcerptInfo(
        key, at, case_id, path, value, now, "verified" if now == digest else "changed"
    )


def value_at(root: Any, capture: Capture, case_id: str, path: str) -> Any:
    """The value at ``path`` of a case's transcript in ``capture`` (an error names what
    is not there)."""
    from pathlib import Path

    return extract(_transcript(Path(root), capture, case_id), path, capture, case_id)


def previous_capture(ws: Workspace, capture: Capture, ancestors: list[str]) -> Capture | None:
    """The capture of the same name at the nearest of ``ancestors`` (the commits before
    ``capture``'s, nearest first) that has one, or None."""
    made = captured_commits(ws, capture.name)
    for commit in ancestors:
        if commit[:12] in made:
            return load_capture(ws, capture.name, commit)
    return None


def _transcript(root: Any, capture: Capture, case_id: str) -> Any:
    case = find_case(capture, case_id)
    if case.transcript is None:
        raise TraceworkError(f"case {case_id} of capture {capture.name} recorded no transcript")
    return json.loads((root / capture.folder / case.transcript).read_bytes())


def extract(transcript: Any, path: str, capture: Capture, case_id: str) -> Any:
    """The value at ``path`` in a transcript: the recorded value named by its first
    segment, then ``.key``, ``[n]`` or ``["key"]`` steps into it."""
    records = transcript.get("records", []) if isinstance(transcript, dict) else []
    names = [r.get("name") for r in records if isinstance(r, dict)]
    start = [n for n in names if isinstance(n, str) and path.startswith(n)]
    start = [n for n in start if path[len(n) : len(n) + 1] in ("", ".", "[")]
    where = f"capture {capture.name} case {case_id}"
    if not start:
        raise TraceworkError(
            f"{where}: {path!r} names no recorded value",
            hint="start the path with one of: " + ", ".join(repr(n) for n in names),
        )
    name = max(start, key=len)
    if names.count(name) > 1:
        raise TraceworkError(f"{where}: {name!r} was recorded {names.count(name)} times")
    value = next(r["value"] for r in records if r.get("name") == name)
    rest = path[len(name) :]
    while rest:
        step = _STEP.match(rest)
        if step is None:
            raise TraceworkError(f"{where}: cannot read {rest!r} of {path!r}")
        key, index, quoted = step.groups()
        if index is not None:
            if not isinstance(value, list) or int(index) >= len(value):
                raise TraceworkError(f"{where}: {path!r}: no item [{index}] there")
            value = value[int(index)]
        else:
            field = key if key is not None else json.loads(f'"{quoted}"')
            if not isinstance(value, dict) or field not in value:
                raise TraceworkError(f"{where}: {path!r}: no key {field!r} there")
            value = value[field]
        rest = rest[step.end() :]
    return value


# -- how a report shows them ----------------------------------------------------------


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
        f'<dl class="tw-meta">{"".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in method)}</dl>'
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
    from pathlib import Path

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
