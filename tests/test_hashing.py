"""The hash rule and the line rule, checked against real git and coreutils.

A file's hash must equal ``git show C:P | sha256sum`` and a span's hash (for a span
whose last line ends in a newline) ``git show C:P | sed -n 'A,Bp' | sha256sum``.
Lines are split on ``\\n`` only: CR, form feed, U+2028 and friends stay inside a line.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from tracework.hashing import Lines, display_text, is_binary, sha256_hex

# Files whose line structure is easy to get wrong.  Each value is the exact blob.
AWKWARD: dict[str, bytes] = {
    "crlf.txt": b"first row\r\nsecond row\r\n\r\nfourth row\r\n",
    "no_final_newline.py": b"alpha = 1\nbeta = 2\ngamma = alpha + beta",
    "separators.txt": (
        b"page one\x0cpage two\n"  # form feed
        + "left\u2028right\u2029end\n".encode()  # LINE / PARAGRAPH SEPARATOR
        + b"carriage\rreturn alone\n"  # lone CR
        + b"tab\x0bvt\x1cfs\x1dgs\x1ers\n"  # vertical tab and the ASCII separators
        + "next\x85line\n".encode()  # NEL (U+0085) as UTF-8
        + b"last\n"
    ),
    "latin1.txt": b"caf\xe9 cr\xe8me\nna\xefve \xbfqu\xe9?\n\xff\xfe\xfd\n",
    "empty.txt": b"",
    "only_newline.txt": b"\n",
    "blank_lines.txt": b"\n\n\n",
    "mixed_endings.txt": b"dos\r\nmac\rstill mac\nunix\n\nno end",
    "lone_cr_last.txt": b"ends with a carriage return\r",
}

#: Line counts as git (and ``wc -l`` plus one unterminated last line) count them.
EXPECTED_LINES = {
    "crlf.txt": 4,
    "no_final_newline.py": 3,
    "separators.txt": 6,
    "latin1.txt": 3,
    "empty.txt": 0,
    "only_newline.txt": 1,
    "blank_lines.txt": 3,
    "mixed_endings.txt": 5,
    "lone_cr_last.txt": 1,
}


def shell(cwd: Path, script: str) -> bytes:
    """Run a bash pipeline (pipefail on) with a neutral git config; return stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "LC_ALL": "C"})
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True, check=True
    )
    return proc.stdout


def sha256sum_output(raw: bytes) -> str:
    """The hex digest from a ``sha256sum`` line (``<hex>  -``)."""
    digest = raw.split()[0].decode()
    assert len(digest) == 64
    return digest


