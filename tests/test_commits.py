"""Commit resolution: ``register add-source --commit`` takes hex object ids only.

A short hex is matched against object ids (never ref names), must name exactly one
commit, and the pin written to the register is always the full 40-hex id.
"""

from __future__ import annotations

import hashlib
import itertools

import pytest

from conftest import git, refused
from tracework.errors import CommitNotFound, UnsafeInput
from tracework.git.mirror import Mirror, check_commit_text
from tracework.register import store as reg

FIXED = {"GIT_AUTHOR_DATE": "@1767400000 +0000", "GIT_COMMITTER_DATE": "@1767400000 +0000"}


def object_id(kind: str, body: bytes) -> str:
    return hashlib.sha1(kind.encode() + b" %d\0" % len(body) + body).hexdigest()


def commit_body(tree: str, parent: str, message: str) -> bytes:
    who = "Fixture <fixture@example.invalid> 1767400000 +0000"
    return f"tree {tree}\nparent {parent}\nauthor {who}\ncommitter {who}\n\n{message}\n".encode()


def twin_commits(tree: str, parent: str, width: int) -> tuple[bytes, bytes]:
    """Two commit objects whose ids share their first ``width`` hex digits.

    Found by a birthday search over commit messages; deterministic, so the same
    pair comes out on every run.
    """
    seen: dict[str, bytes] = {}
    for n in itertools.count():
        body = commit_body(tree, parent, f"lookalike number {n}")
        prefix = object_id("commit", body)[:width]
        if prefix in seen:
            return seen[prefix], body
        seen[prefix] = body
    raise AssertionError("unreachable")


def blob_with_prefix(prefix: str) -> bytes:
    """Contents of a blob whose id starts with ``prefix`` (short prefixes only)."""
    for n in itertools.count():
        data = f"padding line {n}\n".encode()
        if object_id("blob", data).startswith(prefix):
            return data
    raise AssertionError("unreachable")


@pytest.fixture
def subject(pinned, tw):
    """A pinned subject with three commits (all fetched); returns the Repo."""
    repo = pinned({"core/engine.py": "SPEED = 3\n", "README": "gears\n"})
    repo.write("core/engine.py", "SPEED = 4\n").commit("faster")
    repo.write("core/engine.py", "SPEED = 5\n").commit("fastest")
    assert tw("fetch", "toy").exit_code == 0
    return repo


def add_source(tw, commit: str, sid: str = "SRC-2"):
    return tw("register", "add-source", "demo", sid, "--subject", "toy", f"--commit={commit}")


def pin_of(workspace, sid: str = "SRC-2") -> str:
    return reg.load(workspace.register_file("demo")).git_source(sid).commit


def assert_refused(result, workspace, before: str, *words: str) -> None:
    refused(result, *words)
    assert workspace.register_file("demo").read_text() == before


# -- accepted ------------------------------------------------------------------------


def test_full_id_is_pinned_with_its_committer_date(subject, tw, workspace):
    second = subject.commits[1]
    result = add_source(tw, second)
    assert result.exit_code == 0, result.output
    source = reg.load(workspace.register_file("demo")).git_source("SRC-2")
    assert source.commit == second
    assert source.date == "2026-01-01T01:00:00+00:00"  # git's %cI of the fixture's date
    assert source.subject == "toy"
    text = workspace.register_file("demo").read_text()
    assert f"commit: {second}" in text


@pytest.mark.slow
@pytest.mark.parametrize("width", [4, 7, 12, 39])
def test_unique_prefix_is_stored_as_the_full_id(subject, tw, workspace, width):
    third = subject.commits[2]
    mirror = Mirror(workspace.mirrors / "toy.git")
    # the chosen width is unambiguous in this small repository
    listed = git(mirror.git_dir, "rev-parse", f"--disambiguate={third[:width]}").split()
    assert listed == [third]
    result = add_source(tw, third[:width])
    assert result.exit_code == 0, result.output
    assert pin_of(workspace) == third
    assert third in result.output


@pytest.mark.slow
def test_upper_case_hex_is_accepted_and_stored_lower_case(subject, tw, workspace):
    third = subject.commits[2]
    assert add_source(tw, third[:10].upper()).exit_code == 0
    assert pin_of(workspace) == third


