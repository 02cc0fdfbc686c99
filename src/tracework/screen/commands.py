"""Commands in a subject's configuration: which line runs what, and what is risky in it.

A command value (a workflow's ``run:`` block, a dev container's
``postCreateCommand``) is split into shell commands the way a shell reads them: a
line ending in ``\\``, ``|``, ``&&`` or ``||`` goes on at the next one, and
comment lines are no command.  Each command is matched against the patterns of
:data:`RISKS`; a hit is reported at the file line where the matched text starts —
the ``curl`` of a ``curl … \\ | sh`` spread over two lines — with that line's exact
text.  The patterns run on re2 (linear time, whatever the subject wrote).

Each command is also read for installs that no lock fixes (:mod:`.installs`): a
package named without an exact version (``pip install pkg``, ``npm install pkg``),
an upgrade (``pip install -U``, ``poetry update``), a project installed with its
dependencies resolved afresh (``pip install -e .``), a manifest installed as ranges
(``uv pip install -r pyproject.toml``), and an install that may rewrite its lock
(``npm install`` rather than ``npm ci``, ``uv sync`` without ``--locked`` or
``--frozen``).  These are ``unpinned`` findings of their own, each at the line its
install starts on.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

import re2

import tracework.screen.documents as docs
from tracework.screen.installs import unlocked
from tracework.screen.model import Command, Finding, Found, shown

_FETCH = r"(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)"
_SHELL = (
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+)?(?:\S*/)?"
    r"(?:(?:ba|z|da|k|fi)?sh|python[0-9.]*|node|perl|ruby|iex|invoke-expression)\b"
)
_INSTALL = (
    r"\b(?:pip[0-9.]*|pipx|uv|poetry|pdm|npm|pnpm|yarn|bun|gem)\s+(?:\S+\s+)?(?:install|add|i)\b"
)

#: (pattern, what it means), most specific first; one hit per pattern and command.
RISKS: tuple[tuple[Any, str], ...] = (
    (re2.compile(rf"(?i)\b{_FETCH}\b[^\n;&]*?\|\s*{_SHELL}"), "pipes a download into a shell"),
    (
        re2.compile(
            rf"(?i)\b(?:(?:ba|z|da|k)?sh|source|eval|python[0-9.]*)\b[^\n;&|]*?(?:<\(|\$\(|`)\s*{_FETCH}\b"
        ),
        "runs a downloaded script",
    ),
    (
        re2.compile(
            rf"(?i){_INSTALL}[^\n;&|]*?--(?:extra-index-url|index-url|find-links|registry)\b"
        ),
        "installs from another package index",
    ),
    (
        re2.compile(rf"(?i){_INSTALL}[^\n;&|]*?(?:\bgit\+|\bhttps?://|\bgithub:)"),
        "installs a package from a URL",
    ),
)
_ANOTHER_INDEX = "installs from another package index"
_FROM_URL = "installs a package from a URL"
_CONTINUED = ("\\", "|", "&&", "||")
# a YAML line's key or list dash before its command (`- run: `), in a file not parsed
_LINE_PREFIX = re2.compile(r"^\s*(?:-\s+)?(?:[A-Za-z_][\w-]*\s*:\s+)?(?:-\s+)?(?:['\"])?")


@dataclass(frozen=True)
class Piece:
    """One line of a command value: its file line, that line's text, the value's text."""

    line: int
    source: str
    text: str


def risks(command: str) -> list[tuple[int, str]]:
    """Where in ``command`` each risky pattern starts, and what it means."""
    hits: list[tuple[int, str]] = []
    for pattern, meaning in RISKS:
        match = pattern.search(command)
        if match is None:
            continue
        if meaning == _FROM_URL and any(m == _ANOTHER_INDEX for _, m in hits):
            continue  # the index's own URL is not a package's
        hits.append((int(match.start()), meaning))
    return sorted(hits)


def shell_commands(pieces: list[Piece]) -> list[list[Piece]]:
    """The pieces grouped into shell commands (continued lines joined), without blank
    and comment lines."""
    groups: list[list[Piece]] = []
    current: list[Piece] = []
    for piece in pieces:
        text = piece.text.strip()
        if not current and (not text or text.startswith("#")):
            continue
        current.append(piece)
        if not text.endswith(_CONTINUED):
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


def joined(group: list[Piece]) -> tuple[str, list[int]]:
    """A command's text, its lines joined by spaces, and where each line starts in it."""
    starts, parts, at = [], [], 0
    for piece in group:
        text = piece.text.strip()
        text = text[:-1] if text.endswith("\\") else text
        starts.append(at)
        parts.append(text)
        at += len(text) + 1
    return " ".join(parts), starts


