"""How results read on a terminal: rich tables and lines for people.  What ``--json``
prints is the library's own contract, never formatted here."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import click

from tracework.cli.common import rich_console

if TYPE_CHECKING:
    from tracework.records.artefacts import BatchOutcome


def _candidates(item: Any) -> list[str]:
    """Each candidate place, with its file when it is not the quote's own."""
    paths = item.candidate_paths or (None,) * len(item.candidates)
    return [
        f"{p}:{a}-{b}" if p not in (None, item.path) else f"{a}-{b}"
        for p, (a, b) in zip(paths, item.candidates, strict=True)
    ]


def print_check(report: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from tracework.drift.check import problem_text
    from tracework.text import visible, visible_name

    console = rich_console()
    for src in report.sources:
        where = "its pin" if src.commit == src.pin else f"{src.commit[:12]} (pin {src.pin[:12]})"
        table = Table(
            title=Text(f"{report.register} · {src.source} {src.subject} at {where}"),
            title_justify="left",
        )
        for col in ("kind", "id", "state", "where now", "detail"):
            # fold, never cut: a long path or quote id is what the reader has to act on
            table.add_column(col, overflow="fold")
        for item in src.items:
            if item.kind == "file" and item.state == "verified":
                continue
            now = ""
            if item.new_path or item.new_lines:
                lines = f":{item.new_lines[0]}-{item.new_lines[1]}" if item.new_lines else ""
                now = f"{item.new_path or item.path}{lines}"
            if item.candidates:
                now = "; ".join(_candidates(item))
            table.add_row(
                item.kind,
                Text(visible_name(item.id) if item.kind == "file" else visible(item.id)),
                item.state,
                Text(visible_name(now)),
                # the table abbreviates hashes; --json never does
                Text(visible(re.sub(r"\b([0-9a-f]{12})[0-9a-f]{52}\b", r"\1…", item.detail))),
            )
        if table.row_count:
            console.print(table)
        for item in src.items:
            if item.diff:
                console.print(Text(f"\n{item.id} changed:", style="bold"))
                console.print(Text(visible(item.diff)))
    files, quotes = report.counts("file"), report.counts("quote")

    def fmt(c: dict[str, int]) -> str:
        return ", ".join(f"{n} {state}" for state, n in sorted(c.items())) or "none"

    kinds = dict.fromkeys(report.document_sources, "document")
    kinds.update(dict.fromkeys(report.capture_sources, "capture"))
    for item in report.documents:  # documents and capture files, as a report's summary says
        if item.state != "verified":
            console.print(Text(visible(problem_text(item, kinds[item.source])), style="red"))
    for kind, what in (("document", "documents"), ("capture", "capture files")):
        kept = [d for d in report.documents if kinds[d.source] == kind]
        held = sum(d.state == "verified" for d in kept)
        if kept:
            of = "" if held == len(kept) else f" of {len(kept)}"
            console.print(Text(f"{what}: {held}{of} verified"))
    for sid in report.unchecked:
        console.print(Text(f"document {sid}: a URL, not checked (tracework never fetches it)"))
    for a in report.assertions:
        who = f"by {a.by}" if a.by else "expected by the register (--expect-sha256)"
        told = f"asserted {a.sha256[:12]}…"
        if a.state == "differs":
            told += f", the file has {a.sha256_at_commit and a.sha256_at_commit[:12]}…"
        line = f"assertion {who}: {visible_name(a.path)} {a.where()}: {a.state} ({told})"
        style = "red" if a.fails else "yellow" if a.state != "holds" else ""
        console.print(Text(line + (" — required" if a.required else ""), style=style))
    console.print(Text(f"files: {fmt(files)}; quotes: {fmt(quotes)}"))
    if not report.items:
        console.print(Text("nothing to check: the register has no files or quotes", style="red"))
    findings = sum(1 for a in report.assertions if a.state != "holds" and not a.fails)
    if findings:  # said before the verdict, which stays the last line
        noun = "finding" if findings == 1 else "findings"
        console.print(Text(f"{findings} {noun}: asserted hashes that do not hold, not --required"))
    console.print(Text("ok" if report.ok else "NOT OK", style="green" if report.ok else "red"))


def with_progress(plan: dict[str, str], run: Any, *, quiet: bool) -> Any:
    """Run with a live table of each report's state on a terminal (stderr)."""
    from rich.console import Console
    from rich.live import Live
    from rich.table import Table

    states = dict.fromkeys(plan, "queued")
    console = Console(stderr=True, highlight=False)

    def table() -> Table:
        view = Table(title="rerender", title_justify="left")
        view.add_column("report")
        view.add_column("commit")
        view.add_column("state")
        for name, state in states.items():
            view.add_row(name, plan[name][:12], state)
        return view

    if quiet or not console.is_terminal:

        def update(name: str, state: str) -> None:
            states[name] = state
            if not quiet:
                console.print(f"{name} @ {plan[name][:12]}: {state}")

        return run(update)
    with Live(table(), console=console, refresh_per_second=4) as live:

        def live_update(name: str, state: str) -> None:
            states[name] = state
            live.update(table())

        return run(live_update)


def print_rerender(results: list[BatchOutcome]) -> None:
    from rich.table import Table
    from rich.text import Text

    from tracework.batch.findings import broken_line
    from tracework.text import visible

    console = rich_console()
    table = Table(title="rerender", title_justify="left")
    for col in ("report", "commit", "status", "quotes", "absences"):
        table.add_column(col)
    for r in results:
        counts = ", ".join(f"{n} {s}" for s, n in r.counts.items() if n) or "-"
        uncited = sum(r.uncited.values())
        if uncited:
            counts += f" (+{uncited} uncited)"
        broken = sum(1 for a in r.absences.values() if a.state == "broken")
        held = len(r.absences) - broken
        absences = (
            (f"{broken} broken, {held} hold" if broken else f"{held} hold") if r.absences else "-"
        )
        table.add_row(Text(visible(r.name)), r.commit[:12], r.status, counts, absences)
    console.print(table)
    for r in results:
        if r.error:
            console.print(Text(f"{r.name}: failed: {visible(r.error)}", style="red"))
            continue
        for qid, commit in sorted(r.first_changed.items()):
            content = r.first_content_change.get(qid)
            if qid in r.format_only:  # and so no first content change: content.py
                how = "format only"
            elif content == commit or content is None:
                how = "content changed there too"
            else:
                how = f"content first changed at {content[:12]}"
            line = f"{r.name}: {visible(qid)} first changed at {commit[:12]} ({how})"
            console.print(Text(line))
        for aid, absence in sorted(r.absences.items()):
            if absence.state == "broken":
                console.print(Text(f"{r.name}: {visible(broken_line(aid, absence))}"))


def print_screen(subject_name: str, result: Any) -> None:
    """The screen as tables.  On a terminal long cells fold; on a pipe every row stays
    on one line, however long, so no path is ever cut and each finding can be grepped."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from tracework.text import visible, visible_name

    def where(path: str, line: int) -> str:
        return f"{visible_name(path)}:{line}"

    rows: list[tuple[str, ...]] = [
        (
            f.category,
            where(f.path, f.line),
            visible(f.what())
            + (f" ← {', '.join(visible_name(r) for r in f.run_by)}" if f.run_by else ""),
            visible(f.text),
        )
        for f in result.findings
    ]
    window = result.cooldown
    recent: list[tuple[str, ...]] = [
        (where(lock.path, p.line), visible(p.name), visible(p.version), p.uploaded, str(p.age_days))
        for lock in window.locks
        for p in lock.packages
    ]
    console = rich_console()
    if not console.is_terminal:  # as wide as the longest row needs: rich sizes columns to fit
        console = Console(highlight=False, soft_wrap=True, width=1 << 20)

    def table(title: str, columns: tuple[str, ...], body: list[tuple[str, ...]]) -> Any:
        shown = Table(title=Text(title), title_justify="left")
        for column in columns:
            shown.add_column(column, overflow="fold")
        for row in body:
            shown.add_row(*(Text(cell) for cell in row))
        return shown

    console.print(
        table(
            f"{subject_name} at {result.commit[:12]}: nothing was run",
            ("category", "where", "what", "the line"),
            rows,
        )
    )
    console.print(Text(", ".join(f"{n} {c}" for c, n in result.counts().items())))
    title = (
        f"dependencies inside the {window.days}-day cooldown: published after {window.since}, "
        f"the commit being of {window.commit_date}: {window.verdict()}"
    )
    if recent:
        console.print(
            table(title, ("where", "package", "version", "uploaded", "age (days)"), recent)
        )
    else:
        console.print(Text(title))
    for lock in window.locks:
        console.print(Text(f"{visible_name(lock.path)}: {lock.note}"))


def prepare_capture() -> None:
    """Import what :func:`print_capture` uses: a capture does it while its harness runs."""
    import importlib

    for module in ("rich.console", "rich.table", "rich.text", "tracework.text"):
        importlib.import_module(module)


def print_capture(outcome: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from tracework.text import visible

    cap = outcome.capture
    runs = "1 run" if outcome.runs == 1 else f"{outcome.runs} runs, byte-identical"
    console = rich_console()
    table = Table(
        title=Text(
            f"capture {cap.name} · {cap.manifest.subject} at {cap.commit[:12]} "
            f"({runs}; isolated by {outcome.isolation})"
        ),
        title_justify="left",
    )
    for col in ("case", "status", "question", "observed"):
        table.add_column(col, overflow="fold")
    for arm in (cap.results, cap.model_arm):
        for case in arm.cases if arm is not None else ():
            unmet = [ch.observed for ch in case.checks if ch.holds is not True]
            observed = case.observed or "; ".join(unmet or [ch.observed for ch in case.checks])
            status = case.status or "model-driven (not graded)"
            table.add_row(case.id, status, Text(visible(case.question)), Text(visible(observed)))
    console.print(table)
    counts = cap.results.counts
    tables = len(cap.results.tables)
    console.print(
        Text(
            f"{len(cap.results.cases)} scripted cases: {counts['PASS']} PASS, {counts['FAIL']} "
            f"FAIL, {counts['UNKNOWN']} UNKNOWN"
            + (f"; {tables} table{'s' if tables != 1 else ''}" if tables else "")
        )
    )
    click.echo(f"written to {cap.folder}/ (manifest.json lists every file's SHA-256)")


def print_environment(name: str, outcome: Any) -> None:
    """``capture env``'s report: the state, then the provenance a capture will record."""
    from tracework.text import visible

    env = outcome.environment
    made = env.provenance
    state = (
        f"built now, isolated by {outcome.isolation}"
        if env.built_now
        else "already built (and as built): nothing installed"
    )
    click.echo(f"environment of capture {name} at {outcome.commit[:12]}: {state}")
    click.echo(f"  key {env.key[:16]}…  {env.folder}")
    python = made.python
    click.echo(f"  uv {made.uv}; Python {python.version} at {python.path} (sha256 {python.sha256})")
    if made.lock is not None:
        lock = made.lock
        defaults = [g for g in lock.groups if g in lock.default_groups]
        named = [g for g in lock.groups if g not in lock.default_groups]
        groups = ", ".join([*(f"{g} (default)" for g in defaults), *named]) or "none"
        click.echo(f"  uv.lock sha256 {lock.sha256}; pyproject.toml sha256 {lock.project_sha256}")
        click.echo(
            visible(f"  groups: {groups}; extras: {', '.join(lock.extras) or 'none'}")
            + ("; the default groups left out" if lock.no_default_groups else "")
        )
    if made.extra_lock is not None:
        said = env.extra_note or "installed as written"
        click.echo(f"  extra: {said}; sha256 {made.extra_lock.sha256}")
    click.echo(f"  {len(made.distributions)} distributions; environment.txt sha256 {env.sha256}")
    for dist in made.distributions:
        if dist.sha256:
            how = f"sha256 {dist.sha256}" + (f" ({dist.file})" if dist.file else "")
        elif dist.hashes and dist.installed_by == "lock":
            how = f"one of the {len(dist.hashes)} files the lock lists, not told apart"
        elif dist.hashes:
            how = f"one of the {len(dist.hashes)} hashes the pin accepts"
        else:
            how = "no hash: not a file the lock or a pin names"
        built = "; built from source" if dist.built_from_source else ""
        click.echo(visible(f"    {dist.name}=={dist.version}  {how}{built}"))


def print_summary(summary: Any) -> None:
    """A report's checks, a family a line, then up to twenty problems (author, render)."""
    from tracework.text import visible

    for family, check in summary.checks.families(by_name=True):
        mark = "FAILS" if check.verdict == "fails" else check.verdict_words
        click.echo(f"  {family:<9} {mark:<6} {check.detail}")
    for problem in summary.problems[:20]:
        click.echo(f"  - {visible(problem)}")
