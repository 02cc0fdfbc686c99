"""Showing subject text safely: pygments highlighting and terminal neutralisation.

The lexer is chosen from the file name only — pygments' content guessing is
quadratic on adversarial input — and ``stripnl=False`` keeps leading blank lines,
so line 4 stays line 4.  Subject text never reaches pygments options that are
written unescaped (``title``, ``cssfile``, ``classprefix``).
"""

from __future__ import annotations

import functools
import re
import unicodedata

from pygments import highlight as _highlight
from pygments.formatters import TerminalFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, find_lexer_class_for_filename

_BIDI = {
    "\u061c",
    "\u200e",
    "\u200f",
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
}


def lexer_for(path: str) -> Lexer:
    """A lexer by file name alone; plain text when the name is unknown."""
    found = _lexer_class(path.rsplit("/", 1)[-1])
    return (found or TextLexer)(stripnl=False, ensurenl=False)


@functools.lru_cache(maxsize=512)
def _lexer_class(name: str) -> type[Lexer] | None:
    """The lexer class for a file name, looked up once per name: pygments matches the
    name against every lexer's patterns and lists the plugins' entry points on each
    lookup, milliseconds a quote (as ``get_lexer_for_filename`` does, without a
    lexer made only to be thrown away)."""
    found: type[Lexer] | None = find_lexer_class_for_filename(name)
    return found


def _mark(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a name that is not UTF-8 (surrogateescape)
        return f"<0x{code - 0xDC00:02X}>"
    return f"<U+{code:04X}>"


def visible(text: str) -> str:
    """Make control, bidi and escape characters visible (``\\x1b`` → ``<U+001B>``).

    Tabs and newlines stay; everything else that could move the cursor, recolour the
    terminal or reorder text is shown as ``<U+XXXX>``, and a byte of a file name that
    is not UTF-8 as ``<0xNN>``.
    """
    # a CR ending a line is part of its terminator (CRLF files), not hidden content
    return _INVISIBLE.sub(lambda m: _mark(m.group()), text.replace("\r\n", "\n"))


def visible_markup(markup: str) -> str:
    """:func:`visible` for a whole HTML page or fragment: each such character becomes
    ``&lt;U+XXXX&gt;``, which reads as ``<U+XXXX>`` in text and attribute values alike.

    Markup holds none of these characters in its tags, so the page keeps its structure.
    Not for the text of inline ``<script>`` or ``<style>`` elements, where entities are
    not decoded.
    """
    return _INVISIBLE.sub(
        lambda m: _mark(m.group()).replace("<", "&lt;").replace(">", "&gt;"),
        markup.replace("\r\n", "\n"),
    )


def visible_name(name: str) -> str:
    """A file name as a reader must see it: one line, and told apart from its look-alikes.

    Besides what :func:`visible` marks, tabs and newlines are marked (a name is one
    line), and so are the combining characters of a name not in Unicode NFC form, so
    that ``e`` + U+0301 shows as ``e<U+0301>`` and never looks like its NFC twin ``é``.
    """
    decomposed = not unicodedata.is_normalized("NFC", name)
    return "".join(
        _mark(ch)
        if ch in "\t\n"
        or _INVISIBLE.match(ch)
        or (decomposed and (unicodedata.combining(ch) or unicodedata.normalize("NFC", ch) != ch))
        else ch
        for ch in name
    )


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
    + "\ud800-\udfff]"  # lone surrogates: bytes of names that are not UTF-8
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


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``n`` and the word in the number it takes: "1 file", "3 files", "1 match"."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def cell_name(position: int, total: int, cell_id: str | None = None) -> str:
    """A notebook cell as JupyterLab shows it: its place among all the notebook's cells,
    Markdown ones included, counted from 1 ("cell 5 of 12"), and its id, which stays the
    cell's however cells move.  Never an execution count, which changes with each run and
    skips the cells not run."""
    where = f"cell {position} of {total}"
    return f"{where} (id {visible(cell_id)})" if cell_id else where
