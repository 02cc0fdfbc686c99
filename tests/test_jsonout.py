"""``--json`` text: orjson's encoder must give exactly the standard library's ASCII text."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tracework.jsonout import dumps

# Every code point, lone surrogates (file names that are not UTF-8) and astral ones included.
TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=12)
SCALARS = st.none() | st.booleans() | st.integers() | TEXT
DATA = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)


def stdlib(data: Any, indent: bool) -> str:
    if indent:
        return json.dumps(data, ensure_ascii=True, indent=2)
    return json.dumps(data, ensure_ascii=True, separators=(",", ":"))


@settings(max_examples=400, deadline=None)
@given(DATA, st.booleans())
@example({"path": "caf\u00e9/\u202eevil\U0001f600.py", "bell": "\x07\x1b[31m\x7f"}, False)
@example({"name": "\udcff\udc80"}, True)  # lone surrogates: orjson refuses, stdlib escapes
@example({1: [10**40, -(2**63)]}, False)  # int keys and big ints: orjson refuses
@example([[], {}, [[]], {"a": {}}], True)
def test_same_text_as_the_standard_library(data: Any, indent: bool) -> None:
    text = dumps(data, indent=indent)
    assert text == stdlib(data, indent)
    assert text.isascii()
    assert json.loads(text) == json.loads(stdlib(data, indent))


def test_named_tuples_are_arrays_as_with_the_standard_library() -> None:
    from tracework.checks import CheckItem

    item = CheckItem("quote", "Q-1", "SRC-1", "a.py", "verified", (1, 2))
    assert dumps({"items": [item]}) == stdlib({"items": [item]}, False)


def test_cli_json_is_compact_ascii_on_a_pipe(tmp_path: Any) -> None:
    """The command prints one compact ASCII line to a pipe (a person's TTY gets indents)."""
    proc = subprocess.run(
        [sys.executable, "-m", "tracework", "init", str(tmp_path / "ws")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "tracework", "publish", "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path / "ws",
    )
    assert proc.stdout.count("\n") == 1 and proc.stdout.isascii(), proc.stdout
    assert proc.stdout == stdlib(json.loads(proc.stdout), False) + "\n"
