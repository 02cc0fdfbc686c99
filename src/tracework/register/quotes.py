"""Quoting: a span located at the pin, hashed, and given one identity in the register.

One span, one id: a span the register already holds keeps its id, an id holds one
span unless replaced on purpose, and the rules are the same wherever a quote is made
(:func:`decide_id`: the command line, and a notebook in author mode).  Writing is
spliced when it can be (:mod:`tracework.register.append`), else one full edit.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import tracework.register.edits as regy
import tracework.register.nodes as nodes
import tracework.register.store as reg
from tracework.errors import Interface, NotQuotable, RegisterError, SpanError, option
from tracework.git.mirror import Mirror, TreeEntry
from tracework.git.subjects import open_mirror
from tracework.hashing import Lines, display_text, is_binary, sha256_hex
from tracework.register.append import Change, append_quote, replace_quote, write_changes
from tracework.register.evidence import file_entry, refuse_undecodable
from tracework.register.models import QUOTE_ID, Anchor, Quote
from tracework.register.spans import (
    NotPython,
    Span,
    by_lines,
    by_match,
    by_symbol,
    enclosing_symbol,
    markdown_heading,
)
from tracework.workspace import Workspace


@dataclass(frozen=True)
class QuoteRequest:
    """How to find the span: exactly one of lines, symbol or match."""

    lines: tuple[int, int] | None = None
    symbol: str | None = None
    match: str | None = None
    context: int = 0

    def locate(
        self, data: Lines, path: str, interface: Interface = "cli"
    ) -> tuple[Span, Anchor | None]:
        chosen = [x for x in (self.lines, self.symbol, self.match) if x is not None]
        if len(chosen) != 1:
            raise SpanError(
                "give exactly one of "
                + ", ".join(option(o, interface) for o in ("lines", "symbol", "match"))
            )
        if self.lines is not None:
            return by_lines(data, *self.lines, path), None
        if self.symbol is not None:
            return by_symbol(data, self.symbol, path, interface), Anchor(symbol=self.symbol)
        assert self.match is not None
        return (
            by_match(data, self.match, self.context, path, interface),
            Anchor(match=self.match, context=self.context),
        )


def quotable_lines(
    mirror: Mirror, entry: TreeEntry, path: str, interface: Interface = "cli"
) -> Lines:
    """The file's lines, or :class:`NotQuotable` for links, submodules, binaries, huge files."""
    if entry.kind == "symlink":
        target = display_text(mirror.read_blob(entry.oid).head)
        raise NotQuotable(
            f"{path} is a symlink to {target!r} (links are never followed)",
            hint="quote the file it points to instead",
        )
    if entry.kind == "submodule":
        raise NotQuotable(
            f"{path} is a submodule (commit {entry.oid[:12]}), not a file",
            hint="add the submodule's repository as a subject of its own",
        )
    blob = mirror.read_blob(entry.oid)
    if blob.data is None:
        raise NotQuotable(
            f"{path} is {blob.size:,} bytes, over the {mirror.size_cap:,}-byte quoting limit",
            hint="it can still be registered by hash with `tracework register add-file`"
            if interface == "cli"
            else f'it can still be cited whole, by hash: .file("{path}")',
        )
    if is_binary(blob.head):
        raise NotQuotable(f"{path} is binary; it can be registered and hashed but not quoted")
    return Lines(blob.data)


#: A quote is evidence a reader reads: a span larger than this is refused (register the
#: file by hash instead), which also keeps registers small and writes fast.
MAX_QUOTE_BYTES = 256 * 1024


def make_quote(sid: str, path: str, data: Lines, span: Span, anchor: Anchor | None) -> Quote:
    """A quote for a located span: exact text (or base64 bytes) and the span hash."""
    raw = data.span(span.first, span.last)
    if len(raw) > MAX_QUOTE_BYTES:
        raise NotQuotable(
            f"{path}:{span.first}-{span.last} is {len(raw):,} bytes, over the "
            f"{MAX_QUOTE_BYTES:,}-byte limit for one quote",
            hint="quote a smaller span; the whole file can be registered by hash",
        )
    try:
        text, raw_b64 = raw.decode("utf-8"), None
    except UnicodeDecodeError:
        text, raw_b64 = display_text(raw), base64.b64encode(raw).decode()
    return Quote(
        source=sid,
        path=path,
        lines=(span.first, span.last),
        anchor=anchor,
        sha256=sha256_hex(raw),
        text=text,
        raw_b64=raw_b64,
    )


