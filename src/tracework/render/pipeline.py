"""``tracework render``: the stages of one report, in order.

1. validate the inputs before any kernel starts (notebook, register, rubrics, commit,
   settings), reading and hashing each once;
2. execute those notebook bytes with papermill in render mode, in a staging folder,
   within the time limits, keeping each output to its cap;
3. take records.json from the executed notebook, check that the notebook read the
   register and rubrics that were hashed; write manifest.json;
4. export report.html with nbconvert and the tracework template;
5. replace ``reports/NAME/<commit12>/`` with the staging folder only when all
   succeeded, so a failed render leaves the previous good report in place.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

import tracework.register.store as reg
from tracework.errors import RenderError, TraceworkError, check_iso_date, validation_problem
from tracework.fsio import locked, write_atomic
from tracework.git.subjects import load_subject, open_mirror
from tracework.hashing import sha256_hex
from tracework.records.artefacts import (
    CheckSummary,
    KernelRecords,
    RenderManifest,
    report_records,
    write_history,
    write_manifest,
    write_records,
)
from tracework.records.rubrics import load_rubric, rubric_names, rubrics_key
from tracework.register.models import GitSource, Register
from tracework.render.execution import (
    Limits,
    execute,
    extract_records,
    file_sha256,
    notebook_problems,
    parse_notebook,
    read_notebook_bytes,
    without_outputs,
)
from tracework.render.history import drift_summary, read_history, updated_history
from tracework.staging import Staging
from tracework.version import __version__
from tracework.views.cards import summary_html
from tracework.workspace import Workspace, check_name


@dataclass(frozen=True)
class RenderResult:
    """Where a report went and what its checks said."""

    name: str
    commit: str
    directory: Path
    summary: CheckSummary
    cleared: int = 0  # code cells whose saved outputs the render cleared in its own copy


def lock_file_sha256(ws: Workspace) -> str | None:
    """SHA-256 of the lock file pinning the environment (the workspace's, else, in a source
    checkout, ours); None for an installed tracework without one (see
    :func:`distribution_sha256`)."""
    for candidate in (ws.root / "uv.lock", Path(__file__).resolve().parents[3] / "uv.lock"):
        digest = file_sha256(candidate)
        if digest:
            return digest
    return None


def distribution_sha256() -> str | None:
    """SHA-256 of the installed distribution's RECORD (every file it installed, each with
    its hash): what pins an installed tracework when no lock file does."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        record = distribution("tracework").read_text("RECORD")
    except PackageNotFoundError:
        return None
    return sha256_hex(record.encode("utf-8")) if record else None


@dataclass(frozen=True)
class Inputs:
    """What a render reads, read and hashed before a kernel starts.

    The kernel executes these notebook bytes; the render's own stages use this register;
    the manifest records these hashes.  The notebook reads the register (``tw.open``)
    and the rubrics it marks against itself, and records.json says what it read (the
    register's SHA-256, each marked rubric's digest): a render whose notebook read other
    bytes fails (:func:`_check_what_ran`), so an edit saved during a render is never
    recorded as what ran, and the next ``rerender`` sees it.  (A sealed copy handed to
    the kernel would need a channel into a kernel booted before the render knew its
    inputs; the notebook names its register itself.)
    """

    notebook: Any  # nbformat.NotebookNode, parsed from the hashed bytes
    notebook_sha256: str
    register: Register
    register_sha256: str
    rubrics: dict[str, str]  # every rubric of the workspace: name → content digest
    rubrics_key: str


def read_inputs(ws: Workspace, name: str) -> Inputs:
    """Read and validate the report's notebook, register and the workspace's rubrics."""
    notebook_path = ws.notebooks / f"{name}.ipynb"
    raw_notebook = read_notebook_bytes(notebook_path)
    notebook = parse_notebook(raw_notebook, notebook_path)
    register_path = ws.registers / f"{name}.yaml"
    try:
        raw_register = register_path.read_bytes()
    except FileNotFoundError:
        reg.load(register_path)  # says there is no register, and how to make one
        raise
    register = reg.load(register_path, raw_register)
    # render inputs all: a broken rubric is named now
    digests = {rubric: load_rubric(ws, rubric)[1] for rubric in rubric_names(ws)}
    return Inputs(
        notebook,
        sha256_hex(raw_notebook),
        register,
        sha256_hex(raw_register),
        digests,
        rubrics_key(ws),
    )


