"""Format only: the one rule (``tracework.drift.content``) and every output that derives from it.

The rule's examples are the README's; the property test builds real histories of
formatting and content edits and asserts that the drift check, the first-change
search and the page never contradict each other.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from typing import NamedTuple

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tracework.drift.content import (
    _BETWEEN,
    _NUMBER,
    _OPAQUE,
    _WORD,
    Content,
    _opaque,
    _written_runs,
    holds_in,
)

QUOTE = '''def build_prompt(user, notes):
    """Assemble the system prompt.

    Notes come first."""
    # newest notes first
    header = render(user.name, notes, limit=5)
    return f"{header}\\n" + TEMPLATE.format(user=user)
'''


def same_content(old: str, new: str, path: str = "prompts.py") -> bool:
    """Whether the whole of ``old`` still occurs in ``new`` (format only, when the
    bytes differ)."""
    before = Content(old, path)
    return holds_in(before, 1, len(old.splitlines()), Content(new, path))


def test_a_reindented_block_is_format_only():
    nested = "class Prompts:\n" + "".join(
        "    " + ln if ln.strip() else ln for ln in QUOTE.splitlines(True)
    )
    assert same_content(QUOTE, nested)


def test_a_rewrapped_call_is_format_only_trailing_comma_and_all():
    wrapped = QUOTE.replace(
        "render(user.name, notes, limit=5)",
        "render(\n        user.name,\n        notes,\n        limit=5,\n    )",
    )
    assert same_content(QUOTE, wrapped)
    assert same_content(QUOTE, QUOTE.replace('f"{header}\\n"', "f'{header}\\n'"))  # quotes


def test_docstring_trailing_spaces_and_indentation_are_format_only():
    spaced = QUOTE.replace("system prompt.\n", "system prompt.   \n")
    assert spaced != QUOTE and same_content(QUOTE, spaced)
    assert same_content(QUOTE, QUOTE.replace("    Notes come first.", "        Notes come first."))
    assert not same_content(QUOTE, QUOTE.replace("Notes come first", "Notes come last"))


def test_a_space_inside_a_prompt_string_is_content():
    template = 'TEMPLATE = "You are  {user}.\\n"\n'
    assert not same_content(template, template.replace("are  {", "are {"))
    assert same_content(template, template.replace('"', "'"))  # the same value


def test_a_comment_edit_is_content():
    assert not same_content(QUOTE, QUOTE.replace("newest notes first", "newest first"))
    assert same_content(QUOTE, QUOTE.replace("# newest notes first", "# newest notes first  "))


def test_the_comma_that_makes_a_tuple_is_content():
    assert not same_content("x = (a,)\n", "x = (a)\n")
    assert not same_content("x = table[a,]\n", "x = table[a]\n")
    assert same_content("x = [a,]\n", "x = [a]\n")
    assert same_content("f(a,)\n", "f(a)\n")
    assert same_content("x = (a, b,)\n", "x = (a, b)\n")


def test_statements_are_kept_apart():
    assert same_content("a = 1\nb = 2\n", "a = 1; b = 2\n")  # a separator either way
    assert not same_content("x = f(a)\n(b)\n", "x = f(a)(b)\n")


def test_a_span_reads_in_its_file_context():
    """Lines in the middle of a call are not statements; a string there is no docstring."""
    old = Content('prompt = make(\n    "You help.  ",\n    tone="calm",\n)\n', "p.py")
    new = Content('prompt = make("You help.  ", tone="calm")\n', "p.py")
    assert holds_in(old, 2, 3, new)
    stripped = Content('prompt = make("You help.", tone="calm")\n', "p.py")
    assert not holds_in(old, 2, 3, stripped)  # a literal in a call is compared exactly


def test_other_text_compares_words():
    assert same_content("The store\nkeeps notes.\n", "The store keeps\n  notes.\n", "NOTES.md")
    assert not same_content("The store keeps notes.\n", "The store drops notes.\n", "NOTES.md")


def test_python_that_does_not_parse_is_still_read():
    broken = "def f(:\n    return  1\n"
    assert same_content(broken, broken.replace("  1", " 1"))


def test_the_smallest_span_holding_the_content():
    new = Content("import os\n\n\n" + QUOTE.replace("limit=5)", "limit=5,\n    )") + "\n", "p.py")
    before = Content(QUOTE, "p.py")
    assert new.find(before.span(1, 7)) == [(4, 11)]


def test_content_that_is_gone_is_known_without_reading_statements():
    """A quote whose code changed (the usual drift) is ruled out by string searches:
    neither the file's strings are blanked nor its statements found for it."""
    new = Content(QUOTE.replace("limit=5", "limit=6"), "p.py")
    old = Content(QUOTE, "p.py")
    assert not new.holds(old.span(1, 7))
    assert not new.holds(old.span(6, 6))  # the edited line alone
    assert "_code" not in vars(new) and "statements" not in vars(new)
    assert new.holds(old.span(7, 7))  # the line after it holds


