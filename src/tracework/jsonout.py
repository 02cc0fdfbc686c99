"""JSON for standard output: orjson's speed with ``json.dumps(ensure_ascii=True)``'s text.

A check of 10,000 quotes prints about 4 MB of JSON: the standard library encodes it
in about 30 ms, a tenth of the whole check, and orjson in about 4 ms.  The text
stays ASCII, as ``ensure_ascii`` makes it, so subject text (a file name, a diff)
reaches a terminal or a log as ``\\uXXXX`` escapes, never as raw bidi or control
characters.  For what tracework prints (dicts, lists, strings, ints, bools and None;
no floats) the text is exactly what ``json.dumps(data, ensure_ascii=True)`` gives with
compact separators, or with ``indent=2``; subclasses, dataclasses and dates go to the
standard library.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from itertools import islice
from typing import IO, Any

import orjson

# Types orjson would encode its own way (a dict subclass's own order, a date): refused,
# so the standard library encodes them, or refuses them, as it always did.
_PASSTHROUGH = (
    orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
# What ensure_ascii escapes and orjson does not: DEL and everything beyond ASCII.
_UNESCAPED = re.compile(r"[^\x00-\x7e]")


def dumps(data: Any, *, indent: bool = False) -> str:
    """``data`` as ASCII JSON text: compact, or indented by two spaces."""
    return _encoded(data, indent).decode("ascii")


def _encoded(data: Any, indent: bool) -> bytes:
    """:func:`dumps` as the bytes of its ASCII text."""
    try:
        raw = orjson.dumps(data, option=_PASSTHROUGH | (orjson.OPT_INDENT_2 if indent else 0))
    except TypeError:  # refused or passed through: lone surrogates, non-str keys, subclasses…
        if indent:
            return json.dumps(data, ensure_ascii=True, indent=2).encode("ascii")
        return json.dumps(data, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    if raw.isascii() and b"\x7f" not in raw:  # two fast scans; the usual case
        return raw
    return _UNESCAPED.sub(_escape, raw.decode("utf-8")).encode("ascii")


def write_json(out: IO[bytes], data: Mapping[str, Any], *, indent: bool = False) -> None:
    """``dumps(data)`` and a newline, written to ``out``.

    A value that is an iterator is written as the array it yields, :data:`CHUNK` items
    at a time: a check of 100,000 files and 200,000 quotes prints 85 MB of JSON, and
    holding its items as dicts, then as one text, then as its bytes would take most of
    the check's memory.  Compact text only; indented text (for a person) is made whole.
    """
    if indent:
        whole = {k: list(v) if isinstance(v, Iterator) else v for k, v in data.items()}
        out.write(_encoded(whole, True) + b"\n")
        return
    opening = b"{"
    for key, value in data.items():
        out.write(opening + _encoded(key, False) + b":")
        opening = b","
        if not isinstance(value, Iterator):
            out.write(_encoded(value, False))
            continue
        out.write(b"[")
        between = b""
        while chunk := list(islice(value, CHUNK)):
            out.write(between)
            out.write(memoryview(_encoded(chunk, False))[1:-1])  # the items, not the brackets
            between = b","
        out.write(b"]")
    out.write(b"}\n" if opening == b"," else b"{}\n")


#: Items of an iterator :func:`write_json` encodes at a time.
CHUNK = 4096


def _escape(match: re.Match[str]) -> str:
    """One character as JSON escapes (a surrogate pair above U+FFFF)."""
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}"
