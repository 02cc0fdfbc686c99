"""The hash rule and the line rule, in one place.

A file's hash is SHA-256 of its blob bytes::

    git show <commit>:<path> | sha256sum

A span's hash is SHA-256 of the exact bytes from the start of its first line to the
end of its last line, including that line's terminator if it has one.  Lines are what
git counts: the bytes split after each ``\\n`` and nothing else (no form feeds, no
U+2028, no lone CR).  For a span whose last line ends in a newline this equals::

    git show <commit>:<path> | sed -n 'A,Bp' | sha256sum
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
from bisect import bisect_right
from itertools import accumulate
from pathlib import Path


def sha256_hex(data: bytes) -> str:
    """Full lowercase hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """:func:`sha256_hex` of a file's bytes, read in chunks rather than whole."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def span_bytes(text: str, raw_b64: str | None) -> bytes:
    """The exact bytes a quote's hash covers: its raw bytes when kept, else its text."""
    return base64.b64decode(raw_b64) if raw_b64 else text.encode("utf-8")


class Lines:
    """The line structure of a blob: byte offsets of line starts, built on first use.

    ``span(a, b)`` returns the bytes of lines ``a..b`` (1-based, inclusive) with the
    last line's terminator, so that ``sha256_hex(lines.span(a, b))`` is the span hash.
    :meth:`holds_at` answers "are these bytes still at line a?" without building the
    index, which is what most quotes of an unchanged file need.
    """

    __slots__ = ("_starts", "data")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._starts: list[int] | None = None

    @property
    def starts(self) -> list[int]:
        """Byte offset of the start of each line."""
        if self._starts is None:
            if not self.data:
                self._starts = []
            else:
                pieces = self.data.split(b"\n")
                if not pieces[-1]:
                    pieces.pop()  # a final newline does not open an empty last line
                self._starts = [0, *accumulate(len(piece) + 1 for piece in pieces[:-1])]
        return self._starts

    def holds_at(self, first: int, needle: bytes) -> bool:
        """Whether ``needle`` (whole lines) occurs starting exactly at line ``first``."""
        data = self.data
        terminated = needle.endswith(b"\n")  # else it can only be the data's last line
        if not needle or (not terminated and not data.endswith(needle)):
            return False
        if self._starts is not None:
            if first > len(self._starts):
                return False
            start = self._starts[first - 1]
            ends_right = terminated or start + len(needle) == len(data)
            return ends_right and data.startswith(needle, start)
        line, counted = 1, 0
        pos = data.find(needle)
        while pos != -1:
            line += data.count(b"\n", counted, pos)
            counted = pos
            if line > first:
                return False
            if line == first and (pos == 0 or data[pos - 1] == 0x0A):
                return terminated or pos + len(needle) == len(data)
            pos = data.find(needle, pos + 1)
        return False

    def __len__(self) -> int:
        return len(self.starts)

    def _end(self, line: int) -> int:
        return self.starts[line] if line < len(self.starts) else len(self.data)

    def span(self, first: int, last: int) -> bytes:
        """Bytes of lines ``first..last`` (1-based, inclusive)."""
        if not 1 <= first <= last <= len(self.starts):
            raise IndexError(f"lines {first}-{last} outside 1-{len(self.starts)}")
        return self.data[self.starts[first - 1] : self._end(last)]

    def line_of_offset(self, offset: int) -> int:
        """1-based line number holding byte ``offset``."""
        return bisect_right(self.starts, offset)

    def find_span(self, needle: bytes) -> list[tuple[int, int]]:
        """Every place where ``needle`` occurs as whole lines, as (first, last) pairs.

        A match must start at a line start and end at a line end (after a ``\\n`` or
        at the end of the data), so a span never matches half a line.
        """
        if not needle:
            return []
        found: list[tuple[int, int]] = []
        data, starts = self.data, self.starts
        pos = data.find(needle)
        while pos != -1:
            end = pos + len(needle)
            first = bisect_right(starts, pos)
            if starts[first - 1] == pos and (end == len(data) or data[end - 1 : end] == b"\n"):
                last = bisect_right(starts, end - 1)
                found.append((first, last))
            pos = data.find(needle, pos + 1)
        return found

    def text_lines(self) -> list[bytes]:
        """Every line as bytes, with its terminator."""
        return [self.span(i, i) for i in range(1, len(self.starts) + 1)]


def is_binary(data: bytes) -> bool:
    """Git's own heuristic: a NUL byte in the first 8000 bytes means binary."""
    return b"\0" in data[:8000]


def text_lines(kind: str | None, data: bytes | None) -> Lines | None:
    """The lines of a tree entry's blob (its ``kind`` and bytes) if it is a quotable text
    file, else None: what a quote can be looked for in."""
    if kind != "file" or data is None or is_binary(data):
        return None
    return Lines(data)


#: The first line of every Git LFS pointer, exactly as the pointer spec writes it.
LFS_POINTER_HEADER = b"version https://git-lfs.github.com/spec/v1\n"
#: Git LFS reads only blobs smaller than this as pointers (its ``blobSizeCutoff``).
LFS_POINTER_CUTOFF = 1024


def is_lfs_pointer(data: bytes) -> bool:
    """Whether a blob is a Git LFS pointer: small, and opening with the spec's header line.

    Judged from the bytes alone, as git-lfs judges them; git-lfs is never run, so the
    pointer is what gets hashed and shown, never the content it names.
    """
    return len(data) < LFS_POINTER_CUTOFF and data.startswith(LFS_POINTER_HEADER)


def display_text(data: bytes) -> str:
    """Decode for display: UTF-8 with replacement characters, never failing."""
    return data.decode("utf-8", errors="replace")


def is_document_url(location: str) -> bool:
    """Whether a document source's location is a URL (never fetched) or a workspace path."""
    return location.startswith("https://")


def document_location_problem(location: str) -> str | None:
    """Why ``location`` cannot locate a document source, or None.

    A document is an https URL (printable ASCII, a host, no credentials) or a path
    relative to the workspace root (no leading ``/``, no ``..``, no control characters),
    so that a hand-edited register cannot make ``check`` read outside the workspace.
    """
    if is_document_url(location):
        authority = location[len("https://") :].split("/", 1)[0]
        if not all(0x21 <= ord(c) <= 0x7E for c in location) or not authority:
            return "an https URL needs a host and printable ASCII only"
        if "@" in authority:
            return "credentials in a document URL are refused: it is copied into every report"
        return None
    if "://" in location or location.startswith("/") or not location:
        return "a document is an https URL or a path relative to the workspace root"
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in location):
        return "a document path may not hold control characters"
    if ".." in location.replace("\\", "/").split("/"):
        return "a document path may not climb out with '..'"
    return None


def workspace_file_sha256(root: Path, location: str) -> str:
    """SHA-256 of the regular file at ``location`` inside ``root``: never a file outside it
    (after symlinks), never a device or FIFO (opened without blocking, checked first).

    Raises ``OSError`` (with its reason in ``strerror``) for anything else.
    """
    base = root.resolve()
    try:
        real = (base / location).resolve(strict=True)
    except RuntimeError:  # a symlink loop (Python 3.11)
        raise OSError(0, "a symlink loop") from None
    if base not in real.parents:
        raise OSError(0, "outside the workspace (after symlinks)")
    fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        return hashlib.file_digest(handle, "sha256").hexdigest()
