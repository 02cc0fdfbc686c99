"""What an environment holds, as a published record states it: each distribution and
the file it came from.

After a build, tracework reads on the host — from the environment's ``.dist-info``
folders, each file a regular file reached through no link, never starting the
environment's Python — every installed distribution's name and version, the tags
its ``WHEEL`` file gives (a compressed tag set, as some builders write one, expanded),
and whether uv built it from source (it leaves ``uv_build.json`` in the distributions
it built).  Each is then matched with what
installed it, for the SHA-256 of the file installed:

- a package of the subject's ``uv.lock``: built from source, the lock's sdist; else
  the one wheel the lock lists whose tags (and build number) are exactly those of the
  installed ``WHEEL`` file — a wheel's ``WHEEL`` file names the tags of its file name,
  and uv checks every file it installs against the lock's hash;
- a package of ``captures/NAME.lock``: the same way, from the files it names (it
  lists each file of a package with its hash);
- a pin of the declaration (``requirements``, ``extra`` with hashes): its hash, when it
  gives one; a pin with several names no file, so the file installed is not told
  apart, and every hash uv accepted is kept instead.

``environment.txt`` is the same list as a requirements file, one distribution a line
with the hash of its file (or the hashes accepted), which ``uv pip install
--require-hashes -r environment.txt`` takes as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from email.parser import HeaderParser
from functools import cache
from itertools import product
from pathlib import Path
from typing import Literal, TypeVar, cast

from tracework.capture.cache import cache_folder
from tracework.capture.envtree import EnvironmentRefused
from tracework.capture.errors import NotRegular
from tracework.capture.hostfiles import opened_folder, read_regular
from tracework.capture.lock import LockedFile
from tracework.capture.store import Distribution
from tracework.fsio import write_atomic

T = TypeVar("T")

#: The largest METADATA or WHEEL file read, and the most distributions.
MAX_METADATA = 4 << 20
MAX_DISTRIBUTIONS = 20_000
#: The most entries a site-packages folder may hold for tracework to list it.
MAX_LISTED = 1_000_000
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_VERSION = re.compile(r"[A-Za-z0-9.+!_-]{1,100}")


@dataclass(frozen=True)
class Installed:
    """A distribution found in the environment, from its ``.dist-info`` files."""

    name: str  # normalised (PEP 503)
    version: str
    tags: frozenset[str]
    build: str | None
    built: bool  # uv built it from source (uv_build.json)


@dataclass(frozen=True)
class Pin:
    """A pinned requirement: what installed it and the hashes it gives."""

    version: str
    hashes: tuple[str, ...]
    by: Literal["requirements", "extra"]
    #: the files those hashes are of, where known (captures/NAME.lock names them)
    files: tuple[LockedFile, ...] = ()


def normal(name: str) -> str:
    """A package name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(venv: Path) -> list[Installed]:
    """Every distribution of the environment at ``venv``, sorted by name and version."""
    found: dict[tuple[str, str], Installed] = {}
    for folder in _dist_infos(venv):
        try:
            metadata = read_regular(venv, f"{folder}/METADATA", MAX_METADATA)
        except NotRegular:
            continue
        headers = HeaderParser().parsestr(metadata.decode("utf-8", errors="replace"))
        name, version = (headers.get("Name") or "").strip(), (headers.get("Version") or "").strip()
        if not _NAME.fullmatch(name) or not _VERSION.fullmatch(version):
            raise EnvironmentRefused(
                f"{folder[:200]}/METADATA names a distribution as no installer writes it "
                "(a name and version of letters, digits and .+!_-)",
                hint="something in the build wrote it: read what the lock's packages ship",
            )
        tags: frozenset[str] = frozenset()
        build = None
        try:
            wheel = read_regular(venv, f"{folder}/WHEEL", MAX_METADATA)
        except NotRegular:
            pass
        else:
            fields = HeaderParser().parsestr(wheel.decode("utf-8", errors="replace"))
            tags = frozenset(
                tag for line in fields.get_all("Tag") or [] for tag in _expanded(line.strip())
            )
            build = (fields.get("Build") or "").strip() or None
        try:
            read_regular(venv, f"{folder}/uv_build.json", MAX_METADATA)
            built = True
        except NotRegular:
            built = False
        dist = Installed(normal(name), version, tags, build, built)
        found[(dist.name, dist.version)] = dist
        if len(found) > MAX_DISTRIBUTIONS:
            raise EnvironmentRefused(
                f"the environment holds more than {MAX_DISTRIBUTIONS:,} distributions"
            )
    return [found[key] for key in sorted(found)]


