"""Ref shadowing: nothing a subject (or a copied mirror) names can change what "latest" is.

``git rev-parse main`` tries ``refs/main``, then ``refs/tags/main``, before
``refs/heads/main``, and ``refs/remotes/main`` after it; a 40-hex name is always an
object id; replace refs, grafts and a commit-graph file rewrite what a commit is or
what its parents are.  Each trap is shown to work on plain git first; ``fetch`` and
``rerender --latest`` then take the tracked branch's own tip, and the history a
bisection walks is the commits' own.
"""

from __future__ import annotations

import os
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import Repo, git, refused
from tracework.batch.rerender import targets
from tracework.drift.first_change import commits_between
from tracework.errors import SubjectError
from tracework.git.mirror import Mirror
from tracework.git.subjects import load_subject, tracked_commit
from tracework.workspace import Workspace


def plain(git_dir: Path, *args: str) -> str:
    """Plain git (no system or global config) in the mirror; stdout, stripped."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"})
    return (
        subprocess.run(
            ["git", f"--git-dir={git_dir}", *args], env=env, capture_output=True, check=True
        )
        .stdout.decode()
        .strip()
    )


@pytest.fixture
def subject(make_repo: Callable[[str], Repo]) -> Repo:
    """A subject with three commits on ``main``; ``commits[0]`` is the oldest."""
    repo = make_repo("toy")
    for n in range(3):
        repo.write("lamp.txt", "wick\n" * (n + 1)).commit(f"commit {n}")
    return repo


def fetched(tw: Callable[..., Any], repo: Repo, track: str = "main") -> Any:
    assert tw("subject", "add", "toy", str(repo.path), "--track", track).exit_code == 0
    return tw("fetch", "toy")


def latest(ws: Workspace) -> str | None:
    return tracked_commit(ws, load_subject(ws, "toy"), Mirror(ws.mirror_dir("toy")))


# -- names like the tracked branch -------------------------------------------------------


def test_a_tag_named_like_the_tracked_branch_changes_nothing(tw, workspace, subject):
    old, tip = subject.commits[0], subject.commits[-1]
    git(subject.path, "tag", "main", old)
    result = fetched(tw, subject)
    assert result.exit_code == 0, result.output
    assert f"{tip[:12]} at its tracked ref" in result.output
    mirror = workspace.mirror_dir("toy")
    assert plain(mirror, "rev-parse", "main") == old  # control: git's own reading of "main"
    assert latest(workspace) == tip
    # rerender --latest (after its own fetch) takes the branch too
    assert tw("register", "new", "demo").exit_code == 0
    add = ("register", "add-source", "demo", "SRC-1", "--subject", "toy", "--commit", old)
    assert tw(*add).exit_code == 0
    assert targets(workspace, ["demo"], None, True, True) == {"demo": tip}


def test_the_default_branch_wins_over_a_tag_and_a_branch_named_head(tw, workspace, subject):
    old, tip = subject.commits[0], subject.commits[-1]
    git(subject.path, "tag", "main", old)
    git(subject.path, "tag", "HEAD", old)
    git(subject.path, "update-ref", "refs/heads/HEAD", old)
    result = fetched(tw, subject, track="HEAD")
    assert result.exit_code == 0, result.output
    assert latest(workspace) == tip


@pytest.mark.parametrize("shadow", ["refs/main", "refs/tags/main"])
def test_refs_a_copied_mirror_carries_never_stand_in_for_the_branch(tw, workspace, subject, shadow):
    """Refs git's abbreviation rules read as "main" before the branch, planted in the
    mirror itself, as a mirror from elsewhere may have them."""
    old, tip = subject.commits[0], subject.commits[-1]
    assert fetched(tw, subject).exit_code == 0
    mirror = workspace.mirror_dir("toy")
    plain(mirror, "update-ref", shadow, old)
    assert plain(mirror, "rev-parse", "main") == old  # control
    assert latest(workspace) == tip
    result = tw("fetch", "toy")
    assert result.exit_code == 0, result.output
    assert f"{tip[:12]} at its tracked ref" in result.output


@pytest.mark.parametrize("shadow", ["refs/remotes/main", "refs/remotes/main/HEAD"])
def test_a_tracked_branch_deleted_upstream_is_missing_not_a_remote_ref(
    tw, workspace, subject, shadow
):
    """Refs git reads as "main" once the branch is gone."""
    old = subject.commits[0]
    assert fetched(tw, subject).exit_code == 0
    mirror = workspace.mirror_dir("toy")
    plain(mirror, "update-ref", shadow, old)
    git(subject.path, "branch", "-q", "-m", "main", "trunk")
    refused(tw("fetch", "toy"), "its tracked ref main is not in the mirror", "trunk")
    assert plain(mirror, "rev-parse", "main") == old  # control: the branch gone, this answers
    with pytest.raises(SubjectError, match="tracked ref main is not in the mirror"):
        latest(workspace)


def test_notes_replace_and_remote_refs_of_the_subject_never_reach_the_mirror(
    tw, workspace, subject
):
    old, tip = subject.commits[0], subject.commits[-1]
    git(subject.path, "update-ref", "refs/remotes/origin/main", old)
    git(subject.path, "update-ref", "refs/notes/main", old)
    git(subject.path, "notes", "add", "-m", "a note", tip)
    git(subject.path, "replace", tip, old)
    assert fetched(tw, subject).exit_code == 0
    mirror = workspace.mirror_dir("toy")
    refs = plain(mirror, "for-each-ref", "--format=%(refname)").split()
    assert refs == ["refs/heads/main"]
    assert latest(workspace) == tip


def test_replace_refs_grafts_and_a_forged_commit_graph_do_not_rewrite_history(
    tw, workspace, subject
):
    """Planted in the mirror, each makes plain git see another commit or other parents;
    tracework reads the commits as they are."""
    first, tip = subject.commits[0], subject.commits[-1]
    assert fetched(tw, subject).exit_code == 0
    mirror_dir = workspace.mirror_dir("toy")
    mirror = Mirror(mirror_dir)
    assert commits_between(mirror, first, tip) == 2

    plain(mirror_dir, "update-ref", f"refs/replace/{tip}", first)
    assert plain(mirror_dir, "log", "-1", "--format=%s", tip) == "commit 0"  # control
    assert mirror.commit_info(tip).subject == "commit 2"
    assert latest(workspace) == tip
    plain(mirror_dir, "update-ref", "-d", f"refs/replace/{tip}")

    (mirror_dir / "info").mkdir(exist_ok=True)
    (mirror_dir / "info" / "grafts").write_text(f"{tip}\n")  # no parents
    assert plain(mirror_dir, "rev-list", "--count", tip) == "1"  # control
    assert commits_between(mirror, first, tip) == 2
    (mirror_dir / "info" / "grafts").unlink()

    forge_commit_graph(mirror_dir, tip)
    assert plain(mirror_dir, "rev-list", "--count", tip) == "1"  # control
    assert commits_between(mirror, first, tip) == 2


def forge_commit_graph(git_dir: Path, commit: str) -> None:
    """Write a commit-graph file, then make it say ``commit`` has no parent (git checks
    its trailing hash only when asked to verify it)."""
    plain(git_dir, "commit-graph", "write", "--reachable")
    path = git_dir / "objects" / "info" / "commit-graph"
    data = bytearray(path.read_bytes())
    assert data[:4] == b"CGPH"
    chunks = {}
    for i in range(data[6] + 1):
        at = 8 + 12 * i
        chunks[bytes(data[at : at + 4])] = struct.unpack(">Q", data[at + 4 : at + 12])[0]
    ids, commit_data = chunks[b"OIDL"], chunks[b"CDAT"]
    oids = [data[ids + 20 * i : ids + 20 * i + 20].hex() for i in range((commit_data - ids) // 20)]
    entry = commit_data + 36 * oids.index(commit)
    data[entry + 20 : entry + 24] = struct.pack(">I", 0x70000000)  # "no parent"
    path.write_bytes(bytes(data))


# -- HEAD ------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["detached", "tag"])
def test_a_subject_head_that_names_no_branch_is_a_clear_error(tw, workspace, subject, how):
    """Cloned from such a subject, the mirror's HEAD is a bare commit id that no fetch
    ever moves: following it would freeze "latest" where the subject chose."""
    old = subject.commits[0]
    if how == "detached":
        git(subject.path, "checkout", "-q", "--detach", old)
    else:
        git(subject.path, "tag", "v0", old)
        git(subject.path, "symbolic-ref", "HEAD", "refs/tags/v0")
    result = fetched(tw, subject, track="HEAD")
    refused(
        result,
        "subject toy: mirror created",
        "its tracked ref HEAD names no branch",
        "is detached",
        "branches and tags: main",
        "set track in sources/toy.toml",
    )
    assert plain(workspace.mirror_dir("toy"), "rev-parse", "HEAD") == old  # control


def test_a_mirror_head_naming_another_namespace_is_refused(tw, workspace, subject):
    assert fetched(tw, subject, track="HEAD").exit_code == 0
    mirror = workspace.mirror_dir("toy")
    plain(mirror, "update-ref", "refs/remotes/x", subject.commits[0])
    plain(mirror, "symbolic-ref", "HEAD", "refs/remotes/x")
    refused(tw("fetch", "toy"), "HEAD names no branch", "names refs/remotes/x")


def test_head_naming_a_branch_the_subject_dropped_says_so(tw, workspace, subject):
    assert fetched(tw, subject, track="HEAD").exit_code == 0
    git(subject.path, "branch", "-q", "-m", "main", "trunk")
    refused(
        tw("fetch", "toy"),
        "its tracked ref HEAD names branch main, which is not in the mirror",
        "branches and tags: trunk",
    )


# -- what a track may name -----------------------------------------------------------------------


def test_a_40_hex_track_is_refused_and_a_branch_so_named_is_written_in_full(tw, workspace, subject):
    old, tip = subject.commits[0], subject.commits[-1]
    git(subject.path, "branch", old, tip)  # a branch named by the old commit's id
    refused(
        tw("subject", "add", "toy", str(subject.path), "--track", old),
        f"track '{old}' is a commit id",
        f"refs/heads/{old}",
    )
    (workspace.sources / "toy.toml").write_text(f'url = "{subject.path}"\ntrack = "{old}"\n')
    refused(tw("fetch", "toy"), "sources/toy.toml", "is a commit id")
    assert not workspace.mirror_dir("toy").exists()

    (workspace.sources / "toy.toml").write_text(
        f'url = "{subject.path}"\ntrack = "refs/heads/{old}"\n'
    )
    result = tw("fetch", "toy")
    assert result.exit_code == 0, result.output
    assert plain(workspace.mirror_dir("toy"), "rev-parse", old) == old  # control: an object id
    assert latest(workspace) == tip


@pytest.mark.parametrize(
    "track",
    [
        "refs/remotes/origin/main",
        "refs/notes/commits",
        "refs/tracework/pins/x",
        "refs/x",
        "refs/heads/.hidden",
        "refs/tags/-x",
    ],
)
def test_a_track_outside_branches_and_tags_is_refused(tw, workspace, subject, track):
    refused(
        tw("subject", "add", "toy", str(subject.path), "--track", track),
        "is not a branch or tag of the subject",
        "refs/tags/v1.2",
    )


@pytest.mark.parametrize(
    ("kind", "make"),
    [
        ("tree", ("tag", "t", "{tree}")),
        ("tree", ("tag", "-a", "-m", "annotated", "t", "{tree}")),
        ("blob", ("tag", "t", "{blob}")),
    ],
)
def test_a_tag_of_a_tree_or_blob_is_no_commit_to_follow(tw, workspace, subject, kind, make):
    tip = subject.commits[-1]
    values = {
        "tree": git(subject.path, "rev-parse", f"{tip}^{{tree}}").strip(),
        "blob": git(subject.path, "rev-parse", f"{tip}:lamp.txt").strip(),
    }
    git(subject.path, *(arg.format(**values) for arg in make))
    result = fetched(tw, subject, track="refs/tags/t")
    refused(
        result,
        f"its tracked ref refs/tags/t (refs/tags/t) points at a {kind}, not a commit",
        "track a branch, or a tag of a commit, in sources/toy.toml",
    )


def test_a_branch_of_a_tree_is_no_commit_to_follow(tw, workspace, subject):
    tree = git(subject.path, "rev-parse", "HEAD^{tree}").strip()
    (subject.path / ".git" / "refs" / "heads" / "odd").write_text(f"{tree}\n")
    refused(fetched(tw, subject, track="odd"), "refs/heads/odd) points at a tree")


def test_an_annotated_tag_of_a_commit_is_followed_to_its_commit(tw, workspace, subject):
    tip = subject.commits[-1]
    git(subject.path, "tag", "-a", "-m", "release", "v1", tip)
    git(subject.path, "tag", "-a", "-m", "again", "v1-again", "v1")  # a tag of a tag
    for track in ("refs/tags/v1", "refs/tags/v1-again"):
        (workspace.sources / "toy.toml").write_text(f'url = "{subject.path}"\ntrack = "{track}"\n')
        result = tw("fetch", "toy")
        assert result.exit_code == 0, result.output
        assert latest(workspace) == tip


def test_a_symbolic_ref_in_the_mirrors_branches_is_refused(tw, workspace, subject):
    git(subject.path, "tag", "old", subject.commits[0])
    assert fetched(tw, subject).exit_code == 0
    mirror = workspace.mirror_dir("toy")
    plain(mirror, "update-ref", "-d", "refs/heads/main")
    plain(mirror, "symbolic-ref", "refs/heads/main", "refs/tags/old")
    assert plain(mirror, "rev-parse", "refs/heads/main") == subject.commits[0]  # control
    with pytest.raises(SubjectError, match="is a symbolic ref to refs/tags/old") as caught:
        latest(workspace)
    assert "delete sources/.mirrors/toy.git" in str(caught.value)
