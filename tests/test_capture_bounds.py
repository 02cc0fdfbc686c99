"""Bounds on what a subject can make tracework do after its run, and before it.

The harness is the subject's code's mouthpiece: it can send any number of messages, so
what tracework does with them must stay within the declaration's ``[limits]``:

- **Counts**: ``cases``, ``tables``, ``rows`` (of all tables) and ``rules`` are capped;
  reading stops at the first message past a cap, which is one clear error naming the
  cap and the setting that raises it, and a failed capture that keeps its log.
- **Linear steps**: duplicate case ids and table names are found without walking the
  cases and tables already read; the harness's normalise rules are one RE2 pass over
  each string, however many there are.
- **The tree**: ``tree_files`` and ``tree_mib`` are judged from the tree's listing,
  read only as far as the file cap, before anything is written to the cache; a blob at
  many paths counts at each.

No test measures time: the assertions are on messages, counts of work and files.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from capture_setup import PLAIN_HARNESS, capture_workspace, one_error, snapshot
from conftest import Repo, git
from tracework.capture import protocol
from tracework.capture import tree as tree_module
from tracework.capture.config import Limits
from tracework.capture.errors import TreeTooLarge
from tracework.capture.normalise import HarnessRule, NormaliseProblem, Normaliser
from tracework.capture.protocol import OverLimit, ProtocolProblem, parse
from tracework.capture.tree import export_tree
from tracework.git.mirror import Mirror

# -- the protocol: counts capped, reading stopped at the cap ---------------------------

HELLO = {"t": "hello", "protocol": 1}
DONE = {"t": "done"}


def case(number: int) -> list[dict[str, Any]]:
    """One scripted case, opened, checked and ended: three messages."""
    cid = f"C-{number}"
    return [
        {"t": "case", "id": cid, "question": "q?", "arm": "scripted"},
        {"t": "check", "case": cid, "criterion": "c", "holds": True, "observed": "o"},
        {"t": "end", "case": cid},
    ]


def table(name: str, rows: int) -> dict[str, Any]:
    return {
        "t": "table",
        "name": name,
        "columns": ["n"],
        "rows": [[n] for n in range(rows)],
        "notes": None,
        "arm": "scripted",
    }


def rule(number: int) -> dict[str, Any]:
    return {"t": "normalise", "pattern": f"r{number}-[0-9]+", "placeholder": f"<r{number}>"}


class Lines:
    """The run's lines, made as parse asks for them, counting how many it took."""

    def __init__(self, messages: Iterator[dict[str, Any]]) -> None:
        self.messages = messages
        self.taken = 0

    def __iter__(self) -> Iterator[bytes]:
        for message in self.messages:
            self.taken += 1
            yield json.dumps(message).encode()


def cases(count: int) -> Iterator[dict[str, Any]]:
    yield HELLO
    for number in range(1, count + 1):
        yield from case(number)
    yield DONE


def test_reading_stops_at_the_case_cap_of_sixty_thousand_cases():
    """The finding: 60,000 cases still ran after 20 CPU-minutes.  Past the default cap of
    1,000 nothing more is read, let alone validated."""
    lines = Lines(cases(60_000))
    with pytest.raises(OverLimit, match=r"more than 1,000 cases, the cap of \[limits\] cases"):
        parse(lines)
    assert lines.taken == 1 + 3 * 1000 + 1  # hello, 1,000 cases, the 1,001st case's opening


@pytest.mark.parametrize(
    ("setting", "cap", "messages", "taken"),
    [
        ("cases", 3, [*case(1), *case(2), *case(3), *case(4), *case(5)], 1 + 9 + 1),
        ("tables", 2, [table("a", 1), table("b", 1), table("c", 1), table("d", 1)], 1 + 3),
        ("rows", 10, [table("a", 6), table("b", 4), table("c", 1), table("d", 9)], 1 + 3),
        ("rules", 2, [rule(1), rule(2), rule(3), rule(4)], 1 + 3),
        ("rules", 0, [rule(1), rule(2)], 1 + 1),
    ],
    ids=["cases", "tables", "rows-of-all-tables", "rules", "no-rules"],
)
def test_each_cap_stops_the_reading_at_the_first_message_past_it(setting, cap, messages, taken):
    limits = Limits(**{setting: cap})
    lines = Lines(iter([HELLO, *messages, DONE]))
    with pytest.raises(OverLimit) as raised:
        parse(lines, limits)
    assert raised.value.setting == setting
    assert f"the cap of [limits] {setting} = {cap}" in str(raised.value)
    assert f"protocol message {taken} " in str(raised.value)
    assert lines.taken == taken