def command_findings(
    pieces: list[Piece],
    *,
    path: str,
    category: str,
    what: str,
    context: str,
    folder: str,
    install: bool = False,
    plain: str | None = "runs a command",
    step: str = "",
    held: bool = False,
) -> Found:
    """The findings and commands of one command value (``what`` names it: "CI step").

    Each risky pattern is reported at the line it starts on; a value with none is
    reported once, at its first command line, as ``what`` + ``plain`` (not at all
    when ``plain`` is None: a Dockerfile's harmless ``RUN`` lines are not listed).
    Each install no lock fixes is an ``unpinned`` finding of its own, at its line.
    ``step`` names the CI job and step; ``held``: uv is held to its lock
    (:func:`.installs.unlocked`).
    """
    found = Found()
    groups = shell_commands(pieces)
    hits: dict[tuple[int, str], Finding] = {}
    loose: dict[tuple[int, str], Finding] = {}
    for group in groups:
        text, starts = joined(group)
        found.commands.append(Command(path, group[0].line, text, context, folder, install))
        for found_in, category_of, matches in (
            (hits, category, risks(text)),
            (loose, "unpinned", unlocked(text, held=held)),
        ):
            for offset, meaning in matches:
                piece = group[bisect.bisect_right(starts, offset) - 1]
                kind = f"{what} {meaning}"
                found_in.setdefault(
                    (piece.line, kind),
                    Finding(category_of, path, piece.line, kind, shown(piece.source), step=step),
                )
    if hits:
        found.findings += hits.values()
    elif groups and plain is not None:
        first = groups[0][0]
        found.findings.append(
            Finding(category, path, first.line, f"{what} {plain}", shown(first.source), step=step)
        )
    found.findings += loose.values()
    return found


def argv_pieces(nodes: list[tuple[int, str, str]]) -> list[Piece]:
    """An argument list (``["npx", "-y", "srv"]``) as the one command it is: each item a
    piece, continued to the next, so the command reads ``npx -y srv``."""
    return [
        Piece(n, source, text if i == len(nodes) - 1 else f"{text} \\")
        for i, (n, source, text) in enumerate(nodes)
    ]


def scalar_pieces(node: Any, lines: list[str]) -> list[Piece]:
    """A scalar command value's pieces.  Only a literal block (``|``) keeps its line
    breaks; YAML folds every other style into one line, so its pieces are one command."""
    found = docs.value_lines(node, lines)
    if getattr(node, "style", None) == "|":
        return [Piece(n, source, text) for n, source, text in found]
    return argv_pieces(found)


def risky_lines(path: str, lines: list[str], *, category: str, what: str) -> list[Finding]:
    """Risky commands, and installs no lock fixes, found line by line in a file that
    could not be parsed."""
    return [
        *(
            Finding(category, path, n, f"{what} {meaning}", shown(text))
            for n, text in enumerate(lines, start=1)
            for _, meaning in risks(text)
        ),
        *(
            Finding("unpinned", path, n, f"{what} {meaning}", shown(text))
            for n, text in enumerate(lines, start=1)
            for meaning in dict.fromkeys(m for _, m in unlocked(_LINE_PREFIX.sub("", text)))
        ),
    ]