def git_split(data: bytes) -> list[bytes]:
    """The reference line split: after every b"\\n" and nowhere else, keeping the ends."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


@pytest.fixture
def awkward_repo(make_repo):
    repo = make_repo("awkward")
    for name, data in AWKWARD.items():
        repo.write(name, data)
    repo.commit("awkward files")
    return repo


# -- against git and coreutils ------------------------------------------------------------


def test_the_fixture_bytes_reach_git_unchanged(awkward_repo):
    commit = awkward_repo.commits[-1]
    for name, data in AWKWARD.items():
        assert shell(awkward_repo.path, f"git show {commit}:{shlex.quote(name)}") == data


@pytest.mark.parametrize("name", sorted(AWKWARD))
def test_file_hash_equals_git_show_piped_to_sha256sum(awkward_repo, name):
    commit = awkward_repo.commits[-1]
    expected = sha256sum_output(
        shell(awkward_repo.path, f"git show {commit}:{shlex.quote(name)} | sha256sum")
    )
    assert sha256_hex(AWKWARD[name]) == expected


@pytest.mark.parametrize("name", sorted(AWKWARD))
def test_line_count_is_what_git_counts(awkward_repo, name):
    commit = awkward_repo.commits[-1]
    data = AWKWARD[name]
    newlines = int(shell(awkward_repo.path, f"git show {commit}:{shlex.quote(name)} | wc -l"))
    unterminated = 1 if data and not data.endswith(b"\n") else 0
    assert len(Lines(data)) == newlines + unterminated == EXPECTED_LINES[name]


@pytest.mark.parametrize("name", [n for n in sorted(AWKWARD) if AWKWARD[n]])
def test_every_span_hash_equals_sed_piped_to_sha256sum(awkward_repo, name):
    """All spans of the file; for spans ending in a newline sed must agree exactly.

    GNU sed also keeps a missing final newline missing, so it agrees on the last
    line of a file without one too; the test checks both kinds.
    """
    commit = awkward_repo.commits[-1]
    data = AWKWARD[name]
    lines = Lines(data)
    spans = [(a, b) for a in range(1, len(lines) + 1) for b in range(a, len(lines) + 1)]
    blob = f"{commit}:{shlex.quote(name)}"
    script = "; ".join(f"git show {blob} | sed -n '{a},{b}p' | sha256sum" for a, b in spans)
    sums = shell(awkward_repo.path, script).splitlines()
    assert len(sums) == len(spans)
    checked_terminated = 0
    for (a, b), raw in zip(spans, sums, strict=True):
        span = lines.span(a, b)
        assert span == b"".join(git_split(data)[a - 1 : b])
        assert sha256_hex(span) == sha256sum_output(raw), (name, a, b, span)
        checked_terminated += span.endswith(b"\n")
    assert checked_terminated > 0 or name in {"lone_cr_last.txt"}


def test_separators_other_than_newline_stay_inside_their_line():
    lines = Lines(AWKWARD["separators.txt"])
    assert lines.span(1, 1) == b"page one\x0cpage two\n"
    assert lines.span(2, 2) == "left\u2028right\u2029end\n".encode()
    assert lines.span(3, 3) == b"carriage\rreturn alone\n"
    assert lines.span(5, 5) == "next\x85line\n".encode()
    # the trap this guards against: str.splitlines() sees many more lines
    text = AWKWARD["separators.txt"].decode("utf-8")
    assert len(text.splitlines()) > len(lines) == 6


def test_crlf_lines_keep_their_carriage_return():
    lines = Lines(AWKWARD["crlf.txt"])
    assert lines.span(2, 3) == b"second row\r\n\r\n"
    assert lines.text_lines() == [b"first row\r\n", b"second row\r\n", b"\r\n", b"fourth row\r\n"]


def test_missing_final_newline_makes_a_short_last_line():
    lines = Lines(AWKWARD["no_final_newline.py"])
    assert lines.span(3, 3) == b"gamma = alpha + beta"
    assert lines.span(2, 3) == b"beta = 2\ngamma = alpha + beta"


def test_empty_file_has_no_lines_and_no_spans():
    lines = Lines(b"")
    assert len(lines) == 0
    assert lines.text_lines() == []
    assert lines.find_span(b"x") == []
    with pytest.raises(IndexError):
        lines.span(1, 1)


def test_a_file_that_is_only_a_newline_has_one_empty_line():
    lines = Lines(b"\n")
    assert len(lines) == 1
    assert lines.span(1, 1) == b"\n"
    assert lines.find_span(b"\n") == [(1, 1)]
    with pytest.raises(IndexError):
        lines.span(2, 2)


def test_latin1_bytes_are_hashed_raw_and_shown_with_replacement_characters():
    data = AWKWARD["latin1.txt"]
    lines = Lines(data)
    assert lines.span(1, 1) == b"caf\xe9 cr\xe8me\n"
    assert sha256_hex(lines.span(1, 1)) == hashlib.sha256(b"caf\xe9 cr\xe8me\n").hexdigest()
    assert display_text(lines.span(1, 1)) == "caf\ufffd cr\ufffdme\n"


@pytest.mark.parametrize(("first", "last"), [(0, 1), (2, 1), (1, 4), (4, 4), (-1, 2)])
def test_span_outside_the_file_raises(first, last):
    with pytest.raises(IndexError):
        Lines(b"a\nb\nc\n").span(first, last)


@pytest.mark.slow
def test_registered_and_quoted_hashes_match_git_and_sed(pinned, tw):
    """End to end: what `register add-file` and `quote` store equals the shell's sums."""
    repo = pinned(
        {
            "win.py": b"def a():\r\n    return 1\r\n\r\ndef b():\r\n    return 2\r\n",
            "tail.py": b"x = 1\ny = 2",
            "odd.txt": b"f\x0cg\nh\xe2\x80\xa8i\nj\rk\n\xe9t\xe9\n",
        }
    )
    commit = repo.commits[0]
    assert (
        tw("register", "add-file", "demo", "SRC-1", "win.py", "tail.py", "odd.txt").exit_code == 0
    )
    for args in (
        ("win.py", "--lines", "2-4", "--id", "Q-win"),
        ("odd.txt", "--lines", "1-3", "--id", "Q-odd"),
        ("odd.txt", "--lines", "4-4", "--id", "Q-latin"),
        ("tail.py", "--lines", "1-1", "--id", "Q-tail"),
    ):
        result = tw("quote", "demo", "SRC-1", *args)
        assert result.exit_code == 0, result.output
    doc = YAML(typ="safe").load(Path("registers/demo.yaml").read_text(encoding="utf-8"))
    files = doc["sources"]["SRC-1"]["files"]
    for name in ("win.py", "tail.py", "odd.txt"):
        want = sha256sum_output(shell(repo.path, f"git show {commit}:{name} | sha256sum"))
        assert files[name]["sha256"] == want
    for qid, name, (a, b) in (
        ("Q-win", "win.py", (2, 4)),
        ("Q-odd", "odd.txt", (1, 3)),
        ("Q-latin", "odd.txt", (4, 4)),
        ("Q-tail", "tail.py", (1, 1)),
    ):
        quote = doc["quotes"][qid]
        assert quote["lines"] == [a, b]
        want = sha256sum_output(
            shell(repo.path, f"git show {commit}:{name} | sed -n '{a},{b}p' | sha256sum")
        )
        assert quote["sha256"] == want, qid
    assert doc["quotes"]["Q-win"]["text"] == "    return 1\r\n\r\ndef b():\r\n"
    assert doc["quotes"]["Q-odd"]["text"] == "f\x0cg\nh\u2028i\nj\rk\n"


