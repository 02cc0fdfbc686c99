"""Writing quotes without rewriting the register: the authoring loop's fast path.

A full edit (:mod:`tracework.register.edits`) parses the whole YAML round-trip, dumps
it, parses and validates it again: tens of seconds for 10,000 quotes.  Yet a new quote
changes one place: an entry at the end of the ``quotes:`` mapping (and, for a file not
registered yet, one line at the end of its source's ``files:``); a replaced quote
changes its own entry.  So every full write also leaves, beside the compiled copy,
where the ``quotes:`` block ends in the bytes it wrote
(``.NAME.yaml.splice.compiled.json``, sealed like the copy).  While the YAML is still
exactly those bytes (no hand edit since), new entries are dumped alone, with the same
emitter settings, and spliced in; the compiled copy is the old rows with the new ones.
The result is, byte for byte, what the full edit writes (the property tests in
``tests/test_register_append.py`` hold us to it), under the same lock, atomically, and
every other byte, comments included, is left as the analyst wrote it.

:func:`write_changes` writes many quotes at once (a notebook cell's, in author mode);
:func:`append_quote` and :func:`replace_quote` are the one-quote cases of the command
line.  Anything unusual takes the full path: no sealed splice point for these bytes, a
source whose ``files:`` is empty, an id already taken or a span already quoted, an
entry that is not laid out as tracework writes it, a new entry that does not read back
as itself.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from tracework.fsio import locked, write_atomic
from tracework.hashing import sha256_hex
from tracework.readers import DataError, load_json, load_yaml
from tracework.register import store
from tracework.register.data import GitSourceData, QuoteData
from tracework.register.models import FileEntry, Quote, Register

#: Where things sit in the compiled copy's rows (each model a list of its field values):
#: reading the few fields a new quote needs from the rows, without making ten thousand
#: named tuples, keeps the fast path fast.
_SOURCES = list(Register.model_fields).index("sources")
_QUOTES = list(Register.model_fields).index("quotes")
_SHA256 = QuoteData._fields.index("sha256")
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
    rows: list[Any]  # the compiled copy's rows, parsed


def _git_files(source: Any) -> dict[str, Any] | None:
    """The files of a git source's row (its kind comes first), or None."""
    if isinstance(source, list) and source and source[0] == "git":
        files = source[_GIT_FILES]
        return files if isinstance(files, dict) else None
    return None


def _splice_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.splice.compiled.json")


def _seal(digest: str, offset: int) -> str | None:
    key = store.seal_key()
    if key is None:
        return None
    made_from = f"splice\n{store.COMPILED_FORMAT}\n{digest}\n{offset}\n".encode()
    return hmac.new(key, made_from, hashlib.sha256).hexdigest()


def splice_point(text: str) -> int | None:
    """The byte offset just after the last entry of the ``quotes:`` block mapping, where
    a dump of the register with one more quote puts it; None when the layout is not the
    one tracework writes (no block ``quotes:``, no key after it, comment or blank lines
    ending it)."""
    lines = text.splitlines(keepends=True)
    if not lines or not lines[-1].endswith("\n") or "quotes:\n" not in lines:
        return None
    start = lines.index("quotes:\n")
    end = start + 1
    while end < len(lines) and (lines[end][:1] in (" ", "\n")):
        end += 1
    body = lines[start + 1 : end]
    if not body or not body[0].startswith("  ") or body[0][2:3] in (" ", "#", "\n"):
        return None  # an empty mapping, or one that starts with a comment
    if end == len(lines) or lines[end].startswith("#") or not body[-1].strip():
        return None  # the end of the document, or blank or comment lines before the next key
    return len("".join(lines[:end]).encode("utf-8"))


def remember(path: Path, digest: str, text: str) -> None:
    """Leave the splice point of the YAML just written (best effort: without it, the
    next quote takes the full path)."""
    _leave(path, digest, splice_point(text))


def _leave(path: Path, digest: str, offset: int | None) -> None:
    target = _splice_path(path)
    seal = _seal(digest, offset) if offset is not None else None
    try:
        if seal is None:
            target.unlink(missing_ok=True)
            return
        write_atomic(target, json.dumps({"yaml_sha256": digest, "offset": offset, "seal": seal}))
    except OSError:
        return


