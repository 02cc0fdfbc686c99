"""``tracework render``: the stages of one report, in order.

1. validate the inputs before any kernel starts (notebook, register, commit, mode);
2. execute the notebook with papermill in render mode, in a staging folder;
3. take records.json from the executed notebook; write manifest.json;
4. export report.html with nbconvert and the tracework template;
5. replace ``reports/NAME/<commit12>/`` with the staging folder only when all
   succeeded, so a failed render leaves the previous good report in place.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__
from . import register as reg
from .errors import RenderError, TraceworkError, check_iso_date
from .execution import execute, extract_records, file_sha256, notebook_problems, read_notebook
from .fsio import held, locked, replace_dir, staging_dir, sweep_staging, write_atomic
from .hashing import sha256_hex
from .history import drift_summary, read_history, updated_history
from .models import GitSource
from .rubrics import load_rubric, rubric_names, rubrics_key
from .subjects import load_subject, open_mirror
from .views import summary_html
from .workspace import Workspace, check_name


@dataclass(frozen=True)
class RenderResult:
    """Where a report went and what its checks said."""

    name: str
    commit: str
    directory: Path
    summary: dict[str, Any]


def lock_file_sha256(ws: Workspace) -> str | None:
    """SHA-256 of the lock file pinning the environment (the workspace's, else ours)."""
    for candidate in (ws.root / "uv.lock", Path(__file__).resolve().parents[2] / "uv.lock"):
        digest = file_sha256(candidate)
        if digest:
            return digest
    return None


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render(
    ws: Workspace,
    name: str,
    commit: str | None = None,
    analysis_date: str | None = None,
    km: Any = None,
) -> RenderResult:
    """Render report ``name`` at ``commit`` (default: the register's pin)."""
    # 1. validate everything before a kernel starts
    check_name(name, "report")
    notebook = ws.notebooks / f"{name}.ipynb"
    register_path = ws.registers / f"{name}.yaml"
    nb = read_notebook(notebook)
    register = reg.load(register_path)
    sources = [s for s in register.sources.values() if isinstance(s, GitSource)]
    if not sources:
        raise TraceworkError(f"register {name} has no git source to render against")
    subject = load_subject(ws, sources[0].subject)
    full = open_mirror(ws, subject.name).resolve_commit(commit or sources[0].commit)
    if analysis_date is not None:
        check_iso_date(analysis_date, "--analysis-date")
    problems = notebook_problems(nb)
    if problems:  # bad input, like every problem found before a kernel starts: exit 2
        raise RenderError(f"{notebook.relative_to(ws.root)}: " + "; ".join(problems))
    for rubric in rubric_names(ws):  # render inputs all: a broken one is named now
        load_rubric(ws, rubric)
    parameters: dict[str, Any] = {"register": name, "commit": full, "mode": "render"}
    if analysis_date is not None:
        parameters["analysis_date"] = analysis_date

    out_root = ws.reports / name
    read_history(out_root / "history.json")  # a broken history stops us before a kernel does
    out_root.mkdir(parents=True, exist_ok=True)
    final = out_root / full[:12]
    sweep_staging(out_root)  # folders a killed render left behind
    staging = staging_dir(out_root, full[:12])
    with held(staging):  # until the folder is swapped in, kept or removed
        try:
            # 2. execute
            executed = execute(notebook, staging / "report.ipynb", parameters, cwd=ws.root, km=km)
            write_atomic(
                staging / "report.ipynb",
                json.dumps(executed, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
            )
            # 3. records and manifest
            records = extract_records(executed)
            if records is None:
                raise RenderError(
                    f"{notebook.name} never called wb.done()",
                    hint="end the notebook with wb.done()",
                )
            records["drift"] = drift_summary(ws, register, records)
            from .rendering import report_title  # nbconvert: only once a notebook ran

            records["title"] = report_title(executed, records)
            write_atomic(staging / "records.json", _dump(records))
            history_path = out_root / "history.json"
            entries = updated_history(read_history(history_path), records)
            manifest = {
                "subject": subject.name,
                "url": subject.url,
                "commit": full,
                "notebook": f"notebooks/{name}.ipynb",
                "notebook_sha256": file_sha256(notebook),
                "register": f"registers/{name}.yaml",
                "register_sha256": file_sha256(register_path),
                "tracework": __version__,
                "lock_sha256": lock_file_sha256(ws),
                "parameters": parameters,
                "inputs_sha256": inputs_key(ws, name, full, analysis_date),
            }
            write_atomic(staging / "manifest.json", _dump(manifest))
            # 4. diagrams, their assets, and the HTML
            from .rendering import diagram_sources, export_html, mermaid_js, report_js

            diagrams = diagram_sources(executed)
            for diagram_name, source in sorted(diagrams.items()):
                write_atomic(staging / "diagrams" / f"{diagram_name}.mmd", source)
            if diagrams:
                bundle = mermaid_js(ws.root)
                if bundle is None:
                    raise RenderError(
                        "the report has diagrams but the pinned Mermaid library is not installed",
                        hint="run `npm ci` where package.json pins it (make does this)",
                    )
                write_atomic(staging / "assets" / "mermaid.min.js", bundle.read_bytes())
                write_atomic(staging / "assets" / "report.js", report_js().read_bytes())

            page = export_html(
                executed, records, register, manifest, summary_html(records["checks"]), entries
            )
            write_atomic(staging / "report.html", page)
            # 5. publish, then record the render in the report's history
            with locked(final):
                replace_dir(staging, final)
            with locked(history_path):
                entries = updated_history(read_history(history_path), records)
                write_atomic(history_path, _dump(entries))
        except TraceworkError as exc:
            failed = out_root / f"failed-{full[:12]}"
            if _keep_failed(staging, failed):
                exc.hint = f"the executed notebook is kept in {failed.relative_to(ws.root)}/; " + (
                    "the previous good report is untouched"
                    if final.exists()
                    else "no report written"
                )
            raise
        except (KeyboardInterrupt, SystemExit):  # stopped, not failed: nothing to diagnose
            shutil.rmtree(staging, ignore_errors=True)
            raise
        except BaseException:
            _keep_failed(staging, out_root / f"failed-{full[:12]}")
            raise
    return RenderResult(name, full, final, records["checks"])


def inputs_key(ws: Workspace, name: str, commit: str, analysis_date: str | None = None) -> str:
    """What a render depends on: notebook, register, the workspace's rubrics (marks are
    checked against them), commit, an analysis date given instead of the notebook's, and
    the tracework version."""
    parts = [
        file_sha256(ws.notebooks / f"{name}.ipynb") or "",
        file_sha256(ws.registers / f"{name}.yaml") or "",
        commit,
        __version__,
        rubrics_key(ws),
        analysis_date or "",
    ]
    return sha256_hex("\n".join(parts).encode())


def _keep_failed(staging: Path, target: Path) -> bool:
    """Keep a failed run's notebook for diagnosis, beside (never over) the good report."""
    if not staging.exists():
        return False
    if (staging / "report.ipynb").exists():
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
        return True
    shutil.rmtree(staging, ignore_errors=True)
    return False