#: Files whose anchored quotes are named after the Python symbol enclosing them.
PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")

#: The longest default id before a ``-2``, ``-3`` … suffix (ids are at most 128 long).
_ID_BASE = 120
_WORDS = 40  # the longest slug of a heading or a match


def default_quote_id(quote: Quote, data: Lines | None = None) -> str:
    """The id a quote gets when none is given, before it is made unique (``-2``, ``-3``…,
    by :func:`decide_id`).  ``Q-`` and the file's stem, then:

    * ``lines=``: the lines (``Q-store-30-39``): the quote has no anchor, so its lines
      are where it is, and the id says what was asked;
    * ``symbol=``: the symbol (``Q-store-NoteStore.keep``);
    * ``match=``: never the lines, which the anchor outlives when the code moves, but
      what encloses the span in ``data`` (the file's lines): in Python the innermost
      enclosing symbol (``Q-retrievers-ChromaRetriever.__init__``), or the stem alone at
      module level; in Markdown the heading of its section (``Q-README-install``), or
      the stem before the first; in any other file, or Python that does not parse, the
      words of the match (``Q-compose-image-postgres-16``), or the span's hash
      (``Q-config-5b76d096``) when the match has no letter or digit.

    What is not a valid id character becomes ``-``, and the result fits the id pattern.
    """
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", quote.path.rsplit("/", 1)[-1].rsplit(".", 1)[0])
    stem = stem.strip("-") or "file"
    anchor = quote.anchor
    if anchor is not None and anchor.symbol:
        named = _slug(anchor.symbol, keep=".")
    elif anchor is not None and anchor.match is not None:
        named = _enclosing(quote, anchor.match, data)
    else:
        named = f"{quote.lines[0]}-{quote.lines[1]}"
    return f"Q-{stem}-{named}"[:_ID_BASE].rstrip("-.:") if named else f"Q-{stem}"[:_ID_BASE]


def _enclosing(quote: Quote, match: str, data: Lines | None) -> str:
    """What names a ``match=`` quote: see :func:`default_quote_id` ("" for the stem)."""
    suffix = "." + quote.path.rsplit("/", 1)[-1].rsplit(".", 1)[-1].lower()
    first, last = quote.lines
    if data is not None and suffix in PYTHON_SUFFIXES:
        try:
            return _slug(enclosing_symbol(data, first, last, quote.path) or "", keep=".")
        except NotPython:
            pass  # named by its words, as in any other file
    elif data is not None and suffix in MARKDOWN_SUFFIXES:
        heading = markdown_heading(data, first)
        if heading is not None:
            return _slug(heading, limit=_WORDS).lower() or quote.sha256[:8]
        return ""
    return _slug(match, limit=_WORDS) or quote.sha256[:8]


def _slug(text: str, keep: str = "", limit: int | None = None) -> str:
    """``text``'s letters, digits, ``_`` (and ``keep``) with every other run as one ``-``,
    cut at a word's end within ``limit`` characters."""
    slug = re.sub(rf"[^A-Za-z0-9_{re.escape(keep)}]+", "-", text).strip("-")
    if limit is not None and len(slug) > limit:
        cut = slug[: limit + 1]
        slug = cut[: cut.rfind("-")] if "-" in cut else slug[:limit]
    return slug.strip("-")


def same_evidence(a: Quote, b: Quote) -> bool:
    """The identity of a quote: the same span (source, path, lines) with the same bytes."""
    return _evidence(a) == _evidence(b)


def quote_with_evidence(quotes: Mapping[str, Any], wanted: Quote) -> str | None:
    """The id the register already gives this span, if any: the first in the register's
    order, as render mode finds it (one span, one identity, in both modes)."""
    for qid, node in quotes.items():
        if same_evidence(_as_quote(node), wanted):
            return qid
    return None


class QuoteAdded(NamedTuple):
    """What :func:`add_quote` did: the id, the quote, and the quote it replaced (if
    ``replace`` changed an existing id's span)."""

    quote_id: str
    quote: Quote
    replaced: Quote | None = None


