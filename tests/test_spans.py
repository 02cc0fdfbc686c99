"""Finding spans: by line range, by Python symbol (ast), by a substring on one line.

Line numbers must always be git's (split on ``\\n`` only), whatever Python's own
tokenizer thinks a line is.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tracework.errors import SpanError
from tracework.hashing import Lines
from tracework.register.spans import (
    NotPython,
    Span,
    by_lines,
    by_match,
    by_symbol,
    find_match_lines,
    find_symbol,
)

MODULE = """\
import functools

LIMIT: int = 10
RETRIES = 3
TABLE = {
    "a": 1,
    "b": 2,
}


def plain(x):
    return x


@functools.cache
@staticmethod
def decorated(y):
    return y


class Ledger:
    \"\"\"Keeps entries.\"\"\"

    rate = 0.5

    def __init__(self):
        self.rows = []

    async def flush(self):
        await self.drain()

    @property
    def size(self):
        return len(self.rows)

    class Page:
        def turn(self):
            return 1


async def pump():
    def helper():
        return 2

    return helper()


if FAST:
    def speed():
        return 1
else:
    def speed():
        return 0

try:
    import quickjson as codec
except ImportError:
    codec = None
"""


def line_of(text: str, needle: str) -> int:
    """1-based number of the first line containing ``needle`` (a test helper)."""
    for n, row in enumerate(text.split("\n"), start=1):
        if needle in row:
            return n
    raise AssertionError(needle)


@pytest.fixture
def module() -> Lines:
    return Lines(MODULE.encode())


def text_of(lines: Lines, span: Span) -> str:
    return lines.span(span.first, span.last).decode()


# -- by_symbol ------------------------------------------------------------------------------


def test_function(module):
    span = by_symbol(module, "plain", "m.py")
    assert span == Span(line_of(MODULE, "def plain"), line_of(MODULE, "return x"))
    assert text_of(module, span) == "def plain(x):\n    return x\n"


def test_decorated_function_starts_at_its_first_decorator(module):
    span = by_symbol(module, "decorated", "m.py")
    assert span.first == line_of(MODULE, "@functools.cache")
    assert text_of(module, span).startswith("@functools.cache\n@staticmethod\ndef decorated")
    assert text_of(module, span).endswith("    return y\n")


def test_class_covers_its_whole_body(module):
    span = by_symbol(module, "Ledger", "m.py")
    assert span.first == line_of(MODULE, "class Ledger")
    assert span.last == line_of(MODULE, "return 1")  # Page.turn ends the class


def test_method_by_qualified_name(module):
    span = by_symbol(module, "Ledger.__init__", "m.py")
    assert text_of(module, span) == "    def __init__(self):\n        self.rows = []\n"


def test_async_method(module):
    span = by_symbol(module, "Ledger.flush", "m.py")
    assert text_of(module, span) == "    async def flush(self):\n        await self.drain()\n"


def test_decorated_method_starts_at_decorator(module):
    span = by_symbol(module, "Ledger.size", "m.py")
    assert span.first == line_of(MODULE, "@property")
    assert text_of(module, span).endswith("return len(self.rows)\n")


def test_nested_class_method(module):
    span = by_symbol(module, "Ledger.Page.turn", "m.py")
    assert text_of(module, span) == "        def turn(self):\n            return 1\n"


def test_async_function_and_a_function_nested_in_it(module):
    outer = by_symbol(module, "pump", "m.py")
    inner = by_symbol(module, "pump.helper", "m.py")
    assert outer.first == line_of(MODULE, "async def pump")
    assert outer.first < inner.first <= inner.last < outer.last
    assert text_of(module, inner) == "    def helper():\n        return 2\n"


def test_module_level_assignment_and_annotated_assignment(module):
    assert by_symbol(module, "RETRIES", "m.py") == Span(4, 4)
    assert by_symbol(module, "LIMIT", "m.py") == Span(3, 3)
    table = by_symbol(module, "TABLE", "m.py")
    assert table == Span(5, 8)
    assert text_of(module, table).endswith("}\n")


def test_each_name_an_unpacking_assignment_binds():
    source = b"WIDTH, HEIGHT = 80, 24\n(first, *rest), [last] = ([1, 2], [3])\nobj.attr = 5\n"
    lines = Lines(source)
    for name in ("WIDTH", "HEIGHT"):
        assert by_symbol(lines, name, "m.py") == Span(1, 1)
    for name in ("first", "rest", "last"):
        assert by_symbol(lines, name, "m.py") == Span(2, 2)
    with pytest.raises(SpanError, match="no function, class or assignment named attr"):
        by_symbol(lines, "attr", "m.py")  # an attribute is not a name of the module


def test_class_level_assignment(module):
    span = by_symbol(module, "Ledger.rate", "m.py")
    assert text_of(module, span) == "    rate = 0.5\n"


def test_assignment_inside_try_is_found(module):
    span = by_symbol(module, "codec", "m.py")
    assert text_of(module, span) == "    codec = None\n"


def test_conditional_definitions_are_ambiguous_and_the_error_lists_their_lines(module):
    first = line_of(MODULE, "if FAST")
    with pytest.raises(SpanError) as err:
        by_symbol(module, "speed", "m.py")
    message = str(err.value)
    assert "m.py" in message and "speed" in message and "2 times" in message
    assert f"{first + 1}-{first + 2}" in message
    assert f"{first + 4}-{first + 5}" in message
    assert "--lines" in message  # says what to do


@pytest.mark.parametrize("name", ["missing", "Ledger.missing", "plain.x", "Ledger.rows", "Page"])
def test_symbol_not_found(module, name):
    with pytest.raises(SpanError) as err:
        by_symbol(module, name, "m.py")
    assert f"m.py: no function, class or assignment named {name}" in str(err.value)


def test_intermediate_parts_must_be_scopes_not_assignments(module):
    # RETRIES is an assignment, so RETRIES.anything names nothing
    assert find_symbol(module, "RETRIES.real", "m.py") == []


def test_symbol_in_a_file_that_is_not_python_is_a_clear_error():
    lines = Lines(b"# A heading\n\nSome *markdown* (not python\n")
    with pytest.raises(SpanError) as err:
        by_symbol(lines, "heading", "README.md")
    assert "README.md: not valid Python (line 3: '(' was never closed)" in str(err.value)
    with pytest.raises(NotPython):  # a symbol that could not be looked for is not absent
        find_symbol(lines, "heading", "README.md")


def test_symbol_line_numbers_are_git_lines_in_crlf_files():
    lines = Lines(b"import os\r\n\r\ndef go():\r\n    return os\r\n")
    span = by_symbol(lines, "go", "w.py")
    assert span == Span(3, 4)
    assert lines.span(3, 4) == b"def go():\r\n    return os\r\n"


def test_symbol_line_numbers_ignore_form_feeds_and_unicode_separators():
    source = "x = 1\n\x0c\ns = 'a\u2028b'\n# c\u2029d \x0b\ndef go():\n    return s\n"
    lines = Lines(source.encode())
    assert by_symbol(lines, "go", "u.py") == Span(5, 6)


def test_a_lone_cr_before_a_def_keeps_gits_line_numbers():
    # Python's tokenizer ends a line at the lone CR; git does not.
    data = b"# note\rcontinued\nX = 1\ndef target():\n    return X\n"
    lines = Lines(data)
    assert by_symbol(lines, "target", "cr.py") == Span(3, 4)
    assert by_symbol(lines, "X", "cr.py") == Span(2, 2)


def test_lone_cr_line_endings_throughout_map_back_to_the_one_git_line():
    # a file with old Mac line endings is one git line; Python still runs it
    data = b"x = 1\rdef target():\r    return x\r"
    assert by_symbol(Lines(data), "target", "mac.py") == Span(1, 1)


def test_lone_cr_inside_a_string_still_finds_the_symbol_at_gits_lines():
    data = b"LABEL = 'left\rright'\n\ndef target():\n    return LABEL\n"
    assert by_symbol(Lines(data), "target", "s.py") == Span(3, 4)


def test_a_utf8_bom_does_not_hide_definitions():
    data = b"\xef\xbb\xbfimport os\n\ndef target():\n    return os\n"
    assert by_symbol(Lines(data), "target", "bom.py") == Span(3, 4)


def test_latin1_bytes_in_a_comment_do_not_hide_definitions():
    data = b"# caf\xe9\ndef target():\n    return 1\n"
    assert by_symbol(Lines(data), "target", "l1.py") == Span(2, 3)


def test_definitions_in_except_star_blocks_are_found():
    data = b"try:\n    pass\nexcept* ValueError:\n    def fallback():\n        return 0\n"
    assert by_symbol(Lines(data), "fallback", "t.py") == Span(4, 5)


def test_cli_symbol_with_a_lone_cr_gives_gits_lines(pinned, tw):
    data = b"# header\rwith a lone CR\nLIMIT = 3\n\ndef guard(n):\n    return n < LIMIT\n"
    repo = pinned({"pkg/guard.py": data})
    result = tw("quote", "demo", "SRC-1", "pkg/guard.py", "--symbol", "guard")
    assert result.exit_code == 0, result.output
    assert "pkg/guard.py:4-5" in result.stdout
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"})
    sed = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"git show {repo.commits[0]}:pkg/guard.py | sed -n 4,5p"],
        cwd=repo.path,
        env=env,
        capture_output=True,
        check=True,
    ).stdout
    doc = YAML(typ="safe").load(Path("registers/demo.yaml").read_text(encoding="utf-8"))
    quote = doc["quotes"]["Q-guard-guard"]
    assert quote["lines"] == [4, 5]
    assert quote["text"].encode() == sed == b"def guard(n):\n    return n < LIMIT\n"
    assert quote["anchor"] == {"symbol": "guard"}
    check = tw("check", "demo", "--json")
    assert check.exit_code == 0, check.output
    assert {i["state"] for i in json.loads(check.stdout)["items"]} == {"verified"}


# -- by_match -------------------------------------------------------------------------------

TEXT = "first line\nsecond: needle here\nthird\nfourth has twin\nfifth has twin\nlast\n"


@pytest.fixture
def text() -> Lines:
    return Lines(TEXT.encode())


def test_match_on_one_line(text):
    assert by_match(text, "needle", 0, "t.txt") == Span(2, 2)


def test_match_counts_a_line_once_even_with_two_hits_on_it():
    lines = Lines(b"a\nring ring ring\nb\n")
    assert by_match(lines, "ring", 0, "r.txt") == Span(2, 2)
    assert find_match_lines(lines, "ring") == [2]


def test_match_on_several_lines_lists_their_numbers(text):
    with pytest.raises(SpanError) as err:
        by_match(text, "twin", 0, "t.txt")
    message = str(err.value)
    assert "t.txt" in message and "'twin'" in message
    assert "occurs on 2 lines (4, 5)" in message
    assert "--lines" in message


def test_match_on_many_lines_lists_the_first_twenty():
    lines = Lines(b"".join(b"row %d\n" % n for n in range(1, 31)))
    with pytest.raises(SpanError) as err:
        by_match(lines, "row", 0, "many.txt")
    message = str(err.value)
    assert "occurs on 30 lines (1, 2, 3" in message
    assert "20 …" in message and "21" not in message


def test_match_absent(text):
    with pytest.raises(SpanError) as err:
        by_match(text, "haystack", 0, "t.txt")
    assert "t.txt: no line contains 'haystack'" in str(err.value)


@pytest.mark.parametrize("needle", ["", "two\nlines"])
def test_match_must_be_text_within_one_line(text, needle):
    with pytest.raises(SpanError, match="within one line"):
        by_match(text, needle, 0, "t.txt")


def test_match_with_context(text):
    assert by_match(text, "third", 1, "t.txt") == Span(2, 4)
    assert by_match(text, "third", 2, "t.txt") == Span(1, 5)


def test_match_context_is_clipped_at_the_file_edges(text):
    assert by_match(text, "first", 3, "t.txt") == Span(1, 4)
    assert by_match(text, "last", 4, "t.txt") == Span(2, 6)
    assert by_match(text, "needle", 50, "t.txt") == Span(1, 6)


def test_match_does_not_cross_lines():
    # "end\nstart" spans two lines; neither line contains "d s"
    lines = Lines(b"the end\nstart again\n")
    with pytest.raises(SpanError):
        by_match(lines, "d\ns", 0, "x.txt")
    assert find_match_lines(lines, "end") == [1]


def test_match_line_numbers_are_gits_in_a_file_with_other_separators():
    data = "a\x0cb\nc\u2028d\ne\rf\nthe target\n".encode()
    assert by_match(Lines(data), "target", 0, "s.txt") == Span(4, 4)


def test_match_finds_non_ascii_text():
    lines = Lines("alpha\nbeta ☃ snow\ngamma\n".encode())
    assert by_match(lines, "☃", 0, "u.txt") == Span(2, 2)


# -- by_lines -------------------------------------------------------------------------------


def test_lines_in_range(text):
    assert by_lines(text, 2, 4, "t.txt") == Span(2, 4)
    assert by_lines(text, 6, 6, "t.txt") == Span(6, 6)


@pytest.mark.parametrize(("first", "last"), [(0, 2), (3, 2), (-1, 1)])
def test_lines_that_are_not_a_range(text, first, last):
    with pytest.raises(SpanError, match="not a range"):
        by_lines(text, first, last, "t.txt")


@pytest.mark.parametrize(("first", "last"), [(6, 7), (7, 7), (1, 100)])
def test_lines_out_of_range_name_the_file_length(text, first, last):
    with pytest.raises(SpanError) as err:
        by_lines(text, first, last, "t.txt")
    assert f"t.txt: lines {first}-{last} are out of range; the file has 6 lines" in str(err.value)


def test_lines_of_an_empty_file_are_out_of_range():
    with pytest.raises(SpanError, match="the file has 0 lines"):
        by_lines(Lines(b""), 1, 1, "empty.txt")


def test_cli_lines_out_of_range_leaves_the_register_unchanged(pinned, tw):
    pinned({"a.txt": "one\ntwo\n"})
    before = Path("registers/demo.yaml").read_bytes()
    result = tw("quote", "demo", "SRC-1", "a.txt", "--lines", "2-3")
    assert result.exit_code == 2
    assert "a.txt: lines 2-3 are out of range; the file has 2 lines" in result.stderr
    assert "Traceback" not in result.output
    assert Path("registers/demo.yaml").read_bytes() == before


def test_cli_match_ambiguous_and_absent_exit_2(pinned, tw):
    pinned({"a.txt": "keep\nskip\nkeep going\n"})
    before = Path("registers/demo.yaml").read_bytes()
    several = tw("quote", "demo", "SRC-1", "a.txt", "--match", "keep")
    assert several.exit_code == 2
    assert "occurs on 2 lines (1, 3)" in several.stderr
    absent = tw("quote", "demo", "SRC-1", "a.txt", "--match", "nowhere")
    assert absent.exit_code == 2
    assert "no line contains 'nowhere'" in absent.stderr
    missing = tw("quote", "demo", "SRC-1", "a.txt", "--symbol", "keep")
    assert missing.exit_code == 2
    assert "a.txt: not valid Python" in missing.stderr
    assert Path("registers/demo.yaml").read_bytes() == before


def test_cli_match_with_context_stores_the_anchor(pinned, tw):
    pinned({"cfg.py": "A = 1\nB = 2\nSECRET_KEY = 'x'\nC = 3\n"})
    result = tw("quote", "demo", "SRC-1", "cfg.py", "--match", "SECRET_KEY", "--context", "5")
    assert result.exit_code == 0, result.output
    doc = YAML(typ="safe").load(Path("registers/demo.yaml").read_text(encoding="utf-8"))
    (quote,) = doc["quotes"].values()
    assert quote["lines"] == [1, 4]
    assert quote["anchor"] == {"match": "SECRET_KEY", "context": 5}