# -- a span that cuts a string: its part inside, compared as the string is ----------------

MEMORY = '''class Memory:
    def search(self, query, k=5):
        """Find the notes closest to the query.

        Returns at most k notes, nearest first.
        """
        hits = self.index.query(query, top_k=k, include_metadata=True)
        return [h.note for h in hits]


SYSTEM = """You are a careful assistant.
  Answer in  two sentences.
Cite the notes you used.
"""
'''
#: a formatter's work: the call one argument per line, the class's body re-indented
#: (its docstring too), trailing spaces on the docstring's lines
FORMATTED = (
    MEMORY.replace(
        "self.index.query(query, top_k=k, include_metadata=True)",
        "self.index.query(\n    query,\n    top_k=k,\n    include_metadata=True,\n)",
    )
    .replace("\n    ", "\n      ")
    .replace("to the query.\n", "to the query.   \n")
)
#: spans whose content once was not found even in their own file
ODD = [
    MEMORY,
    "a = b * .5 + c\n",  # a number that starts with a point
    "x = 1\n# only a comment\n",  # no name, no number
    'def f():\n    """Only a docstring."""\n',
    "x = a or'b'\ny = 1if a else 2\n",  # a literal or a name right after a keyword
    "x = 1 \\\n; y = 2\n",  # a statement that ends on the next line
]


@pytest.mark.parametrize("text", ODD, ids=range(len(ODD)))
def test_every_span_holds_in_its_own_file(text):
    content = Content(text, "m.py")
    count = len(text.splitlines())
    for first in range(1, count + 1):
        for last in range(first, count + 1):
            assert holds_in(content, first, last, content), (first, last)


def test_a_span_from_a_docstrings_closing_quotes_holds_after_formatting():
    """The quote of the A-mem report: ``\"\"\"`` closing a docstring, then a call a
    formatter re-wraps; what the span holds of the docstring is its closing quotes."""
    old, new = Content(MEMORY, "m.py"), Content(FORMATTED, "m.py")
    assert old.span(6, 8)[0] == "…tail:1:''"
    assert holds_in(old, 6, 8, new)
    assert new.find(old.span(6, 8)) == [(6, 12)]
    # what lies before the span is not its content: the docstring's first line
    assert holds_in(old, 6, 8, Content(FORMATTED.replace("Find the", "Find all the"), "m.py"))
    assert not holds_in(old, 6, 8, Content(FORMATTED.replace("top_k", "k"), "m.py"))


def test_a_line_of_spaces_in_a_docstring_is_an_empty_line():
    doc = 'def f():\n    """Doc.\n\n    """\n'
    assert same_content(doc, doc.replace("Doc.\n\n", "Doc.\n    \n"))


def test_the_part_of_a_docstring_a_span_cuts_is_read_as_cleandoc_reads_it():
    old, new = Content(MEMORY, "m.py"), Content(FORMATTED, "m.py")
    for first, last in [(2, 3), (3, 4), (5, 5), (4, 7)]:
        assert holds_in(old, first, last, new), (first, last)  # re-indented, spaces stripped
    edited = Content(FORMATTED.replace("at most", "at least"), "m.py")
    assert not holds_in(old, 5, 5, edited)
    assert not holds_in(old, 4, 6, edited)


def test_the_part_of_a_prompt_string_a_span_cuts_is_compared_exactly():
    """Lines inside a prompt string: once no content at all (so found everywhere)."""
    old = Content(MEMORY, "m.py")
    assert old.span(12, 12) == ("…inner:1:'  Answer in  two sentences.\\n'",)
    assert holds_in(old, 11, 13, Content(FORMATTED, "m.py"))
    assert holds_in(old, 12, 12, Content(MEMORY.replace("SYSTEM =", "\nSYSTEM ="), "m.py"))
    for edit in ("in  two", "in two"), ("  Answer", "Answer"), ("used.\n", "used. \n"):
        assert not holds_in(old, 12, 13, Content(MEMORY.replace(*edit), "m.py")), edit
    # the string's lines outside the span are not the span's content
    assert holds_in(old, 12, 12, Content(MEMORY.replace("Cite the", "Quote the"), "m.py"))
    # the same words on lines of their own are not part of a string
    assert not holds_in(old, 12, 12, Content("  Answer in  two sentences.\n", "m.py"))


