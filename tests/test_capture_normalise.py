"""Normalisation: UUIDs numbered by first appearance, times, addresses, paths, then the
harness's own rules; stable, idempotent, and never merging two different UUIDs."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracework.capture.normalise import HarnessRule, NormaliseProblem, Normaliser

PATHS = [
    ("/capture/tree", "<tree>"),
    ("/home/a/.cache/tracework/captures/trees/abc", "<tree>"),
    ("/capture/env", "<env>"),
    ("/tmp", "<tmp>"),
]


def fresh(rules: list[HarnessRule] | None = None) -> Normaliser:
    return Normaliser(PATHS, rules or [])


uuids = st.builds(lambda n: str(uuid.UUID(int=n)), st.integers(0, 2**128 - 1))
filler = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12).map(
    lambda s: f" {s} "  # separated, so a UUID is never glued to other hex digits
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(uuids, filler), min_size=1, max_size=12))
def test_uuid_numbering_is_stable_and_never_merges(pieces):
    text = "".join(u + gap for u, gap in pieces)
    norm = fresh()
    out = norm.text(text)
    order = list(dict.fromkeys(u for u, _ in pieces))  # by first appearance
    for value in order:
        assert value not in out
    assert out.count("<uuid-") == len(pieces)
    expected = {value: f"<uuid-{n}>" for n, value in enumerate(order, 1)}
    assert out == "".join(expected[u] + norm.text(gap) for u, gap in pieces)
    # a later string of the same capture, in another order, keeps the numbers given
    later = list(reversed(order))
    assert norm.text(" ".join(later)) == " ".join(expected[u] for u in later)
    assert norm.text(str(uuid.UUID(int=2**128 - 1 - 12345))) in (
        f"<uuid-{len(order) + 1}>",
        *expected.values(),  # unless that UUID was drawn already
    )


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.lists(uuids, max_size=4))
def test_normalising_twice_changes_nothing(text, ids):
    norm = fresh([HarnessRule(r"req-[0-9]+", "<req>")])
    once = norm.text(text + " ".join(ids) + " 2026-03-04T10:00:00Z 0x7f3a1c2b4d90 /tmp/x")
    assert norm.text(once) == once
    assert fresh([HarnessRule(r"req-[0-9]+", "<req>")]).text(once) == once


@settings(max_examples=100, deadline=None)
@given(uuids)
def test_case_does_not_make_a_uuid_another(value):
    norm = fresh()
    assert norm.text(value.upper()) == norm.text(value) == "<uuid-1>"


@pytest.mark.parametrize(
    ("given_text", "expected"),
    [
        ("at 2026-03-04T10:00:00Z", "at <time>"),
        ("at 2026-03-04T10:00:00.123456+00:00.", "at <time>."),
        ("str(): 2026-03-04 10:00:00.5", "str(): <time>"),
        ("minutes only 2026-03-04T10:00", "minutes only <time>"),
        ("a date alone 2026-03-04 stays", "a date alone 2026-03-04 stays"),
        ("<Store object at 0x7f3a1c2b4d90>", "<Store object at <addr>>"),
        ("a short hex 0xff and 0xdeadbeef stay", "a short hex 0xff and 0xdeadbeef stay"),
        ("/capture/tree/toy/store.py", "<tree>/toy/store.py"),
        ("/home/a/.cache/tracework/captures/trees/abc/x", "<tree>/x"),
        ("/capture/env/lib/python3.11", "<env>/lib/python3.11"),
        ("/tmp/home and /tmp", "<tmp>/home and <tmp>"),
        ("/tmpfoo and /var/tmp/x stay", "/tmpfoo and /var/tmp/x stay"),
        ("bad \ud800 text", "bad \ufffd text"),
    ],
)
def test_built_in_rules(given_text, expected):
    assert fresh().text(given_text) == expected


def test_rules_apply_in_order_built_in_first():
    """A harness rule sees the text after the built-in rules: it can match a placeholder,
    and it cannot undo one."""
    rules = [HarnessRule(r"<uuid-1>/item", "<first item>"), HarnessRule(r"item-[0-9]+", "<i>")]
    value = f"{uuid.UUID(int=7)}/item and item-42"
    assert fresh(rules).text(value) == "<first item> and <i>"


def test_placeholders_are_inserted_as_written():
    assert fresh([HarnessRule(r"(k)ey", r"\1<\g<0>>")]).text("key") == r"\1<\g<0>>"


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (r"(a)\1", "not valid RE2"),
        (r"(?<=x)y", "not valid RE2"),
        (r"a*", "matches the empty string"),
    ],
)
def test_bad_harness_rules_are_refused(pattern, words):
    with pytest.raises(NormaliseProblem, match=words):
        fresh([HarnessRule(pattern, "<x>")])


def test_a_quadratic_pattern_stays_linear():
    """RE2 has no backtracking: the classic catastrophic pattern returns at once."""
    norm = fresh([HarnessRule(r"(a+)+b", "<x>")])
    assert norm.text("a" * 50_000) == "a" * 50_000


def test_values_keys_and_collisions():
    norm = fresh()
    first, second = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))
    value = {first: [second, {"at": "2026-03-04T10:00:00Z"}], "n": 3, "ok": True, "none": None}
    assert norm.value(value) == {
        "<uuid-1>": ["<uuid-2>", {"at": "<time>"}],
        "n": 3,
        "ok": True,
        "none": None,
    }
    numbers = fresh([HarnessRule(r"^0\.[0-9]+$", "<random>")])
    assert numbers.value([0.25, 1, 2.5, True]) == ["<random>", 1, 2.5, True]
    with pytest.raises(NormaliseProblem, match="both become '<time>'"):
        norm.value({"2026-03-04T10:00:00Z": 1, "2026-03-05T10:00:00Z": 2})
