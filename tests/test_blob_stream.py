"""Blobs streamed from one ``cat-file --batch`` process, read only as far as asked."""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from tracework.errors import GitError
from tracework.git import mirror as blobs_module
from tracework.git.mirror import Mirror


@pytest.fixture
def many(make_repo):
    """A repository of 60 distinct files, its mirror and its oids in tree order."""
    repo = make_repo("many")
    for n in range(60):
        repo.write(f"f{n:02d}.txt", f"line of file {n}\n" * (n + 1))
    commit = repo.commit("many files")
    mirror = Mirror(repo.path / ".git")
    return repo, mirror, [e.oid for e in mirror.tree(commit).values()]


@pytest.mark.slow
def test_a_stream_reads_forward_only_as_far_as_the_blob_asked_for(many):
    repo, mirror, oids = many
    order = oids[::-1]
    with mirror.stream_blobs(order) as stream:
        blob = stream.get(order[5])
        assert list(stream.blobs) == order[:6]  # nothing past it yet
        assert stream.get(order[2]) is stream.blobs[order[2]]  # earlier ones are kept
        everything = stream.read_all()
    assert list(everything) == order
    for oid in oids:
        data = subprocess.run(
            ["git", "cat-file", "blob", oid], cwd=repo.path, capture_output=True, check=True
        ).stdout
        assert everything[oid].sha256 == hashlib.sha256(data).hexdigest()
        assert everything[oid].data == data
    assert blob.data == everything[order[5]].data


def test_closing_a_stream_part_way_ends_git(many):
    _repo, mirror, oids = many
    stream = mirror.stream_blobs(oids)
    stream.get(oids[0])
    stream.close()
    assert stream._proc.returncode is not None  # reaped, not left running
    with pytest.raises(KeyError):
        stream.get("f" * 40)  # never asked for


def test_a_missing_object_mid_stream_is_an_error_and_ends_git(many):
    _repo, mirror, oids = many
    missing = "0" * 39 + "1"
    stream = mirror.stream_blobs([*oids[:10], missing, *oids[10:]])
    assert stream.get(oids[9]).oid == oids[9]  # the ones before it read fine
    with pytest.raises(GitError, match="missing or unreadable"):
        stream.get(oids[30])
    assert stream._proc.returncode is not None


@pytest.mark.slow
def test_check_streams_files_then_quoted_files_in_register_order(
    pinned, tw, workspace, monkeypatch
):
    """The check asks for blobs in the order its loops need them, so it works while git
    reads the rest; a set's order would make it wait on almost every file."""
    files = {f"pkg/m{n}.py": f"def f{n}():\n    return {n}\n" for n in range(12)}
    repo = pinned(files)
    registered = ["pkg/m7.py", "pkg/m2.py", "pkg/m9.py"]
    assert tw("register", "add-file", "demo", "SRC-1", *registered).exit_code == 0
    for path in ("pkg/m4.py", "pkg/m2.py", "pkg/m11.py"):
        assert tw("quote", "demo", "SRC-1", path, "--lines", "2-2").exit_code == 0
    asked: list[list[str]] = []
    real = blobs_module.Mirror.stream_blobs

    def spy(self, oids):
        stream = real(self, oids)
        asked.append([paths[o] for o in oids])
        return stream

    tree = Mirror(workspace.mirror_dir("toy")).tree(repo.commits[0])
    paths = {e.oid: p for p, e in tree.items()}
    monkeypatch.setattr(blobs_module.Mirror, "stream_blobs", spy)
    result = tw("check", "demo")
    assert result.exit_code == 0, result.output
    assert asked == [[*registered, "pkg/m4.py", "pkg/m11.py"]]


def test_a_stream_ended_early_says_so_rather_than_failing_obscurely(many):
    _repo, mirror, oids = many
    missing = "0" * 39 + "1"
    stream = mirror.stream_blobs([*oids[:3], missing])
    with pytest.raises(GitError, match="missing or unreadable"):
        stream.read_all()
    for _ in range(2):  # asked again, for the failed blob or through read_all
        with pytest.raises(GitError, match="ended early"):
            stream.get(missing)
        with pytest.raises(GitError, match="ended early"):
            stream.read_all()
    assert stream.get(oids[1]).oid == oids[1]  # what was read stays readable
    stream.close()  # closing twice is harmless


def test_paths_asked_one_at_a_time_are_answered_by_one_process(many):
    repo, mirror, oids = many
    head = repo.commits[-1]
    with mirror.stream_blobs([]) as stream:
        blob = stream.at(head, "f07.txt")
        assert blob is not None and blob.data == b"line of file 7\n" * 8
        assert stream.at(head, "f07.txt") is blob  # asked once
        assert stream.at(head, "no-such-file.txt") is None
        assert stream.at(head, "") is None  # the root tree is not a file
        assert stream.at(head, "f07.txt\nf08.txt") is None  # one name per line, never two
        assert stream.at(head, "f08.txt") is not None  # the process still answers
        process = stream._proc
    assert process.returncode == 0  # the input ended and git left
    with mirror.stream_blobs(oids) as stream, pytest.raises(ValueError):
        stream.at(head, "f07.txt")  # git holds its answers back until the names end


def test_whole_keeps_the_bytes_of_a_blob_over_the_size_cap(make_repo):
    repo = make_repo("big")
    repo.write("big.txt", "x" * 100 + "\n")
    commit = repo.commit("big")
    capped = Mirror(repo.path / ".git", size_cap=10)
    with capped.stream_blobs([]) as stream:
        blob = stream.at(commit, "big.txt")
        assert blob is not None and blob.data is None and blob.size == 101
    with capped.stream_blobs([], whole=True) as stream:
        blob = stream.at(commit, "big.txt")
        assert blob is not None and blob.data == b"x" * 100 + b"\n"


# -- found in review: each once made tracework hang, crash or lie --------------


def test_a_missing_object_among_many_is_reported_not_waited_on(make_repo):
    repo = make_repo("many")
    for n in range(300):
        repo.write(f"f{n}.txt", f"file {n}\n" * 50)
    commit = repo.commit("many files")
    mirror = Mirror(repo.path / ".git")
    oids = [e.oid for e in mirror.tree(commit).values()]
    missing = "0" * 39 + "1"
    # the missing id sorts first, so git still has thousands of bytes queued behind it
    with pytest.raises(GitError, match="missing or unreadable"):
        mirror.read_blobs([missing, *oids] * 20)
