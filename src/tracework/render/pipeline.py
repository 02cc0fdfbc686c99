"""``tracework render``: the stages of one report, in order, each a function.

1. :func:`~tracework.render.inputs.prepare`: read and check the inputs before any kernel
   starts (notebook, register, rubrics, commit, settings), reading and hashing each once;
2. :func:`run`: execute the notebook with papermill in render mode, in a staging folder,
   within the time limits, keeping each output to its cap (``report.ipynb``);
3. :func:`check`: take records.json from what ran and check that the notebook read the
   register and rubrics that were hashed; add the drift since the pin;
4. :func:`manifest_for` and :func:`write_page`: manifest.json, then report.html with
   nbconvert and the tracework template (and the diagrams and their scripts);
5. swap ``reports/NAME/<commit12>/`` for the staging folder only when all succeeded, so
   a failed render leaves the previous good report in place;
6. :func:`record_history`: the render's entry in the report's ``history.json``.

:func:`render` runs them in a staging folder; a failure keeps what ran for diagnosis
(:func:`_kept_when_failed`).  Stages 2 to 4 take what earlier ones made, so a loop that
renders again (into a folder of its own, in a kernel it keeps) can call them alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from tracework.errors import RenderError, TraceworkError, validation_problem
from tracework.fsio import locked, write_atomic
from tracework.records.artefacts import (
    RECORDS_MIME,
    CheckSummary,
    HistoryEntry,
    KernelRecords,
    RenderManifest,
    ReportRecords,
    report_records,
    write_history,
    write_manifest,
    write_records,
)
from tracework.register.models import Register
from tracework.render import export
from tracework.render.execution import execute
from tracework.render.history import drift_summary, history_entry, read_history, with_entry
from tracework.render.inputs import (
    Inputs,
    Plan,
    distribution_sha256,
    lock_file_sha256,
    plan_key,
    prepare,
)
from tracework.staging import Staging
from tracework.version import __version__
from tracework.views.cards import summary_html
from tracework.workspace import Workspace

if TYPE_CHECKING:  # nbformat loads with the notebook (see load_nbformat)
    import nbformat

#: What a render writes into its folder: a ``failed-*`` folder holding anything else is
#: not one tracework kept, and is never replaced.
RENDER_FILES = frozenset(
    {"report.ipynb", "records.json", "manifest.json", "report.html", "diagrams", "assets"}
)


@dataclass(frozen=True)
class RenderResult:
    """Where a report went and what its checks said."""

    name: str
    commit: str
    directory: Path
    summary: CheckSummary
    cleared: int = 0  # code cells whose saved outputs the render cleared in its own copy


def render(
    ws: Workspace,
    name: str,
    commit: str | None = None,
    analysis_date: str | None = None,
    km: Any = None,
    plan: Plan | None = None,
) -> RenderResult:
    """Render report ``name`` at ``commit`` (default: the register's pin), in kernel ``km``
    (a batch boots one ahead; a single render's command starts one booting as soon as
    ``plan``, the inputs prepared, shows them sound; default: one started for this
    render)."""
    plan = plan or prepare(ws, name, commit, analysis_date)
    out_root = ws.reports / name
    history_path = out_root / "history.json"
    read_history(history_path)  # a broken history stops us before a kernel does
    out_root.mkdir(parents=True, exist_ok=True)
    stage = Staging(out_root, plan.commit[:12], RENDER_FILES)
    shown = stage.final.relative_to(ws.root).as_posix()
    stage.sweep()  # folders a killed render left behind
    with stage.hold() as folder, _kept_when_failed(stage, ws.root):
        with _write_errors_named(folder, shown):
            export.warmed_exporter()  # while the kernel boots (see there)
            executed = run(ws, plan, folder, km)
            records = check(ws, plan, executed)
            write_records(folder / "records.json", records)
            entry = history_entry(records)
            history = with_entry(read_history(history_path), entry)  # as the page shows it
            manifest = manifest_for(ws, plan)
            write_manifest(folder / "manifest.json", manifest)
            write_page(folder, executed, records, plan.inputs.register, manifest, history)
        stage.swap()
        stage.drop_failed()
        record_history(history_path, entry, folder, shown)
    return RenderResult(name, plan.commit, stage.final, records.checks, plan.cleared)


# -- the stages -----------------------------------------------------------------------


def run(ws: Workspace, plan: Plan, folder: Path, km: Any = None) -> nbformat.NotebookNode:
    """Execute the plan's notebook in render mode, in kernel ``km`` (default: one started
    for the run); write what ran to ``folder/report.ipynb``, also when it fails; return
    it, normalised and its outputs capped."""
    return execute(
        plan.notebook, folder / "report.ipynb", plan.parameters, ws.root, plan.limits, km
    )


def check(ws: Workspace, plan: Plan, executed: nbformat.NotebookNode) -> ReportRecords:
    """The report's records: those the notebook's ``wb.done()`` displayed, once they are
    checked to be tracework's and to come from the inputs the plan read, with the drift
    since the pin and the report's title."""
    notebook = f"{plan.name}.ipynb"
    raw = _displayed_records(executed)
    if raw is None:
        raise RenderError(
            f"{notebook} never called wb.done()", hint="end the notebook with wb.done()"
        )
    kernel = _kernel_records(raw, notebook)
    _check_what_ran(plan.inputs, kernel, plan.name)
    drift = drift_summary(ws, plan.inputs.register, kernel)
    return report_records(kernel, drift, export.report_title(executed, kernel))


