"""A mirror holding objects fetch never let in, and commit ids that name no commit.

Fetch runs git's fsck, so malformed trees stay out of a mirror; but a tree can be
written straight into it (``hash-object --literally``, then ``commit-tree`` and
``update-ref``), and objects can be damaged on disk.  ``Mirror.tree()`` refuses what
fsck would have refused, every read of a damaged commit names the commit and says how
to get a sound mirror, and an id of a tree, a blob or an annotated tag is called what
it is.  Each case goes through the CLI (one message, exit 2, nothing written) and,
where it says more, through ``Mirror`` directly.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import git, refused
from tracework.errors import CommitNotFound, GitError
from tracework.git.mirror import Mirror

REGISTER = Path("registers/demo.yaml")
FIXED = {"GIT_AUTHOR_DATE": "@1767500000 +0000", "GIT_COMMITTER_DATE": "@1767500000 +0000"}
HINT_WORDS = ("written by hand", "delete sources/.mirrors/toy.git", "tracework fetch toy")


@pytest.fixture
def toy(pinned: Callable[..., Any]) -> Any:
    """Subject ``toy`` fetched and pinned as SRC-1 of register ``demo``."""
    return pinned({"a.txt": "alpha\n", "lib/b.py": "x = 1\n"})


@pytest.fixture
def mirror_dir(toy: Any, workspace: Any) -> Path:
    return workspace.mirrors / "toy.git"


def blob(mirror: Path, data: bytes = b"payload\n") -> str:
    return git(mirror, "hash-object", "-w", "--stdin", input=data).strip()


def raw_tree(mirror: Path, body: bytes) -> str:
    """Write tree bytes as they are (git checks nothing with ``--literally``)."""
    return git(
        mirror, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", input=body
    ).strip()


def tree(mirror: Path, *entries: tuple[str, bytes, str]) -> str:
    """A tree of (mode, name, 40-hex id) entries, in the order given."""
    return raw_tree(
        mirror, b"".join(m.encode() + b" " + n + b"\0" + bytes.fromhex(o) for m, n, o in entries)
    )


def commit_of(mirror: Path, tree_oid: str) -> str:
    """A commit of ``tree_oid`` written into the mirror, with a branch to it."""
    commit = git(mirror, "commit-tree", "-m", "by hand", tree_oid, env=FIXED).strip()
    git(mirror, "update-ref", f"refs/heads/by-hand-{commit[:8]}", commit)
    return commit


def add_source(tw: Callable[..., Any], commit: str) -> Any:
    return tw("register", "add-source", "demo", "SRC-2", "--subject", "toy", "--commit", commit)


def pin_by_hand(workspace: Any, toy: Any, commit: str) -> None:
    """Point SRC-1 at ``commit`` by editing the register, as an old pin would be."""
    path = workspace.register_file("demo")
    path.write_text(path.read_text().replace(toy.commits[0], commit))


# -- 1. malformed trees written into the mirror ---------------------------------------------

Builder = Callable[[Path, str], str]

MALFORMED: list[tuple[str, Builder, str]] = [
    (
        "dotdot",
        lambda m, b: tree(m, ("100644", b"..", b), ("100644", b"z", b)),
        "entry '..' holds the name '..'",
    ),
    (
        "dotdot-in-folder",
        lambda m, b: tree(m, ("40000", b"lib", tree(m, ("100644", b"..", b)))),
        "entry 'lib/..' holds the name '..'",
    ),
    ("dotdot-folder", lambda m, b: tree(m, ("40000", b"..", tree(m, ("100644", b"x", b)))), "'..'"),
    ("dot", lambda m, b: tree(m, ("100644", b".", b)), "entry '.' holds the name '.'"),
    ("dotgit", lambda m, b: tree(m, ("100644", b".git", b)), "entry '.git' holds the name '.git'"),
    (
        "dotgit-upper",
        lambda m, b: tree(m, ("100644", b".GIT", b)),
        "entry '.GIT' holds the name '.GIT'",
    ),
    (
        "dotgit-folder",
        lambda m, b: tree(m, ("40000", b".Git", tree(m, ("100644", b"config", b)))),
        "entry '.Git/config' holds the name '.Git'",
    ),
    ("dotgit-empty-folder", lambda m, b: tree(m, ("40000", b".git", tree(m))), "entry '.git'"),
    (
        "duplicate",
        lambda m, b: tree(m, ("100644", b"twin", b), ("100644", b"twin", b)),
        "entry 'twin' is listed twice",
    ),
    (
        "file-and-folder",
        lambda m, b: tree(
            m, ("100644", b"lib", b), ("40000", b"lib", tree(m, ("100644", b"x", b)))
        ),
        "entry 'lib' is listed twice",
    ),
    (
        "slash-without-folder",
        lambda m, b: tree(m, ("100644", b"a/b", b)),
        "entry 'a/b' has a name holding '/' (the tree lists no folder 'a')",
    ),
    (
        "slash-twin-of-a-path",
        lambda m, b: tree(m, ("40000", b"a", tree(m, ("100644", b"b", b))), ("100644", b"a/b", b)),
        "entry 'a/b' is listed twice",
    ),
    ("slash-leading", lambda m, b: tree(m, ("100644", b"/etc", b)), "entry '/etc' has an empty"),
    ("slash-trailing", lambda m, b: tree(m, ("100644", b"x/", b)), "entry 'x/' has an empty"),
    ("slash-escape", lambda m, b: tree(m, ("100644", b"../up", b)), "entry '../up' holds the"),
]


@pytest.mark.parametrize(
    ("build", "words"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_mirror_tree_refuses_a_malformed_tree(mirror_dir: Path, build: Builder, words: str) -> None:
    commit = commit_of(mirror_dir, build(mirror_dir, blob(mirror_dir)))
    with pytest.raises(GitError) as info:
        Mirror(mirror_dir).tree(commit)
    message = str(info.value)
    assert f"the tree of commit {commit[:12]} in toy.git is malformed" in message
    assert words in message, message
    assert info.value.hint is not None
    for word in HINT_WORDS:
        assert word in info.value.hint


@pytest.mark.parametrize(
    ("build", "words"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_add_source_refuses_a_commit_of_a_malformed_tree(
    mirror_dir: Path, tw: Callable[..., Any], build: Builder, words: str
) -> None:
    commit = commit_of(mirror_dir, build(mirror_dir, blob(mirror_dir)))
    before = REGISTER.read_text()
    refused(add_source(tw, commit), commit[:12], "malformed", words, *HINT_WORDS)
    assert REGISTER.read_text() == before
    assert not (mirror_dir / "refs" / "tracework" / "pins" / commit).exists()


def test_a_pin_of_a_malformed_tree_is_refused_by_every_reader(
    toy: Any, mirror_dir: Path, tw: Callable[..., Any], workspace: Any
) -> None:
    """The audit's case: '..' beside 'z', pinned (by hand here, as an old pin would be)."""
    b = blob(mirror_dir, b"line\n")
    commit = commit_of(mirror_dir, tree(mirror_dir, ("100644", b"..", b), ("100644", b"z", b)))
    pin_by_hand(workspace, toy, commit)
    before = REGISTER.read_text()
    for args in (
        ("register", "add-file", "demo", "SRC-1", "*"),
        ("quote", "demo", "SRC-1", "..", "--lines", "1-1"),
        ("check", "demo"),
    ):
        refused(tw(*args), commit[:12], "entry '..'", *HINT_WORDS)
    assert REGISTER.read_text() == before
    assert "'..'" not in before