def _recall(path: Path, digest: str) -> int | None:
    """The splice point left for exactly these YAML bytes, if its seal holds."""
    try:
        data = load_json(_splice_path(path).read_bytes())
        offset, seal = data["offset"], data["seal"]
    except (OSError, DataError, TypeError, KeyError):
        return None
    if not isinstance(offset, int) or data.get("yaml_sha256") != digest:
        return None
    expected = _seal(digest, offset)
    return offset if expected is not None and hmac.compare_digest(expected, str(seal)) else None


def _recall_all(path: Path) -> _Recalled | None:
    """The register's bytes, splice point and compiled rows, when the fast path applies
    to them (call under the lock)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    digest = sha256_hex(raw)
    offset = _recall(path, digest)
    content = store._read_compiled(path, digest) if offset is not None else None
    if offset is None or content is None:
        return None
    heading = raw.rfind(b"\nquotes:\n", 0, offset)
    try:
        rows = json.loads(content)
        if heading < 0 or not isinstance(rows[_QUOTES], dict):
            return None
    except store._SHAPE_ERRORS:
        return None
    return _Recalled(raw, offset, heading + len(b"\nquotes:\n"), rows)


# -- the entries, as the full edit's dump writes them ------------------------------------


def _dump(doc: Any) -> str:
    from tracework.register.edits import _rt_yaml

    buffer = io.StringIO()
    _rt_yaml().dump(doc, buffer)
    return buffer.getvalue()


def quote_entries(quotes: Iterable[tuple[str, Quote]]) -> str:
    """Quote entries as the full edit's dump writes them inside ``quotes:``, in order."""
    from tracework.register.edits import CommentedMap, quote_node

    # dumped with a key after them, as in a register (at the end of a document, a block
    # kept with `|+` would be followed by an end marker)
    nodes = CommentedMap((qid, quote_node(quote)) for qid, quote in quotes)
    text = _dump(CommentedMap(quotes=nodes, checks=0))
    return text[len("quotes:\n") : text.rindex("checks: 0\n")]


def entry_text(quote_id: str, quote: Quote) -> str:
    """A quote's entry as the full edit's dump writes it inside ``quotes:``."""
    return quote_entries([(quote_id, quote)])


def _file_entries(sid: str, files: list[tuple[str, FileEntry]]) -> tuple[str, str]:
    """The line that opens source ``sid`` and its new file entries, as the full edit's
    dump writes them."""
    from tracework.register.edits import CommentedMap, file_node

    nodes = CommentedMap((path, file_node(entry)) for path, entry in files)
    source = CommentedMap(files=nodes, kind="git")
    text = _dump(CommentedMap(sources=CommentedMap({sid: source}), checks=0))
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


def _files_end(raw: bytes, before: int, opening: str) -> int | None:
    """Where a new file entry of the source that ``opening`` opens goes: after the last
    line of its block ``files:``, when only entries (no comment, no blank) fill it and a
    key follows."""
    at = raw.find(b"\n" + opening.encode("utf-8"), 0, before)
    if at < 0:
        return None
    at = raw.find(b"\n    files:\n", at, before)
    if at < 0:
        return None
    line = at + len(b"\n    files:\n")
    entries = 0
    while _key_line_at(raw, line, 6):
        line = raw.index(b"\n", line) + 1
        entries += 1
    if not entries or not any(_key_line_at(raw, line, n) for n in (0, 2, 4)):
        return None
    return line


