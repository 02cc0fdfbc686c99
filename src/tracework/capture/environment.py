"""The capture's environment: the subject's own locked dependencies, built in isolation.

``tracework capture env NAME`` builds it (or finds it built) and is the only step of a
capture that may use the network, to download packages from the registry.  It is
kept in the user's cache, keyed by the SHA-256 of what it is built from — the lock and
the project file (or the requirement pins), the groups and extras asked of the lock,
the extra packages (and ``captures/NAME.lock``), the packages opted in from outside
the registry, the registry, the interpreter's version, path and executable's hash, and
uv's version — so a second capture, in any workspace, installs nothing.

- ``lock = "uv"``: ``uv sync --frozen`` of the exported tree, the field's convention,
  default groups included, after every package's source is judged and every group and
  extra named is checked against the project (:mod:`.lock`);
- ``requirements = [...]``: ``uv pip install --require-hashes`` of exact pins;
- ``extra = [...]``: then the harness's own packages (a fake model library, say):
  pinned with hashes, installed as given; as exact versions, resolved against what is
  installed and written to ``captures/NAME.lock`` (:mod:`.extralock`), which later
  builds install as written.

No interpreter of the environment, and no build backend, ever starts on the host: uv
runs inside the build's sandbox (:mod:`.build`), with the registry as its only way
out, and the environment is sealed when it is done (:mod:`.seal`).  Before every use
— each capture, and ``capture env`` finding it built — it is checked against its
seal, and a changed file refuses the capture, naming the path.  What it holds is
recorded when it is built (:mod:`.provenance`), on the host, without starting the
environment's Python and without following a link: ``provenance.json`` (uv, the
Python, the lock, the groups and extras, every distribution with the SHA-256 of its
file) and ``environment.txt`` (the same list as a hashed requirements file).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import tracework.capture.isolation as isolation
from tracework.capture import seal
from tracework.capture.build import BuildPlan, build, sync_command
from tracework.capture.cache import cache_folder
from tracework.capture.config import CaptureConfig
from tracework.capture.envtree import remove
from tracework.capture.errors import CaptureConfigError, EnvironmentMissing
from tracework.capture.extralock import (
    ExtraLock,
    conflict,
    declared,
    lock_path,
    parse_pylock,
    read_extra_lock,
    render,
    split,
    stale,
)
from tracework.capture.interpreter import (
    Interpreter,
    find_interpreter,
    recorded_interpreter,
    uv_version,
)
from tracework.capture.lock import LockFiles, locked_files, plan_lock, read_lock, select
from tracework.capture.provenance import (
    Pin,
    distributions,
    hashed_freeze,
    installed,
    interpreter_library,
    interpreter_sha256,
    pins_of,
)
from tracework.capture.registry import Registry
from tracework.capture.store import (
    EnvironmentProvenance,
    ExtraLockProvenance,
    LockProvenance,
    PythonProvenance,
)
from tracework.fsio import locked, write_atomic
from tracework.hashing import sha256_hex

#: Bump when the way environments are built changes: every key changes with it.
FORMAT = 3


@dataclass(frozen=True)
class Environment:
    """A built environment: where it is, what is in it, and whether it was built now."""

    key: str
    folder: Path
    frozen: str
    interpreter: Interpreter
    built_now: bool
    provenance: EnvironmentProvenance
    #: ``captures/NAME.lock`` as this environment installs it, when extra is resolved
    extra_lock: ExtraLock | None = None
    #: what ``capture env`` did with ``captures/NAME.lock`` (resolved it, and why)
    extra_note: str | None = None

    @property
    def venv(self) -> Path:
        return self.folder / "venv"

    @property
    def sha256(self) -> str:
        """SHA-256 of ``environment.txt``."""
        return sha256_hex(self.frozen.encode("utf-8"))

    @property
    def packages(self) -> list[str]:
        """``name==version`` of each distribution (``environment.txt`` without hashes)."""
        return [
            line.split(" ", 1)[0] for line in self.frozen.splitlines() if not line.startswith("#")
        ]


def _inputs(
    config: CaptureConfig,
    tree: Path,
    interpreter: Interpreter,
    registry: Registry,
    extra_lock: ExtraLock | None = None,
) -> dict[str, object]:
    """Everything the environment is built from; its canonical JSON's SHA-256 is the key."""
    lock: dict[str, object] | None = None
    if config.lock == "uv":
        files = read_lock(tree)
        lock = {"uv.lock": sha256_hex(files.lock), "pyproject.toml": sha256_hex(files.project)}
        lock["groups"] = {
            "groups": sorted(config.groups),
            "no_default_groups": config.no_default_groups,
            "all_groups": config.all_groups,
            "extras": sorted(config.extras),
            "all_extras": config.all_extras,
        }
        if config.allow_sources:  # a package built from the tree is built from this commit's
            lock["tree"] = tree.name
    return {
        "format": FORMAT,
        "lock": lock,
        "allow_sources": sorted(config.allow_sources),
        "requirements": list(config.requirements) if config.requirements is not None else None,
        "extra": list(config.extra),
        "extra_lock": sha256_hex(extra_lock.data) if extra_lock is not None else None,
        "registry": {"index": registry.index, "files": list(registry.files)},
        "python": {
            "version": interpreter.version,
            "path": interpreter.path,
            "sha256": interpreter_sha256(interpreter.path),
            "library": interpreter_library(interpreter.path, interpreter.prefix),
        },
        "uv": uv_version(),
    }


