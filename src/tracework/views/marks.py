"""Rubric marks: "this system carries mechanism X" (or not), with the evidence.

``wb.mark(rubric, mechanism, present=..., evidence=[...], note=...)`` declares one.
A mark of *present* needs evidence (quotes or records); *absent* may cite an
evidenced absence.  Marks are checked like records: their evidence must exist, and
a mark whose evidence drifted at the commit needs re-review.  They appear in the
report header ("carries N of M" and a chip per mechanism), in their own section near
the top of the page, and in ``records.json``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict

from tracework.records.artefacts import MarkEntry, ReviewedAt, RubricMarks, RubricMechanism
from tracework.records.kinds import ReviewStamp
from tracework.records.rubrics import Rubric, RubricError
from tracework.views.cards import QuoteInfo, badge, esc, markdown, quote_html


@dataclass(frozen=True)
class Mark:
    """One mechanism of one rubric, marked present or absent, with its evidence."""

    rubric: str
    mechanism: str
    present: bool
    evidence: tuple[str, ...]
    note: str | None
    reviewed_at: ReviewStamp | None = None  # as records carry it: the commit and the date
    reviewer: str | None = None  # who reviewed the mark, in their own words

    @property
    def anchor(self) -> str:
        """The HTML id of the mark's card in the report (the site links to it)."""
        return mark_anchor(self.rubric, self.mechanism)


def mark_anchor(rubric: str, mechanism: str) -> str:
    """``mark/RUBRIC/MECHANISM``: unique, since neither part may hold a ``/``, and never a
    record or quote id, which may not either."""
    return f"mark/{rubric}/{mechanism}"


def rubric_anchor(rubric: str) -> str:
    return f"rubric/{rubric}"


def mark_html(
    mark: Mark, rubric: Rubric, drifted: Sequence[str] = (), *, anchor: bool = False
) -> str:
    """A mark's card: the mechanism, present or absent, evidence and note."""
    mechanism = rubric.mechanism(mark.mechanism)
    if mechanism is None:
        raise RubricError(f"rubric {mark.rubric} has no mechanism {mark.mechanism!r}")
    ident = f' id="{esc(mark.anchor)}"' if anchor else ""
    verdict = "present" if mark.present else "absent"
    head = (
        f'<header><a class="tw-record-id" href="#{esc(mark.anchor)}">'
        f"{esc(mark.rubric)} · {esc(mark.mechanism)}</a>"
        f'<span class="tw-kind">rubric mark</span>{badge(verdict)}'
        + (badge("needs re-review") if drifted else "")
        + "</header>"
    )
    body = f'<p class="tw-label">{esc(mechanism.name)}</p>'
    if mark.evidence:
        refs = ", ".join(f'<a class="tw-ref" href="#{esc(e)}">{esc(e)}</a>' for e in mark.evidence)
        body += f'<p class="tw-evidence">Evidence: {refs}</p>'
    else:
        body += '<p class="tw-evidence">No evidence cited.</p>'
    if drifted:
        body += f"<p>Drifted evidence: {', '.join(f'<code>{esc(d)}</code>' for d in drifted)}</p>"
    if mark.note:
        body += f'<div class="tw-notes">{markdown(mark.note)}</div>'
    body += review_html(mark)
    return f'<article class="tw-record tw-mark"{ident}>{head}{body}</article>'


def review_html(mark: Mark) -> str:
    """ "Reviewed by … against <commit> on <date>", as a record's card says it."""
    stamp = mark.reviewed_at
    if stamp is None and mark.reviewer is None:
        return ""
    by = f" by {esc(mark.reviewer)}" if mark.reviewer else ""
    when = (
        f" against <code>{esc(stamp.commit[:12])}</code> on {esc(stamp.date)}"
        if stamp is not None
        else ""
    )
    return f'<p class="tw-reviewed">Reviewed{by}{when}</p>'


