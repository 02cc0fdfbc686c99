"""Quoted code as a page shows it: highlighted as its whole file reads, one row per line.

A span is highlighted as it reads in its file: the file is lexed from its start (pygments,
the lexer chosen by the file's name alone, :func:`tracework.text.lexer_for`) and the span's
lines are cut from the tokens, so a span that starts inside a docstring or a multi-line
string is coloured as one, and a span that opens with ``\"\"\"`` is not taken for a string
to the end.  Without the file's text, or when its lines are not the span's text (which
the register's hash is of), the span is lexed alone.  This is display only: the quote's
text, and so its hash, is what it was.

Each line is a row of the code's grid: its number in a gutter of its own (never
selected with the code), its code beside it.  A line too long for the column wraps at a
token boundary (a ``<wbr>`` between tokens, though never before a comma, a colon, a dot
or a closing bracket, nor between a name and its call's bracket; at the spaces; and
inside a token only when it is longer than the whole line), and its continuation rows
start past the line's own indentation, two columns further in (a hanging indent): never
under the gutter.

The indentation every line of a span shares (a method's body, twelve columns in) is
marked apart (``tw-lead``), and each row carries its depth below it too (``tw-rN``): at
a phone's width the page (``report.css``) does not draw the shared part, so deep code
keeps its few columns for the code, each line still indented as it is within the span.
Its characters stay in the row, so the text, and a copy of it, is the quote's.
"""

from __future__ import annotations

import functools
import html
import sys
import threading
from collections.abc import Iterator

from pygments.lexer import Lexer
from pygments.token import STANDARD_TYPES, _TokenType

from tracework.text import lexer_for, visible

#: Hanging indents are written for indentations up to this many columns; deeper lines
#: continue at this depth (on a phone a deeper one would leave too narrow a column).
MAX_INDENT = 12
#: A file larger than this is not lexed whole for one quote: its span is lexed alone.
MAX_LEXED = 2_000_000
#: Tabs are this many columns wide, on the page (``tab-size``) and in the indentation.
TAB = 4


def _type_class(ttype: _TokenType) -> str:
    """pygments' class for a token type: its own, or its nearest standard ancestor's with
    the rest of its name appended."""
    suffix = ""
    while (name := STANDARD_TYPES.get(ttype)) is None:
        suffix = str(ttype[-1]) + suffix
        ttype = ttype.parent
    return str(name) + suffix


def _classes(ttype: _TokenType) -> str:
    """The CSS classes pygments' HtmlFormatter gives a token (its own and each ancestor's
    up to a standard type), so the token colours of its style sheets apply."""
    classes = [_type_class(ttype)]
    while ttype not in STANDARD_TYPES:
        ttype = ttype.parent
        classes.insert(0, _type_class(ttype))
    return " ".join(c for c in classes if c)


def _lines(lexer: Lexer, text: str, first: int, last: int) -> Iterator[list[tuple[str, str]]]:
    """Lines ``first``–``last`` (1-based) of ``text`` as lexed from its start, each as
    its (classes, text) pieces without the newline; lexing stops after ``last``."""
    line: list[tuple[str, str]] = []
    number = 1
    for ttype, value in lexer.get_tokens(text):
        pieces = value.split("\n")
        for n, piece in enumerate(pieces):
            if n:
                if number >= first:
                    yield line
                line, number = [], number + 1
                if number > last:
                    return
            if piece and number >= first:
                line.append((_classes(ttype), piece))
    if first <= number <= last:  # a last line without a newline
        yield line


