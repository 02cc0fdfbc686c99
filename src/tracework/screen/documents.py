"""Subject configuration files (YAML, JSON, JSON with comments) read with their lines.

The screen must say at which line a workflow runs ``curl … | sh``, so files are
*composed* with ruamel's safe loader, never constructed: the result is a graph of
nodes carrying their line and column, tags are never acted on (``!!python/object``
stays a string), and an alias is the node it names, so a walk that visits each
node once stays linear however the aliases multiply (no "billion laughs").

ruamel parses in pure Python here (about 15 s per MiB on a slow core), so what is
parsed is bounded: a file over :data:`FILE_CAP` is not parsed, nor anything once
:data:`SCREEN_BUDGET` bytes have been; the screen then says so for that file and
falls back to reading its lines.  JSON is YAML's flow syntax (tabs, trailing
commas and all); the comments editors allow in their JSON are blanked first, line
breaks kept, so every line number stays the file's own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import re2

from tracework.hashing import display_text, is_binary

log = logging.getLogger(__name__)

#: Files larger than this are listed but not parsed.
FILE_CAP = 256 * 1024
#: At most this many bytes of structured files are parsed per screen.
SCREEN_BUDGET = 1024 * 1024

# a JSON string (kept) or a comment (blanked); re2 is linear on any input, where a
# lazy /* … */ in Python's engine rescans the rest of the file at every unclosed /*
_JSON_TOKEN = re2.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*(?s:.*?)\*/')


@dataclass
class Budget:
    """The bytes of structured text the screen may still parse."""

    left: int = SCREEN_BUDGET

    def take(self, size: int) -> bool:
        if size > self.left:
            return False
        self.left -= size
        return True


@dataclass(frozen=True)
class Document:
    """A parsed file: its YAML documents as nodes, or why it was not parsed.

    ``lines`` always holds the file's text, line by line, so a file that could not
    be parsed can still be read line by line.
    """

    lines: list[str]
    roots: tuple[Any, ...] = ()
    problem: str | None = None
    problem_line: int = 1


def lines_of(data: bytes | None) -> list[str]:
    """A blob's text, split at line feeds (empty for a binary or unread blob)."""
    if data is None or is_binary(data[:8000]):
        return []
    return display_text(data).split("\n")


def _blank_comments(text: str) -> str:
    def blank(match: Any) -> str:
        token: str = match.group(0)
        return (
            token if token.startswith('"') else "".join("\n" if c == "\n" else " " for c in token)
        )

    result: str = _JSON_TOKEN.sub(blank, text)
    return result


