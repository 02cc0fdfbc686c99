"""``--json`` text: orjson's encoder must give exactly the standard library's ASCII text."""

from __future__ import annotations

import dataclasses
import datetime
import json
import subprocess
import sys
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tracework.jsonout as jsonout
from tracework.jsonout import dumps, write_json

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


@pytest.mark.slow
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


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.dictionaries(TEXT, st.lists(DATA, max_size=9) | DATA, max_size=5), st.booleans())
@example({"items": [], "after": 1}, False)
@example({}, False)
@example({"items": ["\udcff", "\u202e", {"a": None}]}, False)  # a chunk the stdlib encodes
def test_written_with_iterators_is_dumps_of_the_lists(data: dict[str, Any], indent: bool) -> None:
    """``write_json`` draws each list given as an iterator a chunk at a time, and its
    bytes are exactly ``dumps`` of the whole object and a newline."""
    import io

    streamed = {k: iter(v) if isinstance(v, list) else v for k, v in data.items()}
    out = io.BytesIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonout, "CHUNK", 2)  # several chunks from a short list
        write_json(out, streamed, indent=indent)
    assert out.getvalue() == (dumps(data, indent=indent) + "\n").encode()


def test_subclasses_and_named_tuples_are_encoded_as_the_standard_library_does() -> None:
    from tracework.drift.check import CheckItem

    item = CheckItem("quote", "Q-1", "SRC-1", "a.py", "verified", (1, 2))
    reordered = OrderedDict(a=1, b=2)
    reordered.move_to_end("a")  # iterates b, a; orjson would write a, b
    for data in ({"items": [item]}, reordered):
        assert dumps(data) == stdlib(data, False)


def test_what_the_standard_library_refuses_stays_refused() -> None:
    @dataclasses.dataclass
    class Point:
        x: int

    for data in (Point(1), datetime.date(2026, 1, 1)):
        with pytest.raises(TypeError):
            dumps({"value": data})


@pytest.mark.slow
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