def render(
    ws: Workspace,
    name: str,
    commit: str | None = None,
    analysis_date: str | None = None,
    km: Any = None,
) -> RenderResult:
    """Render report ``name`` at ``commit`` (default: the register's pin)."""
    # 1. validate everything before a kernel starts, reading each input once
    check_name(name, "report")
    notebook = ws.notebooks / f"{name}.ipynb"
    inputs = read_inputs(ws, name)
    register = inputs.register
    sources = [s for s in register.sources.values() if isinstance(s, GitSource)]
    if not sources:
        raise TraceworkError(f"register {name} has no git source to render against")
    subject = load_subject(ws, sources[0].subject)
    full = open_mirror(ws, subject.name).resolve_commit(commit or sources[0].commit)
    if analysis_date is not None:
        check_iso_date(analysis_date, "--analysis-date")
    problems = notebook_problems(inputs.notebook)
    if problems:  # bad input, like every problem found before a kernel starts: exit 2
        raise RenderError(f"{notebook.relative_to(ws.root)}: " + "; ".join(problems))
    runnable, cleared = without_outputs(inputs.notebook)
    limits = Limits(ws.cell_timeout, ws.render_timeout, ws.output_cap)
    parameters: dict[str, Any] = {"register": name, "commit": full, "mode": "render"}
    if analysis_date is not None:
        parameters["analysis_date"] = analysis_date

    out_root = ws.reports / name
    read_history(out_root / "history.json")  # a broken history stops us before a kernel does
    out_root.mkdir(parents=True, exist_ok=True)
    stage = Staging(out_root, full[:12], RENDER_FILES)
    final = stage.final
    shown = final.relative_to(ws.root).as_posix()
    stage.sweep()  # folders a killed render left behind
    with stage.hold() as staging:  # until the folder is swapped in, kept or removed
        try:
            try:
                # 2. execute (it writes report.ipynb, also when the notebook fails)
                executed = execute(
                    runnable, staging / "report.ipynb", parameters, ws.root, limits, km
                )
                # 3. records and manifest
                raw = extract_records(executed)
                if raw is None:
                    raise RenderError(
                        f"{notebook.name} never called wb.done()",
                        hint="end the notebook with wb.done()",
                    )
                kernel = _kernel_records(raw, notebook.name)
                _check_what_ran(inputs, kernel, name)
                drift = drift_summary(ws, register, kernel)
                from tracework.render.export import (
                    report_title,  # nbconvert: only once a notebook ran
                )

                records = report_records(kernel, drift, report_title(executed, kernel))
                write_records(staging / "records.json", records)
                history_path = out_root / "history.json"
                entries = updated_history(read_history(history_path), records)
                lock = lock_file_sha256(ws)
                manifest = RenderManifest(
                    subject=subject.name,
                    url=subject.url,
                    commit=full,
                    notebook=f"notebooks/{name}.ipynb",
                    notebook_sha256=inputs.notebook_sha256,
                    register_path=f"registers/{name}.yaml",
                    register_sha256=inputs.register_sha256,
                    tracework=__version__,
                    lock_sha256=lock,
                    distribution_sha256=None if lock else distribution_sha256(),
                    parameters=parameters,
                    inputs_sha256=_key(inputs, ws, full, analysis_date),
                )
                write_manifest(staging / "manifest.json", manifest)
                # 4. diagrams, their assets, and the HTML
                from tracework.render.export import (
                    diagram_sources,
                    export_html,
                    mermaid_js,
                    report_js,
                )

                diagrams = diagram_sources(executed)
                for diagram_name, source in sorted(diagrams.items()):
                    write_atomic(staging / "diagrams" / f"{diagram_name}.mmd", source)
                if diagrams:
                    bundle = mermaid_js()
                    if bundle is None:
                        raise RenderError(
                            "the report has diagrams but the pinned Mermaid library is not "
                            "installed",
                            hint="run `npm ci` where package.json pins it (make does this)",
                        )
                    write_atomic(staging / "assets" / "mermaid.min.js", bundle.read_bytes())
                    write_atomic(staging / "assets" / "report.js", report_js().read_bytes())

                page = export_html(
                    executed,
                    records,
                    register,
                    manifest,
                    summary_html(records.checks, by_name=True),
                    entries,
                )
                write_atomic(staging / "report.html", page)
            except OSError as exc:  # a full disk, say: name the report's file, not a temporary
                raise _write_failed(exc, staging, shown) from None
            # 5. publish, then record the render in the report's history
            stage.swap()
            stage.drop_failed()
            with locked(history_path):
                entries = updated_history(read_history(history_path), records)
                try:
                    write_history(history_path, entries)
                except OSError as exc:
                    raise _write_failed(exc, staging, shown) from None
        except TraceworkError as exc:
            kept = _keep_failed(stage, ws.root)
            if kept is not None:
                where = (
                    "the previous good report is untouched"
                    if final.exists()
                    else "no report written"
                )
                exc.hint = "; ".join(h for h in (exc.hint, f"{kept}; {where}") if h)
            raise
        except (KeyboardInterrupt, SystemExit):  # stopped, not failed: nothing to diagnose
            stage.discard()
            raise
        except BaseException:
            _keep_failed(stage, ws.root)
            raise
    return RenderResult(name, full, final, records.checks, cleared)


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


