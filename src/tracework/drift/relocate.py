"""Where did a quote go?  Relocating a span at another commit, cheapest layer first.

1. the same bytes at the same lines (``verified``; in a renamed file, ``moved``);
2. the same bytes elsewhere in the file or its renamed successor (``moved``; several
   places and none the original: ``ambiguous``);
3. the same content, formatting aside (see :mod:`tracework.drift.content`), in the file or
   its renamed successor: ``changed``, *format only*, at the smallest span holding it;
4. the anchor — a Python symbol or a unique substring — found again (``changed``);
5. the same bytes in another file the commits touched (``moved``; in several files,
   ``ambiguous``);
6. for quotes without an anchor, ``git diff``'s line mapping carries the range over
   (``changed``), as code review tools port comments across patch sets;
7. otherwise ``missing``.

A span that layers 4 and 6 relocate is widened, for Python, to keep the quote's whole
statements and blocks: a quote that ended with a statement (or closed a block) ends
with it at the target too, however a formatter re-wrapped it.

Drift is data: a frozen :class:`QuoteDrift` per quote.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from tracework.drift.content import Content
from tracework.git.mirror import Changes, TreeEntry
from tracework.hashing import Lines, display_text, sha256_hex, span_bytes, text_lines
from tracework.register.data import QuoteData

QuoteState = Literal["verified", "moved", "changed", "ambiguous", "missing"]
Hunk = tuple[int, int, int, int]


class QuoteDrift(NamedTuple):
    """What happened to one quote at the target commit (immutable: a named tuple, the
    cheapest record to build once per quote)."""

    quote_id: str
    state: QuoteState
    new_path: str | None = None
    new_lines: tuple[int, int] | None = None
    candidates: tuple[tuple[int, int], ...] | None = None
    diff: str | None = None
    how: str = ""
    format_only: bool = False  # the bytes moved on, the content did not (see content.py)
    candidate_paths: tuple[str, ...] | None = None  # the file of each candidate, in order
    new_sha256: str | None = None  # a changed quote: the hash of its span now


@dataclass
class Target:
    """Everything relocation needs about the target commit, read once for all quotes."""

    commit: str
    tree: dict[str, TreeEntry]
    changes: Changes
    lines_of: Callable[[str], Lines | None]  # path at target -> its lines, None if unreadable
    hunks: Callable[[str, str], list[Hunk]]  # (old path, new path) -> git diff -U0 hunks
    pin: str = ""
    pin_lines_of: Callable[[str], Lines | None] = lambda _path: None  # path at the pin
    _holding: dict[bytes, list[str]] | None = field(default=None, init=False, repr=False)
    _contents: dict[tuple[bool, str], Content | None] = field(
        default_factory=dict, init=False, repr=False
    )

    def content(self, path: str, *, at_pin: bool = False) -> Content | None:
        """The content (see :mod:`tracework.drift.content`) of a readable text file at the
        target, or at the pin; read once per file."""
        key = (at_pin, path)
        if key not in self._contents:
            lines = (self.pin_lines_of if at_pin else self.lines_of)(path)
            self._contents[key] = Content(lines.data, path) if lines is not None else None
        return self._contents[key]

    def touched_holding(self, line: bytes) -> list[str]:
        """The readable touched files with a line equal to ``line`` (terminator aside),
        by path order: the only files where a span starting with that line can be.

        Indexed on first use, so looking for a quote's bytes in every touched file
        costs one dictionary look-up, not one search of each file per quote.
        """
        if self._holding is None:
            self._holding = {}
            for path in sorted(self.changes.touched):
                lines = self.lines_of(path)
                for text in set(lines.data.split(b"\n")) if lines is not None else ():
                    self._holding.setdefault(text, []).append(path)
        return self._holding.get(line.removesuffix(b"\n"), [])


def relocate(qid: str, quote: QuoteData, target: Target) -> QuoteDrift:
    """Find ``quote`` (taken at its pin) in the target commit."""
    needle = span_bytes(quote.text, quote.raw_b64)
    path = quote.path
    new_path = path if path in target.tree else target.changes.renamed.get(path)
    renamed = new_path is not None and new_path != path
    lines = target.lines_of(new_path) if new_path is not None else None
    unusable = ""  # why the anchor could not be looked for, when it could not

    if lines is not None and new_path is not None:
        if lines.holds_at(quote.lines[0], needle):
            if renamed:
                return QuoteDrift(qid, "moved", new_path, quote.lines, how="renamed file")
            return QuoteDrift(qid, "verified", None, quote.lines, how="same lines")
        hits = lines.find_span(needle)
        if len(hits) == 1:
            return QuoteDrift(
                qid,
                "moved",
                new_path if renamed else None,
                hits[0],
                how="same bytes" + (" in renamed file" if renamed else ""),
            )
        if len(hits) > 1:
            return QuoteDrift(
                qid,
                "ambiguous",
                new_path if renamed else None,
                candidates=tuple(hits),
                how="same bytes at several places",
                candidate_paths=(new_path,) * len(hits),
            )
        content = _by_content(qid, quote, new_path, renamed, lines, target)
        if content is not None:
            return content
        if quote.anchor is not None:
            spans, unusable = _anchor_spans(quote, lines, new_path)
            if len(spans) == 1:
                return _changed(qid, quote, new_path, renamed, spans[0], lines, "anchor", target)
            if len(spans) > 1:
                return QuoteDrift(
                    qid,
                    "ambiguous",
                    new_path if renamed else None,
                    candidates=tuple(spans),
                    how="anchor found several times",
                    candidate_paths=(new_path,) * len(spans),
                )

    found = _elsewhere(needle, path, new_path, target)
    if len(found) == 1:
        other, hits = found[0]
        if len(hits) == 1:
            return QuoteDrift(qid, "moved", other, hits[0], how="same bytes in another file")
        return QuoteDrift(
            qid,
            "ambiguous",
            other,
            candidates=tuple(hits),
            how="same bytes at several places in another file",
            candidate_paths=(other,) * len(hits),
        )
    if found:
        places = [(other, span) for other, hits in found for span in hits]
        return QuoteDrift(
            qid,
            "ambiguous",
            candidates=tuple(span for _other, span in places),
            how="same bytes in several other files: "
            + ", ".join(f"{other}:{a}-{b}" for other, (a, b) in places),
            candidate_paths=tuple(other for other, _span in places),
        )

    if lines is not None and new_path is not None and quote.anchor is None:
        mapped = map_range(
            *quote.lines, target.hunks(path, new_path), target.pin_lines_of(path), lines
        )
        if mapped is not None and mapped[1] <= len(lines):
            return _changed(qid, quote, new_path, renamed, mapped, lines, "diff mapping", target)

    if new_path is None:
        how = "file deleted"
    elif lines is None:
        how = "file no longer readable as text"
    elif quote.anchor is not None:
        how = unusable or "anchor gone"
    else:
        how = "lines deleted"
    return QuoteDrift(qid, "missing", new_path if renamed else None, how=how)


def _by_content(
    qid: str, quote: QuoteData, new_path: str, renamed: bool, lines: Lines, target: Target
) -> QuoteDrift | None:
    """Layer 3: the quote's content, formatting aside, at the target (None: not there).

    The content is read from the pin's file around the quote (its text alone when the
    pin's file cannot be read), the one definition the first-change search uses too.
    """
    old = target.content(quote.path, at_pin=True)
    first, last = quote.lines
    if old is None:
        old, first, last = Content(quote.text, quote.path), 1, quote.lines[1] - quote.lines[0] + 1
    new = target.content(new_path)
    needle = old.span(first, last)
    if new is None or not needle or not new.holds(needle):
        return None
    places = new.find(needle)
    if len(places) == 1:
        return _changed(qid, quote, new_path, renamed, places[0], lines, "content", target)
    return QuoteDrift(
        qid,
        "ambiguous",
        new_path if renamed else None,
        candidates=tuple(places),
        how="same content at several places, format only",
        format_only=True,
        candidate_paths=(new_path,) * len(places),
    )


def _anchor_spans(quote: QuoteData, lines: Lines, path: str) -> tuple[list[tuple[int, int]], str]:
    """Where the anchor is found, and why it could not be looked for (a symbol in a file
    that does not parse), so that a quote is never "anchor gone" for want of a parse."""
    from tracework.register.spans import (  # parsing: only for anchors
        NotPython,
        find_match_lines,
        find_symbol,
    )

    anchor = quote.anchor
    assert anchor is not None
    if anchor.symbol:
        try:
            return [(s.first, s.last) for s in find_symbol(lines, anchor.symbol, path)], ""
        except NotPython as exc:
            return [], f"symbol anchor {anchor.symbol} could not be used: {path}: {exc.problem}"
    assert anchor.match is not None
    # keep the span's shape around the matching line (it may have been clipped at an edge)
    offset = next((i for i, ln in enumerate(quote.text.split("\n")) if anchor.match in ln), 0)
    before, after = offset, quote.lines[1] - quote.lines[0] - offset
    return [
        (max(1, n - before), min(len(lines), n + after))
        for n in find_match_lines(lines, anchor.match)
    ], ""


def _elsewhere(
    needle: bytes, path: str, new_path: str | None, target: Target
) -> list[tuple[str, list[tuple[int, int]]]]:
    """Every other file the commits touched that holds the same bytes, by path order.

    All of them, not the first: bytes copied into two files are ``ambiguous``, and
    calling them ``moved`` to whichever file sorts first would pass the check.
    """
    found = []
    first_line = needle.split(b"\n", 1)[0]  # a match starts with this whole line
    for other in target.touched_holding(first_line):
        if other in (path, new_path):
            continue
        lines = target.lines_of(other)
        hits = lines.find_span(needle) if lines is not None else []
        if hits:
            found.append((other, hits))
    return found


def _changed(
    qid: str,
    quote: QuoteData,
    new_path: str,
    renamed: bool,
    span: tuple[int, int],
    lines: Lines,
    how: str,
    target: Target,
) -> QuoteDrift:
    cosmetic = how == "content"  # layer 3 found it; the later layers found other content
    if not cosmetic:
        span = _whole(quote, new_path, span, target)
    new_bytes = lines.span(*span)
    new_text = display_text(new_bytes)
    diff = unified_diff(quote, new_text, new_path, span, target)
    return QuoteDrift(
        qid,
        "changed",
        new_path if renamed else None,
        span,
        diff=diff,
        how=how + (", format only" if cosmetic else ""),
        format_only=cosmetic,
        new_sha256=sha256_hex(new_bytes),
    )


def _whole(
    quote: QuoteData, new_path: str, span: tuple[int, int], target: Target
) -> tuple[int, int]:
    """A relocated span widened as the quote was cut: when the quote ended with a whole
    statement, so does the span (a re-wrapped call keeps its closing parenthesis); when
    it began with one, so does the span; when it closed every block it opened, the
    span runs to the end of the blocks it opens.  Python only; other text as found."""
    old, new = target.content(quote.path, at_pin=True), target.content(new_path)
    if old is None or new is None or not old.statements or not new.statements:
        return span
    first, last = span
    a, b = quote.lines
    whole_first, whole_last = new.whole_statements(first, last)
    if old.whole_statements(a, b)[0] == a:
        first = whole_first
    if old.whole_statements(a, b)[1] == b:
        last = whole_last
    if old.closes_blocks(a, b):
        last = new.block_end(first, last)
    return first, last


def unified_diff(
    quote: QuoteData, new_text: str, new_path: str, span: tuple[int, int], target: Target
) -> str:
    """A unified diff of the quoted text against the text now at the relocated span.

    The old side names the commit the quote was recorded at (the target's ``pin``; see
    :class:`tracework.drift.check._Origins` after a re-pin), or says "as registered"
    when no commit is known to hold it."""
    where = f"@ {target.pin[:12]}" if target.pin else "(as registered)"
    old_label = f"{quote.path}:{quote.lines[0]}-{quote.lines[1]} {where}"
    new_label = f"{new_path}:{span[0]}-{span[1]} @ {target.commit[:12]}"
    return "".join(
        difflib.unified_diff(
            _keepends(quote.text), _keepends(new_text), old_label, new_label, n=len(quote.text)
        )
    )


def _keepends(text: str) -> list[str]:
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1] + "\n\\ No newline at end of span\n")
    return out


def map_range(
    first: int, last: int, hunks: list[Hunk], old: Lines | None = None, new: Lines | None = None
) -> tuple[int, int] | None:
    """Carry an old line range across ``git diff -U0`` hunks; None when wholly deleted.

    With the old and new lines given, a block git reports as replaced is aligned line
    by line (equal lines, then lines paired by similarity, as a reviewer reads the
    diff), so lines deleted inside a larger edit count as deleted rather than being
    carried onto whatever replaced the block.  Without them, a range touching a
    replaced block maps onto the whole replacement.
    """
    if old is not None and new is not None:
        aligner = _HunkAligner(hunks, old, new)
        if not any(aligner.too_big(h) for h in aligner.touched(first, last)):
            mapped = [m for n in range(first, last + 1) if (m := aligner.line(n)) is not None]
            return (min(mapped), max(mapped)) if mapped else None
    new_first = _map_line(first, hunks, start=True)
    new_last = _map_line(last, hunks, start=False)
    if new_first > new_last:
        return None
    return new_first, new_last


def _map_line(line: int, hunks: list[Hunk], *, start: bool) -> int:
    delta = 0
    for old_start, old_len, new_start, new_len in hunks:
        if old_len == 0:  # pure insertion after old_start
            if line <= old_start:
                break
            delta += new_len
            continue
        if line < old_start:
            break
        if line < old_start + old_len:  # inside a replaced or deleted block
            if new_len == 0:  # deleted: new_start is the line before the gap
                return new_start + 1 if start else new_start
            return new_start if start else new_start + new_len - 1
        delta += new_len - old_len
    return line + delta


#: Lines of a replaced block pair up when at least this similar (difflib ratio).
SIMILAR = 0.5
#: Blocks larger than this (old lines × new lines) are mapped as a whole: aligning
#: them line by line costs quadratic time for little gain.
ALIGN_LIMIT = 20_000


class _HunkAligner:
    """Maps single old line numbers to new ones, aligning inside replaced blocks."""

    def __init__(self, hunks: list[Hunk], old: Lines, new: Lines) -> None:
        self.hunks, self.old, self.new = hunks, old, new
        self._pairs: dict[Hunk, dict[int, int]] = {}

    def touched(self, first: int, last: int) -> list[Hunk]:
        """The replaced blocks that overlap lines ``first..last``."""
        return [h for h in self.hunks if h[1] and h[0] <= last and first < h[0] + h[1]]

    @staticmethod
    def too_big(hunk: Hunk) -> bool:
        return hunk[1] * max(hunk[3], 1) > ALIGN_LIMIT

    def line(self, n: int) -> int | None:
        delta = 0
        for hunk in self.hunks:
            old_start, old_len, _new_start, new_len = hunk
            if old_len == 0:  # pure insertion after old_start
                if n <= old_start:
                    break
                delta += new_len
                continue
            if n < old_start:
                break
            if n < old_start + old_len:
                return self._align(hunk).get(n)
            delta += new_len - old_len
        return n + delta

    def _text(self, lines: Lines, start: int, count: int) -> list[str]:
        last = min(start + count - 1, len(lines))
        return [display_text(lines.span(i, i)).strip() for i in range(start, last + 1)]

    def _align(self, hunk: Hunk) -> dict[int, int]:
        if hunk not in self._pairs:
            old_start, old_len, new_start, new_len = hunk
            old = self._text(self.old, old_start, old_len)
            new = self._text(self.new, new_start, new_len) if new_len else []
            pairs: dict[int, int] = {}
            matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                    pairs.update((old_start + i1 + k, new_start + j1 + k) for k in range(i2 - i1))
                elif tag == "replace":
                    j = j1
                    for i in range(i1, i2):
                        scores = [
                            (difflib.SequenceMatcher(None, old[i], new[k]).ratio(), -k)
                            for k in range(j, j2)
                        ]
                        best = max(scores, default=(0.0, 0))
                        if best[0] >= SIMILAR:
                            pairs[old_start + i] = new_start - best[1]
                            j = -best[1] + 1
            self._pairs[hunk] = pairs
        return self._pairs[hunk]


def readable_lines(entry: TreeEntry | None, data: bytes | None) -> Lines | None:
    """Lines of a tree entry's blob if it is a quotable text file, else None."""
    return text_lines(entry.kind if entry else None, data)