def read(data: bytes | None, size: int, budget: Budget, *, jsonc: bool = False) -> Document:
    """Parse one file within the bounds, or say why it was not parsed."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.reader import ReaderError

    if data is None:
        return Document([], problem=f"{size} bytes, over the size cap: not read")
    lines = lines_of(data)
    if not lines:
        return Document([], problem="binary: not read")
    if size > FILE_CAP:
        return Document(lines, problem=f"{size} bytes, over the {FILE_CAP // 1024} KiB parsed")
    if not budget.take(size):
        return Document(lines, problem="not parsed: the screen's parsing budget was spent")
    text = "\n".join(lines)
    if jsonc:
        text = _blank_comments(text)
    try:
        roots = tuple(YAML(typ="safe", pure=False).compose_all(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        what = " ".join(str(exc.problem or exc.context).split())[:120]
        return Document(
            lines, problem=f"not valid {'JSON' if jsonc else 'YAML'} ({what})", problem_line=line
        )
    except ReaderError as exc:  # a character YAML refuses (a control character): where it is
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        problem = f"not valid {'JSON' if jsonc else 'YAML'} (a character it refuses)"
        return Document(lines, problem=problem, problem_line=line)
    except YAMLError as exc:
        what = " ".join(str(exc).split())[:120]
        return Document(lines, problem=f"not valid {'JSON' if jsonc else 'YAML'} ({what})")
    except RecursionError:
        log.debug("nesting too deep to parse", exc_info=True)
        return Document(lines, problem="nested too deeply to parse")
    return Document(lines, roots=roots)


# ---- reading nodes ---------------------------------------------------------------------


def kind(node: Any) -> str:
    """``mapping``, ``sequence`` or ``scalar`` (ruamel's node id); empty for None."""
    return str(getattr(node, "id", ""))


def pairs(node: Any) -> list[tuple[str, Any]]:
    """A mapping's entries whose keys are plain scalars, in file order."""
    if kind(node) != "mapping":
        return []
    return [(k.value, v) for k, v in node.value if kind(k) == "scalar"]


def get(node: Any, key: str) -> Any:
    """A mapping's value at ``key`` (the last one, as YAML loaders keep), or None."""
    found = None
    for k, v in pairs(node):
        if k == key:
            found = v
    return found


def items(node: Any) -> list[Any]:
    """A sequence's items (an empty list for anything else)."""
    return list(node.value) if kind(node) == "sequence" else []


def clean(text: str) -> str:
    """Text without lone surrogates (a YAML or JSON escape such as ``\\ud800`` makes
    one), which re2 cannot take; each becomes ``?``."""
    return text if text.isascii() else text.encode("utf-8", "replace").decode("utf-8")


def scalar(node: Any) -> str | None:
    """A scalar's text, or None for a mapping, a sequence or nothing."""
    return clean(str(node.value)) if kind(node) == "scalar" else None


def line(node: Any) -> int:
    """The 1-based line where a node's content starts (after a ``|`` or ``>`` indicator)."""
    first = int(node.start_mark.line) + 1
    return first + 1 if getattr(node, "style", None) in ("|", ">") else first


#: Where a node sits: the key or index it is at, the node, and where its parent sits
#: (None at a document's root) — one cell per node, so walking down costs nothing.
Where = tuple[str | int, Any, "Where | None"] | None


def mappings_at(roots: tuple[Any, ...]) -> Iterator[tuple[Any, Where]]:
    """Every mapping node under ``roots``, each once, in file order, with where it sits
    (an alias is the node it names, reached first where it was defined)."""
    seen: set[int] = set()
    stack: list[tuple[Any, Where]] = [(root, None) for root in reversed(roots)]
    while stack:
        node, where = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if kind(node) == "mapping":
            yield node, where
            stack.extend(
                (v, (k.value if kind(k) == "scalar" else "", v, where))
                for k, v in reversed(node.value)
            )
        elif kind(node) == "sequence":
            stack.extend((v, (i, v, where)) for i, v in reversed(list(enumerate(node.value))))


def mappings(roots: tuple[Any, ...]) -> Iterator[Any]:
    """Every mapping node under ``roots``, each once, in file order (aliases are
    the nodes they name, so nothing is visited twice)."""
    for node, _ in mappings_at(roots):
        yield node


def upward(where: Where, limit: int) -> list[tuple[str | int, Any]]:
    """The keys and indexes from a node up towards its root, nearest first, at most
    ``limit`` of them."""
    out: list[tuple[str | int, Any]] = []
    while where is not None and len(out) < limit:
        key, node, where = where
        out.append((key, node))
    return out


def value_lines(node: Any, lines: list[str]) -> list[tuple[int, str, str]]:
    """Each line of a scalar as written, with the file line it is on:
    ``(line number, that line's exact text, the scalar's text on it)``.

    A literal block (``|``) keeps its lines one to one.  Other styles fold lines
    together or quote them, so the scalar's text is cut from each line of its span;
    when those pieces do not spell its value (an escape such as ``\\u007c`` changed
    it), the value is given whole, at its first line, so the screen still judges
    what would run.
    """
    style = getattr(node, "style", None)
    value = clean(str(node.value))
    first, first_col = int(node.start_mark.line), int(node.start_mark.column)
    last, last_col = int(node.end_mark.line), int(node.end_mark.column)
    if style == "|":
        values = value.split("\n")
        if len(values) > 1 and values[-1] == "":
            values.pop()
        return [
            (first + i + 2, lines[first + i + 1] if first + i + 1 < len(lines) else "", v)
            for i, v in enumerate(values)
        ]
    pieces: list[tuple[int, str, str]] = []
    for n in range(first + 1 if style == ">" else first, min(last, len(lines) - 1) + 1):
        lo = first_col if n == first else 0
        hi = last_col if n == last else len(lines[n])
        pieces.append((n + 1, lines[n], lines[n][lo:hi].strip()))
    if style in ('"', "'") and pieces:  # the quotes are the scalar's, not its text
        pieces[0] = (*pieces[0][:2], pieces[0][2][1:])
        pieces[-1] = (*pieces[-1][:2], pieces[-1][2][:-1])
    if " ".join(text for _, _, text in pieces).split() == value.split():
        return pieces
    where = min(first + 1 if style == ">" else first, len(lines) - 1)
    return [(where + 1, lines[where] if where >= 0 else "", value)]