class _LexedFile:
    """A file's lines as lexed from its start, read only as far as a quote has asked and
    kept for the next: a notebook shows a file's spans in each card that cites them, and
    the page's record list shows them all again (the same tokens as :func:`_lines` of
    that span gives: the lexing is the same, from the same start)."""

    def __init__(self, lexer: Lexer, text: str) -> None:
        self._rows = _lines(lexer, text, 1, sys.maxsize)
        self._read: list[list[tuple[str, str]]] = []
        self._lock = threading.Lock()  # one generator: a batch's threads take turns

    def lines(self, first: int, last: int) -> list[list[tuple[str, str]]]:
        """Lines ``first``–``last`` (1-based), each as its (classes, text) pieces."""
        with self._lock:
            while len(self._read) < last:
                row = next(self._rows, None)
                if row is None:
                    break
                self._read.append(row)
            return self._read[first - 1 : last]


@functools.lru_cache(maxsize=16)
def _lexed_file(path: str, text: str) -> _LexedFile:
    """The file ``path``'s ``text`` as lexed, shared by every span quoted of it."""
    return _LexedFile(lexer_for(path), text)


def _indent(pieces: list[tuple[str, str]]) -> int:
    """The columns of a line's leading white space, tabs at :data:`TAB`."""
    text = "".join(t for _, t in pieces)
    lead = text[: len(text) - len(text.lstrip(" \t"))]
    return len(lead.expandtabs(TAB))


#: A line never wraps before these (a comma, a closing bracket or a dot starting a
#: continuation reads as a fault), nor before an opening bracket that follows a name or
#: a closing bracket (a call, an index).
_CLOSING = frozenset(",;:.)]}")
_OPENING = frozenset("([")


def _breaks_between(before: str, after: str) -> bool:
    """Whether a line may wrap between two adjacent tokens (spaces are breaks already)."""
    last, first = before[-1], after[0]
    if last.isspace() or first.isspace() or first in _CLOSING:
        return False
    return not (first in _OPENING and (last.isalnum() or last in "_)]"))


def _common_start(texts: list[str]) -> str:
    """The longest text each of ``texts`` starts with ("" for none): the lowest and the
    highest of them in order share exactly what all do."""
    if not texts:
        return ""
    low, high = min(texts), max(texts)
    pairs = enumerate(zip(low, high, strict=False))  # low may be the shorter
    size = next((i for i, (a, b) in pairs if a != b), len(low))
    return low[:size]


def _shared_lead(lines: list[list[tuple[str, str]]]) -> str:
    """The leading white space every line with code on it begins with ("" if none)."""
    leads = []
    for pieces in lines:
        text = "".join(t for _, t in pieces)
        if text.strip():
            leads.append(text[: len(text) - len(text.lstrip(" \t"))])
    return _common_start(leads)