def inputs_key(ws: Workspace, name: str, commit: str, analysis_date: str | None = None) -> str:
    """What a render depends on: notebook, register, the workspace's rubrics (marks are
    checked against them), commit, an analysis date given instead of the notebook's, and
    the tracework version.  Read from the files as they are now (a batch asks whether
    its last render is current); a render takes its own from its :class:`Inputs`."""
    register_path = ws.registers / f"{name}.yaml"
    captured = ""
    with suppress(TraceworkError):  # no register: the render says so; no capture to key
        captured = captures_key(ws, reg.load_data(register_path).sources.values(), commit)
    return _hashed_key(
        file_sha256(ws.notebooks / f"{name}.ipynb") or "",
        file_sha256(register_path) or "",
        rubrics_key(ws),
        commit,
        analysis_date,
        captured,
    )


def _key(inputs: Inputs, ws: Workspace, commit: str, analysis_date: str | None) -> str:
    return _hashed_key(
        inputs.notebook_sha256,
        inputs.register_sha256,
        inputs.rubrics_key,
        commit,
        analysis_date,
        captures_key(ws, inputs.register.sources.values(), commit),
    )


def captures_key(ws: Workspace, sources: Iterable[object], commit: str) -> str:
    """The captures a render may cite: for each capture source of the register, the
    manifest of the capture made at ``commit``, if any (a new one changes what the report
    shows).  Empty for a register without captures, so its key is what it always was."""
    names = sorted(
        {getattr(s, "capture", "") for s in sources if getattr(s, "kind", "") == "capture"}
    )
    return ";".join(
        f"{n}={file_sha256(ws.captures / n / commit[:12] / 'manifest.json') or '-'}" for n in names
    )


def _hashed_key(
    notebook: str,
    register: str,
    rubrics: str,
    commit: str,
    analysis_date: str | None,
    captured: str = "",
) -> str:
    parts = [notebook, register, commit, __version__, rubrics, analysis_date or ""]
    if captured:
        parts.append(captured)
    return sha256_hex("\n".join(parts).encode())


#: What a render writes into its folder: a ``failed-*`` folder holding anything else is
#: not one tracework kept, and is never replaced.
RENDER_FILES = frozenset(
    {"report.ipynb", "records.json", "manifest.json", "report.html", "diagrams", "assets"}
)


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
