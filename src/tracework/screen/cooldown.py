"""Dependencies inside a cooldown: locked packages published shortly before the commit.

A package version published days before a commit has had little time to be noticed
if it was malicious; a *cooldown* of N days is the usual defence.  The screen reads
it offline, from the lock file alone, where the format records when each file was
published, and measures back from the commit's committer date:

- ``uv.lock`` records each sdist's and wheel's ``upload-time`` (uv ≥ 0.5); a package
  is dated by its newest file (a wheel added to an old release is new code);
- ``composer.lock`` records each package's release ``time``;
- ``pnpm-lock.yaml`` records publish times in its ``time:`` section only when pnpm
  resolved in time-based mode, and then for direct dependencies only;
- ``package-lock.json``, ``npm-shrinkwrap.json``, ``yarn.lock``, ``bun.lock``,
  ``poetry.lock``, ``Pipfile.lock``, ``pdm.lock``, ``Cargo.lock``, ``go.sum`` and
  ``Gemfile.lock`` record none: the screen says so rather than guess.

A package published after the commit's date (a forged date, or a lock edited
later) is inside the window too, with a negative age.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import re2

from tracework.readers import load_toml
from tracework.screen.documents import lines_of
from tracework.screen.model import name_of

DEFAULT_DAYS = 7

Times = Literal["recorded", "direct dependencies only", "none", "unreadable"]

_NO_TIMES = {
    "package-lock.json": "npm lock files record no publish times",
    "npm-shrinkwrap.json": "npm lock files record no publish times",
    "yarn.lock": "yarn.lock records no publish times",
    "bun.lock": "bun.lock records no publish times",
    "bun.lockb": "bun.lockb records no publish times",
    "poetry.lock": "poetry.lock records no upload times",
    "pipfile.lock": "Pipfile.lock records no upload times",
    "pdm.lock": "pdm.lock records no upload times",
    "cargo.lock": "Cargo.lock records no publish times",
    "go.sum": "go.sum records no publish times",
    "gemfile.lock": "Gemfile.lock records no publish times",
}
_PNPM_TIME = re2.compile(r"""^\s+(['"]?)(.+?)(['"]?)\s*:\s*['"]?([0-9][0-9T:.+\-Z]*)['"]?\s*$""")


@dataclass(frozen=True, order=True)
class Recent:
    """A locked package published inside the window."""

    name: str
    version: str
    uploaded: str
    age_days: int
    line: int


@dataclass(frozen=True)
class LockWindow:
    """One lock file's packages inside the window, or why none can be judged.

    ``listed`` counts the packages the lock holds and ``dated`` those it dates
    (None where the format records no times).
    """

    path: str
    times: Times
    note: str
    listed: int | None
    dated: int | None
    packages: tuple[Recent, ...]


@dataclass(frozen=True)
class Cooldown:
    """The window (``days`` before the commit's committer date) and each lock file."""

    days: int
    commit_date: str
    since: str
    locks: tuple[LockWindow, ...]

    def inside(self) -> int:
        return sum(len(lock.packages) for lock in self.locks)

    def verdict(self) -> str:
        """The window in a few words, the same on the command line, in ``--json`` and
        on the page: see :func:`verdict`."""
        return verdict(
            self.inside(),
            locks=len(self.locks),
            dated=sum(1 for lock in self.locks if lock.dated),
        )


#: What the cooldown says, in every output.
NO_LOCK = "no lock file"
NOT_DATED = "not judged: no lock file here records when its packages were published"
NONE_INSIDE = "none inside the cooldown"


def verdict(inside: int, *, locks: int, dated: int) -> str:
    """``no lock file`` when the tree holds none; ``not judged…`` when no lock dates its
    packages; ``none inside the cooldown`` when the locked packages are all older; else
    how many are inside."""
    if inside:
        return f"{inside} locked package{'' if inside == 1 else 's'} inside the cooldown"
    if not locks:
        return NO_LOCK
    return NONE_INSIDE if dated else NOT_DATED


def is_dated_lock(name: str) -> bool:
    return (
        name.lower() in ("uv.lock", "composer.lock", "pnpm-lock.yaml") or name.lower() in _NO_TIMES
    )


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _moment(text: object) -> datetime | None:
    """A timestamp as the lock wrote it, or None when it is not one."""
    if not isinstance(text, str) or len(text) > 64:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def window(locks: dict[str, tuple[bytes | None, int]], commit_date: str, days: int) -> Cooldown:
    """Every lock file's packages published within ``days`` before ``commit_date``.

    ``locks`` maps each lock file's path to its bytes (None when over the size
    cap) and size.
    """
    end = datetime.fromisoformat(commit_date)
    start = end - timedelta(days=days)
    found = tuple(
        _judge(path, data, size, start, end) for path, (data, size) in sorted(locks.items())
    )
    return Cooldown(days, _iso(end), _iso(start), found)


def _judge(path: str, data: bytes | None, size: int, start: datetime, end: datetime) -> LockWindow:
    low = name_of(path).lower()
    if low in _NO_TIMES:
        return LockWindow(path, "none", f"{_NO_TIMES[low]}: not judged", None, None, ())
    if data is None:
        return LockWindow(
            path,
            "unreadable",
            f"{size} bytes, over the size cap ([limits] quote_size_cap): not read",
            None,
            None,
            (),
        )
    lines = lines_of(data)
    try:
        if low == "uv.lock":
            dated, listed, note = _uv(lines)
        elif low == "composer.lock":
            dated, listed, note = _composer(lines)
        else:
            dated, listed, note = _pnpm(lines)
    except ValueError as exc:
        return LockWindow(
            path, "unreadable", f"not readable ({' '.join(str(exc).split())[:120]})", None, None, ()
        )
    inside = sorted(
        Recent(name, version, _iso(when), math.floor((end - when).total_seconds() / 86400), line)
        for name, version, when, line in dated
        if when > start
    )
    if low == "pnpm-lock.yaml":
        times: Times = "direct dependencies only" if dated else "none"
    else:
        times = "recorded" if dated else "none"
    return LockWindow(path, times, note, listed, len(dated), tuple(inside))


Dated = list[tuple[str, str, datetime, int]]


def _uv(lines: list[str]) -> tuple[Dated, int | None, str]:
    """uv.lock: each package dated by the newest upload of the files it lists."""
    data = load_toml("\n".join(lines))
    packages = data.get("package", [])
    if not isinstance(packages, list):
        raise ValueError("'package' is not an array of tables")
    where = _package_lines(lines)
    dated: Dated = []
    for package in packages:
        if not isinstance(package, dict):
            continue
        name, version = package.get("name"), package.get("version")
        if not isinstance(name, str) or not isinstance(version, str):
            continue
        files = [package.get("sdist"), *_as_list(package.get("wheels"))]
        moments = [m for f in files if isinstance(f, dict) and (m := _moment(f.get("upload-time")))]
        if moments:
            dated.append((name, version, max(moments), where.get((name, version), 1)))
    note = (
        "dated by each package's newest upload-time"
        if dated
        else "no upload-time recorded (uv writes them from 0.5 on; git, path and workspace "
        "packages have none): not judged"
    )
    return dated, len(packages), note


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _package_lines(lines: list[str]) -> dict[tuple[str, str], int]:
    """The line of each ``[[package]]``'s ``name =`` in a uv.lock, by name and version."""
    where: dict[tuple[str, str], int] = {}
    name_line, name = 0, None
    for n, text in enumerate(lines, start=1):
        stripped = text.strip()
        if stripped == "[[package]]":
            name = None
        elif stripped.startswith("name = ") and name is None:
            name, name_line = _toml_string(stripped), n
        elif stripped.startswith("version = ") and name is not None:
            where.setdefault((name, _toml_string(stripped)), name_line)
    return where


def _toml_string(assignment: str) -> str:
    return assignment.split("=", 1)[1].strip().strip('"')


def _composer(lines: list[str]) -> tuple[Dated, int | None, str]:
    """composer.lock: each package's release ``time``."""
    data = json.loads("\n".join(lines))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    packages = [*_as_list(data.get("packages")), *_as_list(data.get("packages-dev"))]
    dated: Dated = []
    for package in packages:
        if not isinstance(package, dict):
            continue
        name, version, when = (
            package.get("name"),
            package.get("version"),
            _moment(package.get("time")),
        )
        if isinstance(name, str) and isinstance(version, str) and when is not None:
            needle = f'"name": {json.dumps(name)}'
            line = next((n for n, t in enumerate(lines, start=1) if needle in t), 1)
            dated.append((name, version, when, line))
    return dated, len(packages), "dated by each package's release time"


def _pnpm(lines: list[str]) -> tuple[Dated, int | None, str]:
    """pnpm-lock.yaml: the top-level ``time:`` section, read line by line (the rest of
    a large lock is never parsed)."""
    dated: Dated = []
    inside = False
    for n, text in enumerate(lines, start=1):
        if text and not text[0].isspace():
            inside = text.rstrip() == "time:"
            continue
        match = _PNPM_TIME.match(text) if inside else None
        if match is None:
            continue
        key, when = match.group(2).lstrip("/"), _moment(match.group(4))
        name, _, version = key.rpartition("@") if "@" in key[1:] else (key, "", "")
        if when is not None and name:
            dated.append((name, version.split("(")[0], when, n))  # no peer suffix
    note = (
        "pnpm records publish times of direct dependencies only, in time-based resolution mode"
        if dated
        else "no time: section (pnpm writes one only in time-based resolution mode): not judged"
    )
    return dated, None, note
