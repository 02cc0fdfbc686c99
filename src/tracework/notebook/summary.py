"""The check summary: every check on a report at its commit, and the problems found.

``wb.done()`` shows it last and records.json keeps it as ``checks``; at the register's
pin a render fails when it does not hold.  It is the one place that decides what holds:
the register's files and quotes (moved evidence is allowed away from the pin, a
formatting-only change too), the records, the absences, the diagrams, and, when the
report has them, asserted hashes and rubric marks.  Each family is counted in words a
reader checks against the report, and each problem is one line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from tracework.drift.check import problem_text
from tracework.notebook.review import Reviews
from tracework.notebook.session import RegisterSession
from tracework.notebook.state import ReportState
from tracework.records.artefacts import Check, Checks, CheckSummary, RecordsCheck, RegisterCheck
from tracework.text import counted


def check_summary(session: RegisterSession, state: ReportState, reviews: Reviews) -> CheckSummary:
    """Every check at the commit opened, as the model records.json's `checks` is written
    from."""
    register = session.register
    at_pin = session.commit == session.pin
    problems: list[str] = []
    reports = session.checks.git_sources()
    items = [i for r in reports for i in r.items] + session.checks.workspace_items()
    allowed = {"verified"} if at_pin else {"verified", "moved"}
    bad = [i for i in items if i.state not in allowed and not (i.format_only and not at_pin)]
    problems += [problem_text(i, register.sources[i.source].kind) for i in bad]
    counts = {
        k: dict(sorted(Counter(i.state for i in items if i.kind == k).items()))
        for k in ("file", "quote")
    }
    records, absences, diagrams = state.records, state.absences, state.diagrams
    if not records:
        problems.append("no records declared")
    broken = [rid for rid, res in absences.items() if not res.holds]
    problems += [f"absence {rid}: the patterns now match" for rid in broken]
    uncited = uncited_quotes(register.quotes, state.quotes)
    bare = sum(1 for r in records.values() if not r.evidence and r.id not in absences)
    failing = [d for d in diagrams.values() if not d.check.ok]
    for d in failing:
        if d.check.unknown_records:
            problems.append(
                f"diagram {d.name}: binds unknown records " + ", ".join(d.check.unknown_records)
            )
        if d.check.vanished:
            problems.append(
                f"diagram {d.name}: identifiers not found at "
                f"{session.commit[:12]}: " + ", ".join(d.check.vanished)
            )
    named = sum(len(d.check.identifiers) for d in diagrams.values())
    registered = RegisterCheck(
        ok=not bad and bool(items),
        detail="; ".join(
            f"{kind}s: " + ", ".join(f"{n} {s}" for s, n in c.items())
            for kind, c in counts.items()
            if c
        )
        or "nothing registered",
        counts=counts,
    )
    declared = RecordsCheck(
        ok=bool(records),
        detail=f"{counted(len(records), 'record')}, {bare} citing no "
        "evidence; every reference resolves and every cited quote is in the register; "
        + uncited_text(register.name, uncited),
        counts=dict(Counter(r.kind for r in records.values())),
    )
    searched = Check(
        ok=not broken,
        detail=f"{len(absences) - len(broken)} hold, {len(broken)} broken",
    )
    drawn = Check(
        ok=not failing,
        detail=f"{counted(len(diagrams), 'diagram')}, "
        f"{counted(named, 'identifier')} checked; {len(failing)} with problems",
    )
    # assertions and marks are in records.json only when the report has them: passed
    # only then, a family left out stays unset, and so unwritten (to_json)
    optional: dict[str, Check] = {}
    asserted = [a for r in reports for a in r.assertions]
    if asserted:
        failing_assertions = [a for a in asserted if a.fails]
        problems += [
            f"assertion by {a.by or 'the register'}: {a.path} {a.where()}: {a.state} (required)"
            for a in failing_assertions
        ]
        findings = sum(1 for a in asserted if a.state != "holds")
        optional["assertions"] = Check(
            ok=not failing_assertions,
            detail=f"{len(asserted) - findings} of {len(asserted)} asserted hashes hold; "
            f"{findings} differ or are missing ({len(failing_assertions)} required)",
            findings=findings - len(failing_assertions),
        )
    marks = state.marks
    if marks:
        stale = reviews.marks()
        problems += [
            f"mark {marks[key].rubric}/{marks[key].mechanism}: evidence drifted: " + ", ".join(v)
            for key, v in stale.items()
        ]
        optional["marks"] = Check(
            ok=not stale,
            detail=f"{counted(len(marks), 'mark')} against "
            f"{counted(len(state.rubrics), 'rubric')}; every present mark cites evidence; "
            f"{len(stale)} need re-review",
        )
    checks = Checks(
        registered=registered,
        records=declared,
        absences=searched,
        diagrams=drawn,
        **optional,
    )
    return CheckSummary(
        ok=all(check.ok for _, check in checks.families()),
        commit=session.commit,
        pin=session.pin,
        at_pin=at_pin,
        checks=checks,
        problems=problems,
    )


def uncited_quotes(registered: Iterable[str], cited: Iterable[str]) -> list[str]:
    """The register's quotes that no cell of the notebook quotes or cites, sorted.

    The one count JupyterLab's ``wb.done()``, ``tracework author`` and ``render`` show:
    each counts what the kernel holds at ``done()``, and the kernel holds only what the
    cells there are quoted (a cell deleted or re-run takes its quotes with it: see
    :func:`tracework.notebook.cells.forget_cell`), as a render, which runs only those
    cells, does."""
    return sorted(set(registered) - set(cited))


def uncited_text(register: str, uncited: Sequence[str]) -> str:
    """How many register quotes are not cited, which, and the command that removes one."""
    said = f"{counted(len(uncited), 'register quote')} not cited"
    if not uncited:
        return said
    names = ", ".join(uncited[:5]) + (f" and {len(uncited) - 5} more" if len(uncited) > 5 else "")
    command = (
        f"tracework quote {register} --remove {uncited[0] if len(uncited) == 1 else 'QUOTE-ID'}"
    )
    return f"{said}: {names} (`{command}` removes {'it' if len(uncited) == 1 else 'each'})"
