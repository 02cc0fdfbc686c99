"""Finding spans in a file's bytes: by line range, by Python symbol, by unique substring.

Pure functions over bytes; they never read git.  Line numbers are 1-based and
inclusive, counted as git counts them (see :mod:`tracework.hashing`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from .errors import SpanError
from .hashing import Lines, display_text

_LONE_CR = re.compile(rb"\r(?!\n)")


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


def by_match(lines: Lines, needle: str, context: int, path: str) -> Span:
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
            hint="give a longer substring that occurs once, or quote with --lines",
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


def by_symbol(lines: Lines, qualname: str, path: str) -> Span:
    """A Python function, class, method or assignment by qualified name (``Class.method``).

    The span starts at the first decorator and ends at the definition's last line.
    """
    spans = find_symbol(lines, qualname, path)
    if not spans:
        raise SpanError(
            f"{path}: no function, class or assignment named {qualname}",
            hint="qualified names look like Store.write; nested scopes are separated by '.'",
        )
    if len(spans) > 1:
        where = ", ".join(f"{s.first}-{s.last}" for s in spans)
        raise SpanError(
            f"{path}: {qualname} is defined {len(spans)} times (lines {where})",
            hint="quote one of them with --lines",
        )
    return spans[0]


def find_symbol(lines: Lines, qualname: str, path: str) -> list[Span]:
    """Every definition of ``qualname`` in the file (empty when it does not parse)."""
    tree = parse_python(lines.data, path)
    if tree is None:
        return []
    scopes: list[list[ast.stmt]] = [tree.body]
    parts = qualname.split(".")
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        matches = [node for body in scopes for node in _named(body, part, allow_assign=last)]
        if last:
            return [_node_span(node) for node in matches]
        scopes = [
            node.body
            for node in matches
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        ]
    return []


def parse_python(data: bytes, path: str) -> ast.Module | None:
    """Parse Python source, or None when it is not valid Python (never raises).

    A lone CR ends a line for Python's tokenizer but not for git; it is blanked first
    so that ast's line numbers are git's line numbers.
    """
    try:
        return ast.parse(display_text(_LONE_CR.sub(b" ", data)), filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _flatten(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements of a scope, looking into if/try/with blocks (conditional definitions)."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If | ast.With | ast.AsyncWith):
            out += _flatten(node.body) + _flatten(getattr(node, "orelse", []))
        elif isinstance(node, ast.Try):
            out += _flatten(node.body) + _flatten(node.orelse) + _flatten(node.finalbody)
            for handler in node.handlers:
                out += _flatten(handler.body)
    return out


def _named(body: list[ast.stmt], name: str, *, allow_assign: bool) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    for node in _flatten(body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                found.append(node)
        elif allow_assign and isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                found.append(node)
        elif (
            allow_assign
            and isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
        ):
            found.append(node)
    return found


def _node_span(node: ast.stmt) -> Span:
    first = node.lineno
    for deco in getattr(node, "decorator_list", []):
        first = min(first, deco.lineno)
    return Span(first, node.end_lineno or node.lineno)
