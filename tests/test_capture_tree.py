"""The exported tree: ``git archive`` of the mirror, byte for byte the commit's blobs,
whatever the subject's ``.gitattributes`` ask, with nothing of the mirror changed."""

from __future__ import annotations

import pytest

from capture_setup import snapshot
from conftest import git
from tracework.capture import tree as tree_module
from tracework.capture.tree import export_tree
from tracework.git.mirror import Mirror
from tracework.workspace import Workspace

ATTRIBUTES = (
    "* text=auto eol=crlf\n"
    "subst.txt export-subst\n"
    "ignored.txt export-ignore\n"
    "ident.txt ident\n"
    "smudged.txt filter=evil\n"
    "encoded.txt working-tree-encoding=UTF-16\n"
)


@pytest.mark.slow
def test_the_export_is_the_commit_byte_for_byte(make_repo, pinned, tmp_path):
    repo = make_repo("attrs")
    marker = tmp_path / "filter-ran"
    for rel, content in {
        "subst.txt": "$Format:%H$\n",
        "ignored.txt": "kept all the same\n",
        "ident.txt": "$Id$\n",
        "smudged.txt": "the filter must not run\n",
        "encoded.txt": "plain text\n",
        "lf.txt": "one\ntwo\n",
        "tool.sh": "#!/bin/sh\necho hi\n",
    }.items():
        repo.write(rel, content)
    (repo.path / "tool.sh").chmod(0o755)
    repo.symlink("escape", "../../../../etc/passwd")
    git(repo.path, "add", "-A")
    # the attributes go into the index only: in the work tree they would convert the
    # files above on their way in, and the point is what they do on the way out
    oid = git(repo.path, "hash-object", "-w", "--stdin", input=ATTRIBUTES.encode()).strip()
    git(repo.path, "update-index", "--add", "--cacheinfo", f"100644,{oid},.gitattributes")
    when = {"GIT_AUTHOR_DATE": "@1767225600 +0000", "GIT_COMMITTER_DATE": "@1767225600 +0000"}
    git(repo.path, "commit", "-q", "-m", "attributes of every kind", env=when)
    commit = git(repo.path, "rev-parse", "HEAD").strip()
    pinned(name="attrs", repo=repo, commit=commit)
    mirror_dir = Workspace.find().mirror_dir("attrs")
    git(mirror_dir, "config", "filter.evil.smudge", f"touch {marker}")
    before = snapshot(mirror_dir)
    exported = export_tree(Mirror(mirror_dir), commit)
    assert snapshot(mirror_dir) == before
    assert not marker.exists()
    files = git(repo.path, "ls-tree", "-r", "--name-only", commit).split()
    for rel in files:
        path = exported / rel
        blob = git(repo.path, "cat-file", "blob", f"{commit}:{rel}")
        if rel == "escape":
            assert path.is_symlink() and str(path.readlink()) == blob
        else:
            assert path.read_text() == blob, rel
    assert (exported / "tool.sh").stat().st_mode & 0o111
    assert sorted(p.relative_to(exported).as_posix() for p in exported.rglob("*")) == sorted(files)


@pytest.mark.slow
def test_a_second_export_reuses_the_first(pinned, tw, monkeypatch):
    repo = pinned({"a.txt": "a\n"})
    mirror = Mirror(Workspace.find().mirror_dir("toy"))
    first = export_tree(mirror, repo.commits[0])

    def refuse(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(tree_module, "_extract", refuse)
    assert export_tree(mirror, repo.commits[0]) == first
    with pytest.raises(AssertionError, match="exported again"):
        (first.parent / f"{repo.commits[0]}.done").unlink()
        export_tree(mirror, repo.commits[0])