def _splice(recalled: _Recalled, changes: list[Change]) -> tuple[bytes, int] | None:
    """The register's new bytes and splice point, with the changes' entries spliced in;
    the rows are updated to match.  None when any change does not fit the fast path."""
    raw, offset, rows = recalled.raw, recalled.offset, recalled.rows
    quotes: dict[str, list[Any]] = rows[_QUOTES]
    if len({c.quote_id for c in changes}) != len(changes):
        return None
    held = _held_spans(quotes)
    spans = {_span_key(c.quote) for c in changes}
    if len(spans) != len(changes) or any(
        held.get(_span_key(c.quote), c.quote_id) != c.quote_id for c in changes
    ):
        return None  # a span another id holds: one span, one id
    edits: list[tuple[int, int, bytes]] = []
    new_files: dict[str, list[tuple[str, FileEntry]]] = {}
    for change in changes:
        quote = change.quote
        files = _git_files(rows[_SOURCES].get(quote.source))
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
            row = quotes.get(change.quote_id)
            if row is None:
                return None
            old = Quote.model_validate(store._as_data(QuoteData.from_row(row)))
            span = _entry_span(recalled, change.quote_id, old)
            if span is None:
                return None
            edits.append((*span, entry_text(change.quote_id, quote).encode("utf-8")))
        elif change.quote_id in quotes:
            return None
    added = [(c.quote_id, c.quote) for c in changes if not c.replace]
    added_text = quote_entries(added) if added else ""
    bodies: dict[str, tuple[str, str]] = {}
    for sid, entries in new_files.items():
        opening, body = bodies[sid] = _file_entries(sid, entries)
        at = _files_end(raw, recalled.start, opening)
        if at is None:
            return None
        edits.append((at, at, body.encode("utf-8")))
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
    for change in changes:
        if change.file is not None:
            files = _git_files(rows[_SOURCES][change.quote.source])
            assert files is not None
            files[change.quote.path] = store._row(change.file)
        quotes[change.quote_id] = store._row(change.quote)
    return b"".join(pieces), offset + shift


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
    text, offset = spliced
    write_atomic(path, text)
    digest = sha256_hex(text)
    compiled = json.dumps(recalled.rows, ensure_ascii=False, separators=(",", ":"))
    store.write_compiled_rows(path, digest, compiled.encode("utf-8") + b"\n")
    # where splice_point would find the end now, unless the block's last line is blank
    # (a quoted scalar's folded line break), as the full edit's remember() would decide
    last = text[text.rfind(b"\n", 0, offset - 1) + 1 : offset]
    _leave(path, digest, offset if last.strip() else None)
    return digest


# -- one quote, from the command line ---------------------------------------------------


def _source_of(recalled: _Recalled, sid: str) -> tuple[str, str, dict[str, Any]] | None:
    try:
        source = recalled.rows[_SOURCES].get(sid)
        files = _git_files(source)
        if files is None:
            return None
        return str(source[_GIT_SUBJECT]), str(source[_GIT_COMMIT]), files
    except store._SHAPE_ERRORS:
        return None


def _quote_of(row: list[Any]) -> Quote | None:
    try:
        return Quote.model_validate(store._as_data(QuoteData.from_row(row)))
    except store._SHAPE_ERRORS:
        return None


def _span_key(quote: Quote) -> tuple[str, str, int, int, str]:
    return quote.source, quote.path, *quote.lines, quote.sha256


def _held_spans(quotes: dict[str, list[Any]]) -> dict[tuple[Any, ...], str]:
    """Each quoted span (with its bytes) in the rows, to the first id holding it."""
    held: dict[tuple[Any, ...], str] = {}
    for qid, row in quotes.items():
        source, path, lines = row[:3]
        held.setdefault((source, path, *lines, row[_SHA256]), qid)
    return held


def _holding(quotes: dict[str, list[Any]], quote: Quote) -> str | None:
    """The id the rows give this span with these bytes, first in the register's order."""
    wanted = [quote.source, quote.path, list(quote.lines)]
    for qid, have in quotes.items():
        if have[:3] == wanted and have[_SHA256] == quote.sha256:
            return qid
    return None


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
        recalled = _recall_all(path)
        source = _source_of(recalled, sid) if recalled is not None else None
        if recalled is None or source is None:
            return None
        quote = locate(*source[:2])
        quotes: dict[str, list[Any]] = recalled.rows[_QUOTES]
        known = _holding(quotes, quote)
        if known is not None:
            held = _quote_of(quotes[known])
            return (known, held) if quote_id in (None, known) and held is not None else None
        if quote_id is not None and quote_id in quotes:
            return None
        qid = quote_id or default_id(quote)
        if quote_id is None and qid in quotes:
            n = 2
            while f"{qid}-{n}" in quotes:
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
        recalled = _recall_all(path)
        source = _source_of(recalled, sid) if recalled is not None else None
        if recalled is None or source is None:
            return None
        quote = locate(*source[:2])
        quotes: dict[str, list[Any]] = recalled.rows[_QUOTES]
        old = _quote_of(quotes[quote_id]) if quote_id in quotes else None
        known = _holding(quotes, quote)
        if old is None or known not in (None, quote_id):
            return None
        if known == quote_id:
            return old, None
        changes = [Change(quote_id, quote, replace=True)]
        return (quote, old) if _write(path, recalled, changes) else None
