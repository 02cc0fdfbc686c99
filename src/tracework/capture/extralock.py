"""``captures/NAME.lock``: the harness's own packages, resolved once, then installed as written.

A declaration's ``extra`` may list exact versions without hashes (``"pytest==8.3.3"``).
``capture env`` — the one step that may use the network — resolves them inside the
build's isolation against the environment the subject's lock (or its pins) installs:
what is already installed at a version the resolution accepts needs nothing; the
rest, dependencies included, is written here with the SHA-256 of every file the
registry has of each (as ``uv pip compile --generate-hashes`` gives them).  Every later
build installs the file as written (``uv pip install --require-hashes --no-deps``), so
what the harness added is evidence: committed, hashed in each capture's manifest, and
copied into the capture folder as ``extra.lock``.

Each package's files follow it, one ``# file: NAME sha256:…`` comment each (uv resolves
into a ``pylock.toml``, PEP 751, which names them), so the file a build installed is
told by its tags, as for the subject's lock (:mod:`.provenance`).  Its header says
what it was resolved from and against, in lines tracework reads back:

    # resolved-from: pytest==8.3.3        the declaration's entries, normalised
    # python: 3.11.7                      the Python it was resolved for
    # already-installed: packaging==24.1  what the resolution took from the environment

``capture env`` resolves again, and says why, when the declaration's ``extra`` is no
longer what the file was resolved from, when the Python differs, or when the
environment no longer has a package at the version the file relies on (or has one it
adds, at another version); ``capture`` never resolves: it refuses with exit 2 and the
hint to run ``capture env``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from tracework.capture.config import CaptureConfig
from tracework.capture.errors import CaptureConfigError, EnvironmentBuildFailed
from tracework.capture.lock import LockedFile
from tracework.capture.provenance import normal
from tracework.readers import DataError, load_toml

FORMAT = "# tracework extra lock, format 1"
#: The largest lock file read (a resolution's hashes: a few kB a package).
MAX_BYTES = 8 << 20
_PIN = re.compile(r"([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)==([A-Za-z0-9.+!_-]+)")
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")
_ENTRY = re.compile(
    r"([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?:\[([A-Za-z0-9._,-]+)\])?==([A-Za-z0-9.+!_-]+)"
)


_FILE = re.compile(r"# file: ([A-Za-z0-9][A-Za-z0-9._+!~-]{0,250}) sha256:([0-9a-f]{64})")


@dataclass(frozen=True)
class LockedPin:
    """One package of the lock: its name (normalised), version and every file's hash,
    with the files' names where the lock gives them (a ``# file:`` line each)."""

    name: str
    version: str
    hashes: tuple[str, ...]
    files: tuple[LockedFile, ...] = ()


@dataclass(frozen=True)
class ExtraLock:
    """``captures/NAME.lock`` as read (or as resolved now, before it is written)."""

    resolved_from: tuple[str, ...]
    python: str
    already_installed: tuple[tuple[str, str], ...]
    packages: tuple[LockedPin, ...]
    text: str

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8")


def lock_path(name: str) -> str:
    """``captures/NAME.lock``, relative to the workspace root."""
    return f"captures/{name}.lock"


def declared(config: CaptureConfig) -> tuple[str, ...]:
    """The declaration's ``extra`` entries, normalised (name and extras as PEP 503 and
    685 compare them) and sorted: what a lock resolved from them records."""
    out = []
    for entry in config.extra:
        match = _ENTRY.match(entry)
        if match is None:  # the declaration's pattern admits only these
            raise CaptureConfigError(f"extra: {entry!r} is not name==version")
        name, extras, version = match.groups()
        shown = normal(name)
        if extras:
            shown += "[" + ",".join(sorted({normal(e) for e in extras.split(",")})) + "]"
        out.append(f"{shown}=={version}")
    return tuple(sorted(out))


