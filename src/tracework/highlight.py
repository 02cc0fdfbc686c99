"""Showing subject text safely: pygments highlighting and terminal neutralisation.

The lexer is chosen from the file name only — pygments' content guessing is
quadratic on adversarial input — and ``stripnl=False`` keeps leading blank lines,
so line 4 stays line 4.  Subject text never reaches pygments options that are
written unescaped (``title``, ``cssfile``, ``classprefix``).
"""

from __future__ import annotations

import re

from pygments import highlight as _highlight
from pygments.formatters import TerminalFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

_BIDI = {
    "\u061c",
    "\u200e",
    "\u200f",
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
}


def lexer_for(path: str) -> Lexer:
    """A lexer by file name alone; plain text when the name is unknown."""
    name = path.rsplit("/", 1)[-1]
    try:
        return get_lexer_for_filename(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


def visible(text: str) -> str:
    """Make control, bidi and escape characters visible (``\\x1b`` → ``␛``-style marks).

    Tabs and newlines stay; everything else that could move the cursor, recolour the
    terminal or reorder text is shown as ``<U+XXXX>``.
    """

    def mark(m: re.Match[str]) -> str:
        return f"<U+{ord(m.group()):04X}>"

    # a CR ending a line is part of its terminator (CRLF files), not hidden content
    return _INVISIBLE.sub(mark, text.replace("\r\n", "\n"))


_INVISIBLE = re.compile(
    "["
    + "".join(
        re.escape(ch)
        for ch in sorted(
            {chr(c) for c in range(0x20) if chr(c) not in "\t\n"}
            | {chr(0x7F)}
            | {chr(c) for c in range(0x80, 0xA0)}
            | _BIDI
            | {"\u2028", "\u2029", "\ufeff", "\u200b", "\u200c", "\u200d"}
        )
    )
    + "]"
)


def terminal_lines(text: str, first: int, path: str, *, color: bool) -> str:
    """The span with right-aligned line numbers, highlighted when ``color`` is set."""
    safe = visible(text)
    if color:
        safe = _highlight(safe, lexer_for(path), TerminalFormatter())
    rows = safe.split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    width = len(str(first + len(rows)))
    return "\n".join(f"{n:>{width}} │ {row}" for n, row in enumerate(rows, start=first))
