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

import hashlib
from bisect import bisect_right
from collections.abc import Iterable


def sha256_hex(data: bytes) -> str:
    """Full lowercase hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_stream(chunks: Iterable[bytes]) -> str:
    """SHA-256 of a stream of chunks, for blobs too large to hold in memory."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


class Lines:
    """The line structure of a blob: byte offsets of line starts, computed once.

    ``span(a, b)`` returns the bytes of lines ``a..b`` (1-based, inclusive) with the
    last line's terminator, so that ``sha256_hex(lines.span(a, b))`` is the span hash.
    """

    __slots__ = ("data", "starts")

    def __init__(self, data: bytes) -> None:
        self.data = data
        starts = [0]
        find = data.find
        pos = find(b"\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = find(b"\n", pos + 1)
        if starts[-1] == len(data) and len(starts) > 1:
            starts.pop()  # a final newline does not open an empty last line
        if not data:
            starts = []
        self.starts = starts

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


def display_text(data: bytes) -> str:
    """Decode for display: UTF-8 with replacement characters, never failing."""
    return data.decode("utf-8", errors="replace")