def test_well_formed_trees_with_odd_names_are_accepted(
    pinned: Callable[..., Any], workspace: Any
) -> None:
    """No false alarm: names fsck accepts, many of them near the refused ones."""
    names = [
        ".gitignore",
        ".github/workflows/ci.yml",
        ".gitkeep",
        "lib/.gitkeep",
        "lib/...",
        ".../x",
        ".gitx",
        "x.git",
        ".git~1",
        "GIT~2",
        "a~1.txt",
        "back\\slash.txt",
        "tab\t..",
        "tab\t.git",
        "sp ace/.g",
        "é/ü.txt",
        "dir.with.dots/.hidden",
        "z",
    ]
    repo = pinned({name: f"{n}\n" for n, name in enumerate(names)})
    listed = repo.git("ls-tree", "-r", "--name-only", "-z", repo.commits[0]).split("\0")
    entries = Mirror(workspace.mirrors / "toy.git").tree(repo.commits[0])
    assert sorted(entries) == sorted(p for p in listed if p) == sorted(names)


# -- 2. damaged objects: the commit is named, with the remedy -------------------------------

DAMAGED: list[tuple[str, Callable[[str], bytes], str]] = [
    ("truncated", lambda b: b"100644 a\0" + bytes.fromhex(b)[:10], "too-short tree object"),
    ("bad-mode", lambda b: b"100abc a\0" + bytes.fromhex(b), "malformed mode"),
]


