"""A capture on disk: ``captures/NAME/<commit12>/``, its typed models, reading and verifying.

    results.json            the scripted cases and tables, with each case's status
    model-arm.json          the model-driven cases and tables, when there are any
    transcripts/CASE.json   what each case recorded, in order
    environment.txt         the frozen package list (and the Python version)
    harness.py              the exact harness that ran
    log.txt                 the harness's stdout and stderr (normalised)
    manifest.json           provenance and the SHA-256 of every file above

Every JSON file is canonical: sorted keys, two-space indent, UTF-8, final newline.
Nothing here holds a time or a host path, so identical inputs give identical bytes.
A report cites a capture through :func:`load_capture`, which refuses a folder whose
files no longer match its manifest (:func:`verify_capture` says which).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracework.capture.config import capture_name
from tracework.capture.errors import CaptureDamaged, CaptureError, CaptureMissing
from tracework.errors import validation_problem
from tracework.hashing import sha256_file, sha256_hex
from tracework.workspace import Workspace

Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Arm = Literal["scripted", "model-driven"]
Status = Literal["PASS", "FAIL", "UNKNOWN"]
M = TypeVar("M", bound=BaseModel)


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CaseCheck(Frozen):
    """One criterion of a case, judged from what the harness recorded."""

    criterion: str
    holds: bool | None = Field(description="None: the fixture cannot show it")
    observed: str


class CaseResult(Frozen):
    """A case: its question, its status and why, and where its transcript is."""

    id: str
    question: str
    arm: Arm
    status: Status | None = Field(description="None for a model-driven case: never graded")
    criterion: str | None = Field(description="the stated criterion (None when from checks)")
    observed: str | None
    checks: tuple[CaseCheck, ...] = Field(
        (), description="FAIL if any fails, PASS if all hold, UNKNOWN otherwise"
    )
    transcript: str | None = Field(description="path in the capture folder, when recorded")


class ResultTable(Frozen):
    """A results table the harness computed from its runs."""

    name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    notes: str | None


class Rule(Frozen):
    """A normalisation rule applied to the capture, in order."""

    rule: str
    placeholder: str
    origin: Literal["built-in", "harness"]


class CaptureResults(Frozen):
    """``results.json`` (the scripted arm) or ``model-arm.json`` (the model-driven one)."""

    format: Literal[1] = 1
    capture: str
    subject: str
    commit: str
    arm: Arm
    cases: tuple[CaseResult, ...]
    tables: tuple[ResultTable, ...]
    counts: dict[str, int] = Field(description="scripted statuses; empty for the model arm")
    normalisation: tuple[Rule, ...]


class ManifestFile(Frozen):
    path: str
    sha256: Sha256
    size: int


class EnvironmentInfo(Frozen):
    key: Sha256 = Field(description="the cached environment's key (what it was built from)")
    sha256: Sha256 = Field(description="SHA-256 of environment.txt")
    python: str
    lock: Literal["uv"] | None


class LimitsInForce(Frozen):
    """The limits the harness ran under, and how each was enforced on this machine."""

    memory_mib: int = Field(description="address space of each process, MiB")
    processes: int
    cpu_seconds: int
    output_mib: int
    tmp_mib: int
    tmp_files: int | None = Field(
        description="files the private /tmp could hold; None where the backend could not "
        "bound them (bubblewrap run by a user who is not root)"
    )
    control_group: Literal["v1", "v2"] | None = Field(
        description="the control group that bounded the sandbox as a whole (memory_mib for "
        "all its processes together, the /tmp's pages and files included, and processes), "
        "or None where the machine delegates none and each process alone was bounded"
    )


class CaptureManifest(Frozen):
    """``manifest.json``: what ran, against what, how isolated, and every file's hash."""

    format: Literal[1] = 1
    capture: str
    subject: str
    commit: str
    commit_date: str
    register_name: str = Field(alias="register")
    verified_files: dict[str, Sha256] = Field(
        description="the register's files of this subject, hashed in the exported tree "
        "before the harness ran (at the register's pin, each identical to the register)"
    )
    changed_since_pin: tuple[str, ...] = Field(
        (),
        description="at another commit than the register's pin: the registered files that "
        "differ there (the code the capture ran is not the code quoted)",
    )
    harness_sha256: Sha256
    config_sha256: Sha256
    environment: EnvironmentInfo
    isolation: Literal["bwrap", "unshare"]
    limits: LimitsInForce | None = Field(
        None, description="the limits in force (None in a capture made before they were kept)"
    )
    identical_runs: int = Field(description="runs whose scripted files were byte-identical")
    tracework: str
    files: tuple[ManifestFile, ...]


