"""What is content and what is only formatting: the one rule every output derives from.

A quote whose bytes no longer hold is **format only** when its *content* still occurs
in the file it was relocated in (:func:`holds_in`).  For Python (``.py``, ``.pyi``)
the content is the file's token stream:

* code tokens without layout: indentation, line breaks inside brackets, line
  continuations and the spaces between tokens are ignored; the end of a statement
  (a line break outside brackets, or ``;``) is one separator, so a statement cannot
  grow unnoticed;
* a trailing comma that a formatter adds when it splits a call or a collection over
  lines is layout, but the comma that makes ``(a,)`` or ``x[a,]`` a tuple is not;
* string literals are compared by value, exactly, because a prompt template's
  whitespace is behaviour (``'a'`` and ``"a"`` are the same literal; an f-string keeps
  its text between the quotes);
* a docstring (a string literal that is a statement of its own) is compared as
  :func:`inspect.cleandoc` reads it once the spaces at its line ends are gone (so a
  line of spaces is an empty line): a linter that re-indents a docstring or strips its
  trailing spaces changes nothing;
* comments are kept, without their trailing spaces: editing a comment changes the
  content of a quote that includes it.

Other text compares its words: every run of whitespace is alike.

A span's content is the tokens on its lines, and **a string literal that runs over the
span's edge counts by its part inside the span, compared as the whole literal is**: by
value, and as cleandoc reads it when the literal starts a statement (a docstring,
whatever follows it past the span); the part matches only a literal cut the same way
(entered from an earlier line, left on a later one, or both) over as many lines.
Spans are whole lines, so nothing else can cross an edge: a comment ends with its
line, a bracket is a token of its own (a span that starts inside brackets reads on
from them, in context). So what a span holds of a string never depends on the string's
lines outside it, and a span that starts on the closing quotes of a docstring holds
those quotes, compared as the docstring's last line: nothing.  A statement end before
a span's first token (a statement that ended on the span's first line) is not the
span's.

A span's tokens are read in the context of its file (the bracket it sits in, whether a
string is a docstring), never from the span's text alone, so the same lines always
give the same content, and every span's content occurs in its own file.  Files are not
tokenized whole: a cheap pass over the lines finds where each statement starts, and
tokens are read from the start of the statement that holds a span, or that holds a
place where a span may occur again.  The drift check, the first-change search, the
report, the history and the site all derive "format only" from this module.
"""

from __future__ import annotations

import ast
import inspect
import keyword
import re
import warnings
from bisect import bisect_right
from collections.abc import Iterator
from functools import cached_property, lru_cache
from typing import NamedTuple

#: The one token a statement's end becomes (a line break outside brackets, or ``;``).
SEPARATOR = "⏎"

