"""The capture's environment: the subject's own locked dependencies, built in isolation.

``tracework capture env NAME`` builds it (or finds it built) and is the only step of a
capture that may use the network, to download packages from the registry.  It is
kept in the user's cache, keyed by the SHA-256 of what it is built from — the lock and
the project file (or the requirement pins), the extra packages, the packages opted in
from outside the registry, the registry, the interpreter's version and path, and uv's
version — so a second capture, in any workspace, installs nothing.

- ``lock = "uv"``: ``uv sync --frozen`` of the exported tree, the field's convention,
  after every package's source is judged (:mod:`.lock`);
- ``requirements = [...]``: ``uv pip install --require-hashes`` of exact pins;
- ``extra = [...]``: then ``uv pip install --require-hashes`` of the harness's own
  packages (a fake model library, say).

No interpreter of the environment, and no build backend, ever starts on the host: uv
runs inside the build's sandbox (:mod:`.build`), with the registry as its only way
out, and the environment is sealed when it is done (:mod:`.seal`).  Before every use
— each capture, and ``capture env`` finding it built — it is checked against its
seal, and a changed file refuses the capture, naming the path.  The frozen list
(``environment.txt``) is read from the installed distributions' metadata, on the
host, without starting the environment's Python and without following a link.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

import tracework.capture.isolation as isolation
from tracework.capture import seal
from tracework.capture.build import BuildPlan, build
from tracework.capture.cache import cache_folder
from tracework.capture.config import CaptureConfig
from tracework.capture.envtree import EnvironmentRefused, remove
from tracework.capture.errors import EnvironmentMissing, NotRegular
from tracework.capture.hostfiles import read_regular
from tracework.capture.interpreter import (
    Interpreter,
    find_interpreter,
    recorded_interpreter,
    uv_version,
)
from tracework.capture.lock import plan_lock, read_lock
from tracework.capture.registry import Registry
from tracework.fsio import locked, write_atomic
from tracework.hashing import sha256_hex

#: Bump when the way environments are built changes: every key changes with it.
FORMAT = 2
#: The largest METADATA file read for the frozen list, and the most distributions.
MAX_METADATA = 4 << 20
MAX_DISTRIBUTIONS = 20_000
_METADATA = re.compile(r"lib/python[0-9.]+/site-packages/[^/]+\.dist-info/METADATA\Z")


@dataclass(frozen=True)
class Environment:
    """A built environment: where it is, what is in it, and whether it was built now."""

    key: str
    folder: Path
    frozen: str
    interpreter: Interpreter
    built_now: bool

    @property
    def venv(self) -> Path:
        return self.folder / "venv"

    @property
    def sha256(self) -> str:
        """SHA-256 of ``environment.txt``."""
        return sha256_hex(self.frozen.encode("utf-8"))

    @property
    def packages(self) -> list[str]:
        return [line for line in self.frozen.splitlines() if not line.startswith("#")]


def _inputs(
    config: CaptureConfig, tree: Path, interpreter: Interpreter, registry: Registry
) -> dict[str, object]:
    """Everything the environment is built from; its canonical JSON's SHA-256 is the key."""
    lock: dict[str, str] | None = None
    if config.lock == "uv":
        files = read_lock(tree)
        lock = {"uv.lock": sha256_hex(files.lock), "pyproject.toml": sha256_hex(files.project)}
        if config.allow_sources:  # a package built from the tree is built from this commit's
            lock["tree"] = tree.name
    return {
        "format": FORMAT,
        "lock": lock,
        "allow_sources": sorted(config.allow_sources),
        "requirements": list(config.requirements) if config.requirements is not None else None,
        "extra": list(config.extra),
        "registry": {"index": registry.index, "files": list(registry.files)},
        "python": {"version": interpreter.version, "path": interpreter.path},
        "uv": uv_version(),
    }


def environment_key(
    config: CaptureConfig, tree: Path, interpreter: Interpreter, registry: Registry
) -> tuple[str, dict[str, object]]:
    inputs = _inputs(config, tree, interpreter, registry)
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    return sha256_hex(text.encode("utf-8")), inputs


