"""Evidenced absences: a search over the scope's blobs at a commit that must find nothing.

An absence that stops being true at a newer commit is caught because the search is
re-run at whatever commit the report is rendered at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .blobs import Mirror
from .errors import SpanError
from .evidence import match_paths
from .hashing import display_text, is_binary

MAX_MATCHES = 50


@dataclass(frozen=True)
class Match:
    """One line where a pattern occurs."""

    path: str
    line: int
    text: str
    pattern: str


@dataclass(frozen=True)
class AbsenceResult:
    """The search's outcome: files searched and any matches (none means the absence holds)."""

    commit: str
    files: tuple[str, ...]
    matches: tuple[Match, ...]
    truncated: bool = False
    skipped: tuple[str, ...] = ()  # binary or too large to search: named, never hidden

    @property
    def holds(self) -> bool:
        return not self.matches


def search(
    mirror: Mirror, commit: str, scope: tuple[str, ...], patterns: tuple[str, ...]
) -> AbsenceResult:
    """Search every text file the scope's globs name at ``commit`` for the patterns.

    Patterns are Python regular expressions matched line by line (lines split on
    ``\\n`` as git counts them), so every match has an exact line number.
    """
    tree = mirror.tree(commit)
    named = {p for pattern in scope for p in match_paths(tree, pattern)}
    paths = sorted(p for p in named if tree[p].kind == "file")
    if not paths:
        raise SpanError(
            f"the scope {list(scope)} names no file at {commit[:12]}",
            hint="an absence over no files proves nothing; check the globs",
        )
    compiled = [(p, re.compile(p)) for p in patterns]
    blobs = mirror.read_blobs(tree[p].oid for p in paths)
    matches: list[Match] = []
    truncated = False
    skipped: list[str] = []
    for path in paths:
        blob = blobs[tree[path].oid]
        if blob.data is None or is_binary(blob.head):
            skipped.append(path)
            continue
        for number, raw in enumerate(blob.data.split(b"\n"), start=1):
            text = display_text(raw)
            for source, rx in compiled:
                if rx.search(text) is None:
                    continue
                if len(matches) >= MAX_MATCHES:
                    truncated = True
                    break
                matches.append(Match(path, number, text.rstrip("\r")[:240], source))
    unique = tuple(sorted(set(matches), key=lambda m: (m.path, m.line, m.pattern)))
    searched = tuple(p for p in paths if p not in set(skipped))
    return AbsenceResult(commit, searched, unique, truncated, tuple(skipped))
