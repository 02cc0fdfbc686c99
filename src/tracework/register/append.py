"""Writing quotes without rewriting the register: the authoring loop's fast path.

A full edit (:mod:`tracework.register.edits`) parses the whole YAML round-trip, dumps
it, parses and validates it again: tens of seconds for 10,000 quotes.  Yet a new quote
changes one place: an entry at the end of the ``quotes:`` mapping (and, for a file not
registered yet, one line at the end of its source's ``files:``); a replaced quote
changes its own entry.  So every write also leaves, beside the compiled copy, a record
that tracework wrote these very bytes and, when their layout allows, where the
``quotes:`` block ends in them and where the quotes end in the copy's JSON
(``.NAME.yaml.splice.compiled.json``, sealed like the copy).  While the YAML is still
exactly those bytes (no hand edit since), new entries are dumped alone, with the same
emitter settings, and spliced in; the compiled copy is changed where the rows land
(:mod:`tracework.register.rowsplice`).  The result is, byte for byte, what the full
edit writes (the property tests in ``tests/test_register_append.py`` hold us to it),
under the same lock, atomically, and every other byte, comments included, is left as
the analyst wrote it; neither file is parsed or dumped whole, so a write costs about
the same in a register of 1,000 quotes or 50,000.

:func:`write_changes` writes many quotes at once (a notebook cell's, in author mode);
:func:`append_quote` and :func:`replace_quote` are the one-quote cases of the command
line; ``register add-file``'s entries are spliced by :mod:`tracework.register.fileappend`.
Anything unusual takes the full path: no sealed splice point for these bytes, an id
already taken or a span already quoted, an entry that is not laid out as tracework
writes it, a new entry that does not read back as itself.  A register whose top-level
keys are in another order is left no splice point: the full edit puts them in the usual
order first, once (:mod:`tracework.register.layout`), and leaves one for the bytes it
wrote.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from tracework.fsio import locked, write_atomic
from tracework.hashing import sha256_hex
from tracework.readers import DataError, load_json, load_yaml
from tracework.register import layout, store
from tracework.register.data import GitSourceData, QuoteData
from tracework.register.models import FileEntry, Quote, Register
from tracework.register.rowsplice import CompiledRows, quotes_close
from tracework.version import __version__

#: Where things sit in the compiled copy's rows (each model a list of its field values).
_QUOTES = list(Register.model_fields).index("quotes")
_GIT_FILES = GitSourceData._fields.index("files")
_GIT_SUBJECT = GitSourceData._fields.index("subject")
_GIT_COMMIT = GitSourceData._fields.index("commit")

#: How the caller makes the quote once the source's subject and pin are known.
Locate = Callable[[str, str], Quote]


class Change(NamedTuple):
    """One quote to write: added under a new id, or (``replace``) put in place of the
    quote an id has.  ``file`` is the quote's file entry when the register does not
    hold that file yet."""

    quote_id: str
    quote: Quote
    replace: bool = False
    file: FileEntry | None = None


class _Recalled(NamedTuple):
    """The register's bytes as tracework last wrote them, read under its lock."""

    raw: bytes
    offset: int  # where the quotes block ends
    start: int  # where its first entry starts
    rows: CompiledRows  # the compiled copy


def _git_files(source: list[Any] | None) -> dict[str, list[Any]] | None:
    """The files of a git source's row (its kind comes first), each path's entry as its
    row; None when the source is not a git source's row."""
    if isinstance(source, list) and source and source[0] == "git":
        files = source[_GIT_FILES]
        return files if isinstance(files, dict) else None
    return None


def _splice_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.splice.compiled.json")


class _Point(NamedTuple):
    """Where the next quote goes: in the YAML's bytes, and in the compiled copy's text."""

    offset: int
    quotes_close: int


class Written(NamedTuple):
    """What the record left beside a register says of exactly its bytes: tracework wrote
    them (a full edit or a splice: either way what the full edit writes), and where the
    next quote goes (None: the ``quotes:`` block offers no splice point)."""

    point: _Point | None


def _seal(digest: str, point: _Point | None) -> str | None:
    key = store.seal_key()
    if key is None:
        return None
    where = "-\n-\n" if point is None else f"{point.offset}\n{point.quotes_close}\n"
    made_from = (
        f"splice\n{store.COMPILED_FORMAT}\n{__version__}\n{store.models_sha256()}\n{digest}\n"
        f"{where}"
    )
    return hmac.new(key, made_from.encode(), hashlib.sha256).hexdigest()