def _dist_infos(venv: Path) -> list[str]:
    """``lib/pythonX.Y/site-packages/NAME.dist-info`` of every folder there, sorted."""
    folders = []
    for python in _listed(venv, "lib"):
        if not re.fullmatch(r"python[0-9.]+", python):
            continue
        site = f"lib/{python}/site-packages"
        folders += [f"{site}/{n}" for n in _listed(venv, site) if n.endswith(".dist-info")]
    return sorted(folders)


def _listed(venv: Path, rel: str) -> list[str]:
    try:
        with opened_folder(venv, rel) as fd:
            names = os.listdir(fd)
    except (NotRegular, OSError):
        return []
    if len(names) > MAX_LISTED:
        raise EnvironmentRefused(f"{rel} of the environment holds more than {MAX_LISTED:,} entries")
    return sorted(names)


def _expanded(tag: str) -> set[str]:
    """A tag whose parts may be compressed tag sets (``py2.py3-none-any``; some
    builders write a WHEEL file's tags so) as the tags it stands for."""
    parts = tag.split("-")
    if len(parts) != 3:
        return set()
    python, abi, platform = parts
    return {
        f"{p}-{a}-{t}"
        for p, a, t in product(python.split("."), abi.split("."), platform.split("."))
    }


def wheel_tags(filename: str) -> tuple[frozenset[str], str | None] | None:
    """The tags a wheel's file name gives (its compressed tag sets expanded) and its
    build number, or None for a name that is not a wheel's."""
    if not filename.endswith(".whl"):
        return None
    parts = filename[: -len(".whl")].split("-")
    if len(parts) not in (5, 6):
        return None
    build = parts[2] if len(parts) == 6 else None
    return frozenset(_expanded("-".join(parts[-3:]))), build


def distributions(
    found: list[Installed],
    lock: dict[tuple[str, str], tuple[LockedFile, ...]],
    pins: dict[str, Pin],
) -> tuple[Distribution, ...]:
    """Each installed distribution with what installed it and its file's SHA-256 (see
    the module's docstring for how the file is told)."""
    out = []
    for dist in found:
        files = lock.get((dist.name, dist.version))
        pin = pins.get(dist.name)
        if files is not None:  # the lock's, even where an extra pins the same version
            chosen = _chosen(dist, files)
            out.append(
                Distribution(
                    name=dist.name,
                    version=dist.version,
                    installed_by="lock",
                    built_from_source=dist.built,
                    file=chosen.filename if chosen else None,
                    sha256=chosen.sha256 if chosen else None,
                    hashes=tuple(sorted({f.sha256 for f in files})),
                )
            )
        elif pin is not None and pin.version == dist.version:
            told = _chosen(dist, pin.files) if pin.files else None
            only = pin.hashes[0] if len(pin.hashes) == 1 else None
            out.append(
                Distribution(
                    name=dist.name,
                    version=dist.version,
                    installed_by=pin.by,
                    built_from_source=dist.built,
                    file=told.filename if told else None,
                    sha256=told.sha256 if told else only,
                    hashes=tuple(sorted(set(pin.hashes))),
                )
            )
        else:
            out.append(
                Distribution(
                    name=dist.name,
                    version=dist.version,
                    installed_by=None,
                    built_from_source=dist.built,
                    file=None,
                    sha256=None,
                    hashes=(),
                )
            )
    return tuple(out)


def _chosen(dist: Installed, files: tuple[LockedFile, ...]) -> LockedFile | None:
    """The file of the lock the distribution was installed from, when exactly one fits."""
    if dist.built:
        sdists = [f for f in files if f.kind == "sdist"]
        return sdists[0] if len(sdists) == 1 else None
    fits = [
        f for f in files if f.kind == "wheel" and wheel_tags(f.filename) == (dist.tags, dist.build)
    ]
    return fits[0] if len(fits) == 1 else None


def hashed_freeze(python: str, dists: tuple[Distribution, ...]) -> str:
    """``environment.txt``: a ``# python X.Y.Z`` line, then ``name==version`` of each
    distribution with ``--hash=sha256:…`` of its file (or of every file accepted)."""
    lines = [f"# python {python}"]
    for dist in dists:
        digests = (dist.sha256,) if dist.sha256 else dist.hashes
        lines.append(
            f"{dist.name}=={dist.version}" + "".join(f" --hash=sha256:{d}" for d in digests)
        )
    return "".join(f"{line}\n" for line in lines)