def refuse_bad_request(
    path: str, quote_id: str | None, replace: bool, interface: Interface
) -> None:
    """Refuse, before any work, what no register could take: a malformed id, a
    ``replace`` without one, a file name that is not UTF-8."""
    if quote_id is not None and not QUOTE_ID.fullmatch(quote_id):
        raise RegisterError(
            f"'{quote_id}' is not a valid quote id",
            hint="letters, digits, '.', '_', ':' and '-', starting with a letter",
        )
    if replace and quote_id is None:
        raise RegisterError(
            f"{option('replace', interface)} needs the id of the quote to replace",
            hint=f"give {option('id', interface)} with it",
        )
    refuse_undecodable([path])


class Located(NamedTuple):
    """A quote located at a pin, its file's tree entry there, and the file's lines."""

    quote: Quote
    entry: TreeEntry
    data: Lines

    def default_id(self) -> str:
        """The id the quote gets by default (:func:`default_quote_id`: from what encloses
        it in the file), made when it is needed: a Python file is parsed for it."""
        return default_quote_id(self.quote, self.data)


def locate_named(
    mirror: Mirror,
    commit: str,
    sid: str,
    path: str,
    request: QuoteRequest,
    interface: Interface = "cli",
) -> Located:
    """The quote of the span ``request`` finds in ``path`` at ``commit``, the file's tree
    entry there and its lines (what the quote's default id is made from)."""
    entry = mirror.entry(commit, path)
    data = quotable_lines(mirror, entry, path, interface)
    span, anchor = request.locate(data, path, interface)
    return Located(make_quote(sid, path, data, span, anchor), entry, data)


def locate_quote(
    mirror: Mirror,
    commit: str,
    sid: str,
    path: str,
    request: QuoteRequest,
    interface: Interface = "cli",
) -> tuple[Quote, TreeEntry]:
    """The quote of the span ``request`` finds in ``path`` at ``commit``, and the file's
    tree entry there."""
    located = locate_named(mirror, commit, sid, path, request, interface)
    return located.quote, located.entry


def add_quote(
    ws: Workspace,
    register_path: Path,
    sid: str,
    path: str,
    request: QuoteRequest,
    quote_id: str | None = None,
    *,
    replace: bool = False,
    interface: Interface = "cli",
) -> QuoteAdded:
    """Locate a span at the source's pin and add it to the register.

    One span, one identity: a span the register already holds (the same source, path,
    lines and bytes) keeps its id — asking for it again without an id returns that id,
    and asking for it under another id is refused, naming the id it has.  An id already
    used for other evidence is refused unless ``replace``, which points the id at the
    new span on purpose.  The file is registered too if it was not yet.
    """
    refuse_bad_request(path, quote_id, replace, interface)
    made: list[tuple[Located, Mirror]] = []

    def locate(subject: str, commit: str) -> Quote:
        mirror = open_mirror(ws, subject)
        located = locate_named(mirror, commit, sid, path, request, interface)
        made.append((located, mirror))
        return located.quote

    def named(quote: Quote) -> str:
        located = made[-1][0]
        return located.default_id() if located.quote == quote else default_quote_id(quote)

    # the register read once, from its compiled copy, and the entry spliced in: a quote
    # added to a large register must not cost a pass over every quote
    if replace:
        assert quote_id is not None
        swapped = replace_quote(register_path, sid, locate, quote_id)
        if swapped is not None:
            return QuoteAdded(quote_id, *swapped)
    else:
        fast = append_quote(register_path, sid, locate, quote_id, named)
        if fast is not None:
            return QuoteAdded(*fast)
    if not made:
        source = reg.load(register_path).git_source(sid)
        locate(source.subject, source.commit)
    located, mirror = made[-1]
    quote, entry = located.quote, located.entry
    with regy.edit(register_path) as doc:
        quotes = regy.section(doc, "quotes")
        decided = decide_id(
            register_path.name,
            quotes,
            quote,
            quote_id,
            replace,
            interface,
            default_id=located.default_id,
        )
        if decided.held is not None:
            return QuoteAdded(decided.quote_id, decided.held)
        files = regy.section(doc["sources"][sid], "files")
        if path not in files:
            blob = mirror.read_blob(entry.oid)
            files[path] = nodes.file_node(file_entry(entry, blob))
        quotes[decided.quote_id] = nodes.quote_node(quote)
    return QuoteAdded(decided.quote_id, quote, decided.replaced)