def splice_point(text: str) -> int | None:
    """The byte offset just after the last entry of the ``quotes:`` block mapping, where
    a dump of the register with one more quote puts it; None when the layout is not the
    one tracework writes (top-level keys out of the usual order, see
    :mod:`tracework.register.layout`; no block ``quotes:``; no key after it; blank lines
    or indented comment lines ending it; comment lines ending the document).  Comment
    lines at column 0 just above the next key introduce that key: the full edit keeps
    them there and puts a new quote above them, and so does the splice."""
    lines = text.splitlines(keepends=True)
    if not lines or not lines[-1].endswith("\n") or "quotes:\n" not in lines:
        return None
    keys = layout.top_level_keys(lines)
    if keys is None or not layout.is_usual(keys):
        return None
    start = lines.index("quotes:\n")
    end = start + 1
    while end < len(lines) and (lines[end][:1] in (" ", "\n")):
        end += 1
    body = lines[start + 1 : end]
    if not body or not body[0].startswith("  ") or body[0][2:3] in (" ", "#", "\n"):
        return None  # an empty mapping, or one that starts with a comment
    after = end
    while after < len(lines) and lines[after].startswith("#"):
        after += 1
    if after == len(lines) or not body[-1].strip() or _comment_line(body[-1]):
        return None  # the end of the document, or blank or comment lines ending the block
    return len("".join(lines[:end]).encode("utf-8"))


def _comment_line(line: str) -> bool:
    """An indented comment line in ``quotes:`` (at most 4 spaces in: deeper, it may be the
    text of a literal block).  The full edit moves one ending the block below a new
    quote, re-indented as the value before it decides: no splice can know where."""
    stripped = line.lstrip(" ")
    return stripped.startswith("#") and len(line) - len(stripped) <= 4


def remember(path: Path, digest: str, text: str, register: Register) -> None:
    """Leave the record of the YAML just written: that tracework wrote it, and its splice
    point and its compiled copy's (best effort: without it, the next write takes the full
    path)."""
    offset = splice_point(text)
    point = None
    if offset is not None:
        point = _Point(offset, quotes_close(store._row(register), _QUOTES))
    leave(path, digest, point)


def leave(path: Path, digest: str, point: _Point | None) -> None:
    """Record that tracework wrote the register's bytes (``digest``), and where the next
    quote goes in them (None: nowhere a splice can know)."""
    target = _splice_path(path)
    seal = _seal(digest, point)
    try:
        if seal is None:
            target.unlink(missing_ok=True)
            return
        offset, close = point if point is not None else (None, None)
        data = {"yaml_sha256": digest, "offset": offset, "quotes_close": close, "seal": seal}
        write_atomic(target, json.dumps(data))
    except OSError:
        return


def written(path: Path, digest: str) -> Written | None:
    """The record left for exactly these YAML bytes, if its seal holds; None when there
    is none (a hand edit since, another machine's copy, no sealing key)."""
    try:
        data = load_json(_splice_path(path).read_bytes())
        offset, close, seal = data["offset"], data["quotes_close"], data["seal"]
    except (OSError, DataError, TypeError, KeyError):
        return None
    if data.get("yaml_sha256") != digest:
        return None
    if offset is None and close is None:
        point = None
    elif type(offset) is int and type(close) is int:
        point = _Point(offset, close)
    else:
        return None
    expected = _seal(digest, point)
    if expected is None or not hmac.compare_digest(expected, str(seal)):
        return None
    return Written(point)


def _recall(path: Path, digest: str) -> _Point | None:
    """The splice point left for exactly these YAML bytes, if its seal holds."""
    record = written(path, digest)
    return record.point if record is not None else None


def _recall_all(path: Path) -> _Recalled | None:
    """The register's bytes, splice point and compiled rows, when the fast path applies
    to them (call under the lock)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    digest = sha256_hex(raw)
    point = _recall(path, digest)
    content = store._read_compiled(path, digest) if point is not None else None
    if point is None or content is None:
        return None
    heading = raw.rfind(b"\nquotes:\n", 0, point.offset)
    try:
        rows = CompiledRows(str(content, "utf-8"), point.quotes_close)
    except (*store._SHAPE_ERRORS, UnicodeDecodeError):
        return None
    if heading < 0:
        return None
    return _Recalled(raw, point.offset, heading + len(b"\nquotes:\n"), rows)


# -- the entries, as the full edit's dump writes them ------------------------------------


def quote_entries(quotes: Iterable[tuple[str, Quote]]) -> str:
    """Quote entries as the full edit's dump writes them inside ``quotes:``, in order."""
    from tracework.register.nodes import CommentedMap, block_texts, dump, quote_node

    # dumped with a key after them, as in a register (at the end of a document, a block
    # kept with `|+` would be followed by an end marker)
    quotes = list(quotes)
    texts = block_texts([quote.text for _, quote in quotes])
    nodes = CommentedMap(
        (qid, quote_node(quote, text)) for (qid, quote), text in zip(quotes, texts, strict=True)
    )
    text = dump(CommentedMap(quotes=nodes, checks=0))
    return text[len("quotes:\n") : text.rindex("checks: 0\n")]


