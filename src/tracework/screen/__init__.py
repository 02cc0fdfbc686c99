"""Screening a subject without running it: what in the checkout would run, or instruct.

Reads the tree and blobs at one commit and nothing else.  Each finding names its
path and the line that makes it one: auto-run surfaces (editor, container, agent
and hook configurations, committed git repositories whose config git would obey),
agent-instruction files (shown as data, never followed), build-time execution
points (each CI step's command, Dockerfile ``RUN``, agent-platform and deploy
configurations, build scripts, and the task-file targets something found here
runs), and dependency surfaces with unpinned ranges: those no lock file pins, and
the installs no lock fixes.  Beside the findings, the cooldown lists locked packages
published shortly before the commit.  The result is deterministic: findings are
sorted by category, path and line.

The stages, one module each: :mod:`.surfaces` (what a file is by its name),
:mod:`.ci` and :mod:`.platforms` (configurations parsed by :mod:`.documents`, their
commands judged by :mod:`.commands` and :mod:`.installs`), :mod:`.pyproject` (the
ranges a ``pyproject.toml`` declares, and :mod:`.ignored`, the ``.gitignore`` line
that keeps its lock out), :mod:`.pins` (what is exact), :mod:`.tasks` (who runs a
Makefile target), :mod:`.cooldown` (lock files and their dates).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypedDict

import tracework.screen.ci as ci
import tracework.screen.cooldown as cooldown
import tracework.screen.ignored as ignored
import tracework.screen.platforms as platforms
import tracework.screen.pyproject as pyproject
import tracework.screen.surfaces as surfaces
import tracework.screen.tasks as tasks
from tracework.git.mirror import Blob, Mirror, TreeEntry
from tracework.screen.cooldown import DEFAULT_DAYS, Cooldown, Times
from tracework.screen.documents import Budget, lines_of
from tracework.screen.model import CATEGORIES, Finding, Found, folder_of, name_of, shown

__all__ = [
    "CATEGORIES",
    "DEFAULT_DAYS",
    "Cooldown",
    "Finding",
    "Screen",
    "ScreenJson",
    "screen",
]

# keys of a git config that make git run a command (or point it at a work tree)
_GIT_CONFIG_RUNS = re.compile(
    r"^\s*(fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy|worktree|"
    r"clean|smudge|process|textconv|command|driver)\s*=",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Screen:
    """The screen of one commit, and its cooldown window."""

    commit: str
    findings: tuple[Finding, ...]
    files: int
    cooldown: Cooldown

    def counts(self) -> dict[str, int]:
        counted = Counter(f.category for f in self.findings)
        return {c: counted.get(c, 0) for c in CATEGORIES}

    def as_json(self) -> ScreenJson:
        """What ``tracework screen --json`` prints of it (and records.json keeps)."""
        window = self.cooldown
        return {
            "commit": self.commit,
            "files": self.files,
            "counts": self.counts(),
            "items": [
                {
                    "category": f.category,
                    "path": f.path,
                    "line": f.line,
                    "kind": f.kind,
                    "text": f.text,
                    "run_by": list(f.run_by),
                    "step": f.step,
                }
                for f in self.findings
            ],
            "cooldown": {
                "days": window.days,
                "commit_date": window.commit_date,
                "since": window.since,
                "inside": window.inside(),
                "verdict": window.verdict(),
                "locks": [
                    {
                        "path": lock.path,
                        "times": lock.times,
                        "note": lock.note,
                        "listed": lock.listed,
                        "dated": lock.dated,
                        "packages": [
                            {
                                "name": p.name,
                                "version": p.version,
                                "uploaded": p.uploaded,
                                "age_days": p.age_days,
                                "line": p.line,
                            }
                            for p in lock.packages
                        ],
                    }
                    for lock in window.locks
                ],
            },
        }


# -- what ``screen --json`` prints, key by key (in this order) -------------------------


class FindingJson(TypedDict):
    """A :class:`Finding`, its fields in their order (``run_by`` a list)."""

    category: str
    path: str
    line: int
    kind: str
    text: str
    run_by: list[str]
    step: str


class RecentJson(TypedDict):
    """A :class:`~tracework.screen.cooldown.Recent`: a locked package inside the window."""

    name: str
    version: str
    uploaded: str
    age_days: int
    line: int


class LockWindowJson(TypedDict):
    """A :class:`~tracework.screen.cooldown.LockWindow`: one lock file."""

    path: str
    times: Times
    note: str
    listed: int | None
    dated: int | None
    packages: list[RecentJson]


class CooldownJson(TypedDict):
    """The :class:`Cooldown`, with how many packages are inside it and its verdict."""

    days: int
    commit_date: str
    since: str
    inside: int
    verdict: str
    locks: list[LockWindowJson]


class ScreenJson(TypedDict):
    """A :class:`Screen`: the commit, how many paths its tree has, the findings'
    counts by category and the findings, and the cooldown."""

    commit: str
    files: int
    counts: dict[str, int]
    items: list[FindingJson]
    cooldown: CooldownJson


def embedded_repositories(paths: Iterable[str]) -> list[str]:
    """Folders of a tree that git would take for a repository of their own.

    A committed bare repository (``HEAD``, ``config``, ``objects/``, ``refs/``) is
    entered by any git command run inside it in a checkout — a shell prompt showing
    ``git status`` is enough — and its ``config`` can then run commands
    (``core.fsmonitor``, ``core.pager``, filters…).  Found from names only.
    """
    listed = set(paths)
    heads = sorted(p for p in listed if p == "HEAD" or p.endswith("/HEAD"))
    return [
        folder
        for folder in (head[: -len("HEAD")] for head in heads)
        if f"{folder}config" in listed
        and any(p.startswith(f"{folder}objects/") for p in listed)
        and any(p.startswith(f"{folder}refs/") for p in listed)
    ]


def _embedded_findings(folder: str, lines: list[str]) -> list[Finding]:
    kind = "embedded git repository: git run inside it obeys this config"
    hits = [(n, t) for n, t in enumerate(lines, start=1) if _GIT_CONFIG_RUNS.search(t)]
    hits = hits or [(1, lines[0] if lines else "")]
    return [Finding("auto-run", f"{folder}config", n, kind, shown(t)) for n, t in hits]


def _read_by_screen(path: str) -> bool:
    name = name_of(path)
    return (
        surfaces.by_name(path)
        or ci.is_ci(path)
        or platforms.reader_for(path) is not None
        or tasks.is_task_file(name)
        or tasks.is_build_script(name)
        or cooldown.is_dated_lock(name)
    )


def screen(mirror: Mirror, commit: str, *, cooldown_days: int = DEFAULT_DAYS) -> Screen:
    """Screen every path of the tree at ``commit``, reading only the blobs that matter,
    and the lock files' packages published within ``cooldown_days`` before it."""
    tree = mirror.tree(commit)
    files = {p: e for p, e in tree.items() if e.kind == "file"}
    folders_with_lock = {folder_of(p) for p in tree if surfaces.is_lock(name_of(p))}
    python_locked = {folder_of(p) for p in files if pyproject.is_python_lock(name_of(p))}
    wanted = sorted(p for p in files if _read_by_screen(p))
    gitignores = _gitignores_to_read(files, folders_with_lock, python_locked)
    embedded = [f for f in embedded_repositories(tree) if f"{f}config" in files]
    blobs = mirror.read_blobs(
        [
            *(files[p].oid for p in [*wanted, *gitignores]),
            *(files[f"{f}config"].oid for f in embedded),
        ]
    )
    ignores = ignored.Ignores({p: lines_of(blobs[files[p].oid].data) for p in gitignores})
    read = {p: _lines(blobs[files[p].oid]) for p in wanted}
    python_locked |= {
        folder_of(p) for p in wanted if pyproject.pins_every_requirement(name_of(p), read[p])
    }
    budget = Budget()
    found = Found()
    task_files: list[tasks.TaskFile] = []
    locks: dict[str, tuple[bytes | None, int]] = {}
    for path in wanted:
        blob = blobs[files[path].oid]
        name = name_of(path)
        lines = read[path]
        has_lock = folder_of(path) in folders_with_lock
        if name.lower() == "pyproject.toml":
            has_lock = pyproject.covered(folder_of(path), python_locked)
        why = "" if has_lock else _why_no_lock(path, ignores)
        found += surfaces.classify(path, lines, has_lock, why)
        if name.lower() == "pyproject.toml" and not has_lock:
            found += pyproject.read(path, blob.data, lines, blob.size, budget, why)
        if ci.is_ci(path):
            found += ci.read(path, blob.data, blob.size, budget)
        reader = platforms.reader_for(path)
        if reader is not None:
            found += reader(path, blob.data, blob.size, budget)
        if tasks.is_task_file(name):
            task_files.append(tasks.parse(path, lines))
        found.commands += tasks.build_script_commands(path, lines)
        if cooldown.is_dated_lock(name):
            locks[path] = (blob.data, blob.size)
    findings = [*found.findings, *tasks.findings(task_files, found.commands)]
    for folder in embedded:
        blob = blobs[files[f"{folder}config"].oid]
        findings += _embedded_findings(folder, lines_of(blob.data or blob.head))
    order = {c: i for i, c in enumerate(CATEGORIES)}
    findings = sorted(
        dict.fromkeys(findings),
        key=lambda f: (order[f.category], f.path, f.line, f.kind, f.step),
    )
    window = cooldown.window(locks, mirror.commit_info(commit).date, cooldown_days)
    return Screen(commit, tuple(findings), len(tree), window)


