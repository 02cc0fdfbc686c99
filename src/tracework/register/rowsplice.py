"""The compiled copy's JSON, read and changed where a quote lands, not parsed whole.

The compiled copy (:mod:`tracework.register.store`) is one JSON array, the register's
fields in order: ``[version, name, {sources}, {quotes}, [checks], [assertions]]``, written
with ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``.  Parsing and
dumping all of it costs a tenth of a second at 10,000 quotes and grows with the
register; a quote written changes one row.  So the small head (version, name, sources)
is parsed, and the quotes object is searched as text: where it ends is kept beside the
register by the last write (sealed, see :mod:`tracework.register.append`), and in JSON
text a ``"`` inside a string is always escaped, so ``{"Q-1":[`` or ``,"Q-1":[`` can only
be a quote's key and ``":["SRC-1","a.py",[3,4],`` only the start of a quote's row.  The
changed text is exactly what dumping the changed rows whole gives (the tests compare it
with the full edit's copy, byte for byte).
"""

from __future__ import annotations

import json
from typing import Any

from tracework.register.data import QuoteData

_DECODER = json.JSONDecoder()
_SHA256 = QuoteData._fields.index("sha256")


def dumps(value: Any) -> str:
    """JSON text as the compiled copy writes it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def source_rows(text: str) -> tuple[dict[str, list[Any]], tuple[int, int]]:
    """The sources of a compiled copy's text (id → the source's row), and where their
    object lies in it.  Raises ValueError (or IndexError, TypeError) when the text is not
    laid out as expected."""
    if not text.startswith("["):
        raise ValueError("not a compiled register")
    at = 1
    for _ in range(2):  # version, name
        _, at = _DECODER.raw_decode(text, at)
        if text[at] != ",":
            raise ValueError("unexpected layout")
        at += 1
    sources, end = _DECODER.raw_decode(text, at)
    if not isinstance(sources, dict) or text[end : end + 2] != ",{":
        raise ValueError("unexpected layout")
    return sources, (at, end)


class CompiledRows:
    """The compiled copy's text, with its sources parsed and its quotes searchable.

    Raises ValueError (or IndexError, TypeError) when the text is not laid out as
    expected: the caller then takes the full edit.
    """

    def __init__(self, text: str, quotes_close: int) -> None:
        sources, (at, end) = source_rows(text)
        self.text = text
        self.sources = sources
        self.sources_span = (at, end)
        self.quotes_open, self.quotes_close = end + 1, quotes_close
        if text[quotes_close] != "}" or text[quotes_close + 1] != ",":
            raise ValueError("the quotes' end is not where it was left")
        if quotes_close == self.quotes_open + 1:
            raise ValueError("no quote yet")  # the full edit writes the first

    def _key(self, quote_id: str) -> int:
        """Where quote ``quote_id``'s row starts (its ``[``), or -1."""
        key = f'"{quote_id}":['
        for lead in "{,":
            at = self.text.find(lead + key, self.quotes_open, self.quotes_close)
            if at >= 0:
                return at + len(key)
        return -1

    def has_quote(self, quote_id: str) -> bool:
        return self._key(quote_id) >= 0

    def quote_row(self, quote_id: str) -> list[Any] | None:
        at = self._key(quote_id)
        if at < 0:
            return None
        row, _ = _DECODER.raw_decode(self.text, at)
        return row if isinstance(row, list) else None

    def holder(self, source: str, path: str, lines: tuple[int, int], sha256: str) -> str | None:
        """The first id (in the register's order) whose quote is this span with these
        bytes."""
        start = '":' + dumps([source, path, list(lines)])[:-1] + ","
        at = self.text.find(start, self.quotes_open, self.quotes_close)
        while at >= 0:
            row, _ = _DECODER.raw_decode(self.text, at + 2)
            if row[_SHA256] == sha256:
                return self.text[self.text.rfind('"', self.quotes_open, at) + 1 : at]
            at = self.text.find(start, at + 1, self.quotes_close)
        return None

    def changed(
        self, sources: bool, replaced: dict[str, list[Any]], added: list[tuple[str, list[Any]]]
    ) -> tuple[str, int]:
        """The text with ``self.sources`` written again (when ``sources``), the rows of
        ``replaced`` put in place of theirs and ``added`` appended to the quotes; and
        where the quotes now end."""
        edits: list[tuple[int, int, str]] = []
        if sources:
            edits.append((*self.sources_span, dumps(self.sources)))
        for quote_id, row in replaced.items():
            at = self._key(quote_id)
            _, end = _DECODER.raw_decode(self.text, at)
            edits.append((at, end, dumps(row)))
        tail = "".join(f",{dumps(quote_id)}:{dumps(row)}" for quote_id, row in added)
        edits.append((self.quotes_close, self.quotes_close, tail))
        edits.sort()
        pieces, cursor, shift = [], 0, 0
        for first, end, new in edits:
            pieces += [self.text[cursor:first], new]
            cursor, shift = end, shift + len(new) - (end - first)
        pieces.append(self.text[cursor:])
        return "".join(pieces), self.quotes_close + shift


def quotes_close(rows: list[Any], quotes_index: int) -> int:
    """Where the quotes object of these rows ends (its ``}``) in their dumped text."""
    return len(dumps(rows[: quotes_index + 1])) - 2