def entry_text(quote_id: str, quote: Quote) -> str:
    """A quote's entry as the full edit's dump writes it inside ``quotes:``."""
    return quote_entries([(quote_id, quote)])


def file_entries(sid: str, files: list[tuple[str, FileEntry]]) -> tuple[str, str]:
    """The line that opens source ``sid`` and its new file entries, as the full edit's
    dump writes them."""
    from tracework.register.nodes import CommentedMap, dump, file_node

    nodes = CommentedMap((path, file_node(entry)) for path, entry in files)
    source = CommentedMap(files=nodes, kind="git")
    text = dump(CommentedMap(sources=CommentedMap({sid: source}), checks=0))
    opening = text.splitlines(keepends=True)[1]
    body = text[text.index("    files:\n") + len("    files:\n") : text.index("    kind: git\n")]
    return opening, body


def _reads_back(quotes: str, files: dict[str, tuple[str, str]], changes: list[Change]) -> bool:
    """Whether the dumped entries read back as exactly the quotes and files dumped."""
    try:
        doc = load_yaml("quotes:\n" + quotes) if quotes else {"quotes": {}}
        for change in changes:
            if change.replace:
                back = load_yaml("quotes:\n" + entry_text(change.quote_id, change.quote))
                got = back["quotes"][change.quote_id]
            else:
                got = doc["quotes"][change.quote_id]
            if Quote.model_validate(got) != change.quote:
                return False
        for sid, (opening, body) in files.items():
            text = f"sources:\n{opening}    files:\n{body}    kind: git\n"
            held = load_yaml(text)["sources"][sid]["files"]
            wanted = {c.quote.path: c.file for c in changes if c.quote.source == sid and c.file}
            if {p: FileEntry.model_validate(e) for p, e in held.items()} != wanted:
                return False
    except (DataError, TypeError, KeyError, ValueError, AttributeError):
        return False
    return True


# -- where the entries go ---------------------------------------------------------------


def _key_line_at(raw: bytes, at: int, indent: int) -> bool:
    """Whether the line at ``at`` is a key at exactly ``indent`` spaces (no comment)."""
    head = raw[at : at + indent + 1]
    return len(head) == indent + 1 and head[:indent] == b" " * indent and head[-1:] not in b" #\n"


def _entry_span(recalled: _Recalled, quote_id: str, old: Quote) -> tuple[int, int] | None:
    """Where quote ``quote_id``'s entry lies, when it is exactly as tracework dumps it and
    a key (not a comment) follows it."""
    raw, offset = recalled.raw, recalled.offset
    entry = entry_text(quote_id, old).encode("utf-8")
    key = entry[: entry.index(b"\n") + 1]
    at = raw.find(b"\n" + key, recalled.start - 1, offset)
    if at < 0:
        return None
    first, end = at + 1, at + 1 + len(entry)
    if raw[first:end] != entry or not (end == offset or _key_line_at(raw, end, 2)):
        return None
    return first, end


class FilesBlock(NamedTuple):
    """Where a git source's new file entries go: ``raw[start:end]`` (empty, or the
    source's ``files: {}`` line) becomes ``opening`` and the entries."""

    start: int
    end: int
    opening: bytes


_SOURCES = b"sources:\n"
_LINE_AT_0 = re.compile(rb"\n[^ \n]")  # a line at column 0: a key or a comment
_LINE_ABOVE_4 = re.compile(rb"\n {0,2}[^ \n]")  # a line indented less than 4 spaces
_NO_FILES = b"    files: {}\n"
_FILES = b"    files:\n"