_STRING = (
    r"(?P<string>(?:(?<!\w)[rRbBuUfF]{1,2})?(?:"
    r"'''(?:[^'\\]|\\.|'(?!''))*(?:'''|\Z)"
    r'|"""(?:[^"\\]|\\.|"(?!""))*(?:"""|\Z)'
    r"|'(?:[^'\\\n]|\\.)*(?:'|(?=\n)|\Z)"
    r'|"(?:[^"\\\n]|\\.)*(?:"|(?=\n)|\Z)))'
)
_NUMBER = (
    r"(?P<number>0[xXoObB][0-9a-fA-F_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)"
    r"(?:[eE][+-]?\d[\d_]*)?[jJ]?)"
)
_OPERATORS = sorted(
    [
        "**=",
        "//=",
        ">>=",
        "<<=",
        "!=",
        "%=",
        "&=",
        "**",
        "*=",
        "+=",
        "-=",
        "->",
        "//",
        "/=",
        ":=",
        "<<",
        "<=",
        "==",
        ">=",
        ">>",
        "@=",
        "^=",
        "|=",
        "...",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        ";",
        ".",
        "+",
        "-",
        "*",
        "/",
        "%",
        "&",
        "|",
        "^",
        "~",
        "<",
        ">",
        "=",
        "@",
        "!",
    ],
    key=len,
    reverse=True,
)
#: One Python token per match; spaces and line continuations are skipped.
_SCANNER = re.compile(
    r"(?:[ \t\f]|\\\r?\n)*(?:"
    + "|".join(
        [
            r"(?P<newline>\r?\n)",
            r"(?P<comment>#[^\r\n]*)",
            _STRING,
            _NUMBER,
            r"(?P<name>\w+)",
            "(?P<op>" + "|".join(re.escape(op) for op in _OPERATORS) + ")",
            r"(?P<other>.)",
        ]
    )
    + ")",
    re.DOTALL,
)
#: A normalised string literal (see _literal): a repr, or a prefix and a colon.
_LITERAL = re.compile(r"[bruf]{0,2}['\"]|[bruf]{1,2}:")
_WORD = re.compile(r"\w+")
_BRACKET = re.compile(r"[][(){}]")
#: Strings and comments, for the cheap pass that blanks them out.
_OPAQUE = re.compile(r"(?P<comment>#[^\r\n]*)|" + _STRING, re.DOTALL)
#: The characters every match of _OPAQUE holds within its first three: a ``#``, or a
#: quote after at most two prefix letters.
_OPENER = re.compile(r"[#'\"]")
_PREFIX_LETTERS = frozenset("rRbBuUfF")
_NON_WORD = re.compile(r"\W+")
#: A name or a number (``.5`` too), not a normalised literal (``b'x'``, ``f:x``).
_NAME_OR_NUMBER = re.compile(r"(?![bruf]{0,2}['\":])(?:\w|\.\d)")
#: A number a word character follows: the tokenizer reads two tokens there (``1if``).
_NUMBER_THEN_WORD = re.compile(r"(?<!\w)" + _NUMBER.replace("?P<number>", "?>") + r"(?=\w)")


class Token(NamedTuple):
    """One normalised token, the lines (1-based, inclusive) it came from, and where
    it starts in the file's text; a string literal keeps its text as written and
    whether it starts a statement, to read the part of it a span cuts (:func:`_cut`)."""

    text: str
    first: int
    last: int
    offset: int
    raw: str = ""
    lead: bool = False


class Statement(NamedTuple):
    """A logical line: its first and last line, its column, whether it opens a block."""

    first: int
    last: int
    column: int
    header: bool


def python_path(path: str) -> bool:
    return path.endswith((".py", ".pyi"))