# -- refused shapes ------------------------------------------------------------------


REFUSED = (
    "HEAD",
    "HEAD~2",
    "HEAD^",
    ":/fastest",
    "main",
    "main~1",
    "-x",
    "--all",
    "-1",
    "abc",
    "g123456",
    "1234567^{tree}",
    "@{-1}",
    "v1.0",
    " 1234abcd",
    "1234abcd\n",
)


@pytest.mark.slow
def test_revision_expressions_refs_and_options_are_refused(subject, tw, workspace):
    # one repository for all the shapes (they never reach git); the loop names the case
    before = workspace.register_file("demo").read_text()
    for text in REFUSED:
        result = add_source(tw, text)
        assert result.exit_code == 2, (text, result.output)
        assert_refused(result, workspace, before, "is not a commit id", "hex")


def test_option_shaped_commit_given_as_a_separate_argument(subject, tw, workspace):
    before = workspace.register_file("demo").read_text()
    for value in ("--all", "-x"):
        result = tw(
            "register", "add-source", "demo", "SRC-2", "--subject", "toy", "--commit", value
        )
        assert result.exit_code == 2, result.output
        assert workspace.register_file("demo").read_text() == before


@pytest.mark.parametrize("text", ["HEAD~2", ":/x", "main", "-x", "--all", "abc", "a" * 41])
def test_check_commit_text_refuses(text):
    with pytest.raises(UnsafeInput):
        check_commit_text(text)


def test_check_commit_text_accepts_hex_and_lowers_it():
    assert check_commit_text("ABCDEF12") == "abcdef12"
    assert check_commit_text("a" * 40) == "a" * 40


# -- not found, not a commit, ambiguous ------------------------------------------------


def test_a_commit_that_does_not_exist(subject, tw, workspace):
    before = workspace.register_file("demo").read_text()
    absent = "0123456789abcdef0123456789abcdef01234567"
    assert absent not in subject.commits
    assert_refused(add_source(tw, absent), workspace, before, f"no commit {absent}", "fetch")
    assert_refused(add_source(tw, "fedcba98"), workspace, before, "no commit fedcba98")


@pytest.mark.slow
def test_a_commit_only_in_the_subject_not_yet_fetched(subject, tw, workspace):
    newer = subject.write("README", "gears and belts\n").commit("belts")
    before = workspace.register_file("demo").read_text()
    assert_refused(add_source(tw, newer), workspace, before, "no commit", "tracework fetch")
    assert tw("fetch", "toy").exit_code == 0
    assert add_source(tw, newer[:10]).exit_code == 0
    assert pin_of(workspace) == newer


@pytest.mark.parametrize("kind", ["blob", "tree"])
def test_a_prefix_of_a_blob_or_tree_is_not_a_commit(subject, tw, workspace, kind):
    first = subject.commits[0]
    spec = f"{first}:core/engine.py" if kind == "blob" else f"{first}^{{tree}}"
    oid = subject.git("rev-parse", spec).strip()
    assert subject.git("cat-file", "-t", oid).strip() == kind
    before = workspace.register_file("demo").read_text()
    for text in (oid, oid[:10]):
        assert_refused(add_source(tw, text), workspace, before, "no commit")


@pytest.mark.slow
def test_an_ambiguous_prefix_lists_the_commits(subject, tw, workspace):
    first = subject.commits[0]
    tree = subject.git("rev-parse", f"{first}^{{tree}}").strip()
    a, b = twin_commits(tree, first, width=5)
    ids = []
    for n, body in enumerate((a, b)):
        oid = git(subject.path, "hash-object", "-t", "commit", "-w", "--stdin", input=body).strip()
        subject.git("update-ref", f"refs/heads/twin-{n}", oid)
        ids.append(oid)
    assert ids[0][:5] == ids[1][:5] and ids[0] != ids[1]
    assert tw("fetch", "toy").exit_code == 0
    before = workspace.register_file("demo").read_text()

    result = add_source(tw, ids[0][:5])
    assert_refused(result, workspace, before, "ambiguous", ids[0][:12], ids[1][:12])
    assert "more hex digits" in result.output
    # one more digit than they share (if they differ there) resolves uniquely
    width = next(i for i in range(5, 40) if ids[0][i] != ids[1][i]) + 1
    assert add_source(tw, ids[1][:width]).exit_code == 0
    assert pin_of(workspace) == ids[1]


