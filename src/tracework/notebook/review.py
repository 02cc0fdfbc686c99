"""What a review covers: the one rule for ``reviewed=`` on records and rubric marks.

A record or a mark whose cited evidence drifted since the pin needs re-review.  A review
stamp (``reviewed="YYYY-MM-DD"`` against the pin, or ``reviewed=(commit, date)``) says
which commit an analyst confirmed it against, and clears the flag for evidence
**unchanged since that commit**: evidence the check finds at the commit shown exactly as
it found it at the reviewed commit (the same state and the same bytes: the relocated
span's hash, or the file's).  Evidence that changed after the reviewed commit still
flags.  So a review at the commit shown clears every flag there; a review at the pin
clears none of the drift since the pin; a review at a commit between the two clears the
drift that was already there when it was made.

Only quotes and files of the report's subject can be compared at another commit; any
other evidence (a capture, a broken absence, evidence of another subject) is covered
only by a review at the commit shown.

:class:`Reviews` applies the rule to a report: which records and marks need re-review
at the commit opened, and which drifted evidence each flag rests on.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracework.drift.check import CheckItem
from tracework.notebook.session import RegisterSession
from tracework.notebook.state import ReportState
from tracework.records.kinds import DRIFT_STATES, ReviewStamp

#: What a check found of one piece of evidence at one commit (see :func:`found_as`).
Found = tuple[object, ...]


def found_as(item: CheckItem | None) -> Found:
    """What the check found of a quote or file: its state, the hash of what is there
    (the relocated span of a quote, the file's bytes; None when nothing is), and for
    an ambiguous quote, where its candidates are.  No item: checked as verified."""
    if item is None:
        return ("verified",)
    return (item.state, item.sha256_at_commit, item.candidate_paths, item.candidates)


def unchanged(then: CheckItem | None, now: CheckItem | None) -> bool:
    """Whether evidence found as ``then`` at a reviewed commit is found the same now."""
    return found_as(then) == found_as(now)


#: Per record (or mark), the cited evidence that puts it up for re-review.
Flags = dict[str, list[str]]


class Reviews:
    """Which records and marks of a report need re-review at the commit opened."""

    def __init__(self, session: RegisterSession, state: ReportState) -> None:
        self.session, self.state = session, state

    def records(self) -> Flags:
        """Per record, the cited evidence that no longer holds at the commit: a drifted
        quote, a changed or missing file, its own broken absence, or a cited record that
        needs re-review itself — transitively (records cite only records declared
        before them, and cycles are refused, so one pass in order suffices) — less what
        the record's review covers."""
        return self._records()[0]

    def marks(self) -> Flags:
        """Per mark (by anchor), the cited evidence that no longer holds at the commit, as
        for a record, less what the mark's review covers."""
        records, behind = self._records()
        out: Flags = {}
        for key, mark in self.state.marks.items():
            bad, _ = self._flagged(mark.evidence, mark.reviewed_at, records, behind)
            if bad:
                out[key] = bad
        return out

    def _records(self) -> tuple[Flags, dict[str, set[str]]]:
        """:meth:`records`, and per record it flags, the drifted evidence the flag rests
        on (its own, and that of the records it cites): what a review of a record citing
        it must cover."""
        out: Flags = {}
        behind: dict[str, set[str]] = {}
        absences = self.state.absences
        for record in self.state.records.values():
            broken = record.id in absences and not absences[record.id].holds
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
        records: Flags,
        behind: dict[str, set[str]],
        own: str | None = None,
    ) -> tuple[list[str], set[str]]:
        """The cited ``evidence`` that puts a record or mark reviewed at ``stamp`` up for
        re-review (``own``: its own broken absence), and the drifted evidence that rests
        on: a drifted quote, file or capture, or a cited record in ``records`` (flagged)
        whose drift, in ``behind``, is not all unchanged since the review."""
        state = self.state
        captured = [state.capture_evidence[e] for e in evidence if e in state.capture_evidence]
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
            quote, cited = state.quotes.get(e), state.files.get(e)
            observed = state.capture_evidence.get(e)
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
        the reviewed commit."""
        session = self.session
        if stamp is None:
            return False
        if stamp.commit == session.commit:
            return True
        quote, cited = self.state.quotes.get(evidence), self.state.files.get(evidence)
        now: CheckItem | None
        if quote is not None:
            sid, kind, key, now = quote.quote.source, "quote", evidence, quote.drift
        elif cited is not None:
            sid, kind, key, now = cited.source, "file", cited.path, cited.check
        else:
            return False  # a capture, a broken absence: only a review at this commit
        if session.register.git_source(sid).subject != session.subject.name:
            return False  # not read at this commit, nor at the reviewed one
        report = session.checks.at_reviewed(sid, stamp.commit)
        if report is None:
            return False
        then = next((i for i in report.items if i.kind == kind and i.id == key), None)
        return then is not None and unchanged(then, now)
