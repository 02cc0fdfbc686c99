"""The subject's own lock, read on the host before anything is built from it.

``lock = "uv"`` installs the subject's ``uv.lock`` as written.  The lock is the
subject's, so it is hostile like the rest of its tree: a package it names may come
from a wheel shipped in the repository (``source = { path = … }``), a folder, a git
repository, any URL, another registry.  Before the environment is built, every
package's source is read here and judged:

- from **the registry** (``[capture] index`` in ``tracework.toml``, PyPI by default):
  allowed, when every file it names is on the registry's hosts;
- **the project itself** and its workspace members (``virtual``/``editable`` at ``.``
  or a member's folder): never installed (the harness imports them from the tree);
- anything else (``path``, ``directory``, ``editable``, ``git``, ``url``, another
  registry): refused, naming the package and its source, unless the declaration opts
  that package in (``allow_sources = ["name"]``); an opted-in package is built and
  installed inside the build's isolation like everything else, and a ``git`` or
  ``url`` source's host is then the only other host the build may reach.

The files tracework reads for this (``uv.lock``, ``pyproject.toml``, and
``.python-version`` and ``uv.toml`` when present) must be regular files reached
through no link (:mod:`.hostfiles`); a message about them never quotes their content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracework.capture.errors import CaptureConfigError, NotRegular
from tracework.capture.hostfiles import read_regular
from tracework.capture.registry import Registry, host_port, public_name
from tracework.readers import DataError, load_toml

#: The largest lock or project file read (a lock of a large application is ~1 MB).
MAX_LOCK_BYTES = 32 << 20
#: What uv reads of the tree besides the lock and the project file, when present.
ALSO_READ = (".python-version", "uv.toml")


@dataclass(frozen=True)
class LockFiles:
    """The subject's lock and project file, as bytes (their hashes key the build)."""

    lock: bytes
    project: bytes


@dataclass(frozen=True)
class LockPlan:
    """What the lock asks of a build: the packages from elsewhere that the declaration
    opted in, and the hosts of their ``git`` or ``url`` sources (reached only at public
    addresses, on the web's ports: see :mod:`.registry`)."""

    opted_in: tuple[str, ...]
    source_hosts: frozenset[tuple[str, int]]


def read_lock(tree: Path) -> LockFiles:
    """``uv.lock`` and ``pyproject.toml`` of the exported tree, each a regular file
    reached through no link; the other files uv reads must be too, when present."""
    found = {}
    for name in ("uv.lock", "pyproject.toml"):
        try:
            found[name] = read_regular(tree, name, MAX_LOCK_BYTES)
        except NotRegular as exc:
            if exc.message.endswith("does not exist"):
                raise CaptureConfigError(
                    f'lock = "uv", but the subject has no {name} at this commit',
                    hint="give requirements = [...] (exact pins with hashes) instead",
                ) from None
            raise CaptureConfigError(f"the subject's {exc.message}", hint=exc.hint) from None
    for name in ALSO_READ:
        try:
            read_regular(tree, name, MAX_LOCK_BYTES)
        except NotRegular as exc:
            if not exc.message.endswith("does not exist"):
                raise CaptureConfigError(f"the subject's {exc.message}", hint=exc.hint) from None
    return LockFiles(found["uv.lock"], found["pyproject.toml"])