# -- the quick paths answer as the plain rule does (generated Python-like text) ----------

PIECES = [
    *"abrRbBuUfF_09 \t\n\r\f\x0b\\'\"#()[]{},;:.=+-*@",
    "'''",
    '"""',
    "\\\n",
    "def f(",
    "    ",
    "x = ",
    "return ",
    "if a:\n",
    "# c\n",
    "rb'",
    'f"',
    "é",
    "⏎",
]
texts = st.lists(st.sampled_from(PIECES), max_size=80).map("".join)
LAYOUT = [" ", "\n", "\t", ",", ";", "\\\n", "(", ")", "\n    "]
quick = settings(max_examples=400, deadline=None)


def _blanked(text: str) -> tuple[str, frozenset[int]]:
    """The rule for the blanked code, written as one substitution over the text."""
    breaks = [i for i, ch in enumerate(text) if ch == "\n"]
    inside: set[int] = set()

    def blank(m: re.Match[str]) -> str:
        if "\n" in m.group():
            first = bisect_right(breaks, m.start() - 1) + 1
            inside.update(range(first + 1, first + m.group().count("\n") + 1))
        fill = " " if m.lastgroup == "comment" else "\x01"
        return "\n".join(fill * len(part) for part in m.group().split("\n"))

    return _OPAQUE.sub(blank, text), frozenset(inside)


@quick
@given(texts)
@example("rb'x' + f\"y\" # z\n'''a\nb'''\nu'\\")
@example('bar\'x\' + Rb"""q""" \'open')
@example("0a 1e+5x x1.5y if'a' or'b'")
def test_strings_and_comments_are_found_where_the_pattern_finds_them(text):
    assert [(m.span(), m.lastgroup) for m in _opaque(text)] == [
        (m.span(), m.lastgroup) for m in _OPAQUE.finditer(text)
    ]
    content = Content(text, "x.py")
    assert content._code == _blanked(text)
    # the words of the code as the tokenizer reads its names and numbers (``0a`` is two)
    read = re.finditer(rf"{_NUMBER}|\w+", content._code[0])
    words = [w for m in read for w in _WORD.findall(m.group())]
    assert content._words == f" {' '.join(words)} "


@quick
@given(st.one_of(texts, st.just(QUOTE)), st.data())
def test_where_content_occurs_its_written_runs_occur(text, data):
    """The quick refusal in ``holds`` is a necessary condition: wherever the tokens are
    found, every written run is in the text with layout taken out."""
    old = Content(text, "x.py")
    count = text.count("\n") + 1
    first = data.draw(st.integers(1, count))
    needle = old.span(first, data.draw(st.integers(first, count)))
    edits = data.draw(st.lists(st.tuples(st.integers(0, len(text)), st.sampled_from(LAYOUT))))
    relaid = text
    for at, layout in sorted(edits, reverse=True):
        relaid = relaid[:at] + layout + relaid[at:]
    for new_text in (text, relaid, "x = 1\n" + relaid):
        new = Content(new_text, "x.py")
        if new.find(needle):
            squeezed = new_text.translate(_BETWEEN)
            assert all(run in squeezed for run in _written_runs(needle))


@quick
@given(texts, st.lists(st.tuples(st.integers(1, 30), st.integers(0, 6)), min_size=1, max_size=5))
@example("x = 1 \\\n;y", [(2, 0)])  # a statement's end alone on its line
@example("'''a\nb'''\n#c", [(2, 1), (1, 0)])
@example("0a if'x' or'y'", [(1, 0)])
def test_a_span_of_any_text_holds_in_its_own_file(text, spans):
    """Whatever the text (strings cut off, prefixes on names, numbers on words), each
    span's content is found where it was read."""
    content = Content(text, "x.py")
    count = text.count("\n") + 1
    for start, length in spans:
        first = min(start, count)
        last = min(first + length, count)
        assert holds_in(content, first, last, content), content.span(first, last)


# -- any span, cut anywhere: in its own file, after layout, not after an edit -------------