def manifest_for(ws: Workspace, plan: Plan) -> RenderManifest:
    """manifest.json: what was rendered, from which inputs (their hashes and key), by
    which tracework."""
    inputs = plan.inputs
    lock = lock_file_sha256(ws)
    return RenderManifest(
        subject=plan.subject.name,
        url=plan.subject.url,
        commit=plan.commit,
        notebook=f"notebooks/{plan.name}.ipynb",
        notebook_sha256=inputs.notebook_sha256,
        register_path=f"registers/{plan.name}.yaml",
        register_sha256=inputs.register_sha256,
        tracework=__version__,
        lock_sha256=lock,
        distribution_sha256=None if lock else distribution_sha256(),
        parameters=plan.parameters,
        inputs_sha256=plan_key(ws, plan),
    )


def write_page(
    folder: Path,
    executed: nbformat.NotebookNode,
    records: ReportRecords,
    register: Register,
    manifest: RenderManifest,
    history: list[HistoryEntry],
) -> None:
    """Write the report's page into ``folder``: each diagram's Mermaid source, the pinned
    Mermaid and report.js when there are diagrams, and report.html."""
    diagrams = export.diagram_sources(executed)
    for diagram_name, source in sorted(diagrams.items()):
        write_atomic(folder / "diagrams" / f"{diagram_name}.mmd", source)
    if diagrams:
        bundle = export.mermaid_js()
        if bundle is None:
            raise RenderError(
                "the report has diagrams but the pinned Mermaid library is not installed",
                hint="run `npm ci` where package.json pins it (make does this)",
            )
        write_atomic(folder / "assets" / "mermaid.min.js", bundle.read_bytes())
        write_atomic(folder / "assets" / "report.js", export.report_js().read_bytes())
    summary = summary_html(records.checks, by_name=True)
    page = export.export_html(executed, records, register, manifest, summary, history)
    write_atomic(folder / "report.html", page)


def record_history(path: Path, entry: HistoryEntry, folder: Path, shown: str) -> None:
    """Add ``entry`` to the report's history.  The file is read again under its lock:
    another render of the report may have written it since this one made its page.  A
    refused write is named as the render's own are (:func:`_write_failed`)."""
    with locked(path):
        entries = with_entry(read_history(path), entry)
        with _write_errors_named(folder, shown):
            write_history(path, entries)


# -- what ran, checked ----------------------------------------------------------------