def plan_lock(
    files: LockFiles, registry: Registry, allowed: tuple[str, ...], tree: Path | None = None
) -> LockPlan:
    """Judge every package of the lock (see the module's docstring): one
    :class:`CaptureConfigError` naming every package refused, with its source.

    A package at the project's folder, or a workspace member's, passes unopted only
    under that folder's own project name (``--no-install-workspace`` skips members by
    name: another name there would be built and installed)."""
    lock = _toml(files.lock, "uv.lock")
    members = _members(lock)
    project_names: dict[str | None, str | None] = {".": _project_name(files.project)}
    wanted = {_normal(name) for name in allowed}
    problems: list[str] = []
    opted_in: list[str] = []
    hosts: set[tuple[str, int]] = set()
    packages = lock.get("package", [])
    if not isinstance(packages, list):
        raise CaptureConfigError("the subject's uv.lock has no list of packages")
    for package in packages:
        if not isinstance(package, dict):
            raise CaptureConfigError("the subject's uv.lock has a package that is not a table")
        name = _normal(str(package.get("name", "")))
        source = package.get("source")
        if not isinstance(source, dict) or len(source) != 1:
            problems.append(f"{name} (a source uv.lock does not describe)")
            continue
        ((kind, where),) = source.items()
        where = str(where)
        folder = _within(where)
        if kind in ("virtual", "editable") and folder in members:
            if folder not in project_names and folder is not None and tree is not None:
                project_names[folder] = _member_name(tree, folder)
            if project_names.get(folder) == name:
                continue  # the project or a workspace member: never installed
            if name not in wanted:
                problems.append(f"{name} ({kind} {where}, a folder whose project is not {name})")
                continue
        if kind == "registry":
            if where.rstrip("/") != registry.index.rstrip("/"):
                problems.append(f"{name} (registry {where}, not {registry.index})")
                continue
            strays = [url for url in _urls(package) if not registry.serves(url)]
            if strays:
                problems.append(f"{name} (a file at {strays[0]}, not on the registry's hosts)")
        elif name in wanted:
            if kind in ("path", "directory", "editable") and _within(where) is None:
                problems.append(f"{name} ({kind} {where}, outside the subject's tree)")
                continue
            if kind in ("git", "url"):
                host = host_port(where.removeprefix("git+").split("?")[0])
                if host[1] not in (80, 443) or not public_name(host[0]):
                    problems.append(
                        f"{name} ({kind} {where}: a source is reached only by name or public "
                        "address, on port 443 or 80)"
                    )
                    continue
                hosts.add(host)
            opted_in.append(name)
        else:
            problems.append(f"{name} ({kind} {where})")
    if problems:
        raise CaptureConfigError(
            f"the subject's uv.lock names {len(problems)} package"
            f"{'s' if len(problems) > 1 else ''} from outside the registry "
            f"({registry.index}): "
            + "; ".join(problems[:10])
            + (f"; and {len(problems) - 10} more" if len(problems) > 10 else ""),
            hint="a package from a path, folder, git or URL source runs its own code when "
            'it is built or installed: opt each one in with allow_sources = ["NAME"] in '
            "the capture's .toml once you have read it (it is then built in isolation); "
            "another registry is set by [capture] index in tracework.toml",
        )
    return LockPlan(tuple(sorted(opted_in)), frozenset(hosts))


def _project_name(raw: bytes) -> str | None:
    """``[project] name`` of a project file, normalised; None when it has none."""
    data = _toml(raw, "pyproject.toml")
    project = data.get("project")
    name = project.get("name") if isinstance(project, dict) else None
    return _normal(name) if isinstance(name, str) else None


def _member_name(tree: Path, folder: str) -> str | None:
    """The project name of a workspace member's folder (read as a regular file)."""
    try:
        return _project_name(read_regular(tree, f"{folder}/pyproject.toml", MAX_LOCK_BYTES))
    except (NotRegular, CaptureConfigError):
        return None


def _toml(raw: bytes, name: str) -> dict[str, Any]:
    try:
        return load_toml(raw.decode("utf-8"))
    except (DataError, UnicodeDecodeError):
        # never the parser's words: they quote the file, which may be anything
        raise CaptureConfigError(f"the subject's {name} is not valid TOML") from None


def _members(lock: dict[str, Any]) -> set[str | None]:
    """The folders of the project and its workspace members, as the lock names them."""
    members: set[str | None] = {"."}
    manifest = lock.get("manifest")
    if isinstance(manifest, dict) and isinstance(manifest.get("members"), list):
        # members are named by package; their sources say where they are
        names = {_normal(str(m)) for m in manifest["members"]}
        for package in lock.get("package", []):
            if isinstance(package, dict) and _normal(str(package.get("name", ""))) in names:
                source = package.get("source")
                if isinstance(source, dict):
                    for kind in ("virtual", "editable"):
                        if kind in source:
                            members.add(_within(str(source[kind])))
    members.discard(None)
    return members


def _within(where: str) -> str | None:
    """``where`` as a folder inside the tree (``.``, ``packages/a``), or None when it
    leaves it (absolute, ``..``) or is not a plain relative path."""
    if where.startswith("/") or "\\" in where or "://" in where:
        return None
    parts = [p for p in where.split("/") if p not in ("", ".")]
    if ".." in parts:
        return None
    return "/".join(parts) or "."


def _urls(package: dict[str, Any]) -> list[str]:
    """Every URL a registry package's entry names: its sdist and its wheels."""
    urls = []
    sdist = package.get("sdist")
    entries = [sdist] if isinstance(sdist, dict) else []
    wheels = package.get("wheels")
    entries += [w for w in wheels if isinstance(w, dict)] if isinstance(wheels, list) else []
    for entry in entries:
        if "url" in entry:
            urls.append(str(entry["url"]))
        elif "path" in entry:
            urls.append(f"path {entry['path']}")  # a local file under a registry: refused
    return urls


def _normal(name: str) -> str:
    """A package name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()
