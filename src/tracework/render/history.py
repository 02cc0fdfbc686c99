"""A report's drift since its pin, and its render history (``history.json``).

:func:`drift_summary` is what a render adds to records.json at a commit other than the
pin: counts of quote states, the first commit that changed each quote (see
:mod:`tracework.drift.first_change`), broken absences, vanished identifiers and the
records that need re-review.  :func:`read_history`, :func:`history_entry` and
:func:`with_entry` keep one entry per render.  Both files' shapes are models of
:mod:`tracework.records.artefacts`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from tracework.drift.first_change import (
    STATES,
    Graph,
    commits_between,
    describe,
    first_change,
    first_changes,
)
from tracework.errors import TraceworkError, validation_problem
from tracework.git.mirror import Mirror
from tracework.git.subjects import open_mirror
from tracework.readers import DataError, Table, load_json
from tracework.records.absences import search
from tracework.records.artefacts import (
    BrokenIn,
    ChangedIn,
    Culprit,
    Drift,
    HistoryEntry,
    KernelRecords,
    MarkEntry,
    ReportRecords,
)
from tracework.workspace import Workspace

if TYPE_CHECKING:
    from tracework.register.models import Register


def drift_summary(ws: Workspace, register: Register, records: KernelRecords) -> Drift:
    """What changed between the pin and the rendered commit, and since which commit.

    For each quote that no longer holds (changed, ambiguous, missing), the first commit
    at which its bytes left the file and the first at which its content changed.
    """
    pin, commit = records.pin, records.commit
    quotes = records.quotes
    mirror = open_mirror(ws, records.subject)
    wanted = {
        qid: (
            q.path,
            q.new_path,
            register.quotes[qid].span_bytes(),
            register.quotes[qid].lines,
        )
        for qid, q in quotes.items()
        if q.state in ("changed", "ambiguous", "missing") and qid in register.quotes
    }
    found = first_changes(mirror, pin, commit, wanted) if pin != commit else {}
    first = {qid: c for qid, (c, _) in sorted(found.items()) if c}
    content = {qid: c for qid, (_, c) in sorted(found.items()) if c}
    broken = sorted(a for a, r in records.absences.items() if not r.holds)
    first_broken = _first_broken(mirror, pin, commit, records, broken)
    culprits = {}
    for c in sorted({*first.values(), *content.values(), *first_broken.values()}):
        info = describe(mirror, c)
        culprits[c] = Culprit(date=info.date, subject=info.subject)
    counts = Counter(q.state for q in quotes.values())
    return Drift(
        commits_since_pin=commits_between(mirror, pin, commit),
        counts={s: counts.get(s, 0) for s in STATES},
        format_only=sorted(qid for qid, q in quotes.items() if q.format_only),
        first_changed=first,
        first_content_change=content,
        culprits=culprits,
        broken_absences=broken,
        first_broken=first_broken,
        vanished_identifiers={
            d: r.vanished for d, r in sorted(records.diagrams.items()) if r.vanished
        },
        needs_review=sorted(r.id for r in records.records if r.needs_review),
    )


def _first_broken(
    mirror: Mirror, pin: str, commit: str, records: KernelRecords, broken: list[str]
) -> dict[str, str]:
    """For each broken absence, the first commit after the pin whose tree its patterns
    match: bisected like a quote's first change (``git bisect``'s rule, into merged
    branches), the scope searched again at each commit probed.  A commit where the
    scope names no file matches nothing."""
    if pin == commit or not broken:
        return {}
    declared = {r.id: r for r in records.records}
    graph = Graph(mirror, pin, commit)
    found: dict[str, str] = {}
    for aid in broken:
        record = declared.get(aid)
        extra = record.model_extra or {} if record is not None else {}
        scope, patterns = tuple(extra.get("scope", ())), tuple(extra.get("patterns", ()))
        if not scope or not patterns:
            continue

        def matches(
            at: str, scope: tuple[str, ...] = scope, patterns: tuple[str, ...] = patterns
        ) -> bool:
            try:
                return not search(mirror, at, scope, patterns).holds
            except TraceworkError:  # the scope names no file there: nothing matches
                return False

        culprit = first_change(graph, matches)
        if culprit is not None:
            found[aid] = culprit
    return found


def history_data(path: Path) -> list[Table]:
    """The report's render history as JSON: none yet when the file is missing.

    A file that cannot be read as a list of entries, each with its commit id, is an
    error rather than an empty history: the next render would write over it, and the
    record of every earlier render would be lost without a word.  (The site takes the
    entries it can show from this, one by one; a render takes them all, typed, from
    :func:`read_history`.)
    """
    where = _where(path)
    try:
        data = load_json(path.read_bytes())
    except FileNotFoundError:
        return []
    except (OSError, DataError) as exc:  # unreadable, not UTF-8, not JSON, nested too deeply
        raise _not_a_history(where, str(getattr(exc, "strerror", None) or exc)) from None
    if not isinstance(data, list):
        raise _not_a_history(where, f"a JSON {type(data).__name__}, not a list of entries")
    for n, entry in enumerate(data, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("commit"), str):
            raise _not_a_history(where, f"entry {n} has no commit id")
        if not isinstance(entry.get("commits_since_pin", 0), int):
            raise _not_a_history(where, f"entry {n}'s commits_since_pin is not a number")
    return data


def read_history(path: Path) -> list[HistoryEntry]:
    """The report's render history, every entry a :class:`HistoryEntry` (see
    :func:`history_data`); an entry that is not one is the file's error."""
    entries = []
    for n, entry in enumerate(history_data(path), 1):
        try:
            entries.append(HistoryEntry.model_validate(entry))
        except ValidationError as exc:
            raise _not_a_history(_where(path), f"entry {n}'s {validation_problem(exc)}") from None
    return entries