def environment_key(
    config: CaptureConfig,
    tree: Path,
    interpreter: Interpreter,
    registry: Registry,
    extra_lock: ExtraLock | None = None,
) -> tuple[str, dict[str, object]]:
    inputs = _inputs(config, tree, interpreter, registry, extra_lock)
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    return sha256_hex(text.encode("utf-8")), inputs


def current_extra_lock(config: CaptureConfig, name: str, at: Path | None) -> ExtraLock | None:
    """``captures/NAME.lock`` as it is now (None when it does not exist, or extra is not
    resolved into one)."""
    if not config.extra_resolved:
        return None
    if at is None:
        raise CaptureConfigError(f"capture {name}: extra needs {lock_path(name)}")
    try:
        raw = at.read_bytes()
    except FileNotFoundError:
        return None
    return read_extra_lock(raw, name)


def cached_environment(
    config: CaptureConfig,
    tree: Path,
    name: str,
    registry: Registry,
    *,
    extra_lock_at: Path | None = None,
) -> Environment:
    """The built environment for ``config`` at ``tree``, checked against its seal;
    never builds one (nor resolves the harness's extra)."""
    interpreter = recorded_interpreter(config.python)
    extra_lock = current_extra_lock(config, name, extra_lock_at)
    if config.extra_resolved:
        reason = stale(extra_lock, config, interpreter.version)
        if reason is not None:
            raise CaptureConfigError(
                f"capture {name}: {lock_path(name)} does not hold what extra asks ({reason})",
                hint=f"run `tracework capture env {name}`: it resolves extra against the "
                f"environment and writes {lock_path(name)} (the capture itself never uses "
                "the network)",
            )
    key, _ = environment_key(config, tree, interpreter, registry, extra_lock)
    folder = cache_folder("envs") / key
    if not (folder / "complete").is_file():
        raise EnvironmentMissing(
            f"the environment of capture {name} is not built for this commit",
            hint=f"run `tracework capture env {name}` first (it may download packages from "
            "the package registry; the capture itself never uses the network)",
        )
    return _checked(folder, key, name, interpreter, extra_lock, built_now=False)


