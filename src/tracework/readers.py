"""Reading JSON, YAML and TOML within bounds: one reader per format family.

Every file tracework reads may be hand-edited, damaged or hostile, and not every way a
parser fails is a parse error:

- **nesting**: the parsers recurse once or more per level, so a 2 KB file of ``[[[…``
  raises ``RecursionError``; data a few hundred levels deep parses, then breaks
  whatever walks it next (pydantic, Jinja, ``json.dumps``);
- **keys**: tomllib spends time and memory quadratic in a dotted key's length (a 20 KB
  key of 10,000 parts takes 4 s and 400 MB; one of 200 KB exhausts memory);
- **numbers**: ``int()`` refuses decimal strings of more than 4,300 digits (the limit
  stops quadratic conversions) with a ``ValueError`` that no parser turns into its own
  error;
- **aliases**: a YAML alias may name a collection it sits in.

Each reader parses with its library, refuses data nested more than :data:`MAX_DEPTH`
levels (before tomllib sees a long dotted key, and after every parse by a walk that does
not recurse), and turns every failure into one :class:`DataError` that says what is
wrong; the caller, which knows the file, names it.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import sys
import tomllib
from collections.abc import Iterator, Set
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ruamel.yaml.error import YAMLError

#: The deepest nesting of lists and mappings any file may have (each part of a TOML
#: dotted key is a table).  Registers, rubrics, histories and records use under ten;
#: a hundred leaves room and keeps every later walk far from Python's recursion limit.
MAX_DEPTH = 100

TOO_DEEP = f"nested too deeply (more than {MAX_DEPTH} levels)"

#: A parsed TOML table or JSON object: whatever the file holds, each key checked where
#: it is read (a subject's ``uv.lock`` or ``pyproject.toml``, a hand-editable file).
Table = dict[str, Any]


class DataError(ValueError):
    """Input a reader refuses, in words that say what is wrong but not which file (the
    caller names it).  A ``ValueError``, as ``json``'s own errors are, so that a caller
    that already catches those catches these too."""


def load_json(raw: bytes | str) -> Any:
    """JSON text (bytes must be UTF-8) to data nested at most :data:`MAX_DEPTH` levels."""
    try:
        data = json.loads(raw)
    except RecursionError:
        raise DataError(TOO_DEEP) from None
    except ValueError as exc:  # malformed, not UTF-8, or a number int() refuses
        raise DataError(f"not valid JSON ({_number_problem(exc)})") from None
    check_depth(data)
    return data


def load_yaml(text: str, *, round_trip: bool = False) -> Any:
    """YAML text to data nested at most :data:`MAX_DEPTH` levels, with ruamel's safe
    loader, or its round-trip loader where an edit must keep the comments.

    Both scan with ruamel's Python scanner, bounded by :func:`_bounded_scanner` (given a
    scanner, ruamel parses in Python even where its C extension is installed).
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError
    from ruamel.yaml.scanner import Scanner

    yaml = YAML() if round_trip else YAML(typ="safe", pure=True)
    yaml.Scanner = _bounded_scanner(yaml.Scanner or Scanner)  # safe's default is Scanner
    try:
        data = yaml.load(text)
    except RecursionError:
        raise DataError(TOO_DEEP) from None
    except DataError:
        raise
    except YAMLError as exc:
        raise DataError(f"not valid YAML ({_yaml_problem(exc)})") from None
    except ValueError as exc:  # the constructor's int() or date(): 2026-13-45
        raise DataError(f"not valid YAML ({_number_problem(exc)})") from None
    check_depth(data)
    return data


@functools.cache
def _bounded_scanner(scanner: type) -> type:
    """ruamel's ``scanner`` class, refusing a flow collection (``[`` or ``{``) opened
    inside :data:`MAX_DEPTH` others.

    For every token it reads, the scanner looks at each flow collection still open, so
    20,000 ``[`` (40 KB) cost it 20 s before the parser gave up; bounded, a token costs
    at most :data:`MAX_DEPTH` looks.
    """

    class Bounded(scanner):  # type: ignore[misc]  # ruamel has no type hints
        def fetch_flow_collection_start(self, token_class: type, to_push: str) -> None:
            if self.flow_level >= MAX_DEPTH:
                raise DataError(TOO_DEEP)
            super().fetch_flow_collection_start(token_class, to_push)

    return Bounded