class Capture(Frozen):
    """A capture as a report cites it: verified against its manifest when loaded."""

    name: str
    commit: str
    folder: str = Field(description="relative to the workspace root")
    results: CaptureResults
    model_arm: CaptureResults | None
    manifest: CaptureManifest

    def file(self, path: str) -> ManifestFile:
        for entry in self.manifest.files:
            if entry.path == path:
                return entry
        raise CaptureError(f"capture {self.name} at {self.commit[:12]} has no file {path}")


class FileState(Frozen):
    path: str
    state: Literal["verified", "changed", "missing", "unlisted"]
    expected: str | None
    actual: str | None


class Verification(Frozen):
    folder: str
    files: tuple[FileState, ...]

    @property
    def ok(self) -> bool:
        return all(f.state == "verified" for f in self.files)


def canonical(data: Any) -> bytes:
    """JSON as every capture file is written: sorted keys, two-space indent, UTF-8,
    a final newline (so files diff by line and hash the same everywhere)."""
    text = json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, separators=(",", ": "))
    return (text + "\n").encode("utf-8")


def manifest_files(files: dict[str, bytes]) -> tuple[ManifestFile, ...]:
    return tuple(
        ManifestFile(path=path, sha256=sha256_hex(data), size=len(data))
        for path, data in sorted(files.items())
    )


def capture_folder(ws: Workspace, name: str, commit: str) -> Path:
    """``captures/NAME/<commit12>`` (a full id or its first 12 digits)."""
    if len(commit) < 12 or not all(c in "0123456789abcdef" for c in commit):
        raise CaptureError(f"'{commit}' is not a commit id: give at least its first 12 hex digits")
    return ws.captures / capture_name(name) / commit[:12]


def captured_commits(ws: Workspace, name: str) -> set[str]:
    """The commits (their first 12 digits, as the folders are named) capture ``name``
    was made at."""
    root = ws.captures / capture_name(name)
    if not root.is_dir():
        return set()
    return {p.name for p in root.iterdir() if (p / "manifest.json").is_file()}


def verify_capture(folder: Path) -> Verification:
    """Each file of the capture folder against its manifest: ``verified``, ``changed``,
    ``missing``, or ``unlisted`` (in the folder, not in the manifest)."""
    manifest = _read_model(folder / "manifest.json", CaptureManifest, Path(folder.name))
    states = []
    listed = set()
    for entry in manifest.files:
        listed.add(entry.path)
        path = folder / entry.path
        if not path.is_file() or path.is_symlink():
            states.append(
                FileState(path=entry.path, state="missing", expected=entry.sha256, actual=None)
            )
            continue
        actual = sha256_file(path)
        state = "verified" if actual == entry.sha256 else "changed"
        states.append(FileState(path=entry.path, state=state, expected=entry.sha256, actual=actual))
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if rel != "manifest.json" and rel not in listed and not path.is_dir():
            states.append(FileState(path=rel, state="unlisted", expected=None, actual=None))
    return Verification(folder=str(folder), files=tuple(states))


def load_capture(ws: Workspace, name: str, commit: str) -> Capture:
    """The capture of ``name`` at ``commit``, verified file by file against its manifest;
    :class:`CaptureDamaged` names the first file that does not match."""
    folder = capture_folder(ws, name, commit)
    rel = folder.relative_to(ws.root).as_posix()
    if not (folder / "manifest.json").is_file():
        raise CaptureMissing(
            f"no capture {name} at {commit[:12]} ({rel}/manifest.json does not exist)",
            hint=f"run `tracework capture {name} --commit {commit[:12]}`",
        )
    verification = verify_capture(folder)
    bad = [f for f in verification.files if f.state != "verified"]
    if bad:
        raise CaptureDamaged(
            f"{rel}: {bad[0].path} is {bad[0].state}"
            + (f" (and {len(bad) - 1} more files)" if len(bad) > 1 else ""),
            hint="the capture no longer matches its manifest; run "
            f"`tracework capture {name}` again",
        )
    manifest = _read_model(folder / "manifest.json", CaptureManifest, Path(rel))
    if not manifest.commit.startswith(commit):
        raise CaptureDamaged(f"{rel}: its manifest names commit {manifest.commit}")
    results = _read_model(folder / "results.json", CaptureResults, Path(rel))
    arm = folder / "model-arm.json"
    model_arm = _read_model(arm, CaptureResults, Path(rel)) if arm.is_file() else None
    return Capture(
        name=name,
        commit=manifest.commit,
        folder=rel,
        results=results,
        model_arm=model_arm,
        manifest=manifest,
    )


def _read_model(path: Path, model: type[M], folder: Path) -> M:
    """A capture file as its model, or one message naming the file and the field."""
    try:
        return model.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise CaptureDamaged(f"{folder}: {path.name} is missing") from None
    except ValidationError as exc:
        raise CaptureDamaged(f"{folder}/{path.name}: {validation_problem(exc)}") from None
