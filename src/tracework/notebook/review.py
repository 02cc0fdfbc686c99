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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracework.drift.check import CheckItem

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
