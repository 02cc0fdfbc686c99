"""Cutting text and HTML to about a number of bytes: the head and tail kept, a note between.

Pure functions on strings, used by the output cap (:mod:`tracework.render.outputs`): a
cut never falls inside a UTF-8 character, prefers a line end nearby, and in HTML falls
between tags and outside entities, so no tag is broken and none is made.
"""

from __future__ import annotations

import html
import re

#: Where a reader changes the cap, named in every note a cut leaves.
SETTING = "[render] output_cap in tracework.toml"


def cut_text(text: str, cap: int) -> str:
    """``text``'s first and last ``cap / 2`` bytes (UTF-8), cut at line ends when one is
    near, with a line between them saying how much was cut."""
    data = text.encode("utf-8", "surrogatepass")
    half = cap // 2
    head_end = _char_start(data, half)
    newline = data.rfind(b"\n", 0, head_end)
    if newline >= half // 2:
        head_end = newline + 1
    tail_start = _char_start(data, len(data) - half)
    newline = data.find(b"\n", tail_start, tail_start + half // 2)
    if newline >= 0:
        tail_start = newline + 1
    middle = data[head_end:tail_start]
    lines = middle.count(b"\n")
    counted = f", {lines:,} lines" if lines else ""
    head = data[:head_end].decode("utf-8", "surrogatepass")
    return (
        head
        + ("" if not head or head.endswith("\n") else "\n")
        + f"[… {amount(len(middle))}{counted} cut from the middle of this output: a report "
        f"keeps the first and last {amount(half)} of an output over {amount(cap)} "
        f"({SETTING}) …]\n" + data[tail_start:].decode("utf-8", "surrogatepass")
    )


def cut_html(page: str, cap: int) -> str:
    """HTML output's first and last ``cap / 2`` bytes or so, with a note between them.

    Both cuts fall between tags, never inside one or inside an entity, so no tag is
    broken and none is made; an element the cut leaves open is closed by the browser as
    any unclosed element is.  (A record card with a huge field keeps its head and tail,
    rather than the whole records section being left out.)
    """
    half = cap // 2
    head_end = _html_text_position(page, _char_index(page, half), backwards=True)
    tail_start = _html_text_position(
        page, _char_index(page, utf8_size(page) - half), backwards=False
    )
    if tail_start <= head_end:  # no place between tags to cut at: the note alone
        head_end, tail_start = 0, len(page)
    middle = utf8_size(page[head_end:tail_start])
    note = html.escape(
        f"[… {amount(middle)} cut from the middle of this output: a report keeps the first "
        f"and last {amount(half)} of an output over {amount(cap)} ({SETTING}) …]"
    )
    return f'{page[:head_end]}<div class="tw-cut">{note}</div>{page[tail_start:]}'


def _html_text_position(page: str, at: int, *, backwards: bool) -> int:
    """``at``, moved to a place between tags and outside any entity (``&amp;``)."""
    opening, closing = page.rfind("<", 0, at), page.rfind(">", 0, at)
    if opening > closing:  # inside a tag: to its start, or past its end
        at = opening if backwards else page.find(">", at) + 1 or len(page)
    entity = page.rfind("&", max(0, at - 32), at)
    if entity >= 0 and _ENTITY_START.fullmatch(page, entity, at):  # inside an entity
        end = page.find(";", at, at + 32)
        at = entity if backwards or end < 0 else end + 1
    return at


_ENTITY_START = re.compile(r"&#?[0-9A-Za-z]*")


def _char_index(text: str, size: int) -> int:
    """The index in ``text`` at which its first ``size`` UTF-8 bytes end (about)."""
    if text.isascii():
        return max(0, min(size, len(text)))
    prefix = text.encode("utf-8", "surrogatepass")[: max(0, size)]
    return len(prefix.decode("utf-8", "ignore"))


def _char_start(data: bytes, at: int) -> int:
    """``at``, moved back to the first byte of the UTF-8 character it falls in."""
    while 0 < at < len(data) and data[at] & 0xC0 == 0x80:
        at -= 1
    return at


def utf8_size(text: str) -> int:
    """UTF-8 bytes of ``text`` (the encoding skipped when it is all ASCII)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def amount(size: int) -> str:
    """A size in words: ``512 bytes``, ``1.5 KiB``, ``27 MiB``."""
    if size >= 1 << 20:
        return f"{size / (1 << 20):.1f} MiB".replace(".0 MiB", " MiB")
    if size >= 1 << 10:
        return f"{size / (1 << 10):.1f} KiB".replace(".0 KiB", " KiB")
    return f"{size} bytes"
