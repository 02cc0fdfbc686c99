"""``tracework register add-file`` writes the bytes it always wrote.

A run of ``add-file`` commands (globs into an empty ``files: {}``, globs appending to
a source's files with another source after it, files registered again, an expected
hash changed, a hand edit) against a subject whose names YAML must quote or cannot
write as a plain key (spaces, ``true``, dates, numbers, ``#``, ``: ``, non-ASCII, a
name too long for a simple key), with a symlink, a binary file, an empty one and a Git
LFS pointer.  After each command the register's bytes and the command's output are
compared with ``tests/data/register_add_file.json``, which the full round-trip edit
wrote before ``add-file`` learned to splice its entries in (the code of that time made
it): the splice must give, byte for byte, what that edit gave.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracework.readers import DataError, load_yaml
from tracework.register import append, evidence, fileappend, store
from tracework.register import edits as regy
from tracework.register.models import FileEntry

FIXTURE = Path(__file__).with_name("data") / "register_add_file.json"
LFS_POINTER = f"version https://git-lfs.github.com/spec/v1\noid sha256:{'4d' * 32}\nsize 12345\n"
SUBJECT: dict[str, bytes | str] = {
    "src/pkg/a.py": "a = 1\n",
    "src/pkg/b.py": "b = 2\n",
    "src/pkg/sub/c.py": "c = 3\n",
    "src/odd name.py": "spaced = True\n",
    "src/true": "a name YAML reads as a boolean\n",
    "src/2026-01-01": "a name YAML reads as a date\n",
    "src/1e5": "a name YAML reads as a number\n",
    "src/0x1f": "and another\n",
    "src/null": "and nothing\n",
    "src/#hash.txt": "a comment sign first\n",
    "src/a: b.txt": "a colon and a space\n",
    "src/ünïcödé.py": "ü = 1\n",
    ".github/ci.yml": "on: push\n",
    "-dash.txt": "a dash first\n",
    "true": "a name YAML reads as a boolean\n",
    "1e5": "a name YAML reads as a number\n",
    "2026-01-01": "a name YAML reads as a date\n",
    "~": "a name YAML reads as nothing\n",
    "#hash.txt": "a comment sign first\n",
    "'quoted'.txt": "quotes first\n",
    "[set].txt": "a bracket first\n",
    "a,b{c}.txt": "flow indicators inside\n",
    " lead.txt": "a space first\n",
    "trail .txt": "a space before the dot\n",
    "tab\there.txt": "a tab inside\n",
    "back\\slash.txt": "a backslash inside\n",
    "ünï.txt": "non-ASCII at the top\n",
    "data/blob.bin": b"\x00\x01\x02binary\n",
    "data/empty.txt": "",
    "data/" + "x" * 130 + ".txt": "a name longer than a simple key\n",
    "data/lfs.bin": LFS_POINTER,
}

#: The commands, in order; ``PIN`` is the subject's commit, ``HAND`` a hand edit.
STEPS: list[tuple[str, ...]] = [
    ("register", "add-source", "demo", "SRC-2", "--subject", "toy", "--commit", "PIN"),
    ("register", "add-file", "demo", "SRC-2", "src/pkg"),
    ("register", "add-file", "demo", "SRC-1", "src/**"),
    ("register", "add-file", "demo", "SRC-1", "**"),
    ("register", "add-file", "demo", "SRC-2", "*", "data/**"),
    ("quote", "demo", "SRC-1", "src/pkg/a.py", "--lines", "1-1"),
    ("register", "add-file", "demo", "SRC-1", "src/pkg/a.py", "--expect-sha256", "ab" * 32),
    ("register", "add-file", "demo", "SRC-1", "src/**"),
    ("register", "add-file", "demo", "SRC-2", "src/**/*.py"),
    ("quote", "demo", "SRC-1", "src/pkg/b.py", "--lines", "1-1"),
    ("HAND",),
    ("register", "add-file", "demo", "SRC-2", ".github"),
    ("register", "add-file", "demo", "SRC-2", "src"),
    ("register", "add-source", "demo", "SRC-3", "--subject", "toy", "--commit", "PIN"),
    ("register", "add-file", "demo", "SRC-3", "data"),
    ("register", "add-file", "demo", "SRC-3", "src/pkg", "*.txt"),
    ("register", "add-file", "demo", "SRC-2", "nothing/**"),
    ("register", "add-file", "demo", "SRC-9", "src/**"),
    ("register", "add-file", "demo", "SRC-1", "src/pkg", "--expect-sha256", "ab" * 32),
]


def hand_edit(path: Path) -> None:
    """A comment above the quotes, as an analyst may write one."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("\nquotes:\n", "\n# kept by hand\nquotes:\n"), encoding="utf-8")


def run_steps(tw, register: Path, pin: str) -> list[dict[str, object]]:
    """Each command's exit code and output, and the register's text after it."""
    seen: list[dict[str, object]] = []
    for step in STEPS:
        if step == ("HAND",):
            hand_edit(register)
            seen.append({"step": list(step), "register": register.read_text(encoding="utf-8")})
            continue
        result = tw(*(pin if word == "PIN" else word for word in step))
        seen.append(
            {
                "step": list(step),
                "exit": result.exit_code,
                "stdout": result.stdout,
                "stderr": result.stderr,
                "register": register.read_text(encoding="utf-8"),
            }
        )
    return seen