class Content:
    """The content of one file under the rule above, read as questions are asked."""

    def __init__(self, data: bytes | str, path: str) -> None:
        self.text = data if isinstance(data, str) else data.decode("utf-8", "replace")
        self.python = python_path(path)
        self._found: dict[tuple[str, ...], list[tuple[int, int]]] = {}

    # -- the cheap pass: where statements start ---------------------------------------

    @cached_property
    def _breaks(self) -> list[int]:
        """The offset of every ``\\n``."""
        return [m.start() for m in re.finditer("\n", self.text)]

    def _line_of(self, offset: int) -> int:
        return bisect_right(self._breaks, offset - 1) + 1

    def _offset_of(self, line: int) -> int:
        return self._breaks[line - 2] + 1 if line > 1 else 0

    @cached_property
    def _code(self) -> tuple[str, frozenset[int]]:
        """The text with every string and comment blanked (newlines kept), and the
        lines that begin inside a string."""
        text = self.text
        parts: list[str] = []
        inside: set[int] = set()
        end = 0
        for m in _opaque(text):
            start, stop = m.span()
            parts.append(text[end:start])
            # a string becomes \x01s: not a space, a word, a bracket or a line break
            fill = " " if m.lastgroup == "comment" else "\x01"
            opaque = text[start:stop]
            if "\n" in opaque:
                first = self._line_of(start)
                inside.update(range(first + 1, first + opaque.count("\n") + 1))
                parts.append("\n".join(fill * len(part) for part in opaque.split("\n")))
            else:
                parts.append(fill * (stop - start))
            end = stop
        parts.append(text[end:])
        return "".join(parts), frozenset(inside)

    @cached_property
    def statements(self) -> tuple[Statement, ...]:
        """Every statement of a Python file, in order (none for other text)."""
        if not self.python:
            return ()
        found: list[Statement] = []
        depth, start, column, continued = 0, 0, 0, False
        code_text, inside = self._code
        lines = code_text.split("\n")
        bracket = _BRACKET.search
        for n, line in enumerate(lines, start=1):
            code = line.strip()
            if not start:
                if not code:
                    continue  # a blank or comment-only line between statements
                start, column = n, len(line) - len(line.lstrip())
            if bracket(code) is not None:  # most lines hold none: six counts saved
                opened = code.count("(") + code.count("[") + code.count("{")
                closed = code.count(")") + code.count("]") + code.count("}")
                depth = max(0, depth + opened - closed)
            continued = code.endswith("\\")
            if depth == 0 and not continued and n + 1 not in inside:
                found.append(Statement(start, n, column, code.endswith(":")))
                start = 0
        if start:
            found.append(Statement(start, len(lines), column, False))
        return tuple(found)

    @cached_property
    def _starts(self) -> list[int]:
        return [s.first for s in self.statements]

    def _statement_start(self, line: int) -> int:
        """The first line of the statement that holds ``line`` (or ``line`` itself
        when it lies between statements)."""
        i = bisect_right(self._starts, line) - 1
        if i >= 0 and self.statements[i].last >= line:
            return self.statements[i].first
        return line

    # -- tokens -------------------------------------------------------------------------

    def _tokens_from(self, line: int) -> Iterator[Token]:
        """Normalised tokens from the start of ``line`` (a statement's first line, or a
        line between statements) to the end of the file, read lazily."""
        if not self.python:
            yield from self._words_from(line)
            return
        raw = self._raw_from(self._offset_of(line))
        brackets: list[list[int]] = []  # per open bracket: [its commas, lone one is layout]
        previous: tuple[str, str] | None = None  # the last code token: (kind, text)
        held: list[Token] = []  # a comma and the comments after it, until we know
        ahead = next(raw, None)
        while ahead is not None:
            kind, string, offset = ahead
            ahead = next(raw, None)
            first = self._line_of(offset)
            last = first + string.count("\n")
            if kind == "comment":
                token = Token(string.rstrip(), first, last, offset)
                if held:
                    held.append(token)
                else:
                    yield token
                continue
            if kind == "end":
                previous = None
                token = Token(SEPARATOR, first, first, offset)
            else:
                text, written, lead = string, "", False
                if kind == "string":
                    written, lead = string, previous is None
                    text = _literal(string, docstring=lead and _ends(ahead))
                elif kind == "op" and string in "([{":
                    follows = _follows_value(previous)
                    # f(a,) is f(a) and [a,] is [a]; but (a,) is a tuple, and so is x[a,]
                    lone = follows if string == "(" else not follows if string == "[" else True
                    brackets.append([0, int(lone)])
                elif kind == "op" and string == "," and brackets:
                    brackets[-1][0] += 1
                elif kind == "op" and string in ")]}" and brackets:
                    commas, lone_is_layout = brackets.pop()
                    if held and (commas > 1 or lone_is_layout):
                        held.pop(0)  # the trailing comma a formatter adds
                token = Token(text, first, last, offset, written, lead)
                previous = (kind, string)
            yield from held
            held.clear()
            if token.text == ",":
                held.append(token)
            else:
                yield token
        yield from held

    def _raw_from(self, offset: int) -> Iterator[tuple[str, str, int]]:
        """Raw tokens from ``offset``: (kind, text, offset); line breaks outside
        brackets and ``;`` are statement ends (kind ``end``, once per run of them)."""
        depth, ended = 0, True
        for m in _SCANNER.finditer(self.text, offset):
            kind = m.lastgroup or "other"
            string = m.group(kind)
            start = m.start(kind)
            if kind == "newline" or (kind == "op" and string == ";"):
                if depth == 0 and not ended:
                    ended = True
                    yield "end", "", start
                continue
            if kind == "op" and string in "([{":
                depth += 1
            elif kind == "op" and string in ")]}":
                depth = max(0, depth - 1)
            ended = False
            yield kind, string, start
        if not ended:
            yield "end", "", len(self.text)

    def _words_from(self, line: int) -> Iterator[Token]:
        for m in re.finditer(r"\S+", self.text[self._offset_of(line) :]):
            offset = self._offset_of(line) + m.start()
            first = self._line_of(offset)
            yield Token(m.group(), first, first, offset)

    # -- questions --------------------------------------------------------------------

    def span(self, first: int, last: int) -> tuple[str, ...]:
        """The content of lines ``first..last``: the tokens there, a string literal the
        span cuts as its part inside the span (:func:`_cut`); a statement end before
        the first of them is not the span's (the statement it ends lies before it)."""
        out: list[str] = []
        for token in self._tokens_from(self._statement_start(first)):
            if token.first > last:
                break
            if token.last < first:
                continue
            if token.first < first or token.last > last:
                out.append(_cut(token, first, last))
            elif out or token.text != SEPARATOR or not self.python:
                out.append(token.text)
        return tuple(out)

    def find(self, needle: tuple[str, ...]) -> list[tuple[int, int]]:
        """Every place ``needle`` occurs, as the smallest line span holding it (searched
        once per needle: :meth:`holds` asks first, then relocation asks where)."""
        if needle not in self._found:
            self._found[needle] = self._search(needle)
        return list(self._found[needle])

    def _search(self, needle: tuple[str, ...]) -> list[tuple[int, int]]:
        if not needle:
            return []
        found: list[tuple[int, int]] = []
        cut = self.python and _is_cut(needle[0])
        for offset in self._cut_candidates(needle[0]) if cut else self._candidates(needle[0]):
            line = self._line_of(offset)
            tokens = self._tokens_from(self._statement_start(line))
            for token in tokens:
                if token.offset >= offset:
                    break
            else:
                continue
            if token.offset != offset:
                continue
            if cut:
                places = _cut_places(token, needle[0])
            elif token.text == needle[0]:
                places = [(line, token.last)]
            else:
                continue
            if len(needle) == 1 or not places:
                found.extend(places)
                continue
            # tokens follow only a string the span starts inside: it ends there, once
            (begin, end), matched = places[0], 1
            for token in tokens:
                want = needle[matched]
                if self.python and _is_cut(want):  # a string the span ends inside: last
                    ends = _cut_places(token, want)
                    if ends:
                        matched, end = matched + 1, ends[0][1]
                    break
                if token.text != want:
                    break
                matched, end = matched + 1, token.last
                if matched == len(needle):
                    break
            if matched == len(needle):
                found.append((begin, end))
        return sorted(set(found))

    def _cut_candidates(self, cut: str) -> Iterator[int]:
        """Offsets of the string literals that hold the cut part ``cut``, read from the
        file's start (the search reads each again from its statement's start)."""
        return (t.offset for t in self._read if t.raw and _cut_places(t, cut))

    @cached_property
    def _read(self) -> list[Token]:
        """Every token of the file, read from its start, for the searches whose first
        token cannot be found by its text (a literal, whole or cut)."""
        return list(self._tokens_from(1))

    def _candidates(self, first: str) -> Iterator[int]:
        """Offsets where a token equal to ``first`` may start: where its text occurs as
        a token would (a string literal, normalised, may be written otherwise, and one
        cut off reads as a colon and its text: then wherever a token equal to it starts).
        A name or a number starts where no name or number ends (a number may end where
        a name starts: ``1if``), and a name ends where no word character follows."""
        if self.python and (_LITERAL.match(first) or first[:1] == ":"):
            yield from (t.offset for t in self._read if t.text == first)
            return
        text = self.text
        code = self._code[0] if self.python else text
        word = first[:1].isalnum() or first[:1] == "_"
        name = word and not first[:1].isdigit()
        position = text.find(first)
        while position != -1:
            end = position + len(first)
            if (
                # a comment where the text has one; anything else in code, not in a string
                (code[position] == " " if first[:1] == "#" else code[position] == first[0])
                and not (word and position and _in_name(text, position))
                and not (name and end < len(text) and (text[end].isalnum() or text[end] == "_"))
                and (self.python or not (position and not text[position - 1].isspace()))
            ):
                yield position
            position = text.find(first, position + 1)

    def holds(self, needle: tuple[str, ...]) -> bool:
        """Whether ``needle`` occurs here (a needle of layout only always does).

        First two necessary conditions, so that content that is gone (the usual case
        for a quote whose bytes no longer hold) is known without reading the file's
        statements.  Each run of the needle's code tokens between its literals,
        comments and statement ends is written in the text as it is, only layout
        between its tokens (:func:`_written_runs`): a few string searches.
        Then a change of layout keeps the names and numbers of the code, in order;
        only when they all still occur together are the tokens read.
        """
        if not needle:
            return True
        if self.python and not all(run in self._squeezed for run in _written_runs(needle)):
            return False
        words = (
            [w for t in needle if _NAME_OR_NUMBER.match(t) for w in _WORD.findall(t)]
            if self.python
            else list(needle)
        )
        if words and f" {' '.join(words)} " not in self._words:
            return False
        return not self.python or bool(self.find(needle))

    @cached_property
    def _squeezed(self) -> str:
        """The text without :data:`_BETWEEN` (see :func:`_written_runs`)."""
        return self.text.translate(_BETWEEN)

    @cached_property
    def _words(self) -> str:
        """The names and numbers outside strings and comments (Python), or the words
        (other text), one space apart and around."""
        if self.python:  # the runs of anything else, each made one space
            code = _NUMBER_THEN_WORD.sub(r"\g<0> ", self._code[0])
            return f" {_NON_WORD.sub(' ', code).strip(' ')} "
        return f" {' '.join(self.text.split())} "

    def whole_statements(self, first: int, last: int) -> tuple[int, int]:
        """``first..last`` widened to whole statements (other text: as it is)."""
        return self._statement_start(first), max(
            [last, *(s.last for s in self.statements if s.first <= last < s.last)]
        )

    def aligned(self, first: int, last: int) -> bool:
        """Whether ``first..last`` starts and ends on statement boundaries."""
        return self.whole_statements(first, last) == (first, last)

    def block_end(self, first: int, last: int) -> int:
        """The last line of the blocks opened inside ``first..last``: a statement there
        ending in ``:`` owns the statements after it that sit deeper than it does."""
        ends = last
        opened: list[int] = []  # columns of the headers still open
        for s in self.statements:
            while opened and s.column <= opened[-1]:
                opened.pop()
            if opened:
                ends = max(ends, s.last)
            elif s.first > last:
                break
            if s.header and first <= s.first <= last:
                opened.append(s.column)
        return ends

    def closes_blocks(self, first: int, last: int) -> bool:
        """Whether every block opened inside ``first..last`` also ends inside it."""
        return self.block_end(first, last) == last