def test_an_ambiguous_prefix_via_the_mirror_directly(subject, workspace):
    first = subject.commits[0]
    tree = subject.git("rev-parse", f"{first}^{{tree}}").strip()
    a, b = twin_commits(tree, first, width=4)
    mirror = Mirror(workspace.mirrors / "toy.git")
    ids = [
        git(mirror.git_dir, "hash-object", "-t", "commit", "-w", "--stdin", input=body).strip()
        for body in (a, b)
    ]
    with pytest.raises(CommitNotFound, match="ambiguous") as info:
        mirror.resolve_commit(ids[0][:4])
    assert ids[0][:12] in info.value.message and ids[1][:12] in info.value.message


@pytest.mark.slow
def test_a_prefix_shared_by_a_commit_and_a_blob_resolves_to_the_commit(subject, tw, workspace):
    first = subject.commits[0]
    data = blob_with_prefix(first[:4])
    subject.write("padding.txt", data).commit("padding")
    assert tw("fetch", "toy").exit_code == 0
    mirror = Mirror(workspace.mirrors / "toy.git")
    listed = git(mirror.git_dir, "rev-parse", f"--disambiguate={first[:4]}").split()
    assert len(listed) >= 2  # the commit and the blob at least
    types = mirror.object_types(listed)
    assert [o for o, t in types.items() if t == "commit"] == [first]
    assert add_source(tw, first[:4]).exit_code == 0
    assert pin_of(workspace) == first


# -- refs named like hex never hijack resolution --------------------------------------


def test_a_branch_named_like_a_prefix_does_not_hijack_it(subject, tw, workspace):
    first, _, third = subject.commits
    lookalike = first[:12]
    subject.git("branch", lookalike, third)
    subject.git("tag", first[:10], third)
    assert tw("fetch", "toy").exit_code == 0
    mirror = workspace.mirrors / "toy.git"
    # the trap is real: plain rev-parse prefers the ref over the object id
    assert git(mirror, "--git-dir=.", "rev-parse", lookalike).strip() == third

    for text in (lookalike, first[:10]):
        result = add_source(tw, text, sid="SRC-2" if text == lookalike else "SRC-3")
        assert result.exit_code == 0, result.output
    assert pin_of(workspace, "SRC-2") == first
    assert pin_of(workspace, "SRC-3") == first


def test_a_branch_named_like_hex_that_is_no_object_is_not_found(subject, tw, workspace):
    third = subject.commits[2]
    name = "deadbeefcafe"
    assert not any(c.startswith(name) for c in subject.commits)
    subject.git("branch", name, third)
    assert tw("fetch", "toy").exit_code == 0
    assert git(workspace.mirrors / "toy.git", "--git-dir=.", "rev-parse", name).strip() == third
    before = workspace.register_file("demo").read_text()
    assert_refused(add_source(tw, name), workspace, before, f"no commit {name}")


# -- other input errors ----------------------------------------------------------------


def test_unknown_subject_and_bad_source_id(subject, tw, workspace):
    before = workspace.register_file("demo").read_text()
    third = subject.commits[2]
    result = tw("register", "add-source", "demo", "SRC-2", "--subject", "nobody", "--commit", third)
    assert_refused(result, workspace, before, "unknown subject 'nobody'", "toy")
    result = tw("register", "add-source", "demo", "SOURCE-2", "--subject", "toy", "--commit", third)
    assert_refused(result, workspace, before, "is not a source id")


def test_a_source_id_is_pinned_once(subject, tw, workspace):
    before = workspace.register_file("demo").read_text()
    result = add_source(tw, subject.commits[2], sid="SRC-1")
    assert_refused(result, workspace, before, "SRC-1 already exists")


def test_check_refuses_an_unresolvable_pin_in_the_register(subject, tw, workspace):
    """A pin edited by hand to a commit the mirror lacks is an input error, not a crash."""
    path = workspace.register_file("demo")
    text = path.read_text()
    absent = "0123456789abcdef0123456789abcdef01234567"
    path.write_text(text.replace(subject.commits[0], absent))
    result = tw("check", "demo")
    assert result.exit_code == 2, result.output
    assert f"no commit {absent}" in result.output