def _identity(path: str) -> tuple[int, ...]:
    """What changes whenever a file's bytes may have: its device, inode, size, and its
    modification and status-change times (the kernel sets the last on every write,
    ``chmod`` or ``utime``, so a file rewritten to its old size and time still differs)."""
    info = os.stat(path)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _remembered(
    kind: str,
    path: str,
    identity: tuple[int, ...],
    read: Callable[[], T],
    valid: Callable[[object], bool],
) -> T:
    """What ``read`` says of the file ``path`` (``kind``: the SHA-256 of its bytes, say),
    kept in the user's cache (``captures/files/``) while the file's :func:`_identity` is
    ``identity``, so that the interpreter every capture names is read once, not at each
    capture.  A record is written only when the file was unchanged while it was read; one
    naming another identity, or holding a value that is not ``valid``, is read again."""
    digest = hashlib.sha256(f"{kind}\0{path}".encode()).hexdigest()
    record = cache_folder("files") / f"{digest}.json"
    with suppress(OSError, ValueError, AttributeError):
        known = json.loads(record.read_bytes())
        if (
            known.get("kind") == kind
            and known.get("path") == path
            and known.get("identity") == list(identity)
            and valid(known.get("value"))
        ):
            return cast(T, known["value"])
    value = read()
    if _identity(path) == identity:
        with suppress(OSError):
            kept = {"identity": list(identity), "kind": kind, "path": path, "value": value}
            write_atomic(record, json.dumps(kept, sort_keys=True) + "\n")
    return value


_SHA256 = re.compile(r"[0-9a-f]{64}")


@cache
def _file_sha256(path: str, identity: tuple[int, ...]) -> str:
    def read() -> str:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        return digest.hexdigest()

    return _remembered(
        "sha256", path, identity, read, lambda v: isinstance(v, str) and bool(_SHA256.fullmatch(v))
    )


def interpreter_sha256(path: str) -> str:
    """SHA-256 of the interpreter's executable: the file its path resolves to (the host's
    own Python, never the environment's), read once while it is unchanged."""
    real = os.path.realpath(path)
    return _file_sha256(real, _identity(real))


#: How an executable names the libpython it links to (its ELF ``DT_NEEDED`` string).
_LIBPYTHON = re.compile(rb"libpython[0-9]+\.[0-9]+[a-z]*\.so(?:\.[0-9]+)*")
_LIBPYTHON_NAME = re.compile(_LIBPYTHON.pattern.decode("ascii"))


def interpreter_library(path: str, prefix: str) -> tuple[str, str] | None:
    """A shared build's ``libpythonX.Y.so`` (most of the interpreter's code: the
    executable of such a build is a few kB) and its SHA-256, when the executable names one
    and it is in the interpreter's ``lib`` folder or the system's; None for a static
    build."""
    real = os.path.realpath(path)
    name = _library_named(real, _identity(real))
    if name is None:
        return None
    system = sorted(Path("/usr/lib").glob("*-linux-gnu"))
    for folder in [Path(prefix) / "lib", *system, Path("/usr/lib")]:
        candidate = folder / name
        if candidate.is_file():
            return str(candidate), interpreter_sha256(str(candidate))
    return None


@cache
def _library_named(path: str, identity: tuple[int, ...]) -> str | None:
    def read() -> str | None:
        with open(path, "rb") as handle:
            named = _LIBPYTHON.search(handle.read(64 << 20))
        return named.group().decode("ascii") if named else None

    return _remembered(
        "libpython",
        path,
        identity,
        read,
        lambda v: v is None or (isinstance(v, str) and bool(_LIBPYTHON_NAME.fullmatch(v))),
    )


_REQUIREMENT = re.compile(
    r"([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?:\[[A-Za-z0-9._,-]+\])?==([A-Za-z0-9.+!_-]+)"
)


def pins_of(requirements: tuple[str, ...], by: Literal["requirements", "extra"]) -> dict[str, Pin]:
    """``name → Pin`` of requirements pinned exactly (with their hashes, if any)."""
    found = {}
    for requirement in requirements:
        words = requirement.split()
        match = _REQUIREMENT.fullmatch(words[0]) if words else None
        if match is None:
            continue
        hashes = tuple(w.removeprefix("--hash=sha256:") for w in words[1:] if "=" in w)
        found[normal(match.group(1))] = Pin(match.group(2), hashes, by)
    return found
