"""Quoting in author mode: what a cell quotes is written to the register once, when the
cell ends.

Writing the register on every ``src.quote(...)`` made a cell of 200 quotes cost 200
writes, and re-reading and re-checking the whole register after each one made it cost
minutes on a large register.  Here each quote is located at the pin and given its id at
once, by the register's rules (:func:`~tracework.register.quotes.decide_id`), against
the register as the notebook holds it plus what the cell quoted so far; the register
in memory gains it; and the cell's quotes are written together when it ends (IPython's
``post_run_cell``, see :func:`~tracework.notebook.jupyter.watch_cells`), or at once
where there are no cells.  The write keeps every guarantee of a single quote's: locked,
atomic, spliced without touching the analyst's comments, and refused, naming the id,
if another writer gave an id or a span to other evidence meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from tracework.git.mirror import Mirror
from tracework.register.append import Change
from tracework.register.evidence import file_entry
from tracework.register.models import Quote, Register
from tracework.register.quotes import (
    QuoteRequest,
    decide_id,
    locate_named,
    refuse_bad_request,
    write_quotes,
)
from tracework.workspace import Workspace

#: A quote's identity in a register: source, path, lines and the bytes' hash.
_Key = tuple[str, str, tuple[int, int], str]


class Quoted(NamedTuple):
    """What quoting a span did: the register with it, its id, the quote the id held
    before (``replace``), and whether anything is new (a span already held is not)."""

    register: Register
    quote_id: str
    replaced: Quote | None
    new: bool
    new_file: bool


def _key(quote: Quote) -> _Key:
    return quote.source, quote.path, quote.lines, quote.sha256


class PendingQuotes:
    """The quotes a cell made that the register file does not hold yet."""

    def __init__(self, ws: Workspace, register_path: Path, mirror: Callable[[str], Mirror]) -> None:
        self.ws, self.register_path = ws, register_path
        self.mirror = mirror  # a subject's mirror, the session's: its trees read once
        self.changes: dict[str, Change] = {}
        self._held: dict[_Key, str] | None = None  # each span to the first id holding it

    def forget(self) -> None:
        """The register was read again: nothing is pending, the index is stale."""
        self.changes.clear()
        self._held = None

    def _holder(self, register: Register, quote: Quote) -> str | None:
        if self._held is None:
            self._held = {}
            for qid, have in register.quotes.items():
                self._held.setdefault(_key(have), qid)
        return self._held.get(_key(quote))

    def quote(
        self,
        register: Register,
        sid: str,
        path: str,
        request: QuoteRequest,
        quote_id: str | None,
        replace: bool,
    ) -> Quoted:
        """Locate the span at the source's pin and decide its id as a write would, without
        writing: the register returned holds it (and its file), and so does the cell's
        pending write."""
        refuse_bad_request(path, quote_id, replace, "notebook")
        source = register.git_source(sid)
        mirror = self.mirror(source.subject)
        located = locate_named(mirror, source.commit, sid, path, request, "notebook")
        quote, entry = located.quote, located.entry
        decided = decide_id(
            self.register_path.name,
            register.quotes,
            quote,
            quote_id,
            replace,
            "notebook",
            known=self._holder(register, quote),
            default_id=located.default_id,
        )
        if decided.held is not None:
            return Quoted(register, decided.quote_id, None, new=False, new_file=False)
        qid = decided.quote_id
        assert qid not in self.changes, "the caller writes first what names an id pending"
        new_file = path not in source.files
        file = file_entry(entry, mirror.read_blob(entry.oid)) if new_file else None
        self.changes[qid] = Change(qid, quote, replace=decided.replaced is not None, file=file)
        if decided.replaced is not None:
            self._held = None  # the old span may now have no holder, or another
        elif self._held is not None:
            self._held.setdefault(_key(quote), qid)
        updates: dict[str, object] = {"quotes": {**register.quotes, qid: quote}}
        if file is not None:
            files = {**source.files, path: file}
            updates["sources"] = {
                **register.sources,
                sid: source.model_copy(update={"files": files}),
            }
        return Quoted(
            register.model_copy(update=updates), qid, decided.replaced, new=True, new_file=new_file
        )

    def write(self) -> str | None:
        """Write what is pending in one write; the SHA-256 of the bytes spliced, or None
        after a full edit (read the register again).  Nothing stays pending, even when
        the write is refused: the next run of the cell decides afresh."""
        changes = list(self.changes.values())
        self.changes.clear()
        return write_quotes(self.register_path, changes)
