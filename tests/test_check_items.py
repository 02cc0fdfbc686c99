"""The items the check's hot paths make by position are the items the keywords make."""

from __future__ import annotations

from tracework.drift.check import BlobCache, CheckItem, _check_file, _verified
from tracework.git.mirror import Blob, Changes, TreeEntry
from tracework.hashing import sha256_hex
from tracework.register.data import FileEntryData, QuoteData


def test_a_quote_verified_at_its_lines_is_the_item_the_keywords_make() -> None:
    digest = sha256_hex(b"return 1\n")
    quote = QuoteData("SRC-1", "pkg/a.py", (4, 4), None, digest, "return 1\n", None)
    assert _verified("SRC-1", "Q-7", quote) == CheckItem(
        "quote", "Q-7", "SRC-1", "pkg/a.py", "verified", (4, 4),
        detail="same lines", sha256=digest, sha256_at_commit=digest,
    )  # fmt: skip


class _OneBlob(BlobCache):
    """A cache holding one blob, read from no mirror."""

    def __init__(self, blob: Blob) -> None:
        self.the_blob = blob

    def blob(self, path: str) -> Blob | None:
        return self.the_blob


def test_a_file_verified_is_the_item_the_keywords_make_and_a_changed_one_says_so() -> None:
    data = b"x = 1\n"
    blob = Blob("e" * 40, len(data), sha256_hex(data), data, data)
    tree = {"a.py": TreeEntry("a.py", "100644", blob.oid, "file")}
    same = FileEntryData(blob.sha256, "file", len(data), False, None, None)
    item = _check_file("SRC-1", "a.py", same, tree, _OneBlob(blob), Changes({}, frozenset()))
    assert item == CheckItem(
        "file", "a.py", "SRC-1", "a.py", "verified", sha256=blob.sha256,
        sha256_at_commit=blob.sha256,
    )  # fmt: skip
    assert item.hint is None and item.detail == ""
    other = same._replace(sha256="0" * 64)
    changed = _check_file("SRC-1", "a.py", other, tree, _OneBlob(blob), Changes({}, frozenset()))
    assert (changed.state, changed.sha256, changed.sha256_at_commit) == (
        "changed", "0" * 64, blob.sha256,
    )  # fmt: skip