def build_environment(
    config: CaptureConfig,
    tree: Path,
    name: str,
    registry: Registry,
    backend: isolation.Backend,
    *,
    timeout: int,
    memory_mib: int = 8192,
    rebuild: bool = False,
    extra_lock_at: Path | None = None,
    commit: str = "",
) -> Environment:
    """The environment for ``config`` at ``tree``: found in the cache (and checked
    against its seal), or built now in a sandbox of ``backend``; ``rebuild`` builds it
    again whatever the cache holds.  With extra given as exact versions, the build
    installs ``captures/NAME.lock`` (``extra_lock_at``) as written, or resolves it again
    and writes it when it no longer holds what the declaration asks or no longer fits
    what the lock installs (:mod:`.extralock`).

    The interpreter recorded the last time is tried first (an environment built with it
    is reused as it is); only to build is uv asked to find one again."""
    interpreter = recorded_interpreter(config.python)
    extra_lock = current_extra_lock(config, name, extra_lock_at)
    fits = not config.extra_resolved or stale(extra_lock, config, interpreter.version) is None
    key, _ = environment_key(config, tree, interpreter, registry, extra_lock)
    folder = cache_folder("envs") / key
    if (folder / "complete").is_file() and not rebuild and fits:
        return _checked(folder, key, name, interpreter, extra_lock, built_now=False)
    interpreter = find_interpreter(config.python)
    key, inputs = environment_key(config, tree, interpreter, registry, extra_lock)
    files = read_lock(tree) if config.lock == "uv" else None
    plan = BuildPlan(
        interpreter=interpreter,
        tree=tree,
        lock=(
            plan_lock(files, registry, config.allow_sources, tree) if files is not None else None
        ),
        selection=(
            select(
                files,
                config.groups,
                config.extras,
                no_default_groups=config.no_default_groups,
                all_groups=config.all_groups,
                all_extras=config.all_extras,
            )
            if files is not None
            else None
        ),
        requirements=config.requirements or (),
        extra=() if config.extra_resolved else config.extra,
        registry=registry,
        timeout=timeout,
        memory_mib=memory_mib,
    )
    resolved: list[tuple[ExtraLock, str]] = []  # the lock resolved now, and why

    def extra_step(held: dict[str, str], resolve: Callable[[tuple[str, ...]], str]) -> str:
        reason = stale(extra_lock, config, interpreter.version)
        if reason is None and extra_lock is not None:
            reason = conflict(extra_lock, held)
            if reason is None:
                return extra_lock.text
        wanted = declared(config)
        pins = parse_pylock(resolve(wanted))
        already, added = split(pins, held)
        made = render(
            name, wanted, interpreter.version, _against(config, files, commit), uv_version(),
            already, added,
        )  # fmt: skip
        resolved.append((made, reason or "it no longer fits the environment"))
        return made.text

    folder = cache_folder("envs") / key
    with locked(folder):
        if (folder / "complete").is_file() and not rebuild and fits:  # built meanwhile
            return _checked(folder, key, name, interpreter, extra_lock, built_now=False)
        remove(folder)  # what an interrupted build left, or the one rebuilt
        folder.mkdir()
        note = None
        try:
            build(plan, folder, backend, extra_step if config.extra_resolved else None)
            if resolved:
                extra_lock, why = resolved[-1]
                note = f"{lock_path(name)} resolved now ({why}) and written"
                key, inputs = environment_key(config, tree, interpreter, registry, extra_lock)
            provenance = _provenance(config, plan, files, folder / "venv", extra_lock, name)
            seal.seal(folder, folder / "venv")
        except BaseException:
            remove(folder)  # nothing half-built is kept
            raise
        _write_record(folder, interpreter, provenance, inputs)
        if resolved and extra_lock_at is not None and extra_lock is not None:
            write_atomic(extra_lock_at, extra_lock.text)
        if key != folder.name:
            folder = _move(folder, key)
        else:
            write_atomic(folder / "complete", f"{key}\n")
    env = _read(folder, key, built_now=True, interpreter=interpreter, extra_lock=extra_lock)
    return replace(env, extra_note=note)


def _move(folder: Path, key: str) -> Path:
    """A build whose key changed while it ran (the harness's extra resolved anew) moved
    to its key's folder and completed there, under that folder's lock; one already
    complete there is kept, and this one removed."""
    target = folder.parent / key
    with locked(target):
        if (target / "complete").is_file():
            remove(folder)
            return target
        remove(target)  # what an interrupted build left
        os.rename(folder, target)
        write_atomic(target / "complete", f"{key}\n")
    return target


