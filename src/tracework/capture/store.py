"""A capture on disk: ``captures/NAME/<commit12>/``, its typed models, reading and verifying.

    results.json            the scripted cases and tables, with each case's status
    model-arm.json          the model-driven cases and tables, when there are any
    model-arm/exchanges.jsonl  with [model]: every request to the endpoint and its reply
    transcripts/CASE.json   what each case recorded, in order
    environment.txt         the hashed freeze: the Python version, each distribution
                            with the SHA-256 of its file
    extra.lock              a copy of captures/NAME.lock, when the harness's extra uses one
    harness.py              the exact harness that ran
    log.txt                 the harness's stdout and stderr (normalised)
    manifest.json           provenance and the SHA-256 of every file above

Every JSON file is canonical: sorted keys, two-space indent, UTF-8, final newline.
Nothing here holds a time or a host path, so identical inputs give identical bytes.
A report cites a capture through :func:`load_capture`, which refuses a folder whose
files no longer match its manifest (:func:`verify_capture` says which).
"""

# No ``from __future__ import annotations`` here: pydantic would evaluate each field's
# annotation from its string (a compile and an eval apiece), and building these models
# is most of what a capture imports before its harness runs.

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


class TrialResult(Frozen):
    """One trial of a model-driven case run by ``capture.trials``: never graded."""

    condition: str | None = Field(description="None: the case's one unnamed condition")
    number: int = Field(description="1 to [model] trials, per condition")
    observed: str
    criterion: str | None
    exchanges: tuple[int, ...] = Field(
        (), description="ids of the exchanges sent during it (model-arm/exchanges.jsonl)"
    )


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
    trials: tuple[TrialResult, ...] = Field(
        (), description="a model-driven case run as trials: each, in the order run"
    )
    exchanges: tuple[int, ...] = Field(
        (),
        description="ids of the model exchanges sent in the case outside a trial "
        "(model-arm/exchanges.jsonl)",
    )


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
    """One file of the capture folder."""

    path: str = Field(description="its path in the capture folder")
    sha256: Sha256 = Field(description="SHA-256 of its bytes")
    size: int = Field(description="its size in bytes")


class PythonProvenance(Frozen):
    """The base Python the environment was made from (the host's, found by uv)."""

    version: str = Field(description="its exact version, e.g. 3.11.7")
    path: str = Field(
        description="its path on the machine that built the environment, a path under the "
        "home folder written ~/…"
    )
    sha256: Sha256 = Field(
        description="SHA-256 of the interpreter's executable: the file its path resolves "
        'to, links followed (`sha256sum "$(realpath PATH)"`)'
    )
    library: str | None = Field(
        None,
        description="a shared build's libpython (the executable names it; it holds most of "
        "the interpreter's code), as found on that machine; None for a static build",
    )
    library_sha256: Sha256 | None = Field(
        None, description="SHA-256 of that library (the file its path resolves to)"
    )


class LockProvenance(Frozen):
    """The subject's own uv.lock, and what of it the environment installs."""

    sha256: Sha256 = Field(
        description="SHA-256 of uv.lock at the commit (`git show COMMIT:uv.lock | sha256sum`)"
    )
    project_sha256: Sha256 = Field(description="SHA-256 of pyproject.toml at the commit")
    groups: tuple[str, ...] = Field(
        description="the dependency groups installed, by name: the project's default ones "
        "(unless no_default_groups) and those the declaration names"
    )
    default_groups: tuple[str, ...] = Field(
        description="the project's default groups: [tool.uv] default-groups, else dev when "
        "the project has that group"
    )
    no_default_groups: bool = Field(description="the declaration left the default groups out")
    extras: tuple[str, ...] = Field(description="the project's extras installed, by name")
    command: str = Field(
        description="the uv command that installed it, as run in the build's sandbox (the "
        "tree at /capture/tree, the environment at /capture/env)"
    )


class ExtraLockProvenance(Frozen):
    """captures/NAME.lock: the harness's own packages, as `capture env` resolved them."""

    path: str = Field(description="where it is in the workspace: captures/NAME.lock")
    sha256: Sha256 = Field(
        description="SHA-256 of the file (its copy in the capture folder is extra.lock)"
    )
    resolved_from: tuple[str, ...] = Field(
        description="the declaration's extra entries it was resolved from"
    )


class Distribution(Frozen):
    """One distribution installed in the environment, and the file it came from."""

    name: str = Field(description="its name, normalised (PEP 503)")
    version: str = Field(description="its version, as its metadata gives it")
    installed_by: Literal["lock", "requirements", "extra"] | None = Field(
        description="what installed it: the subject's lock, the declaration's requirements, "
        "or the harness's extra (pinned with hashes, or captures/NAME.lock); None when none "
        "of them names it at this version"
    )
    built_from_source: bool = Field(
        description="uv built it in the build's sandbox from an sdist (or a folder or "
        "repository the lock names) instead of installing a wheel"
    )
    file: str | None = Field(
        description="the name of the distribution file installed, when the lock tells it: "
        "its sdist when uv built it, else the one wheel whose tags and build number are "
        "those of the installed WHEEL file"
    )
    sha256: Sha256 | None = Field(
        description="SHA-256 of that file, as the lock gives it (or as a pin gives it, when "
        "the pin gives one hash); uv refuses a file whose bytes do not hash to it. None "
        "when the file cannot be told exactly (a pin giving several hashes, a source tree)"
    )
    hashes: tuple[Sha256, ...] = Field(
        description="every SHA-256 the lock or the pin accepts for this version (one per "
        "file: uv checked the file it installed against these)"
    )


