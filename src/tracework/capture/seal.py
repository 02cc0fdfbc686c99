"""An environment's seal: every file its build left, recorded, and checked before each use.

A built environment is the subject's code (its lock's packages, and whatever their
``.pth`` files or build backends wrote while it was built).  It is kept in the user's
cache and mounted read-only into every capture that uses it, so nothing inside a
capture can change it; but anything on the host that can write the cache could, and
an environment changed after it was built would make a capture report what the
subject never did.  So the build records, for every entry of the environment, its
kind, mode, owner and size and the SHA-256 of a file (the text of a link), and each capture
checks the environment against that record first: a changed, added or removed entry
refuses the capture, naming its path.

The check is quick where nothing changed: each file's device, inode, size,
modification and change times are recorded too, and a file whose identity is the same
is not read again (its change time cannot be set back without changing the clock).
Nothing is followed: links are recorded as links, folders walked by descriptor without
entering a link, and bounded (:mod:`.envtree`); a file with several names is read once.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracework.capture.envtree import EnvironmentRefused, Visit, walk
from tracework.capture.errors import CaptureError
from tracework.fsio import write_atomic

#: Bump when what a seal records changes.
FORMAT = 2
SEAL = "seal.json"


class EnvironmentChanged(CaptureError):
    """A cached environment whose files are not what its build recorded."""


@dataclass(frozen=True)
class Entry:
    """One entry of an environment: what it is, as the build left it."""

    kind: str  # "file", "folder", "link" or "other"
    mode: int
    size: int
    content: str  # a file's SHA-256, a link's text; "" otherwise
    identity: tuple[int, ...]  # device, inode, size, mtime, ctime (files only)
    owner: tuple[int, int]  # uid, gid

    def as_json(self) -> list[Any]:
        return [
            self.kind,
            self.mode,
            self.size,
            self.content,
            list(self.identity),
            list(self.owner),
        ]


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISREG(mode):
        return "file"
    return "other"


def _identity(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _hash(folder: int, name: str) -> str:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    digest = hashlib.sha256()
    try:
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


#: The most bytes a seal reads (each file once, however many names it has).
MAX_BYTES = 64 << 30


class _Hasher:
    """Hashes each file once by its device and inode (a hardlinked file is read once
    for all its names), within :data:`MAX_BYTES`; a sparse file is refused (a build
    could make one of terabytes that costs no disk)."""

    def __init__(self) -> None:
        self.done: dict[tuple[int, int], str] = {}
        self.read = 0

    def __call__(self, visit: Visit) -> str:
        info = visit.info
        key = (info.st_dev, info.st_ino)
        if key in self.done:
            return self.done[key]
        if info.st_blocks * 512 + (1 << 20) < info.st_size:
            raise EnvironmentRefused(f"{visit.path[:200]} is a sparse file")
        self.read += info.st_size
        if self.read > MAX_BYTES:
            raise EnvironmentRefused(
                f"the environment's files hold more than {MAX_BYTES >> 30} GiB"
            )
        self.done[key] = digest = _hash(visit.folder, visit.name)
        return digest


def _entry(visit: Visit, hasher: _Hasher) -> Entry:
    info = visit.info
    kind = _kind(info.st_mode)
    content = ""
    if kind == "file":
        content = hasher(visit)
    elif kind == "link":
        content = os.readlink(visit.name, dir_fd=visit.folder)
    size = info.st_size if kind == "file" else 0
    identity = _identity(info) if kind == "file" else ()
    owner = (info.st_uid, info.st_gid)
    return Entry(kind, stat.S_IMODE(info.st_mode), size, content, identity, owner)


def seal(folder: Path, venv: Path) -> dict[str, Entry]:
    """Record every entry of ``venv`` into ``folder/seal.json``; returns the record."""
    hasher = _Hasher()
    entries = {visit.path: _entry(visit, hasher) for visit in walk(venv)}
    record = {"format": FORMAT, "entries": {p: e.as_json() for p, e in sorted(entries.items())}}
    write_atomic(folder / SEAL, json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n")
    return entries


def recorded(folder: Path) -> dict[str, Entry]:
    """The entries ``seal.json`` records (an unreadable seal is a changed environment)."""
    try:
        record = json.loads((folder / SEAL).read_text(encoding="utf-8"))
        if record["format"] != FORMAT:
            raise ValueError(f"format {record['format']}")
        return {
            path: Entry(kind, mode, size, content, tuple(identity), (owner[0], owner[1]))
            for path, (kind, mode, size, content, identity, owner) in record["entries"].items()
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EnvironmentChanged(
            f"the environment's seal ({SEAL}) cannot be read ({exc})",
            hint="build the environment again: `tracework capture env NAME --rebuild`",
        ) from None


def verify(folder: Path, venv: Path, what: str) -> None:
    """Refuse, naming the first paths, when ``venv`` is not what ``folder``'s seal
    records: an entry changed, added or removed."""
    wanted = recorded(folder)
    seen: set[str] = set()
    problems: list[str] = []
    hasher = _Hasher()
    try:
        for visit in walk(venv):
            path, info, fd, name = visit.path, visit.info, visit.folder, visit.name
            seen.add(path)
            entry = wanted.get(path)
            if entry is None:
                problems.append(f"{path} was added")
                continue
            kind = _kind(info.st_mode)
            if kind != entry.kind or stat.S_IMODE(info.st_mode) != entry.mode:
                problems.append(f"{path} changed kind or mode")
            elif (info.st_uid, info.st_gid) != entry.owner:
                problems.append(f"{path} changed owner")
            elif kind == "link" and os.readlink(name, dir_fd=fd) != entry.content:
                problems.append(f"{path} points elsewhere")
            elif (
                kind == "file"
                and _identity(info) != entry.identity
                and (info.st_size != entry.size or hasher(visit) != entry.content)
            ):
                problems.append(f"{path} changed")
            if len(problems) > 5:
                break
    except EnvironmentRefused as exc:
        problems.append(exc.message)
    if len(problems) <= 5:
        problems += [f"{path} is gone" for path in sorted(set(wanted) - seen)]
    if problems:
        raise EnvironmentChanged(
            f"{what} is not as it was built, so nothing runs in it: "
            + "; ".join(problems[:5])
            + ("; and more" if len(problems) > 5 else ""),
            hint="something changed the cached environment after its build; build it again "
            "with `tracework capture env NAME --rebuild`",
        )