#: Generated modules: code, comments, docstrings (one line, or several with a relative
#: indent), prompt strings over several lines, calls and lists; the words of every
#: string and comment are unique (``w0``, ``w1``, …), code never looks like one.
NAMES = ["client", "memory", "notes", "query", "limit", "user", "hits"]
CALLEES = ["render", "search", "client.complete", "self.index.query", "len"]
#: A line break of the code, where a rendering may leave trailing spaces; a line break
#: inside a string that is not a docstring is its value, and is written as it is.
NL = "\x1e"

Node = tuple[object, ...]


@st.composite
def modules(draw: st.DrawFn) -> list[Node]:
    words = iter(range(10**6))

    def phrase() -> str:
        spacing = draw(st.sampled_from([" ", "  "]))
        return spacing.join(f"w{next(words)}" for _ in range(draw(st.integers(1, 3))))

    def expr(depth: int) -> Node:
        kinds = ["name", "number", "str"] + (["call", "list", "prompt", "fstr"] * (depth < 2))
        kind = draw(st.sampled_from(kinds))
        if kind == "name":
            return ("name", draw(st.sampled_from(NAMES)))
        if kind == "number":
            return ("name", draw(st.sampled_from(["5", "0.5", "512", ".5"])))
        if kind in ("str", "fstr"):
            return (kind, phrase())
        if kind == "prompt":  # its lines as they are: leading spaces, an empty line
            lines = [
                draw(st.sampled_from(["", "  "])) + phrase() if draw(st.booleans()) else ""
                for _ in range(draw(st.integers(2, 4)))
            ]
            return ("prompt", [phrase(), *lines])
        items = [expr(depth + 1) for _ in range(draw(st.integers(1, 3)))]
        if kind == "list":
            return ("list", items)
        keywords = [
            (name, expr(depth + 1)) for name in ["top_k", "stop"][: draw(st.integers(0, 2))]
        ]
        return ("call", draw(st.sampled_from(CALLEES)), items, keywords)

    def docstring() -> list[str] | None:
        shape = draw(st.sampled_from(["none", "one", "several"]))
        if shape == "none":
            return None
        if shape == "one":
            return [phrase()]
        rest = [
            draw(st.sampled_from(["", "  - "])) + phrase() for _ in range(draw(st.integers(1, 3)))
        ]
        return [phrase(), "", *rest]

    def statements(depth: int, *, function: bool) -> list[Node]:
        kinds = ["assign", "call", "comment"] + ["return"] * function + ["if"] * (depth < 3)
        out: list[Node] = []
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from(kinds))
            if kind == "assign":
                out.append(("assign", draw(st.sampled_from(NAMES)), expr(0)))
            elif kind == "call":
                out.append(("expr", ("call", draw(st.sampled_from(CALLEES)), [expr(1)], [])))
            elif kind == "return":
                out.append(("return", expr(0)))
            elif kind == "comment":
                out.append(("comment", phrase()))
            else:
                out.append(
                    ("if", draw(st.sampled_from(NAMES)), statements(depth + 1, function=function))
                )
        return out

    def function(depth: int, params: str) -> Node:
        name = draw(st.sampled_from(["answer", "search", "remember"]))
        return ("def", name, params, docstring(), statements(depth + 1, function=True))

    items: list[Node] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["assign", "comment", "def", "class"]))
        if kind == "assign":
            items.append(("assign", "PROMPT", expr(0)))
        elif kind == "comment":
            items.append(("comment", phrase()))
        elif kind == "def":
            items.append(function(0, "query, limit=5"))
        else:
            methods = [function(1, "self, query") for _ in range(draw(st.integers(1, 2)))]
            items.append(("class", "Memory", docstring(), methods))
    return items


class Layout(NamedTuple):
    """What a formatter may change: the indent, calls and lists wrapped one item per line
    (with a trailing comma) or not, trailing spaces, blank lines, an enclosing block."""

    indent: int
    wrap: bool
    trailing: str
    blank: int
    nest: bool


layouts = st.builds(
    Layout,
    st.sampled_from([4, 2, 3]),
    st.booleans(),
    st.sampled_from(["", " ", "   "]),
    st.sampled_from([1, 2]),
    st.booleans(),
)