def cached_environment(
    config: CaptureConfig, tree: Path, name: str, registry: Registry
) -> Environment:
    """The built environment for ``config`` at ``tree``, checked against its seal;
    never builds one."""
    interpreter = recorded_interpreter(config.python)
    key, _ = environment_key(config, tree, interpreter, registry)
    folder = cache_folder("envs") / key
    if not (folder / "complete").is_file():
        raise EnvironmentMissing(
            f"the environment of capture {name} is not built for this commit",
            hint=f"run `tracework capture env {name}` first (it may download packages from "
            "the package registry; the capture itself never uses the network)",
        )
    return _checked(folder, key, name, interpreter, built_now=False)


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
) -> Environment:
    """The environment for ``config`` at ``tree``: found in the cache (and checked
    against its seal), or built now in a sandbox of ``backend``; ``rebuild`` builds it
    again whatever the cache holds.

    The interpreter recorded the last time is tried first (an environment built with it
    is reused as it is); only to build is uv asked to find one again."""
    interpreter = recorded_interpreter(config.python)
    key, inputs = environment_key(config, tree, interpreter, registry)
    folder = cache_folder("envs") / key
    if (folder / "complete").is_file() and not rebuild:
        return _checked(folder, key, name, interpreter, built_now=False)
    interpreter = find_interpreter(config.python)
    key, inputs = environment_key(config, tree, interpreter, registry)
    plan = BuildPlan(
        interpreter=interpreter,
        tree=tree,
        lock=(
            plan_lock(read_lock(tree), registry, config.allow_sources, tree)
            if config.lock == "uv"
            else None
        ),
        requirements=config.requirements or (),
        extra=config.extra,
        registry=registry,
        timeout=timeout,
        memory_mib=memory_mib,
    )
    folder = cache_folder("envs") / key
    with locked(folder):
        if (folder / "complete").is_file() and not rebuild:  # built meanwhile
            return _checked(folder, key, name, interpreter, built_now=False)
        remove(folder)  # what an interrupted build left, or the one rebuilt
        folder.mkdir()
        try:
            build(plan, folder, backend)
            entries = seal.seal(folder, folder / "venv")
        except BaseException:
            remove(folder)  # nothing half-built is kept
            raise
        frozen = f"# python {interpreter.version}\n" + "".join(
            f"{line}\n" for line in freeze(folder / "venv", entries)
        )
        write_atomic(folder / "environment.txt", frozen)
        write_atomic(folder / "inputs.json", json.dumps(inputs, indent=2, sort_keys=True) + "\n")
        write_atomic(folder / "complete", f"{key}\n")
    return _read(folder, key, built_now=True, interpreter=interpreter)


def freeze(venv: Path, entries: dict[str, seal.Entry]) -> list[str]:
    """``name==version`` of every installed distribution, sorted, names normalised
    (PEP 503), from the ``.dist-info`` metadata alone, each read as a regular file."""
    found = set()
    read: set[tuple[int, ...]] = set()
    for path, entry in entries.items():
        if entry.kind != "file" or not _METADATA.match(path) or entry.identity[:2] in read:
            continue  # a METADATA with several names is read once
        read.add(entry.identity[:2])
        if len(read) > MAX_DISTRIBUTIONS:
            raise EnvironmentRefused(
                f"the environment holds more than {MAX_DISTRIBUTIONS:,} distributions"
            )
        try:
            text = read_regular(venv, path, MAX_METADATA).decode("utf-8", errors="replace")
        except NotRegular:
            continue
        headers = HeaderParser().parsestr(text)
        name, version = headers.get("Name"), headers.get("Version")
        if name and version:
            found.add(f"{re.sub(r'[-_.]+', '-', name).lower()}=={version.strip()}")
    return sorted(found)


def _checked(
    folder: Path, key: str, name: str, interpreter: Interpreter, *, built_now: bool
) -> Environment:
    seal.verify(folder, folder / "venv", f"the cached environment of capture {name}")
    return _read(folder, key, built_now=built_now, interpreter=interpreter)


def _read(folder: Path, key: str, *, built_now: bool, interpreter: Interpreter) -> Environment:
    frozen = (folder / "environment.txt").read_text(encoding="utf-8")
    return Environment(key, folder, frozen, interpreter, built_now)