# -- find_span, line_of_offset, is_binary -------------------------------------------------


def test_find_span_only_matches_whole_lines():
    lines = Lines(b"alpha\nbeta\nalphabet\nbeta\n")
    assert lines.find_span(b"beta\n") == [(2, 2), (4, 4)]
    assert lines.find_span(b"alpha\n") == [(1, 1)]  # not the tail of "alphabet"
    assert lines.find_span(b"lpha\n") == []  # starts mid-line
    assert lines.find_span(b"alpha") == []  # stops mid-line (its newline is missing)
    assert lines.find_span(b"") == []


def test_find_span_reports_overlapping_places():
    lines = Lines(b"same\nsame\nsame\n")
    assert lines.find_span(b"same\nsame\n") == [(1, 2), (2, 3)]


def test_find_span_matches_an_unterminated_last_line_at_the_end_only():
    lines = Lines(b"tail\nhead\ntail")
    assert lines.find_span(b"tail") == [(3, 3)]
    assert lines.find_span(b"head\ntail") == [(2, 3)]


def test_line_of_offset_counts_newlines_before_the_offset():
    data = b"ab\n\ncd\r\ne"
    lines = Lines(data)
    for offset in range(len(data)):
        assert lines.line_of_offset(offset) == data[:offset].count(b"\n") + 1


def test_binary_is_a_nul_within_the_first_8000_bytes_like_git():
    assert is_binary(b"text\0more")
    assert is_binary(b"x" * 7999 + b"\0")
    assert not is_binary(b"x" * 8000 + b"\0")
    assert not is_binary("UTF-8 text ☃\n".encode())
    assert is_binary("utf-16 text\n".encode("utf-16"))


def test_sha256_hex_is_full_lowercase_hex():
    digest = sha256_hex(b"tracework")
    assert digest == hashlib.sha256(b"tracework").hexdigest()
    assert len(digest) == 64 and digest == digest.lower()


# -- properties -----------------------------------------------------------------------------

PIECES = st.sampled_from(
    [b"\n", b"\r", b"\r\n", b"\x0c", b"\x0b", b"\x85", "\u2028".encode(), b"\0", b"\xe9", b"a"]
)
CONTENT = st.lists(PIECES | st.binary(max_size=6), max_size=40).map(b"".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, database=None)
@example(b"", 1, 1)
@example(b"\n", 1, 1)
@example(b"a\rb\x0cc\nd", 1, 2)
@given(CONTENT, st.integers(1, 30), st.integers(0, 30))
def test_span_equals_split_on_newline_with_ends_kept(data, first, length):
    reference = git_split(data)
    lines = Lines(data)
    assert len(lines) == len(reference)
    assert lines.text_lines() == reference
    assert b"".join(lines.text_lines()) == data
    last = first + length
    if last <= len(reference):
        span = lines.span(first, last)
        assert span == b"".join(reference[first - 1 : last])
        assert (first, last) in lines.find_span(span)
        for a, b in lines.find_span(span):
            assert lines.span(a, b) == span
    else:
        with pytest.raises(IndexError):
            lines.span(first, last)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, database=None)
@given(st.data())
def test_find_span_finds_every_valid_span_at_its_own_place(data):
    content = data.draw(CONTENT.filter(bool))
    lines = Lines(content)
    first = data.draw(st.integers(1, len(lines)))
    last = data.draw(st.integers(first, len(lines)))
    span = lines.span(first, last)
    found = lines.find_span(span)
    assert (first, last) in found
    # every place found is a real occurrence of those exact bytes as whole lines
    reference = git_split(content)
    for a, b in found:
        assert b"".join(reference[a - 1 : b]) == span


@pytest.mark.parametrize("indexed", [False, True])
def test_holds_at_needs_a_span_without_newline_to_end_the_file(indexed):
    lines = Lines(b"b\na\n\na\nb\nb\nb")
    if indexed:
        assert len(lines.starts) == 7
    assert not lines.holds_at(1, b"b")  # line 1 is b"b\n"; b"b" alone is only line 7
    assert lines.holds_at(7, b"b")


@pytest.mark.slow
@settings(max_examples=300, deadline=None, database=None)
@given(st.data(), st.booleans(), st.integers(1, 40))
def test_holds_at_agrees_with_find_span_with_and_without_the_index(data, indexed, probe):
    """The index-free fast path and the indexed path answer as find_span does."""
    content = data.draw(CONTENT.filter(bool))
    reference = Lines(content)
    first = data.draw(st.integers(1, len(reference)))
    last = data.draw(st.integers(first, len(reference)))
    span = reference.span(first, last)
    places = {a for a, _b in reference.find_span(span)}
    lines = Lines(content)
    if indexed:
        assert len(lines.starts) == len(reference)
    for line in (first, probe, 1, len(reference), len(reference) + 1):
        assert lines.holds_at(line, span) == (line in places)