class EnvironmentProvenance(Frozen):
    """How the environment was made and what it holds, recorded on the host when it was
    built (its Python never started there)."""

    uv: str = Field(description="uv's version (the uv that came with tracework)")
    python: PythonProvenance = Field(description="the base Python the environment was made from")
    lock: LockProvenance | None = Field(
        description='the subject\'s lock (lock = "uv"), or None for requirements pins'
    )
    extra_lock: ExtraLockProvenance | None = Field(
        None, description="captures/NAME.lock, when the harness's extra is resolved there"
    )
    distributions: tuple[Distribution, ...] = Field(
        description="every distribution installed, sorted by name; environment.txt is the "
        "same list as a requirements file with hashes"
    )


class EnvironmentInfo(Frozen):
    """The environment the harness ran in: its key, its hashed freeze, its provenance."""

    key: Sha256 = Field(description="the cached environment's key (what it was built from)")
    sha256: Sha256 = Field(
        description="SHA-256 of environment.txt, the hashed freeze: `# python X.Y.Z`, then "
        "`name==version --hash=sha256:…` of each distribution installed"
    )
    python: str = Field(description="the base Python's exact version")
    lock: Literal["uv"] | None = Field(
        description="\"uv\": the subject's own uv.lock; None: the declaration's requirements"
    )
    provenance: EnvironmentProvenance | None = Field(
        None,
        description="uv, the Python, the lock and every distribution (None in a capture "
        "made before tracework kept them)",
    )


class LimitsInForce(Frozen):
    """The limits the harness ran under, and how each was enforced on this machine."""

    memory_mib: int = Field(description="address space of each process, MiB")
    processes: int = Field(description="processes and threads the harness could run at once")
    cpu_seconds: int = Field(description="CPU time of each process, and the wall-clock timeout")
    output_mib: int = Field(description="the log and the results, each, MiB")
    tmp_mib: int = Field(description="the private /tmp and /dev/shm, each, MiB")
    tmp_files: int | None = Field(
        description="files the private /tmp could hold; None where the backend could not "
        "bound them (bubblewrap run by a user who is not root)"
    )
    control_group: Literal["v1", "v2"] | None = Field(
        description="the control group that bounded the sandbox as a whole (memory_mib for "
        "all its processes together, the /tmp's pages and files included, and processes), "
        "or None where the machine delegates none and each process alone was bounded"
    )


class ModelReply(Frozen):
    """What the endpoint replied to one ``[model] info`` request, before the runs."""

    path: str = Field(description="the path requested with GET, as declared")
    status: int = Field(description="the reply's HTTP status")
    text: str | None = Field(description="the reply's body, when it is UTF-8")
    base64: str | None = Field(description="the reply's body otherwise")
    sha256: Sha256 = Field(description="SHA-256 of the body's bytes")


class ModelArm(Frozen):
    """The model-driven arm's endpoint: what it was, what it said, what reached it."""

    arm: Literal["model-driven"] = Field(
        "model-driven", description="always model-driven: never graded, never byte-compared"
    )
    endpoint: str = Field(description="the one endpoint the sandbox could reach, as declared")
    trials: int = Field(description="trials of each condition")
    connections: int = Field(description="connections it could have open at once")
    info: tuple[ModelReply, ...] = Field(description="its replies to [model] info, in order")
    exchanges: int = Field(description="requests kept in model-arm/exchanges.jsonl (run 1)")


class CaptureManifest(Frozen):
    """``manifest.json``: what ran, against what, how isolated, and every file's hash."""

    format: Literal[1] = Field(1, description="the manifest's format")
    capture: str = Field(description="the capture's name (captures/NAME.toml)")
    subject: str = Field(description="the subject's name (sources/NAME.toml)")
    commit: str = Field(description="the subject's commit the harness ran against, full 40-hex")
    commit_date: str = Field(description="that commit's committer date (ISO 8601)")
    register_name: str = Field(
        alias="register", description="the register whose files were hash-checked first"
    )
    verified_files: dict[str, Sha256] = Field(
        description="the register's files of this subject, hashed in the exported tree "
        "before the harness ran (at the register's pin, each identical to the register)"
    )
    changed_since_pin: tuple[str, ...] = Field(
        (),
        description="at another commit than the register's pin: the registered files that "
        "differ there (the code the capture ran is not the code quoted)",
    )
    harness_sha256: Sha256 = Field(description="SHA-256 of the harness (harness.py)")
    config_sha256: Sha256 = Field(description="SHA-256 of the declaration, captures/NAME.toml")
    environment: EnvironmentInfo = Field(description="the environment the harness ran in")
    isolation: Literal["bwrap", "unshare"] = Field(description="the sandbox that isolated it")
    limits: LimitsInForce | None = Field(
        None, description="the limits in force (None in a capture made before they were kept)"
    )
    identical_runs: int = Field(description="runs whose scripted files were byte-identical")
    model: ModelArm | None = Field(
        None, description="the model-driven arm's endpoint, with [model]; else None"
    )
    tracework: str = Field(description="the version of tracework that made the capture")
    files: tuple[ManifestFile, ...] = Field(description="every file of the folder but this one")


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
