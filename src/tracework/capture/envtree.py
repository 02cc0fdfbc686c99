"""What a build wrote, handled on the host: walked by descriptor, bounded, made inert.

An environment's files are the subject's: whatever its packages' build backends and
``.pth`` files wrote while it was built, in any shape — links, a folder nested a
thousand deep, a million entries, a setgid bit, an ACL that lets another user write,
a FIFO.  Everything tracework does with them on the host goes through this module:

- :func:`walk` visits every entry without recursion, each folder entered by
  descriptor from its parent with ``O_NOFOLLOW`` (a folder swapped for a link while
  the walk runs is refused, never entered), as many descriptors open as the tree is
  deep, and refuses a tree deeper than :data:`MAX_DEPTH` or with more than
  :data:`MAX_ENTRIES` entries;
- :func:`settle` makes the environment inert once its build has ended: every folder
  ``0755``, every file its own read and execute bits plus ``0444`` (no setuid, setgid
  or sticky bit, no write for group or others), extended attributes (POSIX ACLs,
  capabilities) removed, and, when tracework runs as root, every entry owned by root
  (the build ran as another uid); a FIFO, socket or device is refused;
- :func:`remove` removes a folder the same way, so neither depth nor links nor
  unwritable folders can make a rebuild fail.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tracework.capture.errors import CaptureError

#: The deepest folder an environment may nest (real ones nest under 20).
MAX_DEPTH = 128
#: The most entries an environment may hold (a large ML environment holds ~100,000).
MAX_ENTRIES = 1_000_000

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class EnvironmentRefused(CaptureError):
    """An environment whose shape tracework will not handle: too deep, too many entries,
    a special file, an entry that changed kind while it was walked."""


@dataclass(frozen=True)
class Visit:
    """One entry met by :func:`walk`: its path, its lstat, and the open folder and name
    it is read by (valid while it is being visited)."""

    path: str
    info: os.stat_result
    folder: int
    name: str


def walk(root: Path) -> Iterator[Visit]:
    """Every entry under ``root`` (pre-order, sorted by name within a folder)."""
    top = os.open(root, _DIR)
    stack: list[tuple[str, int, list[str]]] = [("", top, sorted(os.listdir(top), reverse=True))]
    count = 0
    try:
        while stack:
            prefix, folder, names = stack[-1]
            if not names:
                os.close(folder)
                stack.pop()
                continue
            name = names.pop()
            info = os.lstat(name, dir_fd=folder)
            count += 1
            if count > MAX_ENTRIES:
                raise EnvironmentRefused(
                    f"the environment holds more than {MAX_ENTRIES:,} entries",
                    hint="a capture's environment that large is refused; declare fewer packages",
                )
            path = prefix + name
            yield Visit(path, info, folder, name)
            if stat.S_ISDIR(info.st_mode):
                if len(stack) >= MAX_DEPTH:
                    raise EnvironmentRefused(
                        f"the environment nests folders deeper than {MAX_DEPTH} at {path[:200]}"
                    )
                try:
                    child = os.open(name, _DIR, dir_fd=folder)
                except OSError as exc:
                    raise EnvironmentRefused(
                        f"{path[:200]} cannot be entered as a folder ({exc.strerror})"
                    ) from None
                stack.append((path + "/", child, sorted(os.listdir(child), reverse=True)))
    finally:
        for _prefix, folder, _names in stack:
            os.close(folder)


def settle(root: Path, *, owner: int | None) -> None:
    """Make what the build wrote under ``root`` inert (see the module's docstring);
    ``owner`` (tracework's uid, as root) becomes every entry's owner.  The build has
    ended and its sandbox is gone, and nothing else writes the cache, so an entry met
    is the entry settled."""
    top = os.open(root, _DIR)
    try:
        if owner is not None:
            os.fchown(top, owner, owner)
        os.fchmod(top, 0o755)
        _strip(root.name, top)
    finally:
        os.close(top)
    for visit in walk(root):
        kind = visit.info.st_mode
        if owner is not None:  # first: chown clears what chmod then sets
            os.chown(visit.name, owner, owner, dir_fd=visit.folder, follow_symlinks=False)
        if stat.S_ISLNK(kind):
            continue
        if not (stat.S_ISDIR(kind) or stat.S_ISREG(kind)):
            raise EnvironmentRefused(
                f"the build left {visit.path[:200]}, which is neither a file, a folder nor "
                "a link (a FIFO, a socket or a device)"
            )
        folder = stat.S_ISDIR(kind)
        mode = 0o755 if folder else (stat.S_IMODE(kind) & 0o755) | 0o444
        os.chmod(visit.name, mode, dir_fd=visit.folder)
        try:
            fd = os.open(visit.name, _DIR if folder else _FILE, dir_fd=visit.folder)
        except OSError as exc:
            raise EnvironmentRefused(
                f"{visit.path[:200]} changed while it was settled ({exc.strerror})"
            ) from None
        try:
            _strip(visit.path, fd)
        finally:
            os.close(fd)


def _strip(where: str, fd: int) -> None:
    """Remove every extended attribute of one entry (POSIX ACLs, capabilities, …)."""
    for attribute in os.listxattr(fd):
        try:
            os.removexattr(fd, attribute)
        except OSError as exc:
            if exc.errno not in (errno.ENODATA, errno.ENOTSUP):
                raise EnvironmentRefused(
                    f"{where[:200]} keeps an extended attribute ({attribute}) tracework "
                    "cannot remove"
                ) from None


def remove(folder: Path) -> None:
    """Remove ``folder`` and everything in it: links removed, never followed; folders
    made writable first; no recursion, and two descriptors open at most (a tree a
    thousand deep is removed like any)."""
    if not os.path.lexists(folder):
        return
    if os.path.islink(folder) or not os.path.isdir(folder):
        os.unlink(folder)
        return
    fd = os.open(folder, _DIR)
    os.fchmod(fd, 0o700)
    names: list[str] = []  # from ``folder`` down to where ``fd`` is
    try:
        while True:
            deeper = None
            for entry in os.listdir(fd):
                if stat.S_ISDIR(os.lstat(entry, dir_fd=fd).st_mode):
                    deeper = entry
                    break
                os.unlink(entry, dir_fd=fd)
            if deeper is not None:
                child = os.open(deeper, _DIR, dir_fd=fd)
                os.close(fd)
                fd = child
                os.fchmod(fd, 0o700)
                names.append(deeper)
                continue
            if not names:
                break
            up = os.open("..", _DIR, dir_fd=fd)
            os.close(fd)
            fd = up
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(folder)
