"""Dependencies a ``pyproject.toml`` declares as ranges, with no lock in the tree.

A ``pyproject.toml`` is read only when no Python lock pins it: a ``uv.lock``,
``poetry.lock``, ``pdm.lock`` or ``pylock.toml`` (``pylock.*.toml``) in its folder or
a folder above it (a uv workspace locks its members at its root), or a requirements
file beside it in which every requirement is exact (``pip-compile``'s output, Rye's
``requirements.lock``).  It is then parsed by the bounded TOML reader, within the
screen's parsing budget, and every declaration without an exact version is listed at
its line: PEP 621's ``[project] dependencies`` and ``optional-dependencies``, PEP
735's ``[dependency-groups]``, uv's ``dev-dependencies``, and Poetry's
``dependencies`` tables (``^1.2`` and ``~1`` are ranges; ``1.2.3`` is exact; a git
dependency is exact at a ``rev``; a path is local).  When a lock the subject would
have is ignored by git, the finding says which ``.gitignore`` line ignores it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from typing import Any

import re2

from tracework.readers import DataError, Table, load_toml
from tracework.screen.documents import FILE_CAP, Budget
from tracework.screen.model import Finding, Found, folder_of, name_of, shown
from tracework.screen.pins import exact_requirement, exact_version

#: The lock files that pin what a pyproject.toml declares.
PYTHON_LOCKS = ("uv.lock", "poetry.lock", "pdm.lock", "pylock.toml")
# names are matched with Python's re: a name that is not UTF-8 holds surrogates, which
# re2 cannot take (the patterns are anchored and short)
_PYLOCK = re.compile(r"pylock\.[^/]+\.toml")
_PINNED_FILE = re.compile(r"requirements[\w.-]*\.(?:txt|lock)")
_REQUIREMENT_LINE = re2.compile(r"^\s*[A-Za-z0-9]")
_HEADER = re2.compile(r"^\s*\[\[?\s*([^\[\]#]+?)\s*\]\]?\s*(?:#.*)?$")
_STRING = re2.compile(r""""((?:[^"\\\n]|\\.)*)"|'([^'\n]*)'""")
_KEY = re2.compile(r"""^\s*(?:"([^"\n]+)"|'([^'\n]+)'|([A-Za-z0-9_.-]+))\s*=""")
_FULL_SHA = re2.compile(r"^[0-9a-f]{40}$")

KIND = "dependency without an exact version, and no lock file pins it"


def is_python_lock(name: str) -> bool:
    low = name.lower()
    return low in PYTHON_LOCKS or bool(_PYLOCK.fullmatch(low))


def pins_every_requirement(name: str, lines: list[str]) -> bool:
    """Whether a requirements file is a lock: at least one requirement, each exact."""
    if not _PINNED_FILE.fullmatch(name.lower()):
        return False
    requirements = [
        text.split("#", 1)[0]
        for text in lines
        if _REQUIREMENT_LINE.match(text) and not text.lstrip().startswith("-")
    ]
    return bool(requirements) and all(exact_requirement(r) for r in requirements)


def covered(folder: str, locked: set[str]) -> bool:
    """Whether a lock in ``folder`` or a folder above it pins a pyproject.toml there."""
    while True:
        if folder in locked:
            return True
        if folder == ".":
            return False
        folder = folder_of(folder)


def kind(reason: str) -> str:
    """The finding's words, with why no lock is there when it is known."""
    return f"{KIND} ({reason})" if reason else KIND


