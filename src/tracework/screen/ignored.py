"""Which ``.gitignore`` line keeps a lock file out of the tree.

A subject that ignores its ``uv.lock`` ships ranges only: every checkout resolves
them afresh.  The screen says so by naming the line.  The rules are git's, simply
read: a line is a glob (``*`` and ``?`` within a folder, ``**`` across folders,
``[...]`` a set); one without a slash but at its end matches a name at any depth,
one with a slash matches the path from the ``.gitignore``'s folder; a line ending
in ``/`` names folders only (a lock is a file); ``!`` re-includes; ``#`` starts a
comment.  The last matching line of a file decides, and a deeper ``.gitignore``
overrides the ones above it.  Globs are matched by RE2, in time linear in the name,
and the work is bounded: at most :data:`RULE_CAP` lines of a file and
:data:`RULES_READ` in all are read, and :data:`MATCH_BUDGET` path matches made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracework.errors import TraceworkError
from tracework.register.evidence import glob_regex, matchable

#: Longer lines are not read as patterns (no lock file's path is this long).
LINE_CAP = 1024
#: Lines of a ``.gitignore`` past this many are not read, nor past this many in all.
RULE_CAP = 2_000
RULES_READ = 20_000
#: At most this many path matches of patterns with a slash per screen.
MATCH_BUDGET = 100_000
_GLOB = frozenset("*?[")


def gitignore_paths(folder: str) -> list[str]:
    """The ``.gitignore`` files that rule on a file in ``folder`` (``.`` is the root),
    deepest first."""
    parts = [] if folder == "." else folder.split("/")
    return ["/".join([*parts[:depth], ".gitignore"]) for depth in range(len(parts), -1, -1)]


def _glob(pattern: str) -> Any:
    """A glob compiled, False for a plain name (compared as text), None when too long
    for the matcher (it then matches nothing)."""
    if not _GLOB & set(pattern):
        return False
    try:
        return glob_regex(pattern)
    except TraceworkError:
        return None


def _match(regex: Any, text: str, subject: str) -> bool:
    if regex is False:
        return text == subject
    return regex is not None and regex.fullmatch(matchable(subject)) is not None


@dataclass(frozen=True)
class Rule:
    """One pattern line of a ``.gitignore``: its line, whether it re-includes, whether
    it holds a slash (and so matches the path from its folder rather than the name),
    the pattern, and the globs of the pattern and of its last part (see :func:`_glob`)."""

    line: int
    negated: bool
    anchored: bool
    text: str
    regex: Any
    last: str
    last_regex: Any

    def may_name(self, name: str) -> bool:
        """Whether the rule can match a file of this name, wherever it is."""
        return _match(self.last_regex, self.last, name)


def _rule(n: int, text: str) -> Rule | None:
    """A line as a rule, or None for a blank line, a comment or a folder-only pattern."""
    line = text.rstrip("\r")
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]
    if not line or line.startswith("#") or len(line) > LINE_CAP:
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    if line.startswith(("\\#", "\\!")):
        line = line[1:]
    line = line.replace("\\ ", " ")
    if not line or line.endswith("/"):
        return None
    anchored = "/" in line
    pattern = line.lstrip("/")
    last = pattern.rpartition("/")[2]
    whole = _glob(pattern) if anchored else None
    part = _glob(last)
    return Rule(n, negated, anchored, pattern, whole if anchored else part, last, part)


class Ignores:
    """The ``.gitignore`` files of a tree that were read, as rules (from each file's
    first :data:`RULE_CAP` lines, :data:`RULES_READ` lines in all, files in path order).

    The rules that can match a lock's name are found once per file and name; only a
    rule with a slash is then matched against each path, and at most
    :data:`MATCH_BUDGET` such matches are made per screen (past it, no more reasons
    are given), so a hostile ``.gitignore`` costs a bounded time.
    """

    def __init__(self, gitignores: dict[str, list[str]]) -> None:
        self.rules: dict[str, list[Rule]] = {}
        left = RULES_READ
        for path, lines in sorted(gitignores.items()):
            read = lines[: min(RULE_CAP, left)]
            left -= len(read)
            self.rules[path] = [r for n, t in enumerate(read, start=1) if (r := _rule(n, t))]
        self._named: dict[tuple[str, str], list[Rule]] = {}
        self.left = MATCH_BUDGET

    def _candidates(self, ignore: str, name: str) -> list[Rule]:
        key = (ignore, name)
        if key not in self._named:
            self._named[key] = [r for r in self.rules.get(ignore, []) if r.may_name(name)]
        return self._named[key]

    def ignoring(self, path: str) -> tuple[str, int] | None:
        """The ``.gitignore`` and line that ignore the file ``path`` (one the tree does
        not hold), or None when none does (or the budget is spent)."""
        folder, _, name = path.rpartition("/")
        for ignore in gitignore_paths(folder or "."):
            relative = path[len(ignore) - len(".gitignore") :]
            for rule in reversed(self._candidates(ignore, name)):
                if rule.anchored:
                    if self.left <= 0:
                        return None
                    self.left -= 1
                    if not _match(rule.regex, rule.text, relative):
                        continue
                return None if rule.negated else (ignore, rule.line)
        return None

    def reason(self, locks: list[str]) -> str:
        """Why the tree holds none of ``locks`` (the paths a lock would have), when a
        ``.gitignore`` says: ``uv.lock is ignored by git: .gitignore:3``; else empty."""
        for lock in locks:
            where = self.ignoring(lock)
            if where is not None:
                return f"{lock.rpartition('/')[2]} is ignored by git: {where[0]}:{where[1]}"
        return ""