@pytest.mark.parametrize(("body", "words"), [c[1:] for c in DAMAGED], ids=[c[0] for c in DAMAGED])
def test_add_source_names_a_commit_whose_tree_git_cannot_read(
    mirror_dir: Path, tw: Callable[..., Any], body: Callable[[str], bytes], words: str
) -> None:
    commit = commit_of(mirror_dir, raw_tree(mirror_dir, body(blob(mirror_dir))))
    before = REGISTER.read_text()
    result = add_source(tw, commit)
    refused(result, f"cannot read commit {commit[:12]} in toy.git", words, *HINT_WORDS)
    assert "git show failed" not in result.output
    assert REGISTER.read_text() == before


@pytest.mark.slow
@pytest.mark.parametrize(("body", "words"), [c[1:] for c in DAMAGED], ids=[c[0] for c in DAMAGED])
def test_reading_a_damaged_pin_names_the_commit(
    toy: Any,
    mirror_dir: Path,
    tw: Callable[..., Any],
    workspace: Any,
    body: Callable[[str], bytes],
    words: str,
) -> None:
    commit = commit_of(mirror_dir, raw_tree(mirror_dir, body(blob(mirror_dir))))
    mirror = Mirror(mirror_dir)
    with pytest.raises(GitError) as info:
        mirror.tree(commit)
    assert f"cannot read the tree of commit {commit[:12]} in toy.git" in info.value.message
    assert words in info.value.message
    with pytest.raises(GitError) as info:
        mirror.changes(toy.commits[0], commit)
    assert f"{toy.commits[0][:12]} to {commit[:12]}" in info.value.message
    assert words in info.value.message and info.value.hint is not None
    assert all(word in info.value.hint for word in HINT_WORDS)

    pin_by_hand(workspace, toy, commit)
    refused(tw("check", "demo"), commit[:12], words, *HINT_WORDS)
    refused(tw("register", "add-file", "demo", "SRC-1", "*"), commit[:12], *HINT_WORDS)


# -- 3. ids of objects that are not commits ---------------------------------------------


@pytest.fixture
def tagged(toy: Any, tw: Callable[..., Any]) -> Any:
    """``toy`` with an annotated tag of its commit and one of its tree, fetched."""
    toy.git("tag", "-a", "v1", "-m", "release", toy.commits[0])
    toy.git("tag", "-a", "tree-tag", "-m", "odd", f"{toy.commits[0]}^{{tree}}")
    assert tw("fetch", "toy").exit_code == 0
    return toy