def _against(config: CaptureConfig, files: LockFiles | None, commit: str) -> str:
    """What a resolution of the harness's extra was made against, in words."""
    at = f" at {commit[:12]}" if commit else ""
    if files is not None:
        return (
            f"the environment of subject {config.subject}'s uv.lock{at} "
            f"(sha256 {sha256_hex(files.lock)})"
        )
    return f"the environment of the declaration's requirements (subject {config.subject}{at})"


def _provenance(
    config: CaptureConfig,
    plan: BuildPlan,
    files: LockFiles | None,
    venv: Path,
    extra_lock: ExtraLock | None,
    name: str,
) -> EnvironmentProvenance:
    """What the environment holds and how it was made, read on the host."""
    pins = pins_of(plan.requirements, "requirements") | pins_of(plan.extra, "extra")
    if extra_lock is not None:
        pins |= {p.name: Pin(p.version, p.hashes, "extra", p.files) for p in extra_lock.packages}
    found = installed(venv)
    library = interpreter_library(plan.interpreter.path, plan.interpreter.prefix)
    dists = distributions(found, locked_files(files) if files is not None else {}, pins)
    lock = None
    if files is not None and plan.selection is not None:
        lock = LockProvenance(
            sha256=sha256_hex(files.lock),
            project_sha256=sha256_hex(files.project),
            groups=plan.selection.groups,
            default_groups=plan.selection.default_groups,
            no_default_groups=plan.selection.no_default_groups,
            extras=plan.selection.extras,
            command=sync_command(plan),
        )
    return EnvironmentProvenance(
        uv=uv_version(),
        python=PythonProvenance(
            version=plan.interpreter.version,
            path=_shown_path(plan.interpreter.path),
            sha256=plan.interpreter.sha256 or interpreter_sha256(plan.interpreter.path),
            library=_shown_path(library[0]) if library else None,
            library_sha256=library[1] if library else None,
        ),
        lock=lock,
        extra_lock=(
            ExtraLockProvenance(
                path=lock_path(name),
                sha256=sha256_hex(extra_lock.data),
                resolved_from=extra_lock.resolved_from,
            )
            if extra_lock is not None
            else None
        ),
        distributions=dists,
    )


def _shown_path(path: str) -> str:
    """A path as the manifest keeps it: under the home folder as ``~/…``, so that no
    capture names the user who built it (the interpreter's hash says which one it was)."""
    home = str(Path.home())
    if home not in ("", "/") and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home) :]
    return path


def _write_record(
    folder: Path,
    interpreter: Interpreter,
    provenance: EnvironmentProvenance,
    inputs: dict[str, object],
) -> None:
    frozen = hashed_freeze(interpreter.version, provenance.distributions)
    write_atomic(folder / "environment.txt", frozen)
    write_atomic(
        folder / "provenance.json",
        json.dumps(provenance.model_dump(mode="json"), indent=2, sort_keys=True) + "\n",
    )
    write_atomic(folder / "inputs.json", json.dumps(inputs, indent=2, sort_keys=True) + "\n")


def _checked(
    folder: Path,
    key: str,
    name: str,
    interpreter: Interpreter,
    extra_lock: ExtraLock | None,
    *,
    built_now: bool,
) -> Environment:
    seal.verify(folder, folder / "venv", f"the cached environment of capture {name}")
    return _read(folder, key, built_now=built_now, interpreter=interpreter, extra_lock=extra_lock)


def _read(
    folder: Path,
    key: str,
    *,
    built_now: bool,
    interpreter: Interpreter,
    extra_lock: ExtraLock | None,
) -> Environment:
    frozen = (folder / "environment.txt").read_text(encoding="utf-8")
    recorded = (folder / "provenance.json").read_bytes()
    provenance = EnvironmentProvenance.model_validate_json(recorded)
    return Environment(key, folder, frozen, interpreter, built_now, provenance, extra_lock)
