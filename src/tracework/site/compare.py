"""Two renders of one report side by side: what changed state between them.

For each pair of consecutive renders the site writes a compare page: the quotes whose
state changed (with a unified diff of each changed quote's span, old render to new),
the records that were added, removed or put up for re-review (or cleared), the marks
whose verdict changed, and the evidenced absences that broke or hold again.  Everything
comes from the renders' records.json except the diffs, whose spans are read as blobs
from the subject's mirror (never a checkout); without the mirror, a diff is named as
unavailable and the rest of the page stands.
"""

from __future__ import annotations

import difflib
import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from tracework.errors import TraceworkError
from tracework.git.forge import upstream_url
from tracework.git.mirror import Mirror, TreeEntry
from tracework.git.subjects import open_mirror
from tracework.readers import Table
from tracework.records.artefacts import MarkEntry, QuoteEntry
from tracework.site.contexts import (
    AbsenceChange,
    Comparison,
    FindingRow,
    MarkStateChange,
    PackageRow,
    QuoteChange,
    RecordChange,
    ScreenChanges,
)
from tracework.site.read import Render
from tracework.workspace import Workspace

log = logging.getLogger(__name__)

#: A finding or a package row: what the screen's difference compares, by some keys.
Row = TypeVar("Row", bound=Mapping[str, object])