@pytest.mark.parametrize("kind", ["tree", "blob"])
def test_an_id_of_a_tree_or_blob_says_what_it_is(
    toy: Any, tw: Callable[..., Any], kind: str
) -> None:
    spec = f"{toy.commits[0]}^{{tree}}" if kind == "tree" else f"{toy.commits[0]}:a.txt"
    oid = toy.git("rev-parse", spec).strip()
    before = REGISTER.read_text()
    refused(add_source(tw, oid), f"{oid} is a {kind}, not a commit", "no commit")
    refused(add_source(tw, oid[:10]), f"{oid[:10]} is a {kind} ({oid[:12]}), not a commit")
    assert REGISTER.read_text() == before


@pytest.mark.slow
def test_an_annotated_tag_is_named_and_its_commit_suggested(
    tagged: Any, tw: Callable[..., Any]
) -> None:
    tag = tagged.git("rev-parse", "v1").strip()
    assert tagged.git("cat-file", "-t", tag).strip() == "tag"
    before = REGISTER.read_text()
    for text in (tag, tag[:9]):
        result = add_source(tw, text)
        refused(result, "is an annotated tag", "not a commit", f"commit {tagged.commits[0]}")
    assert REGISTER.read_text() == before  # never peeled silently

    tree_tag = tagged.git("rev-parse", "tree-tag").strip()
    refused(add_source(tw, tree_tag), "is an annotated tag", "points at no commit")


def test_hints_name_the_subject(toy: Any, tw: Callable[..., Any], workspace: Any) -> None:
    absent = "0123456789abcdef0123456789abcdef01234567"
    result = add_source(tw, absent)
    refused(result, f"no commit {absent}", "run `tracework fetch toy`")
    assert "NAME" not in result.output

    with pytest.raises(GitError) as info:
        Mirror(workspace.mirrors / "toy.git").read_blob("0" * 40)
    assert info.value.hint is not None and "`tracework fetch toy`" in info.value.hint

    with pytest.raises(GitError) as info:
        Mirror(workspace.mirrors / "ghost.git")
    assert info.value.hint is not None and "`tracework fetch ghost`" in info.value.hint


def test_hints_stay_generic_for_a_mirror_elsewhere(toy: Any, tmp_path: Path) -> None:
    """A bare repository outside sources/.mirrors has no subject name to give."""
    elsewhere = tmp_path / "elsewhere.git"
    git(tmp_path, "clone", "-q", "--bare", str(toy.path), str(elsewhere))
    with pytest.raises(CommitNotFound) as info:
        Mirror(elsewhere).resolve_commit("0123abcd")
    assert info.value.hint is not None
    assert "`tracework fetch` with the subject's name" in info.value.hint
    assert "NAME" not in info.value.hint

    commit = commit_of(elsewhere, tree(elsewhere, ("100644", b"..", blob(elsewhere))))
    with pytest.raises(GitError) as malformed:
        Mirror(elsewhere).tree(commit)
    assert malformed.value.hint is not None
    assert f"delete the mirror {elsewhere} and fetch its subject again" in malformed.value.hint


@pytest.mark.slow
def test_a_commit_of_an_empty_tree_is_well_formed(toy: Any, tw: Callable[..., Any]) -> None:
    """No file at all (an --allow-empty first commit, or one deleting everything) is not
    malformed: registering it works, and checking at it finds everything missing."""
    assert tw("register", "add-file", "demo", "SRC-1", "a.txt").exit_code == 0
    for path in ("a.txt", "lib/b.py"):
        toy.remove(path)
    empty = toy.commit("everything deleted")
    assert tw("fetch", "toy").exit_code == 0
    result = tw("check", "demo", "--at", empty, "--json")
    assert result.exit_code == 1, result.output
    assert '"state":"missing"' in result.output
    assert tw("register", "new", "bare").exit_code == 0
    added = tw("register", "add-source", "bare", "SRC-1", "--subject", "toy", "--commit", empty)
    assert added.exit_code == 0, added.output