def test_a_run_at_its_caps_is_read_whole():
    limits = Limits(cases=2, tables=2, rows=5, rules=1)
    messages = [HELLO, rule(1), *case(1), table("a", 2), *case(2), table("b", 3), DONE]
    raw = parse(Lines(iter(messages)), limits)
    assert raw.done and len(raw.cases) == 2 and len(raw.tables) == 2 and len(raw.rules) == 1


class Walked(list[Any]):
    """A list that counts how often it is walked."""

    walks = 0

    def __iter__(self) -> Iterator[Any]:
        Walked.walks += 1
        return super().__iter__()


@dataclass
class WatchedCapture(protocol.RawCapture):
    cases: list[Any] = field(default_factory=Walked)
    tables: list[Any] = field(default_factory=Walked)


def test_duplicate_ids_and_names_are_found_without_walking_what_was_read(monkeypatch):
    """12,000 cases took 28 s: each new id was compared with every id before it.  Now
    parse never walks the cases or tables it has read (a set holds their ids and names),
    and still refuses a duplicate, ids compared ignoring case."""
    monkeypatch.setattr(protocol, "RawCapture", WatchedCapture)
    Walked.walks = 0
    many = [HELLO]
    for number in range(1, 301):
        many += [*case(number), table(f"t{number}", 1)]
    raw = parse(Lines(iter([*many, DONE])), Limits(cases=300, tables=300, rows=300))
    assert len(raw.cases) == 300 and len(raw.tables) == 300
    assert Walked.walks == 0
    again = [{**message, "id": "c-7"} if message["t"] == "case" else message for message in case(7)]
    with pytest.raises(ProtocolProblem, match="case c-7 was already run"):
        parse(Lines(iter([*many, *again])), Limits(cases=400, tables=300, rows=300))
    with pytest.raises(ProtocolProblem, match="a second table named t9"):
        parse(Lines(iter([*many, table("t9", 1)])), Limits(cases=300, tables=400, rows=400))
    assert Walked.walks == 0


@pytest.mark.parametrize(
    ("key", "length", "words"),
    [
        ("pattern", 1001, "pattern: String should have at most 1000 characters"),
        ("placeholder", 101, "placeholder: String should have at most 100 characters"),
    ],
)
def test_a_rule_is_bounded_in_length(key, length, words):
    message = {**rule(1), key: "x" * length}
    with pytest.raises(ProtocolProblem, match=words):
        parse(Lines(iter([HELLO, message, DONE])))


def test_the_caps_are_settings_with_bounds():
    caps = ("cases", "tables", "rows", "rules", "tree_files", "tree_mib")
    assert {key: getattr(Limits(), key) for key in caps} == {
        "cases": 1000,
        "tables": 100,
        "rows": 10_000,
        "rules": 100,
        "tree_files": 50_000,
        "tree_mib": 1024,
    }
    for setting, too_many in (("cases", 100_001), ("rules", 10_001), ("tree_files", 10**7 + 1)):
        with pytest.raises(ValueError, match=setting):
            Limits(**{setting: too_many})
    for name, info in Limits.model_fields.items():
        assert info.description, name


# -- normalisation: one pass, whatever the number of rules ------------------------------


class Counted:
    """A compiled RE2 pattern that counts the scans made with it."""

    def __init__(self, real: Any, calls: Counter[str], scanned: set[int]) -> None:
        self._real, self._calls, self._scanned = real, calls, scanned

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def _scan(self, method: str, *args: Any) -> Any:
        self._calls[method] += 1
        self._scanned.add(id(self))
        return getattr(self._real, method)(*args)

    def finditer(self, *args: Any) -> Any:
        return self._scan("finditer", *args)

    def sub(self, *args: Any) -> Any:
        return self._scan("sub", *args)

    def subn(self, *args: Any) -> Any:
        return self._scan("subn", *args)

    def search(self, *args: Any) -> Any:
        return self._scan("search", *args)

    def fullmatch(self, *args: Any) -> Any:
        self._calls["fullmatch"] += 1
        return self._real.fullmatch(*args)


def test_the_harness_rules_scan_each_string_once(monkeypatch):
    """3,000 rules over 3,000 strings took 24 s: each rule was a pass over each string.
    Now each string is scanned once, by one pattern; which rule matched costs at most
    log2(rules) checks of the match's own bytes."""
    calls: Counter[str] = Counter()
    scanned: set[int] = set()
    real_compile = re2.compile
    monkeypatch.setattr(re2, "compile", lambda *args: Counted(real_compile(*args), calls, scanned))
    count = 200
    norm = Normaliser([], [HarnessRule(f"tok{n}-[0-9]+", f"<t{n}>") for n in range(count)])
    calls.clear()
    plain = [f"nothing to see {n}" for n in range(50)]
    assert [norm.text(text) for text in plain] == plain
    scans = calls["finditer"] + calls["sub"] + calls["subn"] + calls["search"]
    assert scans == len(plain)  # one per string, not one per rule and string
    assert calls["fullmatch"] == 0
    assert len(scanned) == 1
    calls.clear()
    matched = [f"a tok{(n * 37) % count}-{n} here" for n in range(50)]
    expected = [f"a <t{(n * 37) % count}> here" for n in range(50)]
    assert [norm.text(text) for text in matched] == expected
    assert calls["finditer"] == len(matched)
    assert calls["fullmatch"] <= len(matched) * math.ceil(math.log2(count))
    assert len(scanned) == 1


