"""The fast path of a new quote: spliced into the register's bytes, it must give exactly
what the full round-trip edit gives (the YAML and the compiled copy), and fall back to
the full edit whenever anything is unusual."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracework.register.store as reg
from tracework.register import append
from tracework.register.evidence import QuoteRequest, add_quote

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
    "\n",
    "carriage\rreturn\n",
    "    return key\n",
    "null\n",
    "|\n",
    "ends without newline",
]
TEXT = "".join(LINES)
FILES = {"pkg/a.py": TEXT, "pkg/b.txt": "one\ntwo\nthree\n"}


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
        st.sampled_from([None, "Q-given", "Q-a-1-2", "Q-other"]),
    ),
    min_size=1,
    max_size=4,
)


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
        for path, first, extra, qid in steps:
            last = min(first + extra, 3 if path == "pkg/b.txt" else len(LINES))
            first = min(first, last)
            request = QuoteRequest(lines=(first, last))
            before = register_files(workspace)
            outcomes = []
            for fast in (True, False):
                restore(workspace, before)
                with monkeypatch.context() as patch:
                    if not fast:
                        patch.setattr(append, "_recall", lambda *_: None)
                    try:
                        added = add_quote(workspace, seeded, "SRC-1", path, request, qid)
                        outcomes.append((added.quote_id, added.quote, register_files(workspace)))
                    except Exception as exc:  # the same refusal, both ways
                        outcomes.append((type(exc).__name__, str(exc), register_files(workspace)))
            assert outcomes[0][:2] == outcomes[1][:2]
            assert outcomes[0][2].keys() == outcomes[1][2].keys()
            for name in outcomes[0][2]:
                assert outcomes[0][2][name].decode() == outcomes[1][2][name].decode(), name
    finally:
        restore(workspace, start)


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

    monkeypatch.setattr("tracework.register.evidence.append_quote", spy)
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
