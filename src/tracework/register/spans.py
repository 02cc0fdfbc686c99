"""Finding spans in a file's bytes: by line range, by Python symbol, by unique substring.

Pure functions over bytes; they never read git.  Line numbers are 1-based and
inclusive, counted as git counts them (see :mod:`tracework.hashing`).
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from tracework.errors import Interface, SpanError, option
from tracework.hashing import Lines, display_text

_LONE_CR = re.compile(rb"\r(?!\n)")
_PY_LINE_END = re.compile(rb"\r\n?|\n")


@dataclass(frozen=True, slots=True)
class Span:
    """A located span: first and last line."""

    first: int
    last: int


def by_lines(lines: Lines, first: int, last: int, path: str) -> Span:
    """Check a line range against the file's length."""
    if not 1 <= first <= last:
        raise SpanError(f"{path}: lines {first}-{last} are not a range (1-based, first ≤ last)")
    if last > len(lines):
        raise SpanError(
            f"{path}: lines {first}-{last} are out of range; the file has {len(lines)} lines"
        )
    return Span(first, last)


def by_match(
    lines: Lines, needle: str, context: int, path: str, interface: Interface = "cli"
) -> Span:
    """The one line containing ``needle``, widened by ``context`` lines either side."""
    if not needle or "\n" in needle:
        raise SpanError(f"{path}: a match must be non-empty text within one line")
    hits = find_match_lines(lines, needle)
    if not hits:
        raise SpanError(f"{path}: no line contains {needle!r}", hint="check spelling and case")
    if len(hits) > 1:
        shown = ", ".join(str(n) for n in hits[:20]) + (" …" if len(hits) > 20 else "")
        raise SpanError(
            f"{path}: {needle!r} occurs on {len(hits)} lines ({shown})",
            hint="give a longer substring that occurs once, or quote with "
            + option("lines", interface),
        )
    line = hits[0]
    return Span(max(1, line - context), min(len(lines), line + context))


def find_match_lines(lines: Lines, needle: str) -> list[int]:
    """Every line number whose text contains ``needle``."""
    raw = needle.encode("utf-8")
    found: list[int] = []
    pos = lines.data.find(raw)
    while pos != -1:
        line = lines.line_of_offset(pos)
        if not found or found[-1] != line:
            found.append(line)
        pos = lines.data.find(raw, pos + 1)
    return [n for n in found if raw in lines.span(n, n)]


def by_symbol(lines: Lines, qualname: str, path: str, interface: Interface = "cli") -> Span:
    """A Python function, class, method or assignment by qualified name (``Class.method``).

    The span starts at the first decorator and ends at the definition's last line.
    """
    try:
        spans = find_symbol(lines, qualname, path)
    except NotPython as exc:
        raise SpanError(
            f"{path}: {exc.problem}, so {qualname} cannot be found by name",
            hint=f"quote it with {option('lines', interface)} or {option('match', interface)}",
        ) from None
    if not spans:
        raise SpanError(
            f"{path}: no function, class or assignment named {qualname}",
            hint="qualified names look like Store.write; nested scopes are separated by '.'",
        )
    if len(spans) > 1:
        where = ", ".join(f"{s.first}-{s.last}" for s in spans)
        raise SpanError(
            f"{path}: {qualname} is defined {len(spans)} times (lines {where})",
            hint=f"quote one of them with {option('lines', interface)}",
        )
    return spans[0]