def write_quotes(register_path: Path, changes: list[Change]) -> str | None:
    """Write quotes whose ids were decided beforehand (a notebook cell's, in author
    mode) in one write: spliced when the fast path applies, else one full edit.  Returns
    the SHA-256 of the bytes spliced, or None after a full edit (which may also hold
    what another writer added meanwhile: read the register again).

    The ids were decided against the register as the notebook last read it.  An id or
    a span another writer has since given to other evidence is refused, naming both,
    and nothing is written: running the cell again decides afresh.
    """
    if not changes:
        return None
    digest = write_changes(register_path, changes)
    if digest is not None:
        return digest
    name = register_path.name
    with regy.edit(register_path) as doc:
        quotes = regy.section(doc, "quotes")
        held: dict[tuple[str, str, tuple[int, int], str], str] = {}
        for qid, node in quotes.items():
            held.setdefault(_evidence(_as_quote(node)), qid)
        for change in changes:
            quote, qid = change.quote, change.quote_id
            where = f"{quote.path}:{quote.lines[0]}-{quote.lines[1]}"
            known = held.get(_evidence(quote))
            if known == qid:
                continue
            if known is not None or (qid in quotes) != change.replace:
                taken = (
                    f"quote {known} holds {where}"
                    if known
                    else f"{qid} is " + ("taken" if qid in quotes else "gone")
                )
                raise RegisterError(
                    f"{name}: {taken} since this cell quoted it (another writer changed "
                    "the register); nothing was written",
                    hint="run the cell again",
                )
            files = regy.section(doc["sources"][quote.source], "files")
            if quote.path not in files and change.file is not None:
                files[quote.path] = nodes.file_node(change.file)
            quotes[qid] = nodes.quote_node(quote)
            held.setdefault(_evidence(quote), qid)
    return None


def _evidence(quote: Quote) -> tuple[str, str, tuple[int, int], str]:
    return quote.source, quote.path, quote.lines, quote.sha256


class Decided(NamedTuple):
    """The id a new quote gets: ``held`` is the register's quote when it already holds
    the span under that id (nothing to write), ``replaced`` the quote ``replace``
    puts it in place of."""

    quote_id: str
    held: Quote | None = None
    replaced: Quote | None = None


def decide_id(
    register_name: str,
    quotes: Mapping[str, Any],
    quote: Quote,
    quote_id: str | None,
    replace: bool,
    interface: Interface,
    known: str | Literal[False] | None = False,
    *,
    default_id: Callable[[], str] | None = None,
) -> Decided:
    """The id ``quote`` goes under in a register holding ``quotes`` (models or YAML
    nodes), by the rules of one identity: the id the register gives the same span, or
    ``quote_id``, or the default id ``default_id()`` (:meth:`Located.default_id`;
    without it, what :func:`default_quote_id` makes of the quote alone) made unique with
    ``-2``, ``-3``…
    (the first free, in that order); a span quoted under another id, an id used for
    other evidence (unless ``replace``) and a ``replace`` of no quote are refused.
    ``known`` is the id holding the span when the caller has an index of them (False:
    look it up).  Ids the register holds are never renamed."""
    held = quote_with_evidence(quotes, quote) if known is False else known
    where = f"{quote.path}:{quote.lines[0]}-{quote.lines[1]}"
    if held is not None and (quote_id is None or held == quote_id):
        return Decided(held, held=_as_quote(quotes[held]))
    if held is not None:
        raise RegisterError(
            f"{register_name}: {where} is already quote {held}; one span has one id",
            hint=f"cite it as {option('id', interface)}{_literal(held, interface)}, or "
            f"remove {held} first",
        )
    qid = quote_id or (default_id() if default_id else default_quote_id(quote))
    if qid not in quotes:
        if replace:
            raise RegisterError(
                f"{register_name}: there is no quote {qid} to replace",
                hint=f"leave out {option('replace', interface)} to add it",
            )
        return Decided(qid)
    existing = _as_quote(quotes[qid])
    if replace:
        return Decided(qid, replaced=existing)
    if quote_id is not None:
        raise RegisterError(
            f"{register_name}: quote id {qid} is already used for "
            f"{existing.path}:{existing.lines[0]}-{existing.lines[1]}",
            hint=f"choose another {option('id', interface)}, or add "
            f"{option('replace', interface)}{'True' if interface == 'notebook' else ''}"
            " to point it at this span",
        )
    n = 2
    while f"{qid}-{n}" in quotes:
        n += 1
    return Decided(f"{qid}-{n}")


def _as_quote(node: Any) -> Quote:
    return node if isinstance(node, Quote) else Quote.model_validate(dict(node))


def _literal(value: str, interface: Interface) -> str:
    return f'"{value}"' if interface == "notebook" else f" {value}"
