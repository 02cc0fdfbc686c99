"""Adding a quote without rewriting the register: the authoring loop's fast path.

A full edit (:mod:`tracework.register.edits`) parses the whole YAML round-trip, dumps
it, parses and validates it again: seconds for 10,000 quotes, on every quote a cell
adds.  Yet a new quote changes one thing: an entry at the end of the ``quotes:``
mapping.  So every full write also leaves, beside the compiled copy, where that end
is in the bytes it wrote (``.NAME.yaml.splice.compiled.json``, sealed like the copy).
While the YAML is still exactly those bytes (no hand edit since), a new quote's entry
is dumped alone, with the same emitter settings, and spliced in there; the compiled
copy is the old one plus the quote's row.  The result is, byte for byte, what the
full edit writes (the property test in ``tests/test_register_append.py`` holds us to
it), under the same lock, atomically, and every other byte, comments included, is
left as the analyst wrote it.

Anything unusual takes the full path: no sealed splice point for these bytes, a
source or file not registered yet, an id already taken or a replacement, a quote
whose entry does not read back as itself.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracework.fsio import locked, write_atomic
from tracework.hashing import sha256_hex
from tracework.readers import DataError, load_json, load_yaml
from tracework.register import store
from tracework.register.data import GitSourceData, QuoteData
from tracework.register.models import Quote, Register

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


def entry_text(quote_id: str, quote: Quote) -> str:
    """A quote's entry as the full edit's dump writes it inside ``quotes:``."""
    from tracework.register.edits import CommentedMap, _rt_yaml, quote_node

    # dumped with a key after it, as in a register (at the end of a document, a block
    # kept with `|+` would be followed by an end marker)
    buffer = io.StringIO()
    doc = CommentedMap(quotes=CommentedMap({quote_id: quote_node(quote)}), checks=0)
    _rt_yaml().dump(doc, buffer)
    text = buffer.getvalue()
    return text[len("quotes:\n") : text.rindex("checks: 0\n")]


def _reads_back(entry: str, quote_id: str, quote: Quote) -> bool:
    try:
        back = load_yaml("quotes:\n" + entry)
        return bool(Quote.model_validate(back["quotes"][quote_id]) == quote)
    except (DataError, TypeError, KeyError, ValueError):
        return False


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
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        digest = sha256_hex(raw)
        offset = _recall(path, digest)
        content = store._read_compiled(path, digest) if offset is not None else None
        if offset is None or content is None:
            return None
        try:
            rows: list[Any] = json.loads(content)
            quotes: dict[str, list[Any]] = rows[_QUOTES]
            source = rows[_SOURCES].get(sid)
            files = _git_files(source)
            if files is None:
                return None
            subject, pin = str(source[_GIT_SUBJECT]), str(source[_GIT_COMMIT])
        except store._SHAPE_ERRORS:
            return None
        quote = locate(subject, pin)
        if quote.path not in files:
            return None
        wanted = [quote.source, quote.path, list(quote.lines)]
        for qid, have in quotes.items():
            if have[:3] == wanted and have[_SHA256] == quote.sha256:
                if quote_id not in (None, qid):
                    return None
                try:
                    return qid, Quote.model_validate(store._as_data(QuoteData.from_row(have)))
                except store._SHAPE_ERRORS:
                    return None
        if quote_id is not None and quote_id in quotes:
            return None
        qid = quote_id or default_id(quote)
        if quote_id is None and qid in quotes:
            n = 2
            while f"{qid}-{n}" in quotes:
                n += 1
            qid = f"{qid}-{n}"
        entry = entry_text(qid, quote)
        if not _reads_back(entry, qid, quote):
            return None
        added = entry.encode("utf-8")
        text = raw[:offset] + added + raw[offset:]
        quotes[qid] = store._row(quote)
        write_atomic(path, text)
        new_digest = sha256_hex(text)
        compiled = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
        store.write_compiled_rows(path, new_digest, compiled.encode("utf-8") + b"\n")
        # where splice_point would find the end now: after this entry, unless it ends
        # with a blank line (a quoted scalar's folded line break), as the full edit's
        # remember() would decide from the whole text
        last = entry.splitlines()[-1] if entry.strip() else ""
        _leave(path, new_digest, offset + len(added) if last.strip() else None)
        return qid, quote
