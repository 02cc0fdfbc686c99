"""Files a subject shipped, read on the host: only regular files, never through a link.

The exported tree and a built environment hold the subject's own links.  Followed on
the host, a link committed as ``pyproject.toml`` → ``/proc/self/environ``, or a
folder replaced by a link to ``~/.ssh`` at another commit, would make tracework read,
hash or quote the caller's secrets.  So every file tracework reads there is opened
one path component at a time, each with ``O_NOFOLLOW`` from the folder before it: a
link anywhere on the way is refused (:class:`NotRegular`, whose message names the
path and what is in the way, never the file's content).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from tracework.capture.errors import NotRegular

__all__ = ["NotRegular", "opened", "opened_folder", "read_regular", "sha256_regular"]


def _parts(rel: str, *, empty: bool = False) -> list[str]:
    path = PurePosixPath(rel)
    parts = [part for part in path.parts if part != "."]
    if (not parts and not empty) or path.is_absolute() or ".." in parts:
        raise NotRegular(f"{rel!r} is not a path inside the tree")
    return parts


@contextmanager
def _walked(root: Path, parts: list[str], folder_last: bool) -> Iterator[int]:
    """A descriptor of ``root/parts…``, each component entered with ``O_NOFOLLOW``
    from the one before; the last a folder or (not ``folder_last``) a regular file."""
    current = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for depth, name in enumerate(parts):
            last = depth == len(parts) - 1
            where = "/".join(parts[: depth + 1])
            try:
                info = os.lstat(name, dir_fd=current)
            except FileNotFoundError:
                raise NotRegular(f"{where} does not exist") from None
            if stat.S_ISLNK(info.st_mode):
                what = "is a symbolic link" if last else "is a symbolic link on the way"
                raise NotRegular(
                    f"{where} {what}: tracework reads the subject's files on the host "
                    "only as regular files, never through a link",
                    hint="a capture needs the file itself committed at this path",
                )
            folder = folder_last or not last
            if not (stat.S_ISDIR if folder else stat.S_ISREG)(info.st_mode):
                raise NotRegular(f"{where} is not {'a folder' if folder else 'a regular file'}")
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
            flags |= os.O_DIRECTORY if folder else os.O_NONBLOCK  # a FIFO never blocks us
            try:
                fd = os.open(name, flags, dir_fd=current)
            except OSError as exc:  # replaced by a link or another kind meanwhile
                raise NotRegular(f"{where} cannot be opened ({exc.strerror})") from None
            os.close(current)
            current = fd
        kind = os.fstat(current).st_mode
        if not (stat.S_ISDIR(kind) if folder_last else stat.S_ISREG(kind)):
            raise NotRegular(f"{'/'.join(parts)} changed kind while it was opened")
        yield current
    finally:
        os.close(current)


@contextmanager
def opened(root: Path, rel: str) -> Iterator[int]:
    """A read-only descriptor of the regular file ``rel`` under ``root``, every folder
    on the way entered with ``O_NOFOLLOW``; :class:`NotRegular` otherwise."""
    with _walked(root, _parts(rel), folder_last=False) as fd:
        yield fd


@contextmanager
def opened_folder(root: Path, rel: str) -> Iterator[int]:
    """A descriptor of the folder ``rel`` under ``root`` (``""``: ``root`` itself),
    reached as :func:`opened` reaches a file."""
    with _walked(root, _parts(rel, empty=True), folder_last=True) as fd:
        yield fd


def read_regular(root: Path, rel: str, limit: int) -> bytes:
    """The bytes of ``rel`` under ``root`` (see :func:`opened`), at most ``limit``."""
    with opened(root, rel) as fd:
        if os.fstat(fd).st_size > limit:
            raise NotRegular(f"{rel} is larger than {limit:,} bytes")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > limit:
                raise NotRegular(f"{rel} is larger than {limit:,} bytes")
            chunks.append(chunk)
    return b"".join(chunks)


def sha256_regular(root: Path, rel: str) -> str:
    """SHA-256 of ``rel`` under ``root`` (see :func:`opened`), streamed."""
    digest = hashlib.sha256()
    with opened(root, rel) as fd:
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
