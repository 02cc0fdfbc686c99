"""Registering files without rewriting the register: ``register add-file``'s fast path.

A full edit (:mod:`tracework.register.edits`) of a register gaining 100,000 files dumps
every entry with ruamel's emitter, then parses and validates the whole YAML again: a
minute, for what is, in the bytes, one run of lines at the end of the source's
``files:`` (or in place of its ``files: {}``).  So while the register is still exactly
the bytes tracework last wrote (the sealed record :mod:`tracework.register.append`
leaves beside it, with a compiled copy of those bytes), the new entries are written as
those lines and spliced in, and the source's row in the compiled copy is written again
with them; neither file is parsed or dumped whole.

An entry is one line, ``      PATH: {sha256: …, kind: file, size: N}``.  It is formatted
when every string in it is one the emitter writes as it is (:func:`plain`); any other
entry (a name with a space, one YAML would read as a date or a number, one too long
for a simple key) is dumped by the emitter, with the neighbours of its kind, and read
back.  The first formatted entry of each shape (the fields it has) is dumped too, and
must give the same line, so an emitter that writes otherwise sends the write the full
way.  Files already registered as given are left alone; a changed entry (another
expected hash) takes the full edit.  The tests hold the result to the full edit's
bytes, command by command (``tests/test_register_add_file.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

from tracework.fsio import locked, write_atomic
from tracework.hashing import sha256_hex
from tracework.readers import DataError, load_yaml
from tracework.register import append, rowsplice, store
from tracework.register.data import FileEntryData
from tracework.register.models import FileEntry
from tracework.register.nodes import file_fields, round_trip_yaml

#: What the caller decides under the register's lock, given each path's entry as the
#: register holds it (None: not registered): the entries to write, in order.
Plan = Callable[[Callable[[str], FileEntry | None]], list[tuple[str, FileEntry]]]

#: Characters the emitter writes as they are, wherever they stand but first (``-`` first
#: may be a sequence's indicator) and never ``...`` first (a document's end).
_PLAIN = re.compile(r"(?!\.\.\.)[A-Za-z0-9_./][A-Za-z0-9_./-]*")

#: The longest key formatted here: the emitter writes longer ones as complex keys
#: (``? PATH`` then ``: {…}``), from 123 characters on.
_SIMPLE_KEY = 100

#: A line of this length or more may be folded by the emitter (its width is 4096).
_WIDTH = 4000

_STR = "tag:yaml.org,2002:str"


class _Unfit(Exception):
    """A row of the compiled copy is not a file entry as tracework writes it."""


@cache
def _resolver() -> Callable[[str], str]:
    """The tag YAML gives a plain scalar (not empty), as the register's dumper resolves it:
    the first of its implicit resolvers for the scalar's first character that matches
    (its own ``resolve`` does the same, at four times the cost of a call)."""
    table = round_trip_yaml().resolver.versioned_resolver
    anywhere = list(table.get(None, []))

    def tag(value: str) -> str:
        for found, regexp in (*table.get(value[0], ()), *anywhere):
            if regexp.match(value):
                return str(found)
        return _STR

    return tag


def plain(value: str) -> bool:
    """Whether the emitter writes ``value`` as it is: only characters no context makes
    special, and read back as a string (``true``, ``1e5``, ``2026-01-01`` and ``null``
    are not; the dumper quotes them)."""
    return _PLAIN.fullmatch(value) is not None and _resolver()(value) == _STR


def _line(path: str, fields: dict[str, str | int | bool]) -> str | None:
    """An entry's line as the full edit's dump writes it, when formatting it is safe."""
    if len(path) > _SIMPLE_KEY or not plain(path):
        return None
    parts = []
    for key, value in fields.items():
        if isinstance(value, bool):
            parts.append(f"{key}: {'true' if value else 'false'}")
        elif isinstance(value, int) or plain(value):
            parts.append(f"{key}: {value}")
        else:
            return None
    line = f"      {path}: {{{', '.join(parts)}}}\n"
    return line if len(line) < _WIDTH else None


def _dumped(sid: str, entries: list[tuple[str, FileEntry]]) -> str | None:
    """The entries' lines as the emitter dumps them inside source ``sid``'s ``files:``;
    None when they do not read back as exactly these entries."""
    opening, body = append.file_entries(sid, entries)
    try:
        doc = load_yaml(f"sources:\n{opening}    files:\n{body}    kind: git\n")
        held = doc["sources"][sid]["files"]
        back = [(path, FileEntry.model_validate(entry)) for path, entry in held.items()]
    except (DataError, TypeError, KeyError, ValueError, AttributeError):
        return None
    return body if back == entries else None


def entry_lines(sid: str, entries: list[tuple[str, FileEntry]]) -> str | None:
    """New file entries of git source ``sid``, in order, as the full edit's dump writes
    them inside its ``files:``; None when the emitter would write a formatted one
    otherwise, or a dumped one does not read back."""
    pieces: list[str] = []
    dumped: list[tuple[str, FileEntry]] = []  # a run of entries for the emitter
    shapes: set[tuple[str, ...]] = set()  # the field sets compared with the emitter's
    for path, entry in entries:
        fields = file_fields(entry)
        line = _line(path, fields)
        if line is None:
            dumped.append((path, entry))
            continue
        if dumped:
            run = _dumped(sid, dumped)
            if run is None:
                return None
            pieces.append(run)
            dumped = []
        shape = tuple(fields)
        if shape not in shapes:
            if _dumped(sid, [(path, entry)]) != line:
                return None
            shapes.add(shape)
        pieces.append(line)
    if dumped:
        run = _dumped(sid, dumped)
        if run is None:
            return None
        pieces.append(run)
    return "".join(pieces)


def _registered(row: list[object] | None) -> FileEntry | None:
    if row is None:
        return None
    try:
        return FileEntry.model_validate(store._as_data(FileEntryData.from_row(row)))
    except store._SHAPE_ERRORS:  # pydantic's ValidationError is a ValueError
        raise _Unfit from None


def write_files(path: Path, sid: str, plan: Plan) -> bool:
    """Write the file entries ``plan`` decides for git source ``sid`` by splicing them
    in, under the register's lock; False when the fast path does not apply (nothing is
    written: the caller takes the full edit, which also says what is wrong)."""
    with locked(path):
        try:
            raw = path.read_bytes()
        except OSError:
            return False
        digest = sha256_hex(raw)
        record = append.written(path, digest)
        content = store._read_compiled(path, digest) if record is not None else None
        if record is None or content is None:
            return False
        try:
            text = str(content, "utf-8")
            sources, (first, end) = rowsplice.source_rows(text)
        except (*store._SHAPE_ERRORS, UnicodeDecodeError):
            return False
        files = append._git_files(sources.get(sid))
        if files is None:
            return False
        try:
            entries = plan(lambda p: _registered(files.get(p)))
        except _Unfit:
            return False
        if any(p in files for p, _ in entries):
            return False  # a changed entry: the full edit rewrites it where it is
        if not entries:
            return True  # the full edit would write the same bytes again
        block = append.files_block(raw, sid)
        point = record.point
        if block is None or (point is not None and block.end > point.offset):
            return False
        lines = entry_lines(sid, entries)
        if lines is None:
            return False
        head, tail = raw[: block.start], raw[block.end :]
        yaml = b"".join((head, block.opening, lines.encode("utf-8"), tail))
        files.update((p, store._row(entry)) for p, entry in entries)
        rows = rowsplice.dumps(sources)
        write_atomic(path, yaml)
        written = sha256_hex(yaml)
        store.write_compiled_rows(path, written, (text[:first] + rows + text[end:]).encode())
        if point is not None:  # the quotes, after the sources, moved by what was added
            point = point._replace(
                offset=point.offset + len(yaml) - len(raw),
                quotes_close=point.quotes_close + len(rows) - (end - first),
            )
        append.leave(path, written, point)
        return True
