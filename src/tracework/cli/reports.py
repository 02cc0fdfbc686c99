"""``tracework new``, ``author``, ``render``, ``rerender`` and ``publish``: reports, one
or many, and the site."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tracework.cli.common import find_workspace, print_json
from tracework.cli.output import (
    print_rerender,
    print_summary,
    with_progress,
)


@click.command()
@click.argument("name")
@click.option("--subject", "subject_name", required=True, help="Subject to analyse.")
@click.option("--commit", required=True, help="Commit to pin (hex id or unique prefix).")
@click.option(
    "--kind",
    type=click.Choice(["runtime", "investigation", "atlas"]),
    default="runtime",
    show_default=True,
    help="runtime: a runtime account; investigation: the parts of an investigation record "
    "built on a capture, its provenance, status conditions, results and limits computed; "
    "atlas: summary, mental model, mechanisms marked against a rubric, screen, open questions.",
)
@click.option(
    "--capture",
    "capture_name",
    default=None,
    metavar="NAME",
    help="With --kind investigation: the capture it is built on (default: the report's name).",
)
@click.option(
    "--rubric",
    default=None,
    metavar="RUBRIC",
    help="With --kind atlas: the rubric it is marked against (default: the only one there is).",
)
def new(
    name: str,
    subject_name: str,
    commit: str,
    kind: str,
    capture_name: str | None,
    rubric: str | None,
) -> None:
    """Create notebooks/NAME.ipynb (clean, with a parameters cell) and registers/NAME.yaml."""
    from tracework.notebook.scaffold import new_report

    ws = find_workspace()
    notebook, register_path = new_report(ws, name, subject_name, commit, kind, capture_name, rubric)
    click.echo(f"created {notebook.relative_to(ws.root)} and {register_path.relative_to(ws.root)}")
    click.echo(f"next: open the notebook in JupyterLab, then `tracework render {name}`")


@click.command()
@click.argument("name")
@click.option("--commit", default=None, help="Run at this commit (default: the pin).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def author(name: str, commit: str | None, as_json: bool) -> None:
    """Run notebooks/NAME.ipynb in author mode, headless, into reports/NAME/draft/."""
    from tracework.render.author import as_json as author_json
    from tracework.render.author import author as do_author
    from tracework.render.author import records_text
    from tracework.text import counted, visible

    ws = find_workspace()
    result = do_author(ws, name, commit)
    if result.cleared:
        click.echo(
            f"notebooks/{name}.ipynb: the outputs of {result.cleared} cells were cleared in "
            "the run's copy (the notebook itself is unchanged)",
            err=True,
        )
    summary = result.summary
    if as_json:
        print_json(author_json(result, ws.root))
    else:
        click.echo(f"ran {result.directory.relative_to(ws.root)}/report.ipynb")
        click.echo(counted(len(result.records), "record"))
        for line in records_text(result):
            click.echo(f"  {visible(line)}")
        print_summary(summary)
    if result.at_pin and not summary.ok:
        sys.exit(1)


@click.command()
@click.argument("name")
@click.option("--commit", default=None, help="Render at this commit (default: the pin).")
@click.option(
    "--analysis-date",
    default=None,
    metavar="YYYY-MM-DD",
    help="Override the notebook's analysis_date parameter.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def render(name: str, commit: str | None, analysis_date: str | None, as_json: bool) -> None:
    """Execute notebooks/NAME.ipynb with papermill and export reports/NAME/<commit12>/."""
    from tracework.kernels.warm import WarmKernel, shutdown
    from tracework.render.history import read_history
    from tracework.render.inputs import prepare

    ws = find_workspace()
    # bad input, a broken history included, is refused before a kernel starts (a kernel
    # killed while it boots would print its client's errors over the one message); then
    # the kernel boots while the rest of the render loads
    plan = prepare(ws, name, commit, analysis_date)
    read_history(ws.reports / plan.name / "history.json")
    booting = WarmKernel(ws.root)
    try:
        from tracework.records.artefacts import to_json
        from tracework.render.pipeline import render as do_render

        result = do_render(ws, name, commit, analysis_date, km=booting, plan=plan)
    finally:  # the run stopped it; but a failure before the run would leave it booting
        booting.discard()
        shutdown(booting.km)
    summary = result.summary
    if result.cleared:
        click.echo(
            f"notebooks/{name}.ipynb: the outputs of {result.cleared} cells were cleared in "
            "the render's copy (the notebook itself is unchanged)",
            err=True,
        )
    if as_json:
        print_json(
            {
                "ok": summary.ok,
                "name": result.name,
                "commit": result.commit,
                "directory": str(result.directory.relative_to(ws.root)),
                "checks": to_json(summary),
            }
        )
        return
    click.echo(f"rendered {result.directory.relative_to(ws.root)}/report.html")
    print_summary(summary)


@click.command()
@click.argument("name")
@click.option("--commit", default=None, help="Render at this commit (default: the pin).")
@click.option(
    "--analysis-date",
    default=None,
    metavar="YYYY-MM-DD",
    help="Override the notebook's analysis_date parameter.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1 to serve on (0: a free one the system picks).",
)
@click.option("--open", "open_page", is_flag=True, help="Open the page in the default browser.")
def preview(
    name: str, commit: str | None, analysis_date: str | None, port: int, open_page: bool
) -> None:
    """Serve the draft of NAME on 127.0.0.1, rendered again each time its notebook,
    register, a rubric or a capture it cites is saved; the page reloads itself.

    Render mode, in reports/NAME/preview/ (never a render's folder or the history), in a
    fresh kernel booted before each save.  A failed run keeps the last good page, with
    the error's line and hint over it.  Ctrl-C stops the server and its kernels."""
    from tracework.render.preview import Outcome, Preview
    from tracework.text import visible

    ws = find_workspace()
    shown = set()

    def heard(outcome: Outcome) -> None:
        if outcome.cleared and outcome.cleared not in shown:
            shown.add(outcome.cleared)
            click.echo(
                f"notebooks/{name}.ipynb: the outputs of {outcome.cleared} cells are "
                "cleared in each run's copy (the notebook itself is unchanged)",
                err=True,
            )
        took = f"{outcome.seconds:.2f} s"
        if outcome.unchanged:
            click.echo(f"unchanged ({took}): the inputs are the bytes rendered last")
            return
        problem, summary = outcome.problem, outcome.summary
        if problem is not None:
            click.echo(f"failed in {took}: {visible(problem.message)}")
            if problem.hint:
                click.echo(f"  hint: {visible(problem.hint)}")
        elif summary is not None:
            held = "every check holds" if summary.ok else f"{len(summary.problems)} problems"
            click.echo(f"rendered in {took}: {held}")

    with Preview(ws, name, commit, analysis_date, port) as session:
        click.echo(f"serving {session.url} (Ctrl-C stops)")
        click.echo(f"drafts in {session.folder.relative_to(ws.root).as_posix()}/")
        if open_page:
            import webbrowser

            webbrowser.open(session.url)
        session.watch(heard)


@click.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--all", "every", is_flag=True, help="Every report in the workspace.")
@click.option("--commit", default=None, help="Render at this commit.")
@click.option("--latest", is_flag=True, help="Render at the head of each subject's tracked ref.")
@click.option("--fetch", "do_fetch", is_flag=True, help="Fetch the subjects first.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(1, 64),
    default=None,
    help="Worker processes (default: the number of cores).",
)
@click.option("--force", is_flag=True, help="Render even reports whose inputs did not change.")
@click.option(
    "--capture",
    "recapture",
    is_flag=True,
    help="Run each cited capture again at the target first (runs subject code, isolated).",
)
@click.option(
    "--analysis-date",
    default=None,
    metavar="YYYY-MM-DD",
    help="The date of this check, instead of each notebook's analysis_date parameter.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="Where renders run.",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="Dask scheduler address (with --executor dask).",
)
@click.option(
    "--shared-workspace",
    is_flag=True,
    help="The Dask workers see this workspace at the same path (a shared file system): "
    "they read and write it themselves instead of each task carrying its inputs.",
)
@click.option(
    "--fail-on",
    "fail_on",
    default=None,
    metavar="KINDS",
    help="Exit 1 when a finding of these kinds appears, one line each on stderr: a "
    "comma-separated list of changed (a cited quote's content changed, or it is missing), "
    "broken (an evidenced absence's patterns match), review (a record needs re-review), "
    "any (all three).  Without it a finding exits 0: the report renders to show it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def rerender(
    names: tuple[str, ...],
    every: bool,
    commit: str | None,
    latest: bool,
    do_fetch: bool,
    jobs: int | None,
    force: bool,
    recapture: bool,
    analysis_date: str | None,
    executor: str,
    scheduler: str | None,
    shared_workspace: bool,
    fail_on: str | None,
    as_json: bool,
) -> None:
    """Re-render reports at a new commit: drift, first-changed commits, history."""
    from tracework.batch.findings import finding_kinds, findings
    from tracework.batch.rerender import report_names, targets
    from tracework.batch.rerender import rerender as do_rerender
    from tracework.records.artefacts import to_json

    if (executor == "dask") != (scheduler is not None):
        raise click.UsageError("--executor dask and --scheduler ADDRESS go together")
    if shared_workspace and executor != "dask":
        raise click.UsageError("--shared-workspace is for --executor dask")
    kinds = finding_kinds(fail_on) if fail_on is not None else frozenset()
    ws = find_workspace()
    plan = targets(ws, report_names(ws, names, every), commit, latest, do_fetch)
    results = with_progress(
        plan,
        lambda update: do_rerender(
            ws,
            plan,
            jobs=jobs,
            force=force,
            scheduler=scheduler,
            analysis_date=analysis_date,
            capture=recapture,
            shared_workspace=shared_workspace,
            on_update=update,
        ),
        quiet=as_json,
    )
    ok = all(r.status != "failed" for r in results)
    found = findings(results, kinds)
    if as_json:
        print_json({"ok": ok and not found, "reports": [to_json(r) for r in results]})
    else:
        print_rerender(results)
    if found:
        from tracework.text import visible

        for finding in found:
            click.echo(f"finding: {visible(finding.line)}", err=True)
    sys.exit(0 if ok and not found else 1)


@click.command()
@click.option(
    "--out",
    default=None,
    type=click.Path(file_okay=False),
    help="Folder to publish into (default: reports/site): a new folder, or a site publish "
    "made before; inside a workspace only reports/site or such a site in reports/.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def publish(out: str | None, as_json: bool) -> None:
    """Publish the static site: an index of every report, their renders, the registers
    and one matrix per rubric.  Opens from disk; makes no outside request."""
    from tracework.site.publish import publish as do_publish

    ws = find_workspace()
    result = do_publish(ws, Path(out) if out else None)
    try:
        where = str(result.out.relative_to(ws.root.resolve()))
    except ValueError:
        where = str(result.out)
    if as_json:
        print_json(
            {
                "ok": True,
                "out": where,
                "reports": result.reports,
                "renders": result.renders,
                "rubrics": result.rubrics,
                "pages": result.pages,
                "skipped": result.skipped,
            }
        )
        return

    def count(n: int, what: str) -> str:
        return f"{n} {what}" + ("" if n == 1 else "s")

    click.echo(
        f"published {count(result.reports, 'report')} ({count(result.renders, 'render')}), "
        f"{count(len(result.rubrics), 'rubric')}, {count(result.pages, 'page')} "
        f"to {where}/index.html"
    )
    for problem in result.skipped:
        click.echo(f"  skipped {problem}", err=True)
