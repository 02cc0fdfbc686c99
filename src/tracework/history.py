"""When did a piece of evidence change?  First-change search and format-only changes.

For a quote that is no longer verified at a newer commit, :func:`first_changes` finds
the earliest commit after the pin at which the quoted bytes no longer occur in the
file — and, separately, the earliest at which its *content* changed, by the one rule
of :mod:`tracework.content` that also decides whether a change is *format only*: a
quote is format only exactly when it has no first content change.  The search bisects the target's
first-parent line; when the culprit is a merge whose first parent is still good, it
descends into the merged branch, so that, as with ``git bisect``, the non-merge commit
that made the change is named.  Only blobs are read, through one persistent
``git cat-file --batch`` process.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .blobs import FULL_OID, Mirror
from .content import Content
from .errors import TraceworkError
from .gitenv import hardened_env
from .readers import DataError, load_json
from .subjects import open_mirror
from .workspace import Workspace

if TYPE_CHECKING:  # the check imports this module for format_only, without pydantic
    from .models import Register

STATES = ("verified", "moved", "changed", "ambiguous", "missing")


class ObjectReader:
    """A persistent ``git cat-file --batch``: ``read("<commit>:<path>")`` → bytes or None."""

    def __init__(self, mirror: Mirror) -> None:
        self._proc = subprocess.Popen(
            ["git", f"--git-dir={mirror.git_dir}", "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=hardened_env(),
        )
        self._cache: dict[str, bytes | None] = {}

    def read(self, spec: str) -> bytes | None:
        if "\n" in spec:
            return None
        if spec not in self._cache:
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._proc.stdin.write(spec.encode("utf-8", "surrogateescape") + b"\n")
            self._proc.stdin.flush()
            header = self._proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                if len(header) == 3:
                    self._proc.stdout.read(int(header[2]) + 1)
                self._cache[spec] = None
            else:
                data = self._proc.stdout.read(int(header[2]))
                self._proc.stdout.read(1)
                self._cache[spec] = data
        return self._cache[spec]

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        self._proc.wait()


@contextmanager
def object_reader(mirror: Mirror) -> Iterator[ObjectReader]:
    reader = ObjectReader(mirror)
    try:
        yield reader
    finally:
        reader.close()


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
    with object_reader(mirror) as reader:
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

    def __init__(self, reader: ObjectReader) -> None:
        self.reader = reader
        self._contents: dict[tuple[str, str], Content] = {}

    def content_at(
        self, commit: str, path: str, needle: bytes, lines: tuple[int, int]
    ) -> tuple[str, ...]:
        """The content of the quote at the pin, read in its file (its text alone when
        the file is not there)."""
        data = self.reader.read(f"{commit}:{path}")
        if data is None:
            return Content(needle, path).span(1, lines[1] - lines[0] + 1)
        return self._content(commit, path, data).span(*lines)

    def _content(self, commit: str, path: str, data: bytes) -> Content:
        key = (commit, path)
        if key not in self._contents:
            self._contents[key] = Content(data, path)
        return self._contents[key]

    def _blob(self, commit: str, path: str, moved_to: str | None) -> tuple[str, bytes] | None:
        for candidate in (path, moved_to):
            if candidate:
                data = self.reader.read(f"{commit}:{candidate}")
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
        ``commit``: the negation of "format only" (see :mod:`tracework.content`)."""
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


# -- a report's drift and history ------------------------------------------------------


def drift_summary(ws: Workspace, register: Register, records: dict[str, Any]) -> dict[str, Any]:
    """What changed between the pin and the rendered commit, and since which commit.

    For each quote that no longer holds (changed, ambiguous, missing), the first commit
    at which its bytes left the file and the first at which its content changed.
    """
    pin, commit = records["pin"], records["commit"]
    quotes = records.get("quotes", {})
    mirror = open_mirror(ws, records["subject"])
    wanted = {
        qid: (
            q["path"],
            q.get("new_path"),
            register.quotes[qid].span_bytes(),
            register.quotes[qid].lines,
        )
        for qid, q in quotes.items()
        if q["state"] in ("changed", "ambiguous", "missing") and qid in register.quotes
    }
    found = first_changes(mirror, pin, commit, wanted) if pin != commit else {}
    first = {qid: c for qid, (c, _) in sorted(found.items()) if c}
    content = {qid: c for qid, (_, c) in sorted(found.items()) if c}
    culprits = {}
    for c in sorted({*first.values(), *content.values()}):
        info = describe(mirror, c)
        culprits[c] = {"date": info.date, "subject": info.subject}
    counts = Counter(q["state"] for q in quotes.values())
    diagrams = dict(sorted(records.get("diagrams", {}).items()))
    absences = records.get("absences", {})
    return {
        "commits_since_pin": commits_between(mirror, pin, commit),
        "counts": {s: counts.get(s, 0) for s in STATES},
        "format_only": sorted(qid for qid, q in quotes.items() if q.get("format_only")),
        "first_changed": first,
        "first_content_change": content,
        "culprits": culprits,
        "broken_absences": sorted(a for a, r in absences.items() if not r["holds"]),
        "vanished_identifiers": {
            d: r["vanished"] for d, r in sorted(diagrams.items()) if r["vanished"]
        },
        "needs_review": sorted(
            r["id"] for r in records.get("records", []) if r.get("needs_review")
        ),
    }


def read_history(path: Path) -> list[dict[str, Any]]:
    """The report's render history: none yet when the file is missing.

    A file that cannot be read as a list of entries, each with its commit id, is an
    error rather than an empty history: the next render would write over it, and the
    record of every earlier render would be lost without a word.
    """
    where = f"reports/{path.parent.name}/history.json"
    try:
        data = load_json(path.read_bytes())
    except FileNotFoundError:
        return []
    except (OSError, DataError) as exc:  # unreadable, not UTF-8, not JSON, nested too deeply
        raise _not_a_history(where, str(getattr(exc, "strerror", None) or exc)) from None
    if not isinstance(data, list):
        raise _not_a_history(where, f"a JSON {type(data).__name__}, not a list of entries")
    for n, entry in enumerate(data, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("commit"), str):
            raise _not_a_history(where, f"entry {n} has no commit id")
        if not isinstance(entry.get("commits_since_pin", 0), int):
            raise _not_a_history(where, f"entry {n}'s commits_since_pin is not a number")
    return data


def _not_a_history(where: str, why: str) -> TraceworkError:
    return TraceworkError(
        f"{where} is not a render history ({why[:200]})",
        hint="restore it from version control, or remove it to start the history again",
    )


def updated_history(entries: list[dict[str, Any]], records: dict[str, Any]) -> list[dict[str, Any]]:
    """The history with this render's entry added (or replaced, for the same commit)."""
    drift = records["drift"]
    changed_in = {
        qid: {
            "path": records["quotes"][qid]["path"],
            "commit": c,
            "date": drift["culprits"][c]["date"],
            "format_only": qid in drift["format_only"],
        }
        for qid, c in drift["first_changed"].items()
    }
    entry = {
        "commit": records["commit"],
        "date": records["commit_date"],
        "commits_since_pin": drift["commits_since_pin"],
        "counts": drift["counts"],
        "format_only": len(drift["format_only"]),
        "changed_in": changed_in,
        "ok": records["checks"]["ok"],
        "checked": records.get("analysis_date"),
    }
    kept = [e for e in entries if e.get("commit") != entry["commit"]]
    return sorted([*kept, entry], key=lambda e: (e.get("commits_since_pin", 0), e["commit"]))