def _where(path: Path) -> str:
    return f"reports/{path.parent.name}/history.json"


def _not_a_history(where: str, why: str) -> TraceworkError:
    return TraceworkError(
        f"{where} is not a render history ({why[:200]})",
        hint="restore it from version control, or remove it to start the history again",
    )


def history_entry(records: ReportRecords) -> HistoryEntry:
    """This render's entry in the report's history, from its records."""
    drift = records.drift
    changed_in = {
        qid: ChangedIn(
            path=records.quotes[qid].path,
            commit=c,
            date=drift.culprits[c].date,
            format_only=qid in drift.format_only,
        )
        for qid, c in drift.first_changed.items()
    }
    broken = {
        aid: BrokenIn(
            commit=drift.first_broken.get(aid),
            date=drift.culprits[drift.first_broken[aid]].date if aid in drift.first_broken else "",
            matches=len(records.absences[aid].matches),
            files=records.absences[aid].matched_files,
        )
        for aid in drift.broken_absences
        if aid in records.absences
    }
    return HistoryEntry(
        commit=records.commit,
        date=records.commit_date,
        commits_since_pin=drift.commits_since_pin,
        counts=drift.counts,
        format_only=len(drift.format_only),
        changed_in=changed_in,
        ok=records.checks.ok,
        checked=records.analysis_date,
        pin=records.pin,
        pin_date=records.pin_date,
        marks={
            rubric: {mid: mark_words(m) for mid, m in sorted(entry.marks.items())}
            for rubric, entry in sorted(records.marks.items())
        },
        **({"broken": broken} if broken else {}),
    )


def with_entry(entries: list[HistoryEntry], entry: HistoryEntry) -> list[HistoryEntry]:
    """The history ``entries`` with ``entry`` added (or in place of the one for the same
    render: see :func:`_same_render`), in order."""
    kept = [e for e in entries if not _same_render(e, entry)]
    return sorted([*kept, entry], key=_in_order)


def _same_render(old: HistoryEntry, new: HistoryEntry) -> bool:
    """Whether ``new`` renders what ``old`` rendered (the same commit against the same
    pin), and so takes its place; a render of the commit at another pin is another
    entry.  An entry from before pins were kept is the same when it was as far from
    its pin."""
    if old.commit != new.commit:
        return False
    if old.pin is None:
        return old.commits_since_pin == new.commits_since_pin
    return old.pin == new.pin


def _in_order(entry: HistoryEntry) -> tuple[str, int, str]:
    """Renders by pin (the older pin first), then by how far past it."""
    return (entry.pin_date or "", entry.commits_since_pin, entry.commit)


def mark_words(mark: MarkEntry) -> str:
    """A mark as the history and the site say it."""
    state = "present" if mark.present else "absent"
    return state + (" (needs re-review)" if mark.needs_review else "")