def render(module: list[Node], layout: Layout) -> str:
    """The module's text in ``layout``."""

    def pad(depth: int) -> str:
        return " " * (layout.indent * depth)

    def expr(node: Node, depth: int) -> str:
        kind = node[0]
        if kind == "name":
            return str(node[1])
        if kind == "str":
            return f'"{node[1]}"'
        if kind == "fstr":
            return f'f"{node[1]} {{user}}"'
        if kind == "prompt":
            return '"""' + "\n".join(node[1]) + '"""'  # type: ignore[arg-type]
        if kind == "list":
            return bracket("[", [expr(e, depth + 1) for e in node[1]], "]", depth)  # type: ignore[attr-defined]
        _kind, callee, args, keywords = node
        items = [expr(e, depth + 1) for e in args]  # type: ignore[attr-defined]
        items += [f"{k}={expr(e, depth + 1)}" for k, e in keywords]  # type: ignore[attr-defined]
        return bracket(f"{callee}(", items, ")", depth)

    def bracket(opening: str, items: list[str], closing: str, depth: int) -> str:
        if not layout.wrap:
            return opening + ", ".join(items) + closing
        inner = "".join(f"{pad(depth + 1)}{item},{NL}" for item in items)
        return f"{opening}{NL}{inner}{pad(depth)}{closing}"

    def doc(lines: list[str] | None, depth: int) -> str:
        if lines is None:
            return ""
        if len(lines) == 1:
            return f'{pad(depth)}"""{lines[0]}"""{NL}'
        rest = "".join(f"{pad(depth) + line if line else ''}{NL}" for line in lines[1:])
        return f'{pad(depth)}"""{lines[0]}{NL}{rest}{pad(depth)}"""{NL}'

    def statement(node: Node, depth: int) -> str:
        kind, at = node[0], pad(depth)
        if kind == "assign":
            return f"{at}{node[1]} = {expr(node[2], depth)}{NL}"  # type: ignore[arg-type]
        if kind == "expr":
            return f"{at}{expr(node[1], depth)}{NL}"  # type: ignore[arg-type]
        if kind == "return":
            return f"{at}return {expr(node[1], depth)}{NL}"  # type: ignore[arg-type]
        if kind == "comment":
            return f"{at}# {node[1]}{NL}"
        if kind == "if":
            return f"{at}if {node[1]}:{NL}" + block(node[2], depth + 1)  # type: ignore[arg-type]
        if kind == "def":
            _kind, name, params, lines, body = node
            head = f"{at}def {name}({params}):{NL}"
            return head + doc(lines, depth + 1) + block(body, depth + 1)  # type: ignore[arg-type]
        _kind, name, lines, methods = node
        parts = [statement(m, depth + 1) for m in methods]  # type: ignore[attr-defined]
        return f"{at}class {name}:{NL}" + doc(lines, depth + 1) + NL.join(parts)  # type: ignore[arg-type]

    def block(nodes: list[Node], depth: int) -> str:
        return "".join(statement(n, depth) for n in nodes)

    top = int(layout.nest)
    text = (f"if True:{NL}" if layout.nest else "") + (NL * layout.blank).join(
        statement(item, top) for item in module
    )
    return text.replace(NL, layout.trailing + "\n")


UNIQUE = re.compile(r"\bw\d+\b")  # a word of a string or a comment, found nowhere else
spans = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _draw_span(data: st.DataObject, text: str) -> tuple[int, int]:
    count = len(text.splitlines())
    first = data.draw(st.integers(1, count), label="first")
    return first, data.draw(st.integers(first, min(count, first + 8)), label="last")


@spans
@given(modules(), layouts, layouts, st.data())
def test_any_span_holds_in_its_file_and_after_a_layout_only_rewrite(
    module: list[Node], before: Layout, after: Layout, data: st.DataObject
) -> None:
    """Whatever a span cuts — a docstring, a prompt string, a call's brackets, a
    comment block — its content is found in its own file, and in the same module laid
    out otherwise (re-indented, re-wrapped, trailing spaces, blank lines, nested)."""
    old_text = render(module, before._replace(nest=False))
    old, new = Content(old_text, "m.py"), Content(render(module, after), "m.py")
    for _ in range(4):
        first, last = _draw_span(data, old_text)
        assert holds_in(old, first, last, old), old.span(first, last)
        assert holds_in(old, first, last, new), old.span(first, last)


@spans
@given(modules(), layouts, layouts, st.data())
def test_an_edit_inside_a_string_or_a_comment_of_the_span_is_content(
    module: list[Node], before: Layout, after: Layout, data: st.DataObject
) -> None:
    """A letter inserted into a word of a string or a comment the span holds (whole or
    in part), or a space doubled inside one, is content, however the rest is laid out."""
    old_text = render(module, before._replace(nest=False))
    old = Content(old_text, "m.py")
    lines = old_text.splitlines()
    first, last = _draw_span(data, old_text)
    inside = sorted({w for line in lines[first - 1 : last] for w in UNIQUE.findall(line)})
    if not inside:
        return
    word = data.draw(st.sampled_from(inside), label="word")
    new_text = render(module, after)
    for edited in (
        UNIQUE.sub(lambda m: "wQ" + m.group()[1:] if m.group() == word else m.group(), new_text),
        re.sub(rf"(?<=\S) (?={word}\b)", "  ", new_text),  # a space doubled before it
    ):
        if edited != new_text:
            assert not holds_in(old, first, last, Content(edited, "m.py")), (word, first, last)