#: What the tokenizer passes over between two code tokens of one statement (spaces,
#: line breaks and continuations, a ``;`` inside brackets, a trailing comma), as a
#: table that deletes it.
_BETWEEN = str.maketrans("", "", " \t\f\v\r\n\\,;")
#: The start of every token not read as written: a comment, or a literal (see
#: :func:`_literal`: a repr, or a prefix, perhaps none, and a colon; so ``:`` and
#: ``:=`` too, which an unterminated literal may read as).
_REWRITTEN = re.compile(r"#|[bruf]{0,2}['\":]")


def _written_runs(needle: tuple[str, ...]) -> list[str]:
    """What every text holding ``needle`` holds once :data:`_BETWEEN` is taken out of
    it: each run of the needle's names, numbers and operators, its text as written.

    Literals (compared by value, whole or cut), comments (compared without their
    trailing spaces), statement ends (a line break or ``;``), and any token that reads
    like one of them (:data:`_REWRITTEN`) end a run; commas are left out, since a
    trailing comma may be layout.  Every other token is the text it was read from and
    matches only a token read the same way, and the tokenizer passes over nothing but
    :data:`_BETWEEN` from one token to the next, so where the needle occurs, each run,
    taken out the same way, is in the text.
    """
    runs: list[list[str]] = [[]]
    for token in needle:
        if token == ",":
            continue
        if token == SEPARATOR or _REWRITTEN.match(token) or _is_cut(token):
            runs.append([])
        else:
            runs[-1].append(token)
    return ["".join(run).translate(_BETWEEN) for run in runs if run]