def files_block(raw: bytes, sid: str) -> FilesBlock | None:
    """Where the full edit's dump puts new file entries of git source ``sid``: after the
    last line of the source's own block ``files:``, when only entries (no comment, no
    blank) fill it and a key follows (or comment lines at column 0, then a top-level
    key); or in place of its ``files: {}``, when a key follows it.  None for any other
    layout (a flow mapping, a comment, a source not found where tracework writes it).

    Only the source's own lines are searched: the first ``files:`` after its key may be
    the next source's, when its own is ``files: {}``.
    """
    if raw.startswith(_SOURCES):
        body = len(_SOURCES)
    else:
        heading = raw.find(b"\n" + _SOURCES)
        if heading < 0:
            return None
        body = heading + 1 + len(_SOURCES)
    after = _LINE_AT_0.search(raw, body - 1)
    sources_end = after.start() + 1 if after else len(raw)
    key = b"\n  " + sid.encode("utf-8") + b":\n"
    at = raw.find(key, body - 1, sources_end)
    if at < 0:
        return None
    source = at + len(key)  # the source's first field
    after = _LINE_ABOVE_4.search(raw, source - 1, sources_end)
    source_end = after.start() + 1 if after else sources_end
    at = raw.find(b"\n" + _NO_FILES, source - 1, source_end)
    if at >= 0:
        line = at + 1 + len(_NO_FILES)
        if not any(_key_line_at(raw, line, n) for n in (0, 2, 4)):
            return None
        return FilesBlock(at + 1, line, _FILES)
    at = raw.find(b"\n" + _FILES, source - 1, source_end)
    if at < 0:
        return None
    line = at + 1 + len(_FILES)
    entries = 0
    while _key_line_at(raw, line, 6):
        line = raw.find(b"\n", line) + 1
        if not line:
            return None
        entries += 1
    key_at = line
    while raw.startswith(b"#", key_at):  # comment lines introducing a top-level key stay above it
        key_at = raw.find(b"\n", key_at) + 1
        if not key_at:
            return None
    indents = (0, 2, 4) if key_at == line else (0,)
    if not entries or not any(_key_line_at(raw, key_at, n) for n in indents):
        return None
    return FilesBlock(line, line, b"")


class _Spliced(NamedTuple):
    yaml: bytes
    compiled: str
    point: _Point


def _splice(recalled: _Recalled, changes: list[Change]) -> _Spliced | None:
    """The register's new bytes and compiled copy, with the changes' entries spliced in,
    and where the next quote goes.  None when any change does not fit the fast path."""
    raw, offset, rows = recalled.raw, recalled.offset, recalled.rows
    spans = {_span_key(c.quote) for c in changes}
    if len({c.quote_id for c in changes}) != len(changes) or len(spans) != len(changes):
        return None
    edits: list[tuple[int, int, bytes]] = []
    new_files: dict[str, list[tuple[str, FileEntry]]] = {}
    replaced: dict[str, list[Any]] = {}
    for change in changes:
        quote = change.quote
        if _holding(rows, quote) not in (None, change.quote_id):
            return None  # a span another id holds: one span, one id
        files = _git_files(rows.sources.get(quote.source))
        if files is None:
            return None
        coming = [path for path, _ in new_files.get(quote.source, [])]
        if change.file is not None:
            if quote.path in files or quote.path in coming:
                return None
            new_files.setdefault(quote.source, []).append((quote.path, change.file))
        elif quote.path not in files and quote.path not in coming:
            return None
        if change.replace:
            old = _quote_of(rows.quote_row(change.quote_id))
            span = _entry_span(recalled, change.quote_id, old) if old is not None else None
            if span is None:
                return None
            edits.append((*span, entry_text(change.quote_id, quote).encode("utf-8")))
            replaced[change.quote_id] = store._row(quote)
        elif rows.has_quote(change.quote_id):
            return None
    added = [(c.quote_id, c.quote) for c in changes if not c.replace]
    added_text = quote_entries(added) if added else ""
    bodies: dict[str, tuple[str, str]] = {}
    for sid, entries in new_files.items():
        _, body = bodies[sid] = file_entries(sid, entries)
        block = files_block(raw, sid)
        if block is None or block.end > recalled.start:
            return None
        edits.append((block.start, block.end, block.opening + body.encode("utf-8")))
        files = _git_files(rows.sources[sid])
        assert files is not None
        files.update((path, store._row(entry)) for path, entry in entries)
    if not _reads_back(added_text, bodies, changes):
        return None
    if added_text:
        edits.append((offset, offset, added_text.encode("utf-8")))
    edits.sort(key=lambda e: e[:2])
    pieces, cursor, shift = [], 0, 0
    for first, end, text in edits:
        if first < cursor:
            return None  # two changes in one place
        pieces += [raw[cursor:first], text]
        cursor, shift = end, shift + len(text) - (end - first)
    pieces.append(raw[cursor:])
    compiled, close = rows.changed(
        bool(new_files), replaced, [(qid, store._row(quote)) for qid, quote in added]
    )
    return _Spliced(b"".join(pieces), compiled, _Point(offset + shift, close))


def write_changes(path: Path, changes: list[Change]) -> str | None:
    """Write the changes by splicing, under the register's lock, and return the SHA-256
    of the bytes written; None when the fast path does not apply (nothing is written:
    the caller takes the full edit, which also says what is wrong)."""
    with locked(path):
        recalled = _recall_all(path)
        return _write(path, recalled, changes) if recalled is not None else None