# -- one answer everywhere: the check, the first-change search, the page ------------------

BASE = '''import os


def build_prompt(user, notes):
    """Assemble the system prompt."""
    # newest notes first
    header = render(user.name, notes, limit=5)
    return "You are  " + header
'''
FORMATTING = {
    "reindent": lambda s: s.replace("def build_prompt", "if True:\n  def build_prompt").replace(
        "\n    ", "\n      "
    ),
    "rewrap": lambda s: s.replace(
        "render(user.name, notes, limit=5)", "render(\n        user.name,\n        notes,\n    )"
    ).replace("notes,\n    )", "notes, limit=5,\n    )"),
    "docstring": lambda s: s.replace('prompt."""', 'prompt.   """'),
    "shift": lambda s: s.replace("import os\n", "import os\nimport re\n"),
}
CONTENT = {
    "rename": lambda s: s.replace("limit=5", "limit=6"),
    "prompt": lambda s: s.replace('"You are  "', '"You are "'),
    "comment": lambda s: s.replace("newest notes first", "newest first"),
}


@pytest.mark.slow
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@pytest.mark.slow
@given(st.lists(st.sampled_from(sorted(FORMATTING) + sorted(CONTENT)), min_size=1, max_size=4))
@example(["rewrap"])
@example(["shift", "reindent", "rewrap", "docstring"])
@example(["rewrap", "prompt"])
def test_format_only_never_contradicts_itself(tmp_path_factory, monkeypatch, edits):
    """For any history of edits: format only ⇔ no first content change ⇔ the page says
    formatting only — and the first content change is the first content edit."""
    from conftest import init_repo, invoke, pin_subject
    from tracework.records.artefacts import (
        Checks,
        CheckSummary,
        QuoteEntry,
        RegisterCheck,
        ReportRecords,
        to_json,
    )
    from tracework.register import store as reg
    from tracework.render.export import drift_html
    from tracework.render.history import drift_summary
    from tracework.workspace import Workspace

    root = tmp_path_factory.mktemp("formats")
    repo = init_repo(root / "subject")
    text = BASE
    pin = repo.write("prompts.py", text).commit("pin")
    first_content = None
    for edit in edits:
        before = text
        text = (FORMATTING.get(edit) or CONTENT[edit])(text)
        if text == before:
            text += "\n"  # an edit that found nothing to change: still a commit
        commit = repo.write("prompts.py", text).commit(edit)
        if edit in CONTENT and first_content is None and text != before:
            first_content = commit
    target = repo.commits[-1]
    ws = Workspace.init(root / "ws")
    monkeypatch.chdir(ws.root)
    pin_subject(invoke, repo, pin)
    quoted = invoke(
        "quote", "demo", "SRC-1", "prompts.py", "--symbol", "build_prompt", "--id", "Q-p"
    )
    assert quoted.exit_code == 0, quoted.output
    out = invoke("check", "demo", "--at", target, "--json")
    item = next(i for i in json.loads(out.output)["items"] if i["kind"] == "quote")
    if item["state"] in ("verified", "moved"):
        return  # the bytes hold: nothing changed, nothing to explain
    quote = QuoteEntry.model_validate({k: item[k] for k in QuoteEntry.model_fields})
    registered = RegisterCheck.model_construct(counts={})  # what the quote counts read
    typed = ReportRecords.model_construct(
        pin=pin,
        commit=target,
        subject="toy",
        quotes={"Q-p": quote},
        records=[],
        absences={},
        checks=CheckSummary.model_construct(checks=Checks.model_construct(registered=registered)),
    )
    summary = drift_summary(ws, reg.load(ws.register_file("demo")), typed)
    drift = to_json(summary)
    page = drift_html(typed.model_copy(update={"drift": summary}))
    assert item["format_only"] == ("Q-p" in drift["format_only"])
    assert item["format_only"] == ("Q-p" not in drift["first_content_change"])
    assert item["format_only"] == ("formatting only" in page)
    assert drift["first_content_change"].get("Q-p") == first_content
    assert item["format_only"] == (first_content is None)
