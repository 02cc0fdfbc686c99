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
from tracework.hashing import sha256_hex
from tracework.readers import load_yaml
from tracework.register import append, layout
from tracework.register import edits as regy
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


def hand_kept(text: str, commit: str) -> str:
    """The register tracework wrote, laid out as a hand-kept (or older) one may be: the
    history first and the quotes last, each key under a comment of its own, a comment
    ending the document."""
    head, rest = text.split("version: 1\n")
    sources = rest[rest.index("sources:\n") : rest.index("quotes:\n")]
    quotes = rest[rest.index("quotes:\n") : rest.index("checks: []\n")]
    checks = (
        f"checks:\n  - date: '2026-01-02'\n    source: SRC-1\n    commit: {commit}\n"
        "    counts: {verified: 2}\n"
    )
    return (
        f"{head}version: 1\nname: demo\n# the history, first\n{checks}"
        f"# where the evidence comes from\n{sources}# the evidence\n{quotes}# the end\n"
    )


@pytest.fixture(params=["usual", "hand-kept"])
def seeded(request, pinned, workspace):
    """A register of two quotes, in the usual layout or (normalised by one write since)
    in a hand-kept one."""
    repo = pinned(FILES)
    path = workspace.registers / "demo.yaml"
    # the first quotes take the full path (an empty `quotes: {}` has no splice point)
    add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(1, 2)))
    add_quote(workspace, path, "SRC-1", "pkg/b.txt", QuoteRequest(lines=(1, 1)))
    if request.param == "hand-kept":
        path.write_text(hand_kept(path.read_text(), repo.commits[0]))
        add_quote(workspace, path, "SRC-1", "pkg/b.txt", QuoteRequest(lines=(3, 3)))
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


@pytest.mark.parametrize("first", [True, False], ids=["empty-then-full", "full-then-empty"])
def test_a_new_file_lands_in_its_own_source_when_another_has_files(
    pinned, tw, workspace, monkeypatch, first
):
    """A source whose ``files: {}`` is empty, beside one with files: the new file goes in
    its own source.  The splice once looked for the first ``files:`` after the source's
    key, which was the other source's, and wrote the file there (the compiled copy said
    otherwise, and the YAML no longer loaded: its quote cited a file not registered)."""
    repo = pinned(FILES)
    path = workspace.registers / "demo.yaml"
    other = "SRC-2" if first else "SRC-1"
    empty = "SRC-1" if first else "SRC-2"
    pin = ("--subject", "toy", "--commit", repo.commits[0])
    assert tw("register", "add-source", "demo", "SRC-2", *pin).exit_code == 0
    assert tw("register", "add-file", "demo", other, "pkg/b.txt").exit_code == 0
    add_quote(workspace, path, other, "pkg/b.txt", QuoteRequest(lines=(1, 1)))  # a splice point
    mirror = open_mirror(workspace, "toy")
    quote, entry = locate_quote(mirror, repo.commits[0], empty, "pkg/c.md", QuoteRequest((1, 1)))
    change = Change("Q-c", quote, file=file_entry(entry, mirror.read_blob(entry.oid)))
    start = register_files(workspace)
    outcomes = []
    for fast in (True, False):
        restore(workspace, start)
        with monkeypatch.context() as patch:
            if not fast:
                patch.setattr(append, "_recall", lambda *_: None)
            else:
                patch.setattr(regy, "edit", fails_if_entered)
            write_quotes(path, [change])
        outcomes.append(("written", register_files(workspace)))
    assert_same(outcomes)
    files = {sid: set(src["files"]) for sid, src in load_yaml(path.read_text())["sources"].items()}
    assert files == {empty: {"pkg/c.md"}, other: {"pkg/b.txt"}}
    assert set(reg.load_data(path).sources[empty].files) == {"pkg/c.md"}


def fails_if_entered(*args: object) -> None:
    raise AssertionError("the full edit ran")


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
    assert append.splice_point("quotes:\n  Q-a: {}\n\nchecks: []\n") is None
    assert append.splice_point("quotes:\n  Q-a: {}\nchecks: []\n") == len("quotes:\n  Q-a: {}\n")
    assert append.splice_point("quotes:\n  Q-a: {}") is None  # no final newline
    assert append.splice_point("quotes:\n  Q-a: {}\n") is None  # nothing after it
    assert append.splice_point("quotes:\n  Q-a: {}\n# the end\n") is None  # nor after a comment
    # keys out of the usual order: the full edit would move them, so no splice
    assert append.splice_point("checks: []\nquotes:\n  Q-a: {}\nsources: {}\n") is None
    assert append.splice_point("quotes:\n  Q-a: {}\nname: x\n") is None
    assert append.splice_point("---\nquotes:\n  Q-a: {}\nchecks: []\n") is None