@pytest.fixture
def subject(make_repo, pinned):
    repo = make_repo("toy")
    for rel, content in SUBJECT.items():
        repo.write(rel, content)
    repo.symlink("link.py", "src/pkg/a.py")
    repo.commit("first")
    return pinned(repo=repo)


def test_add_file_writes_what_the_full_edit_wrote(subject, tw, workspace):
    seen = run_steps(tw, workspace.registers / "demo.yaml", subject.commits[-1])
    assert seen == json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_the_full_edit_still_writes_them(subject, tw, workspace, monkeypatch):
    """With the splice turned off, every command takes the full edit: the same bytes."""
    monkeypatch.setattr(evidence, "write_files", lambda *_: False)
    seen = run_steps(tw, workspace.registers / "demo.yaml", subject.commits[-1])
    assert seen == json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_the_splice_is_taken_while_tracework_wrote_the_register(
    subject, tw, workspace, monkeypatch
):
    """Every add-file splices but the one changing an expected hash (the full edit
    rewrites the entry where it is), the one after a hand edit, and the one into a
    ``files: {}`` just above a comment; the quote after a splice is spliced too, at the
    point the splice moved."""
    took: list[bool] = []

    def spy(*args: object) -> bool:
        took.append(spliced := fileappend.write_files(*args))  # type: ignore[arg-type]
        return spliced

    quotes: list[object] = []

    def quote_spy(*args: object, **kwargs: object) -> object:
        quotes.append(result := append.append_quote(*args, **kwargs))  # type: ignore[arg-type]
        return result

    monkeypatch.setattr(evidence, "write_files", spy)
    monkeypatch.setattr("tracework.register.quotes.append_quote", quote_spy)
    run_steps(tw, workspace.registers / "demo.yaml", subject.commits[-1])
    assert took == [True, True, True, True, False, True, True, False, True, False, True]
    assert quotes[0] is None and quotes[1] is not None  # `quotes: {}`, then the splice point


def test_a_glob_of_many_files_never_enters_the_full_edit(pinned, tw, workspace, monkeypatch):
    files = {f"pkg{n % 7}/mod_{n:04d}.py": f"N = {n}\n" for n in range(2000)}
    pinned(files)
    monkeypatch.setattr(regy, "edit", lambda *_: pytest.fail("the full edit ran"))
    result = tw("register", "add-file", "demo", "SRC-1", "**/*.py")
    assert result.exit_code == 0, result.output
    assert "2000 files: 2000 newly registered, 0 updated, 0 already registered" in result.stdout
    register = store.load(workspace.registers / "demo.yaml")
    assert sorted(register.git_source("SRC-1").files) == sorted(files)
    again = tw("register", "add-file", "demo", "SRC-1", "pkg3")
    assert "0 newly registered, 0 updated, 286 already registered as given" in again.stdout


HEXES = ["ab" * 32, "1" * 64, "0b" + "01" * 31, "1" * 30 + "e" + "2" * 33, "0" * 63 + "f"]
HEX = st.one_of(st.from_regex(r"[0-9a-f]{64}", fullmatch=True), st.sampled_from(HEXES))
names = st.one_of(
    st.from_regex(r"[a-z0-9_.][a-z0-9_./-]{0,130}", fullmatch=True),
    st.text(alphabet=st.sampled_from(list("aZ09_./-e :#'\"[]{},&*!|>%@`?~\\\tü")), min_size=1),
)
entries = st.lists(
    st.tuples(
        st.one_of(names, st.sampled_from(["true", "1e5", "2026-01-01", "null", "~", "..."])),
        st.builds(
            FileEntry,
            sha256=HEX,
            kind=st.sampled_from(["file", "symlink", "submodule", "lfs-pointer"]),
            size=st.integers(0, 2**40),
            binary=st.booleans(),
            target=st.one_of(st.none(), names),
            expect_sha256=st.one_of(st.none(), HEX),
        ),
    ),
    unique_by=lambda item: item[0],
    min_size=1,
    max_size=6,
)


def reads_back(body: str, entries: list[tuple[str, FileEntry]]) -> bool:
    try:
        held = load_yaml(f"files:\n{body}")["files"]
    except DataError:
        return False
    return [(path, FileEntry.model_validate(entry)) for path, entry in held.items()] == entries


@settings(max_examples=300, deadline=None)
@given(entries=entries)
def test_formatted_entries_are_what_the_emitter_writes(entries):
    """Names and values of every kind YAML quotes or reads as another type, mixed with
    plain ones, any of them too long for a simple key: the lines made are the dump's,
    or none when the dump does not read back (ruamel writes a target ``:0`` as it is,
    which no parser reads: the full edit refuses it too)."""
    made = fileappend.entry_lines("SRC-1", entries)
    dump = append.file_entries("SRC-1", entries)[1]
    if made is None:
        assert not reads_back(dump, entries)
    else:
        assert made == dump


def test_plain_is_only_what_the_emitter_writes_as_it_is():
    assert fileappend.plain("src/pkg/a.py") and fileappend.plain(".github/ci.yml")
    for value in ("true", "1e5", "0x1f", "2026-01-01", "null", "-dash", "...x", "a b", "a:b"):
        assert not fileappend.plain(value), value