class NotPython(SpanError):
    """A file ``ast`` cannot read, so no symbol can be found in it; ``problem`` says why
    ("not valid Python (line 3: invalid syntax)")."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.problem = problem


def find_symbol(lines: Lines, qualname: str, path: str) -> list[Span]:
    """Every definition of ``qualname`` in the file; :class:`NotPython` when the file
    cannot be parsed (an anchor that could not be used is not an anchor gone)."""
    symbols = _symbols(lines.data, path)
    if isinstance(symbols, str):
        raise NotPython(path, symbols)
    return list(symbols.get(qualname, ()))


@functools.lru_cache(maxsize=1)
def _symbols(data: bytes, path: str) -> dict[str, tuple[Span, ...]] | str:
    """Every qualified name a symbol can be (``Class.method``, ``f.inner``, and at the
    end of one an assignment's names), with its definitions in file order; or why the
    file does not parse.

    Kept for the last file, small where its syntax tree is not: a check relocating
    several quotes anchored in one file parses it once (a large file takes seconds, and
    so may its syntax error).  Scopes are taken level by level, as a name is looked up
    part by part, so a name's definitions come in the order a reader meets them.
    """
    try:
        tree, to_git = _parse(data, path)
    except NotPython as exc:
        return exc.problem
    found: dict[str, list[Span]] = {}
    scopes: deque[tuple[str, list[ast.stmt]]] = deque([("", tree.body)])
    while scopes:
        prefix, body = scopes.popleft()
        for node in _flatten(body):
            for name in _defines(node):
                found.setdefault(prefix + name, []).append(_node_span(node, to_git))
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                scopes.append((f"{prefix}{node.name}.", node.body))
    return {name: tuple(spans) for name, spans in found.items()}


#: A decimal integer literal of more digits than this may exceed the interpreter's
#: limit on int() conversions (4,300 by default, 640 at the least), which ``ast``
#: applies to literals: one such number anywhere would make the whole file unreadable.
_LONG_INT = re.compile(
    rf"(?<![\w.])[0-9](?:_?[0-9]){{{sys.int_info.str_digits_check_threshold},}}(?![\w.])"
)


def parse_python(data: bytes, path: str) -> ast.Module:
    """Parse Python source, or :class:`NotPython` saying why it is not valid Python.

    The source is parsed as Python itself reads it (a lone CR ends a line), so what is
    found is what the interpreter would define; :func:`_parse` maps the line numbers
    back to git's.  A leading UTF-8 BOM, which Python accepts in a file but ``ast.parse``
    refuses in a string, is dropped (it is not a line, so numbering is unchanged).

    Decimal integer literals too long for ``int()`` are parsed as ``0`` padded with
    spaces (lines and columns unchanged): finding a definition needs no literal's
    value, and raising the interpreter's limit instead would be global to the process
    and give back the quadratic conversion the limit exists to prevent.
    """
    text = _LONG_INT.sub(_zero, display_text(data).removeprefix("\ufeff"))
    nul = text.find("\x00")
    if nul != -1:  # ast's own message for it names no line
        line = text.count("\n", 0, nul) + 1
        raise NotPython(path, f"not valid Python (a NUL byte on line {line})")
    try:
        return ast.parse(text, filename=path)
    except SyntaxError as exc:  # IndentationError and TabError too
        at = f"line {exc.lineno}: " if exc.lineno else ""
        problem = f"not valid Python ({at}{' '.join(exc.msg.split())[:200]})"
    except (RecursionError, MemoryError):  # the parser's recursion, or its 6,000-level stack
        problem = "nested too deeply for Python's parser"
    except ValueError as exc:
        problem = f"not valid Python ({' '.join(str(exc).split())[:200]})"
    raise NotPython(path, problem)


def _zero(match: re.Match[str]) -> str:
    return "0".ljust(len(match[0]))


def _parse(data: bytes, path: str) -> tuple[ast.Module, Callable[[int], int]]:
    """The syntax tree and a map from its line numbers to git's, or :class:`NotPython`.

    Python ends a line at a lone CR, git does not, so the numbers are mapped back
    through the offsets of Python's line starts.  When a lone CR makes the file invalid
    for Python (one inside a quoted string), the CRs are blanked instead and the tree's
    lines are git's as they are (and so are those of the problem, if it still fails).
    """
    if _LONE_CR.search(data) is None:
        return parse_python(data, path), _same_line
    try:
        tree = parse_python(data, path)
    except NotPython:
        return parse_python(_LONE_CR.sub(b" ", data), path), _same_line
    starts = [0, *(m.end() for m in _PY_LINE_END.finditer(data))]
    lines = Lines(data)
    return tree, lambda n: lines.line_of_offset(starts[min(n, len(starts)) - 1])


def _same_line(line: int) -> int:
    return line


def _flatten(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements of a scope, looking into if/try/with blocks (conditional definitions)."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If | ast.With | ast.AsyncWith):
            out += _flatten(node.body) + _flatten(getattr(node, "orelse", []))
        elif isinstance(node, ast.Try | ast.TryStar):
            out += _flatten(node.body) + _flatten(node.orelse) + _flatten(node.finalbody)
            for handler in node.handlers:
                out += _flatten(handler.body)
    return out


def _defines(node: ast.stmt) -> set[str]:
    """The names a statement defines in its scope: a function's or a class's, or each
    name an assignment binds."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {name for target in node.targets for name in _bound_names(target)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def _bound_names(target: ast.expr) -> set[str]:
    """The names an assignment target binds: ``a``, and each of ``a, (b, *c) = …``."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    if isinstance(target, ast.Tuple | ast.List):
        return {name for element in target.elts for name in _bound_names(element)}
    return set()  # an attribute or a subscript binds no name of the module


def _node_span(node: ast.stmt, to_git: Callable[[int], int]) -> Span:
    first = node.lineno
    for deco in getattr(node, "decorator_list", []):
        first = min(first, deco.lineno)
    return Span(to_git(first), to_git(node.end_lineno or node.lineno))


# -- what encloses a span, to name a quote after ------------------------------------------


def enclosing_symbol(lines: Lines, first: int, last: int, path: str) -> str | None:
    """The qualified name of the innermost Python symbol whose definition holds lines
    ``first``-``last`` whole: a function, class or method at any depth, or an assignment
    of the module or of a class (a function's locals are not symbols a reader looks up);
    None at module level.  :class:`NotPython` when the file does not parse.

    Innermost is the shortest such definition; definitions of one length (``a = b = …``)
    are told apart by name, so the answer is the same on every run.
    """
    symbols = _scopes(lines.data, path)
    if isinstance(symbols, str):
        raise NotPython(path, symbols)
    held = [(s.last - s.first, name) for name, s in symbols if s.first <= first and last <= s.last]
    return min(held)[1] if held else None


@functools.lru_cache(maxsize=1)
def _scopes(data: bytes, path: str) -> tuple[tuple[str, Span], ...] | str:
    """Every definition a quote can be named after, with its span; or why the file does
    not parse (kept for the last file: a cell quoting one file many times parses it once)."""
    try:
        tree, to_git = _parse(data, path)
    except NotPython as exc:
        return exc.problem
    found: list[tuple[str, Span]] = []
    scopes: deque[tuple[str, list[ast.stmt], bool]] = deque([("", tree.body, True)])
    while scopes:
        prefix, body, named = scopes.popleft()
        for node in _flatten(body):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((prefix + node.name, _node_span(node, to_git)))
                inner = isinstance(node, ast.ClassDef)  # a class's assignments are attributes
                scopes.append((f"{prefix}{node.name}.", node.body, inner))
            elif named:
                found += [(prefix + name, _node_span(node, to_git)) for name in _defines(node)]
    return tuple(found)


_FENCE = re.compile(rb" {0,3}(`{3,}|~{3,})")
_ATX = re.compile(rb" {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*\r?\n?")
_SETEXT = re.compile(rb" {0,3}(?:=+|-+)[ \t]*\r?\n?")


def markdown_heading(lines: Lines, first: int) -> str | None:
    """The text of the Markdown heading of the section holding line ``first`` (the
    nearest ATX ``#`` or setext heading at or above it, outside fenced code and YAML
    front matter); None before the first heading."""
    heading: str | None = None
    fence: bytes | None = None
    previous = b""
    start = 1
    if len(lines) and lines.span(1, 1).rstrip() == b"---":  # front matter: to its closing ---
        start = next(
            (n + 1 for n in range(2, len(lines) + 1) if lines.span(n, n).rstrip() == b"---"), 1
        )
    for n in range(start, min(first, len(lines)) + 1):
        line = lines.span(n, n)
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened[1][:1] == fence[:1] and len(opened[1]) >= len(fence):
                fence = None
            previous = b""
            continue
        if opened:
            fence, previous = opened[1], b""
            continue
        atx = _ATX.fullmatch(line)
        if atx:
            heading, previous = display_text(atx[1] or b""), b""
        elif previous.strip() and _SETEXT.fullmatch(line):
            heading, previous = display_text(previous.strip()), b""
        else:
            previous = line
    return heading