def test_comment_lines_introducing_the_next_key_stay_below_the_new_quotes():
    """The full edit keeps a comment above the key it introduces and puts a new quote
    above it, so the splice point is above it too."""
    text = "quotes:\n  Q-a: {}\n# the history\n# kept by hand\nchecks: []\n"
    assert append.splice_point(text) == len("quotes:\n  Q-a: {}\n")
    text = "quotes:\n  Q-a:\n    text: |\n      # text, not a comment\nchecks: []\n"
    assert append.splice_point(text) == len(text) - len("checks: []\n")


def test_an_indented_comment_ending_the_quotes_takes_the_full_edit(pinned, workspace):
    """The full edit moves it below the new quote, re-indented as the value before it
    decides; it was once spliced above the new quote instead, giving other bytes."""
    assert append.splice_point("quotes:\n  Q-a: {}\n  # by hand\nchecks: []\n") is None
    assert append.splice_point("quotes:\n  Q-a: {}\n    # deeper\nchecks: []\n") is None
    pinned(FILES)
    path = workspace.registers / "demo.yaml"
    add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(1, 2)))
    path.write_text(path.read_text().replace("checks: []\n", "  # by hand\nchecks: []\n"))
    for line in (3, 4):
        add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(line, line)))
    text = path.read_text()
    assert text.index("Q-a-4-4:") < text.index("  # by hand\nchecks: []\n")
    record = append.written(path, sha256_hex(path.read_bytes()))
    assert record is not None and record.point is None  # written by tracework, no splice point


# -- a register in another layout: put in the usual one by its first write -------------


def spy_on_splices(monkeypatch) -> list[object]:
    """What each one-quote write's fast path returned (None: the full edit ran)."""
    calls: list[object] = []
    original = append.append_quote

    def spy(*args: object) -> object:
        calls.append(result := original(*args))  # type: ignore[arg-type]
        return result

    monkeypatch.setattr("tracework.register.quotes.append_quote", spy)
    return calls


def top_keys(path: Path) -> list[str]:
    return [line.split(":")[0] for line in path.read_text().splitlines() if line[:1].isalpha()]


def test_a_register_in_another_key_order_is_normalised_once_then_spliced(
    pinned, workspace, monkeypatch
):
    """Quotes after the checks (by hand, or an older register) once took the full edit
    on every write, forever; the first write now puts the keys in the usual order,
    comments kept above the keys they introduce, and the next write is spliced."""
    repo = pinned(FILES)
    path = workspace.registers / "demo.yaml"
    add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(1, 2)))
    add_quote(workspace, path, "SRC-1", "pkg/b.txt", QuoteRequest(lines=(1, 1)))
    path.write_text(hand_kept(path.read_text(), repo.commits[0]))
    assert top_keys(path) == ["version", "name", "checks", "sources", "quotes"]
    before = reg.load(path)
    calls = spy_on_splices(monkeypatch)

    add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(3, 3)))
    assert calls == [None]  # the first write: the full edit, which normalises
    text = path.read_text()
    assert top_keys(path) == ["version", "name", "sources", "quotes", "checks"]
    assert text.startswith("# tracework source register")
    assert "\n# where the evidence comes from\nsources:\n" in text
    assert "\n# the evidence\nquotes:\n" in text
    assert "\n# the history, first\nchecks:\n" in text
    assert text.endswith("# the end\n")
    after = reg.load(path)
    assert after.model_copy(update={"quotes": before.quotes}) == before  # nothing else moved
    assert list(after.quotes) == [*before.quotes, "Q-a-3-3"]

    add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(4, 4)))
    assert calls[1] is not None  # the second write is spliced
    add_quote(workspace, path, "SRC-1", "pkg/b.txt", QuoteRequest(lines=(2, 2)))
    assert calls[2] is not None
    assert top_keys(path) == ["version", "name", "sources", "quotes", "checks"]
    assert "\n# the history, first\nchecks:\n" in path.read_text()
    assert list(reg.load(path).quotes)[-3:] == ["Q-a-3-3", "Q-a-4-4", "Q-b-2-2"]


