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
from urllib.parse import unquote

from tracework.capture.errors import CaptureConfigError, NotRegular
from tracework.capture.hostfiles import read_regular
from tracework.capture.registry import Registry, host_port, public_name
from tracework.readers import DataError, Table, load_toml

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


def _toml(raw: bytes, name: str) -> Table:
    try:
        return load_toml(raw.decode("utf-8"))
    except (DataError, UnicodeDecodeError):
        # never the parser's words: they quote the file, which may be anything
        raise CaptureConfigError(f"the subject's {name} is not valid TOML") from None


def _members(lock: Table) -> set[str | None]:
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


def _urls(package: Table) -> list[str]:
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


# -- what the lock installs: groups and extras -----------------------------------------


@dataclass(frozen=True)
class Selection:
    """What ``uv sync --frozen`` installs of the lock, named: the dependency groups
    (the project's defaults resolved to their names, then those declared) and the
    extras, with the flags that ask uv for exactly that."""

    groups: tuple[str, ...]
    default_groups: tuple[str, ...]
    no_default_groups: bool
    extras: tuple[str, ...]
    flags: tuple[str, ...]


def select(
    files: LockFiles,
    groups: tuple[str, ...],
    extras: tuple[str, ...],
    *,
    no_default_groups: bool = False,
    all_groups: bool = False,
    all_extras: bool = False,
) -> Selection:
    """The groups and extras a declaration asks of the lock, each checked against the
    project (its ``pyproject.toml`` and the lock's entry for it): one
    :class:`CaptureConfigError` naming every one it does not have, with those it has.

    The default groups are uv's: ``[tool.uv] default-groups`` (a list, or ``"all"``),
    else ``dev`` when the project has that group."""
    project = _toml(files.project, "pyproject.toml")
    root = _root_package(_toml(files.lock, "uv.lock"), _project_name(files.project))
    have_groups = _group_names(project, root)
    have_extras = _extra_names(project, root)
    problems = []
    for kind, asked, have in (("group", groups, have_groups), ("extra", extras, have_extras)):
        missing = sorted({_normal(n) for n in asked} - set(have))
        if missing:
            problems.append(
                f"{'dependency group' if kind == 'group' else 'extra'}"
                f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} (its "
                f"{'groups' if kind == 'group' else 'extras'}: {', '.join(have) or 'none'})"
            )
    if problems:
        raise CaptureConfigError(
            "the subject's project at this commit has no " + "; and no ".join(problems),
            hint="groups name its [dependency-groups], extras its "
            "[project.optional-dependencies] (see docs/manual/captures.md)",
        )
    defaults = _default_groups(project, have_groups)
    if all_groups:
        chosen = set(have_groups)
    else:
        chosen = set() if no_default_groups else set(defaults)
        chosen |= {_normal(n) for n in groups}
    flags = ["--all-groups"] if all_groups else []
    flags += ["--no-default-groups"] if no_default_groups else []
    flags += [arg for name in sorted({_normal(n) for n in groups}) for arg in ("--group", name)]
    flags += ["--all-extras"] if all_extras else []
    wanted_extras = set(have_extras) if all_extras else {_normal(n) for n in extras}
    flags += [arg for name in sorted({_normal(n) for n in extras}) for arg in ("--extra", name)]
    return Selection(
        groups=tuple(sorted(chosen)),
        default_groups=defaults,
        no_default_groups=no_default_groups,
        extras=tuple(sorted(wanted_extras)),
        flags=tuple(flags),
    )


#: A group's or an extra's name as tracework shows it: anything else a subject wrote
#: there is left out of messages (uv refuses it too).
_SHOWN = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?")


def _names(*tables: object) -> tuple[str, ...]:
    found = set()
    for table in tables:
        if isinstance(table, dict):
            found |= {_normal(str(key)) for key in table}
        elif isinstance(table, list):
            found |= {_normal(str(key)) for key in table if isinstance(key, str)}
    return tuple(sorted(n for n in found if _SHOWN.fullmatch(n)))


def _group_names(project: Table, root: Table) -> tuple[str, ...]:
    """The project's dependency groups: ``[dependency-groups]``, uv's older
    ``dev-dependencies`` (the group ``dev``), and those the lock records for it."""
    uv = _table(_table(project, "tool"), "uv")
    legacy = ["dev"] if "dev-dependencies" in uv else []
    metadata = _table(root, "metadata")
    return _names(
        _table(project, "dependency-groups"),
        legacy,
        _table(root, "dev-dependencies"),
        _table(metadata, "requires-dev"),
    )


def _extra_names(project: Table, root: Table) -> tuple[str, ...]:
    """The project's extras: ``[project.optional-dependencies]`` and the lock's record."""
    metadata = _table(root, "metadata")
    provided = metadata.get("provides-extras")
    return _names(
        _table(_table(project, "project"), "optional-dependencies"),
        _table(root, "optional-dependencies"),
        provided if isinstance(provided, list) else [],
    )


def _default_groups(project: Table, have: tuple[str, ...]) -> tuple[str, ...]:
    setting = _table(_table(project, "tool"), "uv").get("default-groups")
    if setting == "all":
        return have
    if isinstance(setting, list):
        return tuple(sorted({_normal(str(n)) for n in setting} & set(have)))
    return ("dev",) if "dev" in have else ()


def _table(data: Table, key: str) -> Table:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _root_package(lock: Table, name: str | None) -> Table:
    """The lock's entry for the project itself (at the tree's root), or an empty one."""
    for package in lock.get("package", []) if isinstance(lock.get("package"), list) else []:
        if not isinstance(package, dict) or _normal(str(package.get("name", ""))) != name:
            continue
        source = package.get("source")
        if isinstance(source, dict) and any(
            _within(str(source.get(kind, ""))) == "." for kind in ("virtual", "editable")
        ):
            return package
    return {}


# -- the files the lock names, for the environment's provenance ------------------------


_FILENAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+!~-]{0,250}")


@dataclass(frozen=True)
class LockedFile:
    """One distribution file a lock names for a package at a version."""

    filename: str
    sha256: str
    kind: str  # "wheel" or "sdist"


def locked_files(files: LockFiles) -> dict[tuple[str, str], tuple[LockedFile, ...]]:
    """Every file the lock names, by package (normalised) and version: its wheels and
    its sdist, each with the SHA-256 the lock gives (uv installs none whose bytes differ)."""
    lock = _toml(files.lock, "uv.lock")
    found: dict[tuple[str, str], tuple[LockedFile, ...]] = {}
    for package in lock.get("package", []) if isinstance(lock.get("package"), list) else []:
        if not isinstance(package, dict):
            continue
        key = (_normal(str(package.get("name", ""))), str(package.get("version", "")))
        entries: list[tuple[Table, str]] = []
        sdist = package.get("sdist")
        if isinstance(sdist, dict):
            entries.append((sdist, "sdist"))
        wheels = package.get("wheels")
        if isinstance(wheels, list):
            entries += [(w, "wheel") for w in wheels if isinstance(w, dict)]
        listed = []
        for entry, kind in entries:
            digest = str(entry.get("hash", ""))
            if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
                continue
            where = str(entry.get("filename") or entry.get("url") or entry.get("path") or "")
            filename = unquote(where.split("?")[0].split("#")[0].rstrip("/").rsplit("/", 1)[-1])
            if not _FILENAME.fullmatch(filename):
                continue  # no distribution file is named so: never shown, never matched
            listed.append(LockedFile(filename, digest.removeprefix("sha256:"), kind))
        found[key] = found.get(key, ()) + tuple(listed)
    return found