@dataclass
class Spans:
    """Spans of a subject's files at commits, read once per file and commit."""

    ws: Workspace
    mirrors: dict[str, Mirror | None] = field(default_factory=dict)
    trees: dict[tuple[str, str], dict[str, TreeEntry]] = field(default_factory=dict)
    blobs: dict[tuple[str, str], list[str] | None] = field(default_factory=dict)

    def lines(self, subject: str, commit: str, path: str) -> list[str] | None:
        """The file's lines at the commit, or None when they cannot be read here."""
        key = (commit, path)
        if key not in self.blobs:
            self.blobs[key] = self._read(subject, commit, path)
        return self.blobs[key]

    def _read(self, subject: str, commit: str, path: str) -> list[str] | None:
        try:
            if subject not in self.mirrors:
                self.mirrors[subject] = open_mirror(self.ws, subject)
            mirror = self.mirrors[subject]
            if mirror is None:
                return None
            if (subject, commit) not in self.trees:
                self.trees[(subject, commit)] = mirror.tree(commit)
            entry = self.trees[(subject, commit)].get(path)
            if entry is None:
                return None
            data = mirror.read_blob(entry.oid).data
        except (TraceworkError, OSError) as exc:
            log.debug("no span of %s at %s: %s", path, commit, exc)
            self.mirrors.setdefault(subject, None)
            return None
        if data is None:
            return None
        pieces = data.split(b"\n")  # git's line rule: a line ends after each "\n" only
        lines = [p + b"\n" for p in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
        return [line.decode("utf-8", "replace") for line in lines]


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """A unified diff's lines, each with what it is: ``file`` (the two names it opens
    with), ``hunk`` (``@@``), ``add``, ``del`` or ``same``; the page tints each kind
    (and keeps its sign).  Split at newlines only, as git splits lines."""
    lines = diff.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = []
    for n, line in enumerate(lines):
        if n < 2 and line.startswith(("--- ", "+++ ")):
            kind = "file"
        else:
            kind = {"@": "hunk", "+": "add", "-": "del"}.get(line[:1], "same")
        out.append((kind, line))
    return out


def _state(quote: QuoteEntry | None) -> str:
    if quote is None:
        return "not cited"
    if quote.format_only and quote.state == "changed":
        return "changed (format only)"
    return quote.state


def _where(quote: QuoteEntry) -> tuple[str, tuple[int, int]]:
    lines = quote.new_lines or quote.lines
    return quote.new_path or quote.path, (lines[0], lines[1])


def _mark_state(mark: MarkEntry | None) -> str:
    if mark is None:
        return "not marked"
    state = "present" if mark.present else "absent"
    return state + (" (needs re-review)" if mark.needs_review else "")


def compare(old: Render, new: Render, spans: Spans) -> Comparison:
    """What changed state from render ``old`` to render ``new`` of one report."""
    subject = new.records.subject
    quotes: list[QuoteChange] = []
    old_q, new_q = old.records.quotes, new.records.quotes
    for qid in sorted(set(old_q) | set(new_q)):
        a, b = old_q.get(qid), new_q.get(qid)
        located = [_where(q) if q and q.state != "missing" else None for q in (a, b)]
        # re-quoted: the register gave the quote another text between the two renders
        requoted = a is not None and b is not None and a.sha256 != b.sha256
        if _state(a) == _state(b) and not requoted:
            continue  # held its state (a place alone is no change of state)
        texts: list[list[str] | None] = []
        for render, place in zip((old, new), located, strict=True):
            if place is None:
                texts.append([])
                continue
            lines = spans.lines(subject, render.commit, place[0])
            texts.append(None if lines is None else lines[place[1][0] - 1 : place[1][1]])
        names = [
            f"{p[0]}:{p[1][0]}-{p[1][1]} @ {r.commit[:12]}" if p else f"(none) @ {r.commit[:12]}"
            for r, p in zip((old, new), located, strict=True)
        ]
        diff = (
            None
            if texts[0] is None or texts[1] is None
            else "".join(
                line if line.endswith("\n") else line + "\n"
                for line in difflib.unified_diff(texts[0], texts[1], names[0], names[1])
            )
        )
        quotes.append(
            {
                "id": qid,
                "before": _state(a),
                "after": _state(b) + (" (re-quoted: its text changed)" if requoted else ""),
                "where": names,
                "diff": None if diff is None else diff_lines(diff),
                "cited": b is not None,
            }
        )
    records: list[RecordChange] = []
    old_r = {r.id: r for r in old.records.records}
    new_r = {r.id: r for r in new.records.records}
    for rid in sorted(set(old_r) | set(new_r)):
        was, now = old_r.get(rid), new_r.get(rid)
        words = [
            "not declared" if r is None else "needs re-review" if r.needs_review else "holds"
            for r in (was, now)
        ]
        if words[0] != words[1]:
            records.append(
                {"id": rid, "before": words[0], "after": words[1], "shown": now is not None}
            )
    marks: list[MarkStateChange] = []
    old_m, new_m = old.records.marks, new.records.marks
    for rubric in sorted(set(old_m) | set(new_m)):
        a_marks = old_m[rubric].marks if rubric in old_m else {}
        b_marks = new_m[rubric].marks if rubric in new_m else {}
        for mid in sorted(set(a_marks) | set(b_marks)):
            before, after = _mark_state(a_marks.get(mid)), _mark_state(b_marks.get(mid))
            if before != after:
                marks.append({"rubric": rubric, "mechanism": mid, "before": before, "after": after})
    absences: list[AbsenceChange] = []
    old_a, new_a = old.records.absences, new.records.absences
    labels = {r.id: r.label for r in new.records.records}
    for aid in sorted(set(old_a) | set(new_a)):
        searched = new_a.get(aid)
        words = [
            "not declared" if x is None else "holds" if x.holds else "broken"
            for x in (old_a.get(aid), searched)
        ]
        if words[0] != words[1]:
            broke = new.records.drift.first_broken.get(aid) if searched is not None else None
            culprit = new.records.drift.culprits.get(broke) if broke else None
            matches = list(searched.matches) if searched is not None else []
            absences.append(
                {
                    "id": aid,
                    "label": labels.get(aid, ""),
                    "before": words[0],
                    "after": words[1],
                    "shown": searched is not None,
                    "first_broken": broke,
                    "date": culprit.date if culprit else "",
                    "subject": culprit.subject if culprit else "",
                    "searched": searched.files if searched is not None else 0,
                    "matches": [
                        {
                            "path": m.path,
                            "line": m.line,
                            "text": m.text,
                            "href": upstream_url(
                                new.records.url, new.commit, m.path, (m.line, m.line)
                            ),
                        }
                        for m in matches
                    ],
                    "files": searched.matched_files if searched is not None else 0,
                }
            )
    return {
        "quotes": quotes,
        "records": records,
        "marks": marks,
        "absences": absences,
        "screen": screen_changes(old.records.screen, new.records.screen),
    }


# ---- the screen: what it gained and lost ------------------------------------------------

_FINDING_KEYS = ("category", "path", "kind", "step", "text")


def _screen_items(screen: Table) -> list[FindingRow]:
    """A recorded screen's findings, each with the fields the page shows (records.json
    is the render's own, but a hand edit may have left anything in it)."""
    items = screen.get("items")
    out = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue

        def text(key: str, item: Table = item) -> str:
            value = item.get(key)
            return value if isinstance(value, str) else ""

        line = item.get("line")
        out.append(
            FindingRow(
                category=text("category"),
                path=text("path"),
                kind=text("kind"),
                step=text("step"),
                text=text("text"),
                line=line if isinstance(line, int) and not isinstance(line, bool) else 0,
            )
        )
    return out


def _screen_packages(screen: Table) -> list[PackageRow]:
    """A recorded screen's locked packages inside its cooldown window."""
    cooldown = screen.get("cooldown")
    locks = cooldown.get("locks") if isinstance(cooldown, dict) else None
    out: list[PackageRow] = []
    for lock in locks if isinstance(locks, list) else []:
        if not isinstance(lock, dict):
            continue
        packages = lock.get("packages")
        for package in packages if isinstance(packages, list) else []:
            if isinstance(package, dict):
                out.append(
                    {
                        "path": str(lock.get("path", "")),
                        "name": str(package.get("name", "")),
                        "version": str(package.get("version", "")),
                        "uploaded": str(package.get("uploaded", "")),
                    }
                )
    return out


def _difference(
    before: list[Row], after: list[Row], keys: tuple[str, ...]
) -> tuple[list[Row], list[Row]]:
    """What ``after`` holds that ``before`` does not, and the reverse, counting repeats;
    entries are the same when their ``keys`` are (a finding that moved lines is the
    same finding)."""

    def key(entry: Row) -> tuple[object, ...]:
        return tuple(entry[k] for k in keys)

    left = Counter(key(e) for e in before)
    right = Counter(key(e) for e in after)
    gained, lost = right - left, left - right

    def pick(entries: list[Row], wanted: Counter[tuple[object, ...]]) -> list[Row]:
        out = []
        for entry in entries:
            if wanted[key(entry)] > 0:
                wanted[key(entry)] -= 1
                out.append(entry)
        return out

    return pick(after, gained), pick(before, lost)


def screen_changes(old: Table | None, new: Table | None) -> ScreenChanges | None:
    """What the screen of render ``new`` gained and lost against that of ``old``: its
    findings (by category, path, kind, step and line text: not by line number, which
    moves with any edit above) and the locked packages inside its cooldown.  None when
    neither render carries a screen; ``missing`` names the one that does not."""
    if old is None and new is None:
        return None
    if old is None or new is None:
        return {"missing": "old" if old is None else "new"}
    gained, lost = _difference(_screen_items(old), _screen_items(new), _FINDING_KEYS)
    fresh, gone = _difference(
        _screen_packages(old), _screen_packages(new), ("path", "name", "version")
    )
    return {
        "missing": None,
        "gained": sorted(gained, key=lambda f: (f["category"], f["path"], f["line"])),
        "lost": sorted(lost, key=lambda f: (f["category"], f["path"], f["line"])),
        "packages_gained": fresh,
        "packages_lost": gone,
    }


def page_name(old: Render, new: Render) -> str:
    """The compare page's file name, beside the report's render folders."""
    return f"compare-{old.folder}-{new.folder}.html"