def _split_lead(
    pieces: list[tuple[str, str]], lead: str
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """A line's pieces cut after the part of ``lead`` it begins with (a blank line may
    hold less of it): those of that part, and the rest, each keeping its token's classes."""
    text = "".join(t for _, t in pieces)
    left = len(_common_start([text, lead]))
    shared: list[tuple[str, str]] = []
    rest: list[tuple[str, str]] = []
    for classes, piece in pieces:
        if left:
            shared.append((classes, piece[:left]))
            piece, left = piece[left:], max(left - len(piece), 0)
        if piece:
            rest.append((classes, piece))
    return shared, rest


def _row(
    number: int | str, pieces: list[tuple[str, str]], row_class: str = "", lead: str = ""
) -> str:
    """One line: its number (or a diff line's sign), then its tokens with a break
    opportunity between two where a reader expects a line of code to continue
    (:func:`_breaks_between`); ``lead``, the span's shared indentation, marked apart."""
    out: list[str] = []
    depth = min(_indent(pieces), MAX_INDENT)
    classes_of_row = f"tw-cc tw-i{depth}"
    if lead:
        shared, pieces = _split_lead(pieces, lead)
        for classes, text in shared:
            marked = f"{classes} tw-lead".lstrip()
            out.append(f'<span class="{marked}">{html.escape(text, quote=False)}</span>')
        below = min(_indent(pieces), MAX_INDENT)
        classes_of_row += f" tw-r{below}"
    previous = ""
    for classes, text in pieces:
        if previous and _breaks_between(previous, text):
            out.append("<wbr>")
        shown = html.escape(text, quote=False)
        out.append(f'<span class="{classes}">{shown}</span>' if classes else shown)
        previous = text
    extra = f" {row_class}" if row_class else ""
    return (
        f'<span class="tw-cl{extra}"><span class="linenos">{number}</span>'
        f'<span class="{classes_of_row}">{"".join(out)}\n</span></span>'
    )


def _span_of(whole: str | None, text: str, first: int, last: int) -> str | None:
    """``whole`` when its lines ``first``–``last`` are exactly ``text`` (both as shown:
    :func:`~tracework.text.visible`); else None."""
    if whole is None or len(whole) > MAX_LEXED:
        return None
    lines = whole.split("\n")
    if len(lines) < last:
        return None
    span = "\n".join(lines[first - 1 : last])
    if last < len(lines):
        span += "\n"  # the last line's own newline
    return whole if span == text else None


def code_html(text: str, path: str, first_line: int, whole: str | None = None) -> str:
    """The quoted ``text`` (lines from ``first_line``) of the file ``path`` as highlighted
    HTML, lexed within ``whole``, the file's text, when that holds the span; every piece
    of subject text escaped, control characters made visible."""
    shown = visible(text)
    last = first_line + max(shown.count("\n") - shown.endswith("\n"), 0)
    source = _span_of(visible(whole) if whole is not None else None, shown, first_line, last)
    if source is None:
        source, start, end = shown, 1, last - first_line + 1
        lexed = list(_lines(lexer_for(path), source, start, end))
    else:
        start, end = first_line, last
        lexed = _lexed_file(path, source).lines(start, end)
    lead = _shared_lead(lexed)
    rows = [_row(first_line + n, pieces, lead=lead) for n, pieces in enumerate(lexed)]
    return f'<div class="tw-hl tw-code"><pre><code>{"".join(rows)}</code></pre></div>\n'


#: A unified diff line's sign, and the class its line gets (pygments' diff classes, so
#: the token palettes colour it as they coloured the diff before).
_DIFF_SIGNS = {"+": "gi", "-": "gd", "@": "gu", " ": ""}


def diff_html(diff: str, path: str) -> str:
    """A unified diff of ``path``'s lines as rows of the same grid as a quote: each
    line's sign in the gutter (its two header lines and each ``@@`` line whole, with
    none), the rest beside it, coloured as the diff line it is, and cut into the file's
    tokens only to wrap as quoted code does (a line lexed alone could be coloured wrong,
    but it breaks where code reads on); escaped, control characters made visible."""
    lexer = lexer_for(path)
    shown = visible(diff)
    lines = shown.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    parsed = []
    for n, line in enumerate(lines):
        if (n < 2 and line.startswith(("--- ", "+++ "))) or line.startswith("@"):
            kind = "gu" if line.startswith("@") else "gh"
            sign, rest = "", line
        else:
            sign, rest = line[:1], line[1:]
            kind = _DIFF_SIGNS.get(sign, "")
        if kind in ("gh", "gu"):
            pieces = [(kind, rest)] if rest else []
        else:
            pieces = [(kind, t) for _, value in lexer.get_tokens(rest) if (t := value.strip("\n"))]
        parsed.append((sign, kind, pieces))
    lead = _shared_lead([pieces for _, kind, pieces in parsed if kind not in ("gh", "gu")])
    rows = [
        _row(
            html.escape(sign.replace(" ", "")),
            pieces,
            {"gi": "tw-ins", "gd": "tw-del"}.get(kind, ""),
            "" if kind in ("gh", "gu") else lead,
        )
        for sign, kind, pieces in parsed
    ]
    return f'<div class="tw-hl tw-code tw-diff"><pre><code>{"".join(rows)}</code></pre></div>\n'