def load_toml(text: str) -> Table:
    """TOML text to data nested at most :data:`MAX_DEPTH` levels; a dotted key too long
    is refused before tomllib spends quadratic time on it."""
    _check_toml_nesting(text)
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise DataError(TOO_DEEP) from None
    except ValueError as exc:  # TOMLDecodeError is one, and so is int()'s refusal
        raise DataError(f"not valid TOML ({_number_problem(exc)})") from None
    check_depth(data)
    return data


def _number_problem(exc: ValueError) -> str:
    """The parser's words, or for an integer ``int()`` refuses, what it is without the
    advice to raise the limit (which is meant for programmers, not for a file's author)."""
    if "integer string conversion" in str(exc):
        return f"an integer of more than {sys.get_int_max_str_digits()} digits"
    return " ".join(str(exc).split())[:300]


def _yaml_problem(exc: YAMLError) -> str:
    """The parser's problem and its line, without its notes for programmers.

    A duplicate key's note tells how to switch the check off, which is the wrong
    advice for a file tracework reads, and the full text names ``<unicode string>``,
    not the file.
    """
    from ruamel.yaml.error import MarkedYAMLError

    if isinstance(exc, MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return f"{' '.join(exc.problem.split())[:300]}{where}"
    return " ".join(str(exc).split())[:300]


_NESTED = (dict, list, tuple, Set)  # Set: YAML's !!set (ruamel's CommentedSet is no set)
_LEAVES = (str, int, float, type(None))  # most members: told apart without the ABC check


def check_depth(data: Any) -> None:
    """Refuse data nested more than :data:`MAX_DEPTH` levels, or a collection inside
    itself (a YAML alias used within what it names).

    The walk keeps its own stack rather than recursing, and measures each collection
    once: YAML aliases let one collection appear in many places, and a walk of every
    place could take time exponential in the file's size.
    """
    if not isinstance(data, _NESTED):
        return
    levels: dict[int, int] = {}  # a measured collection's id -> its levels, itself included
    stack: list[tuple[Any, Iterator[Any]]] = [(data, _children(data))]
    deepest = [0]  # per open collection: the most levels below it found so far
    open_ids = {id(data)}
    while stack:
        node, children = stack[-1]
        for child in children:
            if isinstance(child, _LEAVES) or not isinstance(child, _NESTED):
                continue
            known = levels.get(id(child))
            if known is not None:
                if len(stack) + known > MAX_DEPTH:
                    raise DataError(TOO_DEEP)
                deepest[-1] = max(deepest[-1], known)
                continue
            if id(child) in open_ids:
                raise DataError("a collection holds itself (an alias used inside what it names)")
            if len(stack) >= MAX_DEPTH:
                raise DataError(TOO_DEEP)
            stack.append((child, _children(child)))
            deepest.append(0)
            open_ids.add(id(child))
            break
        else:
            stack.pop()
            open_ids.discard(id(node))
            levels[id(node)] = height = deepest.pop() + 1
            if deepest:
                deepest[-1] = max(deepest[-1], height)


def _children(node: Any) -> Iterator[Any]:
    """A collection's members; a mapping's keys too (YAML allows a sequence as a key)."""
    if isinstance(node, dict):
        return itertools.chain(node, node.values())
    return iter(node)


# What the nesting check of TOML text tells apart: strings (each kind), comments, runs of
# blanks, a bare key part (or any other bare value), and any other single character.
_TOML_TOKENS = re.compile(
    r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"""(?:""|")?'
    r"|'''(?:[^']|'(?!''))*'''(?:''|')?"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'[^'\n]*'"
    r"|#[^\n]*"
    r"|[ \t]+"
    r"|[^\s\[\]{}.\"'#=,]+"
    r"|[\s\S]"
)


def _check_toml_nesting(text: str) -> None:
    """Refuse TOML whose brackets nest, or whose dotted keys run, deeper than
    :data:`MAX_DEPTH`, from its tokens alone (linear; brackets and dots inside strings
    and comments do not count).  A run of dots between bare or quoted parts is a key
    (in a value a dot only ever makes a float or a time's fraction)."""
    depth = dots = 0
    for token in _TOML_TOKENS.findall(text):
        first = token[0]
        if first in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise DataError(TOO_DEEP)
        elif first in "]}":
            depth -= 1
        elif token == ".":
            dots += 1
            if dots >= MAX_DEPTH:
                raise DataError(TOO_DEEP)
            continue
        if first in "[]{}=,#\r\n" or token[:3] in ('"""', "'''"):
            dots = 0  # the key (if it was one) has ended