class _Places:
    """Where a pyproject.toml's tables, keys and strings are, by line (tomllib keeps
    no positions): one pass over the lines, each looked up in logarithmic time."""

    def __init__(self, lines: list[str]) -> None:
        self.tables: dict[str, int] = {}
        self.strings: dict[str, list[int]] = {}
        self.keys: dict[str, list[int]] = {}
        for n, text in enumerate(lines, start=1):
            header = _HEADER.match(text)
            if header is not None:
                name = ".".join(p.strip().strip("\"'") for p in header.group(1).split("."))
                self.tables.setdefault(name, n)
                continue
            key = _KEY.match(text)
            if key is not None:
                found = key.group(1) or key.group(2) or key.group(3)
                self.keys.setdefault(found, []).append(n)
            for match in _STRING.finditer(text):
                value = match.group(1) if match.group(1) is not None else match.group(2)
                self.strings.setdefault(value, []).append(n)

    def table(self, name: str) -> int:
        """The line of ``[name]``, else of the nearest table above it, else 1."""
        parts = name.split(".")
        while parts:
            line = self.tables.get(".".join(parts))
            if line is not None:
                return line
            parts.pop()
        return 1

    def _at(self, where: dict[str, list[int]], text: str, table: str) -> int:
        lines = where.get(text)
        start = self.table(table)
        if not lines:
            return start
        i = bisect.bisect_left(lines, start)
        return lines[i] if i < len(lines) else lines[0]

    def string(self, text: str, table: str) -> int:
        return self._at(self.strings, text, table)

    def key(self, text: str, table: str) -> int:
        return self._at(self.keys, text, table)


def _table(data: Any, *keys: str) -> Table:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _pep508(data: Table) -> Iterator[tuple[str, str]]:
    """(table, requirement) of each PEP 508 declaration: PEP 621, PEP 735 and uv's."""
    for requirement in _strings(_table(data, "project").get("dependencies")):
        yield "project", requirement
    for _, listed in sorted(_table(data, "project", "optional-dependencies").items()):
        for requirement in _strings(listed):
            yield "project.optional-dependencies", requirement
    for _, listed in sorted(_table(data, "dependency-groups").items()):
        for requirement in _strings(listed):  # {include-group = …} is no requirement
            yield "dependency-groups", requirement
    for requirement in _strings(_table(data, "tool", "uv").get("dev-dependencies")):
        yield "tool.uv", requirement


def _poetry_tables(data: Table) -> Iterator[tuple[str, Table]]:
    poetry = _table(data, "tool", "poetry")
    yield "tool.poetry.dependencies", _table(poetry, "dependencies")
    yield "tool.poetry.dev-dependencies", _table(poetry, "dev-dependencies")
    for group in sorted(_table(poetry, "group")):
        table = _table(poetry, "group", group, "dependencies")
        yield f"tool.poetry.group.{group}.dependencies", table


def _poetry_exact(value: Any) -> bool:
    """A Poetry constraint: a version string, a table, or a list of tables (one per
    marker); a path dependency is the subject's own code, so it counts as exact."""
    if isinstance(value, str):
        return exact_version(value)
    if isinstance(value, list):
        return all(_poetry_exact(v) for v in value) if value else True
    if not isinstance(value, dict):
        return True
    if "git" in value:
        return isinstance(value.get("rev"), str) and bool(_FULL_SHA.match(value["rev"]))
    if "path" in value or "url" in value:
        return True
    version = value.get("version")
    return not isinstance(version, str) or exact_version(version)


def _declarations(data: Table, places: _Places) -> Iterable[int]:
    """The line of each declaration without an exact version."""
    for table, requirement in _pep508(data):
        if not exact_requirement(requirement):
            yield places.string(requirement, table)
    for table, dependencies in _poetry_tables(data):
        for name, value in dependencies.items():
            if name.lower() != "python" and not _poetry_exact(value):
                yield places.key(name, table)


def read(
    path: str, data: bytes | None, lines: list[str], size: int, budget: Budget, reason: str
) -> Found:
    """A pyproject.toml no lock pins: each range it declares, at its line, or why its
    declarations were not read."""
    found = Found()
    problem = None
    if data is None:
        problem = f"{size} bytes, over the size cap"
    elif not lines:
        problem = "binary"
    elif size > FILE_CAP:
        problem = f"{size} bytes, over the {FILE_CAP // 1024} KiB parsed"
    elif not budget.take(size):
        problem = "the screen's parsing budget was spent"
    if problem is None:
        try:
            parsed = load_toml("\n".join(lines))
        except DataError as exc:
            problem = str(exc)
        else:
            head = {n: shown(lines[n - 1]) for n in _declarations(parsed, _Places(lines))}
            found.findings += [
                Finding("unpinned", path, n, kind(reason), text) for n, text in sorted(head.items())
            ]
            return found
    what = f"{name_of(path)} not read for its dependencies ({problem}), and no lock file pins it"
    found.findings.append(Finding("unpinned", path, 1, what, shown(lines[0]) if lines else ""))
    return found