def _write(path: Path, recalled: _Recalled, changes: list[Change]) -> str | None:
    spliced = _splice(recalled, changes)
    if spliced is None:
        return None
    text, offset = spliced.yaml, spliced.point.offset
    write_atomic(path, text)
    digest = sha256_hex(text)
    store.write_compiled_rows(path, digest, spliced.compiled.encode("utf-8"))
    # where splice_point would find the end now, unless the block's last line is blank
    # (a quoted scalar's folded line break), as the full edit's remember() would decide
    last = text[text.rfind(b"\n", 0, offset - 1) + 1 : offset]
    leave(path, digest, spliced.point if last.strip() else None)
    return digest


# -- one quote, from the command line ---------------------------------------------------


def _source_of(recalled: _Recalled, sid: str) -> tuple[str, str] | None:
    """The subject and pin of git source ``sid``, from the compiled rows."""
    source = recalled.rows.sources.get(sid)
    if source is None or _git_files(source) is None:
        return None
    try:
        return str(source[_GIT_SUBJECT]), str(source[_GIT_COMMIT])
    except store._SHAPE_ERRORS:
        return None


def _quote_of(row: list[Any] | None) -> Quote | None:
    try:
        return Quote.model_validate(store._as_data(QuoteData.from_row(row)))  # type: ignore[arg-type]
    except store._SHAPE_ERRORS:
        return None


def _span_key(quote: Quote) -> tuple[str, str, int, int, str]:
    return quote.source, quote.path, *quote.lines, quote.sha256


def _holding(rows: CompiledRows, quote: Quote) -> str | None:
    """The id the register gives this span with these bytes, first in its order."""
    return rows.holder(quote.source, quote.path, quote.lines, quote.sha256)


def _located(path: Path, sid: str, locate: Locate) -> tuple[_Recalled, Quote] | None:
    """The register as last written and the quote made at git source ``sid``'s pin, when
    the fast path applies (call under the lock)."""
    recalled = _recall_all(path)
    source = _source_of(recalled, sid) if recalled is not None else None
    if recalled is None or source is None:
        return None
    return recalled, locate(*source)


def append_quote(
    path: Path,
    sid: str,
    locate: Locate,
    quote_id: str | None,
    default_id: Callable[[Quote], str],
) -> tuple[str, Quote] | None:
    """Add the quote ``locate(subject, pin)`` makes for git source ``sid`` by splicing,
    under the register's lock; return its id and the quote the register holds under it.

    The register is read once, under the lock: the source's subject and pin come from
    the compiled rows, so a large register costs one pass, not two.  The id is the one
    the register already gives the same span (nothing is written; the register's quote
    is returned, anchor and all), or ``quote_id``, or ``default_id(quote)`` made unique
    with ``-2``, ``-3``…, as the full edit would choose it.  None when the fast path
    does not apply: the caller then takes the full edit, which also says what is wrong
    (an unknown source, a span under another id, an id in use)."""
    with locked(path):
        located = _located(path, sid, locate)
        if located is None:
            return None
        recalled, quote = located
        rows = recalled.rows
        known = _holding(rows, quote)
        if known is not None:
            held = _quote_of(rows.quote_row(known))
            return (known, held) if quote_id in (None, known) and held is not None else None
        if quote_id is not None and rows.has_quote(quote_id):
            return None
        qid = quote_id or default_id(quote)
        if quote_id is None and rows.has_quote(qid):
            n = 2
            while rows.has_quote(f"{qid}-{n}"):
                n += 1
            qid = f"{qid}-{n}"
        return (qid, quote) if _write(path, recalled, [Change(qid, quote)]) else None


def replace_quote(
    path: Path, sid: str, locate: Locate, quote_id: str
) -> tuple[Quote, Quote | None] | None:
    """Point ``quote_id`` at the span ``locate(subject, pin)`` finds, by splicing its
    entry, under the register's lock; return the quote the register now holds and the
    one replaced (None when the id already held this very span: nothing is written).
    None when the fast path does not apply (the full edit decides, and says why)."""
    with locked(path):
        located = _located(path, sid, locate)
        if located is None:
            return None
        recalled, quote = located
        old = _quote_of(recalled.rows.quote_row(quote_id))
        known = _holding(recalled.rows, quote)
        if old is None or known not in (None, quote_id):
            return None
        if known == quote_id:
            return old, None
        changes = [Change(quote_id, quote, replace=True)]
        return (quote, old) if _write(path, recalled, changes) else None