#: The lock files a manifest's folder would hold, by the manifest's name.
_LOCKS_OF = {
    "pyproject.toml": pyproject.PYTHON_LOCKS,
    "package.json": (
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lock",
    ),
}


def _gitignores_to_read(
    files: Mapping[str, TreeEntry], folders_with_lock: set[str], python_locked: set[str]
) -> list[str]:
    """The ``.gitignore`` files that may say why a manifest has no lock beside it."""
    wanted: set[str] = set()
    for path in files:
        low = name_of(path).lower()
        folder = folder_of(path)
        if low not in _LOCKS_OF:
            continue
        if low == "pyproject.toml":
            if pyproject.covered(folder, python_locked):
                continue
        elif folder in folders_with_lock:
            continue
        wanted.update(p for p in ignored.gitignore_paths(folder) if p in files)
    return sorted(wanted)


def _lines(blob: Blob) -> list[str]:
    return lines_of(blob.data if blob.data is not None else blob.head)


def _why_no_lock(path: str, ignores: ignored.Ignores) -> str:
    """Why a manifest's folder holds no lock, when a ``.gitignore`` line says."""
    names = _LOCKS_OF.get(name_of(path).lower())
    if not names or not ignores.rules:
        return ""
    folder = folder_of(path)
    prefix = "" if folder == "." else f"{folder}/"
    return ignores.reason([f"{prefix}{n}" for n in names])