@pytest.mark.parametrize(
    ("rules", "text", "expected"),
    [
        ([("b", "<b>"), ("ab", "<ab>")], "ab", "<ab>"),  # the leftmost match wins
        ([("a", "<a>"), ("ab", "<ab>")], "ab", "<a>b"),  # an earlier rule wins a tie
        ([("ab", "<ab>"), ("a", "<a>")], "ab a", "<ab> <a>"),
        ([("x", "<y>"), ("<y>", "<z>")], "x <y>", "<y> <z>"),  # a placeholder is not rescanned
        ([("a+", "<a>"), ("[ab]+", "<ab>")], "baab", "<ab>"),
        ([(r"\bid\b", "<id>"), ("id", "<i>")], "id kid", "<id> k<i>"),  # in place: \b sees
        ([("o$", "<end>"), ("o", "<o>")], "oo", "<o><end>"),  # what is around the match
    ],
)
def test_one_pass_semantics(rules, text, expected):
    norm = Normaliser([], [HarnessRule(p, h) for p, h in rules])
    assert norm.text(text) == expected


PATTERNS = [
    "a",
    "b",
    "ab",
    "ba",
    "a+",
    "b+a",
    "[ab]b",
    "(?:ab)+",
    "a|ba",
    "a b",
    r"\ba",
    r"a\b",
    r"\Bb",
    "^a",
    "b$",
    "(?m)^b",
    "(?i)A",
    "a.b",
]


def _reference(rules: list[str], text: str) -> str:
    """What the docstring says, done the slow way: at each place, the first rule that
    matches there (in place) replaces its own match; else the character is kept."""
    compiled = [re2.compile(pattern) for pattern in rules]
    out, place = [], 0
    while place < len(text):
        for number, pattern in enumerate(compiled):
            found = pattern.match(text, place)
            if found is not None:
                out.append(f"<{number}>")
                place = found.end()
                break
        else:
            out.append(text[place])
            place += 1
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=8),
    st.text(alphabet="ab \n", max_size=30),
)
def test_one_pass_is_the_leftmost_match_of_the_first_rule(rules, text):
    norm = Normaliser([], [HarnessRule(p, f"<{n}>") for n, p in enumerate(rules)])
    assert norm.text(text) == _reference(rules, text)


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (r"(?P<n>x)", "names a group"),
        (r"\Qab", r"does not end where it seems to"),
        (r"a)|(?i)(?:b", "not valid RE2"),
        (r"\pL{1000}", "not valid RE2"),
    ],
)
def test_a_rule_that_cannot_be_one_alternative_is_refused(pattern, words):
    with pytest.raises(NormaliseProblem, match=re.escape(words)):
        Normaliser([], [HarnessRule("fine", "<f>"), HarnessRule(pattern, "<x>")])


def test_rules_too_large_together_are_refused():
    rules = [HarnessRule(r"\pL{40}" + str(n), "<x>") for n in range(20)]
    with pytest.raises(NormaliseProblem, match="too large together: the first 9 of 20"):
        Normaliser([], rules)


# -- the tree: measured from its listing, before anything is written --------------------


def _commit_of_tree(repo: Repo, tree: str) -> str:
    when = {"GIT_AUTHOR_DATE": "@1767225600 +0000", "GIT_COMMITTER_DATE": "@1767225600 +0000"}
    return git(repo.path, "commit-tree", "-m", "hand-made", tree, env=when).strip()


def _fan_out(repo: Repo, width: int, depth: int) -> str:
    """A commit whose tree lists ``width ** depth`` paths, made of ``depth`` small trees
    (each folder the same tree again) and one blob: kilobytes in the repository."""
    blob = git(repo.path, "hash-object", "-w", "--stdin", input=b"hi\n").strip()
    listing = "".join(f"100644 blob {blob}\tf{n}\n" for n in range(width))
    tree = git(repo.path, "mktree", input=listing.encode()).strip()
    for _ in range(depth - 1):
        listing = "".join(f"040000 tree {tree}\td{n}\n" for n in range(width))
        tree = git(repo.path, "mktree", input=listing.encode()).strip()
    return _commit_of_tree(repo, tree)