def marks_section(
    marks: Iterable[Mark],
    rubrics: Mapping[str, Rubric],
    drifted: Mapping[str, list[str]],
    quotes: Sequence[QuoteInfo] = (),
) -> str:
    """The "Rubric marks" section: per rubric, every mechanism marked or not; then the
    cards of ``quotes`` (cited by marks, not shown with the records)."""
    by_rubric: dict[str, dict[str, Mark]] = {}
    for mark in marks:
        by_rubric.setdefault(mark.rubric, {})[mark.mechanism] = mark
    if not by_rubric:
        return ""
    out = ['<section class="tw-marks"><h2 id="rubric-marks">Rubric marks</h2>']
    for name in sorted(by_rubric):
        rubric, marked = rubrics[name], by_rubric[name]
        carried = sum(m.present for m in marked.values())
        out.append(
            f'<h3 id="{esc(rubric_anchor(name))}">{esc(rubric.title)}: carries {carried} of '
            f"{len(rubric.mechanisms)}</h3>"
        )
        for mechanism in rubric.mechanisms:
            found = marked.get(mechanism.id)
            if found is None:  # with the mark's anchor, for the header's chip to land on
                ident = esc(mark_anchor(name, mechanism.id))
                out.append(
                    f'<p class="tw-none" id="{ident}">{esc(mechanism.id)} '
                    f"({esc(mechanism.name)}): not marked</p>"
                )
            else:
                out.append(mark_html(found, rubric, drifted.get(found.anchor, ()), anchor=True))
    if quotes:
        out.append('<h3 id="marks-quoted-evidence">Quoted evidence of the marks</h3>')
        out += [quote_html(info, anchor=True) for info in quotes]
    out.append("</section>")
    return "".join(out)


def rubric_marks(
    marks: Iterable[Mark],
    rubrics: Mapping[str, tuple[Rubric, str]],
    drifted: Mapping[str, list[str]],
) -> dict[str, RubricMarks]:
    """records.json "marks": per rubric, its hash, size, count carried and each mark."""
    by_rubric: dict[str, list[Mark]] = {}
    for mark in marks:
        by_rubric.setdefault(mark.rubric, []).append(mark)
    out = {}
    for name in sorted(by_rubric):
        rubric, digest = rubrics[name]
        out[name] = RubricMarks(
            title=rubric.title,
            sha256=digest,
            mechanisms=len(rubric.mechanisms),
            carries=sum(mark.present for mark in by_rubric[name]),
            marks={
                mark.mechanism: MarkEntry(
                    present=mark.present,
                    evidence=list(mark.evidence),
                    note=mark.note,
                    needs_review=list(drifted.get(mark.anchor, [])),
                    reviewed_at=_reviewed_at(mark.reviewed_at),
                    reviewer=mark.reviewer,
                )
                for mark in by_rubric[name]
            },
            rubric_mechanisms=[RubricMechanism(id=m.id, name=m.name) for m in rubric.mechanisms],
        )
    return out


ChipState = Literal["present", "absent", "unmarked"]


class AtlasChip(TypedDict):
    """One mechanism's chip in the report header."""

    id: str
    name: str
    state: ChipState
    review: bool  # its mark needs re-review
    href: str  # where its mark's card is


class AtlasRubric(TypedDict):
    """One rubric in the report header: "carries N of M", then its chips."""

    href: str
    title: str
    carries: int
    of: int
    chips: list[AtlasChip]


def _reviewed_at(stamp: ReviewStamp | None) -> ReviewedAt | None:
    return ReviewedAt(commit=stamp.commit, date=stamp.date) if stamp else None


def atlas(marks: Mapping[str, RubricMarks]) -> list[AtlasRubric]:
    """The header's view of each rubric, from records.json "marks": "carries N of M" and
    one chip per mechanism in the rubric's order (present, absent, needs re-review or not
    marked), each linking its mark.  A render made before records.json listed the
    rubric's mechanisms has chips for its marks only."""
    out: list[AtlasRubric] = []
    for name, entry in marks.items():
        listed = entry.rubric_mechanisms or [RubricMechanism(id=m, name=m) for m in entry.marks]
        chips: list[AtlasChip] = []
        for mechanism in listed:
            mark = entry.marks.get(mechanism.id)
            state: ChipState = (
                "unmarked" if mark is None else "present" if mark.present else "absent"
            )
            chips.append(
                {
                    "id": mechanism.id,
                    "name": mechanism.name,
                    "state": state,
                    "review": bool(mark and mark.needs_review),
                    "href": "#" + mark_anchor(name, mechanism.id),
                }
            )
        out.append(
            {
                "href": "#" + rubric_anchor(name),
                "title": entry.title,
                "carries": entry.carries,
                "of": entry.mechanisms,
                "chips": chips,
            }
        )
    return out
