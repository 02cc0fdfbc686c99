"""What a build wrote, handled on the host (fast, no sandbox): made inert, walked and
removed without recursion or links, sealed with each file read once."""

from __future__ import annotations

import contextlib
import os
import stat
import struct
from pathlib import Path

import pytest

from tracework.capture import envtree, seal
from tracework.capture.envtree import EnvironmentRefused, remove, settle, walk

#: A POSIX ACL granting uid 1000 rwx (``system.posix_acl_access``'s binary form).
ACL = struct.pack("<I", 2) + b"".join(
    struct.pack("<HHI", tag, perm, uid)
    for tag, perm, uid in (
        (1, 7, 0xFFFFFFFF),
        (2, 7, 1000),
        (4, 5, 0xFFFFFFFF),
        (0x10, 7, 0xFFFFFFFF),
        (0x20, 5, 0xFFFFFFFF),
    )
)


def _deep(root: Path, depth: int) -> None:
    """``root/d/d/…/leaf.txt``, made by descriptor (paths that long defeat pathlib)."""
    root.mkdir()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)


def test_settle_leaves_nothing_that_grants_more_than_reading(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    tool = venv / "bin" / "tool"
    tool.write_bytes(b"#!/bin/sh\n")
    tool.chmod(0o2744)  # setgid, no group exec: chown keeps it, a +x would arm it
    shared = venv / "open"
    shared.mkdir()
    shared.chmod(0o777)
    note = venv / "note.txt"
    note.write_text("n")
    note.chmod(0o666)
    os.setxattr(note, "user.planted", b"1")
    with contextlib.suppress(OSError):  # a file system without ACLs: the user one stands
        os.setxattr(note, "system.posix_acl_access", ACL)
    (venv / "link").symlink_to("/etc/passwd")
    settle(venv, owner=os.geteuid() if os.geteuid() == 0 else None)
    assert stat.S_IMODE(tool.stat().st_mode) == 0o744
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755
    mode = stat.S_IMODE(note.stat().st_mode)
    assert mode & 0o7022 == 0 and mode & 0o444 == 0o444  # no special bit, no write but ours
    assert os.listxattr(note) == []
    assert os.readlink(venv / "link") == "/etc/passwd"  # a link is left a link
    assert stat.S_IMODE(Path("/etc/passwd").stat().st_mode) == 0o644  # never followed


def test_settle_refuses_a_special_file(tmp_path):
    venv = tmp_path / "venv"
    venv.mkdir()
    os.mkfifo(venv / "pipe")
    with pytest.raises(EnvironmentRefused, match="pipe, which is neither a file"):
        settle(venv, owner=None)


def test_a_tree_too_deep_is_refused_and_still_removed(tmp_path):
    root = tmp_path / "env"
    _deep(root, 1500)  # deeper than Python's recursion allows os.walk and rmtree to go
    with pytest.raises(EnvironmentRefused, match="deeper than"):
        list(walk(root))
    remove(root)
    assert not root.exists()


def test_remove_takes_unwritable_folders_and_never_follows_a_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    root = tmp_path / "env"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("f")
    (root / "a" / "to-outside").symlink_to(outside)
    (root / "a" / "b").chmod(0o500)
    (root / "a").chmod(0o500)
    remove(root)
    assert not root.exists() and (outside / "keep.txt").read_text() == "keep"


def test_walk_refuses_too_many_entries(tmp_path, monkeypatch):
    monkeypatch.setattr(envtree, "MAX_ENTRIES", 10)
    for n in range(11):
        (tmp_path / f"f{n}").write_text("x")
    with pytest.raises(EnvironmentRefused, match="more than 10 entries"):
        list(walk(tmp_path))


def test_a_seal_reads_a_file_with_many_names_once_and_refuses_a_sparse_one(tmp_path, monkeypatch):
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "big").write_bytes(b"x" * 4096)
    for n in range(50):
        os.link(venv / "big", venv / f"name{n}")
    read: list[str] = []
    real = seal._hash
    monkeypatch.setattr(seal, "_hash", lambda folder, name: read.append(name) or real(folder, name))
    entries = seal.seal(tmp_path, venv)
    assert len(read) == 1 and len({e.content for e in entries.values()}) == 1
    seal.verify(tmp_path, venv, "the environment")  # as it was built
    with open(venv / "sparse", "wb") as handle:
        handle.truncate(1 << 34)  # 16 GiB of nothing, no disk
    with pytest.raises(EnvironmentRefused, match="sparse is a sparse file"):
        seal.seal(tmp_path, venv)


def test_a_seal_notices_a_changed_owner(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("changing a file's owner needs root")
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "f").write_text("f")
    seal.seal(tmp_path, venv)
    os.chown(venv / "f", 1000, 1000)
    with pytest.raises(seal.EnvironmentChanged, match="f changed owner"):
        seal.verify(tmp_path, venv, "the environment")
