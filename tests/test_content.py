"""Format only: the one rule (``tracework.drift.content``) and every output that derives from it.

The rule's examples are the README's; the property test builds real histories of
formatting and content edits and asserts that the drift check, the first-change
search and the page never contradict each other.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tracework.drift.content import Content, holds_in

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
