"""The register's layout: its top-level keys in the order ``tracework register new``
writes them, which the fast path of a write depends on.

A new quote is spliced in just after the last entry of ``quotes:``, where a dump of
the register with one more quote puts it, which is only known while another key
follows (at the end of a document a block scalar kept with ``|+`` is dumped another
way), and a new file just after its source's ``files:``, which must come before the
quotes.  A register whose keys are in another valid order (the checks first, the quotes
last: by hand, or from an older tracework) would take the full edit on every write,
since that edit keeps the order it reads.  So the full edit puts the keys in the usual
order first (:func:`usual_text`), once: each key's lines move whole, with the comment
lines just above it, the comments above the first key and below the last stay where
they are, and ``checks: []`` follows quotes that would end the document.  It is done
only where the moved text reads back as the same register, field for field and in the
same order; otherwise the register is left in its order, and written the slow way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

#: The top-level keys, in the order tracework writes them (the register's fields).
ORDER = ("version", "name", "sources", "quotes", "checks", "assertions")

_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(?:[ \t].*)?\n")


def top_level_keys(lines: Sequence[str]) -> list[str] | None:
    """The keys of the document's top-level block mapping, in the order of its lines
    (``lines`` with their line ends); None when a line at column 0 is neither a comment
    nor a plain ``key:`` (a document marker, a directive, a flow mapping, a quoted or
    complex key: a layout not to be moved line by line)."""
    keys = []
    for line in lines:
        if line[:1] in (" ", "#", "\n", ""):
            continue
        key = _KEY.fullmatch(line)
        if key is None:
            return None
        keys.append(key[1])
    return keys


def is_usual(keys: Sequence[str]) -> bool:
    """Whether the keys are known, in the usual order, with one after ``quotes``."""
    if any(key not in ORDER for key in keys):
        return False
    places = [ORDER.index(key) for key in keys]
    return places == sorted(places) and keys[-1:] != ["quotes"]


class _Section(NamedTuple):
    lead: list[str]  # the comment lines (and blank lines among them) just above the key
    key: str
    lines: list[str]  # the key's line and every line of its value


def usual_text(text: str) -> str | None:
    """``text`` with its top-level keys in the usual order and ``checks: []`` after
    quotes that would end it; None when it is in that order already, or its lines are
    not laid out simply enough to move (see :func:`top_level_keys`).

    A section is its key's line and every line after it up to the next key, but for the
    comment lines at column 0 that come last (with the blank lines among them): those
    introduce the next key, and move with it; those above the first key and after the
    last stay at the top and at the end.  The caller checks that the result reads back
    as the same data.
    """
    if not text.endswith("\n"):
        return None
    lines = [line + "\n" for line in text.split("\n")[:-1]]
    keys = top_level_keys(lines)
    if not keys or is_usual(keys) or any(k not in ORDER for k in keys):
        return None
    if len(set(keys)) != len(keys):
        return None
    head: list[str] = []
    sections: list[_Section] = []
    pending: list[str] = []  # comment lines at column 0, and blank lines after one
    for line in lines:
        if line[:1] == "#" or (pending and not line.strip()):
            pending.append(line)
        elif line[:1] in (" ", "\n"):
            if not sections:
                head += [*pending, line]
            else:
                sections[-1].lines.extend([*pending, line])  # a comment within a value
            pending = []
        else:
            match = _KEY.fullmatch(line)
            assert match is not None  # top_level_keys read every such line
            if not sections:
                head, pending = head + pending, []
            sections.append(_Section(pending, match[1], [line]))
            pending = []
    ordered = sorted(sections, key=lambda s: ORDER.index(s.key))
    body = [line for s in ordered for line in (*s.lead, *s.lines)]
    if ordered[-1].key == "quotes":
        body.append("checks: []\n")
    return "".join(head + body + pending)