def _in_name(text: str, position: int) -> bool:
    """Whether ``position`` follows a word character that a name holds: one in a run of
    them that does not start with a digit (a number may end right before a name)."""
    start = position
    while start and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    return start < position and not text[start].isdigit()


def _opaque(text: str) -> Iterator[re.Match[str]]:
    """The matches of :data:`_OPAQUE` in ``text``, exactly as ``finditer`` gives them,
    without trying the pattern at every character.

    A match starts with a ``#`` or a quote, or with one or two prefix letters before a
    quote; so the next one starts at the next ``#`` or quote, or at a prefix letter
    at most two characters before it.  The pattern is tried only there, leftmost
    first, as finditer would.
    """
    position = 0
    while (opener := _OPENER.search(text, position)) is not None:
        at = opener.start()
        starts = [at]
        if text[at] != "#":
            starts[:0] = [p for p in range(max(position, at - 2), at) if text[p] in _PREFIX_LETTERS]
        for start in starts:
            if (m := _OPAQUE.match(text, start)) is not None:
                yield m
                position = m.end()
                break
        else:  # an unterminated quote before a final backslash: no match here
            position = at + 1


def _ends(ahead: tuple[str, str, int] | None) -> bool:
    """Whether the raw token ``ahead`` ends the statement (so a comment after a
    docstring, on its line, makes it a plain literal: the same text reads the same)."""
    return ahead is None or ahead[0] == "end"


