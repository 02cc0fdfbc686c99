"""The package's untyped dictionaries: how many ``dict[str, Any]`` remain, each with its
reason, and the typed dictionaries that replaced the others still name what they type.

A ``dict[str, Any]`` is right where the data really is untyped (a subject's TOML, a
JSON object read from disk and checked key by key where it is read); a known shape is a
``TypedDict``, a dataclass or a model.  The ceiling only goes down: lower it when one
goes, and give each that stays a ``#`` comment saying why, on its line or the line
above.
"""

from __future__ import annotations

import dataclasses
import io
import re
import tokenize
from pathlib import Path
from typing import get_type_hints

from tracework.screen import CooldownJson, FindingJson, LockWindowJson, RecentJson, ScreenJson
from tracework.screen.cooldown import Cooldown, LockWindow, Recent
from tracework.screen.model import Finding

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "tracework"

#: What is counted: the spelling the issue counts, and typing's older one.
UNTYPED = re.compile(r"\b[Dd]ict\[str, Any\]")

#: The most lines with a ``dict[str, Any]`` the package may hold (the aim was twelve).
CEILING = 5

#: Modules whose dictionaries are still to be typed: counted against the ceiling, not
#: yet held to a reason.  Each entry goes once its module is typed.
PENDING: tuple[str, ...] = ()


def _occurrences() -> list[tuple[str, int, str, bool]]:
    """Each line of the package that holds a ``dict[str, Any]`` (lines, as ``grep -n``
    counts them): (path, line number, line, whether it has its reason)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        explained = _explained(source)
        name = path.relative_to(PACKAGE).as_posix()
        for number, line in enumerate(source.splitlines(), start=1):
            if UNTYPED.search(line):
                found.append((name, number, line, number in explained))
    return found


def _explained(source: str) -> set[int]:
    """The lines that have a reason: a ``#`` comment on the line, or a line of comment
    just above it (tokenized, so a ``#`` inside a string is no comment)."""
    lines = source.splitlines()
    said = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row = token.start[0]
            said.add(row)
            if not lines[row - 1][: token.start[1]].strip():  # a line of comment only
                said.add(row + 1)
    return said


def test_untyped_dictionaries_stay_under_the_ceiling():
    found = _occurrences()
    listed = "\n".join(f"  {path}:{number}: {line.strip()}" for path, number, line, _ in found)
    assert len(found) <= CEILING, (
        f"{len(found)} dict[str, Any] in src/tracework, more than the ceiling of {CEILING}: "
        f"type the new one (a TypedDict, a dataclass, a model) or, if its data really is "
        f"untyped, use an alias that says why (tracework.readers.Table)\n{listed}"
    )


def test_each_untyped_dictionary_says_why():
    unexplained = [
        f"  {path}:{number}: {line.strip()}"
        for path, number, line, explained in _occurrences()
        if not path.startswith(PENDING) and not explained
    ]
    assert not unexplained, (
        "a dict[str, Any] without a reason (a # comment on its line or the line above):\n"
        + "\n".join(unexplained)
    )


def test_the_reason_check_sees_a_reason_and_its_absence():
    source = (
        "a: dict[str, Any] = {}  # parsed TOML\n"
        "#: A parsed TOML table\n"
        "Table = dict[str, Any]\n"
        "b: dict[str, Any] = {}\n"
        'c: dict[str, Any] = {"#": 1}\n'
        "d = 1  # a comment after code explains its own line only\n"
        "e: dict[str, Any] = {}\n"
    )
    assert {1, 3} <= _explained(source)
    assert not {4, 5, 7} & _explained(source)


def test_the_screens_json_types_name_its_dataclasses_fields_in_order():
    """``screen --json`` writes each finding, lock and package field by field: the
    typed dictionaries must name every field of the dataclass, in its order (the
    output's key order), so a field added to one is added to the other."""
    for typed, shape in (
        (FindingJson, Finding),
        (RecentJson, Recent),
        (LockWindowJson, LockWindow),
    ):
        fields = [f.name for f in dataclasses.fields(shape)]
        assert list(get_type_hints(typed)) == fields, typed.__name__
    cooldown = [f.name for f in dataclasses.fields(Cooldown)]
    assert list(get_type_hints(CooldownJson)) == [*cooldown[:3], "inside", "verdict", "locks"]
    assert list(get_type_hints(ScreenJson)) == ["commit", "files", "counts", "items", "cooldown"]
