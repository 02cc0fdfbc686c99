"""Transcripts people can read: a chat request shown as a conversation (role, then its
content's real lines, escaped), any other value as JSON whose multi-line strings keep
their lines, the canonical JSON one click away; and a value compared with a named
reference by lines, in a sentence computed from the difference."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from tracework.capture.compare import Reference, compare, quoted_text
from tracework.views.capture import comparison_html
from tracework.views.transcripts import conversation, raw_value_html, value_html

HOSTILE = "</details><script>alert(1)</script>"


class Tags(HTMLParser):
    """Every start and end tag of a fragment, and its text, as a browser parses it."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.starts: list[tuple[str, dict[str, str | None]]] = []
        self.ends: list[str] = []
        self.text: list[str] = []
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        self.ends.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def named(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for t, attrs in self.starts if t == tag]

    def classes(self) -> set[str]:
        return {c for _, a in self.starts for c in (a.get("class") or "").split()}


def lines_of(markup: str) -> list[str]:
    """The text of each numbered line (``tw-line``) of a fragment, numbers left out."""
    out: list[str] = []
    stack: list[str] = []  # "line", "number" or "" for each open element

    class Lines(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            cls = (dict(attrs).get("class") or "").split()
            if "tw-line" in cls:
                out.append("")
            stack.append("line" if "tw-line" in cls else "number" if "tw-ln" in cls else "")

        def handle_endtag(self, tag: str) -> None:
            stack.pop()

        def handle_data(self, data: str) -> None:
            if "line" in stack and stack[-1] != "number":
                out[-1] += data

    Lines(convert_charrefs=True).feed(markup)
    return out


# -- what is a conversation -------------------------------------------------------------


def test_the_three_shapes_of_a_chat_request_are_conversations():
    plain = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    chat = conversation(plain)
    assert chat is not None and [m.role for m in chat.messages] == ["system", "user"]
    assert [m.where for m in chat.messages] == ["[0]", "[1]"]
    openai = conversation({"model": "m", "temperature": 0, "messages": plain})
    assert openai is not None and openai.fields == (("model", "m"), ("temperature", 0))
    assert [p.where for p in openai.messages[1].parts] == [".messages[1].content"]
    anthropic = conversation(
        {
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "x"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        }
    )
    assert anthropic is not None
    assert [(m.role, [p.text for p in m.parts]) for m in anthropic.messages] == [
        ("system", ["Be brief."]),
        ("user", ["Hi"]),
    ]
    assert anthropic.messages[0].parts[0].where == ".system[0].text"
    assert anthropic.fields == ()
    # a part that is not text stays, shown as JSON; a message without text is a message
    tool = conversation(
        [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
            {"role": "user", "content": [{"type": "image", "source": "x"}]},
        ]
    )
    assert tool is not None and tool.messages[0].parts == ()
    assert tool.messages[0].fields == (("tool_calls", [{"id": "1"}]),)
    assert tool.messages[1].parts[0].other == {"type": "image", "source": "x"}


def test_values_that_only_look_like_chat_are_not_conversations():
    for value in (
        [],
        {"messages": []},
        [{"role": "user"}],  # no content
        [{"role": 1, "content": "x"}],
        [{"role": "user", "content": 3}],
        [{"role": "user", "content": [1, 2]}],
        [{"role": "user", "content": "x"}, "not a message"],
        {"prompt": "x", "messages": "x"},
        "system: you are",
    ):
        assert conversation(value) is None, value


# -- how it is shown --------------------------------------------------------------------


def test_a_conversation_shows_each_role_and_the_real_lines_of_its_content():
    request = {
        "model": "stand-in",
        "messages": [
            {"role": "system", "content": "You are careful.\nAnswer briefly.\n\nBe kind."},
            {"role": "user", "content": "Where do reports go?"},
        ],
    }
    page = value_html(request, "model requests[0]")
    tags = Tags(page)
    assert {"tw-conversation", "tw-message", "tw-role-system", "tw-role-user"} <= tags.classes()
    assert "You are careful." in lines_of(page) and "Be kind." in lines_of(page)
    assert lines_of(page)[:4] == ["You are careful.", "Answer briefly.", "", "Be kind."]
    text = "".join(tags.text)
    assert "\\n" not in text  # real lines, not escapes
    # each message names the path to cite it by, and the request's other keys are shown
    assert "model requests[0].messages[0].content" in text
    assert "model requests[0].messages[1].content" in text
    assert "stand-in" in text


def test_hostile_content_and_roles_stay_text():
    request = [
        {"role": "<b>", "content": f"line one\n{HOSTILE}"},
        {
            "role": "user",
            "content": [{"type": "text", "text": HOSTILE}, {"type": "x", "y": HOSTILE}],
        },
        {"role": "system", "content": "ok", HOSTILE: HOSTILE},
    ]
    for page in (value_html(request), value_html({"wrapped": request}), raw_value_html(request)):
        tags = Tags(page)
        assert not tags.named("script") and not tags.named("b")
        assert tags.ends.count("details") == len(tags.named("details"))  # none closed early
        assert not any("<" in c or "&" in c for c in tags.classes())  # no role as a class
        assert HOSTILE in "".join(tags.text)  # shown, as text
    shown = value_html(request)
    assert "&lt;b&gt;" in shown and "&lt;/details&gt;&lt;script&gt;" in shown
    roles = [
        a.get("class") for a in Tags(shown).named("div") if "tw-message" in (a.get("class") or "")
    ]
    assert roles == ["tw-message", "tw-message tw-role-user", "tw-message tw-role-system"]


def test_other_values_keep_a_json_view_with_multiline_strings_as_lines():
    value = {"prompt": "first line\nsecond line", "request_id": "<uuid-1>", "n": [1, True, None]}
    page = value_html(value, "second prompt")
    assert "tw-conversation" not in page and "tw-json" in page
    assert lines_of(page) == ["first line", "second line"]
    text = "".join(Tags(page).text)
    assert '"request_id"' in text and '"&lt;uuid-1&gt;"' not in text and '"<uuid-1>"' in text
    assert "true" in text and "null" in text
    # the raw canonical JSON, one click away, is the value as hashed
    raw = raw_value_html(value)
    assert Tags(raw).named("details") and "tw-raw" in raw
    assert lines_of(raw) == json.dumps(value, indent=2, sort_keys=True).split("\n")


def test_a_long_line_is_one_line_that_wraps_never_cut():
    long = "word " * 200
    page = value_html(long)
    assert lines_of(page) == [long]


# -- the difference from a named reference ----------------------------------------------

TEMPLATE = "You are careful.\nAnswer briefly.\n\nBe kind."


def ref(text: str | None, **keys: object) -> Reference:
    fields: dict[str, object] = {"kind": "quote", "label": "Q-template", "text": text}
    fields.update(keys)
    return Reference(**fields)  # type: ignore[arg-type]


def test_equal_values_say_so():
    result = compare(TEMPLATE, ref(TEMPLATE, form="string literal"))
    assert result.verdict == "equal" and result.changes == ()
    assert result.sentence == "equals Q-template"
    assert "tw-whole-diff" not in comparison_html(result, "This value")


def test_lines_inserted_only_are_named_by_their_numbers():
    value = "You are careful.\nAnswer briefly.\n<memories>\nnights\n</memories>\n\nBe kind."
    result = compare(value, ref(TEMPLATE))
    assert result.verdict == "inserted"
    assert result.sentence == "equals Q-template with only lines 3–5 inserted"
    assert [(c.op, c.lines, c.reference_lines) for c in result.changes] == [
        ("inserted", (3, 5), None)
    ]
    two = compare("top\n" + value, ref(TEMPLATE))
    assert two.sentence == "equals Q-template with only lines 1 and 4–6 inserted"
    page = comparison_html(result, "This value")
    assert "This value equals Q-template with only lines 3–5 inserted." in page
    assert [attrs.get("class") for attrs in Tags(page).named("ins")] == ["tw-line tw-ins"] * 6
    assert "tw-whole-diff" in page  # the whole difference, one click away


def test_changed_lines_are_counted_and_placed_in_both_texts():
    value = "You are bold.\nAnswer briefly.\nnew\n\nBe kind.\nextra"
    result = compare(value, ref(TEMPLATE, first_line=12))  # the quote starts at line 12
    assert result.verdict == "changed"
    assert result.sentence == (
        "differs from Q-template in 3 places: line 1 replaces its line 12; line 3 inserted; "
        "line 6 inserted"
    )
    removed = compare("You are careful.\nBe kind.", ref(TEMPLATE))
    assert removed.verdict == "removed"
    assert removed.sentence == "equals Q-template with only its lines 2–3 removed"


def test_a_missing_reference_is_said_and_compares_nothing():
    result = compare(TEMPLATE, ref(None, missing="Q-template is missing at 1f50516ebb92"))
    assert result.verdict == "missing" and result.changes == ()
    assert result.sentence == (
        "cannot be compared with Q-template: Q-template is missing at 1f50516ebb92"
    )
    assert "no reference here" in comparison_html(result, "This value")


def test_a_value_that_is_not_a_string_is_compared_as_canonical_json():
    result = compare({"a": 1, "b": 2}, ref('{\n  "a": 1,\n  "b": 3\n}', form="canonical JSON"))
    assert result.verdict == "changed" and "(compared as canonical JSON)" in result.sentence
    assert result.form == "canonical JSON"


def test_a_comparison_is_byte_identical_for_identical_input():
    value = TEMPLATE.replace("Be kind.", "Be kind.\n" + HOSTILE)
    pages = {comparison_html(compare(value, ref(TEMPLATE)), "This value") for _ in range(3)}
    assert len(pages) == 1
    (page,) = pages
    assert not Tags(page).named("script") and HOSTILE in "".join(Tags(page).text)


def test_a_quoted_python_string_literal_is_compared_as_the_string_it_is():
    quoted = 'PROMPT = """You are careful. \\\nAnswer briefly.\n\n{memories}"""\n'
    assert quoted_text(quoted, "pkg/prompts.py") == (
        "You are careful. Answer briefly.\n\n{memories}",
        "string literal",
    )
    indented = '    PROMPT: str = (\n        "one\\n"\n        "two"\n    )\n'
    assert quoted_text(indented, "pkg/agent.py") == ("one\ntwo", "string literal")
    # anything else is its lines: code, an f-string, a file that is not Python
    for text, path in (
        ("x = 1\ny = 2\n", "a.py"),
        ('P = f"{x}"\n', "a.py"),
        ('P = """a"""\n', "a.md"),
        ("def f(:\n", "a.py"),
    ):
        assert quoted_text(text, path) == (text.removesuffix("\n"), "lines")


PROMPT = "Be helpful.\n{user_info}\n\nTime: {time}"


def test_a_template_s_fields_filled_are_named_with_what_fills_them():
    value = "Be helpful.\n\n<memories>\n[k1]: tea\n</memories>\n\nTime: <time>"
    result = compare(value, ref(PROMPT, form="string literal"))
    assert result.verdict == "filled"
    assert result.sentence == (
        "equals Q-template with only its fields filled: {user_info} by lines 2–5, "
        '{time} by "<time>"'
    )
    assert [(f.field, f.lines, f.text) for f in result.fills] == [
        ("{user_info}", (2, 5), "\n<memories>\n[k1]: tea\n</memories>"),
        ("{time}", (7, 7), "<time>"),
    ]
    page = comparison_html(result, "This value")
    assert "fields filled" in page and "{user_info} by lines 2–5" in page
    empty = compare("Be helpful.\n\n\nTime: now", ref(PROMPT, form="string literal"))
    assert empty.sentence.endswith('{user_info} by nothing, {time} by "now"')


def test_a_text_that_is_not_the_template_filled_is_compared_by_lines():
    # the fixed text changed, so no filling of the fields gives it
    changed = compare("Be curt.\n\nTime: now", ref(PROMPT, form="string literal"))
    assert changed.verdict == "changed" and changed.fills == ()
    # a field named twice must be filled the same way both times
    twice = ref("{a} and {a}", form="string literal")
    assert compare("x and y", twice).verdict == "changed"
    assert compare("x and x", twice).sentence.endswith('{a} by "x", {a} by "x"')
    # a string with braces that str.format refuses is only lines
    assert compare("a } b", ref("a } c", form="string literal")).verdict == "changed"
    # a pathological filling is one linear pass: a long text of the literal's own shape
    long = compare(
        "Be helpful.\n" + "\n" * 200_000 + "\nTime: x", ref(PROMPT, form="string literal")
    )
    assert long.verdict == "filled"