def test_quotes_ending_the_register_are_followed_by_checks_once(pinned, workspace, monkeypatch):
    """A hand-trimmed register without checks, ending with its quotes: the first write
    adds the empty history after them (at the end of a document the next quote could not
    be spliced), the next is spliced."""
    pinned(FILES)
    path = workspace.registers / "demo.yaml"
    add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(1, 2)))
    path.write_text(path.read_text().replace("checks: []\n", "# the last word\n"))
    calls = spy_on_splices(monkeypatch)
    add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(3, 3)))
    assert calls == [None]
    assert top_keys(path)[-2:] == ["quotes", "checks"]
    assert path.read_text().endswith("\nchecks: []\n# the last word\n")
    add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(4, 4)))
    assert calls[1] is not None


def test_a_register_without_quotes_gets_them_in_their_place(pinned, workspace, monkeypatch):
    """The first quote of a register that has no ``quotes:`` goes before the checks,
    where the usual order puts it, so the second is spliced."""
    pinned(FILES)
    path = workspace.registers / "demo.yaml"
    path.write_text(path.read_text().replace("quotes: {}\n", ""))
    assert top_keys(path) == ["version", "name", "sources", "checks"]
    calls = spy_on_splices(monkeypatch)
    add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(1, 2)))
    assert top_keys(path) == ["version", "name", "sources", "quotes", "checks"]
    add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(3, 3)))
    assert calls[0] is None and calls[1] is not None


def test_a_layout_that_cannot_be_moved_is_kept_and_written_the_slow_way(
    pinned, workspace, monkeypatch
):
    """An anchor in the history that a quote's alias needs above it: moved, the quotes
    would not read back as the same data, so the register keeps its order."""
    repo = pinned(FILES)
    path = workspace.registers / "demo.yaml"
    add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(1, 2)))
    add_quote(workspace, path, "SRC-1", "pkg/b.txt", QuoteRequest(lines=(1, 1)))
    text = hand_kept(path.read_text(), repo.commits[0])
    text = text.replace("    source: SRC-1\n    commit:", "    source: &src SRC-1\n    commit:")
    path.write_text(
        text.replace(
            "    source: SRC-1\n    path: pkg/a.py", "    source: *src\n    path: pkg/a.py"
        )
    )
    calls = spy_on_splices(monkeypatch)
    for line in (3, 4):
        add_quote(workspace, path, "SRC-1", "pkg/a.py", QuoteRequest(lines=(line, line)))
    assert calls == [None, None]
    assert top_keys(path) == ["version", "name", "checks", "sources", "quotes"]
    assert list(reg.load(path).quotes)[-2:] == ["Q-a-3-3", "Q-a-4-4"]


def test_usual_text_moves_sections_whole():
    text = (
        "# header\nname: x\nversion: 1\n# about checks\n\n# more\nchecks:\n  - 1\n\n"
        "quotes:\n  Q-a:\n    text: |+\n      kept\n\n# inside\n  Q-b: 1\n"
        "# before sources\nsources: {}\n# closing\n"
    )
    assert layout.usual_text(text) == (
        "# header\nversion: 1\nname: x\n# before sources\nsources: {}\n"
        "quotes:\n  Q-a:\n    text: |+\n      kept\n\n# inside\n  Q-b: 1\n"
        "# about checks\n\n# more\nchecks:\n  - 1\n\n# closing\n"
    )
    assert layout.usual_text("version: 1\nname: x\nquotes:\n  Q-a: 1\nchecks: []\n") is None
    assert layout.usual_text("version: 1\nquotes:\n  Q-a: 1\n") == (
        "version: 1\nquotes:\n  Q-a: 1\nchecks: []\n"
    )
    assert layout.usual_text("quotes: {}\n? name\n: x\n") is None  # a complex key
    assert layout.usual_text("quotes: {}\nversion: 1") is None  # no final newline


def test_no_cache_folder_means_no_splice_point(seeded, workspace, monkeypatch):
    monkeypatch.setattr(reg, "seal_key", lambda: None)
    add_quote(workspace, seeded, "SRC-1", "pkg/a.py", QuoteRequest(lines=(10, 10)))
    assert not Path(workspace.registers / ".demo.yaml.splice.compiled.json").exists()