def read_extra_lock(raw: bytes, name: str) -> ExtraLock:
    """The lock file's bytes as an :class:`ExtraLock`; one message naming the file and
    the line when tracework did not write it so."""
    where = lock_path(name)
    if len(raw) > MAX_BYTES:
        raise CaptureConfigError(f"{where} is larger than {MAX_BYTES >> 20} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CaptureConfigError(f"{where} is not UTF-8 text") from None
    header: dict[str, list[str]] = {}
    named: dict[str, str] = {}
    for line in text.splitlines():
        file = _FILE.fullmatch(line.strip())
        if file is not None:
            named[file.group(2)] = file.group(1)
    pins = tuple(
        LockedPin(
            p.name,
            p.version,
            p.hashes,
            tuple(
                LockedFile(named[h], h, "sdist" if not named[h].endswith(".whl") else "wheel")
                for h in p.hashes
                if h in named
            ),
        )
        for p in parse_requirements(text, where)
    )
    for line in text.splitlines():
        if line.startswith("# ") and ": " in line:
            key, _, value = line[2:].partition(": ")
            if key in ("resolved-from", "python", "already-installed"):
                header.setdefault(key, []).append(value.strip())
    if FORMAT not in text.splitlines() or len(header.get("python", [])) != 1:
        raise CaptureConfigError(
            f"{where} was not written by `tracework capture env` (its header is not there)",
            hint=f"remove it and run `tracework capture env {name}`: it resolves extra again",
        )
    installed = []
    for value in header.get("already-installed", []):
        match = _PIN.fullmatch(value)
        if match is None:
            raise CaptureConfigError(f"{where}: 'already-installed: {value[:80]}' is not a pin")
        installed.append((normal(match.group(1)), match.group(2)))
    return ExtraLock(
        resolved_from=tuple(sorted(header.get("resolved-from", []))),
        python=header["python"][0],
        already_installed=tuple(sorted(installed)),
        packages=pins,
        text=text,
    )


def parse_requirements(text: str, where: str) -> tuple[LockedPin, ...]:
    """Hashed pins of a requirements file: ``name==version`` with one or more
    ``--hash=sha256:…``, continued over lines by a backslash; comments and blank lines
    aside, anything else is refused, naming the line."""
    pins: dict[str, LockedPin] = {}
    logical: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        logical.append((start, pending + stripped))
        pending = ""
    if pending:
        logical.append((start, pending))
    for number, line in logical:
        words = line.split()
        match = _PIN.fullmatch(words[0]) if words else None
        hashes = [_HASH.fullmatch(w) for w in words[1:]]
        if match is None or not hashes or not all(hashes):
            raise CaptureConfigError(
                f"{where}, line {number}: not a pin with hashes ('name==1.2.3 "
                "--hash=sha256:<64 hex>')"
            )
        name = normal(match.group(1))
        if name in pins:
            raise CaptureConfigError(f"{where}, line {number}: {name} is pinned twice")
        pins[name] = LockedPin(name, match.group(2), tuple(h.group(1) for h in hashes if h))
    return tuple(pins[n] for n in sorted(pins))


def render(
    name: str,
    resolved_from: tuple[str, ...],
    python: str,
    against: str,
    uv: str,
    already_installed: tuple[tuple[str, str], ...],
    packages: tuple[LockedPin, ...],
) -> ExtraLock:
    """The lock file tracework writes: its header, then each package with its hashes."""
    lines = [
        f"# {lock_path(name)}: the packages `extra` of captures/{name}.toml adds to the",
        "# capture's environment, each with the SHA-256 of every file the registry has of it.",
        f"# Written by `tracework capture env {name}`; each later build installs it as written",
        f"# (uv pip install --require-hashes --no-deps -r {lock_path(name)}). Commit it; to",
        f"# change it, change `extra` and run `tracework capture env {name}` again.",
        FORMAT,
        f"# resolved-by: uv {uv}",
        *(f"# resolved-from: {entry}" for entry in resolved_from),
        f"# python: {python}",
        f"# against: {against}",
        *(f"# already-installed: {n}=={v}" for n, v in already_installed),
    ]
    for pin in packages:
        lines.append(f"{pin.name}=={pin.version} \\")
        lines += [f"    --hash=sha256:{h} \\" for h in pin.hashes[:-1]]
        lines.append(f"    --hash=sha256:{pin.hashes[-1]}")
        lines += [f"    # file: {f.filename} sha256:{f.sha256}" for f in pin.files]
    text = "".join(f"{line}\n" for line in lines)
    return ExtraLock(resolved_from, python, already_installed, packages, text)


def stale(lock: ExtraLock | None, config: CaptureConfig, python: str) -> str | None:
    """Why ``lock`` does not hold what the declaration asks, for this Python (None:
    it does, as far as the declaration tells)."""
    if lock is None:
        return "it does not exist yet"
    now = set(declared(config))
    then = set(lock.resolved_from)
    if now != then:
        parts = []
        if now - then:
            parts.append("now also " + ", ".join(sorted(now - then)))
        if then - now:
            parts.append("no longer " + ", ".join(sorted(then - now)))
        return "extra changed: " + "; ".join(parts)
    if lock.python != python:
        return f"it was resolved for Python {lock.python}, the environment's is {python}"
    return None


def conflict(lock: ExtraLock, environment: dict[str, str]) -> str | None:
    """Why ``lock`` does not fit the environment it is installed into (``name →
    version`` of what the environment holds before it): a package it relies on that is
    gone or at another version, or one it adds that is there at another version."""
    for name, version in lock.already_installed:
        held = environment.get(name)
        if held != version:
            now = f"is {held}" if held else "is not installed"
            return f"{name} {now} in the environment, the lock relies on {version}"
    for pin in lock.packages:
        held = environment.get(pin.name)
        if held is not None and held != pin.version:
            return f"{pin.name} is {held} in the environment, the lock adds {pin.version}"
    return None


def split(
    resolved: tuple[LockedPin, ...], environment: dict[str, str]
) -> tuple[tuple[tuple[str, str], ...], tuple[LockedPin, ...]]:
    """A resolution against the environment, split into what the environment already
    holds at that version (needs nothing) and what the lock adds."""
    held = tuple((p.name, p.version) for p in resolved if environment.get(p.name) == p.version)
    added = tuple(p for p in resolved if environment.get(p.name) != p.version)
    return held, added


def parse_pylock(text: str) -> tuple[LockedPin, ...]:
    """The packages of the ``pylock.toml`` uv's resolution wrote (PEP 751), each with
    its files (the sdist and every wheel) and their SHA-256, sorted by name; one that
    names no file with a SHA-256 (a folder, a repository) is refused, naming it."""
    try:
        data = load_toml(text)
    except DataError as exc:
        problem = f"uv pip compile's pylock.toml is not readable ({exc})"
        raise EnvironmentBuildFailed(problem) from None
    packages = data.get("packages")
    found: dict[str, LockedPin] = {}
    for package in packages if isinstance(packages, list) else []:
        if not isinstance(package, dict):
            continue
        name, version = normal(str(package.get("name", ""))), str(package.get("version", ""))
        files = [_pylock_file(entry, "sdist") for entry in [package.get("sdist")]]
        wheels = package.get("wheels")
        files += [_pylock_file(w, "wheel") for w in wheels] if isinstance(wheels, list) else []
        listed = tuple(sorted({f for f in files if f is not None}, key=lambda f: f.filename))
        if not listed or not _PIN.fullmatch(f"{name}=={version}"):
            raise EnvironmentBuildFailed(
                f"the resolution of extra has {name[:100]} {version[:50]} with no file of the "
                "registry's (a folder, a repository or a URL)",
                hint="extra installs packages of the registry alone",
            )
        hashes = tuple(sorted({f.sha256 for f in listed}))
        found[name] = LockedPin(name, version, hashes, listed)
    return tuple(found[n] for n in sorted(found))


def _pylock_file(entry: Any, kind: str) -> LockedFile | None:
    """One file of a pylock.toml package: its name (or its URL's last part) and SHA-256."""
    if not isinstance(entry, dict):
        return None
    hashes = entry.get("hashes")
    digest = hashes.get("sha256") if isinstance(hashes, dict) else None
    where = str(entry.get("name") or entry.get("url") or "")
    filename = unquote(where.split("?")[0].split("#")[0].rsplit("/", 1)[-1])
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
        return None
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+!~-]{0,250}", filename):
        return None
    return LockedFile(filename, digest, kind)
