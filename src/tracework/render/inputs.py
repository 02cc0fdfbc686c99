"""A render's first stage: what it reads, read, hashed and checked before a kernel starts.

:func:`prepare` reads the notebook, the register and the workspace's rubrics once each
(:class:`Inputs`), resolves the commit, checks the analysis date and the notebook, and
clears the outputs the notebook was saved with in the copy that runs (:class:`Plan`).
Every problem found here is bad input (exit 2), and no kernel has started.

:func:`inputs_key` is what a render depends on, hashed: a batch compares it with the
key in a report's manifest to skip a report that is current.  :func:`lock_file_sha256`
and :func:`distribution_sha256` pin the tracework that renders.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any, TypedDict

import tracework.register.store as reg
from tracework.errors import RenderError, TraceworkError, check_iso_date
from tracework.git.subjects import Subject, load_subject, open_mirror
from tracework.hashing import sha256_hex
from tracework.records.rubrics import load_rubric, rubric_names, rubrics_key
from tracework.register.models import GitSource, Register
from tracework.render.execution import Limits
from tracework.render.notebooks import (
    notebook_problems,
    parse_notebook,
    read_notebook_bytes,
    without_outputs,
)
from tracework.version import __version__
from tracework.workspace import Workspace, check_name


@dataclass(frozen=True)
class Inputs:
    """What a render reads, read and hashed before a kernel starts.

    The kernel executes these notebook bytes; the render's own stages use this register;
    the manifest records these hashes.  The notebook reads the register (``tw.open``)
    and the rubrics it marks against itself, and records.json says what it read (the
    register's SHA-256, each marked rubric's digest): a render whose notebook read other
    bytes fails (:func:`tracework.render.pipeline.check`), so an edit saved during a
    render is never recorded as what ran, and the next ``rerender`` sees it.  (A sealed
    copy handed to the kernel would need a channel into a kernel booted before the
    render knew its inputs; the notebook names its register itself.)
    """

    notebook: Any  # nbformat.NotebookNode, parsed from the hashed bytes
    notebook_sha256: str
    register: Register
    register_sha256: str
    rubrics: dict[str, str]  # every rubric of the workspace: name → content digest
    rubrics_key: str


@dataclass(frozen=True)
class Plan:
    """A render ready to run: its inputs, the commit it runs at, and what runs."""

    name: str
    inputs: Inputs
    subject: Subject
    commit: str  # the full id
    analysis_date: str | None
    notebook: Any  # nbformat.NotebookNode: the copy that runs, saved outputs cleared
    cleared: int  # code cells whose saved outputs were cleared in that copy
    parameters: Parameters  # what papermill injects (and the manifest records)
    limits: Limits


class Parameters(TypedDict, total=False):
    """What papermill injects into the notebook's parameters cell."""

    register: str
    commit: str
    mode: str
    analysis_date: str


def prepare(
    ws: Workspace, name: str, commit: str | None = None, analysis_date: str | None = None
) -> Plan:
    """Read and check everything report ``name`` needs at ``commit`` (default: the
    register's pin), before any kernel starts; each input is read once."""
    check_name(name, "report")
    inputs = read_inputs(ws, name)
    sources = [s for s in inputs.register.sources.values() if isinstance(s, GitSource)]
    if not sources:
        raise TraceworkError(f"register {name} has no git source to render against")
    subject = load_subject(ws, sources[0].subject)
    full = open_mirror(ws, subject.name).resolve_commit(commit or sources[0].commit)
    if analysis_date is not None:
        check_iso_date(analysis_date, "--analysis-date")
    problems = notebook_problems(inputs.notebook)
    if problems:  # bad input, like every problem found before a kernel starts: exit 2
        notebook = ws.notebooks / f"{name}.ipynb"
        raise RenderError(f"{notebook.relative_to(ws.root)}: " + "; ".join(problems))
    runnable, cleared = without_outputs(inputs.notebook)
    parameters: Parameters = {"register": name, "commit": full, "mode": "render"}
    if analysis_date is not None:
        parameters["analysis_date"] = analysis_date
    return Plan(
        name, inputs, subject, full, analysis_date, runnable, cleared, parameters, Limits.of(ws)
    )


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


# -- what a render depends on ---------------------------------------------------------


def inputs_key(ws: Workspace, name: str, commit: str, analysis_date: str | None = None) -> str:
    """What a render depends on: notebook, register, the workspace's rubrics (marks are
    checked against them), commit, an analysis date given instead of the notebook's, and
    the tracework version.  Read from the files as they are now (a batch asks whether
    its last render is current); a render takes its own from its :class:`Plan`
    (:func:`plan_key`)."""
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


def plan_key(ws: Workspace, plan: Plan) -> str:
    """:func:`inputs_key` of the inputs ``plan`` read (not the files as they are now)."""
    inputs = plan.inputs
    return _hashed_key(
        inputs.notebook_sha256,
        inputs.register_sha256,
        inputs.rubrics_key,
        plan.commit,
        plan.analysis_date,
        captures_key(ws, inputs.register.sources.values(), plan.commit),
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
    try:
        record = distribution("tracework").read_text("RECORD")
    except PackageNotFoundError:
        return None
    return sha256_hex(record.encode("utf-8")) if record else None


def file_sha256(path: Path) -> str | None:
    """SHA-256 of the file at ``path``; None when there is none."""
    return sha256_hex(path.read_bytes()) if path.is_file() else None
