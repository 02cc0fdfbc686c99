"""When did a piece of evidence change?  The first-change search.

For a quote that is no longer verified at a newer commit, :func:`first_changes` finds
the earliest commit after the pin at which the quoted bytes no longer occur in the
file — and, separately, the earliest at which its *content* changed, by the one rule
of :mod:`tracework.drift.content` that also decides whether a change is *format only*:
a quote is format only exactly when it has no first content change.  The search
bisects the target's first-parent line; when the culprit is a merge whose first parent
is still good, it descends into the merged branch, so that, as with ``git bisect``,
the non-merge commit that made the change is named.  Only blobs are read, through one
``git cat-file --batch`` process (the mirror's :class:`~tracework.git.mirror.BlobStream`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from tracework.drift.content import Content
from tracework.git.mirror import FULL_OID, BlobStream, Mirror
from tracework.hashing import Lines

STATES = ("verified", "moved", "changed", "ambiguous", "missing")


@dataclass(frozen=True)
class Culprit:
    """The commit that changed a quote: id, committer date and subject line."""

    commit: str
    date: str
    subject: str


class Graph:
    """First-parent lines and merge parents between a pin and a target, read once."""

    def __init__(self, mirror: Mirror, pin: str, target: str) -> None:
        self.mirror, self.pin, self.target = mirror, pin, target
        out = mirror._git(
            "rev-list", "--parents", "--end-of-options", target, f"^{pin}"
        ).stdout.decode()
        self.parents = {
            line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()
        }

    def __len__(self) -> int:
        return len(self.parents)

    def chain(self, head: str) -> list[str]:
        """The first-parent line from ``head`` back to (not including) the good side."""
        line = []
        commit: str | None = head
        while commit is not None and commit in self.parents:
            line.append(commit)
            parents = self.parents[commit]
            commit = parents[0] if parents else None
        return line[::-1]


def first_change(graph: Graph, changed: Callable[[str], bool]) -> str | None:
    """The earliest commit (after the pin, up to the target) for which ``changed`` holds.

    ``changed`` must be monotone along each first-parent line (good, then bad), as
    ``git bisect`` assumes.  None when the target itself is unchanged.
    """
    if not graph.parents or not changed(graph.target):
        return None
    head = graph.target
    while True:
        line = graph.chain(head)
        lo, hi = 0, len(line) - 1  # line[hi] is changed; find the first changed index
        while lo < hi:
            mid = (lo + hi) // 2
            if changed(line[mid]):
                hi = mid
            else:
                lo = mid + 1
        culprit = line[hi]
        parents = graph.parents.get(culprit, [])
        # a merge whose first parent is unchanged brought the change from a side branch
        side = [p for p in parents[1:] if p in graph.parents and changed(p)]
        if len(parents) > 1 and side:
            head = side[0]
            continue
        return culprit


def first_changes(
    mirror: Mirror,
    pin: str,
    target: str,
    quotes: dict[str, tuple[str, str | None, bytes, tuple[int, int]]],
) -> dict[str, tuple[str | None, str | None]]:
    """For each quote id → (first commit changing its bytes, first changing its content).

    ``quotes`` maps an id to (path at the pin, path at the target or None, the quoted
    bytes, the quoted lines at the pin).
    """
    if not FULL_OID.fullmatch(pin) or not FULL_OID.fullmatch(target) or pin == target:
        return {}
    graph = Graph(mirror, pin, target)
    with mirror.stream_blobs([], whole=True) as reader:
        probe = _Probe(reader)
        found = {}
        for qid, (path, moved_to, needle, lines) in quotes.items():
            content = probe.content_at(pin, path, needle, lines)
            found[qid] = (
                first_change(
                    graph, partial(probe.bytes_changed, path=path, moved_to=moved_to, needle=needle)
                ),
                first_change(
                    graph,
                    partial(probe.content_changed, path=path, moved_to=moved_to, content=content),
                ),
            )
        return found


class _Probe:
    """Tests one quote at one commit, reading each blob, and its content, once."""

    def __init__(self, reader: BlobStream) -> None:
        self.reader = reader
        self._contents: dict[tuple[str, str], Content] = {}

    def content_at(
        self, commit: str, path: str, needle: bytes, lines: tuple[int, int]
    ) -> tuple[str, ...]:
        """The content of the quote at the pin, read in its file (its text alone when
        the file is not there, or does not hold the quote at its lines: a pin moved by
        hand without the quote being recorded again)."""
        data = self._data(commit, path)
        if data is None or not Lines(data).holds_at(lines[0], needle):
            return Content(needle, path).span(1, lines[1] - lines[0] + 1)
        return self._content(commit, path, data).span(*lines)

    def _data(self, commit: str, path: str) -> bytes | None:
        blob = self.reader.at(commit, path)
        return blob.data if blob is not None else None

    def _content(self, commit: str, path: str, data: bytes) -> Content:
        key = (commit, path)
        if key not in self._contents:
            self._contents[key] = Content(data, path)
        return self._contents[key]

    def _blob(self, commit: str, path: str, moved_to: str | None) -> tuple[str, bytes] | None:
        for candidate in (path, moved_to):
            if candidate:
                data = self._data(commit, candidate)
                if data is not None:
                    return candidate, data
        return None

    def bytes_changed(self, commit: str, path: str, moved_to: str | None, needle: bytes) -> bool:
        found = self._blob(commit, path, moved_to)
        return found is None or needle not in found[1]

    def content_changed(
        self, commit: str, path: str, moved_to: str | None, content: tuple[str, ...]
    ) -> bool:
        """Whether the quote's content is gone from its file (or its new name) at
        ``commit``: the negation of "format only" (see :mod:`tracework.drift.content`)."""
        found = self._blob(commit, path, moved_to)
        if found is None:
            return True
        where, data = found
        return not self._content(commit, where, data).holds(content)


def describe(mirror: Mirror, commit: str) -> Culprit:
    info = mirror.commit_info(commit)
    return Culprit(commit, info.date, info.subject)


def commits_between(mirror: Mirror, pin: str, target: str) -> int:
    """How many commits the target has that the pin does not."""
    if pin == target:
        return 0
    out = (
        mirror._git("rev-list", "--count", "--end-of-options", target, f"^{pin}")
        .stdout.decode()
        .strip()
    )
    return int(out) if re.fullmatch(r"\d+", out) else 0