def _follows_value(previous: tuple[str, str] | None) -> bool:
    """Whether a bracket opened after ``previous`` is a call or a subscript (it follows
    a name, a literal or a closing bracket) rather than a parenthesis or a display."""
    if previous is None:
        return False
    kind, text = previous
    if kind == "name":
        return not keyword.iskeyword(text)
    return kind in ("string", "number") or text in (")", "]", "}")


def _literal(token: str, *, docstring: bool) -> str:
    """A string literal's value, exactly (a docstring as cleandoc reads it once the
    spaces at its line ends are gone); a literal ``ast`` cannot evaluate (an f-string, or
    one cut off by the end of the file) keeps its prefix and the text between its quotes."""
    value = _value(token)
    if value is None:
        prefix = token[: len(token) - len(token.lstrip("rRbBuUfF"))]
        body = token[len(prefix) :]
        quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
        inner = body[len(quote) :]
        return f"{prefix.lower()}:{inner.removesuffix(quote)}"
    return repr(_docstring(value) if docstring and isinstance(value, str) else value)


def _value(literal: str) -> str | bytes | None:
    """The value of a string literal, None when ``ast`` cannot evaluate it."""
    try:
        if "\\" in literal:  # an invalid escape warns (3.12: on stderr); its value is read
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = ast.literal_eval(literal)
        else:
            value = ast.literal_eval(literal)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str | bytes) else None


def _docstring(value: str) -> str:
    """A docstring as cleandoc reads it once the spaces at its line ends are gone (so a
    line of spaces is an empty line)."""
    return inspect.cleandoc("\n".join(line.rstrip() for line in value.split("\n")))


#: The mark a string literal cut by a span begins its token with (see :func:`_cut`); no
#: other token is longer than one character and begins with it.
CUT = "…"


