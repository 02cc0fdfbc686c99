"""What a re-render found that a CI job may fail on: ``rerender --fail-on KINDS``.

A report at a newer commit renders to show its drift, so drift alone exits 0.  A job
that must fail when evidence stops holding names the kinds of finding it fails on:

- ``changed``: a cited quote whose content changed (formatting only is not a finding),
  that became ambiguous, or that is missing;
- ``broken``: an evidenced absence whose patterns now match;
- ``review``: a record that cites evidence that no longer holds;
- ``any``: all three.

Each finding is one line, naming the report and the evidence, and the commit that first
changed or broke it when the search found one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tracework.errors import TraceworkError
from tracework.records.artefacts import AbsenceOutcome, BatchOutcome
from tracework.text import counted

KINDS = ("changed", "broken", "review")


@dataclass(frozen=True)
class Finding:
    """One piece of evidence that stopped holding, in one report."""

    kind: str
    report: str
    line: str


def finding_kinds(text: str) -> frozenset[str]:
    """The kinds ``--fail-on`` names (``any``: every kind); bad input is one message."""
    named = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(named - {*KINDS, "any"})
    if unknown or not named:
        raise TraceworkError(
            f"--fail-on: {', '.join(unknown) or 'nothing'} is not a kind of finding",
            hint=f"give one or more of {', '.join(KINDS)}, any (comma-separated)",
        )
    return frozenset(KINDS) if "any" in named else frozenset(named)


def broken_line(aid: str, absence: AbsenceOutcome) -> str:
    """An absence that broke, as every output says it."""
    since = f" since {absence.first_broken[:12]}" if absence.first_broken else ""
    where = f"{counted(absence.matches, 'match', 'matches')} in {counted(absence.files, 'file')}"
    return f"absence {aid} broken{since}: {where}"


def findings(results: Iterable[BatchOutcome], kinds: frozenset[str]) -> list[Finding]:
    """The findings of ``kinds`` in the re-rendered (or skipped) reports, in order."""
    found: list[Finding] = []
    for r in results:
        if r.status == "failed":
            continue  # a failure is its own exit 1, with its own message
        if "changed" in kinds:
            for qid, state in sorted(r.changed.items()):
                since = r.first_content_change.get(qid) or r.first_changed.get(qid)
                when = f" since {since[:12]}" if since else ""
                line = f"{r.name}: quote {qid} {state}{when}"
                found.append(Finding("changed", r.name, line))
        if "broken" in kinds:
            for aid, absence in sorted(r.absences.items()):
                if absence.state == "broken":
                    found.append(
                        Finding("broken", r.name, f"{r.name}: {broken_line(aid, absence)}")
                    )
        if "review" in kinds:
            for rid in r.needs_review:
                found.append(Finding("review", r.name, f"{r.name}: record {rid} needs re-review"))
    return found