def _cached(cache: Path, commit: str) -> list[str]:
    """What the tree cache holds of ``commit`` (its export, marker, work folders)."""
    trees = cache / "tracework" / "captures" / "trees"
    return (
        sorted(p.name for p in trees.glob("*") if commit[:12] in p.name) if trees.is_dir() else []
    )


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder


def test_a_million_paths_from_a_small_repository_are_refused_unread(make_repo, cache, monkeypatch):
    """The finding: a 168 KB repository became 300,001 files.  Here three small trees
    list 1,000,000 paths; the listing is read as far as the default cap of 50,000 files
    and no further, and nothing is written."""
    repo = make_repo("fan")
    commit = _fan_out(repo, 100, 3)
    read = Counter[str]()
    records = tree_module._records

    def counted(stream):
        for record in records(stream):
            read["records"] += 1
            yield record

    monkeypatch.setattr(tree_module, "_records", counted)
    with pytest.raises(TreeTooLarge) as raised:
        export_tree(Mirror(repo.path / ".git"), commit)
    assert "holds more than 50,000 files, the cap of [limits] tree_files = 50000" in str(
        raised.value
    )
    assert "raise [limits] tree_files" in (raised.value.hint or "")
    assert read["records"] == 50_001
    assert _cached(cache, commit) == []


def test_one_blob_at_many_paths_counts_at_each(make_repo, cache):
    """The finding: a 2.2 MB mirror became 2.1 GB in the cache, one large blob at many
    paths.  Every path counts at its blob's size, and the cap is checked first."""
    repo = make_repo("wide")
    blob = git(repo.path, "hash-object", "-w", "--stdin", input=b"x" * (1 << 20)).strip()
    listing = "".join(f"100644 blob {blob}\tcopy-{n}.bin\n" for n in range(3))
    commit = _commit_of_tree(repo, git(repo.path, "mktree", input=listing.encode()).strip())
    mirror = Mirror(repo.path / ".git")
    with pytest.raises(
        TreeTooLarge, match=r"more than 2 MiB of files, the cap of \[limits\] tree_mib"
    ):
        export_tree(mirror, commit, Limits(tree_mib=2))
    assert _cached(cache, commit) == []
    exported = export_tree(mirror, commit, Limits(tree_mib=3))  # 3 MiB: at the cap, not past
    assert sorted(p.name for p in exported.iterdir()) == [f"copy-{n}.bin" for n in range(3)]
    with pytest.raises(TreeTooLarge, match=r"tree_files = 2"):
        export_tree(mirror, commit, Limits(tree_files=2))  # a cached export is measured too


# -- whole captures: a harness past a cap fails like any harness fault -------------------


HEAD = "from tracework_harness import capture\n"
SENDS = {
    "cases": "for n in range(50):\n"
    "    with capture.case(f'C-{n}', 'q?') as c:\n"
    "        c.check('x', holds=True, observed='y')\n",
    "tables": "for n in range(50):\n    capture.table(f't{n}', ['n'], [[n]])\n",
    "rows": "capture.table('t', ['n'], [[n] for n in range(50)])\n",
    "rules": "for n in range(50):\n    capture.normalise(f'r{n}-[0-9]+', f'<r{n}>')\n",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("setting", "cap", "message"),
    [("cases", 3, 11), ("tables", 2, 4), ("rows", 20, 2), ("rules", 5, 7)],
)
def test_a_harness_past_a_cap_fails_and_keeps_its_log(pinned, tw, setting, cap, message):
    setup = capture_workspace(pinned, tw)
    limits = f"[limits]\n{setting} = {cap}\n"
    setup.write("cap", PLAIN_HARNESS, toml=limits)
    assert setup.capture("cap").exit_code == 0
    kept = snapshot(setup.folder("cap"))
    setup.write("cap", HEAD + "print('the log is kept')\n" + SENDS[setting], toml=limits)
    result = setup.capture("cap")
    assert result.exit_code == 1, result.output
    error = one_error(result)
    assert f"the harness sent more than its limits allow: protocol message {message} " in error
    assert f"the cap of [limits] {setting} = {cap}" in error
    assert f"raise [limits] {setting} in captures/cap.toml" in error
    assert "the previous capture is untouched" in error
    assert snapshot(setup.folder("cap")) == kept
    assert "the log is kept" in (setup.failed("cap") / "log.txt").read_text()


@pytest.mark.slow
def test_the_declarations_tree_caps_reach_the_export(pinned, tw):
    setup = capture_workspace(pinned, tw)
    setup.write("cap", PLAIN_HARNESS, toml="[limits]\ntree_files = 2\n")
    result = tw("capture", "env", "cap")
    assert result.exit_code == 2, result.output
    assert "the cap of [limits] tree_files = 2" in one_error(result)
