"""``tracework author``: the notebook run in author mode, headless, into its draft folder.

For analysts who write cells in an editor or generate them: the same run JupyterLab
would make by hand (new quotes are added to the register, ``wb.done()`` writes
``records.json``), executed by papermill within the render's limits, with the executed
copy written to ``reports/NAME/draft/report.ipynb`` beside the records and diagrams the
workbench writes there.  The notebook itself is never written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from pydantic import ValidationError

import tracework.register.store as reg
from tracework.errors import RenderError, TraceworkError, validation_problem
from tracework.fsio import locked
from tracework.git.subjects import load_subject, open_mirror
from tracework.readers import DataError
from tracework.records.artefacts import CheckSummary, RecordEntry, as_stored, read_kernel_records
from tracework.register.models import GitSource
from tracework.render.execution import Limits, execute
from tracework.render.notebooks import (
    notebook_problems,
    parse_notebook,
    read_notebook_bytes,
    without_outputs,
)
from tracework.workspace import Workspace, check_name


@dataclass(frozen=True)
class AuthorResult:
    """What an author run left in the draft folder, and what its checks said."""

    name: str
    commit: str
    at_pin: bool
    directory: Path
    records: list[RecordEntry]
    summary: CheckSummary
    cleared: int  # code cells whose saved outputs were cleared in the run's copy


def author(ws: Workspace, name: str, commit: str | None = None) -> AuthorResult:
    """Run ``notebooks/NAME.ipynb`` in author mode at ``commit`` (default: the pin)."""
    check_name(name, "report")
    notebook = ws.notebooks / f"{name}.ipynb"
    nb = parse_notebook(read_notebook_bytes(notebook), notebook)
    problems = notebook_problems(nb)
    if problems:
        raise RenderError(f"{notebook.relative_to(ws.root)}: " + "; ".join(problems))
    register = reg.load(ws.registers / f"{name}.yaml")
    sources = [s for s in register.sources.values() if isinstance(s, GitSource)]
    if not sources:
        raise TraceworkError(
            f"register {name} has no git source to author against",
            hint="add one with `tracework register add-source`",
        )
    subject = load_subject(ws, sources[0].subject)
    full = open_mirror(ws, subject.name).resolve_commit(commit or sources[0].commit)
    runnable, cleared = without_outputs(nb)
    parameters = {"register": name, "commit": full, "mode": "author"}
    draft = ws.reports / name / "draft"
    records_file = draft / "records.json"
    with locked(draft):
        records_file.unlink(missing_ok=True)  # what an earlier run left is not this run's
        draft.mkdir(parents=True, exist_ok=True)
        execute(runnable, draft / "report.ipynb", parameters, ws.root, Limits.of(ws))
        try:
            records = read_kernel_records(records_file)
        except FileNotFoundError:
            raise RenderError(
                f"{notebook.name} never called wb.done()", hint="end the notebook with wb.done()"
            ) from None
        except DataError as exc:
            raise RenderError(f"{records_file.relative_to(ws.root)}: {exc}") from None
        except ValidationError as exc:
            raise RenderError(
                f"{records_file.relative_to(ws.root)} is not tracework's records.json "
                f"({validation_problem(exc)})",
                hint="leave records.json to wb.done(), run by the tracework kernel",
            ) from None
    return AuthorResult(
        name, full, full == sources[0].commit, draft, records.records, records.checks, cleared
    )


def records_text(result: AuthorResult) -> list[str]:
    """One line per record: its id, kind and label, and what needs re-review."""
    lines = []
    for record in result.records:
        line = f"{record.id}  {record.kind}  {record.label}".rstrip()
        if record.needs_review:
            line += "  (needs re-review: " + ", ".join(record.needs_review) + ")"
        lines.append(line)
    return lines


class AuthorJson(TypedDict):
    """``tracework author --json``."""

    ok: bool
    name: str
    commit: str
    directory: str
    records: list[Any]  # each record as records.json holds it (its schema: records)
    checks: Any  # the check summary as records.json holds it (its schema: check-summary)


def as_json(result: AuthorResult, root: Path) -> AuthorJson:
    """``tracework author --json``: where the draft is, the records and the checks, each
    as records.json holds it."""
    return {
        "ok": result.summary.ok,
        "name": result.name,
        "commit": result.commit,
        "directory": result.directory.relative_to(root).as_posix(),
        "records": [as_stored(record) for record in result.records],
        "checks": as_stored(result.summary),
    }
