"""The fast path of a new quote: spliced into the register's bytes, it must give exactly
what the full round-trip edit gives (the YAML and the compiled copy), and fall back to
the full edit whenever anything is unusual."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracework.register.store as reg
from tracework.errors import RegisterError
from tracework.git.subjects import open_mirror
from tracework.register import append
from tracework.register.append import Change
from tracework.register.evidence import file_entry
from tracework.register.quotes import (
    QuoteRequest,
    add_quote,
    default_quote_id,
    locate_quote,
    write_quotes,
)

# lines a register stores in every style: literal blocks, quoted scalars (trailing
# blanks, a tab, a lone CR), text YAML would read as something else, non-ASCII
LINES = [
    "def put(self, key, value):\n",
    "    self.items[key] = value  \n",
    "\tindented by a tab\n",
    "# a comment line\n",
    "x: 1\n",
    "- item\n",
    "'quoted' \"twice\"\n",
    "naïve café — ✓\n",
    # text shaped like the compiled copy's keys and rows, which is searched as text
    '{"Q-given":["SRC-1","pkg/a.py",[1,2],null,"0"],"Q-other":[\n',
    '":["SRC-1","pkg/b.txt",[1,1],\\",\n',
    "\n",
    "carriage\rreturn\n",
    "    return key\n",
    "null\n",
    "|\n",
    "ends without newline",
]
TEXT = "".join(LINES)
FILES = {
    "pkg/a.py": TEXT,
    "pkg/b.txt": "one\ntwo\nthree\n",
    "pkg/c.md": "# Notes\n\n- first\n- second\n",  # never quoted by the seed
}


def register_files(workspace) -> dict[str, bytes]:
    folder = workspace.registers
    names = ("demo.yaml", ".demo.yaml.compiled.json", ".demo.yaml.splice.compiled.json")
    return {n: (folder / n).read_bytes() for n in names if (folder / n).exists()}


def restore(workspace, files: dict[str, bytes]) -> None:
    for path in workspace.registers.glob("*demo.yaml*"):
        path.unlink()
    for name, data in files.items():
        (workspace.registers / name).write_bytes(data)


@pytest.fixture
def seeded(pinned, workspace):
    pinned(FILES)
    path = workspace.registers / "demo.yaml"
    # the first quotes take the full path (an empty `quotes: {}` has no splice point)
    add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(1, 2)))
    add_quote(workspace, path, "SRC-1", "pkg/b.txt", QuoteRequest(lines=(1, 1)))
    return path


spans = st.lists(
    st.tuples(
        st.sampled_from(sorted(FILES)),
        st.integers(1, len(LINES)),
        st.integers(0, 3),
        st.sampled_from([None, "Q-given", "Q-a-1-2", "Q-b-1-1", "Q-other"]),
        st.booleans(),  # replace
    ),
    min_size=1,
    max_size=4,
)


def assert_same(outcomes: list[tuple[object, dict[str, bytes]]]) -> None:
    """The fast and the full way gave the same answer and left the same files."""
    (fast, fast_files), (full, full_files) = outcomes
    assert fast == full
    assert fast_files.keys() == full_files.keys()
    for name in fast_files:
        assert fast_files[name].decode() == full_files[name].decode(), name


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=spans)
def test_the_fast_path_writes_exactly_what_the_full_edit_writes(
    seeded, workspace, monkeypatch, steps
):
    start = register_files(workspace)
    try:
        for path, first, extra, qid, replace in steps:
            last = min(first + extra, 3 if path == "pkg/b.txt" else len(LINES))
            first = min(first, last)
            request = QuoteRequest(lines=(first, last))
            replace = replace and qid is not None
            before = register_files(workspace)
            outcomes = []
            for fast in (True, False):
                restore(workspace, before)
                with monkeypatch.context() as patch:
                    if not fast:
                        patch.setattr(append, "_recall", lambda *_: None)
                    try:
                        added = add_quote(
                            workspace, seeded, "SRC-1", path, request, qid, replace=replace
                        )
                        outcomes.append((tuple(added), register_files(workspace)))
                    except Exception as exc:  # the same refusal, both ways
                        outcomes.append(((type(exc).__name__, str(exc)), register_files(workspace)))
            assert_same(outcomes)
    finally:
        restore(workspace, start)


batches = st.lists(
    st.tuples(
        st.sampled_from(sorted(FILES)),
        st.integers(1, 2),
        st.integers(0, 1),
        st.sampled_from([None, "Q-a-1-2", "Q-b-1-1"]),  # replace that id, or add
    ),
    min_size=1,
    max_size=5,
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=batches)
def test_a_batch_writes_exactly_what_the_full_edit_writes(seeded, workspace, monkeypatch, steps):
    """A cell's quotes written at once (new files, additions, replacements) give the
    bytes one full edit gives for the same changes."""
    start = register_files(workspace)
    mirror = open_mirror(workspace, "toy")
    pin = reg.load(seeded).git_source("SRC-1")
    changes: dict[str, Change] = {}
    for path, first, extra, replaced in steps:
        request = QuoteRequest(lines=(first, first + extra))
        quote, entry = locate_quote(mirror, pin.commit, "SRC-1", path, request)
        qid = replaced or default_quote_id(quote)
        fresh = path not in pin.files and all(c.quote.path != path for c in changes.values())
        file = file_entry(entry, mirror.read_blob(entry.oid)) if fresh else None
        if qid not in changes:
            changes[qid] = Change(qid, quote, replace=replaced is not None, file=file)
    try:
        outcomes = []
        for fast in (True, False):
            restore(workspace, start)
            with monkeypatch.context() as patch:
                if not fast:
                    patch.setattr(append, "_recall", lambda *_: None)
                try:
                    write_quotes(seeded, list(changes.values()))
                    outcomes.append(("written", register_files(workspace)))
                except Exception as exc:  # the same refusal, both ways
                    outcomes.append(((type(exc).__name__, str(exc)), register_files(workspace)))
        assert_same(outcomes)
    finally:
        restore(workspace, start)


def test_a_replacement_and_a_batch_take_the_fast_path(seeded, workspace, monkeypatch):
    """Replacing a quote, and a cell's quotes with a file not registered yet, splice the
    register: the full edit is never entered."""
    import tracework.register.edits as regy

    def full_edit(*args: object) -> None:
        raise AssertionError("the full edit ran")

    monkeypatch.setattr(regy, "edit", full_edit)
    request = QuoteRequest(lines=(3, 4))
    swapped = add_quote(workspace, seeded, "SRC-1", "pkg/a.py", request, "Q-a-1-2", replace=True)
    assert swapped.replaced is not None and swapped.replaced.lines == (1, 2)
    assert reg.load(seeded).quotes["Q-a-1-2"].lines == (3, 4)
    mirror = open_mirror(workspace, "toy")
    pin = reg.load(seeded).git_source("SRC-1")
    quote, entry = locate_quote(mirror, pin.commit, "SRC-1", "pkg/c.md", QuoteRequest((3, 4)))
    file = file_entry(entry, mirror.read_blob(entry.oid))
    other, _ = locate_quote(mirror, pin.commit, "SRC-1", "pkg/b.txt", QuoteRequest((2, 3)))
    digest = write_quotes(seeded, [Change("Q-c", quote, file=file), Change("Q-b2", other)])
    assert digest is not None
    held = reg.load(seeded)
    assert held.quotes["Q-c"].lines == (3, 4) and "pkg/c.md" in held.git_source("SRC-1").files
    assert list(held.quotes)[-2:] == ["Q-c", "Q-b2"]


def test_a_batch_refuses_an_id_another_writer_took_and_writes_nothing(seeded, workspace):
    mirror = open_mirror(workspace, "toy")
    pin = reg.load(seeded).git_source("SRC-1")
    mine, _ = locate_quote(mirror, pin.commit, "SRC-1", "pkg/a.py", QuoteRequest((5, 5)))
    add_quote(workspace, seeded, "SRC-1", "pkg/a.py", QuoteRequest((6, 6)), "Q-x")  # theirs
    before = seeded.read_bytes()
    other, _ = locate_quote(mirror, pin.commit, "SRC-1", "pkg/b.txt", QuoteRequest((2, 2)))
    with pytest.raises(RegisterError, match="Q-x is taken since this cell quoted it"):
        write_quotes(seeded, [Change("Q-b-2-2", other), Change("Q-x", mine)])
    assert seeded.read_bytes() == before
    assert reg.load(seeded).quotes["Q-x"].lines == (6, 6)


def test_a_new_quote_in_a_large_register_takes_the_fast_path(seeded, workspace, monkeypatch):
    """No round-trip parse of the whole register: the full edit is never entered."""
    import tracework.register.edits as regy

    def full_edit(*args: object) -> None:
        raise AssertionError("the full edit ran")

    monkeypatch.setattr(regy, "edit", full_edit)
    added = add_quote(workspace, seeded, "SRC-1", "pkg/a.py", QuoteRequest(lines=(5, 6)))
    again = add_quote(workspace, seeded, "SRC-1", "pkg/a.py", QuoteRequest(lines=(5, 6)))
    assert added.quote_id == again.quote_id == "Q-a-5-6"
    assert reg.load(seeded).quotes["Q-a-5-6"].lines == (5, 6)
    assert reg.load_data(seeded).quotes["Q-a-5-6"].lines == (5, 6)


def test_a_hand_edit_since_takes_the_full_edit_and_keeps_its_comments(
    seeded, workspace, monkeypatch
):
    text = seeded.read_text()
    seeded.write_text(text.replace("sources:\n", "# mine, by hand\nsources:\n", 1))
    calls = []
    original = append.append_quote

    def spy(*args: object) -> object:
        calls.append(result := original(*args))  # type: ignore[arg-type]
        return result

    monkeypatch.setattr("tracework.register.quotes.append_quote", spy)
    add_quote(workspace, seeded, "SRC-1", "pkg/a.py", QuoteRequest(lines=(7, 7)))
    assert calls == [None]  # stale splice point: the full edit ran
    assert "# mine, by hand\nsources:\n" in seeded.read_text()
    add_quote(workspace, seeded, "SRC-1", "pkg/a.py", QuoteRequest(lines=(8, 8)))
    assert calls[1] is not None  # the full edit left a splice point for the new bytes
    assert "# mine, by hand\nsources:\n" in seeded.read_text()


@pytest.mark.parametrize(
    "forge",
    [
        lambda data: data.replace(b'"offset": ', b'"offset": 1'),  # moved, seal kept
        lambda data: b"{}",
        lambda data: b"not json",
    ],
)
def test_a_forged_or_broken_splice_point_is_never_used(seeded, workspace, forge):
    side = workspace.registers / ".demo.yaml.splice.compiled.json"
    side.write_bytes(forge(side.read_bytes()))
    before = seeded.read_bytes()
    add_quote(workspace, seeded, "SRC-1", "pkg/a.py", QuoteRequest(lines=(9, 9)))
    after = seeded.read_text()
    assert after.startswith(before.decode()[:100])
    assert reg.load(seeded).quotes["Q-a-9-9"].lines == (9, 9)


def test_splice_point_refuses_layouts_it_does_not_know():
    assert append.splice_point("quotes: {}\n") is None
    assert append.splice_point("quotes:\n  # first a comment\n  Q-a: {}\n") is None
    assert append.splice_point("quotes:\n  Q-a: {}\n# a comment\nchecks: []\n") is None
    assert append.splice_point("quotes:\n  Q-a: {}\n\nchecks: []\n") is None
    assert append.splice_point("quotes:\n  Q-a: {}\nchecks: []\n") == len("quotes:\n  Q-a: {}\n")
    assert append.splice_point("quotes:\n  Q-a: {}") is None  # no final newline
    assert append.splice_point("quotes:\n  Q-a: {}\n") is None  # nothing after it


def test_no_cache_folder_means_no_splice_point(seeded, workspace, monkeypatch):
    monkeypatch.setattr(reg, "seal_key", lambda: None)
    add_quote(workspace, seeded, "SRC-1", "pkg/a.py", QuoteRequest(lines=(10, 10)))
    assert not Path(workspace.registers / ".demo.yaml.splice.compiled.json").exists()
