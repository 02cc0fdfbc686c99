"""The register as one notebook holds it: opened at a commit, quoted, written back.

A notebook reads its register once and keeps it in memory while the analyst quotes; in
author mode what a cell quotes is written when the cell ends (see
:mod:`tracework.notebook.authoring`), and a register another writer changed meanwhile
(a quote from the command line, a hand edit) is read again before the next quote.  This
module is that session: which register bytes were read (their SHA-256 goes into
records.json, so a render can tell the register it hashed is the one the notebook read),
the commit opened and the one each source is read at, and quoting and citing files
against it, in author mode (added to the register) or render mode (found in it, or an
error).  Every read of the register forgets the checks made against the previous one.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

import tracework.register.store as reg
from tracework.capture.sources import add_capture_source
from tracework.errors import QuoteNotInRegister, RegisterError, TraceworkError
from tracework.git.mirror import Mirror
from tracework.git.subjects import load_subject, open_mirror
from tracework.hashing import sha256_file, sha256_hex
from tracework.notebook.authoring import PendingQuotes
from tracework.notebook.jupyter import FileView, QuoteView
from tracework.notebook.source_checks import SourceChecks
from tracework.register.evidence import add_files
from tracework.register.models import GitSource, Register
from tracework.register.quotes import QuoteRequest, make_quote, quotable_lines, same_evidence
from tracework.views.cards import FileInfo, QuoteInfo, file_key
from tracework.workspace import Workspace

log = logging.getLogger(__name__)

#: ``author``: new quotes and files go into the register; ``render``: it is never written.
Mode = Literal["author", "render"]


class RegisterSession:
    """One notebook's register, opened at a commit of its subject."""

    def __init__(self, ws: Workspace, path: Path, *, commit: str | None, mode: Mode) -> None:
        self.ws, self.path, self.mode = ws, path, mode
        self._mirrors: dict[str, Mirror] = {}
        self._pending = PendingQuotes(ws, path, self.mirror) if mode == "author" else None
        #: why a cell's quotes could not be written (None: written, or nothing to write)
        self.unwritten: str | None = None
        #: whether quotes wait for the cell's end to be written (else each is written at once)
        self.write_at_cell_end = False
        self.checks = SourceChecks(self)
        #: quoted files' texts at their pins, read once: (subject, pin, path) → text
        self._pinned_texts: dict[tuple[str, str, str], str | None] = {}
        self.read()
        register = self.register
        gits = [(sid, s) for sid, s in register.sources.items() if isinstance(s, GitSource)]
        if not gits:
            raise RegisterError(
                f"register {register.name} has no git source",
                hint="add one with `tracework register add-source`",
            )
        self.primary, source = gits[0]
        self.subject = load_subject(ws, source.subject)
        self.pin = source.commit
        mirror = self.mirror(source.subject)
        self.commit = mirror.resolve_commit(commit) if commit else self.pin
        self.commit_info = mirror.commit_info(self.commit)
        self.pin_info = mirror.commit_info(self.pin)

    def mirror(self, subject: str) -> Mirror:
        """The subject's mirror, opened once for the notebook's session: each quote of a
        cell otherwise opened it, listed the pin's tree and read its file again (git's
        objects and a tree by commit id never change, so nothing read can go stale)."""
        if subject not in self._mirrors:
            self._mirrors[subject] = open_mirror(self.ws, subject)
        return self._mirrors[subject]

    # -- reading and writing -----------------------------------------------------------

    def read(self) -> None:
        """Load the register, keeping the SHA-256 of the very bytes read: records.json
        carries it, so that a render can tell that the register it hashed before the
        kernel started is the one the notebook read (an edit meanwhile fails the render
        instead of being recorded as what ran)."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            reg.load(self.path)  # says there is no register, and how to make one
            raise
        self.register: Register = reg.load(self.path, raw)
        self.register_sha256 = sha256_hex(raw)
        if self._pending is not None:
            self._pending.forget()
        self.checks.clear()

    def sync(self) -> None:
        """Read the register again if another writer changed it (a quote from the command
        line, a hand edit) while this notebook had nothing pending."""
        pending = self._pending
        if (
            pending is not None
            and not pending.changes
            and sha256_file(self.path) != self.register_sha256
        ):
            self.read()

    def write_quotes(self) -> None:
        """Write what this cell quoted, in one write (see :mod:`tracework.notebook.authoring`)."""
        if self._pending is None or not self._pending.changes:
            return
        try:
            digest = self._pending.write()
        except BaseException as exc:
            if isinstance(exc, TraceworkError):
                self.unwritten = str(exc)
            self.read()  # without this cell's quotes
            raise
        self.unwritten = None
        if digest is None:  # a full edit: it may hold others' changes too
            self.read()
        else:
            self.register_sha256 = digest

    def add_capture(self, name: str) -> None:
        """Register capture ``name`` as a source, with its files' hashes (author mode)."""
        self.write_quotes()
        add_capture_source(self.ws, self.path, name, self.commit)
        self.read()

    # -- where each source is read ------------------------------------------------------

    def commit_for(self, sid: str) -> str:
        """The commit source ``sid`` is read at: the commit opened for the report's
        subject, its own pin for another's."""
        src = self.register.git_source(sid)
        return self.commit if src.subject == self.subject.name else src.commit

    def url(self, sid: str) -> str:
        """The web address of source ``sid``'s subject, for links to its lines."""
        subject = self.register.git_source(sid).subject
        return (
            self.subject.url if subject == self.subject.name else load_subject(self.ws, subject).url
        )

    def quote_info(self, qid: str) -> QuoteInfo:
        """Quote ``qid`` of the register with its state at the commit its source is read at."""
        quote = self.register.quotes[qid]
        return QuoteInfo(
            qid,
            quote,
            self.register.git_source(quote.source).commit,
            self.commit_for(quote.source),
            self.url(quote.source),
            self.checks.quote_item(qid),
            self.pinned_text(quote.source, quote.path),
        )

    def pinned_text(self, sid: str, path: str) -> str | None:
        """A quoted file's text at its pin, read once, so that a quote is highlighted as it
        reads in its file (display only); None when it cannot be read."""
        source = self.register.git_source(sid)
        key = (source.subject, source.commit, path)
        if key not in self._pinned_texts:
            text = None
            try:
                mirror = self.mirror(source.subject)
                data = mirror.read_blob(mirror.entry(source.commit, path).oid).data
                text = data.decode("utf-8", "replace") if data is not None else None
            except (TraceworkError, OSError) as exc:
                log.debug("no text of %s at %s to highlight with: %s", path, sid, exc)
            self._pinned_texts[key] = text
        return self._pinned_texts[key]

    def file_info(self, sid: str, path: str) -> FileInfo:
        """Registered file ``path`` of ``sid`` with its state at the commit it is read at."""
        source = self.register.git_source(sid)
        check = self.checks.file_item(sid, path)
        return FileInfo(
            file_key(sid, path),
            sid,
            path,
            source.files[path],
            source.commit,
            self.commit_for(sid),
            self.url(sid),
            check if check is not None and check.state != "verified" else None,
        )

    # -- quoting --------------------------------------------------------------------------

    def quote(
        self, sid: str, path: str, request: QuoteRequest, qid: str | None, replace: bool
    ) -> QuoteView:
        """Quote a span at the pin: in author mode decided now and added to the register
        in memory (written when the cell ends), in render mode found in the register."""
        replaced = None
        if self._pending is not None:
            if qid is not None and qid in self._pending.changes:
                self.write_quotes()  # the cell names an id it quoted: one change per id
            self.sync()
            quoted = self._pending.quote(self.register, sid, path, request, qid, replace)
            self.register, qid, replaced = quoted.register, quoted.quote_id, quoted.replaced
            if quoted.new:
                self.checks.add_quote(sid, qid, quoted.new_file)
            if not self.write_at_cell_end:
                self.write_quotes()  # no cells to wait for
        else:
            qid = self._find_in_register(sid, path, request, qid)
        return QuoteView(qid, self.quote_info(qid), replaced)

    def _find_in_register(self, sid: str, path: str, request: QuoteRequest, qid: str | None) -> str:
        src = self.register.git_source(sid)
        mirror = self.mirror(src.subject)
        data = quotable_lines(mirror, mirror.entry(src.commit, path), path, "notebook")
        span, anchor = request.locate(data, path, "notebook")
        wanted = make_quote(sid, path, data, span, anchor)
        candidates = [qid] if qid else list(self.register.quotes)
        for cid in candidates:
            have = self.register.quotes.get(cid)
            if have is not None and same_evidence(have, wanted):
                return cid
        where = f"{path}:{span.first}-{span.last}"
        have = self.register.quotes.get(qid) if qid else None
        now = f"; {qid} is {have.path}:{have.lines[0]}-{have.lines[1]}" if have else ""
        raise QuoteNotInRegister(
            f"{qid or 'the quote'} ({where} at {src.commit[:12]}) is not in register "
            f"{self.register.name}{now}",
            hint="run the notebook in author mode to add it (JupyterLab, or `tracework author "
            f"{self.register.name}`)"
            + (" (with replace=True to point the id at this span)" if have else "")
            + "; render mode never writes to the register",
        )

    def file(self, sid: str, path: str) -> FileView:
        """Cite a whole file of ``sid``; author mode registers it at the pin first."""
        source = self.register.git_source(sid)
        if path not in source.files:
            if self.mode != "author":
                raise QuoteNotInRegister(
                    f"file {path} of {sid} is not in register {self.register.name}",
                    hint="open the notebook in author mode (JupyterLab) to register it; "
                    "render mode never writes to the register",
                )
            self.write_quotes()
            add_files(self.ws, self.path, sid, [path])
            self.read()
        return FileView(self.file_info(sid, path))
