"""Evidenced absences: a search over the scope's blobs at a commit that must find nothing.

An absence that stops being true at a newer commit is caught because the search is
re-run at whatever commit the report is rendered at.

Patterns are RE2 expressions (google-re2), which match in time linear in the text:
subject text is hostile, and a backtracking engine (Python's ``re``) can take hours on
one crafted line (``^(\\w+\\s?)+=`` against forty letters), holding a render for good.
RE2 refuses what it cannot run in linear time (backreferences, lookaround); so does
:func:`compile_pattern`, with the reason and the way round it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import re2

from tracework.errors import SpanError
from tracework.git.mirror import Mirror
from tracework.hashing import display_text, is_binary
from tracework.register.evidence import match_paths

MAX_MATCHES = 50

#: Python syntax RE2 reads differently or not at all, each with what to write instead
#: (RE2's own message, "invalid perl operator: (?=", does not say why or what to do).
_PYTHON_ONLY = (
    (re.compile(r"\\[1-9]|\(\?P="), "backreferences cannot be matched in linear time"),
    (re.compile(r"\(\?<?[=!]"), "lookahead and lookbehind cannot be matched in linear time"),
    (re.compile(r"\\Z"), r"RE2 writes the end of the text as \z (or $)"),
    (re.compile(r"\(\?[a-zA-Z]*x"), "RE2 has no verbose mode (?x): write the pattern on one line"),
    (re.compile(r"\(\?#"), "RE2 has no (?#...) comments"),
)
#: ``a{,3}`` is ``a{0,3}`` to Python and the literal text "a{,3}" to RE2: refused, never
#: silently read the other way.
_EMPTY_MINIMUM = re.compile(r"(?<!\\)(?:\\\\)*\{,\d+\}")


#: Python's meaning of its class escapes on text, in RE2's syntax: RE2's own ``\w``,
#: ``\d`` and ``\s`` are ASCII, so ``MAX_\w+`` would miss ``MAX_é``, which Python finds,
#: and an absence would hold where it is broken.
_UNICODE_CLASSES = {
    "w": r"\pL\pN_",  # str.isalnum() or "_": letters and numbers
    "d": r"\p{Nd}",  # decimal digits
    "s": r"\t\n\v\f\r\x{1c}-\x{1f}\x{85}\pZ",  # str.isspace()
}


def unicode_classes(pattern: str) -> str:
    """``pattern`` with ``\\w``, ``\\d``, ``\\s`` and their negations written as the
    Unicode classes Python means by them, inside and outside ``[...]``.

    ``\\W`` and ``\\S`` inside a class are refused (ValueError): their Unicode meaning
    is a complement, which RE2 cannot join to other members of a class.  ``\\b`` stays
    RE2's, with ASCII word characters (RE2 has no other).
    """
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escape = pattern[i + 1]
            if escape in "wdsWDS":
                out.append(_class_escape(pattern, escape, in_class))
                i += 2
                continue
            if escape == "Q":  # RE2's literal text, up to \E
                end = pattern.find("\\E", i + 2)
                end = len(pattern) if end < 0 else end + 2
            elif escape in "pP" and pattern.startswith("{", i + 2):  # \p{Greek}
                end = pattern.find("}", i) + 1 or len(pattern)
            else:
                end = i + 2
            out.append(pattern[i:end])
            i = end
            continue
        if in_class:
            if pattern.startswith("[:", i) and ":]" in pattern[i + 2 :]:  # [:alpha:]
                end = pattern.index(":]", i + 2) + 2
            else:
                end, in_class = i + 1, char != "]"
            out.append(pattern[i:end])
            i = end
            continue
        if char == "[":
            end = i + 1 + pattern.startswith("^", i + 1)
            end += pattern.startswith("]", end)  # a "]" first is a member, not the end
            out.append(pattern[i:end])
            in_class, i = True, end
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _class_escape(pattern: str, escape: str, in_class: bool) -> str:
    body = _UNICODE_CLASSES[escape.lower()]
    if not in_class:
        return f"[^{body}]" if escape.isupper() else f"[{body}]"
    if escape.islower():
        return body
    if escape == "D":
        return r"\P{Nd}"
    raise ValueError(
        f"pattern {pattern!r}: \\{escape} inside [...] has no RE2 form; "
        "write [^...] of what it must not match"
    )


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> Any:
    """``pattern`` compiled by RE2, or ValueError saying why it cannot be used.

    Checked where an absence is declared (the record's validation) and again by the
    search; cached, so a pattern is compiled once per process.
    """
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own line on stderr besides our message
    if _EMPTY_MINIMUM.search(pattern):
        raise ValueError(f"pattern {pattern!r}: RE2 reads {{,n}} as literal text; write {{0,n}}")
    try:
        return re2.compile(unicode_classes(pattern), options)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args else "invalid"
        why = next((hint for rx, hint in _PYTHON_ONLY if rx.search(pattern)), None)
        raise ValueError(
            f"pattern {pattern!r} is not an RE2 expression ({reason})" + (f": {why}" if why else "")
        ) from None


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

    Patterns are RE2 expressions matched line by line (lines split on ``\\n`` as git
    counts them), so every match has an exact line number.  A line that is not UTF-8 is
    searched as it is shown, with replacement characters.
    """
    tree = mirror.tree(commit)
    named = {p for pattern in scope for p in match_paths(tree, pattern)}
    paths = sorted(p for p in named if tree[p].kind == "file")
    if not paths:
        raise SpanError(
            f"the scope {list(scope)} names no file at {commit[:12]}",
            hint="an absence over no files proves nothing; check the globs",
        )
    try:
        compiled = [(p, compile_pattern(p)) for p in patterns]
    except ValueError as exc:
        raise SpanError(str(exc), hint="see docs/how-to/absences.md") from None
    blobs = mirror.read_blobs(tree[p].oid for p in paths)
    matches: list[Match] = []
    truncated = False
    skipped: list[str] = []
    for path in paths:
        blob = blobs[tree[path].oid]
        if blob.data is None or is_binary(blob.head):
            skipped.append(path)
            continue
        for number, line in enumerate(_lines(blob.data), start=1):
            for source, rx in compiled:
                if rx.search(line) is None:
                    continue
                if len(matches) >= MAX_MATCHES:
                    truncated = True
                    break
                text = display_text(line)
                matches.append(Match(path, number, text.rstrip("\r")[:240], source))
    unique = tuple(sorted(set(matches), key=lambda m: (m.path, m.line, m.pattern)))
    searched = tuple(p for p in paths if p not in set(skipped))
    return AbsenceResult(commit, searched, unique, truncated, tuple(skipped))


def _lines(data: bytes) -> list[bytes]:
    """The blob's lines as UTF-8 bytes, what RE2 matches (given text, the binding would
    encode every line again for every pattern); a blob that is not UTF-8 is decoded as it
    is shown, with replacement characters, then encoded."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return [display_text(raw).encode("utf-8") for raw in data.split(b"\n")]
    return data.split(b"\n")