def _displayed_records(nb: nbformat.NotebookNode) -> object | None:
    """The JSON the notebook last displayed as records.json (``wb.done()`` does), if any.

    Untyped on purpose: any cell may display that type, with data of any shape, so the
    render reads it through the model (:class:`~tracework.records.artefacts.KernelRecords`),
    whose refusal names what is wrong.
    """
    found = None
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if RECORDS_MIME in data:
                found = data[RECORDS_MIME]
    return found


def _kernel_records(raw: Any, notebook: str) -> KernelRecords:
    """The records the notebook's ``wb.done()`` displayed, as the model says they are:
    anything else is a notebook that did not come from this tracework's workbench."""
    try:
        return KernelRecords.model_validate(raw)
    except ValidationError as exc:
        raise RenderError(
            f"{notebook}: the records wb.done() gave are not tracework's records.json "
            f"({validation_problem(exc)})",
            hint="render with the tracework kernel, whose tracework wrote the render",
        ) from None


def _check_what_ran(inputs: Inputs, records: KernelRecords, name: str) -> None:
    """Fail the render when the notebook read a register or rubric other than the one
    hashed before it started (an edit during the render): the manifest would describe
    inputs that did not run."""
    changed = []
    if records.register_sha256 != inputs.register_sha256:
        changed.append(f"registers/{name}.yaml")
    for rubric, entry in sorted(records.marks.items()):
        if entry.sha256 != inputs.rubrics.get(rubric):
            changed.append(f"registers/rubrics/{rubric}.yaml")
    if changed:
        raise RenderError(
            f"{' and '.join(changed)} changed while the report rendered: the notebook read "
            "other bytes than the render hashed before it started",
            hint="render again once the edit is saved",
        )


# -- failures -------------------------------------------------------------------------


@contextmanager
def _write_errors_named(folder: Path, shown: str) -> Iterator[None]:
    """A refused write in the block (a full disk, say) as one message naming the
    report's file, not a temporary (:func:`_write_failed`)."""
    try:
        yield
    except OSError as exc:
        raise _write_failed(exc, folder, shown) from None


def _write_failed(exc: OSError, staging: Path, shown: str) -> RenderError:
    """A refused write (no space, no permission) as one message naming the report's
    file (``reports/NAME/<commit12>/report.html``), never the staging folder's name."""
    target = Path(exc.filename) if exc.filename else None
    if target is not None and target.is_relative_to(staging):
        named = f"{shown}/{target.relative_to(staging).as_posix()}"
    else:
        named = str(target) if target is not None else shown
    return RenderError(
        f"cannot write {named}: {exc.strerror or exc}",
        hint="free space or grant write access where the reports are, then render again",
    )


@contextmanager
def _kept_when_failed(stage: Staging, root: Path) -> Iterator[None]:
    """On a failure in the block, keep what ran in ``failed-<commit12>`` and say where in
    the error's hint (:func:`_keep_failed`); on an interrupt keep nothing (stopped, not
    failed: nothing to diagnose)."""
    try:
        yield
    except TraceworkError as exc:
        kept = _keep_failed(stage, root)
        if kept is not None:
            where = (
                "the previous good report is untouched"
                if stage.final.exists()
                else "no report written"
            )
            exc.hint = "; ".join(h for h in (exc.hint, f"{kept}; {where}") if h)
        raise
    except (KeyboardInterrupt, SystemExit):
        stage.discard()
        raise
    except BaseException:
        _keep_failed(stage, root)
        raise


def _keep_failed(stage: Staging, root: Path) -> str | None:
    """Keep a failed run's notebook for diagnosis in ``failed-<commit12>``, beside (never
    over) the good report; say where, or why it could not be kept (what is in the way:
    see :meth:`Staging.keep_failed`).  None when the run left no notebook."""
    if not (stage.folder / "report.ipynb").exists():
        stage.discard()
        return None
    kept = stage.keep_failed()
    shown = kept.folder.relative_to(root).as_posix()
    if kept.in_the_way is not None:
        return (
            f"the executed notebook could not be kept: {shown} is {kept.in_the_way}; "
            "move it away to keep the next failure's notebook"
        )
    return f"the executed notebook is kept in {shown}/"
