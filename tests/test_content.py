"""Format only: the one rule (``tracework.drift.content``) and every output that derives from it.

The rule's examples are the README's; the property test builds real histories of
formatting and content edits and asserts that the drift check, the first-change
search and the page never contradict each other.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tracework.drift.content import (
    _BETWEEN,
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
def test_strings_and_comments_are_found_where_the_pattern_finds_them(text):
    assert [(m.span(), m.lastgroup) for m in _opaque(text)] == [
        (m.span(), m.lastgroup) for m in _OPAQUE.finditer(text)
    ]
    content = Content(text, "x.py")
    assert content._code == _blanked(text)
    assert content._words == f" {' '.join(_WORD.findall(content._code[0]))} "


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
    from tracework.register import store as reg
    from tracework.render.artefacts import QuoteEntry, ReportRecords, to_json
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
    typed = ReportRecords.model_construct(
        pin=pin, commit=target, subject="toy", quotes={"Q-p": quote}, records=[], absences={}
    )
    summary = drift_summary(ws, reg.load(ws.register_file("demo")), typed)
    drift = to_json(summary)
    page = drift_html(typed.model_copy(update={"drift": summary}))
    assert item["format_only"] == ("Q-p" in drift["format_only"])
    assert item["format_only"] == ("Q-p" not in drift["first_content_change"])
    assert item["format_only"] == ("formatting only" in page)
    assert drift["first_content_change"].get("Q-p") == first_content
    assert item["format_only"] == (first_content is None)
