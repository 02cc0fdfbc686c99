"""The subject's tree at a commit, exported for a capture: ``git archive``, never a checkout.

The export lives in the user's cache, one folder per commit
(``$XDG_CACHE_HOME/tracework/captures/trees/<commit>/``), so a second capture of
the same commit exports nothing.  It is made from the mirror's objects by
``git archive`` in a throwaway repository that borrows them (``objects/info/
alternates``) and whose ``info/attributes`` — which outranks any ``.gitattributes``
in the tree — unsets every attribute that would change bytes or drop files on the
way out: ``export-subst``, ``export-ignore``, ``ident``, ``text``/``eol``,
``filter``, ``working-tree-encoding``.  git runs with the hardened environment (no
hooks, no system or global config, no filter drivers), and nothing of the mirror is
checked out or written.  Every file is then compared with its blob id (its git
hash), so the export is the commit's tree byte for byte or it is refused.

Before anything is written the tree is measured against the declaration's ``[limits]``
``tree_files`` and ``tree_mib``: its ``git ls-tree -r`` listing is streamed and read
only as far as the file cap, and the sizes of its distinct blobs come from one
``cat-file --batch-check``.  A small repository can hold a tree that lists a million
paths (one folder's tree at many places) or gigabytes of files (one large blob at many
paths); it is refused for what it would write, not for what it stores.  A cached
export is measured too, so a capture's outcome does not depend on what the cache holds.

Inside the sandbox the export is mounted read-only; nothing run there can change it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO

from tracework.capture.cache import cache_folder
from tracework.capture.config import Limits, limit_maximum
from tracework.capture.errors import CaptureError, TreeTooLarge
from tracework.errors import GitError
from tracework.fsio import locked, write_atomic
from tracework.git.env import git_message, hardened_env, run_git
from tracework.git.mirror import Mirror, TreeEntry

#: Every attribute that could make ``git archive``'s bytes differ from the blobs.
NEUTRAL_ATTRIBUTES = (
    "* -text -eol -crlf -ident -filter -working-tree-encoding -export-ignore -export-subst\n"
)


#: The caps of a declaration that gives none.
DEFAULT_LIMITS = Limits()


def export_tree(mirror: Mirror, commit: str, limits: Limits = DEFAULT_LIMITS) -> Path:
    """The exported tree of ``commit`` (full id), made now unless already made; a tree
    past ``limits`` (``tree_files``, ``tree_mib``) is :class:`TreeTooLarge`, before
    anything is written."""
    check_tree_limits(mirror, commit, limits)
    folder = cache_folder("trees")
    final = folder / commit
    done = folder / f"{commit}.done"
    if done.is_file() and final.is_dir():
        return final
    with locked(final):
        if done.is_file() and final.is_dir():
            return final
        _remove(final)  # what an interrupted export left
        entries = mirror.tree(commit)
        work = Path(tempfile.mkdtemp(prefix=f".{commit[:12]}.", suffix=".tmp", dir=folder))
        try:
            git_dir = _borrowing_repository(mirror.git_dir, work / "git")
            _extract(git_dir, commit, work / "tree", entries)
            os.replace(work / "tree", final)
        finally:
            _remove(work)
        write_atomic(done, f"{commit}\n")
    return final


def check_tree_limits(mirror: Mirror, commit: str, limits: Limits) -> None:
    """Refuse the tree of ``commit`` if it holds more than ``limits.tree_files`` files,
    links and submodules, or more than ``limits.tree_mib`` MiB (every path counted at its
    blob's size, however many paths share the blob).  The listing is read only as far
    as the file cap; the sizes come from one ``cat-file --batch-check`` of the distinct
    blobs, so a blob at a million paths is looked up once."""
    paths: dict[bytes, int] = {}  # blob id → how many paths hold it (files and links)
    files = 0
    cmd = ["git", f"--git-dir={mirror.git_dir}", "ls-tree", "-r", "-z", "--full-tree"]
    with (
        tempfile.TemporaryFile() as errors,
        subprocess.Popen(
            [*cmd, "--end-of-options", commit],
            stdout=subprocess.PIPE,
            stderr=errors,
            stdin=subprocess.DEVNULL,
            env=hardened_env(),
        ) as proc,
    ):
        assert proc.stdout is not None
        try:
            for record in _records(proc.stdout):
                files += 1
                if files > limits.tree_files:
                    raise _too_large(commit, f"{limits.tree_files:,} files", "tree_files", limits)
                _mode, kind, oid = record.partition(b"\t")[0].split(b" ")
                if kind == b"blob":
                    paths[oid] = paths.get(oid, 0) + 1
        finally:
            if proc.poll() is None:
                proc.kill()
        if proc.wait() != 0:
            errors.seek(0)
            raise GitError(
                f"cannot list the tree of commit {commit[:12]} in {mirror.git_dir.name}: "
                f"{git_message(errors.read())}"
            )
    if not paths:
        return
    listed = run_git(
        mirror.git_dir,
        ["cat-file", "--batch-check=%(objectname) %(objectsize)", "--buffer"],
        input=b"".join(oid + b"\n" for oid in paths),
    ).stdout.split(b"\n")
    size = 0
    for line in listed:
        oid, _, written = line.partition(b" ")
        if oid in paths:
            if not written.isdigit():
                raise GitError(f"the tree of commit {commit[:12]} lacks blob {oid.decode()[:12]}")
            size += int(written) * paths[oid]
    if size > limits.tree_mib << 20:
        raise _too_large(commit, f"{limits.tree_mib:,} MiB of files", "tree_mib", limits)


def _records(stream: IO[bytes]) -> Iterator[bytes]:
    """The NUL-terminated records of ``stream``, as they arrive."""
    buffer = bytearray()
    searched = 0
    while chunk := stream.read(1 << 16):
        buffer += chunk
        start = 0
        while (end := buffer.find(0, searched)) != -1:
            yield bytes(buffer[start:end])
            start = searched = end + 1
        del buffer[:start]
        searched = len(buffer)
    if buffer:
        yield bytes(buffer)


def _too_large(commit: str, what: str, setting: str, limits: Limits) -> TreeTooLarge:
    return TreeTooLarge(
        f"the tree of {commit[:12]} holds more than {what}, the cap of [limits] {setting} = "
        f"{getattr(limits, setting)}; nothing was exported",
        hint=f"if the subject is meant to be this large, raise [limits] {setting} in the "
        f"capture's declaration, captures/NAME.toml (at most {limit_maximum(setting):,})",
    )


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _borrowing_repository(mirror_dir: Path, git_dir: Path) -> Path:
    """An empty bare repository that reads the mirror's objects and neutralises every
    attribute (see the module's docstring)."""
    run_git(None, ["init", "--bare", "--quiet", "--template=", "--", str(git_dir)])
    (git_dir / "objects" / "info").mkdir(parents=True, exist_ok=True)
    objects = (mirror_dir / "objects").resolve()
    (git_dir / "objects" / "info" / "alternates").write_text(f"{objects}\n", encoding="utf-8")
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "attributes").write_text(NEUTRAL_ATTRIBUTES, encoding="utf-8")
    return git_dir


def git_blob_id(data: bytes) -> str:
    """The id git gives a blob of ``data`` (SHA-1 of ``blob <size>\\0`` and the bytes)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _extract(git_dir: Path, commit: str, root: Path, entries: dict[str, TreeEntry]) -> None:
    """Stream ``git archive`` of ``commit`` into ``root``, checking each member against
    the tree: only its paths, only files, folders and links, each with its blob's bytes."""
    folders = {str(p) for path in entries for p in PurePosixPath(path).parents if str(p) != "."}
    seen: set[str] = set()
    root.mkdir(mode=0o755)
    cmd = ["git", f"--git-dir={git_dir}", "-c", "core.autocrlf=false", "archive", "--format=tar"]
    with (
        tempfile.TemporaryFile() as errors,
        subprocess.Popen(
            [*cmd, "--end-of-options", commit],
            stdout=subprocess.PIPE,
            stderr=errors,
            stdin=subprocess.DEVNULL,
            env=hardened_env(),
        ) as proc,
    ):
        assert proc.stdout is not None
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
                for member in archive:
                    _write_member(archive, member, root, entries, folders)
                    seen.add(member.name)
        except tarfile.TarError as exc:
            proc.kill()
            raise GitError(
                f"git archive of {commit[:12]} gave an unreadable archive: {exc}"
            ) from None
        if proc.wait() != 0:
            errors.seek(0)
            raise GitError(f"git archive of {commit[:12]} failed: {git_message(errors.read())}")
    missing = sorted(set(entries) - seen)
    if missing:
        raise CaptureError(
            f"the export of {commit[:12]} lacks {missing[0]}"
            + (f" and {len(missing) - 1} more" if len(missing) > 1 else ""),
            hint="git archive left files out; remove the cached export and capture again",
        )


def _write_member(
    archive: tarfile.TarFile,
    member: tarfile.TarInfo,
    root: Path,
    entries: dict[str, TreeEntry],
    folders: set[str],
) -> None:
    name = member.name
    entry = entries.get(name)
    target = root / name
    if member.isdir() and (name in folders or (entry is not None and entry.kind == "submodule")):
        target.mkdir(mode=0o755)
        os.chmod(target, 0o755)
        return
    if entry is None:
        raise CaptureError(f"git archive gave {name!r}, which is not in the tree")
    if member.issym() and entry.kind == "symlink":
        link = os.fsencode(member.linkname)
        if git_blob_id(link) != entry.oid:
            raise CaptureError(f"the export's link {name} does not match its blob")
        os.symlink(member.linkname, target)
        return
    if not (member.isreg() and entry.kind == "file"):
        raise CaptureError(f"git archive gave {name!r} as another kind than the tree has")
    source = archive.extractfile(member)
    assert source is not None
    digest = hashlib.sha1(b"blob %d\0" % member.size, usedforsecurity=False)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as out:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != entry.oid:
        raise CaptureError(
            f"the export's {name} does not match its blob {entry.oid[:12]}",
            hint="an attribute or filter changed it on the way out; report this as a bug",
        )
    os.chmod(target, 0o755 if entry.mode == "100755" else 0o644)