def _is_cut(token: str) -> bool:
    return len(token) > 1 and token[0] == CUT


def _cut(token: Token, first: int, last: int) -> str:
    """The token for the part of the string literal ``token`` inside lines
    ``first..last`` (only a literal spans lines, so only a literal is cut).

    It says where the span cuts the literal — it runs on past the span's end
    (``head``), began before the span (``tail``), or both (``inner``) — how many of its
    lines are inside, and what of it is there, compared as the whole literal would be
    (:func:`_part`): by value, and as :func:`inspect.cleandoc` reads it when the literal
    starts a statement (a docstring; what follows it may lie past the span).
    """
    a, b = max(first, token.first) - token.first, min(last, token.last) - token.first
    where = "inner" if a and token.first + b < token.last else "tail" if a else "head"
    return _cut_token(token.raw, a, b, where, token.lead)


def _cut_shape(cut: str) -> tuple[str, int]:
    """Where a cut token (see :func:`_cut`) cuts its literal, and how many lines it holds."""
    where, count, _part = cut[1:].split(":", 2)
    return where, int(count)


def _cut_places(token: Token, cut: str) -> list[tuple[int, int]]:
    """The lines of each part of the string literal ``token`` equal to the cut part
    ``cut``, cut the same way (a part the span starts inside starts past the literal's
    first line, a part it ends inside ends before its last)."""
    where, count = _cut_shape(cut)
    lines = token.last - token.first + 1
    if not token.raw or lines <= count:
        return []
    if where == "head":
        starts = range(1)
    elif where == "tail":
        starts = range(lines - count, lines - count + 1)
    else:
        starts = range(1, lines - count)
    return [
        (token.first + a, token.first + a + count - 1)
        for a in starts
        if _cut_token(token.raw, a, a + count - 1, where, token.lead) == cut
    ]


def _cut_token(raw: str, a: int, b: int, where: str, docstring: bool) -> str:
    return f"{CUT}{where}:{b - a + 1}:{_part(raw, a, b, docstring=docstring)}"


def _part(raw: str, a: int, b: int, *, docstring: bool) -> str:
    """The part of the literal ``raw`` on its lines ``a..b`` (0-based), normalised as
    :func:`_literal` normalises a whole one: its value, exactly, or as cleandoc reads
    it for a docstring; its prefix and the text between its quotes when it cannot be
    evaluated.  An escape never runs over a line's end (a backslash and the line break
    are one), so the value of lines is the values of each joined."""
    prefix, texts, values = _lines_of(raw)
    parts = values[a : b + 1]
    strings = [v for v in parts if isinstance(v, str)]
    if len(strings) == len(parts):
        value = "".join(strings)
        return repr(_docstring(value) if docstring else value)
    data = [v for v in parts if isinstance(v, bytes)]
    if len(data) == len(parts):
        return repr(b"".join(data))
    return f"{prefix.lower()}:{''.join(texts[a : b + 1])}"


@lru_cache(maxsize=256)
def _lines_of(raw: str) -> tuple[str, tuple[str, ...], tuple[str | bytes | None, ...]]:
    """A string literal's prefix, the text of each of its lines between its quotes (the
    line break included), and the value of each (None when it cannot be evaluated)."""
    prefix = raw[: len(raw) - len(raw.lstrip("rRbBuUfF"))]
    body = raw[len(prefix) :]
    quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
    lines = body.split("\n")
    texts = [line + "\n" for line in lines[:-1]] + [lines[-1].removesuffix(quote)]
    texts[0] = texts[0][len(quote) :]
    return prefix, tuple(texts), tuple(_value(prefix + quote + t + quote) for t in texts)


def holds_in(old: Content, first: int, last: int, new: Content) -> bool:
    """Whether the content of lines ``first..last`` of ``old`` still occurs in ``new``:
    the definition of *format only* for a quote whose bytes no longer hold."""
    return new.holds(old.span(first, last))
